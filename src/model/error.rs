//! Why a model step could not be taken.

use crate::fem::ColumnError;

/// Why a model step could not be taken. The step is skipped and the probe gets zero
/// force; nothing panics.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum ModelError {
    /// The step size is not a positive finite number of seconds.
    #[error("step size dt = {0} s is not positive and finite")]
    InvalidStep(f64),
    /// More constraint rows than the backend was sized for.
    #[error("{given} constraint rows exceed the limit of {limit}")]
    TooManyConstraints {
        /// Rows asked for.
        given: usize,
        /// Rows the backend holds.
        limit: usize,
    },
    /// A constraint names a node outside the mesh or has non-finite numbers.
    #[error("constraint {index}: {msg}")]
    BadConstraint {
        /// Index of the constraint in the list given to the step.
        index: usize,
        /// What is wrong.
        msg: String,
    },
    /// A compliance column could not be computed.
    #[error(transparent)]
    Column(#[from] ColumnError),
    /// The model's parts do not fit together (sizes, a free body with residual
    /// flexibility).
    #[error("{0}")]
    Setup(String),
}
