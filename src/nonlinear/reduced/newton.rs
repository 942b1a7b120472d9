//! Newton's method on the reduced equations Uᵀ(f_int(Uq) − f_ext) = Σᵢ λᵢaᵢ under rows
//! ([`ReducedRows`]): each iteration linearises the forces at q (tangent J) and solves
//! the rows over that linearisation as a complementarity problem, S λ = v − A q − o +
//! A J⁻¹(g − b) with S = A J⁻¹ Aᵀ + R, by the dense active-set solver the linear
//! backends use ([`DenseConstraintSolver`]); the step J⁻¹(Aᵀλ − (g − b)) then goes
//! through a backtracking line search on the reduced energy. So a solve settles which
//! rows push and the large-strain state together (a sequential quadratic program).
//!
//! A solve may keep its tangent while it converges (chord iterations) and start from
//! the last solve's; with a deadline it ends when the deadline passes with the state and
//! multipliers of its last linearised solve (a frozen-tangent step, reported).

use std::time::Instant;

use nalgebra::{DMatrix, DVector};

use super::forces::Work;
use super::model::ReducedStatics;
use super::rows::ReducedRows;
use super::tangent::{SolveTangent, Tangent};
use crate::nonlinear::dynamics::DynamicStep;
use crate::nonlinear::line_search::{backtrack, Trial};
use crate::nonlinear::{NewtonOptions, NewtonReport, NonlinearError};
use crate::tissue::DenseConstraintSolver;
use crate::Vec3;

/// Most times one dynamic step is solved again for its discrete-gradient correction
/// (`dynamics.rs`): the correction is O(Δ²) and its change from one solve to the next
/// smaller by another O(Δ), so one or two suffice; near rest, where it is round-off,
/// more would only chase the round-off.
const MAX_CORRECTION_SOLVES: usize = 3;

/// What a reduced solve ends with.
pub(in crate::nonlinear) struct StepEnd {
    /// How Newton's method went.
    pub report: NewtonReport,
    /// Π at the solution (J).
    pub potential: f64,
    /// ∇Π − Aᵀλ there, per coordinate (√J): zero on the static coordinates, ∇G on the
    /// dynamic ones.
    pub gradient: Vec<f64>,
    /// Uᵀf_int at the solution (N): what a frozen-tangent step from it starts from.
    pub internal: Vec<f64>,
    /// Whether the deadline ended it before it converged.
    pub degraded: bool,
}

/// What a reduced solve may use beside the rows: the tangent to start from and keep,
/// a dynamic step, and a deadline.
#[derive(Default)]
pub(in crate::nonlinear) struct SolveWith<'a, 'd> {
    /// Start from and keep this tangent (chord iterations); `None`: Newton's method.
    pub tangent: Option<&'a mut Tangent>,
    /// Solve one dynamic step.
    pub dynamic: Option<&'a mut DynamicStep<'d>>,
    /// End at the first iteration past this instant.
    pub deadline: Option<Instant>,
}

impl ReducedStatics {
    /// Solves the reduced equilibrium Uᵀ(f_int(Uq) − `loads`) = Σₖ λₖ Uᵀcₖ with
    /// cₖᵀUq = valueₖ for q (reduced coordinates, as long as [`ReducedStatics::shapes`];
    /// the start on input) and each constraint's multiplier λₖ (N; its input the start),
    /// by Newton's method with a backtracking line search on the reduced potential
    /// energy. The constraints' shapes must be in the basis. `options.relative` is
    /// relative to the reduced applied forces.
    pub fn solve(
        &self,
        q: &mut [f64],
        loads: &[Vec3],
        constraints: &mut [crate::nonlinear::LinearConstraint],
        options: &NewtonOptions,
    ) -> Result<NewtonReport, NonlinearError> {
        let mut rows = ReducedRows::of_constraints(self, constraints)?;
        let b = self.reduced_loads(loads)?;
        let end = self.solve_rows(q, &b, &mut rows, options, SolveWith::default())?;
        for (c, l) in constraints.iter_mut().zip(&rows.multipliers) {
            c.multiplier = *l;
        }
        Ok(end.report)
    }

