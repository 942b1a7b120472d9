//! The runtime nonlinear tissue model's state, how it is sized, and what it tells.

use std::sync::Arc;

use super::health::{LastGood, StepHealth};
use super::residual::Residual;
use crate::fem::ComplianceColumns;
use crate::nonlinear::background::CorrectionThread;
use crate::nonlinear::dynamics::ReducedDynamics;
use crate::nonlinear::reduced::Tangent;
use crate::nonlinear::surface_bound::SurfaceBound;
use crate::nonlinear::{
    Estimate, LinearConstraint, NonlinearError, NonlinearStatics, ReducedStatics,
};
use crate::tissue::{HeldLoads, ModelError, TissueGeometry};
use crate::Vec3;

/// How the runtime nonlinear model is sized and how closely it solves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NonlinearParams {
    /// Most shapes the reduced basis holds (each costs 16 bytes per DOF).
    pub shapes: usize,
    /// Energy-norm error estimate (relative) the basis is grown to
    /// ([`ReducedStatics::enrich`]).
    pub tolerance: f64,
    /// Most nonlinear corrections one step adds when it corrects in step (each about a
    /// full residual and a solve with K); on the background thread
    /// ([`NonlinearTissue::correct_in_background`]) one is computed at a time.
    pub corrections_per_step: usize,
    /// Most constraint rows one step takes.
    pub max_rows: usize,
}

/// The lowest vibration modes of the mesh, which the model moves dynamically.
#[derive(Clone, Debug, Default)]
pub struct TissueModes {
    /// Mode shapes of K φ = ω² M φ, each 3 per node (any scale; zero at fixed nodes).
    pub shapes: Vec<Vec<f64>>,
    /// The lumped mass M, 3 entries per node (kg).
    pub mass: Vec<f64>,
    /// Rayleigh damping on the stiffness (s).
    pub alpha1: f64,
    /// Rayleigh damping on the mass (1/s).
    pub alpha2: f64,
}

/// The large-strain tissue model of the `nonlinear` backend (`tissue/mod.rs`).
pub struct NonlinearTissue {
    pub(super) geometry: TissueGeometry,
    pub(super) reduced: ReducedStatics,
    /// The contact points' compliance the basis lacks.
    pub(super) residual: Residual,
    pub(super) params: NonlinearParams,
    /// Reduced coordinates (one per shape).
    pub(super) q: Vec<f64>,
    /// The last reduced tangent taken (at q once it has been made sure).
    pub(super) tangent: Tangent,
    /// Uᵀf_int at q after the last step solved (N): where a frozen-tangent step starts.
    pub(super) internal: Vec<f64>,
    /// External point loads held between steps, and the same as nodal forces (N).
    pub(super) point_loads: HeldLoads,
    pub(super) nodal_loads: Vec<Vec3>,
    /// Each row's multiplier at the last step (N along its direction), the next
    /// step's start.
    pub(super) multipliers: Vec<f64>,
    /// The enforced rows at the last step whose corrections were complete; `None`
    /// while the contact changes.
    pub(super) settled: Option<Vec<LinearConstraint>>,
    /// The last step's rows (coefficients, value, unilateral) and whether the loads
    /// changed since: a settled step given the same rows again is already solved.
    pub(super) last_rows: Vec<(LinearConstraint, bool)>,
    pub(super) loads_changed: bool,
    /// Nodal forces of the last step's constraints and loads (node, N), and Uᵀ of them.
    pub(super) loads: Vec<(usize, Vec3)>,
    pub(super) reduced_load: Vec<f64>,
    /// An upper bound on the surface displacement at the last step (m), and what it
    /// is taken from.
    pub(super) bound: f64,
    /// Its parts: the bound on U q over the surface (m) and on U Uᵀ of the loads
    /// (m), the residual field's basis part.
    pub(super) bound_parts: (f64, f64),
    pub(super) surface_bound: SurfaceBound,
    /// The last estimate of the basis's error.
    pub(super) estimate: Option<Estimate>,
    /// The dynamic coordinates (the first of q) and their motion.
    pub(super) dynamics: ReducedDynamics,
    /// The reduced model's revision at the last step's end.
    pub(super) solved_revision: u64,
    /// Whether each step solves the equilibrium of every coordinate, modes included.
    pub(super) static_only: bool,
    /// The thread computing the corrections when the model steps in real time; `None`:
    /// each step corrects itself.
    pub(super) background: Option<CorrectionThread>,
    /// What the correction thread's mirror of the basis holds: (restarts, shapes).
    pub(super) mirrored: Option<(u64, usize)>,
    /// The basis's shapes when the correction in flight was posted.
    pub(super) posted_shapes: usize,
    /// Whether the rows' or loads' points have moved since the last correction was
    /// posted (a contact moving across the surface).
    pub(super) points_moved: bool,
    /// Whether the last step took more than `SLOW_CHORDS` Newton iterations.
    pub(super) slow_chords: bool,
    /// Whether the last step ended on a converged solve (not a frozen tangent, not
    /// held): only then is its state an equilibrium a later step may return as it is.
    pub(super) converged: bool,
    /// What the steps had to give up, counted.
    pub(super) health: StepHealth,
    /// The last converged step, which limits a degraded step's force.
    pub(super) last_good: LastGood,
}

