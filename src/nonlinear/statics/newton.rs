//! Newton's method with a backtracking line search on the full FEM's potential energy,
//! with linear equality constraints by Lagrange multipliers.

use faer::{Col, Par};

use super::problem::NonlinearStatics;
use super::types::{LinearConstraint, NewtonOptions, NewtonReport, NonlinearError};
use crate::fem::{Factor, FemError};
use crate::nonlinear::line_search::{backtrack, Trial};
use crate::nonlinear::LawKind;
use crate::Vec3;

/// Largest shift of the tangent's diagonal, relative to its mean, tried where it is not
/// positive definite: far enough for a strongly distorted state (an inverted start, a
/// whole prescribed stretch at once), whose step the line search then shortens.
const MAX_SHIFT: f64 = 1e6;

impl NonlinearStatics {
    /// Solves f_int(u) = `loads` (N per node) for the free DOFs, starting from `u` (m),
    /// whose prescribed DOFs hold their prescribed values and are left unchanged.
    pub fn solve(
        &self,
        u: &mut [Vec3],
        loads: &[Vec3],
        options: &NewtonOptions,
    ) -> Result<NewtonReport, NonlinearError> {
        self.solve_constrained(u, loads, None, options)
    }

    /// [`NonlinearStatics::solve`] with one linear equality constraint cᵀu = value
    /// (e.g. a probe's weighted patch pressed to a depth) enforced by a Lagrange
    /// multiplier: f_int(u) = loads + λ c, λ returned in `constraint.multiplier`.
    pub fn solve_constrained(
        &self,
        u: &mut [Vec3],
        loads: &[Vec3],
        constraint: Option<&mut LinearConstraint>,
        options: &NewtonOptions,
    ) -> Result<NewtonReport, NonlinearError> {
        match constraint {
            Some(c) => self.solve_with_constraints(u, loads, std::slice::from_mut(c), options),
            None => self.solve_with_constraints(u, loads, &mut [], options),
        }
    }

    /// [`NonlinearStatics::solve`] with linear equality constraints cₖᵀu = valueₖ (e.g. the
    /// nodes a sphere probe holds, each along its normal), enforced by Lagrange
    /// multipliers: f_int(u) = loads + Σₖ λₖ cₖ, each λₖ returned in its constraint's
    /// `multiplier` (its input is the starting guess). Each Newton iteration solves the
    /// tangent against the residual and the k constraint directions together and the
    /// k × k Schur complement for the multipliers' change.
    pub fn solve_with_constraints(
        &self,
        u: &mut [Vec3],
        loads: &[Vec3],
        constraints: &mut [LinearConstraint],
        options: &NewtonOptions,
    ) -> Result<NewtonReport, NonlinearError> {
        self.solve_reusing(u, loads, constraints, options, &mut None)
    }

