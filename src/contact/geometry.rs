//! Point–triangle geometry the proxy needs: closest point with barycentric
//! coordinates, and the first crossing of a segment through a triangle's front face.

use crate::Vec3;

pub use crate::mesh::surface::closest_on_triangle;

/// Point with barycentric weights `w` on triangle (a, b, c).
pub fn at_barycentric(w: &[f64; 3], a: &Vec3, b: &Vec3, c: &Vec3) -> Vec3 {
    a * w[0] + b * w[1] + c * w[2]
}

/// Unit normal of triangle (a, b, c) (counter-clockwise seen from the side it points
/// to), or `None` for a triangle without area.
pub fn unit_normal(a: &Vec3, b: &Vec3, c: &Vec3) -> Option<Vec3> {
    let n = (b - a).cross(&(c - a));
    let len = n.norm();
    (len > 0.0 && len.is_finite()).then(|| n / len)
}

/// Where segment `from → to` first enters the front half-space boundary of a plane
/// (unit normal `n` through `q`, offset outward by `offset`): the parameter t ∈ [0, 1],
/// or `None` if the segment does not go from the front (within `tol`) to behind the
/// plane by more than `tol`. A start point up to `tol` behind the plane counts as on
/// it, so a proxy resting on the surface cannot tunnel through by round-off.
pub fn plane_entry(
    from: &Vec3,
    to: &Vec3,
    n: &Vec3,
    q: &Vec3,
    offset: f64,
    tol: f64,
) -> Option<f64> {
    let s_from = n.dot(&(from - q)) - offset;
    let s_to = n.dot(&(to - q)) - offset;
    if s_from < -tol || s_to >= -tol {
        return None;
    }
    let t = if s_from <= 0.0 {
        0.0
    } else {
        s_from / (s_from - s_to)
    };
    Some(t.clamp(0.0, 1.0))
}

/// Barycentric weights of `p` projected onto the plane of triangle (a, b, c), not
/// clamped (a weight is negative outside the triangle). `None` for a degenerate
/// triangle.
pub fn plane_barycentric(p: &Vec3, a: &Vec3, b: &Vec3, c: &Vec3) -> Option<[f64; 3]> {
    let v0 = b - a;
    let v1 = c - a;
    let v2 = p - a;
    let d00 = v0.dot(&v0);
    let d01 = v0.dot(&v1);
    let d11 = v1.dot(&v1);
    let d20 = v2.dot(&v0);
    let d21 = v2.dot(&v1);
    let denom = d00 * d11 - d01 * d01;
    if denom <= f64::EPSILON * d00 * d11 {
        return None;
    }
    let v = (d11 * d20 - d01 * d21) / denom;
    let w = (d00 * d21 - d01 * d20) / denom;
    Some([1.0 - v - w, v, w])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plane_entry_only_front_to_back() {
        let n = Vec3::z();
        let q = Vec3::zeros();
        let down = plane_entry(
            &Vec3::new(0.0, 0.0, 1.0),
            &Vec3::new(0.0, 0.0, -1.0),
            &n,
            &q,
            0.0,
            1e-12,
        );
        assert_eq!(down, Some(0.5));
        let up = plane_entry(
            &Vec3::new(0.0, 0.0, -1.0),
            &Vec3::new(0.0, 0.0, 1.0),
            &n,
            &q,
            0.0,
            1e-12,
        );
        assert_eq!(up, None);
        let along = plane_entry(&Vec3::zeros(), &Vec3::x(), &n, &q, 0.0, 1e-12);
        assert_eq!(along, None);
        let offset = plane_entry(
            &Vec3::new(0.0, 0.0, 1.0),
            &Vec3::new(0.0, 0.0, -1.0),
            &n,
            &q,
            0.5,
            1e-12,
        );
        assert_eq!(offset, Some(0.25));
    }
}
