//! Condensed static FEM (Basdogan; Bro-Nielsen & Cotin): linear elasticity condensed
//! to the surface. The compliance between surface points is K⁻¹ restricted to them;
//! point interaction needs only the columns of the contacted nodes, computed from the
//! sparse Cholesky factor on demand ([`crate::fem::ComplianceColumns`]). An imposed
//! displacement at a contact point gives the force by a small solve (3×3 for a held
//! point, 1×1 for a frictionless contact), and the surface displacement by superposition
//! of columns.
//!
//! External point loads ([`TissueModel::set_loads`]) act together with the constraints:
//! each row's right-hand side subtracts what the loads displace its point along its
//! direction, dᵢ · Σ_l C(pᵢ, l) F_l, so the constraint forces are those that hold the
//! targets with the loads acting, and the field superposes the loads' columns with the
//! constraint forces'.

use crate::fem::{ComplianceColumns, Support, MAX_SUPPORT_NODES};
use crate::tissue::{
    add_point_compliance, push_nodal_loads, require_positions, validate_step, ConstraintRows,
    HeldLoads, ModelError, PointConstraint, PointLoad, TissueGeometry, TissueModel,
};
use crate::{Mat3, Vec3};

/// Bytes of K⁻¹ columns per surface node per mesh node: three columns of three
/// components, f64 ([`ComplianceColumns::new`]).
const COLUMN_BYTES_PER_MESH_NODE: f64 = 72.0;

/// What [`CondensedModel::within`] may compute at the start: every surface column, when
/// the surface has at most `nodes` nodes and they take at most `bytes`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrecomputeLimit {
    /// Surface nodes at most.
    pub nodes: usize,
    /// Bytes of columns at most.
    pub bytes: f64,
}

/// The condensed static tissue model. Static: the step size does not change the
/// response, and only position constraints are meaningful.
pub struct CondensedModel {
    geometry: TissueGeometry,
    columns: ComplianceColumns,
    /// Nodal forces of the last step (node, N): the constraint forces' and the point
    /// loads', for the displacement field.
    loads: Vec<(usize, Vec3)>,
    /// The external point loads held from step to step.
    point_loads: HeldLoads,
    rows: ConstraintRows,
}

impl CondensedModel {
    /// Builds the model from the rest shape and surface and a K⁻¹ column cache. When the surface has at most
    /// `precompute_cap` nodes, every surface column is computed now (one block solve)
    /// so no step ever waits for a solve. `max_rows` bounds the constraint rows per
    /// step and the point loads held at once.
    pub fn new(
        geometry: TissueGeometry,
        columns: ComplianceColumns,
        precompute_cap: usize,
        max_rows: usize,
    ) -> Result<Self, ModelError> {
        let limit = PrecomputeLimit {
            nodes: precompute_cap,
            bytes: f64::INFINITY,
        };
        Self::within(geometry, columns, limit, max_rows)
    }

    /// [`Self::new`] with the start's columns bounded in bytes too: over `limit.bytes`,
    /// none is computed at the start (each as the probe first touches its node, as
    /// exact) and a warning says how much they would take and what to raise.
    pub fn within(
        geometry: TissueGeometry,
        mut columns: ComplianceColumns,
        limit: PrecomputeLimit,
        max_rows: usize,
    ) -> Result<Self, ModelError> {
        if columns.n_nodes() != geometry.rest.len() {
            return Err(ModelError::Setup(format!(
                "the column cache covers {} nodes, the mesh has {}",
                columns.n_nodes(),
                geometry.rest.len()
            )));
        }
        let surface = geometry.surface_nodes.len();
        let bytes = precompute_bytes(surface, geometry.rest.len());
        if surface <= limit.nodes && bytes > limit.bytes {
            tracing::warn!(
                "condensed backend: the K⁻¹ columns of the {surface} surface nodes would \
                 take {} at the start, over the budget of {} \
                 ([backend.condensed] precompute_budget_mb); each is computed when the \
                 probe first touches its node instead (the same forces; that touch waits \
                 for a solve). Raise the budget to compute them all at the start",
                crate::budget::gb(bytes),
                crate::budget::gb(limit.bytes)
            );
        } else if surface <= limit.nodes {
            columns.precompute(&geometry.surface_nodes)?;
        }
        Ok(Self {
            geometry,
            columns,
            // Each constraint row and each load on at most MAX_SUPPORT_NODES nodes.
            loads: Vec::with_capacity(2 * max_rows * MAX_SUPPORT_NODES),
            point_loads: HeldLoads::new(max_rows),
            rows: ConstraintRows::new(max_rows),
        })
    }

