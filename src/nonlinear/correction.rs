//! A nonlinear correction of a reduced state: the residual the reduced model's own laws
//! leave on the whole mesh and K⁻¹ of it, with the terms that have become strained.
//!
//! It needs only the displacement, the loads, the constraints' multipliers and the
//! active terms, with read-only shared data (the mesh, K, its factor and the elements'
//! small-strain laws: a [`Corrector`]). So the same computation runs inside a model step
//! or on a thread beside it (`background.rs`); the basis it joins stays with the model.

use std::sync::Arc;

use faer::sparse::SparseColMat;
use faer::Mat;

use super::kinematics::cofactor;
use super::quadrature::Active;
use super::statics::{LinearConstraint, NonlinearError};
use super::{Hyperelastic, NonlinearStatics};
use crate::fem::Factor;
use crate::{Mat3, Vec3};

/// How far a term's large-strain stress must differ from its linearised one, relative
/// to its shear modulus (‖P − P_lin‖ / μ; a nodal volume term: its pressures'), for
/// the reduced model to solve it with its large-strain law; the rest keep their
/// linearisation (exact in UᵀKU).
pub const ACTIVE_NONLINEARITY: f64 = 3e-3;

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
    /// The forces on the tissue, f_ext + Σλc, zero at the prescribed DOFs (N), and K⁻¹
    /// of them (m): the contact's own shape, which the basis holds once the contact's
    /// residual flexibility is spent (`tissue/residual.rs`). Empty without any.
    pub(super) applied: (Vec<f64>, Vec<f64>),
    /// The terms past [`ACTIVE_NONLINEARITY`] at the state.
    pub(super) active: Active,
    /// ‖K⁻¹ c‖_K / |q| of what the inactive terms' (f − f_lin), c, adds to r
    /// (dimensionless).
    pub(super) cut: f64,
    /// |q| = ‖u‖_K at the state (√J).
    pub(super) size: f64,
}

impl Corrector {
    /// The correction at the displacement `u` (m per node, |q| = `size` in the basis)
    /// under `loads` (N per node) and `constraints` (their multipliers as solved), with
    /// `active` the terms the state was solved with their large-strain law.
    pub(super) fn correct(
        &self,
        u: &[Vec3],
        loads: &[Vec3],
        constraints: &[LinearConstraint],
        active: &Active,
        size: f64,
    ) -> Result<Correction, NonlinearError> {
        let statics = &self.statics;
        let n = statics.prescribed.len();
        let flat: Vec<f64> = u.iter().flat_map(|v| [v.x, v.y, v.z]).collect();
        // r = Ku − f_ext − Σλc, then each active term's (f − f_lin); `cut` collects the
        // inactive ones'.
        let mut applied = vec![0.0; n];
        for (d, a) in applied.iter_mut().enumerate() {
            *a = loads[d / 3][d % 3];
        }
        for c in constraints {
            for &(d, w) in &c.coefficients {
                applied[d] += c.multiplier * w;
            }
        }
        let mut residual = k_times(&self.k, &flat);
        for (r, a) in residual.iter_mut().zip(&applied) {
            *r -= a;
        }
        let mut cut = vec![0.0; n];
        let defs: Vec<Mat3> = (0..statics.tets.len())
            .map(|e| statics.deformation_gradient(e, u))
            .collect();
        let elements = self.element_terms(&defs, &active.elements, &mut residual, &mut cut)?;
        let volumes = self.volume_terms(&defs, &active.volumes, &mut residual, &mut cut);
        for d in (0..n).filter(|&d| statics.prescribed[d]) {
            residual[d] = 0.0;
            cut[d] = 0.0;
            applied[d] = 0.0;
        }
        // K⁻¹ of the three in one solve: a solve with the factor is bound by reading it.
        let mut solved = Mat::<f64>::from_fn(n, 3, |d, j| [residual[d], cut[d], applied[d]][j]);
        self.factor.solve_in_place(solved.as_mut())?;
        let cut_norm = energy_norm(solved.col(1).iter(), &cut);
        let any = applied.iter().any(|&a| a != 0.0);
        Ok(Correction {
            solved: solved.col(0).iter().copied().collect(),
            applied: if any {
                (applied, solved.col(2).iter().copied().collect())
            } else {
                (Vec::new(), Vec::new())
            },
            residual,
            active: Active { elements, volumes },
            cut: if size > 0.0 { cut_norm / size } else { 0.0 },
            size,
        })
    }

