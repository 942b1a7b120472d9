//! The haptic thread's per-tick records handed to a reader that may not keep up (a
//! file writer): a wait-free single-producer single-consumer ring from the `rtrb`
//! crate, allocated once when made. The haptic thread's push never waits, retries or
//! allocates; when the ring is full the record is dropped and counted.

use std::sync::Arc;

use super::tick::TickRecord;
use crate::rt::DropCounter;

/// The haptic thread's end of a [`tick_ring`].
pub struct TickSink {
    ring: rtrb::Producer<TickRecord>,
    dropped: Arc<DropCounter>,
}

/// The reader's end of a [`tick_ring`].
pub struct TickSource {
    ring: rtrb::Consumer<TickRecord>,
    dropped: Arc<DropCounter>,
}

/// A ring of `capacity` tick records (at least 1).
pub fn tick_ring(capacity: usize) -> (TickSink, TickSource) {
    let (producer, consumer) = rtrb::RingBuffer::new(capacity.max(1));
    let dropped = Arc::new(DropCounter::default());
    (
        TickSink {
            ring: producer,
            dropped: dropped.clone(),
        },
        TickSource {
            ring: consumer,
            dropped,
        },
    )
}

impl TickSink {
    /// Hands `record` to the reader, or drops and counts it if the ring is full.
    pub fn push(&mut self, record: TickRecord) {
        if self.ring.push(record).is_err() {
            self.dropped.add();
        }
    }

    /// Records the ring can take now before it drops (0 ‥ capacity).
    pub fn free_slots(&self) -> usize {
        self.ring.slots()
    }
}

impl TickSource {
    /// The oldest record not read yet.
    pub fn pop(&mut self) -> Option<TickRecord> {
        self.ring.pop().ok()
    }

    /// Whether the haptic thread's end is gone (its thread ended): what is left in the
    /// ring is all there will be.
    pub fn writer_gone(&self) -> bool {
        self.ring.is_abandoned()
    }

    /// Records dropped so far because the ring was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.get()
    }
}
