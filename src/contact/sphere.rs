//! The contact rows of a rigid spherical probe tip on the tissue surface.
//!
//! A sphere of radius R centred at c must not overlap the (piecewise linear) deformed
//! surface. Two families of unilateral rows express that, both necessary conditions of
//! the exact non-overlap, so together they never conflict:
//!
//! * **node rows**: every surface node closer to c than R (plus a small margin, so the
//!   contact set grows continuously) must end outside the sphere: along the sphere's
//!   normal at the node, d = (c − p)/|c − p|, its position must not pass the sphere
//!   surface c − R d. On a mesh finer than the contact radius these carry the load, and
//!   the contact set grows node by node from zero force: F ∝ d^1.5 (Hertz).
//! * **sample rows**: a fixed set of points on the sphere (latitude rings, about R/3
//!   apart, mirror symmetric about the coordinate planes) must end outside the tissue:
//!   each sample behind the current surface, or less than the margin in front of it,
//!   holds the surface point closest to it (a barycentric point of one triangle)
//!   behind the sample along the entry normal (the surface normal where the probe
//!   entered: one direction for all samples, so the rows of one flat triangle agree). On a mesh coarser than the contact
//!   radius the sphere would otherwise slip between nodes.
//!
//! Candidates within the margin outside keep a surface the last step left conforming
//! to the sphere held; the backend's complementarity solve decides which rows push.
//! A point probe (R = 0) has one row: its tip against the surface point under it.
//! Which side of the surface the probe is on comes from the rest-surface god-object
//! ([`super::Proxy`]): its contact normal N keeps rows to the surface the probe entered
//! through (a probe pressed deep never catches the far side of the body).

use crate::fem::Support;
use crate::tissue::PointConstraint;
use crate::Vec3;

use super::bvh::SurfaceBvh;
use super::geometry::at_barycentric;

/// Latitude rings of sample points on the sphere: about 0.31 R apart.
const RINGS: usize = 10;

/// Where one probe's rows were put and how deep its sphere sits.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SphereRows {
    /// First row (constraint index) of this probe in the step's constraint list.
    pub first: usize,
    /// Number of rows (constraints) this probe added.
    pub count: usize,
}

/// The rows that pushed at a probe's last step: they stay candidates at the next step
/// whatever the surface positions say (a surface the tissue model reports only
/// approximately, e.g. while a node's K⁻¹ columns are completed, must not drop a held
/// contact for a step).
#[derive(Clone, Debug, Default)]
pub struct HeldRows {
    nodes: Vec<usize>,
    samples: Vec<bool>,
}

impl HeldRows {
    /// Forgets the held rows (lift-off).
    pub fn clear(&mut self) {
        self.nodes.clear();
        self.samples.fill(false);
    }
}

/// Where a row came from.
#[derive(Clone, Copy, Debug, PartialEq)]
enum RowOrigin {
    Node(usize),
    Sample(usize),
    Point,
}

