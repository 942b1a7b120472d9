//! `[backend]`: which tissue backend runs the model thread, its parameters, and the K⁻¹
//! column cache both backends share.

use serde::Deserialize;

use super::check::Check;
use super::SceneError;

/// Which tissue backend runs the model thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    /// Modal dynamics with residual flexibility (DESIGN §2.2).
    #[default]
    Modal,
    /// Condensed static FEM (DESIGN §2.3).
    Condensed,
}

/// Backend choice and both backends' parameters (only the chosen one is used).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BackendSpec {
    /// Which backend.
    pub kind: BackendKind,
    /// Modal parameters.
    pub modal: ModalSpec,
    /// Condensed parameters.
    pub condensed: CondensedSpec,
    /// The K⁻¹ column cache both backends use.
    pub columns: ColumnsSpec,
}

/// Modal backend parameters (mode count, selection cut-offs, Rayleigh damping).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModalSpec {
    /// Modes computed before selection (k), ≥ 1.
    pub modes: usize,
    /// Highest mode frequency kept (Hz); absent: half the model rate.
    pub max_frequency: Option<f64>,
    /// Largest force expected at one point (N), for dropping unobservable modes.
    pub max_force: f64,
    /// Smallest displacement that matters (m).
    pub min_displacement: f64,
    /// Rayleigh stiffness damping α₁ (s), ≥ 0.
    pub alpha1: f64,
    /// Rayleigh mass damping α₂ (1/s), ≥ 0.
    pub alpha2: f64,
    /// Add residual flexibility at the contact (static stiffness of full FEM).
    pub residual: bool,
}

impl Default for ModalSpec {
    fn default() -> Self {
        Self {
            modes: 40,
            max_frequency: None,
            max_force: 10.0,
            min_displacement: 1e-5,
            alpha1: 2e-3,
            alpha2: 2.0,
            residual: true,
        }
    }
}

/// Condensed backend parameters.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CondensedSpec {
    /// Surfaces with at most this many nodes get every column computed at start.
    pub precompute_cap: usize,
    /// The column cache's size moved to `[backend.columns]`; given here, it is an error
    /// that says so.
    #[serde(rename = "cache_size")]
    pub moved_cache_size: Option<usize>,
}

impl Default for CondensedSpec {
    fn default() -> Self {
        Self {
            precompute_cap: 4096,
            moved_cache_size: None,
        }
    }
}

/// The K⁻¹ column cache (`fem::ComplianceColumns`): the condensed backend's whole
/// response, and the modal backend's residual flexibility at the contact.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ColumnsSpec {
    /// Nodes whose K⁻¹ columns are kept, ≥ 1; each costs 72 bytes per mesh node.
    pub cache_size: usize,
}

impl Default for ColumnsSpec {
    fn default() -> Self {
        Self { cache_size: 4096 }
    }
}

impl BackendSpec {
    pub(super) fn validate(&self, c: &Check) -> Result<(), SceneError> {
        let m = &self.modal;
        if m.modes == 0 {
            return Err(c.invalid("backend.modal.modes", "must be >= 1, got 0"));
        }
        if let Some(f) = m.max_frequency {
            c.positive("backend.modal.max_frequency", f)?;
        }
        c.positive("backend.modal.max_force", m.max_force)?;
        c.positive("backend.modal.min_displacement", m.min_displacement)?;
        c.non_negative("backend.modal.alpha1", m.alpha1)?;
        c.non_negative("backend.modal.alpha2", m.alpha2)?;
        if self.condensed.moved_cache_size.is_some() {
            return Err(c.invalid(
                "backend.condensed.cache_size",
                "moved: the column cache serves both backends; write it as \
                 `[backend.columns] cache_size = N`",
            ));
        }
        if self.columns.cache_size == 0 {
            return Err(c.invalid("backend.columns.cache_size", "must be >= 1, got 0"));
        }
        Ok(())
    }
}
