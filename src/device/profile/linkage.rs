//! The `[kinematics]` section of a profile: which arm sits between the joint encoders
//! and the stylus tip, with the parameters and meanings of the public WoodenHaptics
//! configuration for the capstan arm (see [`crate::device::kinematics`]).

use crate::device::kinematics::{CapstanArm, DeltaArm, DeltaDrive, DEFAULT_MAX_CONDITION};
use crate::Vec3;
use serde::Deserialize;

/// Where the encoder counts are counted from.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Calibration {
    /// The counters read 0 at the calibration pose: the device is powered on (or its
    /// counters reset) while held there (WoodenHaptics 1.5).
    #[default]
    PowerOn,
    /// The counters already count from the zero angles: the firmware calibrated them.
    Absolute,
    /// The counters read 0 at power-on (as [`Calibration::PowerOn`]) until the host
    /// sends the board its calibration report (`[output.calibration]`, the haptikfabriken
    /// v2 firmware's command 1), which sets them to the calibration counts: from then on
    /// they count from the zero angles. palpa sends it when the board asks
    /// (`input.calibration_request`, the firmware's calibration button) and on the
    /// calibration step (Enter).
    Firmware,
}

/// An arm, as given in a profile.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum KinematicsSpec {
    /// A 3R capstan arm (WoodenHaptics, Polhem class).
    Capstan(CapstanSpec),
    /// A rotary delta arm (Falcon, omega class).
    Delta(DeltaSpec),
}

/// A capstan arm with the public WoodenHaptics configuration's parameters. Arrays are
/// per joint a, b, c.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CapstanSpec {
    /// Capstan (motor pulley) diameters (m).
    pub capstan_diameter: [f64; 3],
    /// Link lengths La, Lb, Lc (m).
    pub link_length: [f64; 3],
    /// Body (driven drum) diameters (m).
    pub body_diameter: [f64; 3],
    /// Tip position at which the reported position is zero (m, arm base frame).
    pub workspace_origin: [f64; 3],
    /// Encoder counts per motor revolution (quadrature).
    pub counts_per_revolution: [f64; 3],
    /// The driver's "motor and body aligned" flags (turns the joint's direction).
    #[serde(default)]
    pub motor_aligned: [bool; 3],
    /// Counts from the zero angles to the calibration pose.
    pub calibration_counts: [f64; 3],
    /// Motor torque constants (N·m/A).
    pub torque_constant: [f64; 3],
    /// Largest motor current, either sign (A).
    pub max_current: f64,
    /// Masses of links b and c (kg), for gravity compensation.
    #[serde(default)]
    pub link_mass: [f64; 2],
    /// Centre-of-mass distances of links b and c from their joints (m).
    #[serde(default)]
    pub centre_of_mass: [f64; 2],
    /// Gravity used for compensation (m/s²); 0 (the default) turns it off.
    #[serde(default)]
    pub gravity: f64,
    /// Where the encoder counts are counted from.
    #[serde(default)]
    pub calibration: Calibration,
    /// Button mask that, pressed with the arm held at the calibration pose, makes that
    /// pose the reference (the calibration step).
    pub calibrate_button: Option<u32>,
    /// Jacobian condition number from which no force is rendered (the force fades from
    /// half of it); default [`DEFAULT_MAX_CONDITION`].
    pub max_condition: Option<f64>,
}

/// A rotary delta arm and its drive train. Arrays are per arm 0, 1, 2 (at 0°, 120°,
/// 240° about z).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DeltaSpec {
    /// Motor axis distance from the centre, R (m).
    pub base_radius: f64,
    /// Effector joint distance from the effector centre, r (m).
    pub effector_radius: f64,
    /// Upper arm length, a (m).
    pub upper_arm: f64,
    /// Parallelogram forearm length, b (m).
    pub forearm: f64,
    /// Encoder counts per motor revolution (quadrature).
    pub counts_per_revolution: [f64; 3],
    /// Motor revolutions per upper-arm revolution.
    pub gear_ratio: [f64; 3],
    /// Arms whose positive count turns the upper arm up.
    #[serde(default)]
    pub motor_reversed: [bool; 3],
    /// Upper-arm angles at the calibration pose (degrees, 0 = horizontal, positive
    /// down).
    pub calibration_angle_deg: [f64; 3],
    /// Effector position at which the reported position is zero (m, arm base frame).
    #[serde(default)]
    pub workspace_origin: [f64; 3],
    /// Motor torque constants (N·m/A).
    pub torque_constant: [f64; 3],
    /// Largest motor current, either sign (A).
    pub max_current: f64,
    /// Where the encoder counts are counted from (`absolute` counts from the
    /// calibration angles' zero, i.e. horizontal upper arms).
    #[serde(default)]
    pub calibration: Calibration,
    /// Button mask that, pressed at the calibration pose, makes it the reference.
    pub calibrate_button: Option<u32>,
    /// Jacobian condition number from which no force is rendered (the force fades from
    /// half of it); default [`DEFAULT_MAX_CONDITION`].
    pub max_condition: Option<f64>,
}

