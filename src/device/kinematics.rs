//! Kinematics of real haptic arms: joint encoders to tip position, tip force to joint
//! torques and motor currents. Pure math, no allocation (it runs in the 1 kHz tick).
//!
//! # Capstan arm ([`CapstanArm`], WoodenHaptics class)
//!
//! Three revolute joints, each driven by a motor through a capstan (cable) reduction
//! `capstan / body` (both diameters, m). Frame: z up, the base joint `a` turns about z.
//!
//! * `θa` — rotation of the whole arm about z; `θa = 0` puts the arm in the x–z plane.
//! * `θb` — angle of link `b` (length `Lb`, from the shoulder at height `La`) from the
//!   upward vertical; positive tilts the link outwards (away from the z axis).
//! * `θc` — angle of link `c` (length `Lc`, from the elbow at the end of `b`) from the
//!   *downward* vertical, measured absolutely (not relative to `b`); positive swings
//!   the tip outwards.
//!
//! With `s = Lb sin θb + Lc sin θc` the tip is
//! `p = (cos θa · s, sin θa · s, La + Lb cos θb − Lc cos θc) − workspace origin`.
//!
//! Encoders count from the calibration pose: a counter reads 0 where the device is
//! held at power-on, and that pose is `calibration_counts` from the zero angle, so
//! `θᵢ = dirᵢ · 2π · (countᵢ + calᵢ) / cprᵢ · capstanᵢ / bodyᵢ` (`dirᵢ = −1` when the
//! motor and body are aligned). This is the public driver's kinematics with its
//! counters preset to the calibration counts at that pose.
//!
//! Gravity compensation is `∂U/∂θ`, `U` the potential energy of the link centres of
//! mass (`b` at `LBcm` from the shoulder, `c` at `LCcm` from the elbow), so that the
//! compensation cancels gravity's joint torque `−∂U/∂θ` at rest:
//! `g · (0, −(mB·LBcm + mC·Lb) sin θb, mC·LCcm sin θc)`.
//! (The public driver's expression differs in joint `b`: opposite sign, and a `θc`
//! term. Both public configurations run with `g = 0`.)
//!
//! # Delta arm ([`DeltaArm`], Falcon / omega class)
//!
//! Three identical arms at `φᵢ = 0°, 120°, 240°` about z; z up, the motor axes lie in
//! the plane z = 0, tangent to the circle of radius `R` (`base_radius`), and the
//! effector hangs below. `uᵢ = (cos φᵢ, sin φᵢ, 0)` is arm `i`'s outward direction.
//!
//! * `θᵢ = 0` — upper arm (length `a`) horizontal, pointing outwards along `uᵢ`;
//!   positive `θᵢ` turns it downwards. Elbow: `(R + a cos θᵢ) uᵢ − a sin θᵢ ẑ`.
//! * The parallelogram forearm (length `b`) joins the elbow to the effector point
//!   `p + r uᵢ` (`r` = `effector_radius`), keeping the effector level; hence
//!   `|p − cᵢ(θᵢ)| = b` with `cᵢ(θ) = (R − r + a cos θ) uᵢ − a sin θ ẑ`.
//! * Forward kinematics intersects the three spheres and takes the solution below the
//!   plane of their centres; inverse kinematics takes the elbow-out solution of each
//!   arm (the elbow on the outer side of the line from the motor axis to the forearm's
//!   far end) and rejects points the forward kinematics would not return.

//!
//! # Force safety at every pose
//!
//! Currents are limited together, never one by one: when one motor would pass
//! `max_current`, every motor's current is scaled by the same factor, so the torques and
//! hence the tip force keep their direction (clamping each motor alone turns the force).
//! Near a singular pose a small torque error makes a large force error and a modest force
//! asks for very large torques, so the force fades with the Jacobian's condition number
//! κ = σ_max/σ_min: full below `max_condition / 2`, zero from `max_condition`, a smooth
//! step between ([`singularity_scale`]).

use crate::{Mat3, Vec3};
use std::f64::consts::{PI, TAU};

/// Default largest Jacobian condition number at which an arm renders any force: a
/// delta arm of Falcon size stays below 3 over its usable workspace and passes 8 only
/// with an upper arm turned 60° or more from its calibration angle.
pub const DEFAULT_MAX_CONDITION: f64 = 25.0;