impl NonlinearTissue {
    /// The runtime model of `statics` (whose mesh `geometry` is the rest shape of) with
    /// `modes` as its dynamic shapes (none: quasi-static) and `columns` (K⁻¹ over the
    /// same small-strain K) for its contact points' residual flexibility: factorises K
    /// at rest once.
    pub fn new(
        geometry: TissueGeometry,
        statics: Arc<NonlinearStatics>,
        params: NonlinearParams,
        modes: &TissueModes,
        columns: ComplianceColumns,
    ) -> Result<Self, ModelError> {
        let n = geometry.rest.len();
        if statics.prescribed.len() != 3 * n || columns.n_nodes() != n {
            return Err(ModelError::Setup(format!(
                "the nonlinear FEM has {} DOFs and its K⁻¹ columns {} nodes, the mesh {} nodes",
                statics.prescribed.len(),
                columns.n_nodes(),
                n
            )));
        }
        if params.shapes < modes.shapes.len() + 4 {
            return Err(ModelError::Setup(format!(
                "a nonlinear basis of {} shapes cannot hold {} modes and room for \
                 corrections (at least 4 more)",
                params.shapes,
                modes.shapes.len()
            )));
        }
        let mut reduced = ReducedStatics::new(statics, params.shapes).map_err(solve_error)?;
        if !modes.shapes.is_empty() && modes.mass.len() != 3 * n {
            return Err(ModelError::Setup(format!(
                "the lumped mass has {} entries for {} nodes",
                modes.mass.len(),
                n
            )));
        }
        // K⁻¹Mφ = φ/ω²: each mode's shape, K-normalised.
        for (i, shape) in modes.shapes.iter().enumerate() {
            if shape.len() != 3 * n {
                return Err(ModelError::Setup(format!(
                    "mode {i} has {} entries for {n} nodes",
                    shape.len()
                )));
            }
            let inertia: Vec<f64> = shape.iter().zip(&modes.mass).map(|(x, m)| x * m).collect();
            reduced.add_shape(&inertia).map_err(solve_error)?;
        }
        let k = reduced.shapes();
        let dynamics =
            ReducedDynamics::new(reduced.gram(&modes.mass, k), modes.alpha1, modes.alpha2);
        Ok(Self {
            geometry,
            residual: Residual::new(columns),
            q: vec![0.0; k],
            internal: vec![0.0; k],
            tangent: Tangent::default(),
            point_loads: HeldLoads::new(params.max_rows),
            nodal_loads: vec![Vec3::zeros(); n],
            multipliers: Vec::new(),
            settled: None,
            last_rows: Vec::new(),
            loads_changed: false,
            loads: Vec::new(),
            reduced_load: Vec::new(),
            bound: 0.0,
            bound_parts: (0.0, 0.0),
            surface_bound: SurfaceBound::default(),
            estimate: None,
            dynamics,
            solved_revision: u64::MAX,
            static_only: false,
            background: None,
            mirrored: None,
            posted_shapes: 0,
            points_moved: false,
            slow_chords: false,
            converged: false,
            health: StepHealth::default(),
            last_good: LastGood::default(),
            reduced,
            params,
        })
    }

