//! Residual flexibility of the reduced model (as the modal backend's): the static
//! compliance among contact points that the basis does not hold yet, K⁻¹ − UUᵀ, from
//! K⁻¹ blocks ([`ComplianceColumns`]: a newly touched node costs one forward solve along
//! the elimination tree). With it a contact point's linear response is exact whatever
//! the basis holds, so a step adds no shape for a contact (a sphere's dozens of rows, a
//! patch sliding on), and the corrections bring the large-strain part into the basis as
//! they catch up.

use crate::fem::{ComplianceColumns, Support};
use crate::nonlinear::ReducedStatics;
use crate::tissue::ModelError;
use crate::{Mat3, Vec3};

/// The K⁻¹ side of the residual flexibility.
pub(super) struct Residual {
    columns: ComplianceColumns,
}

impl Residual {
    pub(super) fn new(columns: ComplianceColumns) -> Self {
        Self { columns }
    }

    /// The compliance columns (m/N).
    pub(super) fn columns(&mut self) -> &mut ComplianceColumns {
        &mut self.columns
    }

    /// Whether a worker thread completes the columns.
    pub(super) fn completes_in_background(&self) -> bool {
        self.columns.completes_in_background()
    }

    /// K⁻¹ between two material points (m/N).
    pub(super) fn block(&mut self, a: &Support, b: &Support) -> Result<Mat3, ModelError> {
        Ok(self.columns.point_block(a, b)?)
    }

    /// Adds the residual field of the nodal forces `loads` (node, N) at `nodes` to `out`
    /// (m): K⁻¹F − U(UᵀF), `reduced_load` = UᵀF, at the nodes where K⁻¹F is known (every
    /// node once the loads' columns are complete, else the cached ones); elsewhere
    /// nothing, so that U q there stays the basis's own field.
    pub(super) fn add_field(
        &mut self,
        reduced: &ReducedStatics,
        loads: &[(usize, Vec3)],
        reduced_load: &[f64],
        nodes: &[usize],
        out: &mut [Vec3],
    ) {
        if loads.is_empty() {
            return;
        }
        let complete = loads.iter().all(|&(v, _)| self.columns.is_complete(v));
        let start = out.to_vec();
        self.columns.add_field(loads, nodes, out);
        for ((o, &v), s) in out.iter_mut().zip(nodes).zip(&start) {
            if complete || self.columns.field_exact_at(v) {
                *o -= reduced.node_displacement(v, reduced_load);
            } else {
                *o = *s;
            }
        }
    }

    /// A bound on |the residual field| of `loads` at any node (m), `reduced_load` =
    /// UᵀF and `peak` a bound on |U| per unit coordinate over the surface.
    pub(super) fn field_bound(&self, loads: &[(usize, Vec3)], basis_part: f64) -> f64 {
        self.columns.field_bound(loads) + basis_part
    }

    /// [`Residual::field_bound`] at the nodes resting at least `distance` (m) from
    /// `point` ([`ComplianceColumns::field_bound_beyond`]).
    pub(super) fn field_bound_beyond(
        &self,
        loads: &[(usize, Vec3)],
        basis_part: f64,
        point: &Vec3,
        distance: f64,
    ) -> f64 {
        self.columns.field_bound_beyond(loads, point, distance) + basis_part
    }
}