/// The factor (0 ..= 1) on the force at a pose whose Jacobian has condition number
/// `condition`: 1 up to `max_condition / 2`, 0 from `max_condition` (and for a
/// non-finite condition), a smoothstep between.
pub fn singularity_scale(condition: f64, max_condition: f64) -> f64 {
    let start = max_condition / 2.0;
    if !condition.is_finite() || condition >= max_condition {
        0.0
    } else if condition <= start {
        1.0
    } else {
        let x = (max_condition - condition) / (max_condition - start);
        x * x * (3.0 - 2.0 * x)
    }
}

/// The condition number σ_max/σ_min of `jacobian` (∞ when singular).
pub fn condition_number(jacobian: &Mat3) -> f64 {
    let singular = jacobian.singular_values();
    let (max, min) = (singular.max(), singular.min());
    if min > 0.0 && max.is_finite() {
        max / min
    } else {
        f64::INFINITY
    }
}

/// Currents `wanted` (A) scaled together so that none passes `max` (A): the largest
/// `s ≤ 1` with `|offset + s · wanted| ≤ max` on every motor. `offset` (gravity
/// compensation) is kept as far as it fits on its own and clamped where it does not.
fn limit_together(offset: [f64; 3], wanted: [f64; 3], max: f64) -> [f64; 3] {
    let mut scale = 1.0f64;
    for (g, w) in offset.iter().zip(wanted) {
        let g = g.clamp(-max, max);
        if w > 0.0 {
            scale = scale.min((max - g) / w);
        } else if w < 0.0 {
            scale = scale.min((-max - g) / w);
        }
    }
    let scale = if scale.is_finite() {
        scale.max(0.0)
    } else {
        0.0
    };
    std::array::from_fn(|i| (offset[i].clamp(-max, max) + scale * wanted[i]).clamp(-max, max))
}

/// A 3R capstan-driven arm and its drive train (WoodenHaptics and relatives).
///
/// Index 0, 1, 2 of every array is joint `a`, `b`, `c`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CapstanArm {
    /// Capstan (motor pulley) diameters (m).
    pub capstan_diameter: [f64; 3],
    /// Link lengths `La`, `Lb`, `Lc` (m): shoulder height, upper link, lower link.
    pub link_length: [f64; 3],
    /// Body (driven drum) diameters (m).
    pub body_diameter: [f64; 3],
    /// Tip position at which the reported position is zero (m, base frame).
    pub workspace_origin: Vec3,
    /// Encoder counts per motor revolution (quadrature counts).
    pub counts_per_revolution: [f64; 3],
    /// `true` when the motor turns opposite to its body's angle (the driver's
    /// "motor and body aligned").
    pub motor_aligned: [bool; 3],
    /// Counts from the zero angle to the calibration pose (counts).
    pub calibration_counts: [f64; 3],
    /// Motor torque constants (N·m/A).
    pub torque_constant: [f64; 3],
    /// Largest motor current commanded, either sign (A).
    pub max_current: f64,
    /// Mass of link `b` (kg).
    pub mass_b: f64,
    /// Mass of link `c` (kg).
    pub mass_c: f64,
    /// Distance of link `b`'s centre of mass from the shoulder (m).
    pub centre_of_mass_b: f64,
    /// Distance of link `c`'s centre of mass from the elbow (m).
    pub centre_of_mass_c: f64,
    /// Gravitational acceleration used for compensation (m/s²); 0 turns it off.
    pub gravity: f64,
    /// Jacobian condition number from which no force is rendered; the force fades from
    /// half of it ([`singularity_scale`]).
    pub max_condition: f64,
}

