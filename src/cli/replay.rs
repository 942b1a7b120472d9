//! `palpa replay`: a recorded trajectory through a scene ([`crate::app::replay`]),
//! written as one CSV row per haptic tick, and optionally a plot.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::Args;

use super::plot;
use super::precompute::SceneArgs;
use crate::app::replay::{replay_reviewed, Replay};
use crate::device::replay::Trajectory;
use crate::haptic::tick_csv::write_csv;

/// Arguments of `palpa replay`.
#[derive(Args, Debug, Clone)]
pub struct ReplayArgs {
    /// Trajectory CSV (`t,x,y,z,buttons`, s and m, device frame; see
    /// tests/data/trajectories/README.md).
    pub trajectory: PathBuf,
    /// Scene and cache.
    #[command(flatten)]
    pub scene: SceneArgs,
    /// Output CSV: t (s), probe x,y,z (m, scene frame), force fx,fy,fz on the user's
    /// hand (N, scene frame), indentation depth (m), contact (0/1); one row per tick.
    #[arg(long, value_name = "OUT.csv")]
    pub out: PathBuf,
    /// Also plot force and depth (and force along a slide) to this file, .svg or .png.
    #[arg(long, value_name = "FILE.svg|FILE.png", value_parser = plot::plot_path)]
    pub plot: Option<PathBuf>,
}

fn write_file(
    path: &Path,
    f: impl FnOnce(&mut BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> Result<(), String> {
    let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut w = BufWriter::new(file);
    f(&mut w)
        .and_then(|_| w.flush())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Runs `palpa replay`; errors are messages for the user.
pub fn run(args: &ReplayArgs) -> Result<(), String> {
    let trajectory = Trajectory::load(&args.trajectory).map_err(|e| e.to_string())?;
    let built = args.scene.build()?;
    let title = built
        .scene
        .name
        .clone()
        .unwrap_or(built.scene.source.clone());
    let Replay { rows, review } = replay_reviewed(built, trajectory);
    write_file(&args.out, |w| write_csv(&rows, w))?;
    let peak = rows.iter().map(|r| r.force.norm()).fold(0.0, f64::max);
    let deepest = rows.iter().map(|r| r.depth).fold(0.0, f64::max);
    eprintln!(
        "{} ticks written to {}; peak force {peak:.3} N, deepest indentation {:.2} mm",
        rows.len(),
        args.out.display(),
        deepest * 1e3
    );
    for note in review.notes() {
        eprintln!("note: {note}");
    }
    if let Some(path) = &args.plot {
        plot::plot_csv(&args.out, path, &title)?;
        eprintln!("plot written to {}", path.display());
    }
    Ok(())
}
