//! The tissue-model interface every backend (modal, condensed, nonlinear) implements,
//! and the local force model the model thread hands to the haptic thread.

use serde::Deserialize;

use crate::{Mat3, Vec3};

/// How the haptic thread evaluates a [`LocalForceModel`] between two model steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ForceStrategy {
    /// f₀: zero-order hold of the last model force (the baseline).
    Hold,
    /// f₀ + ḟ·(t − t₀): linear in time (Basdogan).
    LinearTime,
    /// f₀ + K_loc·(x − x₀): linear in position, with local contact loss and re-engagement.
    LocalStiffness,
}

impl ForceStrategy {
    /// All strategies, for harnesses that compare them.
    pub const ALL: [ForceStrategy; 3] = [
        ForceStrategy::Hold,
        ForceStrategy::LinearTime,
        ForceStrategy::LocalStiffness,
    ];

    /// The name used on the command line and in scene files.
    pub fn name(self) -> &'static str {
        match self {
            ForceStrategy::Hold => "hold",
            ForceStrategy::LinearTime => "linear-time",
            ForceStrategy::LocalStiffness => "local-stiffness",
        }
    }
}

/// What the haptic thread needs to compute a force every tick until the next model
/// step (DESIGN §2.5). Published by the model thread at 200 Hz; plain `Copy` data so
/// it crosses the wait-free hand-off without allocation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LocalForceModel {
    /// Whether the probe touched the tissue at the model step.
    pub in_contact: bool,
    /// Scene time of the model step that produced this model (s).
    pub t0: f64,
    /// Probe position the model step used (m, scene frame).
    pub x0: Vec3,
    /// Force on the user's hand at `x0`, `t0` (N).
    pub f0: Vec3,
    /// Time derivative of the force over the last model step (N/s).
    pub f_dot: Vec3,
    /// Local stiffness ∂f/∂x at `x0` (N/m); negative semi-definite for a passive
    /// contact (pushing in makes the force push back).
    pub stiffness: Mat3,
    /// Proxy contact point on the deformed surface (m).
    pub contact_point: Vec3,
    /// Outward surface normal at the contact point (unit).
    pub normal: Vec3,
    /// Where the probe entered the undeformed surface at the model step, which the
    /// indentation is measured from; `None` out of contact.
    pub entry: Option<SurfaceEntry>,
}

/// Where a probe is pressed into the undeformed (rest) surface: the god-object proxy on
/// it and the surface's outward normal there.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SurfaceEntry {
    /// The rest-surface proxy (m, scene frame).
    pub proxy: Vec3,
    /// Outward normal of the rest surface at the proxy (unit).
    pub normal: Vec3,
}

impl SurfaceEntry {
    /// Indentation (m) of a probe at `x` (m): how far it lies below the proxy along the
    /// normal; 0 above it.
    pub fn depth(&self, x: &Vec3) -> f64 {
        self.normal.dot(&(self.proxy - x)).max(0.0)
    }
}

impl LocalForceModel {
    /// The model published before any model step: no contact, zero force.
    pub const NONE: Self = Self {
        in_contact: false,
        t0: 0.0,
        x0: Vec3::new(0.0, 0.0, 0.0),
        f0: Vec3::new(0.0, 0.0, 0.0),
        f_dot: Vec3::new(0.0, 0.0, 0.0),
        stiffness: Mat3::new(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
        contact_point: Vec3::new(0.0, 0.0, 0.0),
        normal: Vec3::new(0.0, 0.0, 1.0),
        entry: None,
    };
}

/// One step of the 200 Hz model thread, as the haptic runtime drives it: read the
/// newest probe position, advance the tissue, publish the local force model. The same
/// step runs on the model thread in real time and in lock-step (deterministic) mode.
pub trait ModelStep: Send {
    /// Advances the tissue by `dt` (s) to scene time `t` (s) with the probe tip at
    /// `probe` (m, scene frame), and returns the local force model for the haptic
    /// thread to extrapolate from until the next step.
    fn step(&mut self, t: f64, dt: f64, probe: Vec3) -> LocalForceModel;

    /// As [`Self::step`], or `None` when there is no newer model than the last one
    /// returned (a device whose tissue another thread steps, which has not stepped
    /// since): the model thread then publishes nothing, so the haptic thread's
    /// watchdog sees the model's true age.
    fn step_if_new(&mut self, t: f64, dt: f64, probe: Vec3) -> Option<LocalForceModel> {
        Some(self.step(t, dt, probe))
    }

    /// How often (s) the model thread calls this step for a model period of
    /// `model_period` (s): every period, unless the step only hands on models another
    /// thread makes, which it then passes on sooner.
    fn call_period(&self, model_period: f64) -> f64 {
        model_period
    }

    /// Advances the tissue with several probes at `probes` (m; a non-finite position
    /// is a probe that is not there) whose contacts are solved together, writing each
    /// probe's local force model into `out` (same length). A model of one probe steps
    /// the first and leaves the others out of contact.
    fn step_probes(&mut self, t: f64, dt: f64, probes: &[Vec3], out: &mut [LocalForceModel]) {
        for (i, (p, o)) in probes.iter().zip(out.iter_mut()).enumerate() {
            *o = if i == 0 {
                self.step(t, dt, *p)
            } else {
                LocalForceModel {
                    t0: t,
                    ..LocalForceModel::NONE
                }
            };
        }
    }
}

/// Most probes one tissue model takes (two hands, or a hand of fingers).
pub const MAX_PROBES: usize = 5;

pub mod constraint;
mod error;
mod geometry;
mod load;
pub mod model;
mod rows;

pub use constraint::{
    add_point_compliance, push_nodal_loads, require_positions, validate_step, ConstraintKind,
    DenseConstraintSolver, Directions, PointConstraint,
};
pub use error::ModelError;
pub use geometry::TissueGeometry;
pub(crate) use load::HeldLoads;
pub use load::PointLoad;
pub use model::TissueModel;
pub use rows::ConstraintRows;
