//! The modal precompute of a scene, cached on disk by a hash of its inputs: where the
//! cache lives, what a scene asks the precompute for, and load-or-compute.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::fem::FemSystem;
use crate::modal::{
    self, ModalCache, ModalError, ModeFate, ModeReport, PrecomputeParams, Precomputed, Progress,
    SelectionParams,
};
use crate::scene::{BackendKind, Scene};

use super::fem::FemInputs;
use super::{stage, BuildError};

/// Environment variable naming the precompute cache directory.
pub const CACHE_DIR_ENV: &str = "PALPA_CACHE_DIR";

/// Where the precompute cache lives: `override_dir`, else `$PALPA_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/palpa`, else `~/.cache/palpa`, else a `palpa-cache` directory in the
/// system temporary directory.
pub fn cache_dir(override_dir: Option<&Path>) -> PathBuf {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    override_dir
        .map(Path::to_path_buf)
        .or_else(|| env(CACHE_DIR_ENV))
        .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("palpa")))
        .or_else(|| env("HOME").map(|d| d.join(".cache").join("palpa")))
        .unwrap_or_else(|| std::env::temp_dir().join("palpa-cache"))
}

/// What happened to the modal precompute.
#[derive(Clone, Debug, PartialEq)]
pub enum PrecomputeOutcome {
    /// Loaded from the cache file.
    Loaded {
        /// The cache file.
        path: PathBuf,
    },
    /// Computed (the cache was absent, stale or damaged) and written.
    Computed {
        /// The cache file written.
        path: PathBuf,
        /// Why the cache could not be used (absent, stale, corrupt …).
        reason: String,
        /// Precompute wall time (s).
        seconds: f64,
    },
    /// The condensed backend, and the nonlinear one without modes, have nothing to
    /// precompute offline.
    NotModal,
}

impl std::fmt::Display for PrecomputeOutcome {
    /// One line for the user.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Loaded { path } => write!(f, "loaded from cache {}", path.display()),
            Self::Computed {
                path,
                reason,
                seconds,
            } => write!(
                f,
                "computed in {seconds:.2} s ({reason}), cache written to {}",
                path.display()
            ),
            Self::NotModal => write!(f, "not the modal backend: nothing to precompute offline"),
        }
    }
}

/// The modal precompute parameters a scene asks for: the modal backend's, or for the
/// nonlinear backend its mode count and damping with the modal section's selection.
pub fn precompute_params(scene: &Scene) -> PrecomputeParams {
    let m = &scene.backend.modal;
    let nl = &scene.backend.nonlinear;
    let (n_modes, alpha1, alpha2) = match scene.backend.kind {
        BackendKind::Nonlinear => (nl.modes, nl.alpha1, nl.alpha2),
        _ => (m.modes, m.alpha1, m.alpha2),
    };
    PrecomputeParams {
        n_modes,
        selection: SelectionParams {
            max_force: m.max_force,
            min_displacement: m.min_displacement,
            max_frequency_hz: scene.modal_max_frequency(),
            alpha_stiffness: alpha1,
            alpha_mass: alpha2,
        },
        ..PrecomputeParams::default()
    }
}

/// Whether the scene's backend uses a modal precompute: the modal backend, and the
/// nonlinear one with dynamic modes.
pub fn has_modes(scene: &Scene) -> bool {
    match scene.backend.kind {
        BackendKind::Modal => true,
        BackendKind::Nonlinear => scene.backend.nonlinear.modes > 0,
        BackendKind::Condensed => false,
    }
}

/// The cache file of a precompute with input hash `hash` in `dir`.
pub fn cache_path(dir: &Path, hash: &[u8; 32]) -> PathBuf {
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    dir.join(format!("modal-{hex}.palpa"))
}

/// Loads the modal precompute from the cache in `dir`, or computes and writes it;
/// `progress` sees the precompute's stages when it runs.
pub fn modal_precompute(
    scene: &Scene,
    inputs: &FemInputs,
    system: &FemSystem,
    dir: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Precomputed, PrecomputeOutcome), BuildError> {
    let params = precompute_params(scene);
    let mesh = &inputs.mesh.mesh;
    let hash = modal::input_hash(
        mesh,
        &inputs.per_tet,
        &inputs.fixed,
        scene.mesh.pressure,
        &params,
    );
    let path = cache_path(dir, &hash);
    let reason = match ModalCache::load(&path, &hash) {
        Ok(cache) if cache.data.basis.n_modes() == 0 => {
            return Err(no_modes_kept(scene, &cache.data.reports));
        }
        Ok(cache) => {
            tracing::debug!("loaded precompute from {}", path.display());
            return Ok((cache.data, PrecomputeOutcome::Loaded { path }));
        }
        Err(e) if e.is_missing() => "no cache yet".to_string(),
        Err(e) => {
            tracing::warn!("{}: {e}; recomputing", path.display());
            e.to_string()
        }
    };
    let start = Instant::now();
    let data = modal::precompute_assembled(system, &params, progress)
        .map_err(|e| precompute_error(scene, e))?;
    let seconds = start.elapsed().as_secs_f64();
    if data.basis.n_modes() == 0 {
        return Err(no_modes_kept(scene, &data.reports));
    }
    let cache = ModalCache {
        input_hash: hash,
        data,
    };
    cache
        .save(&path)
        .map_err(|e| stage(scene, "precompute cache", e))?;
    Ok((
        cache.data,
        PrecomputeOutcome::Computed {
            path,
            reason,
            seconds,
        },
    ))
}

/// A failed precompute's error; one the request caused (more modes than the system has,
/// or than memory holds) names the scene's mode count key.
fn precompute_error(scene: &Scene, e: ModalError) -> BuildError {
    match e {
        ModalError::Request(why) => {
            let key = match scene.backend.kind {
                BackendKind::Nonlinear => "backend.nonlinear.modes",
                _ => "backend.modal.modes",
            };
            scene.invalid(key, why).into()
        }
        e => stage(scene, "modal precompute", e),
    }
}

/// The error of a modal scene whose selection kept no mode, naming the keys that
/// removed them.
fn no_modes_kept(scene: &Scene, reports: &[ModeReport]) -> BuildError {
    let above = reports
        .iter()
        .filter(|r| r.fate == ModeFate::AboveCutoff)
        .count();
    let unobservable = reports
        .iter()
        .filter(|r| r.fate == ModeFate::Unobservable)
        .count();
    let lowest = reports
        .iter()
        .map(|r| r.freq_hz)
        .fold(f64::INFINITY, f64::min);
    let mut why = Vec::new();
    if above > 0 {
        why.push(format!(
            "{above} above backend.modal.max_frequency = {} Hz (the lowest mode is {lowest:.3} Hz)",
            scene.modal_max_frequency()
        ));
    }
    if unobservable > 0 {
        why.push(format!(
            "{unobservable} whose static response to backend.modal.max_force = {} N is below \
             backend.modal.min_displacement = {} m (check the materials' young and poisson)",
            scene.backend.modal.max_force, scene.backend.modal.min_displacement
        ));
    }
    stage(
        scene,
        "modal precompute",
        format!(
            "no mode of {} is kept: {}; the model would not move",
            reports.len(),
            why.join("; ")
        ),
    )
}
