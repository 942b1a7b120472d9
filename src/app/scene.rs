//! The scene a command runs: a scene file or the embedded default, built with its
//! precompute cache.

use std::path::Path;

use crate::modal::Progress;
use crate::scene::{self, BuiltScene, Scene};

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
    scene::build(scene, &scene::cache_dir(cache_dir), progress).map_err(|e| e.to_string())
}