impl CapstanArm {
    /// The public WoodenHaptics v2015 configuration (gravity compensation off).
    ///
    /// Its calibration pose (counts 0) is `θ = (0, 0, π/2)`: link `b` upright, link
    /// `c` horizontal, the tip at (0.025, 0, 0.205) m from the workspace origin.
    pub fn woodenhaptics_2015() -> Self {
        Self {
            capstan_diameter: [0.010; 3],
            link_length: [0.080, 0.205, 0.245],
            body_diameter: [0.160, 0.120, 0.120],
            workspace_origin: Vec3::new(0.220, 0.0, 0.080),
            counts_per_revolution: [2000.0; 3],
            motor_aligned: [false; 3],
            calibration_counts: [0.0, 0.0, 6000.0],
            torque_constant: [0.0259; 3],
            max_current: 3.0,
            mass_b: 0.170,
            mass_c: 0.110,
            centre_of_mass_b: 0.051,
            centre_of_mass_c: 0.091,
            gravity: 0.0,
            max_condition: DEFAULT_MAX_CONDITION,
        }
    }

    /// Body angle per motor angle (capstan / body diameter), signed by direction.
    fn transmission(&self, joint: usize) -> f64 {
        let direction = if self.motor_aligned[joint] { -1.0 } else { 1.0 };
        direction * self.capstan_diameter[joint] / self.body_diameter[joint]
    }

    /// Joint angles `θa, θb, θc` (rad) from encoder counts counted from the
    /// calibration pose.
    pub fn joint_angles(&self, counts: [f64; 3]) -> [f64; 3] {
        std::array::from_fn(|joint| {
            let from_zero = counts[joint] + self.calibration_counts[joint];
            let motor_angle = TAU * from_zero / self.counts_per_revolution[joint];
            motor_angle * self.transmission(joint)
        })
    }

    /// Tip position (m, relative to the workspace origin) at joint angles (rad).
    pub fn position(&self, angles: [f64; 3]) -> Vec3 {
        let [la, lb, lc] = self.link_length;
        let [ta, tb, tc] = angles;
        let reach = lb * tb.sin() + lc * tc.sin();
        Vec3::new(
            ta.cos() * reach,
            ta.sin() * reach,
            la + lb * tb.cos() - lc * tc.cos(),
        ) - self.workspace_origin
    }

    /// `∂p/∂θ` (m/rad): column `i` is the tip velocity per unit rate of joint `i`.
    pub fn jacobian(&self, angles: [f64; 3]) -> Mat3 {
        let [_, lb, lc] = self.link_length;
        let [ta, tb, tc] = angles;
        let (sa, ca) = ta.sin_cos();
        let reach = lb * tb.sin() + lc * tc.sin();
        Mat3::new(
            -sa * reach,
            ca * lb * tb.cos(),
            ca * lc * tc.cos(),
            ca * reach,
            sa * lb * tb.cos(),
            sa * lc * tc.cos(),
            0.0,
            -lb * tb.sin(),
            lc * tc.sin(),
        )
    }

    /// Gravity compensation torques `∂U/∂θ` (N·m) at joint angles (rad).
    fn gravity_torques(&self, angles: [f64; 3]) -> [f64; 3] {
        let [_, lb, _] = self.link_length;
        let [_, tb, tc] = angles;
        let g = self.gravity;
        let compensation_b =
            -g * (self.mass_b * self.centre_of_mass_b + self.mass_c * lb) * tb.sin();
        let compensation_c = g * self.mass_c * self.centre_of_mass_c * tc.sin();
        [0.0, compensation_b, compensation_c]
    }

    /// Joint torques (N·m) that render `force` (N) at the tip, plus gravity
    /// compensation: `τ = Jᵀ f + ∂U/∂θ`.
    pub fn joint_torques(&self, angles: [f64; 3], force: Vec3) -> [f64; 3] {
        let rendered = self.jacobian(angles).tr_mul(&force);
        let g = self.gravity_torques(angles);
        [rendered.x + g[0], rendered.y + g[1], rendered.z + g[2]]
    }

    /// Motor current (A) for a joint torque (N·m).
    fn current(&self, joint: usize, torque: f64) -> f64 {
        torque * self.transmission(joint) / self.torque_constant[joint]
    }

    /// Motor currents (A) for `force` (N) at the tip: the force faded near singular
    /// poses ([`singularity_scale`]) and the currents it asks for limited together to
    /// `±max_current`, so the rendered force keeps the request's direction; gravity
    /// compensation is added first.
    pub fn motor_currents(&self, angles: [f64; 3], force: Vec3) -> [f64; 3] {
        let jacobian = self.jacobian(angles);
        let fade = singularity_scale(condition_number(&jacobian), self.max_condition);
        let rendered = jacobian.tr_mul(&(force * fade));
        let gravity = self.gravity_torques(angles);
        let wanted = std::array::from_fn(|j| self.current(j, rendered[j]));
        let offset = std::array::from_fn(|j| self.current(j, gravity[j]));
        limit_together(offset, wanted, self.max_current)
    }
}

