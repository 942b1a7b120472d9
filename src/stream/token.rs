//! The control token: how strong it must be, how it is compared, and how fast anyone may
//! guess it.
//!
//! * A token must carry at least [`MIN_TOKEN_BITS`] bits by [`token_bits`]'s estimate;
//!   the generated one is 128 random bits as 32 hex digits.
//! * Comparison hashes both tokens (BLAKE3) and compares the digests with
//!   `blake3::Hash`'s constant-time equality, so neither the position of the first
//!   difference nor the presented token's length shows in the time taken.
//! * Attempts are throttled per remote address ([`TokenThrottle`]): after the k-th
//!   consecutive wrong token from an address, no attempt from it is checked for
//!   [`FIRST_BACKOFF`] · 2^(k−1) (at most [`MAX_BACKOFF`]); attempts inside that window are
//!   refused unchecked. A connection is closed after [`REFUSALS_PER_CONNECTION`] refused
//!   attempts. A connection that presented the right token once is trusted: its later
//!   commands are compared without the wait, so guesses from elsewhere on the same
//!   address cannot lock out a controlling viewer.
//!
//! Hand-written: the state is one small map under a mutex; a rate-limiting crate (keyed
//! token buckets) would not give exponential back-off per address without the same code.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Fewest bits a control token must carry ([`token_bits`]).
pub const MIN_TOKEN_BITS: f64 = 128.0;
/// Fewest distinct characters a control token must have (a long run of one character
/// is long but not random).
pub const MIN_TOKEN_DISTINCT: usize = 8;
/// Wait after the first wrong token from an address; doubled after each further one.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// Longest wait between two checked attempts from one address.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// Refused control attempts (wrong or too early) after which a connection is closed.
pub const REFUSALS_PER_CONNECTION: u32 = 5;
/// An address's failures are forgotten this long after its last one.
const FORGET_AFTER: Duration = Duration::from_secs(600);
/// Most addresses whose failures are remembered; the longest quiet is forgotten first.
const MAX_ADDRESSES: usize = 4096;

/// Bits of a token as `length × log2(alphabet)`, the alphabet being the union of the
/// character classes it uses (hex digits 16; else digits 10, lower 26, upper 26, `-._~`
/// 4). An upper estimate: it cannot tell a long phrase from random text.
pub fn token_bits(token: &str) -> f64 {
    let hex = token
        .chars()
        .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
        || token
            .chars()
            .all(|c| c.is_ascii_digit() || ('A'..='F').contains(&c));
    let alphabet = if hex {
        16
    } else {
        let classes = [
            (10, token.chars().any(|c| c.is_ascii_digit())),
            (26, token.chars().any(|c| c.is_ascii_lowercase())),
            (26, token.chars().any(|c| c.is_ascii_uppercase())),
            (4, token.chars().any(|c| "-._~".contains(c))),
            (
                32,
                token
                    .chars()
                    .any(|c| !c.is_ascii_alphanumeric() && !"-._~".contains(c)),
            ),
        ];
        classes
            .iter()
            .filter(|(_, used)| *used)
            .map(|(n, _)| n)
            .sum()
    };
    token.chars().count() as f64 * f64::from(alphabet).max(1.0).log2()
}

/// Why a token is too weak, if it is.
pub fn weak_token(token: &str) -> Option<String> {
    let bits = token_bits(token);
    let distinct = token
        .chars()
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    if bits < MIN_TOKEN_BITS || distinct < MIN_TOKEN_DISTINCT {
        Some(format!(
            "a control token needs at least {MIN_TOKEN_BITS} bits: this one has about {bits:.0} \
             ({} characters, {distinct} distinct); use 32 random hex digits \
             (`openssl rand -hex 16`) or leave it out for a random one per start",
            token.chars().count()
        ))
    } else {
        None
    }
}

/// A control token, kept as its digest and compared in constant time.
#[derive(Clone)]
pub(crate) struct ControlToken {
    digest: blake3::Hash,
}

impl std::fmt::Debug for ControlToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ControlToken(..)")
    }
}

impl ControlToken {
    pub(crate) fn new(token: &str) -> Self {
        Self {
            digest: blake3::hash(token.as_bytes()),
        }
    }

    /// Whether `presented` is the token; constant time in both tokens' contents.
    pub(crate) fn matches(&self, presented: &str) -> bool {
        blake3::hash(presented.as_bytes()) == self.digest
    }
}

/// What one control attempt comes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The right token.
    Granted,
    /// A wrong token; the address waits this long before its next checked attempt.
    Wrong(Duration),
    /// Too early after a wrong one from the same address: refused unchecked.
    TooEarly(Duration),
}

/// Failures of one address.
#[derive(Clone, Copy, Debug)]
struct Failures {
    count: u32,
    last: Instant,
    next_allowed: Instant,
}