    /// [`NonlinearStatics::solve_with_constraints`] keeping the tangent's factorisation
    /// in `factor` for the next call: where every law is linear the tangent is K, so
    /// one factorisation serves every solve (a sphere press's active-set rounds).
    pub(in crate::nonlinear) fn solve_reusing(
        &self,
        u: &mut [Vec3],
        loads: &[Vec3],
        constraints: &mut [LinearConstraint],
        options: &NewtonOptions,
        factor: &mut Option<Factor>,
    ) -> Result<NewtonReport, NonlinearError> {
        let n = self.rest.len();
        for (what, len) in [("displacement", u.len()), ("loads", loads.len())] {
            if len != n {
                return Err(NonlinearError::NodeCount {
                    what,
                    given: len,
                    nodes: n,
                });
            }
        }
        let k = constraints.len();
        // The constraints' directions over the free DOFs (N per unit multiplier), as the
        // columns of C.
        let mut c = faer::Mat::<f64>::zeros(3 * n, k);
        for (j, constraint) in constraints.iter().enumerate() {
            for &(d, w) in &constraint.coefficients {
                if d >= 3 * n {
                    return Err(NonlinearError::NodeCount {
                        what: "constraint DOF index (3 per node)",
                        given: d,
                        nodes: n,
                    });
                }
                if !self.prescribed[d] {
                    c[(d, j)] += w;
                }
            }
        }
        // C's columns as (free DOF, weight) lists: each touches a few DOFs, so Cᵀx, the
        // Schur complement CᵀZ and the loads λC are short sums over those, not dense
        // products over every DOF (k × 3n × k flops for CᵀZ: 6·10¹⁰ for the 500 rows of a
        // 1 cm sphere on an 80 k-DOF mesh).
        let columns: Vec<Vec<(usize, f64)>> = constraints
            .iter()
            .enumerate()
            .map(|(j, constraint)| {
                let mut dofs: Vec<usize> =
                    constraint.coefficients.iter().map(|&(d, _)| d).collect();
                dofs.sort_unstable();
                dofs.dedup();
                dofs.into_iter()
                    .filter(|&d| c[(d, j)] != 0.0)
                    .map(|d| (d, c[(d, j)]))
                    .collect()
            })
            .collect();
        let ct = |j: usize, x: &dyn Fn(usize) -> f64| -> f64 {
            columns[j].iter().map(|&(d, w)| w * x(d)).sum()
        };
        let effective = |lambda: &[f64]| -> Vec<Vec3> {
            let mut f = loads.to_vec();
            for (column, &l) in columns.iter().zip(lambda) {
                for &(d, w) in column {
                    f[d / 3][d % 3] += w * l;
                }
            }
            f
        };
        let gaps = |u: &[Vec3]| -> Vec<f64> {
            (0..k)
                .map(|j| constraints[j].value - ct(j, &|d| u[d / 3][d % 3]))
                .collect()
        };
        let mut lambda: Vec<f64> = constraints.iter().map(|k| k.multiplier).collect();
        let mut applied = effective(&lambda);
        let mut energy = self
            .energy(u, &applied)
            .ok_or_else(|| NonlinearError::NonFinite(self.first_non_finite(u)))?;
        let mut report = NewtonReport {
            residuals: Vec::new(),
            steps: Vec::new(),
            energy,
        };
        let mut trial = u.to_vec();
        for iteration in 0..=options.max_iterations {
            let f_int = self.internal_forces(u).expect("checked by the energy");
            let (residual, scale) = self.residual(&f_int, &applied);
            let gap = gaps(u);
            let norm = residual.norm_l2();
            report.residuals.push(norm);
            let tolerance = options.relative * scale;
            let on_constraints = constraints
                .iter()
                .zip(&gap)
                .all(|(k, g)| g.abs() <= options.relative * k.value.abs().max(1e-12));
            if norm <= tolerance && on_constraints {
                report.energy = energy;
                for (k, l) in constraints.iter_mut().zip(&lambda) {
                    k.multiplier = *l;
                }
                return Ok(report);
            }
            if iteration == options.max_iterations {
                return Err(NonlinearError::NotConverged {
                    iterations: iteration,
                    residual: norm,
                    tolerance,
                });
            }
            let factor = self.factor_tangent(u, factor)?;
            let mut step = -residual.clone();
            factor.solve_in_place(step.as_mat_mut())?;
            if k > 0 {
                // δ = δ₀ + Z Δλ with Z = K⁻¹C, Δλ from Cᵀ(u + δ) = values:
                // (CᵀZ) Δλ = gap − Cᵀδ₀.
                let mut z = c.clone();
                factor.solve_in_place(z.as_mut())?;
                let schur = faer::Mat::<f64>::from_fn(k, k, |i, j| ct(i, &|d| z[(d, j)]));
                let rhs = faer::Col::<f64>::from_fn(k, |j| gap[j] - ct(j, &|d| step[d]));
                let dlambda = faer::linalg::solvers::Solve::solve(&schur.partial_piv_lu(), &rhs);
                step += &z * &dlambda;
                for (l, d) in lambda.iter_mut().zip(dlambda.iter()) {
                    *l += d;
                }
                applied = effective(&lambda);
                energy = self.energy(u, &applied).expect("checked above");
            }
            let (residual, _) = self.residual(&f_int, &applied);
            let slope = residual.transpose() * &step;
            let searched = backtrack(energy, slope, |at| match at {
                Trial::At(alpha) => {
                    for (v, t) in trial.iter_mut().enumerate() {
                        *t =
                            u[v] + Vec3::new(step[3 * v], step[3 * v + 1], step[3 * v + 2]) * alpha;
                    }
                    self.energy(&trial, &applied)
                }
                Trial::Slope => self.slope_along(&trial, &applied, &step),
            });
            let Some((alpha, e)) = searched else {
                return Err(NonlinearError::LineSearch {
                    iteration,
                    residual: norm,
                });
            };
            energy = e;
            report.steps.push(alpha);
            u.copy_from_slice(&trial);
        }
        unreachable!("the loop returns at max_iterations")
    }

