//! Large-strain (hyperelastic) tissue: material laws and the full nonlinear static FEM.
//!
//! [`Hyperelastic`] gives W(F), P(F) and dP for the linear, neo-Hookean and
//! Veronda–Westmann laws, all matching linear elasticity (E, ν) at small strain;
//! [`NonlinearStatics`] solves a mesh's static equilibrium under loads and prescribed
//! displacements by Newton's method on the existing sparse Cholesky.

mod law;
mod reduced;
mod statics;

pub use law::{Hyperelastic, LawKind};
pub use reduced::{Estimate, ReducedStatics, ACTIVE_NONLINEARITY};
pub use statics::{
    LinearConstraint, NewtonOptions, NewtonReport, NonlinearError, NonlinearStatics,
};
