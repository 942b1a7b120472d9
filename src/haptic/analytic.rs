//! An analytic tissue for device bring-up, tests and benchmarks of the haptic runtime:
//! a rigid spherical probe tip indenting an elastic half-space (Hertz contact).
//!
//! The force derives from the Hertz elastic energy U = (8/15)·E*·√R·d^{5/2} (d =
//! indentation depth below the flat top, E* = E/(1 − ν²) for a rigid indenter), so the
//! force field is conservative and its stiffness is the exact (negative) Hessian of U.
//! To exercise rendering across a stiffness change, E* may vary over the surface as
//! E*(x, y) = E*₀ + ΔE*·exp(−r²/(2ρ²)) around a point above a "lump"; that modulus map
//! is a test fixture, not a mechanics result for an embedded inclusion. Contact exists
//! only over the block's top face (|x − cx| ≤ hx, |y − cy| ≤ hy); past its edge the
//! probe has left the tissue.

use crate::tissue::{LocalForceModel, ModelStep, SurfaceEntry};
use crate::{Mat3, Vec3};

/// Hertz indentation of an elastic half-space bounded laterally by a block's top face.
#[derive(Clone, Debug, PartialEq)]
pub struct HertzHalfSpace {
    /// Height of the flat top surface (m).
    pub top_z: f64,
    /// Centre of the top face (x, y) (m).
    pub center: [f64; 2],
    /// Half-extents of the top face (m).
    pub half_extent: [f64; 2],
    /// Probe tip radius R (m).
    pub tip_radius: f64,
    /// Contact modulus E* = E/(1 − ν²) of the tissue (Pa).
    pub modulus: f64,
    /// Extra contact modulus over the lump's centre (Pa); 0 for a uniform tissue.
    pub lump_modulus: f64,
    /// (x, y) of the lump's centre (m).
    pub lump_center: [f64; 2],
    /// Lateral width ρ of the lump's modulus map (m).
    pub lump_width: f64,
    last_force: Option<Vec3>,
}

impl HertzHalfSpace {
    /// The default scene's block (x, y ∈ [−5, 5] cm, top at z = 0) probed with a 5 mm
    /// tip: soft tissue E = 10 kPa, ν = 0.45, and a lump over the inclusion at
    /// (0, 0) ten times stiffer, ρ = 5 mm.
    pub fn default_scene() -> Self {
        let e_star = |e: f64| e / (1.0 - 0.45 * 0.45);
        Self {
            top_z: 0.0,
            center: [0.0, 0.0],
            half_extent: [0.05, 0.05],
            tip_radius: 0.005,
            modulus: e_star(10e3),
            lump_modulus: e_star(90e3),
            lump_center: [0.0, 0.0],
            lump_width: 0.005,
            last_force: None,
        }
    }

    /// Contact modulus at (x, y) and its gradient and Hessian in (x, y).
    fn modulus_at(&self, x: f64, y: f64) -> (f64, [f64; 2], [[f64; 2]; 2]) {
        let dx = x - self.lump_center[0];
        let dy = y - self.lump_center[1];
        let r2 = self.lump_width * self.lump_width;
        let g = (-(dx * dx + dy * dy) / (2.0 * r2)).exp() * self.lump_modulus;
        let grad = [-dx / r2 * g, -dy / r2 * g];
        let hess = [
            [(dx * dx / r2 - 1.0) / r2 * g, dx * dy / (r2 * r2) * g],
            [dx * dy / (r2 * r2) * g, (dy * dy / r2 - 1.0) / r2 * g],
        ];
        (self.modulus + g, grad, hess)
    }

    /// Force on the probe (N) and stiffness ∂f/∂x (N/m) at `p`; zero outside contact.
    pub fn force_and_stiffness(&self, p: Vec3) -> (bool, Vec3, Mat3) {
        let over_face = (p.x - self.center[0]).abs() <= self.half_extent[0]
            && (p.y - self.center[1]).abs() <= self.half_extent[1];
        let d = self.top_z - p.z;
        if !over_face || d <= 0.0 {
            return (false, Vec3::zeros(), Mat3::zeros());
        }
        let (e, ge, he) = self.modulus_at(p.x, p.y);
        let sr = self.tip_radius.sqrt();
        let d32 = d * d.sqrt();
        let d52 = d32 * d;
        // U = c5·E·d^{5/2}; f = −∇U with ∂d/∂z = −1.
        let c5 = 8.0 / 15.0 * sr;
        let f = Vec3::new(
            -c5 * d52 * ge[0],
            -c5 * d52 * ge[1],
            4.0 / 3.0 * sr * e * d32,
        );
        // Hessian of U in (x, y, z).
        let uxz = -(4.0 / 3.0) * sr * d32;
        let h = Mat3::new(
            c5 * d52 * he[0][0],
            c5 * d52 * he[0][1],
            uxz * ge[0],
            c5 * d52 * he[1][0],
            c5 * d52 * he[1][1],
            uxz * ge[1],
            uxz * ge[0],
            uxz * ge[1],
            2.0 * sr * e * d.sqrt(),
        );
        (true, f, -h)
    }
}

impl ModelStep for HertzHalfSpace {
    fn step(&mut self, t: f64, dt: f64, probe: Vec3) -> LocalForceModel {
        let (in_contact, f0, stiffness) = self.force_and_stiffness(probe);
        let f_dot = self.last_force.map_or(Vec3::zeros(), |f| (f0 - f) / dt);
        self.last_force = Some(f0);
        LocalForceModel {
            in_contact,
            t0: t,
            x0: probe,
            f0,
            f_dot,
            stiffness,
            contact_point: Vec3::new(probe.x, probe.y, self.top_z),
            normal: Vec3::z(),
            entry: in_contact.then(|| SurfaceEntry {
                proxy: Vec3::new(probe.x, probe.y, self.top_z),
                normal: Vec3::z(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stiffness_is_the_derivative_of_the_force() {
        let m = HertzHalfSpace::default_scene();
        let p = Vec3::new(0.003, -0.002, -0.004);
        let (_, _, k) = m.force_and_stiffness(p);
        let h = 1e-7;
        for j in 0..3 {
            let mut dp = Vec3::zeros();
            dp[j] = h;
            let fd =
                (m.force_and_stiffness(p + dp).1 - m.force_and_stiffness(p - dp).1) / (2.0 * h);
            for i in 0..3 {
                assert!(
                    (fd[i] - k[(i, j)]).abs() < 1e-5 * k.norm(),
                    "K[{i},{j}] {} vs {}",
                    k[(i, j)],
                    fd[i]
                );
            }
        }
        assert!(
            (k - k.transpose()).norm() < 1e-9 * k.norm(),
            "conservative field: K symmetric"
        );
    }

    #[test]
    fn uniform_tissue_gives_the_hertz_force() {
        let mut m = HertzHalfSpace::default_scene();
        m.lump_modulus = 0.0;
        let d: f64 = 0.004;
        let (c, f, _) = m.force_and_stiffness(Vec3::new(0.01, 0.0, -d));
        assert!(c);
        let hertz = 4.0 / 3.0 * m.modulus * m.tip_radius.sqrt() * d.powf(1.5);
        assert!((f.z - hertz).abs() < 1e-12 * hertz);
        assert_eq!(f.x, 0.0);
        assert!(
            !m.force_and_stiffness(Vec3::new(0.06, 0.0, -d)).0,
            "past the block edge"
        );
    }
}
