//! The gap between a rigid sphere probe and a point of the tissue, and the surface
//! quadrature the sphere's contact rows integrate it with.
//!
//! The probe entered the tissue along −N (N the outward normal where the rest-surface
//! god-object holds it), so the obstacle is the sphere swept back along +N: a ball
//! capped by a half-infinite cylinder of the same radius. Tissue pushed in by the
//! sphere stays below its lower half, whatever the depth: a press deeper than the
//! radius never sees material "above" the centre escape through the top of the ball.
//! The gap is the distance to that obstacle outside it; inside, the penetration along
//! the sphere's normal at the point of the lower cap straight below (along N). Both the
//! gap and its normal are continuous everywhere, so rows built from them change
//! smoothly as the probe and the tissue move.

use crate::Vec3;

/// Gap (m, negative inside) of the point `x` (m) against the sphere of radius `radius`
/// (m) centred at `centre` (m) and swept along the unit `up` (the entry normal), and
/// the unit normal of the obstacle there, pointing from the probe into the tissue.
pub fn swept_sphere_gap(x: Vec3, centre: Vec3, radius: f64, up: Vec3) -> (f64, Vec3) {
    let rel = x - centre;
    let h = up.dot(&rel);
    let lateral = rel - up * h;
    let rho = lateral.norm();
    if rho >= radius && h >= 0.0 {
        // Beside the swept cylinder (rho > 0 here as radius > 0).
        return (rho - radius, lateral / rho);
    }
    let dist = rel.norm();
    if h < 0.0 && dist >= radius {
        // Below the centre and outside the ball.
        return (dist - radius, rel / dist);
    }
    // Inside: the point of the lower cap straight below (or above) x along `up`.
    let s = (radius * radius - rho * rho).max(0.0).sqrt();
    let q = lateral - up * s;
    let n = q / radius;
    (n.dot(&(rel - q)), n)
}

/// Points and weights (summing to 1) of a rule that integrates polynomials of degree 5
/// exactly on each of the four midpoint sub-triangles of a triangle: 28 points, as
/// barycentric coordinates. The gap bends with the sphere (curvature 1/R) over a
/// triangle, so its weighted integral needs more than one low-order rule.
pub fn triangle_rule() -> Vec<([f64; 3], f64)> {
    // Dunavant's 7-point degree-5 rule on the reference triangle.
    let (a1, b1, w1) = (
        0.059_715_871_789_770,
        0.470_142_064_105_115,
        0.132_394_152_788_506,
    );
    let (a2, b2, w2) = (
        0.797_426_985_353_087,
        0.101_286_507_323_456,
        0.125_939_180_544_827,
    );
    let mut base = vec![([1.0 / 3.0; 3], 0.225)];
    for (a, b, w) in [(a1, b1, w1), (a2, b2, w2)] {
        base.push(([a, b, b], w));
        base.push(([b, a, b], w));
        base.push(([b, b, a], w));
    }
    // The four sub-triangles, by their corners in the parent's barycentric coordinates.
    let v = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
    let mid = |i: usize, j: usize| std::array::from_fn::<f64, 3, _>(|k| 0.5 * (v[i][k] + v[j][k]));
    let subs = [
        [v[0], mid(0, 1), mid(0, 2)],
        [mid(0, 1), v[1], mid(1, 2)],
        [mid(0, 2), mid(1, 2), v[2]],
        [mid(1, 2), mid(0, 2), mid(0, 1)],
    ];
    let mut rule = Vec::with_capacity(4 * base.len());
    for sub in &subs {
        for (l, w) in &base {
            let p = std::array::from_fn(|k| (0..3).map(|c| l[c] * sub[c][k]).sum());
            rule.push((p, 0.25 * w));
        }
    }
    rule
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gap_is_the_distance_outside_and_continuous_across_its_branches() {
        let (c, r, up) = (Vec3::new(0.1, -0.2, 0.3), 0.005, Vec3::z());
        // Straight below the centre: the distance to the ball.
        let (g, n) = swept_sphere_gap(c - up * 0.007, c, r, up);
        assert!((g - 0.002).abs() < 1e-15 && (n + up).norm() < 1e-15);
        // Beside the cylinder above the centre: the lateral distance.
        let (g, n) = swept_sphere_gap(c + Vec3::new(0.008, 0.0, 0.02), c, r, up);
        assert!((g - 0.003).abs() < 1e-15 && (n - Vec3::x()).norm() < 1e-15);
        // Above the centre on the axis, inside the sweep: pushed below the sphere.
        let (g, n) = swept_sphere_gap(c + up * 0.002, c, r, up);
        assert!((g + 0.007).abs() < 1e-15 && (n + up).norm() < 1e-15);
        // Continuous where the branches meet below the equator. (On the cylinder's
        // wall, at and above the equator, the gap is continuous but its slope is not:
        // inside it falls as the cap's √(R² − ρ²), a known defect (issue 38 report).)
        for x in [c + Vec3::new(0.6 * r, 0.0, -0.8 * r)] {
            for d in [Vec3::x(), Vec3::y(), Vec3::z(), Vec3::new(0.3, -0.5, 0.8)] {
                let (g0, n0) = swept_sphere_gap(x - d * 1e-9, c, r, up);
                let (g1, n1) = swept_sphere_gap(x + d * 1e-9, c, r, up);
                assert!(
                    (g0 - g1).abs() < 1e-8 && (n0 - n1).norm() < 1e-5,
                    "{x:?} {d:?}"
                );
            }
        }
    }

    #[test]
    fn the_rule_integrates_quintics_on_each_sub_triangle() {
        let rule = triangle_rule();
        assert_eq!(rule.len(), 28);
        let total: f64 = rule.iter().map(|(_, w)| w).sum();
        assert!((total - 1.0).abs() < 1e-14);
        // ∫ λ₀² λ₁ dA / A = 2! 1! 2! / (2 + 1 + 2)! = 4 / 120 on the whole triangle.
        let i: f64 = rule.iter().map(|(l, w)| w * l[0] * l[0] * l[1]).sum();
        assert!((i - 2.0 * 2.0 / 120.0).abs() < 1e-14, "{i}");
        // ∫ λ₀⁵ / A = 2 · 5! / 7! = 2 / 42.
        let i: f64 = rule.iter().map(|(l, w)| w * l[0].powi(5)).sum();
        assert!((i - 2.0 / 42.0).abs() < 1e-14, "{i}");
    }
}
