//! What `palpa devices check` asks of the device and the user, step by step, and the
//! thresholds it judges by.

use crate::device::profile::{AxisMap, Calibration, DeviceProfile, Joints, Linkage};
use crate::device::DeviceWorkspace;
use crate::Vec3;

/// Largest force the check ever commands (N), on any axis or joint.
pub const MAX_CHECK_FORCE: f64 = 0.5;
/// Peak force (N) of a push: 2 % under [`MAX_CHECK_FORCE`], so that a board's current
/// quantum (1 mA on the shipped profiles) rounding each joint's current cannot take the
/// force the motors actually make over 0.5 N.
pub const PUSH_FORCE: f64 = 0.49;
/// A handle that moved this far (m) from where a push began is running away.
pub const ABORT_DISPLACEMENT: f64 = 0.015;
/// A handle that moved this fast (m/s, over [`SPEED_WINDOW`] ticks) is running away.
pub const ABORT_SPEED: f64 = 0.25;
/// Ticks the speed is measured over.
pub const SPEED_WINDOW: usize = 8;
/// A device that sends no new sample for this long (s) during a push is stopped.
pub const STALE_DURING_PUSH: f64 = 0.05;
/// Motion (m) from a step's start that counts as the user moving the handle.
pub const MOVE_DETECT: f64 = 0.02;
/// Back within this distance (m) of where a move began counts as back in the middle.
pub const MOVE_RETURN: f64 = 0.015;
/// A move is judged from where the handle rested within this distance (m) …
pub const STILL_RADIUS: f64 = 0.002;
/// … for this long (s).
pub const STILL_TIME: f64 = 0.4;
/// Cosine between the asked and the seen direction of a move or push that passes.
pub const DIRECTION_COSINE: f64 = 0.7;
/// Smallest tip motion (m) a push must cause to be judged.
pub const MIN_PUSH_MOTION: f64 = 0.0002;
/// Smallest joint rotation (rad) a joint push must cause to be judged.
pub const MIN_JOINT_MOTION: f64 = 0.0005;
/// Share of the profile's workspace box each axis's reach must cover.
pub const WORKSPACE_COVERAGE: f64 = 0.6;
/// Distance (m) between the decoded tip and the calibration pose's that passes.
pub const CALIBRATION_TOLERANCE: f64 = 0.005;
/// Time (s) a board may take to show the counts its calibration command set.
pub const CALIBRATION_SETTLE: f64 = 0.3;
/// Time (s) the user has for each move, and to press Enter.
pub const USER_TIMEOUT: f64 = 60.0;
/// Time (s) at the start to see samples arrive.
pub const SETTLE_TIME: f64 = 0.3;

/// One push: at rest, ramp up, hold, ramp down (s).
pub const PUSH_REST: f64 = 0.2;
/// Ramp from zero to the push's force (s).
pub const PUSH_RAMP_UP: f64 = 0.3;
/// Hold at the push's force (s); the position is measured over its second half.
pub const PUSH_HOLD: f64 = 0.3;
/// Ramp back to zero (s).
pub const PUSH_RAMP_DOWN: f64 = 0.2;

/// An instruction for the person at the device.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Prompt {
    /// Hold the arm in its calibration pose, then press Enter.
    CalibrationPose,
    /// Move the handle along device axis `axis` (0 x, 1 y, 2 z), `positive` or not, to
    /// the end of its reach and back to the middle.
    Move {
        /// Device axis.
        axis: usize,
        /// Towards + (or −).
        positive: bool,
    },
    /// Hold the handle lightly in the middle of the workspace, then press Enter: small
    /// forces follow.
    HoldForForces,
    /// Forces are being applied: keep holding lightly.
    Pushing,
    /// The check is over: let go.
    Done,
}