/// Builds the contact rows of spheres of one radius over one surface: the rest vertex
/// normals and the sample directions, computed once.
#[derive(Clone, Debug)]
pub struct SphereContact {
    radius: f64,
    /// Distance (m) outside the sphere within which a node is a candidate row.
    margin: f64,
    /// Unit rest vertex normals (area weighted), zero off the surface.
    normals: Vec<Vec3>,
    /// Unit directions of the sample points (empty for a point probe).
    samples: Vec<Vec3>,
    /// Step stamp per node with a node row, to skip samples that land on one.
    node_row: Vec<u64>,
    stamp: u64,
    /// Origin of each row of the step, by constraint index.
    origins: Vec<RowOrigin>,
    /// Per surface triangle: the step stamp and constraint index of its sample row.
    triangle_row: Vec<(u64, usize)>,
    /// Penetration of each sample row's sample along its direction (m), by constraint
    /// index.
    sample_depth: Vec<f64>,
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
        let samples = if radius > 0.0 {
            ring_samples(RINGS)
        } else {
            Vec::new()
        };
        Self {
            radius,
            margin: 0.05 * radius,
            normals,
            samples,
            node_row: vec![0; rest.len()],
            stamp: 0,
            origins: Vec::new(),
            triangle_row: vec![(0, 0); bvh.triangles().len()],
            sample_depth: Vec::new(),
        }
    }

    /// Sphere radius (m); 0 for a point probe.
    pub fn radius(&self) -> f64 {
        self.radius
    }

    /// How far (m) beyond the sphere surface rows are looked for: the reach of the
    /// candidate search around the centre is radius + margin.
    pub fn reach(&self) -> f64 {
        self.radius + self.margin
    }

    /// Room for the held rows of one probe.
    pub fn held_rows(&self, capacity: usize) -> HeldRows {
        HeldRows {
            nodes: Vec::with_capacity(capacity),
            samples: vec![false; self.samples.len()],
        }
    }

    /// Starts a step's rows: forgets the last step's row origins (room for
    /// `capacity` rows, allocated once).
    pub fn begin_step(&mut self, capacity: usize) {
        self.origins.clear();
        self.origins.reserve(capacity);
        if self.sample_depth.len() < capacity {
            self.sample_depth.resize(capacity, 0.0);
        }
    }

    /// Remembers in `held` which of `rows` pushed (`forces` by constraint index).
    pub fn remember(&self, rows: SphereRows, forces: &[Vec3], held: &mut HeldRows) {
        held.clear();
        let range = rows.first..rows.first + rows.count;
        for (k, f) in forces[range.clone()].iter().enumerate() {
            if *f == Vec3::zeros() {
                continue;
            }
            match self.origins.get(range.start + k) {
                Some(RowOrigin::Node(v)) => held.nodes.push(*v),
                Some(RowOrigin::Sample(i)) => held.samples[*i] = true,
                _ => {}
            }
        }
    }

    /// Unit rest normal of surface node `v` (area weighted over its triangles).
    pub fn node_normal(&self, v: usize) -> Vec3 {
        self.normals[v]
    }

    /// Appends to `out` the rows of a sphere centred at `centre` (m) pressing the
    /// surface from the side of the outward normal `entry` (the rest-surface proxy's
    /// contact normal; `None`: the probe is not pressed into the rest surface, and any
    /// surface facing the sphere counts). `positions` holds current positions of at
    /// least `near_nodes` (the nodes of `near_triangles`, which must cover the sphere
    /// grown by [`Self::reach`]). Allocation-free when `out` has room.
    #[allow(clippy::too_many_arguments)]
    pub fn push_rows(
        &mut self,
        bvh: &SurfaceBvh,
        positions: &[Vec3],
        near_nodes: &[usize],
        centre: Vec3,
        entry: Option<Vec3>,
        held: &HeldRows,
        capacity: usize,
        out: &mut Vec<PointConstraint>,
    ) -> SphereRows {
        let first = out.len();
        self.origins.resize(first, RowOrigin::Point);
        self.stamp += 1;
        let r = self.radius;
        let faces = |n: &Vec3| entry.is_none_or(|e| e.dot(n) > 0.0);
        for &v in near_nodes {
            if out.len() >= capacity {
                break;
            }
            let to_centre = centre - positions[v];
            let dist = to_centre.norm();
            if !(dist > 0.0 && (dist < r + self.margin || held.nodes.contains(&v))) {
                continue;
            }
            let d = to_centre / dist;
            let n = self.normals[v];
            if n.dot(&d) <= 0.0 || !faces(&n) {
                continue;
            }
            self.node_row[v] = self.stamp;
            self.origins.push(RowOrigin::Node(v));
            out.push(PointConstraint::contact_on(
                Support::node(v),
                d,
                centre - d * r,
            ));
        }
        let reach = 2.0 * r + self.margin;
        for i in 0..self.samples.len() {
            if out.len() >= capacity {
                break;
            }
            let u = self.samples[i];
            // Only the cap that presses: within 60° of the entry direction.
            if entry.is_some_and(|e| u.dot(&e) >= -0.5) {
                continue;
            }
            let s = centre + u * r;
            let Some(near) = bvh.closest_point(&s, reach, positions) else {
                continue;
            };
            let n = bvh.shaded_normal(near.triangle, &near.bary, positions);
            // Samples on the surface or just outside it stay candidates: the surface
            // a step leaves conforming to the sphere must still be held next step.
            let outside = n.dot(&(s - near.point)) >= self.margin && !held.samples[i];
            if outside || n.dot(&u) >= 0.0 || !faces(&n) {
                continue;
            }
            let tri = bvh.triangles()[near.triangle];
            // A sample closest to a node that has a node row adds nothing to it.
            if let Some(k) = near.bary.iter().position(|&w| w > 1.0 - 1e-9) {
                if self.node_row[tri[k]] == self.stamp {
                    continue;
                }
            }
            // One row per triangle, the deepest sample's (along the row direction):
            // a flat triangle clears the sphere where it is deepest, and more rows on
            // its three nodes would be dependent.
            let dir = entry.unwrap_or(n);
            let depth = dir.dot(&(near.point - s));
            let t = near.triangle;
            if self.triangle_row[t].0 == self.stamp {
                let k = self.triangle_row[t].1;
                if depth > self.sample_depth[k] {
                    self.sample_depth[k] = depth;
                    self.origins[k] = RowOrigin::Sample(i);
                    out[k] = PointConstraint::contact_on(Support::triangle(tri, near.bary), dir, s);
                }
                continue;
            }
            self.triangle_row[t] = (self.stamp, out.len());
            if self.sample_depth.len() <= out.len() {
                self.sample_depth.resize(out.len() + 1, 0.0);
            }
            self.sample_depth[out.len()] = depth;
            self.origins.push(RowOrigin::Sample(i));
            // Along the entry normal: the rows of neighbouring flat triangles constrain
            // one direction instead of tilted linearisations pulling against each other.
            out.push(PointConstraint::contact_on(
                Support::triangle(tri, near.bary),
                dir,
                s,
            ));
        }
        SphereRows {
            first,
            count: out.len() - first,
        }
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
        self.origins.resize(first, RowOrigin::Point);
        self.origins.push(RowOrigin::Point);
        out.push(PointConstraint::contact_on(support, normal, tip));
        SphereRows { first, count: 1 }
    }
}

