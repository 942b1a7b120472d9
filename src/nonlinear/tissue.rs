//! The runtime nonlinear tissue model: the reduced model ([`ReducedStatics`]) behind the
//! [`TissueModel`] interface the contact pipeline drives.
//!
//! Each step solves the reduced large-strain equations under the step's contact rows
//! (Newton on the reduced KKT system from the last step's state and tangent, kept while
//! it converges; an active set makes the unilateral rows push or release) and reports
//! the rows' forces. The basis starts with the lowest vibration modes, which move
//! dynamically by an energy-conserving step ([`ReducedDynamics`]); every later shape is
//! static, in equilibrium at each step's end: for every material point a row or load
//! acts on, its three static shapes K⁻¹c (so the model is exact for linear tissue at
//! rest and its compliance at those points is the reduced tangent's), plus the
//! nonlinear corrections [`ReducedStatics::enrich`] adds while the contact changes, a
//! bounded number per step (or, in real time, computed on their own thread and joined
//! as they finish: [`NonlinearTissue::correct_in_background`]). Without modes the model
//! is quasi-static. When the basis is
//! full its static shapes restart from the current displacement's static part as their
//! one shape and grow again.

use std::sync::Arc;

use nalgebra::DMatrix;

use super::background::{CorrectionJob, CorrectionThread};
use super::dynamics::ReducedDynamics;
use super::reduced::{Estimate, ReducedStatics, StepEnd, Tangent};
use super::statics::{LinearConstraint, NewtonOptions, NonlinearError};
use super::surface_bound::SurfaceBound;
use super::NonlinearStatics;
use crate::fem::Support;
use crate::tissue::{
    push_nodal_loads, require_positions, validate_step, HeldLoads, ModelError, PointConstraint,
    PointLoad, TissueGeometry, TissueModel,
};
use crate::{Mat3, Vec3};

/// How the runtime nonlinear model is sized and how closely it solves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NonlinearParams {
    /// Most shapes the reduced basis holds (each costs 16 bytes per DOF).
    pub shapes: usize,
    /// Energy-norm error estimate (relative) the basis is grown to
    /// ([`ReducedStatics::enrich`]).
    pub tolerance: f64,
    /// Most nonlinear corrections one step adds when it corrects in step (each about a
    /// full residual and a solve with K: 20 ms on the 5 mm block); on the background
    /// thread ([`NonlinearTissue::correct_in_background`]) one is computed at a time.
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

/// The Newton tolerance of a step (relative to the reduced applied forces) and its
/// iteration limit.
const NEWTON: NewtonOptions = NewtonOptions {
    relative: 1e-9,
    max_iterations: 30,
};

/// A constraint row's multiplier (N) beyond which an enforced unilateral row pulls,
/// relative to the largest pushing force.
const PULLING: f64 = 1e-9;

/// How far (m) a released row's point may pass its target before it is enforced.
const PASSING: f64 = 1e-9;

/// Newton iterations of a step beyond which the next step, while the forces are summed
/// over a cubature, starts from a tangent taken afresh at its start state. The
/// correction thread's tangent is of a state about 20 steps old when it joins; a press
/// deepening went on with it at 9–13 chord iterations a step (a fifth of the steps),
/// where a fresh one costs about ten passes of the forces and the steps after it take 4–5.
/// Over the benchmark's press and hold: iterations −14 to −17 %, steps above 8 iterations
/// 68–140 → 7–10, the press's p99 1.44–2.98 → 1.17–1.85 ms in six interleaved pairs
/// (`cargo bench --bench nonlinear -- model_step`, docs/benchmarks.md).
const SLOW_CHORDS: usize = 8;

/// Most material points remembered as shaped (their shapes in the basis); the older half
/// is forgotten beyond it (shaping one again costs a solve with K and adds nothing).
const MAX_SHAPED: usize = 256;

