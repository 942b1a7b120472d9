//! Large-strain (hyperelastic) tissue: material laws, the full nonlinear static FEM, and
//! its reduced model.
//!
//! [`Hyperelastic`] gives W(F), P(F) and dP for the linear, neo-Hookean and
//! Veronda–Westmann laws, all matching linear elasticity (E, ν) at small strain and
//! defined for inverted elements too; [`NonlinearStatics`] solves a mesh's static
//! equilibrium under loads and prescribed displacements by Newton's method on the
//! existing sparse Cholesky, with element or nodal-averaged pressure;
//! [`ReducedStatics`] solves it in a small basis of static shapes grown to the full
//! model's accuracy, its forces summed over the strained terms or over a trained
//! [`Cubature`] of a few of them; [`NonlinearStatics::press_sphere`] presses a rigid
//! sphere on the full model (an active set of surface nodes); [`NonlinearTissue`] runs
//! the reduced model as the `nonlinear` backend's tissue model (the lowest modes
//! dynamic, the rest static, with contact; [`ReducedDynamics`]).

mod background;
mod correction;
mod cubature;
mod dynamics;
mod kinematics;
mod law;
mod line_search;
mod quadrature;
mod reduced;
mod sphere;
mod statics;
mod surface_bound;
#[cfg(test)]
mod test_block;
mod tissue;
mod volume;

pub use correction::ACTIVE_NONLINEARITY;
pub use cubature::train_cubature;
pub use dynamics::ReducedDynamics;
pub use law::{Hyperelastic, LawKind};
pub use quadrature::{Active, Cubature};
pub use reduced::{Estimate, ReducedRows, ReducedStatics};
pub use sphere::{RigidSphere, SphereContactState, SphereRow, MAX_SPHERE_ROUNDS};
pub use statics::{
    LinearConstraint, NewtonOptions, NewtonReport, NonlinearError, NonlinearStatics,
};
pub use tissue::{Degradation, NonlinearParams, NonlinearTissue, StepHealth, TissueModes};
pub use volume::NodalVolume;
