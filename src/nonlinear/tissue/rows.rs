//! A step's contact rows as the reduced solve holds them: each constraint's scalar rows,
//! their part in the basis (Uᵀc), the residual compliance the basis lacks among them
//! and under the held loads, and the warm start.

use super::model::{solve_error, NonlinearTissue};
use crate::nonlinear::{LinearConstraint, ReducedRows};
use crate::tissue::{ModelError, PointConstraint};
use crate::Vec3;

/// One scalar row of a step: the constraint it belongs to, its direction, and its
/// linear constraint on the DOFs (with its multiplier once solved).
#[derive(Clone, Debug)]
pub(super) struct RowMeta {
    pub(super) constraint: usize,
    pub(super) direction: Vec3,
    pub(super) linear: LinearConstraint,
}

/// A step's rows: the reduced solve's and where each came from.
#[derive(Clone, Debug, Default)]
pub(super) struct StepRows {
    pub(super) rows: ReducedRows,
    pub(super) meta: Vec<RowMeta>,
}

impl StepRows {
    /// The rows with a pushing (or bilateral) multiplier, as DOF constraints with their
    /// multipliers: what a correction balances.
    pub(super) fn enforced(&self) -> Vec<LinearConstraint> {
        self.meta
            .iter()
            .zip(&self.rows.multipliers)
            .filter(|(_, &l)| l != 0.0)
            .map(|(m, &l)| LinearConstraint {
                multiplier: l,
                ..m.linear.clone()
            })
            .collect()
    }
}

impl NonlinearTissue {
    /// The rows of `constraints` in the current basis, with their residual compliance
    /// and the held loads' residual displacement at them, each starting from the
    /// multiplier its index had at the last step.
    pub(super) fn step_rows(
        &mut self,
        constraints: &[PointConstraint],
    ) -> Result<StepRows, ModelError> {
        let r = self.reduced.shapes();
        let mut out = StepRows::default();
        let mut a = vec![0.0; r];
        for (i, c) in constraints.iter().enumerate() {
            let rest = c.rest_point(&self.geometry.rest);
            for k in 0..c.rows() {
                let d = c.direction(k);
                let coefficients: Vec<(usize, f64)> = c.support.along(d).collect();
                self.reduced.project(&coefficients, &mut a);
                let start = self.multipliers.get(out.meta.len()).copied().unwrap_or(0.0);
                let value = d.dot(&(c.target - rest));
                out.rows.a.extend_from_slice(&a);
                out.rows.values.push(value);
                out.rows.unilateral.push(c.unilateral);
                out.rows.multipliers.push(start);
                out.meta.push(RowMeta {
                    constraint: i,
                    direction: d,
                    linear: LinearConstraint {
                        coefficients,
                        value,
                        multiplier: start,
                    },
                });
            }
        }
        self.residual_compliance(constraints, &mut out)?;
        Ok(out)
    }

    /// R among the rows, d_iᵀK⁻¹(s_i, s_j)d_j − aᵢ·aⱼ, and the held loads' residual
    /// displacement at each row, d_iᵀΣ_l K⁻¹(s_i, l)F_l − aᵢ·(Uᵀf_loads).
    fn residual_compliance(
        &mut self,
        constraints: &[PointConstraint],
        out: &mut StepRows,
    ) -> Result<(), ModelError> {
        let r = self.reduced.shapes();
        let m = out.meta.len();
        let supports: Vec<_> = out
            .meta
            .iter()
            .map(|row| constraints[row.constraint].support)
            .collect();
        let rows = &mut out.rows;
        rows.compliance = vec![0.0; m * m];
        for i in 0..m {
            for j in 0..=i {
                let block = self.residual.block(&supports[i], &supports[j])?;
                let (di, dj) = (out.meta[i].direction, out.meta[j].direction);
                let basis: f64 = rows
                    .row(i, r)
                    .iter()
                    .zip(rows.row(j, r))
                    .map(|(a, b)| a * b)
                    .sum();
                let v = di.dot(&(block * dj)) - basis;
                rows.compliance[i * m + j] = v;
                rows.compliance[j * m + i] = v;
            }
        }
        if !self.point_loads.is_empty() {
            let b = self
                .reduced
                .reduced_loads(&self.nodal_loads)
                .map_err(solve_error)?;
            rows.offset = vec![0.0; m];
            for (i, support) in supports.iter().enumerate().take(m) {
                let at = self
                    .point_loads
                    .displacement_at(self.residual.columns(), support)?;
                let basis: f64 = rows.row(i, r).iter().zip(&b).map(|(a, b)| a * b).sum();
                rows.offset[i] = out.meta[i].direction.dot(&at) - basis;
            }
        }
        Ok(())
    }
}
