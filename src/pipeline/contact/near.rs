//! Which nodes a step reads: the positions of the nodes within reach of the probes
//! brought up to date, the others put back at
//! rest, and the nodes just beyond announced to the model.

use super::ContactPipeline;
use crate::tissue::TissueModel;
use crate::Vec3;

/// Candidate near radii per point: 0 and `reach` · √2ⁱ for i < 8.
const RADII: usize = 9;

/// The surface as the near radius of several probes reads it: each surface node's
/// rest position, the longest edge of the triangles at it, and a bound on its
/// displacement and its neighbours' ([`TissueModel::displacement_bounds`]). One
/// bound over all the nodes beyond a distance would hold the nodes under another
/// probe pressing deep far away, and widen every probe's near set to that distance.
pub(super) struct SurfaceBounds {
    /// Surface mesh nodes.
    nodes: Vec<usize>,
    /// Their rest positions (m).
    rest: Vec<Vec3>,
    /// The longest edge of the surface triangles at each (m).
    edge: Vec<f64>,
    /// Surface triangles by index into `nodes`.
    triangles: Vec<[u32; 3]>,
    /// The model's bound on each node's displacement (m).
    own: Vec<f64>,
    /// The largest `own` over the triangles at each node (m).
    ring: Vec<f64>,
}

impl SurfaceBounds {
    /// The surface of `triangles` (mesh nodes) at rest positions `rest` (m).
    pub(super) fn new(triangles: &[[usize; 3]], rest: &[Vec3]) -> Self {
        let mut index = vec![u32::MAX; rest.len()];
        let mut nodes = Vec::new();
        let triangles: Vec<[u32; 3]> = triangles
            .iter()
            .map(|t| {
                t.map(|v| {
                    if index[v] == u32::MAX {
                        index[v] = nodes.len() as u32;
                        nodes.push(v);
                    }
                    index[v]
                })
            })
            .collect();
        let rest: Vec<Vec3> = nodes.iter().map(|&v| rest[v]).collect();
        let mut edge = vec![0.0f64; nodes.len()];
        for t in &triangles {
            let [a, b, c] = t.map(|i| rest[i as usize]);
            let longest = (a - b).norm().max((b - c).norm()).max((c - a).norm());
            for &i in t {
                edge[i as usize] = edge[i as usize].max(longest);
            }
        }
        let n = nodes.len();
        Self {
            nodes,
            rest,
            edge,
            triangles,
            own: vec![0.0; n],
            ring: vec![0.0; n],
        }
    }

    /// Takes this step's per-node displacement bounds from `model`; `false` if it has
    /// none.
    fn bound(&mut self, model: &mut impl TissueModel) -> bool {
        if !model.displacement_bounds(&self.nodes, &mut self.own) {
            return false;
        }
        self.ring.fill(0.0);
        for t in &self.triangles {
            let most = t.iter().map(|&i| self.own[i as usize]).fold(0.0, f64::max);
            for &i in t {
                let r = &mut self.ring[i as usize];
                *r = r.max(most);
            }
        }
        true
    }

    /// The rest-shape radius (m) around `point` such that every surface triangle
    /// whose current shape may come within `reach` (m) of it meets the ball of that
    /// radius at rest. Such a triangle T rests within `reach` + U_T of `point` (U_T:
    /// the largest bound of its nodes), so each of its nodes v within `reach` +
    /// L_v + U'_v (L_v, U'_v: the longest edge and largest bound of the triangles at
    /// v). So the radius max(D, `reach` + the largest U'_v of those nodes resting
    /// beyond D) holds it, for any D; the least over D from 0 to 11 reaches. The
    /// bounds are padded by a billionth of `reach` against rounding.
    fn near_radius(&self, point: &Vec3, reach: f64) -> f64 {
        let radius = |i: usize| match i {
            0 => 0.0,
            i => reach * f64::powi(2.0, i as i32 - 1).sqrt(),
        };
        let squared: [f64; RADII] = std::array::from_fn(|i| radius(i) * radius(i));
        let reach = reach * (1.0 + 1e-9);
        // largest[i]: the largest U' of the nodes that may matter resting beyond
        // radius(i) but not beyond radius(i + 1).
        let mut largest = [0.0f64; RADII];
        for ((x, &edge), &ring) in self.rest.iter().zip(&self.edge).zip(&self.ring) {
            let s2 = (x - point).norm_squared();
            let within = reach + edge + ring;
            if s2 <= within * within {
                let beyond = squared.partition_point(|&d2| d2 < s2);
                if beyond > 0 {
                    largest[beyond - 1] = largest[beyond - 1].max(ring);
                }
            }
        }
        for i in (0..RADII - 1).rev() {
            largest[i] = largest[i].max(largest[i + 1]);
        }
        (0..RADII)
            .map(|i| radius(i).max(reach + largest[i]))
            .fold(f64::INFINITY, f64::min)
    }
}

