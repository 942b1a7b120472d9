//! What the static solvers take and report: their errors, Newton's stopping rule, a
//! linear equality constraint and a solve's report.

use crate::fem::FemError;

/// Why a nonlinear static solve failed.
#[derive(Debug, thiserror::Error)]
pub enum NonlinearError {
    /// The number of material laws does not match the mesh.
    #[error("{given} material laws for {tets} tetrahedra")]
    LawCount {
        /// Laws given.
        given: usize,
        /// Tetrahedra in the mesh.
        tets: usize,
    },
    /// A nodal array has the wrong length.
    #[error("{what}: {given} entries for {nodes} nodes")]
    NodeCount {
        /// Which array.
        what: &'static str,
        /// Entries given.
        given: usize,
        /// Nodes in the mesh.
        nodes: usize,
    },
    /// An element's strain energy is not finite (a displacement that is not).
    #[error("tetrahedron {0} has no finite strain energy under the displacement")]
    NonFinite(usize),
    /// No step along the Newton direction lowered the energy without inverting an element.
    #[error("line search failed at iteration {iteration} (residual {residual:e} N)")]
    LineSearch {
        /// Newton iteration (from 0).
        iteration: usize,
        /// Residual norm there (N).
        residual: f64,
    },
    /// Newton did not reach the tolerance.
    #[error("Newton did not converge in {iterations} iterations (residual {residual:e} N, tolerance {tolerance:e} N)")]
    NotConverged {
        /// Iterations run.
        iterations: usize,
        /// Last residual norm (N).
        residual: f64,
        /// Tolerance (N).
        tolerance: f64,
    },
    /// A contact problem is ill-posed or its active set did not settle.
    #[error("{0}")]
    Contact(String),
    /// A reduced basis already holds as many shapes as it has room for.
    #[error("the reduced basis is full ({0} shapes)")]
    BasisFull(usize),
    /// The tangent could not be factorised even with regularisation.
    #[error(transparent)]
    Fem(#[from] FemError),
}

/// Newton's stopping rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NewtonOptions {
    /// Converged when ‖r‖ ≤ `relative` × (‖f_ext‖ + ‖reactions‖) (dimensionless).
    pub relative: f64,
    /// Iteration limit.
    pub max_iterations: usize,
}

impl Default for NewtonOptions {
    fn default() -> Self {
        Self {
            relative: 1e-10,
            max_iterations: 50,
        }
    }
}

/// One linear equality constraint on the displacement, cᵀu = value, held by a force
/// λ c on the body.
#[derive(Clone, Debug, PartialEq)]
pub struct LinearConstraint {
    /// (DOF index 3·node + axis, coefficient c_d) pairs (dimensionless weights).
    pub coefficients: Vec<(usize, f64)>,
    /// Target of cᵀu (m).
    pub value: f64,
    /// λ (N): the starting guess on input, the constraint force's magnitude on output.
    pub multiplier: f64,
}

/// How a solve went.
#[derive(Clone, Debug, PartialEq)]
pub struct NewtonReport {
    /// ‖r‖ of the free DOFs before each iteration and at the end (N).
    pub residuals: Vec<f64>,
    /// Step length the line search took in each iteration (1 = full Newton step).
    pub steps: Vec<f64>,
    /// Total potential energy at the solution (J).
    pub energy: f64,
}
