//! A step's solve, and what a step does when it fails: a probe that jumped deep (a
//! brisk press, a viewer's drag) is solved through intermediate targets from the last
//! good state; a step no solve brings to convergence keeps the last good state and gives
//! the forces its tangent predicts for the new targets, so the hand inside the tissue
//! keeps the force its local stiffness says, and the next step tries again from the
//! last good state (recovery is automatic once a step converges).

use std::time::Instant;

use super::health::{Degradation, TRACE};
use super::model::NonlinearTissue;
use super::rows::StepRows;
use crate::nonlinear::reduced::{SolveWith, StepEnd};
use crate::nonlinear::{NewtonOptions, NonlinearError};
use crate::tissue::ModelError;

/// The Newton tolerance of a step (relative to the reduced applied forces) and its
/// iteration limit.
const NEWTON: NewtonOptions = NewtonOptions {
    relative: 1e-9,
    max_iterations: 30,
};

/// Halvings of a failed step's target change tried: up to 2⁴ intermediate targets.
const SUB_STEP_LEVELS: u32 = 4;

/// How a step's solve ended.
pub(super) enum Outcome {
    /// Converged (or ended on its frozen tangent at the deadline): q holds the state.
    Solved(StepEnd),
    /// No solve converged: q is the last good state, the rows' multipliers the
    /// frozen-tangent prediction.
    Held,
}

impl NonlinearTissue {
    /// Solves the step's rows from the dynamic coordinates `start` over `h` (s);
    /// `same_constraints` when the rows and loads are the last step's. On a failed
    /// solve, sub-steps the targets' change, and failing that holds the last good state
    /// (module docs), counting either.
    pub(super) fn solve_recovering(
        &mut self,
        rows: &mut StepRows,
        start: &[f64],
        h: f64,
        same_constraints: bool,
        deadline: Option<Instant>,
    ) -> Result<Outcome, ModelError> {
        let conservative = same_constraints && self.reduced.revision() == self.solved_revision;
        let warm = rows.rows.multipliers.clone();
        let failure =
            match self.solve_once(rows, start, h, conservative, deadline, !self.static_only) {
                Ok(end) => return Ok(Outcome::Solved(end)),
                Err(e) => e,
            };
        tracing::debug!(target: TRACE, "step failed: {failure}");
        rows.rows.multipliers.copy_from_slice(&warm);
        let k = self.dynamics.coordinates();
        // A start outside the laws' proper range (an element below the floor of det F,
        // as the linear law leaves a deep point press before its elements turn
        // large-strain) is one no Newton step improves: the static part is scaled back
        // into range first, and the sub-steps start from there.
        let out_of_range = matches!(failure, NonlinearError::NonFinite(_)) || !self.in_range();
        if out_of_range && self.retreat(k) {
            let dynamic = !self.static_only;
            let retried = self.solve_once(rows, start, h, false, deadline, dynamic);
            self.health
                .count(Degradation::Restarted, Some(&failure.to_string()));
            match retried {
                Ok(end) => return Ok(Outcome::Solved(end)),
                Err(_) => rows.rows.multipliers.copy_from_slice(&warm),
            }
        }
        if self.reduced.summed_over_cubature() {
            // A cubature fitted where the tissue is no longer (its offset taken at a
            // state far from this one) can leave no state Newton's method reaches: the
            // forces are summed over every active term again until the next correction.
            self.reduced.forget_cubature();
            self.q.resize(self.reduced.shapes(), 0.0);
            self.reduced.refresh_tangent(&self.q, &mut self.tangent);
            match self.solve_once(rows, start, h, false, deadline, !self.static_only) {
                Ok(end) => return Ok(Outcome::Solved(end)),
                Err(e) => {
                    tracing::debug!(target: TRACE, "over every active term too: {e}");
                    rows.rows.multipliers.copy_from_slice(&warm);
                }
            }
        }
        if let Some(end) = self.sub_step(rows, deadline) {
            self.health
                .count(Degradation::SubStepped, Some(&failure.to_string()));
            return Ok(Outcome::Solved(end));
        }
        rows.rows.multipliers.copy_from_slice(&warm);
        // A state held the step before is no start either (a press deep into a stiffening
        // law can leave one no Newton step improves): each step held in a row scales it
        // back toward the rest shape, from which a solve starts, so the tissue recovers
        // within a few steps once the probe eases.
        if self.health.held_in_a_row > 0 {
            self.retreat(0);
        }
        self.hold_last_state(rows);
        self.health
            .count(Degradation::HeldLastState, Some(&failure.to_string()));
        Ok(Outcome::Held)
    }

    /// Scales the coordinates of q from index `from` on back (halves, then zero: the
    /// rest shape) until every energy is finite and no element is below the floor of
    /// det F ([`Self::in_range`]; zero needs only the former); false (q unchanged) if
    /// none is.
    /// Without it a state whose elements inverted under laws activated since is held
    /// for good.
    fn retreat(&mut self, from: usize) -> bool {
        let r = self.reduced.shapes();
        self.q.resize(r, 0.0);
        let before = self.q.clone();
        for s in [0.5, 0.25, 0.125, 0.0] {
            for (q, b) in self.q[from..r].iter_mut().zip(&before[from..r]) {
                *q = s * b;
            }
            if s > 0.0 && !self.in_range() {
                continue;
            }
            if let Some(internal) = self.reduced.internal_if_finite(&self.q) {
                tracing::debug!(target: TRACE, "retreat: q[{from}..] scaled by {s}");
                self.internal = internal;
                self.tangent.at_solution = false;
                return true;
            }
        }
        self.q = before;
        false
    }