impl<M: TissueModel> ContactPipeline<M> {
    /// Brings the positions of the nodes within two reaches of the probes' spheres (the
    /// surface their rows may sample) up to date, puts the nodes that left that reach
    /// back at rest, and inflates the rest-shape boxes by the model's displacement
    /// bound.
    pub(super) fn refresh_near(&mut self, probes: &[Vec3]) {
        let bound = self.model.displacement_bound();
        self.bvh.set_inflation(bound);
        self.steps += 1;
        self.near_triangles.clear();
        let reach =
            (2.0 * self.sphere.reach()).max(self.patch.radius()) + 2.0 * self.proxy_margin();
        let per_node = self.probes.len() > 1 && self.surface.bound(&mut self.model);
        for (state, _) in self.probes.iter().zip(probes) {
            let points = [state.centre, state.entry.map(|c| c.point)];
            for point in points.iter().flatten() {
                let radius = if per_node {
                    self.surface.near_radius(point, reach)
                } else {
                    self.near_radius(point, reach)
                };
                self.bvh
                    .triangles_within(point, radius, &mut self.near_triangles);
            }
        }
        self.near_nodes.clear();
        for &t in &self.near_triangles {
            for v in self.bvh.triangles()[t as usize] {
                if self.stamp[v] != self.steps {
                    self.stamp[v] = self.steps;
                    self.near_nodes.push(v);
                }
            }
        }
        let rest = self.model.rest_positions();
        for &v in &self.was_near {
            if self.stamp[v] != self.steps {
                self.positions[v] = rest[v];
            }
        }
        self.was_near.clear();
        self.was_near.extend_from_slice(&self.near_nodes);
        if self.model.anticipates() {
            self.anticipate(reach);
        }
        let m = self.near_nodes.len();
        self.model
            .displacements(&self.near_nodes, &mut self.near_displacement[..m]);
        let rest = self.model.rest_positions();
        for (&v, u) in self.near_nodes.iter().zip(&self.near_displacement[..m]) {
            self.positions[v] = rest[v] + u;
        }
    }

    /// The rest-shape radius (m) around `point` holding every node whose current
    /// position may be within `reach` (m) of it, from one bound over the whole tissue
    /// beyond each distance (one probe's loads lie around it): a node resting beyond a distance D
    /// moved at most B(D) ([`TissueModel::displacement_bound_beyond`]), so
    /// max(D, reach + B(D)) will do for any D; the least over a few D from 0 (the
    /// bound over every node) to 11 reaches.
    pub(super) fn near_radius(&self, point: &Vec3, reach: f64) -> f64 {
        let radius = |d: f64| d.max(reach + self.model.displacement_bound_beyond(point, d));
        (0..8)
            .map(|i| radius(reach * f64::powi(2.0, i).sqrt()))
            .fold(radius(0.0), f64::min)
    }

    /// Tells the model which nodes the contact may load next: those within `reach` (m)
    /// plus half the patch radius (about one surface edge) of a probe, nearest first
    /// (the triangle list is scratch here; the near ones were consumed).
    pub(super) fn anticipate(&mut self, reach: f64) {
        let reach = reach + 0.5 * self.patch.radius();
        self.near_triangles.clear();
        self.ahead_nodes.clear();
        let mut centres = [None; crate::tissue::MAX_PROBES];
        for (c, state) in centres.iter_mut().zip(&self.probes) {
            *c = state.centre.or(state.entry.map(|e| e.point));
            if let Some(c) = c {
                self.bvh.triangles_near(c, reach, &mut self.near_triangles);
            }
        }
        self.steps += 1;
        for &t in &self.near_triangles {
            for v in self.bvh.triangles()[t as usize] {
                if self.stamp[v] != self.steps {
                    self.stamp[v] = self.steps;
                    self.ahead_nodes.push(v);
                }
            }
        }
        let rest = self.model.rest_positions();
        let distance = |v: usize| {
            centres
                .iter()
                .flatten()
                .map(|c| (rest[v] - c).norm())
                .fold(f64::INFINITY, f64::min)
        };
        self.ahead_nodes
            .sort_unstable_by(|&a, &b| distance(a).total_cmp(&distance(b)));
        self.model.anticipate(&self.ahead_nodes);
    }

    /// Room around a point probe's tip for the surface to bulge into (m).
    pub(super) fn proxy_margin(&self) -> f64 {
        self.probes[0].proxy.margin()
    }
}
