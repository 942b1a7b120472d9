//! palpa: a haptic force-feedback server for soft tissue.
//!
//! Data flow (see `docs/architecture.md`): a tetrahedral [`mesh`] becomes sparse
//! stiffness and mass matrices in [`fem`], is precomputed into a [`modal`] basis or a
//! [`condensed`] surface compliance, and is advanced by the 200 Hz model thread with the
//! probe as a [`contact`] constraint ([`session`] composes the two). The 1 kHz [`haptic`] thread reads a [`device`],
//! evaluates the local force model the model thread published, and writes the force back.
//! The [`stream`] sends 30 Hz visual frames to render clients.

pub mod app;
pub mod budget;
pub mod cli;
pub mod condensed;
pub mod contact;
pub mod device;
pub mod fem;
pub mod files;
pub mod haptic;
pub mod mesh;
pub mod modal;
pub mod nonlinear;
pub mod pipeline;
pub mod recording;
pub mod rt;
pub mod scene;
pub mod stream;
pub mod tissue;

/// A point or vector in scene space (m, N, m/s …, by context).
pub type Vec3 = nalgebra::Vector3<f64>;
/// A 3×3 block (stiffness N/m, compliance m/N, rotation …, by context).
pub type Mat3 = nalgebra::Matrix3<f64>;