/// Per-address back-off of control-token attempts.
#[derive(Debug, Default)]
pub(crate) struct TokenThrottle {
    addresses: Mutex<HashMap<IpAddr, Failures>>,
}

/// The key an address's failures are kept under: an IPv6 client controls its whole /64,
/// so the /64 is one address.
fn key(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(prefix.into())
            }
        },
        v4 => v4,
    }
}

/// The wait after `count` consecutive failures.
fn backoff(count: u32) -> Duration {
    let doublings = count.saturating_sub(1).min(20);
    (FIRST_BACKOFF * 2u32.pow(doublings)).min(MAX_BACKOFF)
}

impl TokenThrottle {
    /// Checks `presented` against `token` unless `address` is still waiting after a
    /// wrong one, and records the outcome.
    pub(crate) fn attempt(
        &self,
        address: IpAddr,
        token: &ControlToken,
        presented: &str,
        now: Instant,
    ) -> Verdict {
        let key = key(address);
        let mut addresses = self.addresses.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = addresses.get(&key) {
            if now < f.next_allowed {
                return Verdict::TooEarly(f.next_allowed - now);
            }
        }
        if token.matches(presented) {
            return Verdict::Granted;
        }
        let count = addresses
            .get(&key)
            .filter(|f| now.duration_since(f.last) < FORGET_AFTER)
            .map_or(0, |f| f.count)
            .saturating_add(1);
        let wait = backoff(count);
        if !addresses.contains_key(&key) && addresses.len() >= MAX_ADDRESSES {
            forget_oldest(&mut addresses, now);
        }
        addresses.insert(
            key,
            Failures {
                count,
                last: now,
                next_allowed: now + wait,
            },
        );
        Verdict::Wrong(wait)
    }
}

/// Drops the failures forgotten by now, and if none are, the one quiet the longest.
fn forget_oldest(addresses: &mut HashMap<IpAddr, Failures>, now: Instant) {
    addresses.retain(|_, f| now.duration_since(f.last) < FORGET_AFTER);
    if addresses.len() >= MAX_ADDRESSES {
        if let Some(oldest) = addresses
            .iter()
            .min_by_key(|(_, f)| f.last)
            .map(|(k, _)| *k)
        {
            addresses.remove(&oldest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_repetitive_tokens_are_weak_and_generated_ones_are_not() {
        for weak in [
            "q~",
            "scene-token",
            "0123456789abcdef",
            &"a".repeat(64),
            &"ab".repeat(40),
        ] {
            assert!(weak_token(weak).is_some(), "{weak}");
        }
        let generated = format!("{:032x}", 0x3f9c_0e7a_1b4d_2c8e_6f5a_0b9d_7c3e_1f2au128);
        assert_eq!(token_bits(&generated), 128.0);
        for strong in [
            generated.as_str(),
            "3f9c0e7a1b4d2c8e6f5a0b9d7c3e1f2a",
            "Xk9-vQ2_pL7.mN4~rT8zW1yB5hJ3",
        ] {
            assert_eq!(weak_token(strong), None, "{strong}");
        }
    }

    #[test]
    fn wrong_tokens_from_one_address_back_off_exponentially_and_others_are_not_held() {
        let token = ControlToken::new("3f9c0e7a1b4d2c8e6f5a0b9d7c3e1f2a");
        let throttle = TokenThrottle::default();
        let guesser: IpAddr = "10.0.0.7".parse().unwrap();
        let t0 = Instant::now();
        assert_eq!(
            throttle.attempt(guesser, &token, "x", t0),
            Verdict::Wrong(FIRST_BACKOFF)
        );
        let early = throttle.attempt(guesser, &token, "3f9c0e7a1b4d2c8e6f5a0b9d7c3e1f2a", t0);
        assert!(matches!(early, Verdict::TooEarly(_)), "{early:?}");
        let mut at = t0;
        let mut waits = Vec::new();
        for _ in 0..4 {
            at += backoff(waits.len() as u32 + 1);
            match throttle.attempt(guesser, &token, "y", at) {
                Verdict::Wrong(w) => waits.push(w.as_millis()),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(waits, [200, 400, 800, 1600]);
        let other: IpAddr = "10.0.0.8".parse().unwrap();
        assert_eq!(
            throttle.attempt(other, &token, "3f9c0e7a1b4d2c8e6f5a0b9d7c3e1f2a", at),
            Verdict::Granted
        );
        assert_eq!(backoff(40), MAX_BACKOFF);
        // One /64 is one address.
        let a: IpAddr = "2001:db8::1".parse().unwrap();
        let b: IpAddr = "2001:db8::ffff:2".parse().unwrap();
        throttle.attempt(a, &token, "z", at);
        assert!(matches!(
            throttle.attempt(b, &token, "z", at),
            Verdict::TooEarly(_)
        ));
    }
}
