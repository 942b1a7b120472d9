//! One model step of the runtime nonlinear model: join what the correction thread
//! finished, lay out the step's rows, solve (recovering from a solve that fails,
//! `recovery.rs`), correct the basis, and report the rows' forces.

use std::time::{Duration, Instant};

use super::health::{Degradation, TRACE};
use super::model::{solve_error, NonlinearTissue};
use super::recovery::Outcome;
use super::rows::StepRows;
use crate::nonlinear::{LinearConstraint, NonlinearError};
use crate::tissue::{push_nodal_loads, ModelError, PointConstraint};
use crate::Vec3;

/// How far (m) a released row's point may pass its target before it is enforced, and
/// how close two targets must be to count as the same.
const PASSING: f64 = 1e-9;

/// Newton iterations of a step beyond which the next step, while the forces are summed
/// over a cubature, starts from a tangent taken afresh at its start state: the
/// correction thread's tangent is of a state some steps old when it joins.
const SLOW_CHORDS: usize = 8;

/// The share of the model period a step in real time may spend solving before it ends
/// on a frozen tangent: the rest is the contact pipeline's and the visual snapshot's.
const SOLVE_BUDGET: f64 = 0.55;

impl NonlinearTissue {
    /// The step of `dt` (s) under `constraints`, their forces into `forces`
    /// ([`crate::tissue::TissueModel::advance`], inputs checked).
    pub(super) fn step(
        &mut self,
        dt: f64,
        constraints: &[PointConstraint],
        forces: &mut [Vec3],
    ) -> Result<(), ModelError> {
        let deadline = self
            .background
            .is_some()
            .then(|| Instant::now() + Duration::from_secs_f64(SOLVE_BUDGET * dt));
        // A correction computed beside the steps joins the basis before this step
        // solves in it.
        let joined = self.join_background()?;
        self.prepare_columns(constraints, dt)?;
        let mut rows = self.step_rows(constraints)?;
        let same_constraints = self.compare_rows(&rows);
        let repeated = self.settled.is_some()
            && self.converged
            && self.dynamics.at_rest()
            && same_constraints
            && self.reduced.revision() == self.solved_revision;
        if repeated {
            // The same equilibrium as the last step's, solved and corrected already.
            self.dynamics.stop();
            rows.rows.multipliers.copy_from_slice(&self.multipliers);
            self.finish(constraints, &rows, forces);
            return Ok(());
        }
        let k = self.dynamics.coordinates();
        let start = self.q[..k].to_vec();
        if self.slow_chords && self.reduced.summed_over_cubature() {
            self.reduced.refresh_tangent(&self.q, &mut self.tangent);
        }
        let mut outcome =
            self.solve_recovering(&mut rows, &start, dt, same_constraints, deadline)?;
        self.converged = matches!(&outcome, Outcome::Solved(end) if !end.degraded);
        if let Outcome::Solved(end) = &outcome {
            self.slow_chords = end.report.residuals.len() > SLOW_CHORDS;
            if end.degraded {
                self.health.count(Degradation::FrozenTangent, None);
            }
            let now = rows.enforced();
            let unchanged =
                self.converged && self.settled.as_ref().is_some_and(|s| same_rows(s, &now));
            if !unchanged {
                self.settled = None;
                if self.background.is_some() {
                    self.correct_beside(now, joined)?;
                } else {
                    outcome = self.correct_in_step(constraints, &mut rows, &start, dt, outcome)?;
                }
            }
        }
        match &outcome {
            Outcome::Solved(end) if !end.degraded => self.remember_good(&rows),
            _ => self.limit_degraded(&mut rows),
        }
        if tracing::enabled!(target: TRACE, tracing::Level::DEBUG) {
            self.trace(&outcome, &rows);
        }
        match outcome {
            Outcome::Solved(end) => {
                if self.static_only {
                    self.dynamics.set_potential(end.potential, &end.gradient);
                } else {
                    self.dynamics
                        .finish(&start, &self.q[..k], dt, end.potential, &end.gradient);
                }
                self.health.recovered();
            }
            Outcome::Held => self.dynamics.stop(),
        }
        self.solved_revision = self.reduced.revision();
        self.finish(constraints, &rows, forces);
        Ok(())
    }

