//! A tissue model with a probe: the proxy finds the contact on the deformed surface,
//! the model enforces it for one step, and the result becomes the local force model the
//! haptic thread extrapolates from.

use crate::contact::{Contact, Proxy, SurfaceBvh};
use crate::{Mat3, Vec3};

use super::constraint::PointConstraint;
use super::tissue::TissueModel;
use super::{LocalForceModel, ModelStep};

/// A tissue model probed by one point (or sphere) probe with a god-object proxy.
pub struct Simulation<M: TissueModel> {
    model: M,
    bvh: SurfaceBvh,
    proxy: Proxy,
    surface_nodes: Vec<usize>,
    displacement: Vec<Vec3>,
    positions: Vec<Vec3>,
    constraints: Vec<PointConstraint>,
    forces: Vec<Vec3>,
    contact: Option<Contact>,
    last_force: Vec3,
}

impl<M: TissueModel> Simulation<M> {
    /// Wraps `model` with a probe of `probe_radius` (m; 0 for a point probe). Builds
    /// the surface BVH from the model's current shape.
    pub fn new(mut model: M, probe_radius: f64) -> Self {
        let surface_nodes = model.surface_nodes().to_vec();
        let mut positions = model.rest_positions().to_vec();
        let mut displacement = vec![Vec3::zeros(); surface_nodes.len()];
        model.displacements(&surface_nodes, &mut displacement);
        for (&n, u) in surface_nodes.iter().zip(&displacement) {
            positions[n] += u;
        }
        let bvh = SurfaceBvh::build(model.surface_triangles().to_vec(), &positions);
        Self {
            model,
            bvh,
            proxy: Proxy::new(probe_radius),
            surface_nodes,
            displacement,
            positions,
            constraints: Vec::with_capacity(1),
            forces: vec![Vec3::zeros(); 1],
            contact: None,
            last_force: Vec3::zeros(),
        }
    }

    /// The tissue model.
    pub fn model(&self) -> &M {
        &self.model
    }

    /// The tissue model, mutably (e.g. to read displaced render vertices).
    pub fn model_mut(&mut self) -> &mut M {
        &mut self.model
    }

    /// The contact found at the last step, if the probe was pressing.
    pub fn contact(&self) -> Option<Contact> {
        self.contact
    }

    /// The proxy (god-object) position after the last step (m).
    pub fn proxy_position(&self) -> Option<Vec3> {
        self.proxy.position()
    }

    /// Node positions as of the start of the last step (m): surface nodes displaced,
    /// interior nodes at rest.
    pub fn surface_positions(&self) -> &[Vec3] {
        &self.positions
    }

    /// Refits the BVH to the model's current surface.
    fn refresh_surface(&mut self) {
        self.model
            .displacements(&self.surface_nodes, &mut self.displacement);
        let rest = self.model.rest_positions();
        for (&n, u) in self.surface_nodes.iter().zip(&self.displacement) {
            self.positions[n] = rest[n] + u;
        }
        self.bvh.refit(&self.positions);
    }
}

impl<M: TissueModel> ModelStep for Simulation<M> {
    fn step(&mut self, t: f64, dt: f64, probe: Vec3) -> LocalForceModel {
        self.refresh_surface();
        let contact = self.proxy.update(&self.bvh, &self.positions, &probe);
        self.constraints.clear();
        if let Some(c) = contact {
            let nodes = self.bvh.triangles()[c.triangle];
            let target = probe - c.normal * self.proxy.radius();
            self.constraints
                .push(PointConstraint::contact(nodes, c.bary, c.normal, target));
        }
        let ok = self
            .model
            .advance(dt, &self.constraints, &mut self.forces)
            .is_ok();
        let f_tissue = if ok && contact.is_some() {
            self.forces[0]
        } else {
            Vec3::zeros()
        };
        let in_contact = contact.is_some() && f_tissue != Vec3::zeros();
        self.contact = if in_contact { contact } else { None };
        if !in_contact {
            self.proxy.release();
        }
        let f0 = -f_tissue;
        let mut out = LocalForceModel {
            t0: t,
            x0: probe,
            f0,
            ..LocalForceModel::NONE
        };
        if dt > 0.0 && dt.is_finite() {
            out.f_dot = (f0 - self.last_force) / dt;
        }
        self.last_force = f0;
        if let (true, Some(c)) = (in_contact, contact) {
            let nodes = self.bvh.triangles()[c.triangle];
            let compliance = self
                .model
                .point_compliance(&nodes, &c.bary)
                .unwrap_or(Mat3::zeros());
            let cn = c.normal.dot(&(compliance * c.normal));
            out.in_contact = true;
            out.contact_point = c.point;
            out.normal = c.normal;
            if cn > 0.0 {
                out.stiffness = -(c.normal * c.normal.transpose()) / cn;
            }
        }
        out
    }
}