impl Prompt {
    /// The words the terminal shows.
    pub fn text(self) -> &'static str {
        match self {
            Prompt::CalibrationPose => {
                "hold the arm in its calibration pose (see the profile), then press Enter"
            }
            Prompt::Move { axis, positive } => MOVE_TEXT[axis][usize::from(!positive)],
            Prompt::HoldForForces => {
                "hold the handle lightly with your fingertips in the middle of the workspace, \
                 then press Enter: palpa pushes it gently (at most 0.5 N) along each axis"
            }
            Prompt::Pushing => "pushing gently along each axis and joint: keep holding lightly",
            Prompt::Done => "done: the force is zero",
        }
    }
}

const MOVE_TEXT: [[&str; 2]; 3] = [
    [
        "hold the handle still in the middle, then move it along +x (device frame) to the \
         end of its reach and back",
        "hold the handle still in the middle, then move it along −x to the end of its reach \
         and back",
    ],
    [
        "hold the handle still in the middle, then move it along +y to the end of its reach \
         and back",
        "hold the handle still in the middle, then move it along −y to the end of its reach \
         and back",
    ],
    [
        "hold the handle still in the middle, then move it up (+z) to the end of its reach \
         and back",
        "hold the handle still in the middle, then move it down (−z) to the end of its reach \
         and back",
    ],
];

/// One step of the check.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Step {
    /// Read for a moment at zero force: samples must arrive.
    Settle,
    /// The calibration pose (kinematic profiles).
    Calibrate,
    /// One move along an axis.
    Move {
        /// Device axis.
        axis: usize,
        /// Direction.
        positive: bool,
    },
    /// Judge the workspace the moves reached.
    Workspace,
    /// Wait for the user to hold the handle for the pushes.
    Hold,
    /// Push along a device axis.
    PushAxis {
        /// Device axis.
        axis: usize,
        /// Direction.
        positive: bool,
    },
    /// Push one joint alone (kinematic profiles).
    PushJoint {
        /// Joint 0, 1, 2 (a, b, c).
        joint: usize,
        /// Direction of the torque.
        positive: bool,
    },
}

/// What the check knows of an arm whose encoders palpa reads.
#[derive(Clone, Debug)]
pub struct ArmInfo {
    /// The arm.
    pub linkage: Linkage,
    /// Arm base frame → device frame.
    pub axes: AxisMap,
    /// Where counts are counted from.
    pub calibration: Calibration,
    /// The tip at the calibration pose (m, device frame).
    pub calibration_tip: Vec3,
    /// The encoder fields, for the fix of a reversed encoder.
    pub joints: Option<Joints>,
    /// The current fields, for the fix of a reversed motor.
    pub currents: Option<Joints>,
}

/// The check for one device: its steps and what it is judged against.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The steps in order.
    pub steps: Vec<Step>,
    /// The workspace box the profile or SDK gives (device frame).
    pub workspace: Option<DeviceWorkspace>,
    /// The arm, for kinematic profiles.
    pub arm: Option<ArmInfo>,
    /// Where the profile came from (a file or a shipped profile's name), for fixes.
    pub profile_source: Option<String>,
}

impl Plan {
    /// The check of a device with `workspace`, and `profile` (from `profile_source`)
    /// where a profile describes it.
    pub fn new(
        workspace: Option<DeviceWorkspace>,
        profile: Option<&DeviceProfile>,
        profile_source: Option<String>,
    ) -> Self {
        let arm = profile.and_then(|p| {
            let k = p.kinematics.as_ref()?;
            let linkage = k.linkage();
            let axes = p.axis_map();
            let tip = linkage.position(linkage.joint_angles([0.0; 3]))?;
            Some(ArmInfo {
                linkage,
                axes,
                calibration: k.calibration(),
                calibration_tip: axes.to_device([tip.x, tip.y, tip.z]),
                joints: p.input.joints,
                currents: p.output.currents,
            })
        });
        let mut steps = vec![Step::Settle];
        if arm.is_some() {
            steps.push(Step::Calibrate);
        }
        for axis in 0..3 {
            for positive in [true, false] {
                steps.push(Step::Move { axis, positive });
            }
        }
        steps.push(Step::Workspace);
        steps.push(Step::Hold);
        for axis in 0..3 {
            for positive in [true, false] {
                steps.push(Step::PushAxis { axis, positive });
            }
        }
        if arm.is_some() {
            for joint in 0..3 {
                for positive in [true, false] {
                    steps.push(Step::PushJoint { joint, positive });
                }
            }
        }
        Self {
            steps,
            workspace,
            arm,
            profile_source,
        }
    }
}

