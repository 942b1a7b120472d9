//! A nonlinear correction of a reduced state: the residual the reduced model's own laws
//! leave on the whole mesh and K⁻¹ of it, with the elements that have become strained.
//!
//! It needs only the displacement, the loads, the constraints' multipliers and the
//! active elements, with read-only shared data (the mesh, K, its factor and the
//! elements' small-strain laws: a [`Corrector`]). So the same computation runs inside a
//! model step ([`super::ReducedStatics::enrich`]) or on a thread beside it
//! ([`super::background`]); the basis it joins stays with the model
//! ([`super::ReducedStatics::join_correction`]).

use std::sync::Arc;

use faer::sparse::SparseColMat;
use faer::Mat;

use super::reduced::ACTIVE_NONLINEARITY;
use super::statics::{LinearConstraint, NonlinearError};
use super::{Hyperelastic, NonlinearStatics};
use crate::fem::Factor;
use crate::Vec3;

/// What a correction reads of a reduced model, shared (cheap to clone).
#[derive(Clone)]
pub(super) struct Corrector {
    pub(super) statics: Arc<NonlinearStatics>,
    /// K at rest (prescribed DOFs as identity rows), and factorised.
    pub(super) k: Arc<SparseColMat<usize, f64>>,
    pub(super) factor: Arc<Factor>,
    /// Each element's small-strain law.
    pub(super) linear: Arc<[Hyperelastic]>,
}

/// A state's correction ([`Corrector::correct`]).
#[derive(Clone, Debug)]
pub(super) struct Correction {
    /// r = K u − f_ext − Σλc + Σ_active (f − f_lin), zero at the prescribed DOFs (N).
    pub(super) residual: Vec<f64>,
    /// K⁻¹ r (m).
    pub(super) solved: Vec<f64>,
    /// The elements past [`ACTIVE_NONLINEARITY`] at the state, ascending.
    pub(super) active: Vec<usize>,
    /// ‖K⁻¹ c‖_K / |q| of what the inactive elements' (f − f_lin), c, adds to r
    /// (dimensionless).
    pub(super) cut: f64,
    /// |q| = ‖u‖_K at the state (√J).
    pub(super) size: f64,
}

impl Corrector {
    /// The correction at the displacement `u` (m per node, |q| = `size` in the basis)
    /// under `loads` (N per node) and `constraints` (their multipliers as solved), with
    /// `active` the elements the state was solved with their large-strain law.
    pub(super) fn correct(
        &self,
        u: &[Vec3],
        loads: &[Vec3],
        constraints: &[LinearConstraint],
        active: &[usize],
        size: f64,
    ) -> Result<Correction, NonlinearError> {
        let statics = &self.statics;
        let n = statics.prescribed.len();
        let flat: Vec<f64> = u.iter().flat_map(|v| [v.x, v.y, v.z]).collect();
        // r = Ku − f_ext − Σλc, then each active element's (f − f_lin); `cut` collects
        // the inactive ones' (f − f_lin).
        let mut residual = k_times(&self.k, &flat);
        for (d, r) in residual.iter_mut().enumerate() {
            *r -= loads[d / 3][d % 3];
        }
        for c in constraints {
            for &(d, w) in &c.coefficients {
                residual[d] -= c.multiplier * w;
            }
        }
        let mut cut = vec![0.0; n];
        let mut now_active = Vec::with_capacity(active.len());
        let mut was_active = vec![false; statics.tets.len()];
        for &e in active {
            was_active[e] = true;
        }
        for (e, tet) in statics.tets.iter().enumerate() {
            let def = statics.deformation_gradient(e, u);
            if statics.laws[e].energy_density(&def).is_none() {
                return Err(NonlinearError::Inverted(e));
            }
            let difference = statics.laws[e].stress(&def) - self.linear[e].stress(&def);
            if difference.norm() > ACTIVE_NONLINEARITY * statics.laws[e].mu {
                now_active.push(e);
            }
            let into = if was_active[e] {
                &mut residual
            } else {
                &mut cut
            };
            let el = &statics.elements[e];
            for (a, &v) in tet.iter().enumerate() {
                let f = difference * el.grads[a] * el.volume;
                for c in 0..3 {
                    into[3 * v + c] += f[c];
                }
            }
        }
        for d in (0..n).filter(|&d| statics.prescribed[d]) {
            residual[d] = 0.0;
            cut[d] = 0.0;
        }
        // K⁻¹ of both in one solve: a solve with the factor is bound by reading it
        // (8–13 ms of a 28 ms enrichment on the 5 mm block), not by the columns.
        let mut solved = Mat::<f64>::from_fn(n, 2, |d, j| [residual[d], cut[d]][j]);
        self.factor.solve_in_place(solved.as_mut())?;
        let cut_norm = energy_norm(solved.col(1).iter(), &cut);
        Ok(Correction {
            solved: solved.col(0).iter().copied().collect(),
            residual,
            active: now_active,
            cut: if size > 0.0 { cut_norm / size } else { 0.0 },
            size,
        })
    }
}

/// The energy norm √(xᵀf) (m·√(N/m)) of a displacement `x` (m per DOF) with `f` = K x
/// (N); round-off below zero counts as zero.
pub(super) fn energy_norm<'a>(x: impl IntoIterator<Item = &'a f64>, f: &[f64]) -> f64 {
    x.into_iter()
        .zip(f)
        .map(|(x, f)| x * f)
        .sum::<f64>()
        .max(0.0)
        .sqrt()
}

/// K x (N) of a displacement x (m per DOF) that is zero on the prescribed DOFs.
pub(super) fn k_times(k: &SparseColMat<usize, f64>, x: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    let (col_ptr, rows, values) = (k.symbolic().col_ptr(), k.symbolic().row_idx(), k.val());
    for (col, &xc) in x.iter().enumerate().filter(|(_, &xc)| xc != 0.0) {
        for p in col_ptr[col]..col_ptr[col + 1] {
            y[rows[p]] += values[p] * xc;
        }
    }
    y
}
