//! Scene → running model: mesh → materials and fixed nodes (resolved once) → FEM
//! system (assembled once) → modal precompute (cached by input hash) → the backend in its
//! contact pipeline ([`pipeline::build`]).

mod cache;
mod fem;
mod mesh;
pub mod plausible;
mod regions;

use std::path::Path;

pub use cache::{
    cache_dir, cache_path, has_modes, modal_precompute, precompute_params, PrecomputeOutcome,
    CACHE_DIR_ENV,
};
pub use fem::FemInputs;
pub use mesh::{build_mesh, RenderSurface, SceneMesh};
pub use regions::MaterialRegion;

use crate::mesh::TetMesh;
use crate::modal::{ModalBasis, ModalParams, Progress};
use crate::nonlinear::NonlinearParams;
use crate::pipeline::{self, BackendSetup, SceneModel, MAX_CONSTRAINT_ROWS};
use crate::scene::{BackendKind, Scene, SceneError};
use crate::Vec3;

/// Why a scene could not become a model: the scene itself, or the FEM/precompute stage
/// (named).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The scene file or its mesh.
    #[error(transparent)]
    Scene(#[from] SceneError),
    /// A stage of the build failed.
    #[error("{scene}: {stage}: {message}")]
    Stage {
        /// The scene source.
        scene: String,
        /// Which stage (materials, fixed nodes, assembly, precompute, …).
        stage: &'static str,
        /// What failed.
        message: String,
    },
}

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

/// The error of build stage `stage` of `scene`.
fn stage(scene: &Scene, stage: &'static str, e: impl std::fmt::Display) -> BuildError {
    BuildError::Stage {
        scene: scene.source.clone(),
        stage,
        message: e.to_string(),
    }
}

/// Builds the scene's model: precompute (cached in `cache_dir`) or condensed columns,
/// then the contact pipeline.
pub fn build(
    scene: Scene,
    cache_dir: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<BuiltScene, BuildError> {
    let inputs = FemInputs::resolve(&scene)?;
    if inputs.is_nonlinear() && scene.backend.kind != BackendKind::Nonlinear {
        warn_linear_backend(&scene);
    }
    let mesh = &inputs.mesh.mesh;
    let system = inputs.assemble(&scene)?;
    check_size(&scene, mesh)?;
    let probe = scene
        .contact
        .probe_setup()
        .map_err(|e| scene.invalid("contact.friction", e))?;
    let mut precompute = PrecomputeOutcome::NotModal;
    let mut basis = None;
    if has_modes(&scene) {
        let (pre, outcome) = modal_precompute(&scene, &inputs, &system, cache_dir, progress)?;
        precompute = outcome;
        basis = Some(pre.basis);
    }
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
            statics: Box::new(inputs.statics(&scene)?),
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
    let model = pipeline::build(mesh, &system, cache, backend, probe, &scene.source)
        .map_err(|e| stage(&scene, e.stage, e.message))?;
    let elastic = |b: &ModalBasis| b.rigid.iter().filter(|&&r| !r).count();
    let n_modes = match &model {
        SceneModel::Modal(_) => basis.as_ref().map_or(0, ModalBasis::n_modes),
        SceneModel::Nonlinear(_) => basis.as_ref().map_or(0, elastic),
        SceneModel::Condensed(_) => 0,
    };
    Ok(BuiltScene {
        mesh: inputs.mesh,
        scene,
        model,
        precompute,
        n_modes,
    })
}

/// Warns that the scene's large-strain materials run at their small-strain moduli in
/// the linear backends, naming them.
fn warn_linear_backend(scene: &Scene) {
    let names: Vec<String> = scene
        .materials_in_order()
        .into_iter()
        .filter(|(_, spec)| spec.model != crate::scene::MaterialModel::Linear)
        .map(|(name, _)| format!("materials.{name}"))
        .collect();
    let backend = match scene.backend.kind {
        BackendKind::Modal => "modal",
        BackendKind::Condensed => "condensed",
        BackendKind::Nonlinear => "nonlinear",
    };
    let (verb, them) = if names.len() == 1 {
        ("follows", "it")
    } else {
        ("follow", "them")
    };
    tracing::warn!(
        "{}: {} {verb} a large-strain law, but the {backend} backend is linear: it runs \
         {them} at small-strain moduli (E, ν); `palpa indent --full` solves the laws",
        scene.source,
        names.join(", "),
    );
}

/// Checks what the scene asks for against the mesh it got: memory sized by the mesh
/// (the modal basis, the column cache) and probe sizes against the body's size.
fn check_size(scene: &Scene, mesh: &TetMesh) -> Result<(), BuildError> {
    let n = mesh.nodes.len() as f64;
    let modal = &scene.backend.modal;
    if scene.backend.kind == BackendKind::Modal {
        let basis = 8.0 * 3.0 * n * modal.modes as f64;
        crate::budget::check(basis, || {
            format!("{} modes of {} nodes", modal.modes, mesh.nodes.len())
        })
        .map_err(|why| scene.invalid("backend.modal.modes", why))?;
    }
    let columns = 72.0 * n * scene.backend.columns.cache_size as f64;
    crate::budget::check(columns, || {
        format!(
            "a cache of {} nodes' columns on a {}-node mesh",
            scene.backend.columns.cache_size,
            mesh.nodes.len()
        )
    })
    .map_err(|why| scene.invalid("backend.columns.cache_size", why))?;
    let (lo, hi) = mesh.bounds();
    let size = (hi - lo).norm();
    let contact = &scene.contact;
    for (key, r) in [
        ("contact.probe_radius", Some(contact.probe_radius)),
        ("contact.patch_radius", contact.patch_radius),
    ] {
        if let Some(r) = r.filter(|&r| r > size) {
            return Err(scene
                .invalid(
                    key,
                    format!("{r} m is larger than the whole mesh ({size:.3} m across)"),
                )
                .into());
        }
    }
    Ok(())
}