/// The large-strain tissue model of the `nonlinear` backend (module docs).
pub struct NonlinearTissue {
    geometry: TissueGeometry,
    reduced: ReducedStatics,
    params: NonlinearParams,
    /// Reduced coordinates (one per shape).
    q: Vec<f64>,
    /// The last reduced tangent taken (at q once [`NonlinearTissue::current_tangent`]
    /// has made sure).
    tangent: Tangent,
    /// Material points whose three shapes are in the basis.
    shaped: Vec<Support>,
    /// External point loads held between steps, and the same as nodal forces (N).
    point_loads: HeldLoads,
    nodal_loads: Vec<Vec3>,
    /// Each row's multiplier at the last step (N along its direction), the next
    /// step's start.
    multipliers: Vec<f64>,
    /// The enforced rows at the last step whose corrections were complete; `None`
    /// while the contact changes.
    settled: Option<Vec<LinearConstraint>>,
    /// The last step's rows (coefficients, value, unilateral) and whether the loads
    /// changed since: a settled step given the same rows again is already solved.
    last_rows: Vec<(LinearConstraint, bool)>,
    loads_changed: bool,
    /// Nodal forces of the last step's constraints and loads (node, N).
    loads: Vec<(usize, Vec3)>,
    /// An upper bound on the surface displacement at the last step (m), and what it
    /// is taken from.
    bound: f64,
    surface_bound: SurfaceBound,
    /// The last estimate of the basis's error.
    estimate: Option<Estimate>,
    /// The dynamic coordinates (the first of q) and their motion.
    dynamics: ReducedDynamics,
    /// The reduced model's revision at the last step's end
    /// ([`ReducedStatics::revision`]).
    solved_revision: u64,
    /// Whether each step solves the equilibrium of every coordinate, modes included
    /// ([`NonlinearTissue::hold_static`]).
    static_only: bool,
    /// The thread computing the corrections when the model steps in real time
    /// ([`NonlinearTissue::correct_in_background`]); `None`: each step corrects itself.
    background: Option<CorrectionThread>,
    /// What the correction thread's mirror of the basis holds: (restarts, shapes).
    mirrored: Option<(u64, usize)>,
    /// The basis's shapes when the correction in flight was posted.
    posted_shapes: usize,
    /// Whether the rows' or loads' points have moved since the last correction was
    /// posted (a contact moving across the surface).
    points_moved: bool,
    /// Whether the last step took more than [`SLOW_CHORDS`] Newton iterations.
    slow_chords: bool,
}

/// What a correction computed beside the steps did when it joined the model: whether
/// the model changed (a shape or the active elements), and the enforced constraints of
/// the state it corrected.
struct Joined {
    changed: bool,
    constraints: Vec<LinearConstraint>,
}

/// One scalar row of a step: the constraint it belongs to, its direction, its linear
/// constraint on the DOFs, and whether it may only push.
struct Row {
    constraint: usize,
    direction: Vec3,
    linear: LinearConstraint,
    unilateral: bool,
    enforced: bool,
}

