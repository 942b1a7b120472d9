//! Which nodes a step reads: the positions of the nodes within reach of the probes
//! brought up to date, the others put back at
//! rest, and the nodes just beyond announced to the model.

use super::ContactPipeline;
use crate::tissue::TissueModel;
use crate::Vec3;

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
        for (state, _) in self.probes.iter().zip(probes) {
            let points = [state.centre, state.entry.map(|c| c.point)];
            for point in points.iter().flatten() {
                let radius = self.near_radius(point, reach);
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
    /// position may be within `reach` (m) of it: a node resting beyond a distance D
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
