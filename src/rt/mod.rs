//! Real-time plumbing shared by the haptic loop and the devices: the monotonic clock
//! and deadline sleeps ([`clock`]), real-time scheduling of a thread ([`thread`]),
//! wait-free hand-offs between threads ([`handoff`]) and the stop flag set by signals
//! ([`signal`]). Linux only (libc).

pub mod clock;
pub mod handoff;
pub mod signal;
pub mod thread;

pub use clock::{now_ns, sleep_until};
pub use handoff::{slot, DropCounter, SlotReader, SlotWriter};
pub use signal::stop_flag;
pub use thread::{apply_to_current_thread, RealtimePolicy};
