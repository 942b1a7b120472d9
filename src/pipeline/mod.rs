//! The contact pipeline: probes' proxies, contact rows and friction over a tissue model.
//!
//! * [`Simulation`] — a tissue model probed through the god-object proxy, contact
//!   patch and friction: one model step → one local force model;
//! * [`SceneModel`] — the simulation over whichever backend a scene chose.

mod backend;
mod contact;
pub(crate) mod patch;

pub use backend::SceneModel;
pub use contact::{ProbeContact, Simulation};