/// The push's force (0 to 1 of its peak) `t` s after the push began, and whether its
/// position is measured then: raised-cosine ramps, so the force's rate is smooth.
pub fn push_envelope(t: f64) -> (f64, PushPhase) {
    let ramp = |x: f64| 0.5 - 0.5 * (std::f64::consts::PI * x.clamp(0.0, 1.0)).cos();
    let up = PUSH_REST;
    let hold = up + PUSH_RAMP_UP;
    let down = hold + PUSH_HOLD;
    let end = down + PUSH_RAMP_DOWN;
    if t < up {
        let phase = if t >= up - 0.1 {
            PushPhase::Baseline
        } else {
            PushPhase::Rest
        };
        (0.0, phase)
    } else if t < hold {
        (ramp((t - up) / PUSH_RAMP_UP), PushPhase::Ramp)
    } else if t < down {
        let phase = if t >= hold + PUSH_HOLD / 2.0 {
            PushPhase::Measure
        } else {
            PushPhase::Ramp
        };
        (1.0, phase)
    } else if t < end {
        (1.0 - ramp((t - down) / PUSH_RAMP_DOWN), PushPhase::Ramp)
    } else {
        (0.0, PushPhase::Over)
    }
}

/// Where a push is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushPhase {
    /// Zero force, not measured.
    Rest,
    /// Zero force, the baseline position measured.
    Baseline,
    /// The force changes.
    Ramp,
    /// Full force, the position measured.
    Measure,
    /// The push is over.
    Over,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_push_ramps_smoothly_to_its_peak_and_back_to_zero() {
        let mut last = 0.0;
        let mut steepest: f64 = 0.0;
        let mut t = 0.0;
        while push_envelope(t).1 != PushPhase::Over {
            let (g, _) = push_envelope(t);
            assert!((0.0..=1.0).contains(&g));
            steepest = steepest.max((g - last).abs());
            last = g;
            t += 1e-3;
        }
        assert!(last < 1e-3, "the ramp ends near zero: {last}");
        assert_eq!(push_envelope(t).0, 0.0, "and is zero once over");
        let total = PUSH_REST + PUSH_RAMP_UP + PUSH_HOLD + PUSH_RAMP_DOWN;
        assert!((t - total).abs() < 2e-3, "{t}");
        // At most π/2 · 1 ms / 0.2 s of the peak per tick: 2.5 N/s at 0.5 N.
        assert!(steepest < 0.008, "{steepest}");
        assert_eq!(push_envelope(0.15).1, PushPhase::Baseline);
        assert_eq!(push_envelope(0.75).1, PushPhase::Measure);
    }

    #[test]
    fn a_kinematic_profile_adds_the_calibration_pose_and_the_joint_pushes() {
        let wh = DeviceProfile::shipped()
            .into_iter()
            .find(|p| p.name == "woodenhaptics")
            .unwrap();
        let plan = Plan::new(None, Some(&wh), Some("woodenhaptics".into()));
        assert_eq!(plan.steps[1], Step::Calibrate);
        assert_eq!(plan.steps.len(), 1 + 1 + 6 + 2 + 6 + 6);
        let tip = plan.arm.unwrap().calibration_tip;
        assert!((tip - Vec3::new(0.025, 0.0, 0.205)).norm() < 1e-12, "{tip}");
        let cartesian = Plan::new(None, None, None);
        assert_eq!(cartesian.steps.len(), 1 + 6 + 2 + 6);
    }
}
