//! `palpa precompute` ([`crate::app::precompute`]), and the scene and cache arguments
//! every scene command shares.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;

use super::progress::progress_bar;

use crate::app::precompute::{precompute, PrecomputeReport};
use crate::app::scene::{build_scene, load_scene, BuiltScene};
use crate::scene::{self, Scene};

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
        load_scene(self.scene.as_deref())
    }

    /// The cache directory.
    pub fn cache_dir(&self) -> PathBuf {
        scene::cache_dir(self.cache_dir.as_deref())
    }

    /// Loads and builds the scene behind the progress bar, and says on stderr what the
    /// precompute did (computed, or loaded from the cache).
    pub fn build(&self) -> Result<BuiltScene, String> {
        let (bar, mut on_progress) = progress_bar("building the scene");
        let built = build_scene(
            self.scene.as_deref(),
            self.cache_dir.as_deref(),
            &mut on_progress,
        );
        bar.finish_and_clear();
        let built = built?;
        eprintln!("precompute: {}", built.precompute);
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

/// Runs `palpa precompute`; errors are messages for the user.
pub fn run(args: &PrecomputeArgs) -> Result<(), String> {
    let start = Instant::now();
    let scene = args.scene.load()?;
    let (bar, mut on_progress) = progress_bar("loading the precompute cache");
    let report = precompute(&scene, &args.scene.cache_dir(), &mut on_progress);
    bar.finish_and_clear();
    let PrecomputeReport {
        mesh,
        modes,
        outcome,
    } = report?;
    println!(
        "scene {}: {} nodes, {} tetrahedra, volume {:.4e} m³",
        scene.source, mesh.nodes, mesh.tets, mesh.volume
    );
    if let Some(m) = modes {
        println!(
            "{} free DOFs, {} fixed nodes; kept {} of {} modes ({:.2}–{:.2} Hz)",
            m.free_dofs, m.fixed_nodes, m.kept, m.computed, m.frequency_hz.0, m.frequency_hz.1,
        );
    }
    println!("{outcome}");
    if modes.is_some() {
        println!("total {:.2} s", start.elapsed().as_secs_f64());
    }
    Ok(())
}