impl NonlinearTissue {
    /// The runtime model of `statics` (whose mesh `geometry` is the rest shape of)
    /// with `modes` as its dynamic shapes (none: quasi-static): factorises K at rest
    /// once.
    pub fn new(
        geometry: TissueGeometry,
        statics: Arc<NonlinearStatics>,
        params: NonlinearParams,
        modes: &TissueModes,
    ) -> Result<Self, ModelError> {
        if statics.prescribed.len() != 3 * geometry.rest.len() {
            return Err(ModelError::Setup(format!(
                "the nonlinear FEM has {} DOFs, the mesh {} nodes",
                statics.prescribed.len(),
                geometry.rest.len()
            )));
        }
        if params.shapes < modes.shapes.len() + 4 {
            return Err(ModelError::Setup(format!(
                "a nonlinear basis of {} shapes cannot hold {} modes, a contact point's \
                 three shapes and the displacement",
                params.shapes,
                modes.shapes.len()
            )));
        }
        let n = geometry.rest.len();
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
            reduced,
            params,
            q: Vec::with_capacity(params.shapes),
            tangent: Tangent::default(),
            shaped: Vec::new(),
            point_loads: HeldLoads::new(params.max_rows),
            nodal_loads: vec![Vec3::zeros(); n],
            multipliers: Vec::new(),
            settled: None,
            last_rows: Vec::new(),
            loads_changed: false,
            loads: Vec::new(),
            bound: 0.0,
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
        })
    }

    /// Computes the nonlinear corrections on their own thread (`palpa-corrections`)
    /// from now on, for a server stepping in real time: a step no longer waits for them
    /// (about 20 ms each on the 5 mm block) but solves in the basis it has, and each
    /// correction joins the basis at the first step after it is ready. Held still, the
    /// model reaches the same tolerance as one correcting in step, some steps later.
    /// Replays and `palpa indent` correct in step, so their results do not depend on
    /// timing.
    pub fn correct_in_background(&mut self) -> Result<(), ModelError> {
        if self.background.is_none() {
            let thread = CorrectionThread::start(self.reduced.mirror())
                .map_err(|e| ModelError::Setup(e.to_string()))?;
            self.background = Some(thread);
            self.mirrored = None;
            self.tangent.patient = true;
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

    /// The reduced model (its basis and active elements).
    pub fn reduced(&self) -> &ReducedStatics {
        &self.reduced
    }

    /// Puts the three static shapes of each of `supports` into the basis, restarting
    /// it from the current displacement when it is full.
    fn shape_supports(&mut self, supports: &[Support]) -> Result<(), ModelError> {
        for attempt in 0..2 {
            match self.try_shape(supports) {
                Ok(()) => return Ok(()),
                Err(NonlinearError::BasisFull(_)) if attempt == 0 => self.restart(),
                Err(e) => return Err(solve_error(e)),
            }
        }
        Err(ModelError::Setup(format!(
            "{} contact points need more than the {} shapes of backend.nonlinear.shapes",
            supports.len(),
            self.params.shapes
        )))
    }

    /// Restarts the static shapes from the current displacement's static part
    /// ([`ReducedStatics::restart`]).
    fn restart(&mut self) {
        self.reduced
            .restart(&mut self.q, self.dynamics.coordinates());
        self.shaped.clear();
        self.settled = None;
    }

    fn try_shape(&mut self, supports: &[Support]) -> Result<(), NonlinearError> {
        for s in supports {
            if self.shaped.contains(s) {
                continue;
            }
            // Supports whose shapes were in the span already add none: a held, jittering
            // probe would list them without end.
            if self.shaped.len() == MAX_SHAPED {
                self.shaped.drain(..MAX_SHAPED / 2);
            }
            let forces: Vec<Vec<(usize, f64)>> = (0..3)
                .map(|axis| s.along(Vec3::ith(axis, 1.0)).collect())
                .collect();
            self.reduced.add_point_shapes(&forces)?;
            self.shaped.push(*s);
        }
        self.q.resize(self.reduced.shapes(), 0.0);
        Ok(())
    }

    /// Solves the step of length `h` (s) from the dynamic coordinates `start` under
    /// `rows` with an active set on the unilateral ones; commits q only on success and
    /// returns how the last solve ended.
    fn solve_rows(
        &mut self,
        rows: &mut [Row],
        start: &[f64],
        h: f64,
        same_constraints: bool,
    ) -> Result<StepEnd, ModelError> {
        // The stored potential is the start's under this step's constraints only if
        // they and the basis are the last step's.
        let conservative = same_constraints && self.reduced.revision() == self.solved_revision;
        self.q.resize(self.reduced.shapes(), 0.0);
        let mut q = self.q.clone();
        let mut reduced_row = vec![0.0; self.reduced.shapes()];
        let mut end = None;
        // Each pass flips one row; a bounded number of passes (as the dense solver).
        for _ in 0..=2 * rows.len() + 2 {
            let mut enforced: Vec<LinearConstraint> = rows
                .iter()
                .filter(|r| r.enforced)
                .map(|r| r.linear.clone())
                .collect();
            let mut step = self.dynamics.step(start, h, conservative);
            let dynamic = (!self.static_only).then_some(&mut step);
            let solved = self.reduced.solve_step(
                &mut q,
                &self.nodal_loads,
                &mut enforced,
                &NEWTON,
                Some(&mut self.tangent),
                dynamic,
            );
            // A failed step keeps the last q, which the tangent need not be at.
            self.tangent.at_solution &= solved.is_ok();
            end = Some(solved.map_err(solve_error)?);
            for (row, solved) in rows.iter_mut().filter(|r| r.enforced).zip(&enforced) {
                row.linear.multiplier = solved.multiplier;
            }
            // The pushing scale: the largest inward force.
            let scale = rows
                .iter()
                .map(|r| (-r.linear.multiplier).max(0.0))
                .fold(0.0, f64::max);
            let pulling = rows
                .iter()
                .enumerate()
                .filter(|(_, r)| r.enforced && r.unilateral)
                .filter(|(_, r)| r.linear.multiplier > PULLING * scale.max(1e-12))
                .max_by(|a, b| a.1.linear.multiplier.total_cmp(&b.1.linear.multiplier))
                .map(|(i, _)| i);
            if let Some(i) = pulling {
                rows[i].enforced = false;
                rows[i].linear.multiplier = 0.0;
                continue;
            }
            let mut passing = None;
            let mut worst = PASSING;
            for (i, r) in rows.iter().enumerate().filter(|(_, r)| !r.enforced) {
                self.reduced
                    .project(&r.linear.coefficients, &mut reduced_row);
                let at: f64 = reduced_row.iter().zip(&q).map(|(a, q)| a * q).sum();
                if at - r.linear.value > worst {
                    worst = at - r.linear.value;
                    passing = Some(i);
                }
            }
            match passing {
                Some(i) => rows[i].enforced = true,
                None => break,
            }
        }
        self.q = q;
        Ok(end.expect("the loop solves at least once"))
    }

    /// Joins the correction the background thread has finished, if any; restarts a
    /// full basis for it.
    fn join_background(&mut self) -> Result<Option<Joined>, ModelError> {
        let Some(thread) = self.background.as_mut() else {
            return Ok(None);
        };
        let Some(reply) = thread
            .take()
            .map_err(|e| ModelError::Solve(e.to_string()))?
        else {
            return Ok(None);
        };
        let correction = reply.correction.map_err(solve_error)?;
        let same_active = correction.active.as_slice() == self.reduced.active();
        let restarts = self.reduced.restarts();
        let before = self.reduced.shapes();
        let tolerance = self.params.tolerance;
        // While the basis is the one the thread's mirror had, the correction joins as
        // it joined there (the same Gram–Schmidt, done once, beside), and the forces
        // are summed over the cubature the thread offset to the full sum over that
        // basis. Otherwise the model joins the correction itself and sums over every
        // active element.
        let unchanged = reply.tangent.restarts == restarts && before == self.posted_shapes;
        let estimate = match reply.join.filter(|_| unchanged) {
            Some(join) => {
                self.reduced
                    .join_mirrored(&correction.active, join.shape, reply.quadrature)
                    .map_err(solve_error)?;
                // The mirror holds the joined shape already: the next job need not
                // carry it back.
                self.mirrored = Some((self.reduced.restarts(), self.reduced.shapes()));
                join.estimate
            }
            None => match self.reduced.join_correction(&correction, tolerance) {
                Err(NonlinearError::BasisFull(_)) => {
                    self.restart();
                    self.reduced.join_correction(&correction, tolerance)
                }
                other => other,
            }
            .map_err(solve_error)?,
        };
        // Whether the model itself changed: a shape, the active elements, a restart
        // (not the quadrature they are summed over).
        let changed =
            !same_active || self.reduced.shapes() != before || self.reduced.restarts() != restarts;
        self.estimate = Some(estimate);
        self.q.resize(self.reduced.shapes(), 0.0);
        // The thread's tangent, if the basis it was taken over is still the first
        // shapes of this one (no restart since). Its last shape is the correction as
        // the thread joined it; that is this join's shape unless the basis grew since
        // the job was posted.
        let mut tangent = reply.tangent;
        if tangent.restarts == self.reduced.restarts() {
            if before != self.posted_shapes {
                tangent.truncate(self.posted_shapes);
            }
            if tangent.shapes <= self.reduced.shapes() {
                self.tangent = Tangent {
                    revision: Some(self.reduced.revision()),
                    at_solution: false,
                    patient: true,
                    ..tangent
                };
            }
        }
        Ok(Some(Joined {
            changed,
            constraints: reply.constraints,
        }))
    }

    /// With the corrections on the background thread, after a step while the contact
    /// changes: settles the contact if the correction that joined this step was of
    /// these enforced constraints and changed nothing; otherwise hands this state to
    /// the thread if it is idle.
    fn correct_beside(
        &mut self,
        enforced: Vec<LinearConstraint>,
        joined: Option<Joined>,
    ) -> Result<(), ModelError> {
        if joined.is_some_and(|j| !j.changed && same_rows(&j.constraints, &enforced)) {
            self.settled = Some(enforced);
            return Ok(());
        }
        let Some(thread) = self.background.as_mut().filter(|t| t.idle()) else {
            return Ok(());
        };
        let basis = self.reduced.basis_update(self.mirrored);
        self.mirrored = Some((self.reduced.restarts(), self.reduced.shapes()));
        self.posted_shapes = self.reduced.shapes();
        // A cubature is worth training for a contact that stays where it is: a moving
        // one adds shapes most steps, after which the forces are summed over every
        // active element until a correction joins again, while training would take the
        // thread from the corrections the moving contact needs.
        let cubature = !std::mem::take(&mut self.points_moved);
        thread
            .post(CorrectionJob {
                q: self.q.clone(),
                cubature,
                tolerance: self.params.tolerance,
                loads: self.nodal_loads.clone(),
                constraints: enforced,
                active: self.reduced.active().to_vec(),
                basis,
            })
            .map_err(|e| ModelError::Solve(e.to_string()))
    }

    /// Writes the rows' forces per constraint into `forces` and keeps what the next
    /// step and the field need.
    fn finish(&mut self, constraints: &[PointConstraint], rows: &[Row], forces: &mut [Vec3]) {
        forces[..constraints.len()].fill(Vec3::zeros());
        self.multipliers.clear();
        for r in rows {
            self.multipliers.push(r.linear.multiplier);
            forces[r.constraint] += r.direction * r.linear.multiplier;
        }
        self.loads.clear();
        push_nodal_loads(constraints, forces, &mut self.loads);
        self.loads.extend_from_slice(self.point_loads.nodal());
        self.bound = self
            .surface_bound
            .at(&self.reduced, &self.geometry.surface_nodes, &self.q);
    }

    /// The reduced tangent at q over the whole basis, taken afresh unless the last one
    /// was taken there; with the corrections beside, the last one the correction thread
    /// took (a few steps old), bordered for the shapes joined since.
    fn current_tangent(&mut self) -> &[f64] {
        let r = self.reduced.shapes();
        self.q.resize(r, 0.0);
        let beside = self.tangent.patient
            && self.tangent.revision.is_some()
            && self.tangent.restarts == self.reduced.restarts();
        if beside {
            self.tangent.border(r);
        } else {
            self.reduced.refresh_tangent(&self.q, &mut self.tangent);
        }
        &self.tangent.values
    }

    /// Uᵀ of a unit force along each axis at `support`: r × 3.
    fn reduced_point(&self, support: &Support) -> DMatrix<f64> {
        let r = self.reduced.shapes();
        let mut out = DMatrix::zeros(r, 3);
        let mut column = vec![0.0; r];
        for axis in 0..3 {
            let force: Vec<(usize, f64)> = support.along(Vec3::ith(axis, 1.0)).collect();
            self.reduced.project(&force, &mut column);
            out.column_mut(axis).copy_from_slice(&column);
        }
        out
    }
}

/// Whether two sets of enforced rows are the same constraints: the same coefficients,
/// and targets within [`PASSING`].
fn same_rows(a: &[LinearConstraint], b: &[LinearConstraint]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(a, b)| a.coefficients == b.coefficients && (a.value - b.value).abs() <= PASSING)
}

