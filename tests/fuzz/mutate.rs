//! A deterministic mutation engine: turns seed files into malformed inputs.
//!
//! Hand-written rather than taken from a crate: cargo-fuzz/libFuzzer need nightly and
//! sanitizer builds that cannot run inside `cargo test`, proptest generates values from
//! strategies instead of mutating seed files, and `rand` does not promise the same stream
//! across versions — a crash must reproduce from (target, seed, case number) alone.
//!
//! Mutations are byte-level (bit flips, interesting bytes, insertions, deletions,
//! duplicated ranges, truncation, splices with another seed), line-level (delete,
//! duplicate or swap lines) and token-level (a number in a text file replaced by an edge
//! value such as `NaN`, `1e308` or `18446744073709551615`; a little-endian integer or
//! double in a binary file overwritten by an edge value).

/// SplitMix64 (Steele, Lea, Flood 2014): a tiny, well-mixed, fully specified generator.
pub struct Rng(u64);

impl Rng {
    /// A generator whose whole stream is determined by `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// One element of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Numbers that break parsers: zero, signs, limits of the integer types, overflow, the
/// IEEE specials, subnormals, element type codes palpa does not read, times past the
/// trajectory limit.
const EDGE_NUMBERS: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "2",
    "3",
    "4",
    "5",
    "10",
    "11",
    "24",
    "999",
    "0.5",
    "-0.5",
    "1e308",
    "-1e308",
    "1e309",
    "1e300",
    "1e-320",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "3601",
    "1000000",
    "65",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "1e19",
    "0x10",
    "1_000",
    "",
];

/// Bytes with a meaning in some format: separators, signs, section markers, quotes,
/// brackets, and the extremes.
const INTERESTING_BYTES: &[u8] = b"\0\xff\x7f\x80\n\r\t ,.-+e$#\"'[]{}=:/\\";

/// Edge values for binary integers and doubles, as little-endian bytes.
fn edge_binary(rng: &mut Rng) -> Vec<u8> {
    match rng.below(12) {
        0 => 0u64.to_le_bytes().to_vec(),
        1 => u64::MAX.to_le_bytes().to_vec(),
        2 => (1u64 << 40).to_le_bytes().to_vec(),
        3 => (rng.below(16) as u64).to_le_bytes().to_vec(),
        4 => u32::MAX.to_le_bytes().to_vec(),
        5 => i32::MIN.to_le_bytes().to_vec(),
        6 => (rng.below(64) as u32).to_le_bytes().to_vec(),
        7 => f64::NAN.to_le_bytes().to_vec(),
        8 => f64::INFINITY.to_le_bytes().to_vec(),
        9 => f64::MAX.to_le_bytes().to_vec(),
        10 => (-1.0f64).to_le_bytes().to_vec(),
        _ => 0x8000_0000u32.to_le_bytes().to_vec(),
    }
}

/// Longest input the engine makes (bytes); larger inputs are truncated.
pub const MAX_INPUT: usize = 1 << 20;

/// Applies one to four random mutations to `input`; `seeds` provide splice material.
pub fn mutate(input: &[u8], seeds: &[Vec<u8>], rng: &mut Rng) -> Vec<u8> {
    let mut data = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        mutate_once(&mut data, seeds, rng);
    }
    data.truncate(MAX_INPUT);
    data
}

fn mutate_once(data: &mut Vec<u8>, seeds: &[Vec<u8>], rng: &mut Rng) {
    let len = data.len();
    match rng.below(13) {
        0 if len > 0 => {
            let at = rng.below(len);
            data[at] ^= 1 << rng.below(8);
        }
        1 if len > 0 => {
            let at = rng.below(len);
            data[at] = *rng.pick(INTERESTING_BYTES);
        }
        2 => {
            let at = rng.below(len + 1);
            let n = 1 + rng.below(8);
            let bytes: Vec<u8> = (0..n)
                .map(|_| {
                    if rng.below(2) == 0 {
                        *rng.pick(INTERESTING_BYTES)
                    } else {
                        rng.next_u64() as u8
                    }
                })
                .collect();
            data.splice(at..at, bytes);
        }
        3 if len > 0 => {
            let at = rng.below(len);
            let n = 1 + rng.below(16.max(len / 8).min(len - at));
            data.drain(at..at + n.min(len - at));
        }
        4 if len > 0 => {
            // Copy a range to another place (repeated sections, elements, rows).
            let from = rng.below(len);
            let n = 1 + rng.below((len - from).min(256));
            let chunk = data[from..from + n].to_vec();
            let at = rng.below(len + 1);
            data.splice(at..at, chunk);
        }
        5 if len > 0 => data.truncate(rng.below(len)),
        6 => {
            // Prefix of this input, suffix of a seed.
            let other = rng.pick(seeds);
            let cut = rng.below(len + 1);
            let from = rng.below(other.len() + 1);
            data.truncate(cut);
            data.extend_from_slice(&other[from..]);
        }
        7..=9 => replace_number(data, rng),
        10 if len >= 8 => {
            let value = edge_binary(rng);
            let at = rng.below(len - value.len() + 1);
            data[at..at + value.len()].copy_from_slice(&value);
        }
        11 => line_edit(data, rng),
        _ => {
            let at = rng.below(len + 1);
            let token = rng.pick(EDGE_NUMBERS).as_bytes().to_vec();
            data.splice(at..at, token);
        }
    }
}

/// Replaces the numeric token around a random position with an edge value.
fn replace_number(data: &mut Vec<u8>, rng: &mut Rng) {
    let numeric = |b: u8| b.is_ascii_digit() || b"+-.eE".contains(&b);
    let digits: Vec<usize> = (0..data.len())
        .filter(|&i| data[i].is_ascii_digit())
        .collect();
    if digits.is_empty() {
        return;
    }
    let at = *rng.pick(&digits);
    let mut start = at;
    while start > 0 && numeric(data[start - 1]) {
        start -= 1;
    }
    let mut end = at;
    while end < data.len() && numeric(data[end]) {
        end += 1;
    }
    let token = rng.pick(EDGE_NUMBERS).as_bytes().to_vec();
    data.splice(start..end, token);
}

/// Deletes, duplicates or swaps whole lines.
fn line_edit(data: &mut Vec<u8>, rng: &mut Rng) {
    let mut lines: Vec<Vec<u8>> = data
        .split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    if lines.is_empty() {
        return;
    }
    let a = rng.below(lines.len());
    let b = rng.below(lines.len());
    match rng.below(3) {
        0 => {
            lines.remove(a);
        }
        1 => {
            let copy = lines[a].clone();
            lines.insert(b, copy);
        }
        _ => lines.swap(a, b),
    }
    *data = lines.concat();
}
