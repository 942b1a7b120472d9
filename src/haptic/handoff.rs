//! Wait-free hand-offs between the haptic thread and the rest of the program.
//!
//! [`slot`] is a single-producer single-consumer *triple buffer*: the writer always has a
//! buffer of its own to fill, the reader always has one to read, and a third is swapped
//! atomically between them, so neither side ever waits, retries or allocates. It is
//! hand-written because crossbeam has no latest-value slot (its `AtomicCell` falls back to
//! a spin lock for values wider than a word, which the haptic thread must not take) and the
//! triple-buffer crates add nothing these 60 lines do not. Telemetry uses crossbeam's
//! bounded [`ArrayQueue`](crossbeam::queue::ArrayQueue) and drops on full.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

/// Bit set in `back` when the back buffer holds a value the reader has not seen.
const FRESH: u8 = 0b100;
const INDEX: u8 = 0b011;

struct Shared<T> {
    buffers: [UnsafeCell<(T, u64)>; 3],
    /// Index of the buffer between writer and reader, plus the `FRESH` bit.
    back: AtomicU8,
}

// SAFETY: each buffer is touched by at most one side at a time: the writer owns
// `write`, the reader owns `read`, and ownership of the third changes hands only through
// the atomic swap on `back` (AcqRel orders the buffer contents with the swap).
unsafe impl<T: Send> Sync for Shared<T> {}

/// The producing end of a [`slot`].
pub struct SlotWriter<T> {
    shared: Arc<Shared<T>>,
    write: u8,
    version: u64,
}

/// The consuming end of a [`slot`].
pub struct SlotReader<T> {
    shared: Arc<Shared<T>>,
    read: u8,
}

/// A wait-free single-value hand-off holding `initial` (version 0) until the first write.
pub fn slot<T: Copy + Send>(initial: T) -> (SlotWriter<T>, SlotReader<T>) {
    let shared = Arc::new(Shared {
        buffers: [
            UnsafeCell::new((initial, 0)),
            UnsafeCell::new((initial, 0)),
            UnsafeCell::new((initial, 0)),
        ],
        back: AtomicU8::new(1),
    });
    (
        SlotWriter {
            shared: shared.clone(),
            write: 0,
            version: 0,
        },
        SlotReader { shared, read: 2 },
    )
}

impl<T: Copy + Send> SlotWriter<T> {
    /// Publishes `value`, replacing any value the reader has not taken yet. Returns the
    /// value's version (1, 2, …).
    pub fn write(&mut self, value: T) -> u64 {
        self.version += 1;
        // SAFETY: `write` is owned by this writer (see `Shared`).
        unsafe { *self.shared.buffers[self.write as usize].get() = (value, self.version) };
        let old = self.shared.back.swap(self.write | FRESH, Ordering::AcqRel);
        self.write = old & INDEX;
        self.version
    }
}

impl<T: Copy + Send> SlotReader<T> {
    /// The newest published value and its version (0 = the initial value).
    pub fn read(&mut self) -> (T, u64) {
        if self.shared.back.load(Ordering::Relaxed) & FRESH != 0 {
            let old = self.shared.back.swap(self.read, Ordering::AcqRel);
            self.read = old & INDEX;
        }
        // SAFETY: `read` is owned by this reader (see `Shared`).
        unsafe { *self.shared.buffers[self.read as usize].get() }
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
