//! Linear tetrahedral FEM: materials, element stiffness, lumped mass, fixed nodes, sparse
//! assembly of K and M over the free degrees of freedom, and the sparse Cholesky
//! [`Factor`] every solver in palpa shares.
//!
//! Data flow: a [`TetMesh`](crate::mesh::TetMesh) and a [`MaterialMap`] give one
//! [`Material`] per tetrahedron; [`Fix`] predicates give the fixed nodes and a [`DofMap`]
//! that drops their DOFs before anything else; [`assemble`] builds the [`FemSystem`]
//! (sparse symmetric K, diagonal lumped M); [`Factor`] factorises K (or K − σM);
//! [`ComplianceColumns`] keeps the K⁻¹ columns of contacted nodes, and a [`Support`]
//! is a material point as weighted nodes.

mod assemble;
mod columns;
mod element;
mod factor;
mod fixed;
mod material;
mod ordering;
mod pressure;
mod support;

pub use assemble::{assemble, assemble_with, lumped_mass, FemSystem, Pressure};
pub use columns::{
    ColumnError, ComplianceColumns, COMPLETION_PERIOD, DEFAULT_COMPLETION_BUDGET, EXACT_PENDING,
};
pub use element::{TetElement, ELEMENT_DOFS};
pub use factor::{Factor, Ordering, PathColumns, PathWorkspace, AUTO_ND_NODES};
pub use fixed::{fixed_nodes, Axis, DofMap, Fix};
pub use material::{Material, MaterialMap, MaterialSource, Shape, LOCKING_POISSON};
pub use ordering::{expand_node_permutation, nested_dissection, node_graph, NodeGraph};
pub use pressure::NodalPressure;
pub use support::{Support, MAX_SUPPORT_NODES};

/// Why an FEM model could not be built or solved. Every variant names what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum FemError {
    /// A material parameter is out of its physical range.
    #[error("{what}: {field} = {value} is invalid: {reason}")]
    Material {
        /// Which material (e.g. "material of region 2", "default material").
        what: String,
        /// Field name (`young`, `poisson`, `density`).
        field: &'static str,
        /// The offending value.
        value: f64,
        /// The allowed range.
        reason: &'static str,
    },
    /// The number of per-tetrahedron materials does not match the mesh.
    #[error("{given} materials for {tets} tetrahedra")]
    MaterialCount {
        /// Materials given.
        given: usize,
        /// Tetrahedra in the mesh.
        tets: usize,
    },
    /// A fixed-node specification is unusable.
    #[error("fixed nodes: {0}")]
    Fix(String),
    /// Every node is fixed: there is nothing left to solve for.
    #[error("all {0} nodes are fixed; nothing is free to move")]
    AllFixed(usize),
    /// The (shifted) stiffness matrix is not positive definite, e.g. a body that is not
    /// fully constrained factorised without a shift.
    #[error("sparse Cholesky failed: matrix of {n} DOFs is not positive definite ({context})")]
    NotPositiveDefinite {
        /// Matrix dimension.
        n: usize,
        /// What was being factorised.
        context: String,
    },
    /// A right-hand side does not match the factor.
    #[error("dimension mismatch: {0}")]
    Dimension(String),
    /// The sparse factorisation failed for another reason (index overflow, out of memory).
    #[error("sparse factorisation: {0}")]
    Sparse(String),
}
