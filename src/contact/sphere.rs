//! The contact row of a rigid spherical probe tip on the tissue surface: one
//! unilateral row per sphere whose material point is a Hertz pressure profile sampled
//! in the sphere's frame (a mortar row with one smooth multiplier over the contact
//! disc).
//!
//! The sphere is a height field over the plane across the entry normal N
//! ([`super::gap::swept_sphere_gap`]): a point's gap g(x) is how far it lies under the
//! sphere along N, continuous with a finite slope, and the row pushes along −N only
//! (pushed along the sphere's normal, tissue under a sphere narrower than two cells slid
//! aside around it once deeper than its radius). The pressure under the sphere has the
//! Hertz profile p̂(ρ) = √(1 − ρ²/a²) over a disc of radius a = √(R d) (d the sphere's
//! depth under the rest surface), times one unknown: the row's force. Its material
//! point is p̂ sampled at fixed offsets around the sphere's axis (8 equal-area rings, 16
//! points each), each sample projected along N onto the rest surface and carried by its
//! triangle's barycentric weights; the row asks that the p̂-weighted mean of the
//! samples' gaps close: the work-conjugate of that pressure, exact for Hertz on a
//! half-space.
//!
//! Why one row and not a row per node or per sample: node rows on 3.33 mm cells under
//! a 3.2 mm contact made the force vary by 27 % as a sphere slid over the nodes, and a
//! row per sample (more rows than nodes) constrains the faces' chords under the curved
//! sphere, which depends on where the nodes are. The sampled pattern moves with the
//! sphere, so the row's weights change continuously as it slides, no node enters or
//! leaves abruptly, and a held sphere's row depends on the rest shape and the probe
//! only (its step is a Newton step on a fixed problem: a fixed point). At touching the
//! disc shrinks to the pole's material point, whose gap is zero: nothing pushes.
//!
//! A point probe (R = 0) has one row: its tip against the surface point under it.

use crate::fem::Support;
use crate::tissue::PointConstraint;
use crate::Vec3;

use super::bvh::SurfaceBvh;
use super::gap::swept_sphere_gap;

/// Rings of the sampled pressure profile (equal areas of the contact disc).
const RINGS: usize = 8;
/// Samples per ring.
const PER_RING: usize = 16;
/// Largest contact radius, as a fraction of the sphere's radius (a press deeper than
/// 2.25 R keeps this footprint).
const MAX_DISC: f64 = 1.5;

/// Where one probe's rows were put.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SphereRows {
    /// First row (constraint index) of this probe in the step's constraint list.
    pub first: usize,
    /// Number of rows (constraints) this probe added.
    pub count: usize,
}

/// One sample of the pressure profile: its offset on the unit disc (cos, sin times
/// ρ/a) and its share of the profile's integral.
#[derive(Clone, Copy, Debug)]
struct Sample {
    offset: [f64; 2],
    weight: f64,
}

/// Builds the contact row of spheres of one radius over one surface: the sample
/// pattern and scratch, allocated once.
#[derive(Clone, Debug)]
pub struct SphereContact {
    radius: f64,
    /// Mean rest surface edge (m).
    mean_edge: f64,
    samples: Vec<Sample>,
    /// Triangles near the disc, scratch.
    triangles: Vec<u32>,
    /// Those of them facing N, seen along N, scratch.
    faces: Vec<Face>,
    /// The row's (node, weight, weighted height of the sphere over its samples) being
    /// summed, scratch.
    weights: Vec<(usize, f64, f64)>,
    /// Index in `weights` of each mesh node (`u32::MAX`: none), reset after each row:
    /// the row sums 3 weights per sample into its nodes without searching.
    slot: Vec<u32>,
}

/// A rest face facing N seen along N: its nodes, their plane coordinates across N and
/// heights along N, and the determinant of the projected triangle (computed once per
/// row, not once per sample: the per-sample projection was most of a sliding step).
#[derive(Clone, Copy, Debug)]
struct Face {
    nodes: [usize; 3],
    plane: [[f64; 2]; 3],
    height: [f64; 3],
    det: f64,
}

