//! The runtime nonlinear tissue model: the reduced model ([`crate::nonlinear::ReducedStatics`])
//! behind the tissue-model interface the contact pipeline drives.
//!
//! Each step solves the reduced large-strain equations under the step's contact rows
//! (Newton on the reduced coordinates, each iteration's rows a complementarity problem,
//! from the last step's state and tangent) and reports the rows' forces. The basis
//! starts with the lowest vibration modes, which move dynamically by an
//! energy-conserving step ([`crate::nonlinear::ReducedDynamics`]); every later shape is
//! static, in equilibrium at each step's end: the nonlinear corrections, computed in step
//! or, in real time, on their own thread and joined as they finish
//! ([`NonlinearTissue::correct_in_background`]). What the basis does not hold yet of the
//! contact points' linear response is carried by residual flexibility (`residual.rs`),
//! so any number of contact rows fits, and a full basis is recycled
//! (`reduced/recycle.rs`). A step that fails is recovered from (`recovery.rs`) and
//! counted ([`StepHealth`]). Without modes the model is quasi-static.

mod beside;
mod health;
mod interface;
mod model;
mod recovery;
mod residual;
mod rows;
mod step;

pub use health::{Degradation, StepHealth};
pub use model::{NonlinearParams, NonlinearTissue, TissueModes};
