//! Why a model step could not be taken, or point loads could not be set.

use crate::fem::ColumnError;

/// Why a model step could not be taken (the step is skipped and the probe gets zero
/// force) or loads could not be set (the held loads stay as they were); nothing panics.
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
    /// More external loads than the backend was sized for.
    #[error("{given} point loads exceed the limit of {limit}")]
    TooManyLoads {
        /// Loads given.
        given: usize,
        /// Loads the backend holds.
        limit: usize,
    },
    /// An external load names a node outside the mesh or has non-finite numbers.
    #[error("point load {index}: {msg}")]
    BadLoad {
        /// Index of the load in the list given to `set_loads`.
        index: usize,
        /// What is wrong.
        msg: String,
    },
    /// A compliance column could not be computed.
    #[error(transparent)]
    Column(#[from] ColumnError),
    /// The tissue's own solve failed (a nonlinear model's Newton iterations).
    #[error("the tissue solve failed: {0}")]
    Solve(String),
    /// The model's parts do not fit together (sizes, a free body with residual
    /// flexibility).
    #[error("{0}")]
    Setup(String),
}
