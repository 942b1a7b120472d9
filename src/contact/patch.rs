//! The contact patch: a probe tip's footprint spread over the surface nodes around the
//! contact point.
//!
//! Linear FEM under a point load is mesh dependent: the compliance at a node is larger
//! than at a triangle's centre, so a probe sliding at constant depth over a barycentric
//! point constraint feels every cell (a ±30 % ripple with cusps at the edges on a 5 mm
//! block). A real tip has a footprint. The patch gives every surface node v within the
//! radius r of the contact point p (rest shape) the weight
//!
//! w_v ∝ (1 − (|x_v − p| / r)²)² · max(0, n_v · n),
//!
//! normalised to sum 1: a smooth (C¹) kernel, so the weights, the compliance wᵀ C w and
//! the force are continuous with continuous slope as p slides; the facing factor
//! (rest vertex normal n_v against the contact normal n) keeps a thin feature's far
//! side out and fades nodes in continuously around a convex edge. The same weights
//! measure the patch displacement and carry the force ([`Support`]), so the constraint
//! stays symmetric in both backends.

use crate::fem::Support;
use crate::Vec3;

use super::bvh::SurfaceBvh;
use super::geometry::at_barycentric;

/// Most nodes a point probe's contact patch keeps (its largest weights): the footprint
/// a patch radius gives stays put as the mesh is refined only while it fits.
pub const MAX_PATCH_NODES: usize = 48;

/// Builds contact patches of one radius over one surface (rest shape).
#[derive(Clone, Debug)]
pub struct ContactPatch {
    radius: f64,
    /// Unit rest vertex normals (area weighted), zero off the surface.
    normals: Vec<Vec3>,
    near: Vec<u32>,
    /// Query stamp per node, to visit each node once.
    stamp: Vec<u64>,
    queries: u64,
    pairs: Vec<(usize, f64)>,
}

impl ContactPatch {
    /// Patches of `radius` (m; 0 or non-finite: the barycentric point of the touched
    /// triangle, no patch) over the surface of `bvh` at rest positions `rest`.
    pub fn new(radius: f64, bvh: &SurfaceBvh, rest: &[Vec3]) -> Self {
        let mut normals = vec![Vec3::zeros(); rest.len()];
        for tri in bvh.triangles() {
            let [a, b, c] = tri.map(|v| rest[v]);
            let area_normal = (b - a).cross(&(c - a));
            for &v in tri {
                normals[v] += area_normal;
            }
        }
        for n in &mut normals {
            let len = n.norm();
            *n = if len > 0.0 { *n / len } else { Vec3::zeros() };
        }
        let n_tri = bvh.triangles().len();
        Self {
            radius: if radius.is_finite() {
                radius.max(0.0)
            } else {
                0.0
            },
            normals,
            near: Vec::with_capacity(n_tri.min(1024)),
            stamp: vec![0; rest.len()],
            queries: 0,
            pairs: Vec::with_capacity(4 * crate::fem::MAX_SUPPORT_NODES),
        }
    }

    /// Patch radius (m); 0 means the barycentric point.
    pub fn radius(&self) -> f64 {
        self.radius
    }

