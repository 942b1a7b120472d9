//! External point loads on the tissue: forces applied at material points (a probe's
//! friction dragging the surface), held by a backend from one
//! [`TissueModel::set_loads`](super::TissueModel::set_loads) to the next and solved
//! together with the step's constraints.

use crate::fem::{ComplianceColumns, Support, MAX_SUPPORT_NODES};
use crate::Vec3;

use super::error::ModelError;

/// An external force on the tissue at a material point: `force` spread over the
/// support's nodes by its weights (node v gets w_v · `force`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PointLoad {
    /// The material point the force acts at: nodes and weights that carry it.
    pub support: Support,
    /// Force on the tissue (N, scene frame).
    pub force: Vec3,
}

impl PointLoad {
    /// Whether every number in the load is finite (the caller checks the node indices
    /// against its mesh).
    pub fn is_finite(&self) -> bool {
        self.support.is_finite() && self.force.iter().all(|x| x.is_finite())
    }
}

/// The loads a backend holds between steps: checked, at most `capacity` of them, and
/// their nodal forces, in storage sized once so that neither setting nor using them
/// allocates.
#[derive(Clone, Debug)]
pub(crate) struct HeldLoads {
    /// The loads with a non-zero force.
    loads: Vec<PointLoad>,
    /// Their nodal forces (node, N): each load's force split by its support's weights.
    nodal: Vec<(usize, Vec3)>,
    capacity: usize,
}

impl HeldLoads {
    /// Room for at most `capacity` loads, none held.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            loads: Vec::with_capacity(capacity),
            nodal: Vec::with_capacity(capacity * MAX_SUPPORT_NODES),
            capacity,
        }
    }

    /// Checks `loads` against a mesh of `n_nodes` nodes and holds them in place of the
    /// current ones. On an error nothing changes.
    pub(crate) fn set(&mut self, loads: &[PointLoad], n_nodes: usize) -> Result<(), ModelError> {
        if loads.len() > self.capacity {
            return Err(ModelError::TooManyLoads {
                given: loads.len(),
                limit: self.capacity,
            });
        }
        for (i, l) in loads.iter().enumerate() {
            if !l.is_finite() {
                return Err(ModelError::BadLoad {
                    index: i,
                    msg: "non-finite force, weight or rest point".into(),
                });
            }
            if let Some(&v) = l.support.nodes().iter().find(|&&v| v >= n_nodes) {
                return Err(ModelError::BadLoad {
                    index: i,
                    msg: format!("node {v} is not in the mesh of {n_nodes} nodes"),
                });
            }
        }
        self.clear();
        for l in loads.iter().filter(|l| l.force != Vec3::zeros()) {
            self.loads.push(*l);
            for (v, w) in l.support.iter().filter(|&(_, w)| w != 0.0) {
                self.nodal.push((v, l.force * w));
            }
        }
        Ok(())
    }

    /// Drops every load.
    pub(crate) fn clear(&mut self) {
        self.loads.clear();
        self.nodal.clear();
    }

    /// Whether no load is held.
    pub(crate) fn is_empty(&self) -> bool {
        self.loads.is_empty()
    }

    /// The held loads with a non-zero force.
    pub(crate) fn loads(&self) -> &[PointLoad] {
        &self.loads
    }

    /// The nodal forces of the held loads (node, N).
    pub(crate) fn nodal(&self) -> &[(usize, Vec3)] {
        &self.nodal
    }

    /// Σ_l C(p, l) F_l: the static displacement (m) of the material point `p` under the
    /// held loads, from the K⁻¹ blocks of `columns` (exact from the first step: new
    /// nodes are forward-solved and cached).
    pub(crate) fn displacement_at(
        &self,
        columns: &mut ComplianceColumns,
        p: &Support,
    ) -> Result<Vec3, ModelError> {
        let mut u = Vec3::zeros();
        for l in &self.loads {
            u += columns.point_block(p, &l.support)? * l.force;
        }
        Ok(u)
    }

    /// Makes sure the loaded nodes' K⁻¹ columns are cached, so the displacement field
    /// includes the loads (a step with no constraint queries no block).
    pub(crate) fn cache_columns(&self, columns: &mut ComplianceColumns) -> Result<(), ModelError> {
        if self.nodal.is_empty() {
            return Ok(());
        }
        Ok(columns.cache(self.nodal.iter().map(|&(v, _)| v))?)
    }
}
