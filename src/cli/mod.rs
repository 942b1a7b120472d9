//! Implementations of the `palpa` subcommands (`src/main.rs` only dispatches).

pub mod modes;
