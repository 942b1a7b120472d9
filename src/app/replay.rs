//! Replay: a recorded trajectory through a scene in deterministic lock-step (one model
//! step every haptic/model ticks on a virtual clock), giving the force the user's hand
//! would get at every haptic tick.

use super::config::{attach_device, given_mapping};
use crate::device::mapped::MappedDevice;
use crate::device::replay::{ReplayDevice, Trajectory};
use crate::device::HapticDevice;
use crate::haptic::review::TickReview;
use crate::haptic::LockStep;
use crate::scene::BuiltScene;

pub use crate::haptic::tick_csv::{write_csv, TickRow as ReplayRow, HEADER};

/// A replay's rows and what its ticks tell the user ([`TickReview::notes`]).
pub struct Replay {
    /// One row per haptic tick.
    pub rows: Vec<ReplayRow>,
    /// The review of every tick.
    pub review: TickReview,
}

/// Replays `trajectory` through the built scene in lock-step: one row per haptic tick
/// from t = 0 to the trajectory's last sample.
pub fn replay(built: BuiltScene, trajectory: Trajectory) -> Vec<ReplayRow> {
    replay_reviewed(built, trajectory).rows
}

/// [`replay`], with the review of its ticks: contact during the start-up ramp, the
/// clamp, no contact at all.
pub fn replay_reviewed(mut built: BuiltScene, trajectory: Trajectory) -> Replay {
    let map = given_mapping(&built.scene.device);
    let device = MappedDevice::new(ReplayDevice::new(trajectory.clone()), map);
    let config = attach_device(&mut built, device.rating());
    let ticks = (trajectory.duration() / config.tick_period).floor() as usize + 1;
    let mut review = TickReview::new(&config.limits);
    let mut lock = LockStep::new(device, built.model, config);
    let mut rows = Vec::with_capacity(ticks);
    for _ in 0..ticks {
        let r = lock.step();
        review.add(&r);
        rows.push(ReplayRow::of(&r));
    }
    lock.finish();
    Replay { rows, review }
}
