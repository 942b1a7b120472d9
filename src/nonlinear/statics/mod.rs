//! The full nonlinear static FEM: the equilibrium f_int(u) = f_ext of a hyperelastic
//! tetrahedral mesh with prescribed displacements, by Newton's method with a backtracking
//! line search on the total potential energy Π(u) = Σₑ Vₑ W(Fₑ) − f_ext·u. Each iteration
//! assembles the consistent tangent ∂f_int/∂u into K's block pattern and solves it with
//! the sparse Cholesky [`crate::fem::Factor`] the linear solvers use. It is the ground
//! truth for the runtime nonlinear models and an offline tool.

mod assemble;
mod newton;
mod problem;
mod types;

pub use problem::NonlinearStatics;
pub use types::{LinearConstraint, NewtonOptions, NewtonReport, NonlinearError};