impl Face {
    /// The face `tri` of `rest` seen along the unit `n` with plane axes `e`, if it faces
    /// `n` and is not edge-on.
    fn of(rest: &[Vec3], tri: [usize; 3], n: Vec3, e: (Vec3, Vec3)) -> Option<Self> {
        let [a, b, c] = tri.map(|v| rest[v]);
        if (b - a).cross(&(c - a)).dot(&n) <= 0.0 {
            return None;
        }
        let p = |x: Vec3| [e.0.dot(&x), e.1.dot(&x)];
        let (pa, pb, pc) = (p(a), p(b), p(c));
        let det = (pb[0] - pa[0]) * (pc[1] - pa[1]) - (pc[0] - pa[0]) * (pb[1] - pa[1]);
        if det.abs() <= f64::MIN_POSITIVE {
            return None;
        }
        Some(Self {
            nodes: tri,
            plane: [pa, pb, pc],
            height: [n.dot(&a), n.dot(&b), n.dot(&c)],
            det,
        })
    }

    /// Barycentric weights of the point with plane coordinates `q`, if the face holds
    /// it.
    fn holds(&self, q: [f64; 2]) -> Option<[f64; 3]> {
        let [pa, pb, pc] = self.plane;
        let det = self.det;
        let l1 = ((q[0] - pa[0]) * (pc[1] - pa[1]) - (pc[0] - pa[0]) * (q[1] - pa[1])) / det;
        let l2 = ((pb[0] - pa[0]) * (q[1] - pa[1]) - (q[0] - pa[0]) * (pb[1] - pa[1])) / det;
        let l0 = 1.0 - l1 - l2;
        let eps = -1e-12;
        (l0 >= eps && l1 >= eps && l2 >= eps).then(|| [l0.max(0.0), l1.max(0.0), l2.max(0.0)])
    }

    /// Height along N of the face's point with barycentric weights `b` (m).
    fn height_at(&self, b: [f64; 3]) -> f64 {
        (0..3).map(|k| self.height[k] * b[k]).sum()
    }
}

impl SphereContact {
    /// Rows for spheres of `radius` (m; 0: a point probe) over the surface of `bvh` at
    /// rest positions `rest`.
    pub fn new(radius: f64, bvh: &SurfaceBvh, rest: &[Vec3]) -> Self {
        let radius = if radius.is_finite() {
            radius.max(0.0)
        } else {
            0.0
        };
        let triangles = bvh.triangles();
        let (mut edges, mut edge_sum) = (0usize, 0.0);
        for tri in triangles {
            for k in 0..3 {
                edge_sum += (rest[tri[(k + 1) % 3]] - rest[tri[k]]).norm();
                edges += 1;
            }
        }
        // Equal-area rings (midpoints in u = ρ²/a²), each weighted by p̂ there; every
        // other ring turned by half a step.
        let mut samples = Vec::with_capacity(RINGS * PER_RING);
        let mut total = 0.0;
        for j in 0..RINGS {
            let u = (j as f64 + 0.5) / RINGS as f64;
            let (rho, p) = (u.sqrt(), (1.0 - u).sqrt());
            for i in 0..PER_RING {
                let turn = (i as f64 + 0.5 * (j % 2) as f64) / PER_RING as f64;
                let (s, c) = (std::f64::consts::TAU * turn).sin_cos();
                samples.push(Sample {
                    offset: [rho * c, rho * s],
                    weight: p,
                });
                total += p;
            }
        }
        for s in &mut samples {
            s.weight /= total;
        }
        Self {
            radius,
            mean_edge: if edges > 0 {
                edge_sum / edges as f64
            } else {
                0.0
            },
            samples,
            triangles: Vec::with_capacity(triangles.len()),
            faces: Vec::with_capacity(triangles.len()),
            weights: Vec::with_capacity(rest.len()),
            slot: vec![u32::MAX; rest.len()],
        }
    }

    /// Sphere radius (m); 0 for a point probe.
    pub fn radius(&self) -> f64 {
        self.radius
    }

    /// How far (m) from the sphere's centre the surface it may touch can rest: the
    /// largest contact disc and a mean surface edge.
    pub fn reach(&self) -> f64 {
        if self.radius > 0.0 {
            (MAX_DISC * self.radius).max(self.radius) + self.mean_edge
        } else {
            0.0
        }
    }

