//! Scenes: what a scene file says — mesh, materials, fixed nodes, backend, contact,
//! rates, force strategy, safety limits, device and stream — and the running model it
//! builds (`docs/scenes.md` documents every key). A pure factory: the device, haptic and
//! stream sections are data here; `app` turns them into those parts' settings.
//!
//! Two stages: the schema ([`Scene::load`], [`Scene::parse`], or
//! [`Scene::embedded_default`]) parses the file with unknown keys rejected and checks
//! every section's values, naming the key; the build ([`build_parts()`]) turns a checked
//! scene into the mesh, the FEM system, the (cached) precompute and the large-strain
//! statics, which `app` puts in the contact pipeline.

mod build;
mod schema;

pub use build::plausible;
pub use build::{
    build_mesh, build_parts, cache_dir, cache_path, has_modes, material_regions, modal_precompute,
    precompute_params, BuildError, FemInputs, MaterialRegion, PrecomputeOutcome, RenderSurface,
    SceneMesh, SceneParts, CACHE_DIR_ENV,
};
pub use schema::*;
