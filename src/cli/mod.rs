//! Implementations of the `palpa` subcommands (`src/main.rs` only dispatches).

pub mod modes;
pub mod plot;
pub mod precompute;
pub mod replay;
pub mod serve;
