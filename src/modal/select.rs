//! Which modes to keep (modal paper §3.2) and their damping.
//!
//! A mode whose static response to the largest expected force is below the smallest
//! displacement anyone can see or feel is unobservable; a mode vibrating faster than the
//! model rate can represent aliases. Both are dropped. Mode i responds to a point force
//! f at node a with displacement wᵢ(b) wᵢ(a)ᵀ f / λᵢ at node b, whose largest magnitude
//! over nodes and force directions is (maxᵥ ‖wᵢ(v)‖)² F / λᵢ — the paper's ‖wᵢ‖²/λᵢ
//! criterion with the norm taken per node, as forces and displacements are.

use serde::{Deserialize, Serialize};

use super::ModalBasis;

/// Parameters of mode selection and Rayleigh damping C = α₁K + α₂M.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SelectionParams {
    /// Largest force expected at a single node (N), e.g. a haptic device's peak force.
    pub max_force: f64,
    /// Smallest displacement that matters (m).
    pub min_displacement: f64,
    /// Highest frequency kept (Hz); half the model rate avoids temporal aliasing.
    pub max_frequency_hz: f64,
    /// Rayleigh stiffness coefficient α₁ (s).
    pub alpha_stiffness: f64,
    /// Rayleigh mass coefficient α₂ (1/s).
    pub alpha_mass: f64,
}

impl Default for SelectionParams {
    /// 10 N (above any desktop haptic device's peak force), 10 µm, 100 Hz (half of the
    /// 200 Hz model rate), α₁ = 2 ms, α₂ = 2 /s (soft tissue is strongly damped).
    fn default() -> Self {
        Self {
            max_force: 10.0,
            min_displacement: 1e-5,
            max_frequency_hz: 100.0,
            alpha_stiffness: 2e-3,
            alpha_mass: 2.0,
        }
    }
}

/// Why a mode was kept or dropped.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum ModeFate {
    /// Elastic mode, observable and below the cut-off.
    Kept,
    /// Rigid-body mode of a free body (kept: it carries the body's motion).
    KeptRigid,
    /// Static response to the largest force is below the smallest displacement.
    Unobservable,
    /// Frequency above the cut-off.
    AboveCutoff,
}

impl ModeFate {
    /// Whether the mode stays in the basis.
    pub fn kept(self) -> bool {
        matches!(self, ModeFate::Kept | ModeFate::KeptRigid)
    }

    /// Human-readable reason.
    pub fn reason(self) -> &'static str {
        match self {
            ModeFate::Kept => "kept",
            ModeFate::KeptRigid => "kept (rigid body)",
            ModeFate::Unobservable => "dropped: static response below smallest displacement",
            ModeFate::AboveCutoff => "dropped: above frequency cut-off",
        }
    }
}

/// One computed mode and what selection decided.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModeReport {
    /// Index in the computed (ascending) modes.
    pub index: usize,
    /// λ = ω² (rad²/s²).
    pub eigenvalue: f64,
    /// Natural frequency (Hz).
    pub freq_hz: f64,
    /// Damping ratio ζ = (α₁λ + α₂) / (2ω); `None` for rigid modes (ω = 0).
    pub damping_ratio: Option<f64>,
    /// Largest static displacement the largest force causes in this mode (m);
    /// `None` for rigid modes (unbounded).
    pub static_response: Option<f64>,
    /// Kept or dropped, and why.
    pub fate: ModeFate,
}

/// Applies §3.2 selection to every mode of `basis`.
pub fn select_modes(basis: &ModalBasis, params: &SelectionParams) -> Vec<ModeReport> {
    (0..basis.n_modes())
        .map(|i| {
            let lambda = basis.eigenvalues[i];
            let freq_hz = basis.frequency_hz(i);
            if basis.rigid[i] {
                return ModeReport {
                    index: i,
                    eigenvalue: lambda,
                    freq_hz,
                    damping_ratio: None,
                    static_response: None,
                    fate: ModeFate::KeptRigid,
                };
            }
            let omega = lambda.sqrt();
            let w_max_sq = (0..basis.n_nodes())
                .map(|v| basis.node_rows(v).col(i).squared_norm_l2())
                .fold(0.0, f64::max);
            let response = w_max_sq * params.max_force / lambda;
            let fate = if response < params.min_displacement {
                ModeFate::Unobservable
            } else if freq_hz > params.max_frequency_hz {
                ModeFate::AboveCutoff
            } else {
                ModeFate::Kept
            };
            ModeReport {
                index: i,
                eigenvalue: lambda,
                freq_hz,
                damping_ratio: Some(
                    (params.alpha_stiffness * lambda + params.alpha_mass) / (2.0 * omega),
                ),
                static_response: Some(response),
                fate,
            }
        })
        .collect()
}
