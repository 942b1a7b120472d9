//! The composition layer: the library calls behind the `palpa` subcommands.

pub mod indent;
pub mod modes;
pub mod replay;
pub mod serve;
