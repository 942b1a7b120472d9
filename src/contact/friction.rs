//! Coulomb stick/slip friction for the probe, as a friction-cone god-object (Harwin &
//! Melder 2004): besides the frictionless proxy, which follows the probe over the
//! surface and carries the normal constraint, the contact keeps a *stick point* on the
//! surface. The tangential force pulls the probe back toward it with the tissue's
//! tangential contact stiffness k_t, f_t = k_t P (a − p) (P the tangent projector, p
//! the contact point). While |f_t| ≤ μ_s f_n the stick point stays (stick); beyond
//! the cone it slides toward the probe until |f_t| = μ_k f_n (slip). The friction
//! element is a spring in series with a Coulomb slider: it gives back at most what its
//! spring stored and dissipates the rest, so it injects no energy, and lift-off
//! (f_n = 0) releases it.
//!
//! The stick point is held in the scene frame where the probe itself touches: the
//! spring stands for the tissue's own tangential elasticity. The simulation applies
//! the reaction −f_t to the tissue as a load on the contact's footprint, so the drawn
//! surface is dragged along with the probe by the compliance of that load.

use crate::{Mat3, Vec3};

/// Coulomb friction coefficients of the probe on the tissue.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Friction {
    /// Static coefficient μ_s: the probe sticks while |f_t| ≤ μ_s f_n.
    pub mu_static: f64,
    /// Kinetic coefficient μ_k ≤ μ_s: while slipping |f_t| = μ_k f_n.
    pub mu_kinetic: f64,
}

impl Friction {
    /// Frictionless contact.
    pub const NONE: Self = Self {
        mu_static: 0.0,
        mu_kinetic: 0.0,
    };

    /// Friction with static `mu_static` and kinetic `mu_kinetic` coefficients; both
    /// finite, ≥ 0, and μ_k ≤ μ_s.
    pub fn new(mu_static: f64, mu_kinetic: f64) -> Result<Self, String> {
        let ok = |m: f64| m.is_finite() && m >= 0.0;
        if !ok(mu_static) || !ok(mu_kinetic) {
            return Err(format!(
                "friction coefficients must be finite and >= 0, got μ_s = {mu_static}, \
                 μ_k = {mu_kinetic}"
            ));
        }
        if mu_kinetic > mu_static {
            return Err(format!(
                "the kinetic coefficient μ_k = {mu_kinetic} exceeds the static μ_s = {mu_static}"
            ));
        }
        Ok(Self {
            mu_static,
            mu_kinetic,
        })
    }

    /// Whether the contact is frictionless (μ_s = 0).
    pub fn is_none(&self) -> bool {
        self.mu_static == 0.0
    }
}

/// Whether the probe stuck or slipped this step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrictionPhase {
    /// Inside the cone: the stick point stayed.
    Stick,
    /// On the cone: the stick point slid toward the probe.
    Slip,
}

/// The tangential force of one step and its local stiffness, for the haptic thread.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrictionForce {
    /// Tangential force on the probe (N).
    pub force: Vec3,
    /// Its derivative with respect to the probe position (N/m): −k_t P while sticking
    /// (a tangential spring); −μ_k t̂ nᵀ / c_n while slipping (the force stays on the
    /// cone, scaling with the normal force, whose stiffness is nᵀ/c_n).
    pub stiffness: Mat3,
    /// Stick or slip.
    pub phase: FrictionPhase,
}

/// Stick/slip state of one probe: the stick point.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StickPoint {
    anchor: Option<Vec3>,
}

impl StickPoint {
    /// The stick point (scene frame, m), while in contact with friction.
    pub fn anchor(&self) -> Option<Vec3> {
        self.anchor
    }

    /// Forgets the stick point (lift-off, lost contact).
    pub fn release(&mut self) {
        self.anchor = None;
    }