    /// Radius (m) of the contact disc of a sphere `depth` (m) under the rest surface:
    /// Hertz's √(R d), at most 1.5 R; 0 above the surface.
    pub fn disc_radius(&self, depth: f64) -> f64 {
        (self.radius * depth.max(0.0))
            .sqrt()
            .min(MAX_DISC * self.radius)
    }

    /// Appends the row of the sphere centred at `centre` (m) pressed in along −`entry`
    /// (unit: the rest-surface god-object's outward normal) whose pole (the rest-surface
    /// point under its lowest point) is the barycentric point `pole` of a surface
    /// triangle of `bvh`, linearised about the current positions `positions` (m; `rest`
    /// the rest shape), if there is room for it under `capacity` rows in all.
    /// Allocation-free.
    #[allow(clippy::too_many_arguments)]
    pub fn push_rows(
        &mut self,
        bvh: &SurfaceBvh,
        rest: &[Vec3],
        positions: &[Vec3],
        pole: ([usize; 3], [f64; 3]),
        centre: Vec3,
        entry: Vec3,
        capacity: usize,
        out: &mut Vec<PointConstraint>,
    ) -> SphereRows {
        let first = out.len();
        if self.radius > 0.0 && first < capacity {
            if let Some(row) = self.row(bvh, rest, positions, pole, centre, entry) {
                out.push(row);
            }
        }
        SphereRows {
            first,
            count: out.len() - first,
        }
    }

    /// The sphere's row ([`Self::push_rows`]); `None` if no sample lands on the surface.
    fn row(
        &mut self,
        bvh: &SurfaceBvh,
        rest: &[Vec3],
        positions: &[Vec3],
        (tri, bary): ([usize; 3], [f64; 3]),
        centre: Vec3,
        entry: Vec3,
    ) -> Option<PointConstraint> {
        let origin: Vec3 = (0..3).map(|k| rest[tri[k]] * bary[k]).sum();
        // The disc lies in the plane across N through the pole, centred on the axis.
        let axis = centre - entry * entry.dot(&(centre - origin));
        let depth = entry.dot(&(origin - centre)) + self.radius;
        let a = self.disc_radius(depth);
        let (e1, e2) = tangents(entry);
        self.weights.clear();
        if a <= 0.0 {
            // Touching or above: the pole's own material point.
            let x: Vec3 = (0..3).map(|k| positions[tri[k]] * bary[k]).sum();
            let top = entry.dot(&x) + swept_sphere_gap(x, centre, self.radius, entry).0;
            for k in 0..3 {
                add_weight(&mut self.weights, &mut self.slot, tri[k], bary[k], top);
            }
        } else {
            self.triangles.clear();
            bvh.triangles_within(&axis, a + self.mean_edge, &mut self.triangles);
            let triangles = bvh.triangles();
            self.faces.clear();
            self.faces.extend(
                self.triangles
                    .iter()
                    .filter_map(|&t| Face::of(rest, triangles[t as usize], entry, (e1, e2))),
            );
            let mut last = None;
            for s in &self.samples {
                let p = axis + (e1 * s.offset[0] + e2 * s.offset[1]) * a;
                let q = [e1.dot(&p), e2.dot(&p)];
                // The highest rest face over the sample facing N; the last sample's
                // face first (neighbouring samples share faces).
                let found = last
                    .and_then(|f: usize| self.faces[f].holds(q).map(|b| (f, b)))
                    .or_else(|| {
                        self.faces
                            .iter()
                            .enumerate()
                            .filter_map(|(f, face)| {
                                let b = face.holds(q)?;
                                Some((f, b, face.height_at(b)))
                            })
                            .max_by(|x, y| x.2.total_cmp(&y.2))
                            .map(|(f, b, _)| (f, b))
                    });
                let Some((f, b)) = found else { continue };
                let nodes = self.faces[f].nodes;
                let x: Vec3 = (0..3).map(|k| positions[nodes[k]] * b[k]).sum();
                let top = entry.dot(&x) + swept_sphere_gap(x, centre, self.radius, entry).0;
                if !top.is_finite() {
                    continue;
                }
                last = Some(f);
                for k in 0..3 {
                    add_weight(
                        &mut self.weights,
                        &mut self.slot,
                        nodes[k],
                        s.weight * b[k],
                        top,
                    );
                }
            }
        }
        // Each node's share of the gap goes with it: a support that keeps only the
        // largest weights (a footprint of more nodes than it holds) drops the rim's
        // nodes and their targets together.
        let support = Support::patch(self.weights.iter().map(|w| (w.0, w.1)), origin);
        let (mut x, mut top, mut total) = (origin, 0.0, 0.0);
        for (v, w) in support.iter().flat_map(Support::iter) {
            x += (positions[v] - rest[v]) * w;
            let held = self.weights[self.slot[v] as usize];
            top += held.2;
            total += held.1;
        }
        for w in &self.weights {
            self.slot[w.0] = u32::MAX;
        }
        let support = support?;
        let now: f64 = support
            .iter()
            .map(|(v, w)| entry.dot(&positions[v]) * w)
            .sum();
        let gap = top / total - now;
        // Along the outward normal: the point may not rise above the sphere.
        Some(PointConstraint::contact_on(
            support,
            entry,
            x + entry * (gap / total),
        ))
    }

