//! `palpa devices check`: the guided first-power-on test of a device, through the same
//! device code `serve` drives (the same opening, profile codec, SDK calls and servo
//! clock), and the record of which devices passed it.
//!
//! The check reads positions while the person moves the handle along each axis (the
//! motion must go the asked way; a kinematic profile's encoder counted the other way is
//! named), compares the reach with the workspace box, checks the calibration pose of an
//! encoder arm, then pushes gently — at most [`plan::MAX_CHECK_FORCE`], ramped — along
//! each axis and, for kinematic profiles, on each joint alone, and judges from the
//! position change that each pushes the way it should. A motor wired the other way is
//! named with the profile line that fixes it. A handle that runs away during a push gets
//! zero force in the same tick and the check ends.
//!
//! * [`plan`] — the steps, the prompts and the thresholds;
//! * [`engine`] — the 1 kHz tick;
//! * [`findings`] — what each step found, and the report with its fixes;
//! * [`drive`] — real-time and virtual pacing, and the terminal as the operator;
//! * [`store`] — the record of checked devices, and safe file writes.

pub mod drive;
pub mod engine;
pub mod findings;
pub mod plan;
pub mod store;

pub use drive::{run, Pacing, TerminalOperator};
pub use engine::{CheckLoop, Operator};
pub use findings::{Finding, Outcome};
pub use plan::{Plan, Prompt, Step, MAX_CHECK_FORCE};

use super::HapticDevice;

/// The warning `serve` prints for a device that never passed the check; `None` for a
/// checked or virtual device (or where the record cannot be read, which is logged).
pub fn unchecked_warning(device: &dyn HapticDevice, spec: &str) -> Option<String> {
    let identity = device.identity()?;
    let dir = match store::state_dir() {
        Ok(d) => d,
        Err(e) => {
            tracing::debug!("cannot tell whether {} was checked: {e}", device.name());
            return None;
        }
    };
    match store::lookup(&dir, &identity) {
        Ok(Some(_)) => None,
        Ok(None) => Some(format!(
            "{} was never checked: run `palpa devices check {spec}` before its first session \
             (it tests directions, calibration and small forces; record: {})",
            device.name(),
            dir.display()
        )),
        Err(e) => {
            tracing::warn!("cannot read the record of checked devices: {e}");
            None
        }
    }
}
