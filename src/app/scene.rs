//! The scene a command runs: a scene file or the embedded default, built with its
//! precompute cache, its backend put in the contact pipeline.

use std::path::Path;

use crate::modal::{ModalBasis, ModalParams, Progress};
use crate::nonlinear::NonlinearParams;
use crate::pipeline::{self, BackendSetup, ProbeSetup, SceneModel, MAX_CONSTRAINT_ROWS};
use crate::scene::{
    self, BackendKind, BuildError, ContactSpec, PrecomputeOutcome, Scene, SceneMesh, SceneParts,
};
use crate::Vec3;

/// A scene turned into a model, ready for a haptic loop.
pub struct BuiltScene {
    /// The scene.
    pub scene: Scene,
    /// The mesh and render surface.
    pub mesh: SceneMesh,
    /// The tissue model with the probe.
    pub model: SceneModel,
    /// What the modal precompute did.
    pub precompute: PrecomputeOutcome,
    /// Kept modes (modal backend; 0 for condensed).
    pub n_modes: usize,
}

impl BuiltScene {
    /// Where a probe rests above the tissue (m, scene frame): `height` above the middle of
    /// the mesh's top (where `serve` parks the virtual stylus).
    pub fn above_the_middle(&self, height: f64) -> Vec3 {
        let (lo, hi) = self.mesh.mesh.bounds();
        let mid = (lo + hi) / 2.0;
        Vec3::new(mid.x, mid.y, hi.z + height)
    }

    /// The scene's name for viewers and logs (its `name`, else its source).
    pub fn name(&self) -> String {
        self.scene
            .name
            .clone()
            .unwrap_or_else(|| self.scene.source.clone())
    }
}

/// Builds the scene's model: its parts ([`scene::build_parts`]: mesh, FEM system,
/// precompute cached in `cache_dir`), then the backend the scene names in its contact
/// pipeline.
pub fn build(
    scene: Scene,
    cache_dir: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<BuiltScene, BuildError> {
    let SceneParts {
        scene,
        mesh,
        system,
        basis,
        statics,
        precompute,
    } = scene::build_parts(scene, cache_dir, progress)?;
    let probe = probe_setup(&scene.contact).map_err(|e| scene.invalid("contact.friction", e))?;
    let spec = &scene.backend;
    let backend = match spec.kind {
        BackendKind::Modal => BackendSetup::Modal {
            basis: basis.as_ref().expect("the modal backend has modes"),
            params: ModalParams {
                alpha1: spec.modal.alpha1,
                alpha2: spec.modal.alpha2,
                dt: 1.0 / scene.rates.model,
                max_rows: MAX_CONSTRAINT_ROWS,
            },
            residual: spec.modal.residual,
        },
        BackendKind::Condensed => BackendSetup::Condensed {
            precompute_cap: spec.condensed.precompute_cap,
            precompute_bytes: spec.condensed.precompute_budget_mb as f64 * 1e6,
        },
        BackendKind::Nonlinear => BackendSetup::Nonlinear {
            statics: Box::new(statics.expect("the nonlinear backend has its statics")),
            params: NonlinearParams {
                shapes: spec.nonlinear.shapes,
                tolerance: spec.nonlinear.tolerance,
                corrections_per_step: spec.nonlinear.corrections_per_step,
                max_rows: MAX_CONSTRAINT_ROWS,
            },
            modes: basis.as_ref(),
            alpha: (spec.nonlinear.alpha1, spec.nonlinear.alpha2),
        },
    };
    let cache = spec.columns.cache_size;
    let model = pipeline::build(&mesh.mesh, &system, cache, backend, probe, &scene.source)
        .map_err(|e| match e.stage {
            pipeline::COLUMN_CACHE => scene
                .invalid("backend.columns.cache_size", e.message)
                .into(),
            stage => BuildError::Stage {
                scene: scene.source.clone(),
                stage,
                message: e.message,
            },
        })?;
    let elastic = |b: &ModalBasis| b.rigid.iter().filter(|&&r| !r).count();
    let n_modes = match &model {
        SceneModel::Modal(_) => basis.as_ref().map_or(0, ModalBasis::n_modes),
        SceneModel::Nonlinear(_) => basis.as_ref().map_or(0, elastic),
        SceneModel::Condensed(_) => 0,
    };
    Ok(BuiltScene {
        scene,
        mesh,
        model,
        precompute,
        n_modes,
    })
}

/// The probe's tip, contact patch and friction a scene's `[contact]` asks for (μ_k
/// absent: μ_s); an error says which coefficient is wrong.
pub fn probe_setup(contact: &ContactSpec) -> Result<ProbeSetup, String> {
    ProbeSetup::new(
        contact.probe_radius,
        contact.patch_radius,
        contact.friction,
        contact.kinetic_friction(),
    )
}

/// The scene file at `path`, else the embedded default scene.
pub fn load_scene(path: Option<&Path>) -> Result<Scene, String> {
    match path {
        Some(path) => Scene::load(path).map_err(|e| e.to_string()),
        None => Ok(Scene::embedded_default()),
    }
}

/// Loads and builds the scene at `path` (else the embedded default), its precompute
/// cached in `cache_dir` (else [`scene::cache_dir`]'s default); `progress` hears of the
/// stages.
pub fn build_scene(
    path: Option<&Path>,
    cache_dir: Option<&Path>,
    progress: &mut dyn FnMut(Progress),
) -> Result<BuiltScene, String> {
    let scene = load_scene(path)?;
    build(scene, &scene::cache_dir(cache_dir), progress).map_err(|e| e.to_string())
}