    /// Uᵀ of nodal loads (N per node; prescribed DOFs carry none): the reduced loads.
    pub(in crate::nonlinear) fn reduced_loads(
        &self,
        loads: &[Vec3],
    ) -> Result<Vec<f64>, NonlinearError> {
        let (r, n) = (self.shapes, self.statics.prescribed.len());
        if loads.len() != n / 3 {
            return Err(NonlinearError::NodeCount {
                what: "loads",
                given: loads.len(),
                nodes: n / 3,
            });
        }
        let mut b = vec![0.0; r];
        for (v, load) in loads.iter().enumerate() {
            for c in (0..3).filter(|&c| load[c] != 0.0 && !self.statics.prescribed[3 * v + c]) {
                for (bj, u) in b.iter_mut().zip(self.row(3 * v + c)) {
                    *bj += load[c] * u;
                }
            }
        }
        Ok(b)
    }

    /// Solves the reduced equations under the reduced loads `b` (N) and `rows` from q
    /// (module docs), with what `with` gives. Returns the report with Π and ∇Π − Aᵀλ at
    /// the solution; q and the rows' multipliers hold the solution.
    pub(in crate::nonlinear) fn solve_rows(
        &self,
        q: &mut [f64],
        b: &[f64],
        rows: &mut ReducedRows,
        options: &NewtonOptions,
        with: SolveWith<'_, '_>,
    ) -> Result<StepEnd, NonlinearError> {
        let r = self.shapes;
        if q.len() != r || b.len() != r || rows.a.len() != rows.len() * r {
            return Err(NonlinearError::NodeCount {
                what: "reduced coordinates, loads and rows (one per shape)",
                given: q.len(),
                nodes: r,
            });
        }
        let k = with.dynamic.as_ref().map_or(0, |d| d.coordinates());
        if k > r {
            return Err(NonlinearError::NodeCount {
                what: "dynamic coordinates (one per mode)",
                given: k,
                nodes: r,
            });
        }
        let mut solve = Solve::new(self, b, rows, with, options);
        solve.run(q)
    }
}

impl ReducedStatics {
    /// One step of the linearised problem at q with the tangent `tangent` (row-major
    /// r × r) and `unloaded` = Uᵀf_int − b there (N): the rows' multipliers from the
    /// complementarity solve (into `rows`) and the state change δq, no force evaluated.
    /// What a step that cannot converge predicts from its last good state.
    pub(in crate::nonlinear) fn frozen_step(
        &self,
        q: &[f64],
        unloaded: &[f64],
        tangent: &[f64],
        rows: &mut ReducedRows,
    ) -> Vec<f64> {
        let r = self.shapes;
        let m = rows.len();
        let factors = Linearised::new(tangent, rows, r);
        let y = factors.solve(unloaded);
        let mut lambda = vec![0.0; m];
        if m > 0 {
            let rhs = factors.rhs(rows, q, &y);
            DenseConstraintSolver::new(m).solve(
                m,
                &factors.schur,
                &rhs,
                &rows.unilateral,
                &mut lambda,
            );
        }
        rows.multipliers.copy_from_slice(&lambda);
        factors.step(&y, &lambda)
    }
}

/// One reduced solve in progress.
struct Solve<'s, 'w, 'd> {
    model: &'s ReducedStatics,
    b: &'s [f64],
    rows: &'s mut ReducedRows,
    options: &'s NewtonOptions,
    tangent: SolveTangent<'w>,
    dynamic: Option<&'w mut DynamicStep<'d>>,
    deadline: Option<Instant>,
    work: Work,
    /// The applied forces b + Aᵀλ (N).
    f: Vec<f64>,
    /// The merit's energy E(q) − fᵀq (J).
    energy: f64,
    /// The factors of the last linearisation, while its tangent is kept.
    factors: Option<Linearised>,
    solver: DenseConstraintSolver,
}

impl<'s, 'w, 'd> Solve<'s, 'w, 'd> {
    fn new(
        model: &'s ReducedStatics,
        b: &'s [f64],
        rows: &'s mut ReducedRows,
        with: SolveWith<'w, 'd>,
        options: &'s NewtonOptions,
    ) -> Self {
        let r = model.shapes;
        let m = rows.len();
        Self {
            model,
            b,
            options,
            tangent: SolveTangent::new(with.tangent, model, r),
            dynamic: with.dynamic,
            deadline: with.deadline,
            work: Work::new(r, model.nodes()),
            f: vec![0.0; r],
            energy: 0.0,
            factors: None,
            solver: DenseConstraintSolver::new(m.max(1)),
            rows,
        }
    }

