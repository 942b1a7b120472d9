//! A scene's modal precompute, computed once and written to the cache (`palpa
//! precompute`), so the next serve or replay of the scene starts from the cache.

use std::path::Path;

use crate::modal::{Precomputed, Progress};
use crate::scene::{self, FemInputs, PrecomputeOutcome, Scene};

/// The mesh a precompute ran on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeshSize {
    /// Nodes.
    pub nodes: usize,
    /// Tetrahedra.
    pub tets: usize,
    /// Volume (m³).
    pub volume: f64,
}

/// The modes a precompute kept.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KeptModes {
    /// Free degrees of freedom.
    pub free_dofs: usize,
    /// Fixed nodes.
    pub fixed_nodes: usize,
    /// Modes kept by the selection.
    pub kept: usize,
    /// Modes computed.
    pub computed: usize,
    /// Lowest and highest kept frequency (Hz).
    pub frequency_hz: (f64, f64),
}

/// What a precompute did.
#[derive(Clone, Debug)]
pub struct PrecomputeReport {
    /// The scene's mesh.
    pub mesh: MeshSize,
    /// The kept modes; `None` for a scene without modes (nothing to precompute).
    pub modes: Option<KeptModes>,
    /// Computed (and where written) or loaded from the cache.
    pub outcome: PrecomputeOutcome,
}

/// Precomputes `scene`'s modes into `cache_dir` (or finds them there); `progress` hears
/// of the stages.
pub fn precompute(
    scene: &Scene,
    cache_dir: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<PrecomputeReport, String> {
    let inputs = FemInputs::resolve(scene).map_err(|e| e.to_string())?;
    let m = &inputs.mesh.mesh;
    let mesh = MeshSize {
        nodes: m.nodes.len(),
        tets: m.tets.len(),
        volume: m.volume(),
    };
    if !scene::has_modes(scene) {
        return Ok(PrecomputeReport {
            mesh,
            modes: None,
            outcome: PrecomputeOutcome::NotModal,
        });
    }
    let system = inputs.assemble(scene).map_err(|e| e.to_string())?;
    let (pre, outcome) = scene::modal_precompute(scene, &inputs, &system, cache_dir, progress)
        .map_err(|e| e.to_string())?;
    Ok(PrecomputeReport {
        mesh,
        modes: Some(kept_modes(&pre)),
        outcome,
    })
}

fn kept_modes(pre: &Precomputed) -> KeptModes {
    let kept = || {
        pre.reports
            .iter()
            .filter(|r| r.fate.kept())
            .map(|r| r.freq_hz)
    };
    KeptModes {
        free_dofs: pre.n_free_dofs,
        fixed_nodes: pre.n_fixed_nodes,
        kept: pre.basis.n_modes(),
        computed: pre.reports.len(),
        frequency_hz: (
            kept().fold(f64::INFINITY, f64::min),
            kept().fold(f64::NEG_INFINITY, f64::max),
        ),
    }
}
