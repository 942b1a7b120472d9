//! The tissue model a scene runs, whichever backend it chose: one type the model thread,
//! the visual and the replay step without knowing the backend.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::condensed::CondensedModel;
use crate::contact::Friction;
use crate::modal::ModalRuntime;
use crate::nonlinear::NonlinearTissue;
use crate::tissue::{
    LocalForceModel, ModelError, ModelStep, PointConstraint, SurfaceEntry, TissueModel,
};
use crate::Vec3;

use super::{ContactPipeline, ProbeContact};

/// How often [`SceneModel::wait_ready_unless`] looks at its stop flag: a Ctrl-C while
/// the tissue is prepared is heard within it.
pub const READY_POLL: Duration = Duration::from_millis(10);

/// Runs `$body` with `$s` bound to the contact pipeline of whichever backend `$model` holds
/// (tokio's `match_flavor!`): one line per dispatched method.
macro_rules! dispatch {
    ($model:expr, $s:ident => $body:expr) => {
        match $model {
            SceneModel::Modal($s) => $body,
            SceneModel::Condensed($s) => $body,
            SceneModel::Nonlinear($s) => $body,
        }
    };
}
pub(super) use dispatch;

/// The tissue model a scene runs: a [`ContactPipeline`] over one of the three backends
/// (boxed: each carries kilobytes of inline state and is built once per scene).
pub enum SceneModel {
    /// Modal dynamics.
    Modal(Box<ContactPipeline<ModalRuntime>>),
    /// Condensed static FEM.
    Condensed(Box<ContactPipeline<CondensedModel>>),
    /// Large-strain tissue in a reduced basis: its lowest modes dynamic, its other
    /// shapes static.
    Nonlinear(Box<ContactPipeline<NonlinearTissue>>),
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
        dispatch!(self, s => s.contact())
    }

    /// The proxy (god-object) position after the last step (m), once placed.
    pub fn proxy_position(&self) -> Option<Vec3> {
        dispatch!(self, s => s.proxy_position())
    }

    /// Steps `count` probes (1 ..= [`crate::tissue::MAX_PROBES`]) with contacts solved
    /// together ([`ContactPipeline::with_probes`]).
    pub fn with_probes(self, count: usize) -> Self {
        match self {
            SceneModel::Modal(s) => SceneModel::Modal(Box::new(s.with_probes(count))),
            SceneModel::Condensed(s) => SceneModel::Condensed(Box::new(s.with_probes(count))),
            SceneModel::Nonlinear(s) => SceneModel::Nonlinear(Box::new(s.with_probes(count))),
        }
    }

    /// The constraints of the last step (all probes' contact rows, in probe order).
    pub fn constraints(&self) -> &[PointConstraint] {
        dispatch!(self, s => s.constraints())
    }

    /// The box the probe is kept in (lowest and highest corner, m).
    pub fn workspace(&self) -> (Vec3, Vec3) {
        dispatch!(self, s => s.workspace())
    }

    /// Never pushes the tissue harder than `force` (N) ([`ContactPipeline::set_force_cap`]).
    pub fn set_force_cap(&mut self, force: f64) {
        dispatch!(self, s => s.set_force_cap(force))
    }

    /// Moves the work a step would wait for to a thread beside the model thread, for a
    /// server stepping in real time: the K⁻¹ columns of newly touched nodes
    /// ([`crate::fem::ComplianceColumns::complete_in_background`]; a modal model without
    /// residual flexibility has none) or the nonlinear corrections
    /// ([`NonlinearTissue::correct_in_background`]).
    pub fn work_in_background(&mut self) -> Result<(), ModelError> {
        match self {
            SceneModel::Modal(s) => Ok(s.model_mut().complete_columns_in_background()?),
            SceneModel::Condensed(s) => Ok(s.model_mut().columns().complete_in_background()?),
            SceneModel::Nonlinear(s) => s.model_mut().correct_in_background(),
        }
    }

    /// Waits for what the model still builds on its own thread before its first step
    /// (the modal backend's factor of K for residual flexibility); an error if that failed.
    pub fn wait_ready(&mut self) -> Result<(), ModelError> {
        match self {
            SceneModel::Modal(s) => s.model_mut().wait_for_columns(),
            SceneModel::Condensed(_) | SceneModel::Nonlinear(_) => Ok(()),
        }
    }

    /// [`Self::wait_ready`] unless `stop` turns true first (looked at every
    /// [`READY_POLL`]): `Ok(false)` then, the build left to finish on its own.
    pub fn wait_ready_unless(&mut self, stop: &AtomicBool) -> Result<bool, ModelError> {
        if let SceneModel::Modal(s) = self {
            while s.model_mut().columns_pending() {
                if stop.load(Ordering::Relaxed) {
                    return Ok(false);
                }
                std::thread::sleep(READY_POLL);
            }
        }
        self.wait_ready().map(|()| true)
    }

    /// Changes the probe's tip radius (m) and friction ([`ContactPipeline::set_probe`]).
    pub fn set_probe(&mut self, radius: f64, friction: Friction) {
        match self {
            SceneModel::Modal(s) => s.set_probe(radius, friction),
            SceneModel::Condensed(s) => s.set_probe(radius, friction),
            SceneModel::Nonlinear(s) => s.set_probe(radius, friction),
        }
    }

    /// Puts the tissue back at rest and forgets the contact.
    pub fn reset(&mut self) {
        dispatch!(self, s => s.reset())
    }

    /// Rest positions of all mesh nodes (m).
    pub fn rest_positions(&self) -> &[Vec3] {
        dispatch!(self, s => s.model().rest_positions())
    }

    /// Current displacements (m) of mesh nodes `nodes` into `out` (same length).
    pub fn displacements(&mut self, nodes: &[usize], out: &mut [Vec3]) {
        dispatch!(self, s => s.model_mut().displacements(nodes, out))
    }

    /// Outward surface triangles (mesh node indices), in the contact's numbering.
    pub fn surface_triangles(&self) -> &[[usize; 3]] {
        dispatch!(self, s => s.model().surface_triangles())
    }

    /// The mesh nodes on the surface.
    pub fn surface_nodes(&self) -> &[usize] {
        dispatch!(self, s => s.model().surface_nodes())
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
        dispatch!(self, s => s.step(t, dt, probe))
    }

    fn step_probes(&mut self, t: f64, dt: f64, probes: &[Vec3], out: &mut [LocalForceModel]) {
        dispatch!(self, s => s.step_probes(t, dt, probes, out))
    }
}
