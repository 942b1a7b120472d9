//! Scene → the parts of its model: mesh → materials and fixed nodes (resolved once) →
//! FEM system (assembled once) → modal precompute (cached by input hash) → the
//! large-strain statics. `app::scene::build` puts the backend in its contact pipeline.

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
pub use regions::{material_regions, MaterialRegion};

use crate::fem::FemSystem;
use crate::mesh::TetMesh;
use crate::modal::{ModalBasis, Progress};
use crate::nonlinear::NonlinearStatics;
use crate::scene::{BackendKind, Scene, SceneError};

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

/// A scene built up to its backend: the mesh, the FEM system and what the backend needs
/// beyond it. `app::scene::build` puts them in the contact pipeline.
pub struct SceneParts {
    /// The scene.
    pub scene: Scene,
    /// The mesh and render surface.
    pub mesh: SceneMesh,
    /// The assembled FEM system (stiffness, mass, free DOFs).
    pub system: FemSystem,
    /// The modal precompute's modes (the modal backend, and the nonlinear one with
    /// dynamic modes).
    pub basis: Option<ModalBasis>,
    /// The full large-strain statics (the nonlinear backend only).
    pub statics: Option<NonlinearStatics>,
    /// What the modal precompute did.
    pub precompute: PrecomputeOutcome,
}

/// The error of build stage `stage` of `scene`.
fn stage(scene: &Scene, stage: &'static str, e: impl std::fmt::Display) -> BuildError {
    BuildError::Stage {
        scene: scene.source.clone(),
        stage,
        message: e.to_string(),
    }
}

/// Builds the scene up to its backend: mesh, FEM system, precompute (cached in
/// `cache_dir`) and, for the nonlinear backend, the full statics.
pub fn build_parts(
    scene: Scene,
    cache_dir: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<SceneParts, BuildError> {
    let inputs = FemInputs::resolve(&scene)?;
    if inputs.is_nonlinear() && scene.backend.kind != BackendKind::Nonlinear {
        warn_linear_backend(&scene);
    }
    let system = inputs.assemble(&scene)?;
    check_size(&scene, &inputs.mesh.mesh)?;
    let mut precompute = PrecomputeOutcome::NotModal;
    let mut basis = None;
    if has_modes(&scene) {
        let (pre, outcome) = modal_precompute(&scene, &inputs, &system, cache_dir, progress)?;
        precompute = outcome;
        basis = Some(pre.basis);
    }
    let statics = match scene.backend.kind {
        BackendKind::Nonlinear => Some(inputs.statics(&scene)?),
        _ => None,
    };
    Ok(SceneParts {
        mesh: inputs.mesh,
        scene,
        system,
        basis,
        statics,
        precompute,
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

/// Checks the probe sizes the scene asks for against the body's size. Memory sized by
/// the mesh is checked where it is allocated: the modal basis by the precompute, the
/// column cache by `pipeline::build`.
fn check_size(scene: &Scene, mesh: &TetMesh) -> Result<(), BuildError> {
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
