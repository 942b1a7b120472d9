//! The model thread's side of the correction thread (`background.rs`): joining a
//! finished correction (its shape, active terms, cubature and tangent, or the basis
//! the thread recycled) and handing over the next state to correct.

use super::model::{solve_error, NonlinearTissue};
use super::step::same_rows;
use crate::nonlinear::background::{CorrectionJob, RecycledBasis};
use crate::nonlinear::reduced::Tangent;
use crate::nonlinear::{LinearConstraint, NonlinearError};
use crate::tissue::ModelError;

/// What a correction computed beside the steps did when it joined the model: whether
/// the model changed (a shape or the active terms), and the enforced constraints of the
/// state it corrected.
pub(super) struct Joined {
    changed: bool,
    constraints: Vec<LinearConstraint>,
}

/// Shapes below the capacity at which the correction thread recycles its basis: room
/// for the corrections joining while the recycled basis travels to the model thread.
const RECYCLE_MARGIN: usize = 4;

impl NonlinearTissue {
    /// Joins the correction the background thread has finished, if any.
    pub(super) fn join_background(&mut self) -> Result<Option<Joined>, ModelError> {
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
        let same_active = correction.active == *self.reduced.active();
        let restarts = self.reduced.restarts();
        let before = self.reduced.shapes();
        // While the basis is the one the thread's mirror had, the correction joins as
        // it joined there, and the forces are summed over the cubature the thread
        // offset to the full sum over that basis. Otherwise the model joins the
        // correction itself and sums over every active term.
        let unchanged =
            self.mirrored == Some((restarts, self.posted_shapes)) && before == self.posted_shapes;
        let estimate = match reply.join.filter(|_| unchanged) {
            Some(join) => {
                self.reduced
                    .join_mirrored(&correction.active, join.shapes, None)
                    .map_err(solve_error)?;
                if let Some(recycled) = reply.recycled {
                    self.adopt_recycled(recycled);
                }
                if let Some(quadrature) = reply.quadrature {
                    self.reduced
                        .join_mirrored(&correction.active, Vec::new(), Some(quadrature))
                        .map_err(solve_error)?;
                }
                // The mirror holds the joined shape already.
                self.mirrored = Some((self.reduced.restarts(), self.reduced.shapes()));
                join.estimate
            }
            None => {
                self.mirrored = None;
                match self
                    .reduced
                    .join_correction(&correction, self.params.tolerance)
                {
                    Err(NonlinearError::BasisFull(_)) => {
                        self.recycle_in_place();
                        self.reduced
                            .join_correction(&correction, self.params.tolerance)
                    }
                    other => other,
                }
                .map_err(solve_error)?
            }
        };
        // Whether the model itself changed: a shape, the active terms, a restart (not
        // the quadrature they are summed over).
        let changed =
            !same_active || self.reduced.shapes() != before || self.reduced.restarts() != restarts;
        self.estimate = Some(estimate);
        let r = self.reduced.shapes();
        self.q.resize(r, 0.0);
        self.internal.resize(r, 0.0);
        self.take_thread_tangent(reply.tangent, unchanged, before);
        Ok(Some(Joined {
            changed,
            constraints: reply.constraints,
        }))
    }

    /// Takes the basis the thread recycled: its tables as they are, the state and the
    /// forces in its coordinates (the joined shape's coordinate 0 before).
    fn adopt_recycled(&mut self, recycled: RecycledBasis) {
        let r = self.reduced.shapes();
        self.q.resize(r, 0.0);
        self.internal.resize(r, 0.0);
        let RecycledBasis {
            recycled,
            tables,
            restarts,
        } = recycled;
        self.q = recycled.project(&self.q);
        self.internal = recycled.project(&self.internal);
        self.reduced.adopt(tables, recycled.after, restarts);
        self.reduced.forget_cubature();
        self.settled = None;
    }

    /// The thread's tangent, if the basis it was taken over is still the first shapes
    /// of this one (no restart since).
    fn take_thread_tangent(&mut self, mut tangent: Tangent, unchanged: bool, before: usize) {
        if tangent.restarts != self.reduced.restarts() {
            return;
        }
        if !unchanged && before != self.posted_shapes {
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

    /// With the corrections on the background thread, after a step while the contact
    /// changes: settles the contact if the correction that joined this step was of
    /// these enforced constraints and changed nothing; otherwise hands this state to
    /// the thread if it is idle.
    pub(super) fn correct_beside(
        &mut self,
        enforced: Vec<LinearConstraint>,
        joined: Option<Joined>,
    ) -> Result<(), ModelError> {
        let solved = self.converged;
        if solved && joined.is_some_and(|j| !j.changed && same_rows(&j.constraints, &enforced)) {
            self.settled = Some(enforced);
            return Ok(());
        }
        let Some(thread) = self.background.as_mut().filter(|t| t.idle()) else {
            return Ok(());
        };
        let basis = self.reduced.basis_update(self.mirrored);
        self.mirrored = Some((self.reduced.restarts(), self.reduced.shapes()));
        self.posted_shapes = self.reduced.shapes();
        let keep = self.dynamics.coordinates();
        let capacity = self.reduced.capacity();
        let recycle = (
            capacity.saturating_sub(RECYCLE_MARGIN),
            keep,
            (capacity - keep) / 2,
        );
        self.points_moved = false;
        thread
            .post(CorrectionJob {
                q: self.q.clone(),
                cubature: true,
                tolerance: self.params.tolerance,
                loads: self.nodal_loads.clone(),
                constraints: enforced,
                active: self.reduced.active().clone(),
                basis,
                recycle,
            })
            .map_err(|e| ModelError::Solve(e.to_string()))
    }
}
