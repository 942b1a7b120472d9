//! The reduced nonlinear static model: the displacement u = U q over a small basis of
//! static shapes, solved by Newton's method in the reduced coordinates q.
//!
//! The basis is K-orthonormal (UᵀKU = I, K the small-strain stiffness at rest) and grows
//! from shapes K⁻¹f: the constraints' own shapes K⁻¹c, and the nonlinear corrections
//! K⁻¹r, r the residual f_int(Uq) − f_ext − Σλc the last reduced solution leaves on the
//! whole mesh. Uᵀr is the reduced residual, zero at a reduced solution, so a correction
//! is K-orthogonal to the basis already, and its energy norm √(rᵀK⁻¹r) against
//! ‖u‖_K = |q| is the error estimate [`ReducedStatics::enrich`] returns: the adaptive
//! solve adds corrections until it is small (docs/math.md §12).
//!
//! The linear part of the internal forces is exact for free: with UᵀKU = I it is q.
//! Only the *active* terms (elements, and with nodal-averaged pressure nodes), those
//! past [`crate::nonlinear::ACTIVE_NONLINEARITY`] at the last correction, add their
//! large-strain law's difference from its linearisation.

mod allowance;
mod basis;
mod enrich;
mod forces;
mod model;
mod newton;
mod recycle;
mod rows;
mod tangent;

pub(super) use basis::BasisUpdate;
pub use enrich::Estimate;
pub use model::ReducedStatics;
pub(super) use newton::{SolveWith, StepEnd};
pub(super) use recycle::Recycled;
pub use rows::ReducedRows;
pub(super) use tangent::Tangent;
