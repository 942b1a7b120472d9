//! The residual flexibility's K⁻¹ columns, possibly still being built (K factorised)
//! on their own thread: a start waits for the factor only at the model's first step,
//! not before the viewer and the haptic loop are up.

use std::thread::JoinHandle;

use crate::fem::{ColumnError, ComplianceColumns};
use crate::tissue::ModelError;

/// What builds the columns on their own thread: the factorisation of K and the cache.
type Job = JoinHandle<Result<ComplianceColumns, String>>;

/// K⁻¹ columns for residual flexibility: built, being built, or failed to build.
pub enum ResidualColumns {
    /// Built and usable (boxed: the other states are a few words).
    Ready(Box<ComplianceColumns>),
    /// Being built by `job`; `background`: complete columns on a worker once built
    /// ([`ComplianceColumns::complete_in_background`]).
    Building {
        /// The thread building them (taken when joined).
        job: Option<Job>,
        /// Whether columns complete on a worker thread once built.
        background: bool,
    },
    /// The build failed: why (every later use reports it).
    Failed(String),
}

impl std::fmt::Debug for ResidualColumns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Ready(c) => c.fmt(f),
            Self::Building { .. } => f.write_str("ResidualColumns::Building"),
            Self::Failed(why) => write!(f, "ResidualColumns::Failed({why})"),
        }
    }
}

impl ResidualColumns {
    /// Starts `build` (factorising K and making the cache) on its own thread.
    pub fn building(
        build: impl FnOnce() -> Result<ComplianceColumns, String> + Send + 'static,
    ) -> Result<Self, String> {
        let job = std::thread::Builder::new()
            .name("palpa-factor".into())
            .spawn(build)
            .map_err(|e| format!("cannot start the factorisation thread: {e}"))?;
        Ok(Self::Building {
            job: Some(job),
            background: false,
        })
    }

    /// The columns if they are built (never waits).
    pub fn ready(&self) -> Option<&ComplianceColumns> {
        match self {
            Self::Ready(c) => Some(&**c),
            _ => None,
        }
    }

    /// The columns if they are built, taking them over if the build just finished
    /// (never waits).
    pub fn poll(&mut self) -> Option<&mut ComplianceColumns> {
        if let Self::Building { job: Some(job), .. } = self {
            if job.is_finished() {
                self.join();
            }
        }
        match self {
            Self::Ready(c) => Some(&mut **c),
            _ => None,
        }
    }

    /// Whether the build is still running (never waits; takes the columns over if it
    /// just finished).
    pub fn pending(&mut self) -> bool {
        self.poll();
        matches!(self, Self::Building { job: Some(_), .. })
    }

    /// The columns, waiting for their build to finish.
    pub fn wait(&mut self) -> Result<&mut ComplianceColumns, ModelError> {
        self.join();
        match self {
            Self::Ready(c) => Ok(&mut **c),
            Self::Failed(why) => Err(ModelError::Setup(why.clone())),
            Self::Building { .. } => unreachable!("joined above"),
        }
    }

    /// Completes columns on a worker thread (now, or as soon as they are built).
    pub fn complete_in_background(&mut self) -> Result<(), ColumnError> {
        match self {
            Self::Ready(c) => c.complete_in_background(),
            Self::Building { background, .. } => {
                *background = true;
                Ok(())
            }
            Self::Failed(_) => Ok(()),
        }
    }

    /// Whether columns complete on a worker thread (or will, once built).
    pub fn completes_in_background(&self) -> bool {
        match self {
            Self::Ready(c) => c.completes_in_background(),
            Self::Building { background, .. } => *background,
            Self::Failed(_) => false,
        }
    }

    /// Waits for the build, if any, and keeps its outcome.
    fn join(&mut self) {
        let Self::Building { job, background } = self else {
            return;
        };
        let Some(job) = job.take() else {
            return;
        };
        let background = *background;
        *self = match job.join() {
            Ok(Ok(mut c)) => match background.then(|| c.complete_in_background()) {
                Some(Err(e)) => Self::Failed(e.to_string()),
                _ => Self::Ready(Box::new(c)),
            },
            Ok(Err(why)) => Self::Failed(why),
            Err(_) => Self::Failed("the factorisation thread panicked".into()),
        };
    }
}

impl From<ComplianceColumns> for ResidualColumns {
    fn from(columns: ComplianceColumns) -> Self {
        Self::Ready(Box::new(columns))
    }
}