    /// Computes the nonlinear corrections on their own thread (`palpa-corrections`)
    /// and the contact points' K⁻¹ columns on theirs (`palpa-columns`) from now on, for
    /// a server stepping in real time: a step no longer waits for them but solves in
    /// the basis it has, and each correction joins the basis at the first step after it
    /// is ready; a step that would overrun its period ends early (a frozen-tangent
    /// step, counted). Held still, the model reaches the same tolerance as one
    /// correcting in step, some steps later. Replays and `palpa indent` correct in
    /// step, so their results do not depend on timing.
    pub fn correct_in_background(&mut self) -> Result<(), ModelError> {
        if self.background.is_none() {
            let thread = CorrectionThread::start(self.reduced.mirror())
                .map_err(|e| ModelError::Setup(e.to_string()))?;
            self.background = Some(thread);
            self.mirrored = None;
            self.tangent.patient = true;
            self.residual.columns().complete_in_background()?;
        }
        Ok(())
    }

    /// The model's energy (J): the kinetic energy of its dynamic coordinates and the
    /// potential at the last step's end (the static coordinates in equilibrium); held
    /// without damping and with the constraints still, the same after every step.
    pub fn energy(&self) -> f64 {
        self.dynamics.kinetic_energy() + self.dynamics.potential()
    }

    /// With `on`, each step solves the static equilibrium of every coordinate, modes
    /// included, at rest: what a press held still rings down to, at once. The virtual
    /// indentation test (`palpa indent`) holds the model so.
    pub fn hold_static(&mut self, on: bool) {
        self.static_only = on;
        if on {
            self.dynamics.stop();
        }
    }

    /// The potential part of [`NonlinearTissue::energy`] (J).
    pub fn potential_energy(&self) -> f64 {
        self.dynamics.potential()
    }

    /// The reduced coordinates (√J: the shapes are K-normalised), the dynamic ones
    /// first.
    pub fn coordinates(&self) -> &[f64] {
        &self.q
    }

    /// Dynamic coordinates (modes) in the basis.
    pub fn dynamic_coordinates(&self) -> usize {
        self.dynamics.coordinates()
    }

    /// Nodal forces of the last step's constraints and point loads (node, N).
    pub fn last_loads(&self) -> &[(usize, Vec3)] {
        &self.loads
    }

    /// Shapes in the reduced basis now.
    pub fn shapes(&self) -> usize {
        self.reduced.shapes()
    }

    /// The last error estimate of the basis (relative energy norms), once a step has
    /// estimated it.
    pub fn estimate(&self) -> Option<Estimate> {
        self.estimate
    }

    /// Whether the model has its accuracy for the current contact: the last correction
    /// of these constraints added nothing (in step, at once; with
    /// [`NonlinearTissue::correct_in_background`], some steps after the contact stops
    /// changing).
    pub fn settled(&self) -> bool {
        self.settled.is_some()
    }

    /// The reduced model (its basis and active terms).
    pub fn reduced(&self) -> &ReducedStatics {
        &self.reduced
    }

    /// What the steps so far had to give up: frozen-tangent ends, sub-stepped jumps,
    /// steps held on the last good state ([`StepHealth`]).
    pub fn health(&self) -> &StepHealth {
        &self.health
    }
}

/// A nonlinear solve's failure as the model interface reports it.
pub(super) fn solve_error(e: NonlinearError) -> ModelError {
    ModelError::Solve(e.to_string())
}
