//! The contact pipeline: probes' proxies, contact rows and friction over a tissue model.
//!
//! * [`ContactPipeline`] — a tissue model probed through the god-object proxy, contact
//!   patch and friction: one model step → one local force model;
//! * [`SceneModel`] — the contact pipeline over whichever backend a scene chose;
//! * [`build()`] — a backend over an assembled FEM system, in its contact pipeline.

mod backend;
mod build;
mod contact;
mod frame;
pub(crate) mod patch;

pub use backend::SceneModel;
pub use build::{build, BackendSetup, ProbeSetup, StageError, COLUMN_CACHE, MAX_CONSTRAINT_ROWS};
pub use contact::{ContactPipeline, ProbeContact};