    /// Σ over rows of λᵢ aᵢ plus b (N).
    fn applied(&self) -> Vec<f64> {
        let r = self.model.shapes;
        let mut f = self.b.to_vec();
        for (i, l) in self.rows.multipliers.iter().enumerate() {
            for (fj, a) in f.iter_mut().zip(self.rows.row(i, r)) {
                *fj += l * a;
            }
        }
        f
    }

    /// Π(q) from the merit's energy E(q) − fᵀq.
    fn potential(&self, q: &[f64]) -> f64 {
        self.energy
            + (0..q.len())
                .map(|j| (self.f[j] - self.b[j]) * q[j])
                .sum::<f64>()
    }

    fn run(&mut self, q: &mut [f64]) -> Result<StepEnd, NonlinearError> {
        let r = self.model.shapes;
        self.f = self.applied();
        let Some(energy) = self.model.energy_and_gradient(q, &self.f, &mut self.work) else {
            let mut u = vec![Vec3::zeros(); self.model.nodes()];
            self.model.displacement(q, &mut u);
            let bad = self.model.statics.first_non_finite(&u);
            return Err(NonlinearError::NonFinite(bad));
        };
        self.energy = energy;
        let dynamic_scale = self.dynamic.as_ref().map_or(0.0, |d| d.scale());
        let mut report = NewtonReport {
            residuals: Vec::new(),
            steps: Vec::new(),
            energy,
        };
        let mut trial = vec![0.0; r];
        let mut last_step = f64::INFINITY;
        let mut corrections = 0;
        // Whether `work.trial_gradient` holds the forces at q.
        let mut at_trial = true;
        for iteration in 0..=self.options.max_iterations {
            let fresh = self
                .tangent
                .forces_at(self.model, q, &mut self.work, at_trial);
            if fresh {
                self.factors = None;
            }
            at_trial = false;
            // g − b (with the step's inertia), and the residual g − b − Aᵀλ.
            let mut unloaded: Vec<f64> =
                (0..r).map(|j| self.work.gradient[j] - self.b[j]).collect();
            if let Some(step) = self.dynamic.as_deref() {
                step.add_residual(q, &mut unloaded);
            }
            let residual: Vec<f64> = (0..r)
                .map(|j| unloaded[j] - (self.f[j] - self.b[j]))
                .collect();
            let norm = size(&residual);
            if !norm.is_finite() {
                return Err(NonlinearError::LineSearch {
                    iteration,
                    residual: norm,
                });
            }
            report.residuals.push(norm);
            tracing::trace!(target: "palpa::nonlinear::trace", "newton {iteration}: residual {norm:.3e}");
            let scale = size(&self.f)
                .max(size(&self.work.gradient[..r]))
                .max(dynamic_scale);
            let tolerance = self.options.relative * scale.max(1e-300);
            // Or the last full Newton step moved q by round-off only.
            let stalled = report.steps.last() == Some(&1.0) && last_step <= 1e-13 * size(q);
            if (norm <= tolerance || stalled) && self.rows_hold(q) {
                let potential = self.potential(q);
                if let Some(step) = self.dynamic.as_deref_mut() {
                    let k = step.coordinates();
                    let at: Vec<f64> = (0..k).map(|j| self.work.gradient[j] - self.f[j]).collect();
                    let change = step.update_correction(q, potential, &at, tolerance);
                    if change > tolerance
                        && corrections < MAX_CORRECTION_SOLVES
                        && iteration < self.options.max_iterations
                    {
                        corrections += 1;
                        last_step = f64::INFINITY;
                        continue;
                    }
                }
                return Ok(self.end(q, report, false));
            }
            if iteration == self.options.max_iterations {
                return Err(NonlinearError::NotConverged {
                    iterations: iteration,
                    residual: norm,
                    tolerance,
                });
            }
            if iteration > 0 && self.deadline.is_some_and(|d| Instant::now() >= d) {
                // A frozen-tangent end only where the iterations have brought the
                // residual down and no summed element is below the floor of det F: a
                // diverging iterate is no state for the next step to start from, and
                // its forces are no force for the hand.
                if norm > report.residuals[0] || !self.work.evaluated_in_range() {
                    return Err(NonlinearError::NotConverged {
                        iterations: iteration,
                        residual: norm,
                        tolerance,
                    });
                }
                return Ok(self.end(q, report, true));
            }
            if self.tangent.stalls(norm) {
                self.model.gradient_and_tangent(q, &mut self.work);
                self.factors = None;
            }
            let step = self.linear_step(q, &unloaded);
            if step.iter().any(|x| !x.is_finite()) {
                return Err(NonlinearError::LineSearch {
                    iteration,
                    residual: norm,
                });
            }
            let alpha = self.line_search(q, &step, &mut trial, iteration, norm)?;
            report.steps.push(alpha);
            self.tangent.shortened(alpha < 1.0);
            last_step = alpha * size(&step);
            q.copy_from_slice(&trial);
            at_trial = true;
        }
        unreachable!("the loop returns at max_iterations")
    }

