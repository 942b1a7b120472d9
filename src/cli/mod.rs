//! Implementations of the `palpa` subcommands, one file each (`src/main.rs` only
//! dispatches; `watch` lives in the Rust client, `palpa_client::watch`).

pub use crate::app::{indent, modes, replay, serve};

pub mod devices;
pub mod plot;
pub mod precompute;
pub mod progress;
pub mod record;
pub mod recording;
