//! The rows a reduced solve holds: linear conditions on the reduced state, each
//! aᵢ·q + (Rλ)ᵢ + oᵢ = vᵢ while enforced. aᵢ = Uᵀcᵢ is the row's part in the basis; R,
//! the residual compliance, is what the basis still lacks of the rows' linear static
//! compliance (cᵢᵀ(K⁻¹ − UUᵀ)cⱼ: residual flexibility, as the modal backend's), so the
//! rows' linear response is exact whatever the basis holds, and o is the same for the
//! held loads. A unilateral row may only push (λᵢ ≤ 0: the force on the tissue along its
//! outward direction) and, released, its point must not pass its target.

use super::basis::check_dof;
use super::model::ReducedStatics;
use crate::nonlinear::{LinearConstraint, NonlinearError};

/// The rows of a reduced solve (module docs).
#[derive(Clone, Debug, Default)]
pub struct ReducedRows {
    /// Rows in the basis, row-major m × r: aᵢ = Uᵀcᵢ (m per unit coordinate).
    pub a: Vec<f64>,
    /// Targets vᵢ (m).
    pub values: Vec<f64>,
    /// The residual compliance R among the rows, row-major m × m (m/N); empty: zero.
    pub compliance: Vec<f64>,
    /// The held loads' residual displacement oᵢ at each row (m); empty: zero.
    pub offset: Vec<f64>,
    /// Whether each row may only push.
    pub unilateral: Vec<bool>,
    /// λ (N, along each row's direction on the tissue): the start on input, the
    /// solution on output.
    pub multipliers: Vec<f64>,
}

impl ReducedRows {
    /// Rows.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Bilateral rows of `constraints` in `reduced`'s basis, without residual
    /// compliance (their shapes belong in the basis).
    pub fn of_constraints(
        reduced: &ReducedStatics,
        constraints: &[LinearConstraint],
    ) -> Result<Self, NonlinearError> {
        let (r, n) = (reduced.shapes(), reduced.statics().prescribed.len());
        let mut rows = Self::default();
        let mut a = vec![0.0; r];
        for c in constraints {
            for &(d, _) in &c.coefficients {
                check_dof(d, n)?;
            }
            reduced.project(&c.coefficients, &mut a);
            rows.a.extend_from_slice(&a);
            rows.values.push(c.value);
            rows.unilateral.push(false);
            rows.multipliers.push(c.multiplier);
        }
        Ok(rows)
    }

    /// Row i's part in the basis (length r).
    pub fn row(&self, i: usize, r: usize) -> &[f64] {
        &self.a[i * r..][..r]
    }

    /// Where row i's point is along its direction (m) at q with the multipliers
    /// `lambda`: aᵢ·q + (Rλ)ᵢ + oᵢ.
    pub fn position(&self, i: usize, q: &[f64], lambda: &[f64]) -> f64 {
        let r = q.len();
        let m = self.len();
        let mut x: f64 = self.row(i, r).iter().zip(q).map(|(a, q)| a * q).sum();
        if !self.compliance.is_empty() {
            x += (0..m)
                .map(|j| self.compliance[i * m + j] * lambda[j])
                .sum::<f64>();
        }
        if !self.offset.is_empty() {
            x += self.offset[i];
        }
        x
    }
}
