//! The composition layer: what composes a probe's contact with a tissue model, and what
//! the model thread steps.
//!
//! * [`Simulation`] — a tissue model probed through the god-object proxy, contact
//!   patch and friction: one model step → one local force model;
//! * [`SceneModel`] — the simulation over whichever backend a scene chose;
//! * [`SceneVisual`] — the scene model as viewers see it (visual snapshots);
//! * [`ServeStep`] — what `palpa serve` runs on the model thread: viewers' commands,
//!   the model step, and the snapshots at the visual rate;
//! * [`ProbeSlots`] — several devices on one tissue: the first device's model thread
//!   steps every probe, the others hand their probe in ([`ProbeFollower`]);
//! * [`tick_csv`] — one row per haptic tick, as `palpa replay` writes it and a recorded
//!   session's `ticks.csv` holds it;
//! * (recordings are written and read by the `recording` module).

mod scene_model;
mod serve_step;
mod shared_probes;
mod simulation;
pub mod tick_csv;
mod visual;

pub use scene_model::SceneModel;
pub use serve_step::{ServeStep, Stylus, ViewerLink};
pub use shared_probes::{ProbeFollower, ProbeSlots};
pub use simulation::{ProbeContact, Simulation};
pub use visual::SceneVisual;
