//! The composition layer, the library behind the `palpa` subcommands: [`serve`] a scene
//! (devices, threads, stream, recording), [`replay`] a trajectory, [`indent`] a probe,
//! [`precompute`] a scene's modes, compute a mesh's [`modes`]; [`config`] turns a scene's
//! device, haptic and stream sections into those parts' settings.

pub mod config;
pub mod indent;
pub mod modes;
pub mod precompute;
pub mod replay;
pub mod scene;
pub mod serve;
