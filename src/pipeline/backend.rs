//! The tissue model a scene runs, whichever backend it chose: one type the model thread,
//! the visual and the replay step without knowing the backend.

use crate::condensed::CondensedModel;
use crate::contact::Friction;
use crate::modal::ModalRuntime;
use crate::model::{
    LocalForceModel, ModelError, ModelStep, PointConstraint, SurfaceEntry, TissueModel,
};
use crate::nonlinear::NonlinearTissue;
use crate::Vec3;

use super::{ProbeContact, Simulation};

/// The tissue model a scene runs: a [`Simulation`] over one of the three backends
/// (boxed: each carries kilobytes of inline state and is built once per scene).
pub enum SceneModel {
    /// Modal dynamics.
    Modal(Box<Simulation<ModalRuntime>>),
    /// Condensed static FEM.
    Condensed(Box<Simulation<CondensedModel>>),
    /// Large-strain tissue in a reduced basis: its lowest modes dynamic, its other
    /// shapes static.
    Nonlinear(Box<Simulation<NonlinearTissue>>),
}

impl SceneModel {
    /// The backend's name as scenes write it: `modal`, `condensed` or `nonlinear`.
    pub fn backend_name(&self) -> &'static str {
        match self {
            SceneModel::Modal(_) => "modal",
            SceneModel::Condensed(_) => "condensed",
            SceneModel::Nonlinear(_) => "nonlinear",
        }
    }

    /// The first probe's contact at the last step (its indentation, contact point).
    pub fn contact(&self) -> Option<ProbeContact> {
        match self {
            SceneModel::Modal(s) => s.contact(),
            SceneModel::Condensed(s) => s.contact(),
            SceneModel::Nonlinear(s) => s.contact(),
        }
    }

    /// The proxy (god-object) position after the last step (m), once placed.
    pub fn proxy_position(&self) -> Option<Vec3> {
        match self {
            SceneModel::Modal(s) => s.proxy_position(),
            SceneModel::Condensed(s) => s.proxy_position(),
            SceneModel::Nonlinear(s) => s.proxy_position(),
        }
    }

    /// Steps `count` probes (1 ..= [`crate::model::MAX_PROBES`]) with contacts solved
    /// together ([`Simulation::with_probes`]).
    pub fn with_probes(self, count: usize) -> Self {
        match self {
            SceneModel::Modal(s) => SceneModel::Modal(Box::new(s.with_probes(count))),
            SceneModel::Condensed(s) => SceneModel::Condensed(Box::new(s.with_probes(count))),
            SceneModel::Nonlinear(s) => SceneModel::Nonlinear(Box::new(s.with_probes(count))),
        }
    }

    /// The constraints of the last step (all probes' contact rows, in probe order).
    pub fn constraints(&self) -> &[PointConstraint] {
        match self {
            SceneModel::Modal(s) => s.constraints(),
            SceneModel::Condensed(s) => s.constraints(),
            SceneModel::Nonlinear(s) => s.constraints(),
        }
    }

    /// The box the probe is kept in (lowest and highest corner, m).
    pub fn workspace(&self) -> (Vec3, Vec3) {
        match self {
            SceneModel::Modal(s) => s.workspace(),
            SceneModel::Condensed(s) => s.workspace(),
            SceneModel::Nonlinear(s) => s.workspace(),
        }
    }

    /// Never pushes the tissue harder than `force` (N) ([`Simulation::set_force_cap`]).
    pub fn set_force_cap(&mut self, force: f64) {
        match self {
            SceneModel::Modal(s) => s.set_force_cap(force),
            SceneModel::Condensed(s) => s.set_force_cap(force),
            SceneModel::Nonlinear(s) => s.set_force_cap(force),
        }
    }

    /// Moves the work a step would wait for to a thread beside the model thread, for a
    /// server stepping in real time: the K⁻¹ columns of newly touched nodes
    /// ([`crate::fem::ComplianceColumns::complete_in_background`]; a modal model without
    /// residual flexibility has none) or the nonlinear corrections
    /// ([`NonlinearTissue::correct_in_background`]).
    pub fn work_in_background(&mut self) -> Result<(), ModelError> {
        match self {
            SceneModel::Modal(s) => match s.model_mut().columns() {
                Some(columns) => Ok(columns.complete_in_background()?),
                None => Ok(()),
            },
            SceneModel::Condensed(s) => Ok(s.model_mut().columns().complete_in_background()?),
            SceneModel::Nonlinear(s) => s.model_mut().correct_in_background(),
        }
    }

    /// Changes the probe's tip radius (m) and friction ([`Simulation::set_probe`]).
    pub fn set_probe(&mut self, radius: f64, friction: Friction) {
        match self {
            SceneModel::Modal(s) => s.set_probe(radius, friction),
            SceneModel::Condensed(s) => s.set_probe(radius, friction),
            SceneModel::Nonlinear(s) => s.set_probe(radius, friction),
        }
    }

    /// Puts the tissue back at rest and forgets the contact.
    pub fn reset(&mut self) {
        match self {
            SceneModel::Modal(s) => s.reset(),
            SceneModel::Condensed(s) => s.reset(),
            SceneModel::Nonlinear(s) => s.reset(),
        }
    }

    /// Rest positions of all mesh nodes (m).
    pub fn rest_positions(&self) -> &[Vec3] {
        match self {
            SceneModel::Modal(s) => s.model().rest_positions(),
            SceneModel::Condensed(s) => s.model().rest_positions(),
            SceneModel::Nonlinear(s) => s.model().rest_positions(),
        }
    }

    /// Current displacements (m) of mesh nodes `nodes` into `out` (same length).
    pub fn displacements(&mut self, nodes: &[usize], out: &mut [Vec3]) {
        match self {
            SceneModel::Modal(s) => s.model_mut().displacements(nodes, out),
            SceneModel::Condensed(s) => s.model_mut().displacements(nodes, out),
            SceneModel::Nonlinear(s) => s.model_mut().displacements(nodes, out),
        }
    }

    /// Outward surface triangles (mesh node indices), in the contact's numbering.
    pub fn surface_triangles(&self) -> &[[usize; 3]] {
        match self {
            SceneModel::Modal(s) => s.model().surface_triangles(),
            SceneModel::Condensed(s) => s.model().surface_triangles(),
            SceneModel::Nonlinear(s) => s.model().surface_triangles(),
        }
    }

    /// The mesh nodes on the surface.
    pub fn surface_nodes(&self) -> &[usize] {
        match self {
            SceneModel::Modal(s) => s.model().surface_nodes(),
            SceneModel::Condensed(s) => s.model().surface_nodes(),
            SceneModel::Nonlinear(s) => s.model().surface_nodes(),
        }
    }

    /// Indentation (m) of the first probe at `probe` (m; its centre, a point probe's
    /// tip) into the surface it pressed at the last step: how far it lies below where
    /// the rest-surface proxy holds it, along that surface's normal; 0 out of contact.
    pub fn indentation(&self, probe: &Vec3) -> f64 {
        self.contact().and_then(|c| c.entry).map_or(0.0, |e| {
            SurfaceEntry {
                proxy: e.proxy,
                normal: e.normal,
            }
            .depth(probe)
        })
    }
}

impl ModelStep for SceneModel {
    fn step(&mut self, t: f64, dt: f64, probe: Vec3) -> LocalForceModel {
        match self {
            SceneModel::Modal(s) => s.step(t, dt, probe),
            SceneModel::Condensed(s) => s.step(t, dt, probe),
            SceneModel::Nonlinear(s) => s.step(t, dt, probe),
        }
    }

    fn step_probes(&mut self, t: f64, dt: f64, probes: &[Vec3], out: &mut [LocalForceModel]) {
        match self {
            SceneModel::Modal(s) => s.step_probes(t, dt, probes, out),
            SceneModel::Condensed(s) => s.step_probes(t, dt, probes, out),
            SceneModel::Nonlinear(s) => s.step_probes(t, dt, probes, out),
        }
    }
}