    /// Each element's (f − f_lin) into `residual` (active in `active`) or `cut`; returns
    /// the elements now past [`ACTIVE_NONLINEARITY`].
    fn element_terms(
        &self,
        defs: &[Mat3],
        active: &[usize],
        residual: &mut [f64],
        cut: &mut [f64],
    ) -> Result<Vec<usize>, NonlinearError> {
        let statics = &self.statics;
        let mut now_active = Vec::with_capacity(active.len());
        let mut was_active = vec![false; statics.tets.len()];
        for &e in active {
            was_active[e] = true;
        }
        for (e, (tet, def)) in statics.tets.iter().zip(defs).enumerate() {
            if statics.laws[e].energy_density(def).is_none() {
                return Err(NonlinearError::NonFinite(e));
            }
            let difference = statics.laws[e].stress(def) - self.linear[e].stress(def);
            if difference.norm() > ACTIVE_NONLINEARITY * statics.laws[e].mu {
                now_active.push(e);
            }
            let into = if was_active[e] {
                &mut *residual
            } else {
                &mut *cut
            };
            let el = &statics.elements[e];
            add_nodal(into, tet, &el.grads, &(difference * el.volume));
        }
        Ok(now_active)
    }

    /// Each nodal volume term's (f − f_lin) into `residual` (active in `active`) or
    /// `cut`; returns the nodes now past [`ACTIVE_NONLINEARITY`].
    fn volume_terms(
        &self,
        defs: &[Mat3],
        active: &[usize],
        residual: &mut [f64],
        cut: &mut [f64],
    ) -> Vec<usize> {
        let statics = &self.statics;
        let Some(volume) = &statics.volume else {
            return Vec::new();
        };
        let mut was_active = vec![false; volume.n_nodes()];
        for &a in active {
            was_active[a] = true;
        }
        let mut now_active = Vec::new();
        for a in (0..volume.n_nodes()).filter(|&a| volume.carries(a)) {
            let around = volume.around(a);
            let mean: f64 = around.iter().map(|&(e, w)| w * defs[e].determinant()).sum();
            let theta: f64 = around
                .iter()
                .map(|&(e, w)| w * (defs[e].trace() - 3.0))
                .sum();
            let (p1, _) = volume.node_pressure(a, mean);
            let linear = volume.node_stiffness(a) * theta;
            // Vₐ (πₐ − πₐ,lin) against Vₐ μ̄ₐ, μ̄ₐ the mean shear modulus around a.
            let node_volume: f64 = around
                .iter()
                .map(|&(e, _)| statics.elements[e].volume / 4.0)
                .sum();
            let mu: f64 = around.iter().map(|&(e, w)| w * statics.laws[e].mu).sum();
            if (p1 - linear).abs() > ACTIVE_NONLINEARITY * mu * node_volume {
                now_active.push(a);
            }
            let into = if was_active[a] {
                &mut *residual
            } else {
                &mut *cut
            };
            for &(e, w) in around {
                let p = cofactor(&defs[e]) * (w * p1) - Mat3::identity() * (w * linear);
                add_nodal(into, &statics.tets[e], &statics.elements[e].grads, &p);
            }
        }
        now_active
    }
}

/// Adds the nodal forces P ∇N_a of a tetrahedron's stress `p` (times its volume; N/m²·m³)
/// to the DOF vector `into` (N).
fn add_nodal(into: &mut [f64], tet: &[usize; 4], grads: &[Vec3; 4], p: &Mat3) {
    for (a, &v) in tet.iter().enumerate() {
        let f = p * grads[a];
        for c in 0..3 {
            into[3 * v + c] += f[c];
        }
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
