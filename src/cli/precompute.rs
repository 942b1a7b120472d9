//! `palpa precompute`: build a scene's modal basis and write it to the cache, so the
//! next `serve` or `replay` of the scene starts from the cache.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;

use super::progress::progress_bar;

use crate::scene::{self, FemInputs, PrecomputeOutcome};
use crate::scene::{BuiltScene, Scene};

/// Which scene, and where its precompute cache lives (shared by the scene commands).
#[derive(Args, Debug, Clone, Default)]
pub struct SceneArgs {
    /// Scene file (TOML, see docs/scenes.md); default: the built-in tissue block.
    #[arg(long, value_name = "FILE")]
    pub scene: Option<PathBuf>,
    /// Precompute cache directory; default: $PALPA_CACHE_DIR, else
    /// $XDG_CACHE_HOME/palpa, else ~/.cache/palpa.
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
}

impl SceneArgs {
    /// The scene file, or the embedded default scene.
    pub fn load(&self) -> Result<Scene, String> {
        match &self.scene {
            Some(path) => Scene::load(path).map_err(|e| e.to_string()),
            None => Ok(Scene::embedded_default()),
        }
    }

    /// The cache directory.
    pub fn cache_dir(&self) -> PathBuf {
        scene::cache_dir(self.cache_dir.as_deref())
    }

    /// Loads and builds the scene behind the progress bar, and says on stderr what the
    /// precompute did (computed, or loaded from the cache).
    pub fn build(&self) -> Result<BuiltScene, String> {
        let scene = self.load()?;
        let (bar, mut on_progress) = progress_bar("building the scene");
        let built = scene::build(scene, &self.cache_dir(), &mut on_progress);
        bar.finish_and_clear();
        let built = built.map_err(|e| e.to_string())?;
        eprintln!("precompute: {}", describe(&built.precompute));
        Ok(built)
    }
}

/// Arguments of `palpa precompute`.
#[derive(Args, Debug, Clone)]
pub struct PrecomputeArgs {
    /// Scene and cache.
    #[command(flatten)]
    pub scene: SceneArgs,
}

/// Describes a precompute outcome in one line.
pub fn describe(outcome: &PrecomputeOutcome) -> String {
    match outcome {
        PrecomputeOutcome::Loaded { path } => format!("loaded from cache {}", path.display()),
        PrecomputeOutcome::Computed {
            path,
            reason,
            seconds,
        } => format!(
            "computed in {seconds:.2} s ({reason}), cache written to {}",
            path.display()
        ),
        PrecomputeOutcome::NotModal => {
            "not the modal backend: nothing to precompute offline".into()
        }
    }
}

/// Runs `palpa precompute`; errors are messages for the user.
pub fn run(args: &PrecomputeArgs) -> Result<(), String> {
    let start = Instant::now();
    let scene = args.scene.load()?;
    let inputs = FemInputs::resolve(&scene).map_err(|e| e.to_string())?;
    let mesh = &inputs.mesh.mesh;
    println!(
        "scene {}: {} nodes, {} tetrahedra, volume {:.4e} m³",
        scene.source,
        mesh.nodes.len(),
        mesh.tets.len(),
        mesh.volume()
    );
    if !scene::has_modes(&scene) {
        println!("{}", describe(&PrecomputeOutcome::NotModal));
        return Ok(());
    }
    let dir = args.scene.cache_dir();
    let (bar, mut on_progress) = progress_bar("loading the precompute cache");
    let system = inputs.assemble(&scene).map_err(|e| e.to_string())?;
    let result = scene::modal_precompute(&scene, &inputs, &system, &dir, &mut on_progress);
    bar.finish_and_clear();
    let (pre, outcome) = result.map_err(|e| e.to_string())?;
    println!(
        "{} free DOFs, {} fixed nodes; kept {} of {} modes ({:.2}–{:.2} Hz)",
        pre.n_free_dofs,
        pre.n_fixed_nodes,
        pre.basis.n_modes(),
        pre.reports.len(),
        lowest(&pre, true),
        lowest(&pre, false),
    );
    println!("{}", describe(&outcome));
    println!("total {:.2} s", start.elapsed().as_secs_f64());
    Ok(())
}

/// Lowest (or highest) kept frequency (Hz).
fn lowest(pre: &crate::modal::Precomputed, low: bool) -> f64 {
    let kept = pre
        .reports
        .iter()
        .filter(|r| r.fate.kept())
        .map(|r| r.freq_hz);
    if low {
        kept.fold(f64::INFINITY, f64::min)
    } else {
        kept.fold(f64::NEG_INFINITY, f64::max)
    }
}
