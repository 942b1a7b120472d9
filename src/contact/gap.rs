//! The gap between a rigid sphere probe and a point of the tissue.
//!
//! The probe entered the tissue along −N (N the outward normal where the rest-surface
//! god-object holds it), and the sphere is seen as a height field over the plane
//! across N: its lower surface h_s(ρ) = −√(R² − ρ²) at a distance ρ from its axis
//! (heights along N from the centre), continued beyond ρ₀ = 0.95 R by its tangent cone
//! (slope 3.0) instead of its vertical wall. The gap of a material point is how far it
//! lies below that surface, along N, and the contact pushes along −N only. So:
//! * the gap is continuous with a finite slope everywhere (the sphere's own gap falls as
//!   √(R² − ρ²) at its wall: faces crossing the wall of a press deeper than R got a gap
//!   of millimetres there);
//! * the contact cannot push the tissue sideways: pushed along the sphere's normal, the
//!   tissue under a 3 mm sphere on 3.33 mm cells slid aside around it as it went deeper
//!   than its radius (the tissue's asymmetric rows leaned one way, the tissue moved,
//!   leaned them further), until the sphere lost its grip and the force fell to zero at
//!   4 mm; a held probe's force is along N, and what leans is friction's;
//! * tissue pushed in stays under the sphere, whatever the depth.
//!
//! The cone is wider than the sphere near its equator, so a press deeper than about
//! 0.7 R pushes a little more tissue than the sphere would.

use crate::Vec3;

/// Fraction of the radius from which the sphere's lower surface is continued by its
/// tangent cone.
const CONE_FROM: f64 = 0.95;

/// Gap (m, negative inside) of the point `x` (m) under the sphere of radius `radius`
/// (m) centred at `centre` (m) and entered along −`up` (unit, the entry normal): how
/// far below the sphere's lower surface (its cone beyond 0.95 R) `x` lies along `up`;
/// and the direction the contact pushes the tissue, −`up`.
pub fn swept_sphere_gap(x: Vec3, centre: Vec3, radius: f64, up: Vec3) -> (f64, Vec3) {
    let rel = x - centre;
    let h = up.dot(&rel);
    let rho = (rel - up * h).norm();
    let rho0 = CONE_FROM * radius;
    let surface = if rho <= rho0 {
        -(radius * radius - rho * rho).max(0.0).sqrt()
    } else {
        let h0 = (radius * radius - rho0 * rho0).sqrt();
        -h0 + (rho - rho0) * rho0 / h0
    };
    (surface - h, -up)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gap_is_the_height_under_the_sphere_continuous_with_a_finite_slope() {
        let (c, r, up) = (Vec3::new(0.1, -0.2, 0.3), 0.005, Vec3::z());
        // Straight below the centre: the distance to the ball, pushed along −up.
        let (g, n) = swept_sphere_gap(c - up * 0.007, c, r, up);
        assert!((g - 0.002).abs() < 1e-15 && (n + up).norm() < 1e-15);
        // Under the sphere off its axis: the height under its surface there.
        let (g, _) = swept_sphere_gap(c + Vec3::new(0.003, 0.0, -0.0045), c, r, up);
        assert!((g - 0.0005).abs() < 1e-15, "{g}");
        // Above the centre on the axis, inside: pushed down under the sphere.
        let (g, n) = swept_sphere_gap(c + up * 0.002, c, r, up);
        assert!((g + 0.007).abs() < 1e-15 && (n + up).norm() < 1e-15);
        // Beyond 0.95 R the tangent cone: at R, 0.05 R·(0.95/√(1 − 0.95²)) above the
        // sphere's height at 0.95 R.
        let h0 = r * (1.0f64 - 0.95 * 0.95).sqrt();
        let (g, _) = swept_sphere_gap(c + Vec3::new(0.0, r, -h0), c, r, up);
        assert!((g - 0.05 * r * 0.95 * r / h0).abs() < 1e-15, "{g}");
        // Continuous with a finite slope everywhere, the cone's joint and the wall
        // included (at most the cone's 3.04 across up, 1 along it).
        let points = [
            c + Vec3::new(0.6 * r, 0.0, -0.8 * r),
            c + Vec3::new(0.95 * r, 0.0, -0.3 * r),
            c + Vec3::new(r, 0.0, 0.0),
            c + Vec3::new(0.0, 0.999 * r, 0.3 * r),
            c + Vec3::new(0.3 * r, -0.2 * r, -0.4 * r),
        ];
        for x in points {
            for d in [Vec3::x(), Vec3::y(), Vec3::z(), Vec3::new(0.3, -0.5, 0.8)] {
                let d = d.normalize();
                let (g0, _) = swept_sphere_gap(x - d * 1e-9, c, r, up);
                let (g1, _) = swept_sphere_gap(x + d * 1e-9, c, r, up);
                assert!((g0 - g1).abs() <= 2e-9 * 3.2, "{x:?} {d:?}: {g0} {g1}");
            }
        }
    }
}