/// A nonlinear solve's failure as the model interface reports it.
fn solve_error(e: NonlinearError) -> ModelError {
    ModelError::Solve(e.to_string())
}

impl TissueModel for NonlinearTissue {
    fn geometry(&self) -> &TissueGeometry {
        &self.geometry
    }

    fn advance(
        &mut self,
        dt: f64,
        constraints: &[PointConstraint],
        forces: &mut [Vec3],
    ) -> Result<(), ModelError> {
        validate_step(
            dt,
            constraints,
            forces,
            self.geometry.rest.len(),
            self.params.max_rows,
        )?;
        require_positions(constraints, "nonlinear model")?;
        // A correction computed beside the steps joins the basis before this step
        // solves in it.
        let joined = self.join_background()?;
        let supports: Vec<Support> = constraints
            .iter()
            .map(|c| c.support)
            .chain(self.point_loads.loads().iter().map(|l| l.support))
            .collect();
        self.shape_supports(&supports)?;
        let mut rows = Vec::new();
        for (i, c) in constraints.iter().enumerate() {
            let rest = c.rest_point(&self.geometry.rest);
            for k in 0..c.rows() {
                let d = c.direction(k);
                let coefficients = c.support.along(d).collect();
                let start = self.multipliers.get(rows.len()).copied().unwrap_or(0.0);
                let linear = LinearConstraint {
                    coefficients,
                    value: d.dot(&(c.target - rest)),
                    multiplier: start,
                };
                // A unilateral row starts enforced where it pushed at the last step or
                // its point is past its target now.
                let mut at = vec![0.0; self.reduced.shapes()];
                self.reduced.project(&linear.coefficients, &mut at);
                let now: f64 = at.iter().zip(&self.q).map(|(a, q)| a * q).sum();
                let enforced = !c.unilateral || start < 0.0 || now > linear.value;
                rows.push(Row {
                    constraint: i,
                    direction: d,
                    linear,
                    unilateral: c.unilateral,
                    enforced,
                });
            }
        }
        let same_points = rows.len() == self.last_rows.len()
            && rows
                .iter()
                .zip(&self.last_rows)
                .all(|(r, (last, _))| r.linear.coefficients == last.coefficients);
        // A cubature is trained on multiples of a state: a contact deepening or held
        // where it is. Rows or loads moving across the surface are summed over every
        // active element.
        if !same_points || self.loads_changed {
            self.reduced.forget_cubature();
            self.points_moved = true;
        }
        // A held state is solved again only while it moves.
        let at_rest = self.dynamics.at_rest();
        let same_constraints = !self.loads_changed
            && same_points
            && rows
                .iter()
                .zip(&self.last_rows)
                .all(|(r, (last, unilateral))| {
                    r.unilateral == *unilateral && r.linear.value == last.value
                });
        let repeated = self.settled.is_some()
            && at_rest
            && same_constraints
            && self.reduced.revision() == self.solved_revision;
        self.last_rows.clear();
        self.last_rows
            .extend(rows.iter().map(|r| (r.linear.clone(), r.unilateral)));
        self.loads_changed = false;
        if repeated {
            // The same equilibrium as the last step's, solved and corrected already.
            self.dynamics.stop();
            for (r, &m) in rows.iter_mut().zip(&self.multipliers) {
                r.linear.multiplier = m;
            }
            self.finish(constraints, &rows, forces);
            return Ok(());
        }
        let k = self.dynamics.coordinates();
        let start = self.q[..k].to_vec();
        if self.slow_chords && self.reduced.summed_over_cubature() {
            self.reduced.refresh_tangent(&self.q, &mut self.tangent);
        }
        let mut end = self.solve_rows(&mut rows, &start, dt, same_constraints)?;
        self.slow_chords = end.report.residuals.len() > SLOW_CHORDS;
        let enforced = |rows: &[Row]| -> Vec<LinearConstraint> {
            rows.iter()
                .filter(|r| r.enforced)
                .map(|r| r.linear.clone())
                .collect()
        };
        let now = enforced(&rows);
        let unchanged = self.settled.as_ref().is_some_and(|s| same_rows(s, &now));
        if !unchanged && self.background.is_some() {
            self.settled = None;
            self.correct_beside(now, joined)?;
        } else if !unchanged {
            self.settled = None;
            for _ in 0..self.params.corrections_per_step {
                let revision = self.reduced.revision();
                let estimate = match self.reduced.enrich(
                    &self.q,
                    &self.nodal_loads,
                    &enforced(&rows),
                    self.params.tolerance,
                ) {
                    Err(NonlinearError::BasisFull(_)) => {
                        self.restart();
                        self.shape_supports(&supports)?;
                        end = self.solve_rows(&mut rows, &start, dt, same_constraints)?;
                        continue;
                    }
                    other => other.map_err(solve_error)?,
                };
                self.estimate = Some(estimate);
                // Neither a shape joined nor the active elements changed: the state
                // solved is the model's own.
                if self.reduced.revision() == revision {
                    self.settled = Some(enforced(&rows));
                    break;
                }
                end = self.solve_rows(&mut rows, &start, dt, same_constraints)?;
            }
        }
        if self.static_only {
            self.dynamics.set_potential(end.potential, &end.gradient);
        } else {
            self.dynamics
                .finish(&start, &self.q[..k], dt, end.potential, &end.gradient);
        }
        self.solved_revision = self.reduced.revision();
        self.finish(constraints, &rows, forces);
        Ok(())
    }

