//! Modal model: precompute of the lowest vibration modes, mode selection, residual flexibility, and the runtime oscillators.

pub mod cache;
mod lanczos;
pub mod oscillator;
pub mod precompute;
pub mod residual;
pub mod runtime;
pub mod select;

pub use cache::{input_hash, precompute_hash, CacheError, ModalCache};
pub use oscillator::{ModeTransition, Oscillators};
pub use precompute::{
    compute_modes, precompute, precompute_assembled, EigenInfo, ModalBasis, ModalError,
    PrecomputeParams, Precomputed, Progress, Timings,
};
pub use runtime::{ModalParams, ModalRuntime};
pub use select::{select_modes, ModeFate, ModeReport, SelectionParams};