/// A rotary delta (parallel) arm with parallelogram forearms.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeltaArm {
    /// Distance of each motor axis from the centre, `R` (m).
    pub base_radius: f64,
    /// Distance of each forearm's effector joint from the effector centre, `r` (m).
    pub effector_radius: f64,
    /// Upper arm length, motor axis to elbow, `a` (m).
    pub upper_arm: f64,
    /// Parallelogram forearm length, elbow to effector, `b` (m).
    pub forearm: f64,
}

impl DeltaArm {
    /// Outward unit direction `uᵢ` of arm `arm` (0, 1, 2 at 0°, 120°, 240°).
    fn direction(arm: usize) -> Vec3 {
        let (sin, cos) = (TAU / 3.0 * arm as f64).sin_cos();
        Vec3::new(cos, sin, 0.0)
    }

    /// Centre `cᵢ(θ)` (m) of the sphere of radius `b` the effector centre lies on.
    fn sphere_centre(&self, arm: usize, angle: f64) -> Vec3 {
        let (sin, cos) = angle.sin_cos();
        let radial = self.base_radius - self.effector_radius + self.upper_arm * cos;
        Self::direction(arm) * radial - Vec3::z() * (self.upper_arm * sin)
    }

    /// `dcᵢ/dθ` (m/rad).
    fn sphere_centre_rate(&self, arm: usize, angle: f64) -> Vec3 {
        let (sin, cos) = angle.sin_cos();
        -(Self::direction(arm) * (self.upper_arm * sin) + Vec3::z() * (self.upper_arm * cos))
    }

    /// Unit normal of the plane through three sphere centres, pointing up; `None`
    /// when they are (nearly) collinear.
    fn upward_normal(centres: &[Vec3; 3]) -> Option<Vec3> {
        let normal = (centres[1] - centres[0]).cross(&(centres[2] - centres[0]));
        let normal = normal.try_normalize(1e-15)?;
        Some(if normal.z < 0.0 { -normal } else { normal })
    }

    /// Effector centre (m) at motor angles (rad); `None` when the forearms cannot
    /// close (the three spheres do not meet) or the pose is degenerate.
    pub fn forward(&self, angles: [f64; 3]) -> Option<Vec3> {
        let centres: [Vec3; 3] = std::array::from_fn(|arm| self.sphere_centre(arm, angles[arm]));
        let to_second = centres[1] - centres[0];
        let to_third = centres[2] - centres[0];
        let d = to_second.norm();
        if d < 1e-12 {
            return None;
        }
        let ex = to_second / d;
        let i = ex.dot(&to_third);
        let ey = (to_third - ex * i).try_normalize(1e-12)?;
        let j = ey.dot(&to_third);
        let ez = Self::upward_normal(&centres)?;
        // Equal radii: the circle of the first two spheres lies halfway between them.
        let x = d / 2.0;
        let y = (i * i + j * j - 2.0 * i * x) / (2.0 * j);
        let height_squared = self.forearm * self.forearm - x * x - y * y;
        if height_squared < 0.0 {
            return None;
        }
        Some(centres[0] + ex * x + ey * y - ez * height_squared.sqrt())
    }

