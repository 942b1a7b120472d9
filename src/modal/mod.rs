//! Modal model: precompute of the lowest vibration modes, mode selection, residual flexibility, and the runtime oscillators.

pub mod oscillator;

pub use oscillator::{ModeTransition, Oscillators};
