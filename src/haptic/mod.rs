//! Haptic runtime (DESIGN §1, §2.5, §2.6): the 1 kHz haptic thread, the 200 Hz model
//! thread, the wait-free hand-offs between them, force extrapolation between model
//! updates, safety, tick statistics, the deterministic lock-step mode, the fidelity
//! harness, the hand-off of every tick's record to a recording ([`tick_ring`]) and the
//! review of a run's ticks for the user ([`review`]).
//!
//! Data flow of one tick ([`tick::HapticLoop`]): device sample → probe (scene frame) →
//! newest local force model → [`extrapolate::force_at`] → [`safety::SafetyFilter`] →
//! device force. The same two halves of a tick run on the real-time thread
//! ([`runtime::HapticRuntime`]) and in lock-step ([`lockstep::LockStep`]).

pub mod analytic;
pub mod extrapolate;
pub mod fades;
pub mod fidelity;
pub mod lockstep;
pub mod review;
pub mod runtime;
pub mod safety;
pub mod stats;
pub mod step_times;
pub mod tick;
pub mod tick_csv;
pub mod tick_ring;

pub use crate::tissue::ForceStrategy;
pub use lockstep::LockStep;
pub use safety::{SafetyFilter, SafetyLimits, SafetyState};
pub use tick::{HapticConfig, HapticLoop, TickRecord};