    /// Motor angles (rad, each in (−π, π]) that put the effector centre at `p` (m);
    /// `None` when an arm cannot reach it or `p` is not below the sphere centres'
    /// plane (where [`forward`](Self::forward) would return the mirror point).
    pub fn inverse(&self, p: Vec3) -> Option<[f64; 3]> {
        let (a, b) = (self.upper_arm, self.forearm);
        let mut angles = [0.0; 3];
        for (arm, angle) in angles.iter_mut().enumerate() {
            let outward = Self::direction(arm);
            let sideways = Vec3::z().cross(&outward);
            // Forearm far end relative to the motor axis, in the arm's vertical plane.
            let radial = p.dot(&outward) + self.effector_radius - self.base_radius;
            let lateral = p.dot(&sideways);
            let forearm_in_plane_squared = b * b - lateral * lateral;
            let distance = radial.hypot(p.z);
            if forearm_in_plane_squared < 0.0 || distance < 1e-12 {
                return None;
            }
            let cos_elbow =
                (a * a + distance * distance - forearm_in_plane_squared) / (2.0 * a * distance);
            if !(-1.0..=1.0).contains(&cos_elbow) {
                return None;
            }
            let towards_far_end = (-p.z).atan2(radial);
            let mut theta = towards_far_end - cos_elbow.acos();
            if theta <= -PI {
                theta += TAU;
            }
            *angle = theta;
        }
        let centres: [Vec3; 3] = std::array::from_fn(|arm| self.sphere_centre(arm, angles[arm]));
        let normal = Self::upward_normal(&centres)?;
        ((p - centres[0]).dot(&normal) <= 0.0).then_some(angles)
    }

    /// `∂p/∂θ` (m/rad) at motor angles (rad), from the constraints
    /// `|p − cᵢ(θᵢ)|² = b²`: `A ṗ = diag(Bᵢ) θ̇` with rows `Aᵢ = (p − cᵢ)ᵀ` and
    /// `Bᵢ = (p − cᵢ) · cᵢ'(θᵢ)`. `None` outside the reachable set or at a singular
    /// pose.
    pub fn jacobian(&self, angles: [f64; 3]) -> Option<Mat3> {
        let p = self.forward(angles)?;
        let mut constraint = Mat3::zeros();
        let mut rate = [0.0; 3];
        for arm in 0..3 {
            let forearm = p - self.sphere_centre(arm, angles[arm]);
            constraint.set_row(arm, &forearm.transpose());
            rate[arm] = forearm.dot(&self.sphere_centre_rate(arm, angles[arm]));
        }
        let mut jacobian = constraint.try_inverse()?;
        for (arm, rate) in rate.iter().enumerate() {
            jacobian.column_mut(arm).scale_mut(*rate);
        }
        Some(jacobian)
    }

    /// Motor torques (N·m) that render `force` (N) at the effector: `τ = Jᵀ f`.
    pub fn joint_torques(&self, angles: [f64; 3], force: Vec3) -> Option<[f64; 3]> {
        let torques = self.jacobian(angles)?.tr_mul(&force);
        Some([torques.x, torques.y, torques.z])
    }
}

/// A delta arm and its drive train: encoder counts to motor angles, forces to motor
/// currents (Falcon / omega class devices driven through capstans or gears).
///
/// Index 0, 1, 2 of every array is arm 0, 1, 2 of [`DeltaArm`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeltaDrive {
    /// The linkage.
    pub arm: DeltaArm,
    /// Encoder counts per motor revolution (quadrature counts).
    pub counts_per_revolution: [f64; 3],
    /// Motor revolutions per upper-arm revolution (the capstan or gear reduction).
    pub gear_ratio: [f64; 3],
    /// `true` when a positive motor count turns the upper arm upwards (negative `θ`).
    pub motor_reversed: [bool; 3],
    /// Upper-arm angles at the calibration pose (rad), where the counts are zero.
    pub calibration_angles: [f64; 3],
    /// Motor torque constants (N·m/A).
    pub torque_constant: [f64; 3],
    /// Largest motor current commanded, either sign (A).
    pub max_current: f64,
    /// Effector position at which the reported position is zero (m, base frame).
    pub workspace_origin: Vec3,
    /// Jacobian condition number from which no force is rendered; the force fades from
    /// half of it ([`singularity_scale`]).
    pub max_condition: f64,
}

impl DeltaDrive {
    /// Upper-arm angle per motor angle, signed by direction.
    fn transmission(&self, arm: usize) -> f64 {
        let direction = if self.motor_reversed[arm] { -1.0 } else { 1.0 };
        direction / self.gear_ratio[arm]
    }

    /// Upper-arm angles (rad) from encoder counts counted from the calibration pose.
    pub fn joint_angles(&self, counts: [f64; 3]) -> [f64; 3] {
        std::array::from_fn(|arm| {
            let motor_angle = TAU * counts[arm] / self.counts_per_revolution[arm];
            self.calibration_angles[arm] + motor_angle * self.transmission(arm)
        })
    }

