//! `palpa replay`: a recorded session or a trajectory through a scene
//! ([`crate::app::replay`]), written as one CSV row per haptic tick, and optionally a
//! plot.

use std::path::PathBuf;

use clap::Args;

use super::plot;
use super::precompute::SceneArgs;
use super::progress::progress_bar;
use crate::app::paraview::ParaviewOptions;
use crate::app::replay::{replay_session, ReplayOptions, ReplayOutcome};
use crate::recording::Existing;

/// Arguments of `palpa replay`.
#[derive(Args, Debug, Clone)]
pub struct ReplayArgs {
    /// A recording directory (`palpa serve --record DIR`) or a `ticks.csv` in one; or a
    /// trajectory CSV (`t,x,y,z,buttons`, s and m, device frame; see
    /// tests/data/trajectories/README.md).
    pub trajectory: PathBuf,
    /// Scene and cache. A recording replays through its own scene; `--scene` replays it
    /// through another one (with a warning naming both).
    #[command(flatten)]
    pub scene: SceneArgs,
    /// Output CSV: a `# scene: NAME` line, then t (s), probe x,y,z (m, scene frame),
    /// force fx,fy,fz on the user's hand (N, scene frame), indentation depth (m), contact
    /// (0/1); one row per tick.
    /// Default: `DIR/replay.csv` for a recording, `NAME-replay.csv` beside a trajectory
    /// NAME.csv. Replaced if it exists.
    #[arg(long, value_name = "OUT.csv")]
    pub out: Option<PathBuf>,
    /// Also plot force and depth (and force along a slide) to this file, .svg or .png.
    #[arg(long, value_name = "FILE.svg|FILE.png", value_parser = plot::plot_path)]
    pub plot: Option<PathBuf>,
    /// Also write this replay as a recording directory (lock-step: replaying it gives the
    /// same forces bit for bit).
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,
    /// Replace a recording already in the `--record` directory.
    #[arg(long)]
    pub force: bool,
    /// Also write the deformed tissue as a ParaView time series into this directory
    /// (`series.pvd` and one `.vtu` per frame; frames there are replaced).
    #[arg(long, value_name = "DIR")]
    pub vtk: Option<PathBuf>,
    /// With --vtk: the whole volume with region, stress and von Mises stress (Pa), not
    /// only the surface.
    #[arg(long, requires = "vtk")]
    pub vtk_volume: bool,
    /// With --vtk: frames per second of simulated time (Hz).
    #[arg(long, value_name = "HZ", default_value_t = 30.0, requires = "vtk")]
    pub vtk_rate: f64,
}

/// Runs `palpa replay`; errors are messages for the user.
pub fn run(args: &ReplayArgs) -> Result<(), String> {
    let existing = match args.force {
        true => Existing::Replace,
        false => Existing::Refuse,
    };
    let options = ReplayOptions {
        input: args.trajectory.clone(),
        scene: args.scene.scene.clone(),
        cache_dir: args.scene.cache_dir(),
        out: args.out.clone(),
        record: args.record.clone().map(|dir| (dir, existing)),
        paraview: args.vtk.clone().map(|dir| ParaviewOptions {
            dir,
            rate: args.vtk_rate,
            volume: args.vtk_volume,
        }),
    };
    let (bar, mut on_progress) = progress_bar("building the scene");
    let outcome = replay_session(&options, &mut on_progress);
    bar.finish_and_clear();
    let outcome = outcome?;
    print_outcome(&outcome);
    if let Some(path) = &args.plot {
        plot::plot_csv(&outcome.out, path, &outcome.title)?;
        eprintln!("plot written to {}", path.display());
    }
    Ok(())
}

fn print_outcome(o: &ReplayOutcome) {
    for note in &o.notes {
        eprintln!("note: {note}");
    }
    for warning in &o.warnings {
        eprintln!("warning: {warning}");
    }
    eprintln!("precompute: {}", o.precompute);
    let rows = &o.replay.rows;
    let peak = rows.iter().map(|r| r.force.norm()).fold(0.0, f64::max);
    let deepest = rows.iter().map(|r| r.depth).fold(0.0, f64::max);
    eprintln!(
        "{} ticks written to {}; peak force {peak:.3} N, deepest indentation {:.2} mm",
        rows.len(),
        o.out.display(),
        deepest * 1e3
    );
    if let Some(p) = &o.paraview {
        eprintln!(
            "ParaView series: {} ({} frames)",
            p.collection.display(),
            p.frames
        );
    }
    if let Some((dir, rows)) = &o.recorded {
        eprintln!("recorded: {} ({rows} rows, lock-step)", dir.display());
    }
    if let Some(d) = &o.difference {
        let timing = match d.all.same_times {
            true => "at the same tick times",
            false => {
                "each at the nearest replay tick (a real-time session's ticks and model \
                 steps fall at its threads' own times, the replay's on a virtual clock)"
            }
        };
        let a = &d.all;
        eprintln!(
            "recorded vs replayed force: largest difference {:.3e} N at t = {:.3} s \
             (recorded {:.4} N, replayed {:.4} N), over {} ticks compared {timing}",
            a.largest, a.t, a.recorded, a.replayed, a.compared
        );
        if let Some((normal, n)) = &d.normal {
            eprintln!(
                "  over the {normal} ticks the live safety filter passed unchanged (state \
                 `normal`): largest difference {:.3e} N at t = {:.3} s (recorded {:.4} N, \
                 replayed {:.4} N)",
                n.largest, n.t, n.recorded, n.replayed
            );
        }
        if let (Some(dir), true) = (&d.lockstep, a.largest > 0.0) {
            eprintln!(
                "note: {} was recorded in lock-step, so its replay should match bit for bit",
                dir.display()
            );
        }
    }
    for note in o.replay.review.notes() {
        eprintln!("note: {note}");
    }
}