    /// Whether the rows hold at q: each enforced one (bilateral, or pushing) on its
    /// target, each released one not past it, within the tolerance.
    fn rows_hold(&self, q: &[f64]) -> bool {
        let rows = &*self.rows;
        (0..rows.len()).all(|i| {
            let gap = rows.values[i] - rows.position(i, q, &rows.multipliers);
            let tolerance = self.options.relative * rows.values[i].abs().max(1e-12);
            if !rows.unilateral[i] || rows.multipliers[i] < 0.0 {
                gap.abs() <= tolerance
            } else {
                gap >= -tolerance && rows.multipliers[i] <= 0.0
            }
        })
    }

    /// The step of the linearised problem at q (`unloaded` = g − b there): the rows'
    /// new multipliers from the complementarity solve (into the rows and the applied
    /// forces), and δq.
    fn linear_step(&mut self, q: &[f64], unloaded: &[f64]) -> Vec<f64> {
        let r = self.model.shapes;
        let m = self.rows.len();
        let refactor = self.factors.is_none();
        if refactor {
            let mut jacobian = self.work.tangent.clone();
            if let Some(step) = self.dynamic.as_deref() {
                step.add_jacobian(&mut jacobian, r);
            }
            self.factors = Some(Linearised::new(&jacobian, self.rows, r));
        }
        let factors = self.factors.as_ref().expect("factorised above");
        let y = factors.solve(unloaded);
        let mut lambda = vec![0.0; m];
        if m > 0 {
            let rhs = factors.rhs(self.rows, q, &y);
            let unilateral = &self.rows.unilateral;
            if refactor {
                self.solver
                    .solve(m, &factors.schur, &rhs, unilateral, &mut lambda);
            } else {
                self.solver
                    .resolve(m, &factors.schur, &rhs, unilateral, &mut lambda);
            }
        }
        let step = factors.step(&y, &lambda);
        // The energy's forces term −f·q changes with λ; the elastic energy does not.
        self.rows.multipliers.copy_from_slice(&lambda);
        let applied = self.applied();
        let before = std::mem::replace(&mut self.f, applied);
        self.energy += (0..r).map(|j| (before[j] - self.f[j]) * q[j]).sum::<f64>();
        step
    }

    /// Backtracks along `step` from q into `trial`; returns the step length taken.
    fn line_search(
        &mut self,
        q: &[f64],
        step: &[f64],
        trial: &mut [f64],
        iteration: usize,
        norm: f64,
    ) -> Result<f64, NonlinearError> {
        let r = self.model.shapes;
        let dynamic = self.dynamic.as_deref();
        let inertia = |at: &[f64]| dynamic.map_or(0.0, |d| d.merit(at));
        let mut gradient_at: Vec<f64> = (0..r).map(|j| self.work.gradient[j] - self.f[j]).collect();
        if let Some(d) = dynamic {
            d.add_residual(q, &mut gradient_at);
        }
        let slope: f64 = (0..r).map(|j| gradient_at[j] * step[j]).sum();
        let start = self.energy + inertia(q);
        let (model, f, work) = (self.model, &self.f, &mut self.work);
        let k = dynamic.map_or(0, |d| d.coordinates());
        let searched = backtrack(start, slope, |at| match at {
            Trial::At(alpha) => {
                for j in 0..r {
                    trial[j] = q[j] + alpha * step[j];
                }
                model
                    .energy_and_gradient(trial, f, work)
                    .map(|e| e + inertia(trial))
            }
            Trial::Slope => {
                let mut along = model.slope_along(trial, f, step, work);
                if let Some(d) = dynamic {
                    let mut inertial = vec![0.0; r];
                    d.add_residual(trial, &mut inertial);
                    along += (0..k).map(|j| inertial[j] * step[j]).sum::<f64>();
                }
                Some(along)
            }
        });
        let Some((alpha, e)) = searched else {
            return Err(NonlinearError::LineSearch {
                iteration,
                residual: norm,
            });
        };
        self.energy = e - inertia(trial);
        Ok(alpha)
    }