    /// Effector position (m, relative to the workspace origin); `None` where the
    /// forearms cannot close.
    pub fn position(&self, angles: [f64; 3]) -> Option<Vec3> {
        self.arm.forward(angles).map(|p| p - self.workspace_origin)
    }

    /// Motor currents (A) for `force` (N) at the effector: faded near singular poses
    /// ([`singularity_scale`]), zero at a pose without a Jacobian (unreachable or
    /// singular), and limited together to `±max_current` so the force keeps its
    /// direction.
    pub fn motor_currents(&self, angles: [f64; 3], force: Vec3) -> [f64; 3] {
        let Some(jacobian) = self.arm.jacobian(angles) else {
            return [0.0; 3];
        };
        let fade = singularity_scale(condition_number(&jacobian), self.max_condition);
        let torques = jacobian.tr_mul(&(force * fade));
        let wanted = std::array::from_fn(|arm| {
            torques[arm] * self.transmission(arm) / self.torque_constant[arm]
        });
        limit_together([0.0; 3], wanted, self.max_current)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{Isometry3, Point3, Translation3, UnitQuaternion};

    /// Tip, link `b` centre of mass and link `c` centre of mass (m, base frame) of a
    /// capstan arm, as a product of rigid transforms: turn about z, up to the shoulder,
    /// tilt about the arm's y axis, along link b, then set link c's absolute angle.
    fn capstan_chain(arm: &CapstanArm, [ta, tb, tc]: [f64; 3]) -> [Vec3; 3] {
        let [la, lb, lc] = arm.link_length;
        let about_y = |angle: f64| {
            Isometry3::from_parts(
                Translation3::identity(),
                UnitQuaternion::from_axis_angle(&Vec3::y_axis(), angle),
            )
        };
        let along_z = |length: f64| Isometry3::translation(0.0, 0.0, length);
        let shoulder = Isometry3::rotation(Vec3::z() * ta) * along_z(la) * about_y(tb);
        let elbow = shoulder * along_z(lb) * about_y(-tb - tc);
        let at = |frame: Isometry3<f64>| (frame * Point3::origin()).coords;
        [
            at(elbow * along_z(-lc)),
            at(shoulder * along_z(arm.centre_of_mass_b)),
            at(elbow * along_z(-arm.centre_of_mass_c)),
        ]
    }

    fn capstan_poses() -> impl Iterator<Item = [f64; 3]> {
        let a = [-0.6, -0.1, 0.4, 0.9];
        let b = [-0.3, 0.1, 0.5, 0.9];
        let c = [0.3, 0.8, 1.3, 1.8, 2.3];
        a.into_iter()
            .flat_map(move |ta| b.into_iter().map(move |tb| (ta, tb)))
            .flat_map(move |(ta, tb)| c.into_iter().map(move |tc| [ta, tb, tc]))
    }

    fn delta() -> DeltaArm {
        DeltaArm {
            base_radius: 0.10,
            effector_radius: 0.03,
            upper_arm: 0.10,
            forearm: 0.22,
        }
    }

    fn delta_angles() -> impl Iterator<Item = [f64; 3]> {
        let steps = [-0.2, 0.2, 0.6, 1.0];
        steps.into_iter().flat_map(move |t0| {
            steps
                .into_iter()
                .flat_map(move |t1| steps.into_iter().map(move |t2| [t0, t1, t2]))
        })
    }

    fn delta_workspace() -> impl Iterator<Item = Vec3> {
        let across = [-0.05, -0.025, 0.0, 0.025, 0.05];
        let down = [-0.25, -0.21, -0.17, -0.13];
        across.into_iter().flat_map(move |x| {
            across
                .into_iter()
                .flat_map(move |y| down.into_iter().map(move |z| Vec3::new(x, y, z)))
        })
    }

    /// Central-difference `∂p/∂θ` of `position`.
    fn numeric_jacobian(position: impl Fn([f64; 3]) -> Vec3, angles: [f64; 3]) -> Mat3 {
        let h = 1e-6;
        let mut jacobian = Mat3::zeros();
        for joint in 0..3 {
            let (mut plus, mut minus) = (angles, angles);
            plus[joint] += h;
            minus[joint] -= h;
            jacobian.set_column(joint, &((position(plus) - position(minus)) / (2.0 * h)));
        }
        jacobian
    }

    fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
        a.iter().zip(b).map(|(a, b)| a * b).sum()
    }

