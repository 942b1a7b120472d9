//! Serving a scene (`palpa serve`): a scene becomes a tissue model (precomputed once,
//! cached after); each device drives a 1 kHz haptic thread; the 200 Hz model thread steps
//! the tissue and publishes visual snapshots; the stream server sends them to viewers,
//! whose control messages move the virtual stylus and reset the tissue.
//!
//! ```text
//!  viewer ──control──► stream server ──► ControlRouter ──reset──► ServeStep (model thread)
//!                                              │ move                   │ 200 Hz
//!                                              ▼                        │
//!  device (HID | sim | replay) ◄─force─ haptic thread 1 kHz ◄─local force model
//!                                                                       │ snapshots
//!  viewers ◄── frames 30 Hz ── publisher ◄──────────────────────────────┘
//! ```

mod builder;
mod control;
mod devices;
mod handle;
mod hands;
mod model_thread;
mod probes;
mod safety;
mod stats;
mod summary;

pub use builder::{Serve, ServeBuilder, STOPPED_WHILE_PREPARING};
pub use control::{ControlRouter, ResetReceiver, Stylus};
pub use devices::DeviceSummary;
pub use handle::{DeviceReport, ServeHandle, ServeReport};
pub use model_thread::{ServeStep, ViewerLink};
pub use probes::{ProbeFollower, ProbeSlots};
pub use summary::{ModelSummary, Started};
