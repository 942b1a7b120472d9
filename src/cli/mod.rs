//! The `palpa` subcommands, one file each: each parses its arguments, calls the library
//! ([`crate::app`]) and prints (`src/main.rs` only dispatches; `watch` lives in the Rust
//! client, `palpa_client::watch`).

pub mod calibrate;
pub mod devices;
pub mod indent;
pub mod logging;
pub mod map;
pub mod modes;
pub mod plot;
pub mod precompute;
pub mod progress;
pub mod record;
pub mod recording;
pub mod replay;
pub mod serve;
pub mod serve_args;
