//! The tissue model a scene runs, whichever backend it chose: one type the model thread,
//! the visual and the replay step without knowing the backend.

use crate::condensed::CondensedModel;
use crate::contact::Contact;
use crate::modal::ModalRuntime;
use crate::model::{LocalForceModel, ModelStep, TissueModel};
use crate::Vec3;

use super::Simulation;

/// The tissue model a scene runs: a [`Simulation`] over one of the two backends
/// (boxed: both carry kilobytes of inline state and are built once per scene).
pub enum SceneModel {
    /// Modal dynamics.
    Modal(Box<Simulation<ModalRuntime>>),
    /// Condensed static FEM.
    Condensed(Box<Simulation<CondensedModel>>),
}

impl SceneModel {
    /// The contact of the last step (for indentation depth, drawing the proxy).
    pub fn contact(&self) -> Option<Contact> {
        match self {
            SceneModel::Modal(s) => s.contact(),
            SceneModel::Condensed(s) => s.contact(),
        }
    }

    /// The proxy (god-object) position after the last step (m), once placed.
    pub fn proxy_position(&self) -> Option<Vec3> {
        match self {
            SceneModel::Modal(s) => s.proxy_position(),
            SceneModel::Condensed(s) => s.proxy_position(),
        }
    }

    /// The box the probe is kept in (lowest and highest corner, m).
    pub fn workspace(&self) -> (Vec3, Vec3) {
        match self {
            SceneModel::Modal(s) => s.workspace(),
            SceneModel::Condensed(s) => s.workspace(),
        }
    }

    /// Never pushes the tissue harder than `force` (N) ([`Simulation::set_force_cap`]).
    pub fn set_force_cap(&mut self, force: f64) {
        match self {
            SceneModel::Modal(s) => s.set_force_cap(force),
            SceneModel::Condensed(s) => s.set_force_cap(force),
        }
    }

    /// Puts the tissue back at rest and forgets the contact.
    pub fn reset(&mut self) {
        match self {
            SceneModel::Modal(s) => s.reset(),
            SceneModel::Condensed(s) => s.reset(),
        }
    }

    /// Rest positions of all mesh nodes (m).
    pub fn rest_positions(&self) -> &[Vec3] {
        match self {
            SceneModel::Modal(s) => s.model().rest_positions(),
            SceneModel::Condensed(s) => s.model().rest_positions(),
        }
    }

    /// Outward surface triangles (mesh node indices), in the contact's numbering.
    pub fn surface_triangles(&self) -> &[[usize; 3]] {
        match self {
            SceneModel::Modal(s) => s.model().surface_triangles(),
            SceneModel::Condensed(s) => s.model().surface_triangles(),
        }
    }

    /// Indentation (m) of probe tip `probe` at the last step's contact: how far it lies
    /// below the undeformed surface point it touches, along the contact normal; 0 out
    /// of contact.
    pub fn indentation(&self, probe: &Vec3, probe_radius: f64) -> f64 {
        let Some(c) = self.contact() else {
            return 0.0;
        };
        let tri = self.surface_triangles()[c.triangle];
        let rest = self.rest_positions();
        let p_rest: Vec3 = (0..3).map(|i| rest[tri[i]] * c.bary[i]).sum();
        let tip = probe - c.normal * probe_radius;
        (p_rest - tip).dot(&c.normal).max(0.0)
    }
}

impl ModelStep for SceneModel {
    fn step(&mut self, t: f64, dt: f64, probe: Vec3) -> LocalForceModel {
        match self {
            SceneModel::Modal(s) => s.step(t, dt, probe),
            SceneModel::Condensed(s) => s.step(t, dt, probe),
        }
    }
}
