//! `[backend]`: which tissue backend runs the model thread, its parameters, and the K⁻¹
//! column cache the modal and condensed backends share.

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
    /// Large-strain tissue: each material's `model` law in a reduced basis, its lowest
    /// modes dynamic and its static shapes in equilibrium (docs/math.md §12).
    Nonlinear,
}

/// Backend choice and every backend's parameters (only the chosen one's are used).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BackendSpec {
    /// Which backend.
    pub kind: BackendKind,
    /// Modal parameters.
    pub modal: ModalSpec,
    /// Condensed parameters.
    pub condensed: CondensedSpec,
    /// Nonlinear parameters.
    pub nonlinear: NonlinearSpec,
    /// The K⁻¹ column cache the modal and condensed backends use.
    pub columns: ColumnsSpec,
}

/// Most shapes a nonlinear basis may hold: the reduced solve is dense in them (r³ per
/// Newton iteration, r² per element).
pub const MAX_NONLINEAR_SHAPES: usize = 512;

/// Nonlinear backend parameters: the reduced basis's size and accuracy, and its
/// dynamic modes.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NonlinearSpec {
    /// Most shapes the reduced basis holds, 4 ..= 512; each costs 16 bytes per DOF.
    pub shapes: usize,
    /// The basis's relative energy-norm error estimate it is grown to, in (0, 0.5].
    pub tolerance: f64,
    /// Most nonlinear corrections one model step adds (each about a full residual and
    /// two solves with K), ≥ 1.
    pub corrections_per_step: usize,
    /// The lowest vibration modes that move dynamically (computed and cached as the
    /// modal backend's, with its selection), at most `shapes − 4`; 0: quasi-static.
    pub modes: usize,
    /// Rayleigh stiffness damping α₁ of the modes (s), ≥ 0.
    pub alpha1: f64,
    /// Rayleigh mass damping α₂ of the modes (1/s), ≥ 0.
    pub alpha2: f64,
}

impl Default for NonlinearSpec {
    fn default() -> Self {
        Self {
            shapes: 64,
            tolerance: 1e-3,
            corrections_per_step: 2,
            modes: 8,
            alpha1: 2e-3,
            alpha2: 2.0,
        }
    }
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
    /// ... when those columns take at most this many megabytes (10⁶ bytes).
    pub precompute_budget_mb: u64,
    /// The column cache's size moved to `[backend.columns]`; given here, it is an error
    /// that says so.
    #[serde(rename = "cache_size")]
    pub moved_cache_size: Option<usize>,
}

impl Default for CondensedSpec {
    fn default() -> Self {
        Self {
            precompute_cap: 4096,
            precompute_budget_mb: 256,
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
        let nl = &self.nonlinear;
        c.count(
            "backend.nonlinear.shapes",
            nl.shapes,
            4,
            MAX_NONLINEAR_SHAPES,
        )?;
        c.positive_at_most("backend.nonlinear.tolerance", nl.tolerance, 0.5)?;
        c.count(
            "backend.nonlinear.corrections_per_step",
            nl.corrections_per_step,
            1,
            1000,
        )?;
        if nl.modes + 4 > nl.shapes {
            return Err(c.invalid(
                "backend.nonlinear.modes",
                format!(
                    "{} modes leave no room for a contact point's three shapes and the \
                     displacement in backend.nonlinear.shapes = {}: at most {}",
                    nl.modes,
                    nl.shapes,
                    nl.shapes - 4
                ),
            ));
        }
        c.non_negative_at_most("backend.nonlinear.alpha1", nl.alpha1, MAX_ALPHA1)?;
        c.non_negative_at_most("backend.nonlinear.alpha2", nl.alpha2, MAX_ALPHA2)?;
        c.count(
            "backend.columns.cache_size",
            self.columns.cache_size,
            1,
            MAX_CACHED_NODES,
        )?;
        Ok(())
    }
}