    /// The K⁻¹ column cache.
    pub fn columns(&mut self) -> &mut ComplianceColumns {
        &mut self.columns
    }

    /// The K⁻¹ column cache, read-only.
    pub fn columns_ref(&self) -> &ComplianceColumns {
        &self.columns
    }

    /// Nodal forces of the last step's constraints and point loads (node, N): the
    /// displacement field is their K⁻¹ response.
    pub fn last_loads(&self) -> &[(usize, Vec3)] {
        &self.loads
    }
}

/// Bytes of the K⁻¹ columns of `surface` nodes on a mesh of `mesh_nodes` nodes.
pub fn precompute_bytes(surface: usize, mesh_nodes: usize) -> f64 {
    COLUMN_BYTES_PER_MESH_NODE * surface as f64 * mesh_nodes as f64
}

impl TissueModel for CondensedModel {
    fn geometry(&self) -> &TissueGeometry {
        &self.geometry
    }

    fn advance(
        &mut self,
        dt: f64,
        constraints: &[PointConstraint],
        forces: &mut [Vec3],
    ) -> Result<(), ModelError> {
        let m = validate_step(
            dt,
            constraints,
            forces,
            self.geometry.rest.len(),
            self.rows.capacity(),
        )?;
        require_positions(constraints, "static condensed model")?;
        self.rows.lay_out(constraints);
        let mut row = 0;
        for c in constraints {
            let x_rest = c.rest_point(&self.geometry.rest);
            // What the loads alone displace the point by.
            let u_loads = self
                .point_loads
                .displacement_at(&mut self.columns, &c.support)?;
            for _ in 0..c.rows() {
                let d = self.rows.direction(row);
                self.rows.rhs_mut(m)[row] = d.dot(&(c.target - x_rest - u_loads));
                row += 1;
            }
        }
        let s = self.rows.s_mut(m);
        s.fill(0.0);
        let columns = &mut self.columns;
        add_point_compliance(constraints, m, s, |a, b| {
            Ok(columns.point_block(&a.support, &b.support)?)
        })?;
        // The field needs the loads' columns even in a step without constraints.
        self.point_loads.cache_columns(&mut self.columns)?;
        self.rows.solve(m, true);
        self.rows.constraint_forces(m, constraints.len(), forces);
        self.loads.clear();
        push_nodal_loads(constraints, forces, &mut self.loads);
        self.loads.extend_from_slice(self.point_loads.nodal());
        self.columns.advance_completion(dt)?;
        Ok(())
    }

    fn set_loads(&mut self, loads: &[PointLoad]) -> Result<(), ModelError> {
        self.point_loads.set(loads, self.geometry.rest.len())
    }

    fn constraint_capacity(&self) -> usize {
        self.rows.capacity()
    }

    fn compliance_between(&mut self, a: &Support, b: &Support) -> Result<Mat3, ModelError> {
        Ok(self.columns.point_block(a, b)?)
    }

    /// Bounds what [`TissueModel::displacements`] reports
    /// ([`ComplianceColumns::field_bound`]).
    fn displacement_bound(&self) -> f64 {
        self.columns.field_bound(&self.loads)
    }

    /// [`ComplianceColumns::field_bound_beyond`].
    fn displacement_bound_beyond(&self, point: &Vec3, distance: f64) -> f64 {
        self.columns
            .field_bound_beyond(&self.loads, point, distance)
    }

    fn anticipates(&self) -> bool {
        self.columns.completes_in_background()
    }

    fn anticipate(&mut self, nodes: &[usize]) {
        self.columns.anticipate(nodes);
    }

    fn reset(&mut self) {
        self.loads.clear();
        self.point_loads.clear();
    }

    /// Superposition of the last step's loads (constraint forces and point loads) over
    /// K⁻¹ ([`ComplianceColumns::add_field`]): exact at every node once the loads'
    /// columns are complete, and from the first step at the cached nodes (the contact
    /// patch and the loaded nodes); until then nodes never contacted leave a newly
    /// contacted node's load out.
    fn displacements(&mut self, nodes: &[usize], out: &mut [Vec3]) {
        out.fill(Vec3::zeros());
        self.columns.add_field(&self.loads, nodes, out);
    }
}