    /// Appends the row of a point probe at `tip` (m) pressed into the material point
    /// `support` along the outward normal `normal`.
    pub fn push_point(
        &mut self,
        support: Support,
        normal: Vec3,
        tip: Vec3,
        out: &mut Vec<PointConstraint>,
    ) -> SphereRows {
        let first = out.len();
        out.push(PointConstraint::contact_on(support, normal, tip));
        SphereRows { first, count: 1 }
    }
}

/// Two unit vectors across the unit `n`, fixed by `n` alone (the sample pattern's
/// orientation).
fn tangents(n: Vec3) -> (Vec3, Vec3) {
    let least = if n.x.abs() <= n.y.abs() && n.x.abs() <= n.z.abs() {
        Vec3::x()
    } else if n.y.abs() <= n.z.abs() {
        Vec3::y()
    } else {
        Vec3::z()
    };
    let e1 = n.cross(&least).normalize();
    (e1, n.cross(&e1))
}

/// Adds the weight `w` to node `v` in `weights` (`slot`: each node's index in it), with
/// the sphere's height `top` (m, along N) at the sample it comes from.
fn add_weight(weights: &mut Vec<(usize, f64, f64)>, slot: &mut [u32], v: usize, w: f64, top: f64) {
    if w == 0.0 {
        return;
    }
    match slot[v] {
        u32::MAX => {
            slot[v] = weights.len() as u32;
            weights.push((v, w, w * top));
        }
        i => {
            let x = &mut weights[i as usize];
            x.1 += w;
            x.2 += w * top;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flat square of 2n × 2n cells of `h` (m) in z = 0, split along one diagonal.
    fn flat(h: f64, n: usize) -> (SurfaceBvh, Vec<Vec3>) {
        let side = 2 * n + 1;
        let mut rest = Vec::new();
        for j in 0..side {
            for i in 0..side {
                rest.push(Vec3::new(
                    (i as f64 - n as f64) * h,
                    (j as f64 - n as f64) * h,
                    0.0,
                ));
            }
        }
        let id = |i: usize, j: usize| i + side * j;
        let mut tris = Vec::new();
        for j in 0..side - 1 {
            for i in 0..side - 1 {
                tris.push([id(i, j), id(i + 1, j), id(i + 1, j + 1)]);
                tris.push([id(i, j), id(i + 1, j + 1), id(i, j + 1)]);
            }
        }
        (SurfaceBvh::build(tris, &rest), rest)
    }

    /// Barycentric weights of the point with plane coordinates `q` (along `e`) in the
    /// triangle `tri` of `rest` seen along `n`, if the triangle faces `n` and holds it.
    fn under(
        rest: &[Vec3],
        tri: [usize; 3],
        n: Vec3,
        e: (Vec3, Vec3),
        q: [f64; 2],
    ) -> Option<[f64; 3]> {
        Face::of(rest, tri, n, e)?.holds(q)
    }

    /// The rest-surface pole under (x, y) of the flat grid: its triangle and weights.
    fn pole(bvh: &SurfaceBvh, rest: &[Vec3], x: f64, y: f64) -> ([usize; 3], [f64; 3]) {
        let (e1, e2) = tangents(Vec3::z());
        let p = Vec3::new(x, y, 0.0);
        let q = [e1.dot(&p), e2.dot(&p)];
        bvh.triangles()
            .iter()
            .find_map(|&t| under(rest, t, Vec3::z(), (e1, e2), q).map(|b| (t, b)))
            .unwrap()
    }

    /// The row of the sphere of radius `r` (m) at rest over (x, y), `d` (m) deep.
    fn row_at(
        contact: &mut SphereContact,
        (bvh, rest): (&SurfaceBvh, &[Vec3]),
        (x, y): (f64, f64),
        r: f64,
        d: f64,
    ) -> PointConstraint {
        let mut rows = Vec::new();
        let (centre, p) = (Vec3::new(x, y, r - d), pole(bvh, rest, x, y));
        contact.push_rows(bvh, rest, rest, p, centre, Vec3::z(), 8, &mut rows);
        assert_eq!(rows.len(), 1);
        rows[0]
    }

    #[test]
    fn the_row_is_the_hertz_profile_weighted_gap_and_nothing_at_touching() {
        let h = 1e-3;
        let (bvh, rest) = flat(h, 8);
        let r = 5e-3;
        let mut contact = SphereContact::new(r, &bvh, &rest);
        // Touching: the pole's material point, at zero gap.
        let (x, y) = (0.3e-3, -0.2e-3);
        let row = row_at(&mut contact, (&bvh, &rest), (x, y), r, 0.0);
        assert!(row.support.nodes().len() <= 3);
        assert!(row.target.z.abs() < 1e-15, "{:?}", row.target);
        // 1 mm deep: the profile-weighted mean of d − (R − √(R² − ρ²)) over the disc
        // of radius √(R d), about 0.8 d (2/5 of a²/2R below d).
        let d = 1e-3;
        let row = row_at(&mut contact, (&bvh, &rest), (x, y), r, d);
        let a2 = r * d;
        let want = -(d - 0.4 * a2 / (2.0 * r));
        assert!(
            (row.target.z - want).abs() < 0.02 * d,
            "{} {want}",
            row.target.z
        );
        assert_eq!(row.direction(0), Vec3::z());
        let sum: f64 = row.support.weights().iter().sum();
        assert!((sum - 1.0).abs() < 1e-12);
        // The weights' centroid is the sphere's axis.
        let c: Vec3 = row.support.iter().map(|(v, w)| rest[v] * w).sum();
        assert!(
            (c.xy() - Vec3::new(x, y, 0.0).xy()).norm() < 0.02 * h,
            "{c:?}"
        );
    }

    #[test]
    fn the_row_changes_continuously_as_the_sphere_slides() {
        let h = 1e-3;
        let (bvh, rest) = flat(h, 8);
        let r = 3e-3;
        let mut contact = SphereContact::new(r, &bvh, &rest);
        let weights = |contact: &mut SphereContact, x: f64| {
            let row = row_at(contact, (&bvh, &rest), (x, 0.1e-3), r, 1e-3);
            let mut w = vec![0.0; rest.len()];
            for (v, x) in row.support.iter() {
                w[v] = x;
            }
            (w, row.target.z)
        };
        let step = 1e-6;
        let mut worst = 0.0f64;
        let (mut w0, mut z0) = weights(&mut contact, 0.0);
        for k in 1..=1000 {
            let (w, z) = weights(&mut contact, k as f64 * step);
            let change: f64 = w.iter().zip(&w0).map(|(a, b)| (a - b).abs()).sum();
            worst = worst.max(change);
            assert!((z - z0).abs() < 1e-8, "{z} {z0}");
            (w0, z0) = (w, z);
        }
        // Moving a thousandth of a cell moves at most a few thousandths of the weight.
        assert!(worst < 0.01, "{worst}");
    }
}