    /// The support of a contact at the material point `bary` of surface triangle
    /// `triangle` (index into `bvh`'s list) with contact normal `normal` (unit): the
    /// patch, or the barycentric point when the radius is 0 or no node lies within it.
    pub fn support(
        &mut self,
        bvh: &SurfaceBvh,
        rest: &[Vec3],
        triangle: usize,
        bary: &[f64; 3],
        normal: &Vec3,
    ) -> Support {
        let tri = bvh.triangles()[triangle];
        let point = Support::triangle(tri, *bary);
        if self.radius == 0.0 {
            return point;
        }
        let [a, b, c] = tri.map(|v| rest[v]);
        let p = at_barycentric(bary, &a, &b, &c);
        self.near.clear();
        bvh.triangles_near(&p, self.radius, &mut self.near);
        self.queries += 1;
        self.pairs.clear();
        let r2 = self.radius * self.radius;
        for &t in &self.near {
            for v in bvh.triangles()[t as usize] {
                if self.stamp[v] == self.queries {
                    continue;
                }
                self.stamp[v] = self.queries;
                let s2 = (rest[v] - p).norm_squared() / r2;
                let facing = self.normals[v].dot(normal);
                if s2 < 1.0 && facing > 0.0 {
                    let k = 1.0 - s2;
                    self.pairs.push((v, k * k * facing));
                }
            }
        }
        Support::patch_of_at_most(MAX_PATCH_NODES, self.pairs.iter().copied(), p).unwrap_or(point)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flat square grid of `n` × `n` cells of size `h` in the plane z = 0, two
    /// triangles a cell, normals +z.
    fn grid(n: usize, h: f64) -> (SurfaceBvh, Vec<Vec3>) {
        let mut pos = Vec::new();
        for j in 0..=n {
            for i in 0..=n {
                pos.push(Vec3::new(i as f64 * h, j as f64 * h, 0.0));
            }
        }
        let id = |i: usize, j: usize| j * (n + 1) + i;
        let mut tris = Vec::new();
        for j in 0..n {
            for i in 0..n {
                tris.push([id(i, j), id(i + 1, j), id(i + 1, j + 1)]);
                tris.push([id(i, j), id(i + 1, j + 1), id(i, j + 1)]);
            }
        }
        (SurfaceBvh::build(tris, &pos), pos)
    }

    fn locate(bvh: &SurfaceBvh, pos: &[Vec3], p: Vec3) -> (usize, [f64; 3]) {
        let c = bvh.closest_point(&p, 1e-6, pos).unwrap();
        (c.triangle, c.bary)
    }

    #[test]
    fn radius_zero_is_the_barycentric_point() {
        let (bvh, pos) = grid(4, 1.0);
        let mut patch = ContactPatch::new(0.0, &bvh, &pos);
        let (t, w) = locate(&bvh, &pos, Vec3::new(1.3, 2.2, 0.0));
        let s = patch.support(&bvh, &pos, t, &w, &Vec3::z());
        assert_eq!(s, Support::triangle(bvh.triangles()[t], w));
    }

    #[test]
    fn weights_are_normalised_centred_and_continuous() {
        let (bvh, pos) = grid(8, 1.0);
        let mut patch = ContactPatch::new(2.0, &bvh, &pos);
        let mut prev: Option<Vec<f64>> = None;
        // Slide along x across vertices, edges and faces; compare the full weight
        // field (per node) between neighbouring positions.
        for i in 0..=400 {
            let p = Vec3::new(2.0 + i as f64 * 0.01, 3.37, 0.0);
            let (t, w) = locate(&bvh, &pos, p);
            let s = patch.support(&bvh, &pos, t, &w, &Vec3::z());
            let total: f64 = s.weights().iter().sum();
            assert!((total - 1.0).abs() < 1e-14);
            // The weighted centre of the nodes is the contact point on a regular grid
            // only approximately; it must stay within a fraction of the cell.
            let centre: Vec3 = s.iter().map(|(v, w)| pos[v] * w).sum();
            assert!((centre - p).norm() < 0.2, "centre {centre:?} for {p:?}");
            assert!((s.rest_point(&pos) - p).norm() < 1e-14);
            let mut field = vec![0.0; pos.len()];
            for (v, w) in s.iter() {
                field[v] = w;
            }
            if let Some(prev) = &prev {
                let change = field
                    .iter()
                    .zip(prev)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0, f64::max);
                assert!(change < 0.02, "weights jump by {change} at {p:?}");
            }
            prev = Some(field);
        }
    }

    #[test]
    fn nodes_facing_away_get_no_weight() {
        let (bvh, pos) = grid(4, 1.0);
        let mut patch = ContactPatch::new(1.5, &bvh, &pos);
        let (t, w) = locate(&bvh, &pos, Vec3::new(2.0, 2.0, 0.0));
        // A contact normal pointing away from every vertex normal: no patch node, so
        // the barycentric point.
        let s = patch.support(&bvh, &pos, t, &w, &-Vec3::z());
        assert_eq!(s, Support::triangle(bvh.triangles()[t], w));
    }
}
