//! `[backend]`: which tissue backend runs the model thread, its parameters, and the K⁻¹
//! column cache both backends share.

use serde::Deserialize;

use super::check::Check;
use super::SceneError;

/// Most modes a scene may ask for: the basis holds 3 · nodes · modes numbers, and
/// past a few hundred the model step no longer fits the 5 ms model period.
pub const MAX_MODES: usize = 2000;

/// Largest Rayleigh stiffness damping α₁ (s): 10 s is already overdamped for every mode
/// above 0.03 Hz; larger values only overflow.
pub const MAX_ALPHA1: f64 = 10.0;

/// Largest Rayleigh mass damping α₂ (1/s).
pub const MAX_ALPHA2: f64 = 1e6;

/// Most nodes the K⁻¹ column cache may hold (each costs 72 bytes per mesh node; the
/// build also checks the product against the mesh).
pub const MAX_CACHED_NODES: usize = 1 << 20;

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
        c.count("backend.modal.modes", m.modes, 1, MAX_MODES)?;
        if let Some(f) = m.max_frequency {
            c.positive_at_most("backend.modal.max_frequency", f, 1e9)?;
        }
        c.positive_at_most("backend.modal.max_force", m.max_force, 1e6)?;
        c.positive_at_most("backend.modal.min_displacement", m.min_displacement, 1.0)?;
        c.non_negative_at_most("backend.modal.alpha1", m.alpha1, MAX_ALPHA1)?;
        c.non_negative_at_most("backend.modal.alpha2", m.alpha2, MAX_ALPHA2)?;
        if self.condensed.moved_cache_size.is_some() {
            return Err(c.invalid(
                "backend.condensed.cache_size",
                "moved: the column cache serves both backends; write it as \
                 `[backend.columns] cache_size = N`",
            ));
        }
        c.count(
            "backend.columns.cache_size",
            self.columns.cache_size,
            1,
            MAX_CACHED_NODES,
        )?;
        Ok(())
    }
}