/// Smallest `max_condition` a profile may give: 1 is a perfectly isotropic arm, and the
/// fade starts at half the limit.
const MIN_CONDITION: f64 = 2.0;

/// The bound of each kinematics key (m, kg, A, N·m/A, counts, degrees, m/s²): far past
/// any desk-top haptic arm, small enough that no product of them overflows.
const BOUNDS: [(&str, f64); 15] = [
    ("capstan_diameter", 1.0),
    ("body_diameter", 10.0),
    ("link_length", 10.0),
    ("base_radius, effector_radius, upper_arm, forearm", 10.0),
    ("counts_per_revolution", 1e9),
    ("gear_ratio", 1e4),
    ("torque_constant", 100.0),
    ("max_current", 100.0),
    ("workspace_origin", 10.0),
    ("calibration_counts", 1e12),
    ("calibration_angle_deg", 360.0),
    ("link_mass", 100.0),
    ("centre_of_mass", 10.0),
    ("gravity", 100.0),
    ("max_condition", 1e4),
];

/// The bound of `key` in [`BOUNDS`].
fn bound(key: &str) -> f64 {
    BOUNDS
        .iter()
        .find(|(k, _)| *k == key)
        .map_or(0.0, |(_, b)| *b)
}

/// A resolved arm, ready for the haptic tick.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Linkage {
    /// A capstan arm.
    Capstan(CapstanArm),
    /// A delta arm with its drive.
    Delta(DeltaDrive),
}

impl Linkage {
    /// Joint angles (rad) from counts counted from the calibration pose.
    pub fn joint_angles(&self, counts: [f64; 3]) -> [f64; 3] {
        match self {
            Linkage::Capstan(arm) => arm.joint_angles(counts),
            Linkage::Delta(drive) => drive.joint_angles(counts),
        }
    }

    /// Tip position (m, arm base frame minus the workspace origin); `None` where a
    /// delta's forearms cannot close.
    pub fn position(&self, angles: [f64; 3]) -> Option<Vec3> {
        match self {
            Linkage::Capstan(arm) => Some(arm.position(angles)),
            Linkage::Delta(drive) => drive.position(angles),
        }
    }

    /// `∂p/∂θ` (m/rad, arm base frame) at joint angles `angles`; `None` where a delta's
    /// forearms cannot close or the pose is singular.
    pub fn jacobian(&self, angles: [f64; 3]) -> Option<crate::Mat3> {
        match self {
            Linkage::Capstan(arm) => Some(arm.jacobian(angles)),
            Linkage::Delta(drive) => drive.arm.jacobian(angles),
        }
    }

    /// Motor currents (A, clamped) that render `force` (N, arm base frame) at `angles`.
    pub fn motor_currents(&self, angles: [f64; 3], force: Vec3) -> [f64; 3] {
        match self {
            Linkage::Capstan(arm) => arm.motor_currents(angles, force),
            Linkage::Delta(drive) => drive.motor_currents(angles, force),
        }
    }
}

impl KinematicsSpec {
    /// The counts' origin.
    pub fn calibration(&self) -> Calibration {
        match self {
            KinematicsSpec::Capstan(c) => c.calibration,
            KinematicsSpec::Delta(d) => d.calibration,
        }
    }

    /// The calibration button mask, if any.
    pub fn calibrate_button(&self) -> Option<u32> {
        match self {
            KinematicsSpec::Capstan(c) => c.calibrate_button,
            KinematicsSpec::Delta(d) => d.calibrate_button,
        }
    }

    /// Counts from the zero angles to the calibration pose (what `absolute` counters
    /// read there).
    pub fn calibration_counts(&self) -> [f64; 3] {
        match self {
            KinematicsSpec::Capstan(c) => c.calibration_counts,
            KinematicsSpec::Delta(d) => std::array::from_fn(|i| {
                let direction = if d.motor_reversed[i] { -1.0 } else { 1.0 };
                direction * d.calibration_angle_deg[i].to_radians() * d.gear_ratio[i]
                    / std::f64::consts::TAU
                    * d.counts_per_revolution[i]
            }),
        }
    }

