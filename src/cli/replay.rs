//! `palpa replay`: a recorded trajectory through a scene in deterministic lock-step
//! (one model step every haptic/model ticks on a virtual clock), writing the force the
//! user's hand would get at every haptic tick, and optionally a plot.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::Args;

use super::plot;
use super::precompute::{describe, SceneArgs};
use super::progress::progress_bar;
use crate::device::mapped::MappedDevice;
use crate::device::replay::{ReplayDevice, Trajectory};
use crate::device::HapticDevice;
use crate::haptic::LockStep;
use crate::scene::{self, BuiltScene};

/// Header of the replay output.
pub const HEADER: &str = "t,x,y,z,fx,fy,fz,depth,contact";

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

/// One row of the replay output.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReplayRow {
    /// Virtual time (s).
    pub t: f64,
    /// Probe tip (m, scene frame).
    pub probe: crate::Vec3,
    /// Force on the user's hand (N, scene frame).
    pub force: crate::Vec3,
    /// Indentation (m) below the undeformed surface at the contact.
    pub depth: f64,
    /// Whether the model in use reported contact.
    pub contact: bool,
}

/// Replays `trajectory` through the built scene in lock-step: one row per haptic tick
/// from t = 0 to the trajectory's last sample.
pub fn replay(mut built: BuiltScene, trajectory: Trajectory) -> Vec<ReplayRow> {
    let map = built.scene.device.given_mapping();
    let device = MappedDevice::new(ReplayDevice::new(trajectory.clone()), map);
    let config = built.attach_device(device.rating());
    let ticks = (trajectory.duration() / config.tick_period).floor() as usize + 1;
    let mut lock = LockStep::new(device, built.model, config);
    let mut rows = Vec::with_capacity(ticks);
    for _ in 0..ticks {
        let r = lock.step();
        let depth = lock.model_mut().indentation(&r.probe);
        rows.push(ReplayRow {
            t: r.t,
            probe: r.probe,
            force: r.force,
            depth,
            contact: r.model_in_contact,
        });
    }
    lock.finish();
    rows
}

/// Writes rows as CSV with [`HEADER`]; floats in shortest round-trip form, so reading
/// the file back gives the same numbers bit for bit.
pub fn write_csv(rows: &[ReplayRow], w: &mut impl Write) -> std::io::Result<()> {
    writeln!(w, "{HEADER}")?;
    for r in rows {
        writeln!(
            w,
            "{},{},{},{},{},{},{},{},{}",
            r.t,
            r.probe.x,
            r.probe.y,
            r.probe.z,
            r.force.x,
            r.force.y,
            r.force.z,
            r.depth,
            u8::from(r.contact)
        )?;
    }
    Ok(())
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
    let scene = args.scene.load()?;
    let (bar, mut on_progress) = progress_bar("building the scene");
    let built = scene::build(scene, &args.scene.cache_dir(), &mut on_progress);
    bar.finish_and_clear();
    let built = built.map_err(|e| e.to_string())?;
    eprintln!("precompute: {}", describe(&built.precompute));
    let title = built
        .scene
        .name
        .clone()
        .unwrap_or(built.scene.source.clone());
    let rows = replay(built, trajectory);
    write_file(&args.out, |w| write_csv(&rows, w))?;
    let peak = rows.iter().map(|r| r.force.norm()).fold(0.0, f64::max);
    let deepest = rows.iter().map(|r| r.depth).fold(0.0, f64::max);
    eprintln!(
        "{} ticks written to {}; peak force {peak:.3} N, deepest indentation {:.2} mm",
        rows.len(),
        args.out.display(),
        deepest * 1e3
    );
    if let Some(path) = &args.plot {
        plot::plot_csv(&args.out, path, &title)?;
        eprintln!("plot written to {}", path.display());
    }
    Ok(())
}