    /// Free-DOF residual f_int − f_ext (zero on prescribed DOFs) and the force scale
    /// ‖f_ext‖ + ‖reactions‖ (N) its tolerance is relative to.
    fn residual(&self, f_int: &[Vec3], loads: &[Vec3]) -> (Col<f64>, f64) {
        let mut r = Col::zeros(3 * f_int.len());
        let (mut ext, mut reaction) = (0.0, 0.0);
        for (v, (fi, fe)) in f_int.iter().zip(loads).enumerate() {
            for c in 0..3 {
                let d = 3 * v + c;
                if self.prescribed[d] {
                    reaction += fi[c] * fi[c];
                } else {
                    r[d] = fi[c] - fe[c];
                    ext += fe[c] * fe[c];
                }
            }
        }
        (r, ext.sqrt() + reaction.sqrt())
    }

    /// Factorises the tangent at `u` into `cached`, reusing the ordering and symbolic
    /// analysis of the first call (every tangent has K's pattern); where it is not
    /// positive definite (an unstable or strongly distorted state), the diagonal is
    /// raised until it is (a damped Newton step).
    fn factor_tangent<'a>(
        &self,
        u: &[Vec3],
        cached: &'a mut Option<Factor>,
    ) -> Result<&'a Factor, NonlinearError> {
        let constant = self.laws.iter().all(|l| l.kind == LawKind::Linear);
        if constant && cached.is_some() {
            return Ok(cached.as_ref().expect("checked"));
        }
        let mut k = self.tangent(u);
        let mean_diag = {
            let mut sum = 0.0;
            for (col, window) in self.col_ptr.windows(2).enumerate() {
                let rows = &self.row_idx[window[0]..window[1]];
                let p = window[0] + rows.partition_point(|&r| r < col);
                sum += k.val()[p];
            }
            sum / (3 * self.rest.len()) as f64
        };
        let mut shift = 0.0;
        loop {
            let context = "nonlinear tangent";
            let done = match cached {
                Some(factor) => factor.refactor(k.as_ref(), context),
                None => Factor::new(k.as_ref(), None, Par::Seq, context).map(|f| {
                    *cached = Some(f);
                }),
            };
            match done {
                Ok(()) => return Ok(cached.as_ref().expect("factorised above")),
                Err(FemError::NotPositiveDefinite { .. }) if shift < MAX_SHIFT * mean_diag => {
                    let add = if shift == 0.0 {
                        1e-8 * mean_diag
                    } else {
                        9.0 * shift
                    };
                    shift += add;
                    let (col_ptr, row_idx) = (&self.col_ptr, &self.row_idx);
                    let values = k.val_mut();
                    for (col, window) in col_ptr.windows(2).enumerate() {
                        let rows = &row_idx[window[0]..window[1]];
                        values[window[0] + rows.partition_point(|&r| r < col)] += add;
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// The slope δ·r of Π along `step` at `trial` under `loads` (J per unit step);
    /// `None` if an energy is not finite there.
    fn slope_along(&self, trial: &[Vec3], loads: &[Vec3], step: &Col<f64>) -> Option<f64> {
        let f_int = self.internal_forces(trial)?;
        let (r, _) = self.residual(&f_int, loads);
        Some((0..r.nrows()).map(|d| r[d] * step[d]).sum())
    }

    /// The first tetrahedron without a finite energy under `u` (0 if none).
    pub(in crate::nonlinear) fn first_non_finite(&self, u: &[Vec3]) -> usize {
        (0..self.tets.len())
            .find(|&e| {
                self.laws[e]
                    .energy_density(&self.deformation_gradient(e, u))
                    .is_none()
            })
            .unwrap_or(0)
    }
}
