//! The contact rows of a rigid spherical probe tip on the tissue surface: one
//! unilateral row per surface node near the sphere.
//!
//! The sphere is a height field over the plane across the entry normal N
//! ([`super::gap::swept_sphere_gap`]): a node's gap g(x_a) is how far it lies under the
//! sphere along N, a continuous function of where it is with a finite slope, and its
//! row pushes it along −N only, linearised about the current positions:
//! Nᵀ(x_a − x_a,now) ≤ g(x_a,now). The rows' directions are all N, so the contact never
//! pushes the tissue sideways (pushed along the sphere's normal, the tissue under a
//! sphere narrower than two cells slid aside around it once it was deeper than its
//! radius, and the force fell), and the force grows with depth. The faces between
//! contacting nodes sag into the sphere by up to their chord sag (ℓ²/8R for an edge ℓ):
//! the corners of the face under the sphere's lowest point (the god-object's rest point,
//! fixed for a held probe) are lowered as far as that point needs, so a sphere between
//! the nodes of a coarse mesh still presses them. (Integrating the
//! gap over the faces with dual-mortar weights, the earlier rows, made nodes next to a
//! strongly curved gap overshoot: their weights are negative away from the node.)
//!
//! Which nodes are candidates depends only on the rest shape and the probe (a node
//! whose rest position lies within its longest edge plus a margin of the sphere's
//! height field), and rows that pushed at the last step stay candidates; so for a probe
//! that does not move every step solves the same problem linearised about the last
//! step's answer (a Newton step for the static backends), and the contact converges
//! to a fixed point instead of re-choosing its rows from the surface the last step left
//! (which made a held sphere cycle with a 100 Hz square wave).
//!
//! A point probe (R = 0) has one row: its tip against the surface point under it.

use crate::fem::Support;
use crate::tissue::PointConstraint;
use crate::Vec3;

use super::bvh::SurfaceBvh;
use super::gap::swept_sphere_gap;

/// A node is a candidate while its rest position is within its longest edge plus this
/// fraction of the radius of the swept sphere: room for the surface to bulge toward it.
const MARGIN: f64 = 0.1;

/// Where one probe's rows were put.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SphereRows {
    /// First row (constraint index) of this probe in the step's constraint list.
    pub first: usize,
    /// Number of rows (constraints) this probe added.
    pub count: usize,
}

/// The nodes whose rows pushed at a probe's last step: they stay candidates at the
/// next step whatever the rest shape says.
#[derive(Clone, Debug, Default)]
pub struct HeldRows {
    nodes: Vec<usize>,
}

impl HeldRows {
    /// Forgets the held rows (lift-off).
    pub fn clear(&mut self) {
        self.nodes.clear();
    }

    /// Holds the row of surface node `node`.
    pub fn push(&mut self, node: usize) {
        self.nodes.push(node);
    }
}

/// No node: a point probe's row.
const POINT_ROW: usize = usize::MAX;

