//! Wait-free hand-offs between the haptic thread and the rest of the program.
//!
//! [`slot`] is a single-producer single-consumer latest-value slot on the
//! `triple_buffer` crate (the same one the visual stream uses): the writer always has a
//! buffer of its own to fill, the reader always has one to read, and a third is swapped
//! atomically between them, so neither side ever waits, retries or allocates. crossbeam
//! has no such slot (its `AtomicCell` falls back to a spin lock for values wider than a
//! word, which the haptic thread must not take). Telemetry uses crossbeam's bounded
//! [`ArrayQueue`](crossbeam::queue::ArrayQueue) and drops on full.

use super::memory::Region;
use crossbeam::utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering};

/// The producing end of a [`slot`].
pub struct SlotWriter<T: Send> {
    input: triple_buffer::Input<(T, u64)>,
    version: u64,
    storage: Region,
}

/// The consuming end of a [`slot`].
pub struct SlotReader<T: Send> {
    output: triple_buffer::Output<(T, u64)>,
    storage: Region,
}

/// A wait-free single-value hand-off holding `initial` (version 0) until the first write.
pub fn slot<T: Copy + Send>(initial: T) -> (SlotWriter<T>, SlotReader<T>) {
    let (input, output) = triple_buffer::triple_buffer(&(initial, 0));
    let storage = storage_around(output.peek_output_buffer());
    (
        SlotWriter {
            input,
            version: 0,
            storage,
        },
        SlotReader { output, storage },
    )
}

/// A range certain to hold the whole shared state of the triple buffer that `buffer`
/// is one of. The crate keeps its three cache-padded buffers and its cache-padded
/// index in one allocation but does not expose it, so the range reaches that
/// allocation's size to either side of a known buffer (a few hundred bytes; locking
/// clips it to mapped pages).
fn storage_around<T>(buffer: &T) -> Region {
    let size = 4 * std::mem::size_of::<CachePadded<T>>() + std::mem::size_of::<CachePadded<u8>>();
    let at = buffer as *const T as usize;
    Region {
        start: at.saturating_sub(size),
        len: 2 * size,
    }
}

impl<T: Copy + Send> SlotWriter<T> {
    /// Publishes `value`, replacing any value the reader has not taken yet. Returns the
    /// value's version (1, 2, …).
    pub fn write(&mut self, value: T) -> u64 {
        self.version += 1;
        self.input.write((value, self.version));
        self.version
    }

    /// The memory the slot's writes touch (for locking it resident).
    pub fn storage(&self) -> Region {
        self.storage
    }
}

impl<T: Copy + Send> SlotReader<T> {
    /// The newest published value and its version (0 = the initial value).
    pub fn read(&mut self) -> (T, u64) {
        *self.output.read()
    }

    /// The memory the slot's reads touch (for locking it resident).
    pub fn storage(&self) -> Region {
        self.storage
    }
}

/// A counter of items dropped by a drop-on-full queue.
#[derive(Debug, Default)]
pub struct DropCounter(AtomicU64);

impl DropCounter {
    /// Counts one dropped item.
    pub fn add(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
    /// Items dropped so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_sees_initial_then_newest_value() {
        let (mut w, mut r) = slot(0u32);
        assert_eq!(r.read(), (0, 0));
        w.write(1);
        w.write(2);
        assert_eq!(r.read(), (2, 2));
        assert_eq!(r.read(), (2, 2));
        w.write(3);
        assert_eq!(r.read(), (3, 3));
    }

    #[test]
    fn storage_holds_every_buffer_the_reader_and_writer_use() {
        let (mut w, mut r) = slot([0u64; 9]);
        let storage = r.storage();
        assert_eq!(storage, w.storage());
        // Writing and reading rotates through all three buffers of the shared state.
        for i in 1..=6u64 {
            w.write([i; 9]);
            let value = r.output.read();
            let at = value as *const ([u64; 9], u64) as usize;
            assert!(
                at >= storage.start && at + std::mem::size_of_val(value) <= storage.end(),
                "buffer at {at:#x} outside {storage:?}"
            );
            let input = w.input.input_buffer_mut() as *const ([u64; 9], u64) as usize;
            assert!(input >= storage.start && input < storage.end());
        }
    }

    #[test]
    fn concurrent_reader_sees_monotonic_consistent_values() {
        // Each value is a pair that must stay consistent (a torn read would break it).
        let (mut w, mut r) = slot((0u64, 0u64));
        let writer = std::thread::spawn(move || {
            for i in 1..=200_000u64 {
                w.write((i, i.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
            }
        });
        let mut last = 0;
        while last < 200_000 {
            let ((i, h), v) = r.read();
            assert_eq!(h, i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            assert_eq!(i, v);
            assert!(i >= last);
            last = i;
        }
        writer.join().unwrap();
    }
}
