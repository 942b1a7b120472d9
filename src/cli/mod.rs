//! Implementations of the `palpa` subcommands, one file each (`src/main.rs` only
//! dispatches; `watch` lives in the Rust client, `palpa_client::watch`).

pub mod devices;
pub mod indent;
pub mod logging;
pub mod modes;
pub mod plot;
pub mod precompute;
pub mod progress;
pub mod record;
pub mod replay;
pub mod serve;
