//! Condensed static FEM (Basdogan; Bro-Nielsen & Cotin): linear elasticity condensed
//! to the surface. The compliance between surface points is K⁻¹ restricted to them;
//! point interaction needs only the columns of the contacted nodes, computed from the
//! sparse Cholesky factor on demand ([`ComplianceColumns`](crate::fem::ComplianceColumns)). An imposed displacement at
//! a contact point gives the force by a small solve (3×3 for a held point, 1×1 for a
//! frictionless contact), and the surface displacement by superposition of columns.

use crate::fem::{ComplianceColumns, Support};
use crate::model::{
    add_point_compliance, push_nodal_loads, validate_step, ConstraintKind, DenseConstraintSolver,
    ModelError, PointConstraint, TissueModel,
};
use crate::{Mat3, Vec3};

/// The condensed static tissue model. Static: the step size does not change the
/// response, and only position constraints are meaningful.
pub struct CondensedModel {
    rest: Vec<Vec3>,
    triangles: Vec<[usize; 3]>,
    surface_nodes: Vec<usize>,
    columns: ComplianceColumns,
    /// Nodal forces of the last step (node, N), for the displacement field.
    loads: Vec<(usize, Vec3)>,
    row_dir: Vec<Vec3>,
    row_of: Vec<usize>,
    s: Vec<f64>,
    rhs: Vec<f64>,
    f: Vec<f64>,
    unilateral: Vec<bool>,
    solver: DenseConstraintSolver,
}

impl CondensedModel {
    /// Builds the model from rest positions (all nodes, m), outward surface triangles
    /// and nodes, and a K⁻¹ column cache. When the surface has at most
    /// `precompute_cap` nodes, every surface column is computed now (one block solve)
    /// so no step ever waits for a solve. `max_rows` bounds the constraint rows per
    /// step.
    pub fn new(
        rest: Vec<Vec3>,
        triangles: Vec<[usize; 3]>,
        surface_nodes: Vec<usize>,
        mut columns: ComplianceColumns,
        precompute_cap: usize,
        max_rows: usize,
    ) -> Result<Self, ModelError> {
        if columns.n_nodes() != rest.len() {
            return Err(ModelError::Setup(format!(
                "the column cache covers {} nodes, the mesh has {}",
                columns.n_nodes(),
                rest.len()
            )));
        }
        if surface_nodes.len() <= precompute_cap {
            columns.precompute(&surface_nodes)?;
        }
        Ok(Self {
            rest,
            triangles,
            surface_nodes,
            columns,
            loads: Vec::with_capacity(3 * max_rows),
            row_dir: vec![Vec3::zeros(); max_rows],
            row_of: vec![0; max_rows],
            s: vec![0.0; max_rows * max_rows],
            rhs: vec![0.0; max_rows],
            f: vec![0.0; max_rows],
            unilateral: vec![false; max_rows],
            solver: DenseConstraintSolver::new(max_rows),
        })
    }

    /// The K⁻¹ column cache.
    pub fn columns(&mut self) -> &mut ComplianceColumns {
        &mut self.columns
    }
}

impl TissueModel for CondensedModel {
    fn rest_positions(&self) -> &[Vec3] {
        &self.rest
    }

    fn surface_triangles(&self) -> &[[usize; 3]] {
        &self.triangles
    }

    fn surface_nodes(&self) -> &[usize] {
        &self.surface_nodes
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
            self.rest.len(),
            self.solver.capacity(),
        )?;
        if let Some(c) = constraints.first() {
            if c.kind != ConstraintKind::Position {
                return Err(ModelError::BadConstraint {
                    index: 0,
                    msg: format!(
                        "the static condensed model takes position constraints only, not {:?}",
                        c.kind
                    ),
                });
            }
        }
        let mut row = 0;
        for (ci, c) in constraints.iter().enumerate() {
            let x_rest = c.rest_point(&self.rest);
            for r in 0..c.rows() {
                let d = c.direction(r);
                self.row_dir[row] = d;
                self.row_of[row] = ci;
                self.unilateral[row] = c.unilateral;
                self.rhs[row] = d.dot(&(c.target - x_rest));
                row += 1;
            }
        }
        self.s[..m * m].fill(0.0);
        let columns = &mut self.columns;
        add_point_compliance(constraints, m, &mut self.s[..m * m], |a, b| {
            Ok(columns.point_block(&a.support, &b.support)?)
        })?;
        self.solver.solve(
            m,
            &self.s[..m * m],
            &self.rhs[..m],
            &self.unilateral[..m],
            &mut self.f[..m],
        );
        forces[..constraints.len()].fill(Vec3::zeros());
        for i in 0..m {
            forces[self.row_of[i]] += self.row_dir[i] * self.f[i];
        }
        self.loads.clear();
        push_nodal_loads(constraints, forces, &mut self.loads);
        self.columns.advance_completion(dt);
        Ok(())
    }

    fn point_compliance(&mut self, support: &Support) -> Result<Mat3, ModelError> {
        Ok(self.columns.point_block(support, support)?)
    }

    /// Bounds what [`TissueModel::displacements`] reports
    /// ([`ComplianceColumns::field_bound`]).
    fn displacement_bound(&self) -> f64 {
        self.columns.field_bound(&self.loads)
    }

    fn reset(&mut self) {
        self.loads.clear();
    }

    /// Superposition of the last step's loads over K⁻¹ ([`ComplianceColumns::add_field`]):
    /// exact at every node once the loads' columns are complete, and from the first
    /// step at the cached nodes (the contact patch); until then nodes never contacted
    /// leave a newly contacted node's load out.
    fn displacements(&mut self, nodes: &[usize], out: &mut [Vec3]) {
        out.fill(Vec3::zeros());
        self.columns.add_field(&self.loads, nodes, out);
    }
}