    /// Whether q is in the laws' proper range
    /// ([`crate::nonlinear::ReducedStatics::in_range`]).
    fn in_range(&self) -> bool {
        let mut q = self.q.clone();
        q.resize(self.reduced.shapes(), 0.0);
        self.reduced.in_range(&q)
    }

    /// One solve from the last good q; commits q (and the forces there) only on success.
    fn solve_once(
        &mut self,
        rows: &mut StepRows,
        start: &[f64],
        h: f64,
        conservative: bool,
        deadline: Option<Instant>,
        dynamic: bool,
    ) -> Result<StepEnd, NonlinearError> {
        let r = self.reduced.shapes();
        self.q.resize(r, 0.0);
        let mut q = self.q.clone();
        let b = self.reduced.reduced_loads(&self.nodal_loads)?;
        let mut step = self.dynamics.step(start, h, conservative);
        let with = SolveWith {
            tangent: Some(&mut self.tangent),
            dynamic: dynamic.then_some(&mut step),
            deadline,
        };
        let solved = self
            .reduced
            .solve_rows(&mut q, &b, &mut rows.rows, &NEWTON, with);
        // A failed step keeps the last q, which the tangent need not be at.
        self.tangent.at_solution &= solved.is_ok();
        let end = solved?;
        self.q = q;
        self.internal.clone_from(&end.internal);
        Ok(end)
    }

    /// The rows' targets reached in 2, 4, … equal parts from where their points are at
    /// the last good state, each part a static solve from the last; the first division
    /// that converges all the way (before `deadline`) is the step's.
    fn sub_step(&mut self, rows: &mut StepRows, deadline: Option<Instant>) -> Option<StepEnd> {
        let r = self.reduced.shapes();
        let good = self.q.clone();
        let good_internal = self.internal.clone();
        let targets = rows.rows.values.clone();
        let warm = rows.rows.multipliers.clone();
        let from: Vec<f64> = (0..targets.len())
            .map(|i| rows.rows.position(i, &good[..r], &warm))
            .collect();
        for level in 1..=SUB_STEP_LEVELS {
            let parts = 1usize << level;
            rows.rows.multipliers.copy_from_slice(&warm);
            let mut last = None;
            for part in 1..=parts {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    break;
                }
                let s = part as f64 / parts as f64;
                for (v, (to, from)) in rows.rows.values.iter_mut().zip(targets.iter().zip(&from)) {
                    *v = from + s * (to - from);
                }
                match self.solve_once(rows, &[], 0.0, false, deadline, false) {
                    Ok(end) if part == parts => last = Some(end),
                    Ok(_) => {}
                    Err(e) => {
                        tracing::debug!(target: TRACE, "sub-step {part}/{parts} failed: {e}");
                        break;
                    }
                }
            }
            rows.rows.values.copy_from_slice(&targets);
            if last.is_some() {
                return last;
            }
            self.q.clone_from(&good);
            self.internal.clone_from(&good_internal);
        }
        None
    }

    /// Remembers the step that just converged with `rows` as the last good one.
    pub(super) fn remember_good(&mut self, rows: &StepRows) {
        self.last_good.q.clone_from(&self.q);
        self.last_good.force = rows.rows.multipliers.iter().map(|l| l.abs()).sum();
        self.last_good.restarts = self.reduced.restarts();
    }

    /// Limits a degraded step's multipliers in `rows` to what the last good state and
    /// the step's tangent allow (`reduced/allowance.rs`), counting it when they pushed
    /// harder.
    pub(super) fn limit_degraded(&mut self, rows: &mut StepRows) {
        if rows.rows.is_empty() {
            return;
        }
        self.usable_tangent();
        let r = self.reduced.shapes();
        let good = if self.last_good.restarts == self.reduced.restarts() {
            &self.last_good.q[..self.last_good.q.len().min(r)]
        } else {
            &[]
        };
        let allowance = self.reduced.degraded_allowance(
            &self.tangent.values,
            &rows.rows,
            good,
            self.last_good.force,
        );
        if rows.rows.limit_pushing(allowance) < 1.0 {
            self.health.count(Degradation::ForceLimited, None);
        }
    }

    /// Makes the last tangent one over the whole basis: bordered for the shapes joined
    /// since, or taken afresh at q if it is of another basis or none was taken.
    fn usable_tangent(&mut self) {
        let r = self.reduced.shapes();
        self.q.resize(r, 0.0);
        let usable = self.tangent.revision.is_some()
            && self.tangent.restarts == self.reduced.restarts()
            && self.tangent.shapes <= r;
        if usable {
            self.tangent.border(r);
        } else {
            self.reduced.refresh_tangent(&self.q, &mut self.tangent);
        }
    }

    /// Keeps the last good state and sets the rows' multipliers to what its tangent
    /// predicts for the new targets (a frozen-tangent step not taken).
    fn hold_last_state(&mut self, rows: &mut StepRows) {
        let r = self.reduced.shapes();
        self.internal.resize(r, 0.0);
        self.usable_tangent();
        let b = self
            .reduced
            .reduced_loads(&self.nodal_loads)
            .unwrap_or_else(|_| vec![0.0; r]);
        let unloaded: Vec<f64> = (0..r).map(|j| self.internal[j] - b[j]).collect();
        self.reduced
            .frozen_step(&self.q, &unloaded, &self.tangent.values, &mut rows.rows);
        self.settled = None;
    }
}