    /// The solve's end at q.
    fn end(&mut self, q: &[f64], report: NewtonReport, degraded: bool) -> StepEnd {
        let r = self.model.shapes;
        let potential = self.potential(q);
        self.tangent.finish(self.model, &self.work.tangent, r);
        // ∇Π − Aᵀλ: the residual without the inertia.
        let gradient = (0..r).map(|j| self.work.gradient[j] - self.f[j]).collect();
        StepEnd {
            report: NewtonReport {
                energy: self.energy,
                ..report
            },
            potential,
            gradient,
            internal: self.work.gradient[..r].to_vec(),
            degraded,
        }
    }
}

/// A linearisation's factors: J's Cholesky factor (shifted where J is not positive
/// definite), W = J⁻¹Aᵀ and the rows' Schur complement S = A W + R.
pub(super) struct Linearised {
    llt: nalgebra::Cholesky<f64, nalgebra::Dyn>,
    /// W, row-major m × r (row i: J⁻¹aᵢ).
    w: Vec<f64>,
    /// S, row-major m × m.
    pub(super) schur: Vec<f64>,
    r: usize,
}

impl Linearised {
    pub(super) fn new(jacobian: &[f64], rows: &ReducedRows, r: usize) -> Self {
        let llt = cholesky_shifted(jacobian, r);
        let m = rows.len();
        let mut w = Vec::with_capacity(m * r);
        for i in 0..m {
            let x = llt.solve(&DVector::from_column_slice(rows.row(i, r)));
            w.extend(x.iter());
        }
        let mut schur = vec![0.0; m * m];
        for i in 0..m {
            for j in 0..=i {
                let v: f64 = rows
                    .row(i, r)
                    .iter()
                    .zip(&w[j * r..][..r])
                    .map(|(a, w)| a * w)
                    .sum();
                let c = if rows.compliance.is_empty() {
                    0.0
                } else {
                    0.5 * (rows.compliance[i * m + j] + rows.compliance[j * m + i])
                };
                schur[i * m + j] = v + c;
                schur[j * m + i] = v + c;
            }
        }
        Self { llt, w, schur, r }
    }

    /// J⁻¹x.
    fn solve(&self, x: &[f64]) -> Vec<f64> {
        self.llt
            .solve(&DVector::from_column_slice(&x[..self.r]))
            .iter()
            .copied()
            .collect()
    }

    /// Row i of W: J⁻¹aᵢ.
    fn w_row(&self, i: usize) -> &[f64] {
        &self.w[i * self.r..][..self.r]
    }

    /// The complementarity problem's right-hand side at q with y = J⁻¹(g − b):
    /// vᵢ − aᵢ·q − oᵢ + aᵢ·y (m).
    fn rhs(&self, rows: &ReducedRows, q: &[f64], y: &[f64]) -> Vec<f64> {
        let r = self.r;
        (0..rows.len())
            .map(|i| {
                let a = rows.row(i, r);
                let aq: f64 = a.iter().zip(q).map(|(a, q)| a * q).sum();
                let ay: f64 = a.iter().zip(y).map(|(a, y)| a * y).sum();
                let offset = rows.offset.get(i).copied().unwrap_or(0.0);
                rows.values[i] - aq - offset + ay
            })
            .collect()
    }

    /// δq = J⁻¹Aᵀλ − y.
    fn step(&self, y: &[f64], lambda: &[f64]) -> Vec<f64> {
        let mut step: Vec<f64> = y.iter().map(|y| -y).collect();
        for (i, &l) in lambda.iter().enumerate() {
            if l != 0.0 {
                for (s, w) in step.iter_mut().zip(self.w_row(i)) {
                    *s += l * w;
                }
            }
        }
        step
    }
}

