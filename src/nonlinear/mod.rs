//! Large-strain (hyperelastic) tissue: material laws, the full nonlinear static FEM, and
//! its reduced model.
//!
//! [`Hyperelastic`] gives W(F), P(F) and dP for the linear, neo-Hookean and
//! Veronda–Westmann laws, all matching linear elasticity (E, ν) at small strain;
//! [`NonlinearStatics`] solves a mesh's static equilibrium under loads and prescribed
//! displacements by Newton's method on the existing sparse Cholesky;
//! [`ReducedStatics`] solves it in a small basis of static shapes grown to the full
//! model's accuracy, its forces summed over the strained elements or over a trained
//! [`Cubature`] of a few of them; [`NonlinearStatics::press_sphere`] presses a rigid
//! sphere on the full model (an active set of surface nodes), and
//! [`NonlinearStatics::press_swept_sphere`] with the runtime's contact rows; [`NonlinearTissue`] runs the reduced model as the
//! `nonlinear` backend's tissue model (the lowest modes dynamic, the rest static, with
//! contact; [`ReducedDynamics`]).
//!
//! Times and counts in this module's comments were measured on "the 5 mm block": the
//! default scene's block with uniform 5 mm cells, its mesh until 2026-11-28 (the default
//! is graded now, 17,298 DOFs against 10,584; docs/benchmarks.md has the model step on
//! both).

mod background;
mod correction;
mod cubature;
mod dynamics;
mod law;
mod line_search;
mod quadrature;
mod reduced;
mod sphere;
mod statics;
mod surface_bound;
mod swept_sphere;
#[cfg(test)]
mod test_block;
mod tissue;
mod unit_columns;

pub use cubature::{train_cubature, Cubature};
pub use dynamics::ReducedDynamics;
pub use law::{Hyperelastic, LawKind};
pub use reduced::{Estimate, ReducedStatics, ACTIVE_NONLINEARITY};
pub use sphere::{RigidSphere, SphereContactState, SphereRow, MAX_SPHERE_ROUNDS};
pub use statics::{
    LinearConstraint, NewtonOptions, NewtonReport, NonlinearError, NonlinearStatics,
};
pub use swept_sphere::{SweptPressState, SweptSphere, MAX_SWEPT_ROUNDS};
pub use tissue::{NonlinearParams, NonlinearTissue, TissueModes};