    /// One debug line on the step just solved: how it ended, its rows' targets and
    /// forces, the basis, and how near inversion its state is.
    fn trace(&self, outcome: &Outcome, rows: &StepRows) {
        let (kind, residuals) = match outcome {
            Outcome::Solved(end) if end.degraded => ("frozen", end.report.residuals.clone()),
            Outcome::Solved(end) => ("solved", end.report.residuals.clone()),
            Outcome::Held => ("held", Vec::new()),
        };
        let mut q = self.q.clone();
        q.resize(self.reduced.shapes(), 0.0);
        let (j, element) = self.reduced.min_det(&q);
        let norm = q.iter().map(|x| x * x).sum::<f64>().sqrt();
        tracing::debug!(
            target: TRACE,
            "step {kind}: targets {:?} forces {:?} unilateral {:?}; residuals [{}]; \
             shapes {} restarts {} revision {} quadrature {} cubature {}; |q| {norm:.3e}; \
             min det F {j:.4} (element {element}); held in a row {}",
            rows.rows.values,
            rows.rows.multipliers,
            rows.rows.unilateral,
            residuals
                .iter()
                .map(|r| format!("{r:.2e}"))
                .collect::<Vec<_>>()
                .join(" "),
            self.reduced.shapes(),
            self.reduced.restarts(),
            self.reduced.revision(),
            self.reduced.quadrature_elements(),
            self.reduced.summed_over_cubature(),
            self.health.held_in_a_row,
        );
    }

    /// Caches the K⁻¹ columns of the step's points (and the loads'), and completes
    /// columns: in lock-step for `dt` (s) of simulated time, in real time by feeding the
    /// columns worker (incomplete columns cost every step path products).
    fn prepare_columns(
        &mut self,
        constraints: &[PointConstraint],
        dt: f64,
    ) -> Result<(), ModelError> {
        let columns = self.residual.columns();
        columns.cache(
            constraints
                .iter()
                .flat_map(|c| c.support.iter())
                .filter(|&(_, w)| w != 0.0)
                .map(|(v, _)| v),
        )?;
        self.point_loads.cache_columns(columns)?;
        columns.advance_completion(dt)?;
        Ok(())
    }

    /// Remembers the step's rows; returns whether they are the last step's (the same
    /// points, targets and kinds, the loads unchanged).
    fn compare_rows(&mut self, rows: &StepRows) -> bool {
        let meta = &rows.meta;
        let same_points = meta.len() == self.last_rows.len()
            && meta
                .iter()
                .zip(&self.last_rows)
                .all(|(r, (last, _))| r.linear.coefficients == last.coefficients);
        if !same_points || self.loads_changed {
            self.points_moved = true;
        }
        let same = !self.loads_changed
            && same_points
            && meta
                .iter()
                .zip(&rows.rows.unilateral)
                .zip(&self.last_rows)
                .all(|((r, &unilateral), (last, was))| {
                    unilateral == *was && r.linear.value == last.value
                });
        self.last_rows.clear();
        self.last_rows.extend(
            meta.iter()
                .zip(&rows.rows.unilateral)
                .map(|(r, &u)| (r.linear.clone(), u)),
        );
        self.loads_changed = false;
        same
    }