    const SMALL_STEP: [f64; 3] = [0.3e-5, -0.7e-5, 0.5e-5];
    const FORCE: Vec3 = Vec3::new(1.5, -2.0, 0.7);

    fn step(angles: [f64; 3]) -> [f64; 3] {
        std::array::from_fn(|joint| angles[joint] + SMALL_STEP[joint])
    }

    #[test]
    fn capstan_position_matches_transform_chain_at_80_poses() {
        let arm = CapstanArm::woodenhaptics_2015();
        for angles in capstan_poses() {
            let [tip, _, _] = capstan_chain(&arm, angles);
            let error = (arm.position(angles) - (tip - arm.workspace_origin)).norm();
            assert!(error < 1e-12, "{angles:?}: {error:e} m");
        }
    }

    #[test]
    fn capstan_jacobian_matches_finite_differences() {
        let arm = CapstanArm::woodenhaptics_2015();
        for angles in capstan_poses() {
            let analytic = arm.jacobian(angles);
            let numeric = numeric_jacobian(|q| arm.position(q), angles);
            let error = (analytic - numeric).norm() / analytic.norm();
            assert!(error < 1e-6, "{angles:?}: relative {error:e}");
        }
    }

    #[test]
    fn capstan_torques_do_the_virtual_work_of_the_force() {
        let arm = CapstanArm::woodenhaptics_2015();
        for angles in capstan_poses() {
            let tip_work = FORCE.dot(&(arm.position(step(angles)) - arm.position(angles)));
            let joint_work = dot(arm.joint_torques(angles, FORCE), SMALL_STEP);
            let error = (tip_work - joint_work).abs() / joint_work.abs();
            assert!(error < 1e-3, "{angles:?}: relative {error:e}");
        }
    }

    #[test]
    fn capstan_gravity_compensation_holds_the_arm_at_rest() {
        let arm = CapstanArm {
            gravity: 9.81,
            ..CapstanArm::woodenhaptics_2015()
        };
        let potential_energy = |angles: [f64; 3]| {
            let [_, centre_b, centre_c] = capstan_chain(&arm, angles);
            arm.gravity * (arm.mass_b * centre_b.z + arm.mass_c * centre_c.z)
        };
        let h = 1e-6;
        let poses = [
            [0.0, 0.0, PI / 2.0],
            [0.3, 0.4, 0.9],
            [-0.5, -0.2, 1.4],
            [1.0, 0.8, 0.3],
            [0.2, 0.35, 2.1],
        ];
        for angles in poses {
            let compensation = arm.joint_torques(angles, Vec3::zeros());
            for joint in 0..3 {
                let (mut plus, mut minus) = (angles, angles);
                plus[joint] += h;
                minus[joint] -= h;
                let gravity_torque =
                    -(potential_energy(plus) - potential_energy(minus)) / (2.0 * h);
                let net = compensation[joint] + gravity_torque;
                assert!(
                    net.abs() < 1e-8,
                    "{angles:?} joint {joint}: net {net:e} N·m"
                );
            }
        }
    }

    #[test]
    fn woodenhaptics_2015_calibration_pose() {
        let arm = CapstanArm::woodenhaptics_2015();
        let angles = arm.joint_angles([0.0; 3]);
        let expected = [0.0, 0.0, PI / 2.0];
        for (angle, expected) in angles.iter().zip(expected) {
            assert!((angle - expected).abs() < 1e-15, "{angles:?}");
        }
        let error = (arm.position(angles) - Vec3::new(0.025, 0.0, 0.205)).norm();
        assert!(error < 1e-12, "{:?}", arm.position(angles));
    }

    #[test]
    fn joint_angles_follow_counts_transmission_and_direction() {
        let arm = CapstanArm {
            motor_aligned: [false, true, false],
            ..CapstanArm::woodenhaptics_2015()
        };
        // One body revolution of `a` (2000 counts × 160/10), a quarter of `b` and `c`.
        let angles = arm.joint_angles([32_000.0, 6000.0, -6000.0]);
        let expected = [TAU, -PI / 2.0, 0.0];
        for (angle, expected) in angles.iter().zip(expected) {
            assert!((angle - expected).abs() < 1e-12, "{angles:?}");
        }
    }

