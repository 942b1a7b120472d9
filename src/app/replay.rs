//! `palpa replay`: a recorded trajectory through a scene in deterministic lock-step
//! (one model step every haptic/model ticks on a virtual clock), writing the force the
//! user's hand would get at every haptic tick, and optionally a plot.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::Args;

use crate::cli::plot;
use crate::cli::precompute::SceneArgs;
use crate::device::mapped::MappedDevice;
use crate::device::replay::{ReplayDevice, Trajectory};
use crate::device::HapticDevice;
use crate::haptic::review::TickReview;
use crate::haptic::LockStep;
use crate::scene::BuiltScene;

pub use crate::haptic::tick_csv::{write_csv, TickRow as ReplayRow, HEADER};

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

/// A replay's rows and what its ticks tell the user ([`TickReview::notes`]).
pub struct Replay {
    /// One row per haptic tick.
    pub rows: Vec<ReplayRow>,
    /// The review of every tick.
    pub review: TickReview,
}

/// Replays `trajectory` through the built scene in lock-step: one row per haptic tick
/// from t = 0 to the trajectory's last sample.
pub fn replay(built: BuiltScene, trajectory: Trajectory) -> Vec<ReplayRow> {
    replay_reviewed(built, trajectory).rows
}

/// [`replay`], with the review of its ticks: contact during the start-up ramp, the
/// clamp, no contact at all.
pub fn replay_reviewed(mut built: BuiltScene, trajectory: Trajectory) -> Replay {
    let map = built.scene.device.given_mapping();
    let device = MappedDevice::new(ReplayDevice::new(trajectory.clone()), map);
    let config = built.attach_device(device.rating());
    let ticks = (trajectory.duration() / config.tick_period).floor() as usize + 1;
    let mut review = TickReview::new(&config.limits);
    let mut lock = LockStep::new(device, built.model, config);
    let mut rows = Vec::with_capacity(ticks);
    for _ in 0..ticks {
        let r = lock.step();
        review.add(&r);
        rows.push(ReplayRow::of(&r));
    }
    lock.finish();
    Replay { rows, review }
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
