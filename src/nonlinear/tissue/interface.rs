//! The runtime nonlinear model behind the tissue-model interface the contact pipeline
//! drives.

use nalgebra::DMatrix;

use super::model::NonlinearTissue;
use crate::fem::Support;
use crate::nonlinear::reduced::Tangent;
use crate::nonlinear::surface_bound::SurfaceBound;
use crate::tissue::{
    require_positions, validate_step, ModelError, PointConstraint, PointLoad, TissueModel,
};
use crate::{Mat3, Vec3};

impl NonlinearTissue {
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

impl TissueModel for NonlinearTissue {
    fn geometry(&self) -> &crate::tissue::TissueGeometry {
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
        self.step(dt, constraints, forces)
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

    /// The reduced tangent compliance Aₐᵀ T⁻¹ A_b (A = Uᵀ of the points' unit forces)
    /// plus the linear compliance the basis lacks between them,
    /// K⁻¹(a, b) − Aₐᵀ A_b: at rest K⁻¹'s block exactly.
    fn compliance_between(&mut self, a: &Support, b: &Support) -> Result<Mat3, ModelError> {
        let r = self.reduced.shapes();
        let t = DMatrix::from_row_slice(r, r, self.current_tangent());
        let (pa, pb) = (self.reduced_point(a), self.reduced_point(b));
        let x = match t.clone().cholesky() {
            Some(llt) => llt.solve(&pb),
            None => t.lu().solve(&pb).ok_or_else(|| {
                ModelError::Solve("the reduced tangent is singular (a buckled state)".into())
            })?,
        };
        let tangent_part = pa.transpose() * x;
        let basis_part = pa.transpose() * &pb;
        let full = self.residual.block(a, b)?;
        Ok(Mat3::from_fn(|i, j| {
            tangent_part[(i, j)] + full[(i, j)] - basis_part[(i, j)]
        }))
    }

    fn displacement_bound(&self) -> f64 {
        self.bound
    }

    /// The bound on U q over the surface with the residual field's bound beyond
    /// `distance` (m) of `point` ([`crate::fem::ComplianceColumns::field_bound_beyond`]):
    /// the contact's near set is then sized by the loads' local field, not its peak.
    fn displacement_bound_beyond(&self, point: &Vec3, distance: f64) -> f64 {
        let (surface, basis_part) = self.bound_parts;
        if self.loads.is_empty() {
            return self.bound;
        }
        let beyond = surface
            + self
                .residual
                .field_bound_beyond(&self.loads, basis_part, point, distance);
        beyond.min(self.bound)
    }

    fn anticipates(&self) -> bool {
        self.residual.completes_in_background()
    }

    fn anticipate(&mut self, nodes: &[usize]) {
        self.residual.columns().anticipate(nodes);
    }

    /// U q plus the residual field of the last step's loads (exact where their K⁻¹
    /// columns are known).
    fn displacements(&mut self, nodes: &[usize], out: &mut [Vec3]) {
        for (o, &v) in out.iter_mut().zip(nodes) {
            *o = self.reduced.node_displacement(v, &self.q);
        }
        self.residual
            .add_field(&self.reduced, &self.loads, &self.reduced_load, nodes, out);
    }

    fn reset(&mut self) {
        if let Some(thread) = &mut self.background {
            thread.discard();
        }
        self.q.fill(0.0);
        self.internal.fill(0.0);
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
        self.reduced_load.clear();
        self.bound = 0.0;
        self.bound_parts = (0.0, 0.0);
        self.surface_bound = SurfaceBound::default();
        self.converged = false;
        self.last_good = Default::default();
    }
}