    #[test]
    fn woodenhaptics_2015_currents_and_their_clamp() {
        let arm = CapstanArm::woodenhaptics_2015();
        let angles = arm.joint_angles([0.0; 3]);
        // Link b upright, link c horizontal: 1 N along x loads joint b over Lb,
        // 1 N down loads joint c over Lc; capstan 10 mm on a 120 mm drum, 25.9 mN·m/A.
        let currents = arm.motor_currents(angles, Vec3::new(1.0, 0.0, -1.0));
        let expected = [0.0, 0.205 / 12.0 / 0.0259, -0.245 / 12.0 / 0.0259];
        for (current, expected) in currents.iter().zip(expected) {
            assert!((current - expected).abs() < 1e-12, "{currents:?} A");
        }
        // 10 N asks for 6.6 A and −7.9 A: both scaled by 3/7.9, so the force keeps
        // its direction.
        let clamped = arm.motor_currents(angles, Vec3::new(10.0, 0.0, -10.0));
        let scale = 3.0 / (0.245 / 12.0 / 0.0259 * 10.0);
        let expected = [0.0, 0.205 / 12.0 / 0.0259 * 10.0 * scale, -3.0];
        for (current, expected) in clamped.iter().zip(expected) {
            assert!((current - expected).abs() < 1e-12, "{clamped:?} A");
        }
    }

    #[test]
    fn delta_forward_inverts_inverse_over_the_workspace() {
        let arm = delta();
        for p in delta_workspace() {
            let angles = arm.inverse(p).unwrap_or_else(|| panic!("{p} unreachable"));
            let back = arm.forward(angles).expect("forward of an inverse");
            assert!((back - p).norm() < 1e-9, "{p} -> {angles:?} -> {back}");
        }
    }

    #[test]
    fn delta_inverse_inverts_forward_over_angles() {
        let arm = delta();
        for angles in delta_angles() {
            let p = arm.forward(angles).unwrap_or_else(|| panic!("{angles:?}"));
            let back = arm.inverse(p).unwrap_or_else(|| panic!("{p} unreachable"));
            for (angle, back) in angles.iter().zip(back) {
                assert!((angle - back).abs() < 1e-9, "{angles:?} -> {p} -> {back:?}");
            }
        }
    }

    #[test]
    fn delta_rejects_unreachable_points_and_poses() {
        let arm = delta();
        for p in [
            Vec3::new(0.0, 0.0, -1.0),
            Vec3::new(0.5, 0.0, -0.1),
            Vec3::new(0.0, 0.0, 0.15),
        ] {
            assert_eq!(arm.inverse(p), None, "{p}");
        }
        let short = DeltaArm {
            forearm: 0.12,
            ..delta()
        };
        assert!(short.forward([PI / 2.0; 3]).is_some());
        assert_eq!(short.forward([0.0; 3]), None);
        assert_eq!(short.jacobian([0.0; 3]), None);
        assert_eq!(short.joint_torques([0.0; 3], FORCE), None);
    }

    #[test]
    fn delta_jacobian_matches_finite_differences() {
        let arm = delta();
        for angles in delta_angles() {
            let analytic = arm.jacobian(angles).expect("reachable");
            let numeric = numeric_jacobian(|q| arm.forward(q).expect("reachable"), angles);
            let error = (analytic - numeric).norm() / analytic.norm();
            assert!(error < 1e-6, "{angles:?}: relative {error:e}");
        }
    }

    #[test]
    fn delta_torques_do_the_virtual_work_of_the_force() {
        let arm = delta();
        for angles in delta_angles() {
            let moved = arm.forward(step(angles)).expect("reachable");
            let tip_work = FORCE.dot(&(moved - arm.forward(angles).expect("reachable")));
            let joint_work = dot(
                arm.joint_torques(angles, FORCE).expect("reachable"),
                SMALL_STEP,
            );
            let error = (tip_work - joint_work).abs() / joint_work.abs();
            assert!(error < 1e-3, "{angles:?}: relative {error:e}");
        }
    }
}