/// Builds the contact rows of spheres of one radius over one surface: the rest
/// normals and edge lengths, computed once.
#[derive(Clone, Debug)]
pub struct SphereContact {
    radius: f64,
    /// Distance (m) beyond a node's longest edge within which it is a candidate.
    margin: f64,
    /// Unit rest vertex normals (area weighted), zero off the surface.
    normals: Vec<Vec3>,
    /// Longest rest edge (m) at each surface node.
    longest_edge: Vec<f64>,
    /// Mean rest surface edge (m).
    mean_edge: f64,
    /// Node of each row of the step, by constraint index ([`POINT_ROW`] for a point).
    origins: Vec<usize>,
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
        let n = rest.len();
        let triangles = bvh.triangles();
        let mut normals = vec![Vec3::zeros(); n];
        let mut longest_edge = vec![0.0f64; n];
        let (mut edges, mut edge_sum) = (0usize, 0.0);
        for tri in triangles {
            let [a, b, c] = tri.map(|v| rest[v]);
            let area_normal = (b - a).cross(&(c - a));
            for (k, &v) in tri.iter().enumerate() {
                normals[v] += area_normal;
                let e = (rest[tri[(k + 1) % 3]] - rest[v]).norm();
                edge_sum += e;
                edges += 1;
                longest_edge[v] = longest_edge[v].max(e);
                let w = tri[(k + 1) % 3];
                longest_edge[w] = longest_edge[w].max(e);
            }
        }
        for nv in &mut normals {
            let len = nv.norm();
            *nv = if len > 0.0 { *nv / len } else { Vec3::zeros() };
        }
        Self {
            radius,
            margin: MARGIN * radius,
            normals,
            longest_edge,
            mean_edge: if edges > 0 {
                edge_sum / edges as f64
            } else {
                0.0
            },
            origins: Vec::new(),
        }
    }

    /// Sphere radius (m); 0 for a point probe.
    pub fn radius(&self) -> f64 {
        self.radius
    }

    /// How far (m) from the sphere's centre its candidate nodes may rest: the radius,
    /// the margin and a mean surface edge (a node's triangles reach one edge further).
    pub fn reach(&self) -> f64 {
        if self.radius > 0.0 {
            self.radius + self.margin + self.mean_edge
        } else {
            0.0
        }
    }

    /// Room for the held rows of one probe.
    pub fn held_rows(&self, capacity: usize) -> HeldRows {
        HeldRows {
            nodes: Vec::with_capacity(capacity),
        }
    }

    /// Starts a step's rows: forgets the last step's row origins (room for `capacity`
    /// rows, allocated once).
    pub fn begin_step(&mut self, capacity: usize) {
        self.origins.clear();
        self.origins.reserve(capacity);
    }

    /// Remembers in `held` which of `rows` pushed (`forces` by constraint index).
    pub fn remember(&self, rows: SphereRows, forces: &[Vec3], held: &mut HeldRows) {
        held.clear();
        let range = rows.first..rows.first + rows.count;
        for (k, f) in forces[range.clone()].iter().enumerate() {
            match self.origins.get(range.start + k) {
                Some(&v) if *f != Vec3::zeros() && v != POINT_ROW => held.nodes.push(v),
                _ => {}
            }
        }
    }

    /// Unit rest normal of surface node `v` (area weighted over its triangles).
    pub fn node_normal(&self, v: usize) -> Vec3 {
        self.normals[v]
    }

    /// Appends to `out` the nodes of `near_nodes` that get a row for a sphere centred at
    /// `centre` (m) pressed in along −`entry` (the rest-surface god-object's outward
    /// normal): those facing it whose rest position (`rest`, m) lies within their
    /// longest edge plus the margin of the swept sphere, and the nodes of `held`. They
    /// depend on the rest shape and the probe only. Allocation-free when `out` has room.
    pub fn candidates(
        &self,
        rest: &[Vec3],
        near_nodes: &[usize],
        centre: Vec3,
        entry: Vec3,
        held: &HeldRows,
        out: &mut Vec<usize>,
    ) {
        if self.radius <= 0.0 {
            return;
        }
        for &v in near_nodes {
            if self.normals[v].dot(&entry) <= 0.0 {
                continue;
            }
            let (gap, _) = swept_sphere_gap(rest[v], centre, self.radius, entry);
            if gap < self.longest_edge[v] + self.margin || held.nodes.contains(&v) {
                out.push(v);
            }
        }
    }

    /// Appends the rows of `candidates` ([`Self::candidates`]) for the sphere centred at
    /// `centre` (m) pressed in along −`entry`, linearised about the current positions
    /// `positions` (m), at most `capacity` rows in all; `pole` (a surface triangle's
    /// nodes and barycentric weights) is the rest-surface point under the centre, which
    /// the rows of its corners keep under the sphere too. Allocation-free when `out`
    /// has room.
    #[allow(clippy::too_many_arguments)]
    pub fn push_rows(
        &mut self,
        positions: &[Vec3],
        candidates: &[usize],
        pole: Option<([usize; 3], [f64; 3])>,
        centre: Vec3,
        entry: Vec3,
        capacity: usize,
        out: &mut Vec<PointConstraint>,
    ) -> SphereRows {
        let first = out.len();
        self.origins.resize(first, POINT_ROW);
        // How far along −N each corner of the pole's triangle must go beyond its own
        // limit so that the pole is under the sphere with the corners at their limits:
        // δ w_k / Σ w², the least such lowering, which fades with a corner's weight.
        let mut lower = [(usize::MAX, 0.0); 3];
        if let Some((tri, w)) = pole {
            let limit = |x: Vec3| entry.dot(&x) + swept_sphere_gap(x, centre, self.radius, entry).0;
            let x: Vec3 = (0..3).map(|k| positions[tri[k]] * w[k]).sum();
            let delta = (0..3).map(|k| w[k] * limit(positions[tri[k]])).sum::<f64>() - limit(x);
            let norm = w.iter().map(|w| w * w).sum::<f64>();
            if delta > 0.0 && norm > 0.0 {
                lower = std::array::from_fn(|k| (tri[k], delta * w[k] / norm));
            }
        }
        for &a in candidates {
            if out.len() >= capacity {
                break;
            }
            // The node's own gap: its row pushes it along −N until it is under the
            // sphere (and under the pole's limit, for the pole's corners).
            let x = positions[a];
            let (gap, n) = swept_sphere_gap(x, centre, self.radius, entry);
            let gap = gap - lower.iter().filter(|l| l.0 == a).map(|l| l.1).sum::<f64>();
            if !gap.is_finite() {
                continue;
            }
            self.origins.push(a);
            out.push(PointConstraint::contact_on(
                Support::node(a),
                -n,
                x - n * gap,
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
        self.origins.resize(first, POINT_ROW);
        self.origins.push(POINT_ROW);
        out.push(PointConstraint::contact_on(support, normal, tip));
        SphereRows { first, count: 1 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flat square of 2 × 2 cells of `h` (m) in z = 0, split along one diagonal.
    fn flat(h: f64) -> (SurfaceBvh, Vec<Vec3>) {
        let mut rest = Vec::new();
        for j in 0..3 {
            for i in 0..3 {
                rest.push(Vec3::new((i as f64 - 1.0) * h, (j as f64 - 1.0) * h, 0.0));
            }
        }
        let id = |i: usize, j: usize| i + 3 * j;
        let mut tris = Vec::new();
        for j in 0..2 {
            for i in 0..2 {
                tris.push([id(i, j), id(i + 1, j), id(i + 1, j + 1)]);
                tris.push([id(i, j), id(i + 1, j + 1), id(i, j + 1)]);
            }
        }
        (SurfaceBvh::build(tris, &rest), rest)
    }

    #[test]
    fn a_flat_plate_pressed_by_a_plane_gets_the_exact_gap_at_every_node() {
        // A sphere much larger than the plate is a plane over it: the gap is linear and
        // the weighted gap is exact at every node, along the normal.
        let h = 1e-3;
        let (bvh, rest) = flat(h);
        let radius = 1e3;
        let mut contact = SphereContact::new(radius, &bvh, &rest);
        let centre = Vec3::new(0.0, 0.0, radius - 2e-4);
        let mut nodes = Vec::new();
        let all: Vec<usize> = (0..rest.len()).collect();
        contact.candidates(
            &rest,
            &all,
            centre,
            Vec3::z(),
            &HeldRows::default(),
            &mut nodes,
        );
        assert_eq!(nodes.len(), 9);
        let mut rows = Vec::new();
        contact.push_rows(&rest, &nodes, None, centre, Vec3::z(), 64, &mut rows);
        for (row, &v) in rows.iter().zip(&nodes) {
            let d = row.direction(0);
            // The node must end at most 0.2 mm lower, less the sphere's sag there.
            let sag = radius - (radius * radius - rest[v].xy().norm_squared()).sqrt();
            let want = -2e-4 + sag;
            // The sphere's own normal tilts by |x| / R ≤ 1.4e-6 over the plate.
            assert!((d - Vec3::z()).norm() < 1e-5, "{d:?}");
            assert!(
                (row.target.z - want).abs() < 1e-9,
                "{} {want}",
                row.target.z
            );
        }
    }
}