/// The barycentric point on triangle `t` of `bvh` at `positions` (m).
pub fn triangle_point(bvh: &SurfaceBvh, positions: &[Vec3], t: usize, bary: &[f64; 3]) -> Vec3 {
    let [a, b, c] = bvh.vertices(t, positions);
    at_barycentric(bary, &a, &b, &c)
}

/// Unit vectors on `rings` latitude rings spaced π/`rings` apart, each ring with a
/// multiple of four points about as far apart as the rings, starting on the x axis: an
/// even spread that is mirror symmetric about the three coordinate planes, so a
/// straight press over a symmetric mesh gives a symmetric contact.
fn ring_samples(rings: usize) -> Vec<Vec3> {
    let spacing = std::f64::consts::PI / rings as f64;
    let mut out = Vec::new();
    for j in 0..rings {
        let theta = (j as f64 + 0.5) * spacing;
        let quarter = ((std::f64::consts::FRAC_PI_2 * theta.sin()) / spacing)
            .round()
            .max(1.0) as usize;
        let m = 4 * quarter;
        for k in 0..m {
            let phi = 2.0 * std::f64::consts::PI * k as f64 / m as f64;
            out.push(Vec3::new(
                theta.sin() * phi.cos(),
                theta.sin() * phi.sin(),
                theta.cos(),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_samples_are_unit_even_and_mirror_symmetric() {
        let s = ring_samples(RINGS);
        assert!(s.iter().all(|u| (u.norm() - 1.0).abs() < 1e-12));
        let mean: Vec3 = s.iter().sum::<Vec3>() / s.len() as f64;
        assert!(mean.norm() < 1e-12, "{mean:?}");
        for mirror in [Vec3::new(-1.0, 1.0, 1.0), Vec3::new(1.0, -1.0, 1.0)] {
            for u in &s {
                let m = u.component_mul(&mirror);
                assert!(s.iter().any(|v| (v - m).norm() < 1e-12), "{u:?}");
            }
        }
        // Largest nearest-neighbour angle: no hole wider than 0.4 rad.
        let worst = s
            .iter()
            .map(|a| {
                s.iter()
                    .filter(|b| *b != a)
                    .map(|b| a.dot(b).clamp(-1.0, 1.0).acos())
                    .fold(f64::INFINITY, f64::min)
            })
            .fold(0.0, f64::max);
        assert!(worst < 0.4, "{worst}");
    }
}
