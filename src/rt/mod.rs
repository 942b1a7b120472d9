//! Real-time plumbing shared by the haptic loop and the devices: the monotonic clock
//! and deadline sleeps ([`clock`]), real-time set-up of a thread ([`thread`]), keeping
//! its memory resident ([`memory`]),
//! wait-free hand-offs between threads ([`handoff`]), the stop flag set by signals
//! ([`signal`]) and the report of an allocation the system refused ([`out_of_memory`]).
//! Linux only (libc).

pub mod clock;
pub mod handoff;
pub mod memory;
pub mod out_of_memory;
pub mod signal;
pub mod thread;

pub use clock::{now_ns, sleep_until};
pub use handoff::{slot, DropCounter, SlotReader, SlotWriter};
pub use memory::{Region, ResidentSet};
pub use signal::stop_flag;
pub use thread::{
    raise_thread_share, set_up_current_thread, set_up_model_thread, RealtimeMode, RealtimePolicy,
};