    /// Corrections in step, as replays and `palpa indent` run: at most
    /// `corrections_per_step` of them, solving again after each that changes the
    /// model; the contact is settled once one changes nothing.
    fn correct_in_step(
        &mut self,
        constraints: &[PointConstraint],
        rows: &mut StepRows,
        start: &[f64],
        dt: f64,
        mut outcome: Outcome,
    ) -> Result<Outcome, ModelError> {
        let mut corrections = 0;
        while corrections < self.params.corrections_per_step {
            let now = rows.enforced();
            let revision = self.reduced.revision();
            let estimate =
                match self
                    .reduced
                    .enrich(&self.q, &self.nodal_loads, &now, self.params.tolerance)
                {
                    Err(NonlinearError::BasisFull(_)) => {
                        self.recycle_in_place();
                        continue;
                    }
                    other => other.map_err(solve_error)?,
                };
            corrections += 1;
            self.estimate = Some(estimate);
            // Neither a shape joined nor the active terms changed: the state solved is
            // the model's own.
            if self.reduced.revision() == revision {
                self.settled = Some(now);
                break;
            }
            self.q.resize(self.reduced.shapes(), 0.0);
            self.internal.resize(self.reduced.shapes(), 0.0);
            *rows = self.step_rows(constraints)?;
            outcome = self.solve_recovering(rows, start, dt, false, None)?;
            if matches!(outcome, Outcome::Held) {
                break;
            }
        }
        Ok(outcome)
    }

    /// Frees room in a full basis on the model thread (in step): the dynamic shapes and
    /// the newest half of the others stay, the rest become the state's own shape.
    pub(super) fn recycle_in_place(&mut self) {
        let keep = self.dynamics.coordinates();
        let newest = (self.reduced.capacity() - keep) / 2;
        let recycled = self.reduced.recycle(&mut self.q, keep, newest);
        self.internal = recycled.project(&self.internal);
        if self.tangent.revision.is_some() {
            let values = self
                .tangent
                .transformed(&recycled.transform, recycled.after);
            self.tangent.values = values;
            self.tangent.shapes = recycled.after;
            self.tangent.restarts = self.reduced.restarts();
            self.tangent.revision = Some(self.reduced.revision());
        }
        self.settled = None;
    }

    /// Writes the rows' forces per constraint into `forces` and keeps what the next
    /// step and the field need.
    pub(super) fn finish(
        &mut self,
        constraints: &[PointConstraint],
        rows: &StepRows,
        forces: &mut [Vec3],
    ) {
        forces[..constraints.len()].fill(Vec3::zeros());
        self.multipliers.clear();
        for (meta, &l) in rows.meta.iter().zip(&rows.rows.multipliers) {
            self.multipliers.push(l);
            forces[meta.constraint] += meta.direction * l;
        }
        self.loads.clear();
        push_nodal_loads(constraints, forces, &mut self.loads);
        self.loads.extend_from_slice(self.point_loads.nodal());
        let pairs: Vec<(usize, f64)> = self
            .loads
            .iter()
            .flat_map(|&(v, f)| (0..3).map(move |c| (3 * v + c, f[c])))
            .collect();
        self.reduced_load.resize(self.reduced.shapes(), 0.0);
        self.reduced.project(&pairs, &mut self.reduced_load);
        let surface = self
            .surface_bound
            .at(&self.reduced, &self.geometry.surface_nodes, &self.q);
        let basis_part = self.surface_bound.peak_sum(&self.reduced_load);
        self.bound_parts = (surface, basis_part);
        self.bound = surface + self.residual_bound(basis_part);
    }

    /// A bound on the residual field of the last step's loads at any node (m), its
    /// basis part (Uᵀ of the loads over the surface) `basis_part`.
    fn residual_bound(&self, basis_part: f64) -> f64 {
        if self.loads.is_empty() {
            return 0.0;
        }
        self.residual.field_bound(&self.loads, basis_part)
    }
}

/// Whether two sets of enforced rows are the same constraints: the same coefficients,
/// and targets within [`PASSING`].
pub(super) fn same_rows(a: &[LinearConstraint], b: &[LinearConstraint]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(a, b)| a.coefficients == b.coefficients && (a.value - b.value).abs() <= PASSING)
}