    /// The resolved arm.
    pub fn linkage(&self) -> Linkage {
        match self {
            KinematicsSpec::Capstan(c) => Linkage::Capstan(CapstanArm {
                capstan_diameter: c.capstan_diameter,
                link_length: c.link_length,
                body_diameter: c.body_diameter,
                workspace_origin: Vec3::from(c.workspace_origin),
                counts_per_revolution: c.counts_per_revolution,
                motor_aligned: c.motor_aligned,
                calibration_counts: c.calibration_counts,
                torque_constant: c.torque_constant,
                max_current: c.max_current,
                mass_b: c.link_mass[0],
                mass_c: c.link_mass[1],
                centre_of_mass_b: c.centre_of_mass[0],
                centre_of_mass_c: c.centre_of_mass[1],
                gravity: c.gravity,
                max_condition: c.max_condition.unwrap_or(DEFAULT_MAX_CONDITION),
            }),
            KinematicsSpec::Delta(d) => Linkage::Delta(DeltaDrive {
                arm: DeltaArm {
                    base_radius: d.base_radius,
                    effector_radius: d.effector_radius,
                    upper_arm: d.upper_arm,
                    forearm: d.forearm,
                },
                counts_per_revolution: d.counts_per_revolution,
                gear_ratio: d.gear_ratio,
                motor_reversed: d.motor_reversed,
                calibration_angles: d.calibration_angle_deg.map(f64::to_radians),
                torque_constant: d.torque_constant,
                max_current: d.max_current,
                workspace_origin: Vec3::from(d.workspace_origin),
                max_condition: d.max_condition.unwrap_or(DEFAULT_MAX_CONDITION),
            }),
        }
    }

    /// The largest motor current (A).
    pub fn max_current(&self) -> f64 {
        match self {
            KinematicsSpec::Capstan(c) => c.max_current,
            KinematicsSpec::Delta(d) => d.max_current,
        }
    }

    /// Checks every value against its bound ([`BOUNDS`]), naming the key.
    pub(super) fn validate(&self) -> Result<(), String> {
        let positive = |key: &str, values: &[f64]| {
            let max = bound(key);
            values
                .iter()
                .find(|v| !(v.is_finite() && **v > 0.0 && **v <= max))
                .map_or(Ok(()), |v| {
                    Err(format!(
                        "kinematics.{key}: {v} must be positive and at most {max}"
                    ))
                })
        };
        let finite = |key: &str, values: &[f64]| {
            let max = bound(key);
            values
                .iter()
                .find(|v| !(v.is_finite() && v.abs() <= max))
                .map_or(Ok(()), |v| {
                    Err(format!(
                        "kinematics.{key}: {v} must be finite and within ±{max}"
                    ))
                })
        };
        let condition = match self {
            KinematicsSpec::Capstan(c) => c.max_condition,
            KinematicsSpec::Delta(d) => d.max_condition,
        };
        if let Some(k) = condition {
            if !(MIN_CONDITION..=bound("max_condition")).contains(&k) {
                return Err(format!(
                    "kinematics.max_condition: {k} must lie in [{MIN_CONDITION}, {}]",
                    bound("max_condition")
                ));
            }
        }
        match self {
            KinematicsSpec::Capstan(c) => {
                positive("capstan_diameter", &c.capstan_diameter)?;
                positive("link_length", &c.link_length)?;
                positive("body_diameter", &c.body_diameter)?;
                positive("counts_per_revolution", &c.counts_per_revolution)?;
                positive("torque_constant", &c.torque_constant)?;
                positive("max_current", &[c.max_current])?;
                finite("workspace_origin", &c.workspace_origin)?;
                finite("calibration_counts", &c.calibration_counts)?;
                finite("link_mass", &c.link_mass)?;
                finite("centre_of_mass", &c.centre_of_mass)?;
                finite("gravity", &[c.gravity])?;
                if c.link_mass
                    .iter()
                    .chain(&c.centre_of_mass)
                    .any(|v| *v < 0.0)
                {
                    return Err("kinematics.link_mass, centre_of_mass: must not be negative".into());
                }
            }
            KinematicsSpec::Delta(d) => {
                positive(
                    "base_radius, effector_radius, upper_arm, forearm",
                    &[d.base_radius, d.effector_radius, d.upper_arm, d.forearm],
                )?;
                positive("counts_per_revolution", &d.counts_per_revolution)?;
                positive("gear_ratio", &d.gear_ratio)?;
                positive("torque_constant", &d.torque_constant)?;
                positive("max_current", &[d.max_current])?;
                finite("calibration_angle_deg", &d.calibration_angle_deg)?;
                finite("workspace_origin", &d.workspace_origin)?;
                let linkage = self.linkage();
                if linkage.position(linkage.joint_angles([0.0; 3])).is_none() {
                    return Err(format!(
                        "kinematics.calibration_angle_deg: the forearms cannot close at {:?}°",
                        d.calibration_angle_deg
                    ));
                }
            }
        }
        Ok(())
    }
}