    fn set_loads(&mut self, loads: &[PointLoad]) -> Result<(), ModelError> {
        let before = self.point_loads.loads().to_vec();
        self.point_loads.set(loads, self.geometry.rest.len())?;
        self.loads_changed |= self.point_loads.loads() != before.as_slice();
        self.nodal_loads.fill(Vec3::zeros());
        for &(v, f) in self.point_loads.nodal() {
            self.nodal_loads[v] += f;
        }
        Ok(())
    }

    fn constraint_capacity(&self) -> usize {
        self.params.max_rows
    }

    /// The reduced tangent compliance Aₐᵀ T⁻¹ A_b, A = Uᵀ (the point's unit forces):
    /// the points' shapes join the basis first, so at rest it is K⁻¹'s block exactly.
    fn compliance_between(&mut self, a: &Support, b: &Support) -> Result<Mat3, ModelError> {
        self.shape_supports(&[*a, *b])?;
        let r = self.reduced.shapes();
        let t = DMatrix::from_row_slice(r, r, self.current_tangent());
        let (pa, pb) = (self.reduced_point(a), self.reduced_point(b));
        let x = match t.clone().cholesky() {
            Some(llt) => llt.solve(&pb),
            None => t.lu().solve(&pb).ok_or_else(|| {
                ModelError::Solve("the reduced tangent is singular (a buckled state)".into())
            })?,
        };
        let c = pa.transpose() * x;
        Ok(Mat3::from_fn(|i, j| c[(i, j)]))
    }

    fn displacement_bound(&self) -> f64 {
        self.bound
    }

    fn displacements(&mut self, nodes: &[usize], out: &mut [Vec3]) {
        for (o, &v) in out.iter_mut().zip(nodes) {
            *o = self.reduced.node_displacement(v, &self.q);
        }
    }

    fn reset(&mut self) {
        if let Some(thread) = &mut self.background {
            thread.discard();
        }
        self.q.fill(0.0);
        self.dynamics.reset();
        self.solved_revision = u64::MAX;
        self.tangent = Tangent {
            patient: self.background.is_some(),
            ..Tangent::default()
        };
        self.multipliers.clear();
        self.settled = None;
        self.last_rows.clear();
        self.point_loads.clear();
        self.nodal_loads.fill(Vec3::zeros());
        self.loads.clear();
        self.bound = 0.0;
        self.surface_bound = SurfaceBound::default();
    }
}