/// The Cholesky factor of the symmetric r × r `matrix` (row-major), its diagonal raised
/// until it is positive definite where it is not (a damped Newton step on an unstable
/// state).
pub(super) fn cholesky_shifted(matrix: &[f64], r: usize) -> nalgebra::Cholesky<f64, nalgebra::Dyn> {
    // The rest tangent (UᵀKU = I) stands in for one that is not finite, which no shift
    // makes positive definite.
    let rest = || {
        DMatrix::<f64>::identity(r, r)
            .cholesky()
            .expect("I is positive definite")
    };
    if !matrix.iter().all(|x| x.is_finite()) {
        return rest();
    }
    let mut m = DMatrix::from_row_slice(r, r, matrix);
    let mean_diag = (0..r).map(|i| m[(i, i)].abs()).sum::<f64>() / r.max(1) as f64;
    let mut shift: f64 = 0.0;
    loop {
        if let Some(llt) = m.clone().cholesky() {
            return llt;
        }
        if !shift.is_finite() {
            return rest();
        }
        let add = if shift == 0.0 {
            1e-8 * mean_diag.max(1.0)
        } else {
            9.0 * shift
        };
        shift += add;
        for i in 0..r {
            m[(i, i)] += add;
        }
    }
}

/// |q|.
pub(super) fn size(q: &[f64]) -> f64 {
    q.iter().map(|x| x * x).sum::<f64>().sqrt()
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::SolveWith;
    use crate::nonlinear::quadrature::Active;
    use crate::nonlinear::test_block::block_with_three_shapes;
    use crate::nonlinear::{LawKind, LinearConstraint, NewtonOptions, ReducedRows};
    use crate::Vec3;

    /// The block's top pressed 7 mm (cells 2.5 mm deep) while no element is large-strain
    /// yet: the linear law leaves the elements under it inverted. Once they turn
    /// Veronda–Westmann, a solve out of time from there never ends on a state below the
    /// floor of det F (the brisk bench's lost tissue started from one), and from the
    /// state scaled back into range the solve converges.
    #[test]
    fn a_solve_out_of_time_never_ends_on_an_inverted_state() {
        let kind = LawKind::VerondaWestmann { stiffening: 5.0 };
        let (mesh, mut reduced, top) = block_with_three_shapes([4, 4, 4], kind);
        let r = reduced.shapes();
        let loads = vec![Vec3::zeros(); mesh.nodes.len()];
        let options = NewtonOptions {
            relative: 1e-9,
            max_iterations: 60,
        };
        let mut press = [LinearConstraint {
            coefficients: vec![(3 * top + 2, 1.0)],
            value: -0.007,
            multiplier: 0.0,
        }];
        let mut linear = vec![0.0; r];
        reduced
            .solve(&mut linear, &loads, &mut press, &options)
            .expect("the linear solve");
        let (j, _) = reduced.min_det(&linear);
        assert!(j < 0.0, "the linear press leaves det F {j}");
        assert!(!reduced.in_range(&linear));
        reduced.set_active(&Active {
            elements: (0..mesh.tets.len()).collect(),
            volumes: Vec::new(),
        });
        let b = reduced.reduced_loads(&loads).expect("loads");
        let rows = || {
            let mut rows = ReducedRows::of_constraints(&reduced, &press).expect("rows");
            rows.unilateral[0] = true;
            rows
        };
        let mut q = linear.clone();
        let late = SolveWith {
            deadline: Some(Instant::now()),
            ..SolveWith::default()
        };
        if let Ok(end) = reduced.solve_rows(&mut q, &b, &mut rows(), &options, late) {
            assert!(
                !end.degraded || reduced.in_range(&q),
                "a frozen end at det F {}",
                reduced.min_det(&q).0
            );
        }
        let mut q = reduced.scaled_into_range(&linear);
        assert!(reduced.in_range(&q));
        let mut rows = rows();
        let end = reduced
            .solve_rows(&mut q, &b, &mut rows, &options, SolveWith::default())
            .expect("converges from the state in range");
        assert!(!end.degraded);
        assert!(rows.multipliers[0] < 0.0, "{:?}", rows.multipliers);
    }
}
