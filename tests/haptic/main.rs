//! The haptic loop: no allocation on the haptic thread, an SDK-paced loop, faults and
//! safety, and lock-step replays of the test trajectories.

#[path = "../support/mod.rs"]
mod support;

mod alloc;
mod external_pacer;
mod faults;
mod safety;
mod trajectories;
