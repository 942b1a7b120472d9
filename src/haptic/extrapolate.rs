//! Force between model updates (DESIGN §2.5): the haptic thread evaluates the newest
//! [`LocalForceModel`] at its own time and probe position every tick.

use crate::tissue::{ForceStrategy, LocalForceModel};
use crate::{Mat3, Vec3};

/// Longest time `linear-time` extrapolates past t₀ (s); beyond it the force is held, so
/// a late model cannot make the force run away (the watchdog fades it soon after).
pub const MAX_LINEAR_HORIZON: f64 = 0.010;

/// Force (N) on the user's hand at time `t` (s) and probe position `x` (m, scene frame)
/// from the local model `m`, whose stiffness has already been capped to `stiffness`
/// (N/m).
///
/// The contact is unilateral: whatever the strategy, the force never pulls the probe
/// into the surface (its component along the normal is never negative). With
/// `local-stiffness` the contact is lost locally when the linearised force along the
/// normal reaches zero (the probe left the local contact plane) and re-engages when the
/// probe crosses back; a model step that saw no contact engages only if the probe
/// crosses the plane through the reported surface point.
pub fn force_at(
    strategy: ForceStrategy,
    m: &LocalForceModel,
    stiffness: &Mat3,
    t: f64,
    x: Vec3,
) -> Vec3 {
    let f = match (strategy, m.in_contact) {
        (ForceStrategy::Hold, true) => m.f0,
        (ForceStrategy::LinearTime, true) => {
            m.f0 + m.f_dot * (t - m.t0).clamp(0.0, MAX_LINEAR_HORIZON)
        }
        (ForceStrategy::LocalStiffness, true) => m.f0 + stiffness * (x - m.x0),
        (ForceStrategy::LocalStiffness, false) => {
            // Penetration of the plane through the surface point: f = K n (n·(x − p)).
            let s = m.normal.dot(&(x - m.contact_point));
            if s < 0.0 {
                stiffness * m.normal * s
            } else {
                Vec3::zeros()
            }
        }
        (_, false) => Vec3::zeros(),
    };
    if f.dot(&m.normal) > 0.0 {
        f
    } else {
        Vec3::zeros()
    }
}

/// `k` scaled down, if needed, so its Frobenius norm (an upper bound of its spectral
/// norm, i.e. of the stiffness along any direction) is at most `cap` (N/m).
pub fn cap_stiffness(k: &Mat3, cap: f64) -> Mat3 {
    let n = k.norm();
    if n > cap {
        k * (cap / n)
    } else {
        *k
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plane spring z < 0 pushes up with k·(−z).
    fn plane_model(k: f64, z0: f64, t0: f64) -> LocalForceModel {
        let n = Vec3::z();
        let stiffness = -k * n * n.transpose();
        LocalForceModel {
            in_contact: z0 < 0.0,
            t0,
            x0: Vec3::new(0.0, 0.0, z0),
            f0: Vec3::new(0.0, 0.0, (k * -z0).max(0.0)),
            f_dot: Vec3::new(0.0, 0.0, 100.0),
            stiffness,
            contact_point: Vec3::zeros(),
            normal: n,
            entry: None,
        }
    }

    #[test]
    fn local_stiffness_is_exact_for_a_plane_spring_and_never_pulls() {
        let k = 1000.0;
        let m = plane_model(k, -0.002, 0.0);
        let s = m.stiffness;
        let f = |z: f64| {
            force_at(
                ForceStrategy::LocalStiffness,
                &m,
                &s,
                0.0,
                Vec3::new(0.0, 0.0, z),
            )
        };
        assert!((f(-0.003).z - 3.0).abs() < 1e-12);
        assert!((f(-0.0005).z - 0.5).abs() < 1e-12);
        // Leaving the plane: zero, not pulling; crossing back: engaged again.
        assert_eq!(f(0.001), Vec3::zeros());
        assert!((f(-0.001).z - 1.0).abs() < 1e-12);
    }

    #[test]
    fn local_stiffness_engages_on_crossing_when_the_model_saw_no_contact() {
        let m = plane_model(1000.0, 0.001, 0.0);
        let s = m.stiffness;
        assert_eq!(
            force_at(
                ForceStrategy::LocalStiffness,
                &m,
                &s,
                0.0,
                Vec3::new(0.0, 0.0, 0.0005)
            ),
            Vec3::zeros()
        );
        let f = force_at(
            ForceStrategy::LocalStiffness,
            &m,
            &s,
            0.0,
            Vec3::new(0.0, 0.0, -0.001),
        );
        assert!((f.z - 1.0).abs() < 1e-12);
    }

    #[test]
    fn hold_and_linear_time() {
        let m = plane_model(1000.0, -0.002, 1.0);
        let s = m.stiffness;
        let x = Vec3::new(0.0, 0.0, -0.01);
        assert_eq!(force_at(ForceStrategy::Hold, &m, &s, 1.003, x).z, 2.0);
        let f = force_at(ForceStrategy::LinearTime, &m, &s, 1.003, x).z;
        assert!((f - 2.3).abs() < 1e-12);
        // Horizon: at most MAX_LINEAR_HORIZON of extrapolation.
        let f = force_at(ForceStrategy::LinearTime, &m, &s, 2.0, x).z;
        assert!((f - (2.0 + 100.0 * MAX_LINEAR_HORIZON)).abs() < 1e-12);
    }

    #[test]
    fn stiffness_cap_bounds_the_norm() {
        let k = Mat3::from_diagonal(&Vec3::new(-3000.0, -4000.0, 0.0));
        let c = cap_stiffness(&k, 1000.0);
        assert!((c.norm() - 1000.0).abs() < 1e-9);
        assert_eq!(cap_stiffness(&k, 1e6), k);
    }
}