    /// Friction of one step with the contact point at `at` (m), outward unit `normal`, normal force `f_n` (N, ≥ 0 pushing the probe out),
    /// tangential contact stiffness `k_t` (N/m) and normal compliance `c_n` (m/N).
    /// `None` (and the stick point released) when there is no friction to apply:
    /// frictionless, no normal force, or no finite positive stiffness.
    pub fn update(
        &mut self,
        friction: &Friction,
        at: &Vec3,
        normal: &Vec3,
        f_n: f64,
        k_t: f64,
        c_n: f64,
    ) -> Option<FrictionForce> {
        let valid = |x: f64| x > 0.0 && x.is_finite();
        let finite = at.iter().chain(normal.iter()).all(|x| x.is_finite());
        if friction.is_none() || !valid(f_n) || !valid(k_t) || !valid(c_n) || !finite {
            self.anchor = None;
            return None;
        }
        let anchor = *self.anchor.get_or_insert(*at);
        let tangent = Mat3::identity() - normal * normal.transpose();
        let delta = tangent * (anchor - at);
        let spring = delta * k_t;
        if spring.norm() <= friction.mu_static * f_n {
            return Some(FrictionForce {
                force: spring,
                stiffness: -tangent * k_t,
                phase: FrictionPhase::Stick,
            });
        }
        // Beyond the cone: slide the stick point toward the probe onto the kinetic
        // cone. |delta| > 0 here, since the spring force exceeds μ_s f_n ≥ 0.
        let dir = delta / delta.norm();
        let f_t = friction.mu_kinetic * f_n;
        self.anchor = Some(at + dir * (f_t / k_t));
        Some(FrictionForce {
            force: dir * f_t,
            stiffness: -(dir * normal.transpose()) * (friction.mu_kinetic / c_n),
            phase: FrictionPhase::Slip,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coefficients_are_checked() {
        assert!(Friction::new(0.5, 0.3).is_ok());
        assert!(Friction::new(0.3, 0.5).is_err());
        assert!(Friction::new(-0.1, 0.0).is_err());
        assert!(Friction::new(f64::NAN, 0.0).is_err());
        assert!(Friction::NONE.is_none());
    }

    #[test]
    fn sticks_inside_the_cone_and_slips_onto_it() {
        let fr = Friction::new(0.5, 0.4).unwrap();
        let mut s = StickPoint::default();
        let n = Vec3::z();
        let (k_t, c_n, f_n) = (100.0, 0.01, 1.0);
        let f0 = s.update(&fr, &Vec3::zeros(), &n, f_n, k_t, c_n).unwrap();
        assert_eq!(f0.force, Vec3::zeros());
        // 3 mm sideways: 0.3 N < 0.5 N, stick, force back toward the anchor.
        let f1 = s
            .update(&fr, &Vec3::new(3e-3, 0.0, 1e-3), &n, f_n, k_t, c_n)
            .unwrap();
        assert_eq!(f1.phase, FrictionPhase::Stick);
        assert!((f1.force - Vec3::new(-0.3, 0.0, 0.0)).norm() < 1e-12);
        assert_eq!(s.anchor(), Some(Vec3::zeros()));
        // 8 mm: 0.8 N > 0.5 N, slip onto μ_k f_n = 0.4 N; anchor 4 mm behind.
        let f2 = s
            .update(&fr, &Vec3::new(8e-3, 0.0, 0.0), &n, f_n, k_t, c_n)
            .unwrap();
        assert_eq!(f2.phase, FrictionPhase::Slip);
        assert!((f2.force - Vec3::new(-0.4, 0.0, 0.0)).norm() < 1e-12);
        assert!((s.anchor().unwrap() - Vec3::new(4e-3, 0.0, 0.0)).norm() < 1e-15);
        // Lift-off releases.
        assert!(s.update(&fr, &Vec3::zeros(), &n, 0.0, k_t, c_n).is_none());
        assert_eq!(s.anchor(), None);
    }

    #[test]
    fn degenerate_input_gives_no_force_and_no_nan() {
        let fr = Friction::new(0.5, 0.5).unwrap();
        let mut s = StickPoint::default();
        let n = Vec3::z();
        for (f_n, k_t, c_n) in [
            (f64::NAN, 1.0, 1.0),
            (1.0, f64::INFINITY, 1.0),
            (1.0, 0.0, 1.0),
            (1.0, 1.0, 0.0),
        ] {
            assert!(s.update(&fr, &Vec3::zeros(), &n, f_n, k_t, c_n).is_none());
        }
        assert!(s
            .update(&fr, &Vec3::new(f64::NAN, 0.0, 0.0), &n, 1.0, 1.0, 1.0)
            .is_none());
        // Probe exactly at the anchor: zero force, stick.
        s.update(&fr, &Vec3::zeros(), &n, 1.0, 1.0, 1.0).unwrap();
        let f = s.update(&fr, &Vec3::zeros(), &n, 1.0, 1.0, 1.0).unwrap();
        assert_eq!((f.force, f.phase), (Vec3::zeros(), FrictionPhase::Stick));
    }
}
