//! `palpa replay`: a recorded session or a trajectory through a scene in deterministic
//! lock-step (one model step every haptic/model ticks on a virtual clock), writing the
//! force the user's hand would get at every haptic tick, and optionally a plot.
//!
//! A recording directory (`palpa serve --record DIR`, or `DIR/ticks.csv`) replays
//! through its own copy of the scene with the device it was recorded with: its
//! positions are scene positions (mapped once, when they were recorded), its rating sets
//! the same limits. A plain trajectory is in the device frame and goes through the
//! scene's `[device.workspace]`.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::cli::plot;
use crate::cli::precompute::{describe, SceneArgs};
use crate::cli::progress::progress_bar;
use crate::device::mapped::{MappedDevice, Workspace};
use crate::device::replay::{ReplayDevice, Trajectory};
use crate::device::{DeviceRating, HapticDevice};
use crate::files::write_file_atomic;
use crate::haptic::review::TickReview;
use crate::haptic::LockStep;
use crate::recording::session_dir::REPLAY;
use crate::recording::{DeviceRecord, Existing, Recorded, RecordedBy, RecordingDir, SceneInputs};
use crate::recording::{RecordingHealth, TickWriter};
use crate::scene::{self, BuiltScene};

pub use crate::haptic::tick_csv::{write_csv, TickRow as ReplayRow, HEADER};

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
    /// Output CSV: t (s), probe x,y,z (m, scene frame), force fx,fy,fz on the user's
    /// hand (N, scene frame), indentation depth (m), contact (0/1); one row per tick.
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
}

/// A replay's rows and what its ticks tell the user ([`TickReview::notes`]).
pub struct Replay {
    /// One row per haptic tick.
    pub rows: Vec<ReplayRow>,
    /// The review of every tick.
    pub review: TickReview,
}

/// How the replayed positions reach the scene and what device they stand for.
#[derive(Clone, Copy, Debug)]
pub struct ReplayDeviceSetup {
    /// Device frame → scene frame (identity for a recording's scene positions).
    pub mapping: Workspace,
    /// The device's rating (sets the safety limits and the tissue's force cap).
    pub rating: DeviceRating,
}

/// Replays `trajectory` through the built scene in lock-step: one row per haptic tick
/// from t = 0 to the trajectory's last sample.
pub fn replay(built: BuiltScene, trajectory: Trajectory) -> Vec<ReplayRow> {
    replay_reviewed(built, trajectory).rows
}

/// [`replay`], with the review of its ticks: contact during the start-up ramp, the
/// clamp, no contact at all. The trajectory is in the device frame, mapped by the
/// scene's `[device.workspace]`, played as a desktop device.
pub fn replay_reviewed(built: BuiltScene, trajectory: Trajectory) -> Replay {
    let setup = ReplayDeviceSetup {
        mapping: built.scene.device.given_mapping(),
        rating: ReplayDevice::new(trajectory.clone()).rating(),
    };
    replay_with(built, trajectory, setup, None).expect("no file is written")
}

/// Replays a recording's probe positions (scene frame, used as they are) with the
/// device it was recorded with.
pub fn replay_recorded(built: BuiltScene, ticks: Trajectory, device: &DeviceRecord) -> Replay {
    let setup = ReplayDeviceSetup {
        mapping: Workspace::IDENTITY,
        rating: device.rating(),
    };
    replay_with(built, ticks, setup, None).expect("no file is written")
}

/// Rows written between commits of a lock-step recording.
const COMMIT_ROWS: usize = 1000;

/// Replays `trajectory` as `setup` says, writing every tick to `record` too if given.
pub fn replay_with(
    mut built: BuiltScene,
    trajectory: Trajectory,
    setup: ReplayDeviceSetup,
    mut record: Option<&mut TickWriter>,
) -> Result<Replay, String> {
    let device = MappedDevice::new(
        ReplayDevice::with_rating(trajectory.clone(), setup.rating),
        setup.mapping,
    );
    let config = built.attach_device(setup.rating);
    let ticks = (trajectory.duration() / config.tick_period).floor() as usize + 1;
    let mut review = TickReview::new(&config.limits);
    let mut lock = LockStep::new(device, built.model, config);
    let mut rows = Vec::with_capacity(ticks);
    for k in 0..ticks {
        let r = lock.step();
        review.add(&r);
        rows.push(ReplayRow::of(&r));
        if let Some(w) = record.as_deref_mut() {
            w.push(&r);
            if (k + 1) % COMMIT_ROWS == 0 {
                w.commit()
                    .and_then(|()| w.sync_if_due())
                    .map_err(|e| format!("{}: {e}", w.path().display()))?;
            }
        }
    }
    lock.finish();
    if let Some(w) = record {
        w.commit()
            .and_then(|()| w.sync())
            .map_err(|e| format!("{}: {e}", w.path().display()))?;
    }
    Ok(Replay { rows, review })
}

/// The largest difference between a recording's forces and a replay's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ForceDifference {
    /// |f_recorded − f_replayed| at its largest (N).
    pub largest: f64,
    /// When (s).
    pub t: f64,
    /// The recorded and replayed |f| there (N).
    pub recorded: f64,
    /// The replayed |f| there (N).
    pub replayed: f64,
    /// Recorded ticks compared.
    pub compared: usize,
    /// Whether every compared tick fell on a replay tick's time exactly (a lock-step
    /// recording); otherwise each is compared with the nearest replay tick.
    pub same_times: bool,
}

/// Compares every recorded tick with a force against the replay tick at its time (or
/// the nearest one).
pub fn force_difference(recorded: &Trajectory, rows: &[ReplayRow]) -> Option<ForceDifference> {
    let mut d: Option<ForceDifference> = None;
    let mut same_times = true;
    let mut compared = 0;
    for s in recorded.samples() {
        let Some(f) = s.force else { continue };
        let k = rows.partition_point(|r| r.t < s.t);
        let near = [k.checked_sub(1), Some(k)]
            .into_iter()
            .flatten()
            .filter(|&i| i < rows.len())
            .min_by(|&a, &b| (rows[a].t - s.t).abs().total_cmp(&(rows[b].t - s.t).abs()));
        let Some(i) = near else { continue };
        if (rows[i].t - s.t).abs() > 1e-3 {
            continue;
        }
        same_times &= rows[i].t == s.t;
        compared += 1;
        let diff = (f - rows[i].force).norm();
        if d.is_none_or(|d| diff > d.largest) {
            d = Some(ForceDifference {
                largest: diff,
                t: s.t,
                recorded: f.norm(),
                replayed: rows[i].force.norm(),
                compared: 0,
                same_times: true,
            });
        }
    }
    d.map(|d| ForceDifference {
        compared,
        same_times,
        ..d
    })
}

/// What `palpa replay` is given, resolved.
struct Input {
    ticks: Trajectory,
    recorded: Option<(Recorded, usize)>,
    built: BuiltScene,
    inputs: SceneInputs,
}

fn build(scene: scene::Scene, args: &SceneArgs) -> Result<BuiltScene, String> {
    let (bar, mut on_progress) = progress_bar("building the scene");
    let built = scene::build(scene, &args.cache_dir(), &mut on_progress);
    bar.finish_and_clear();
    let built = built.map_err(|e| e.to_string())?;
    eprintln!("precompute: {}", describe(&built.precompute));
    Ok(built)
}

fn short(hash: &str) -> &str {
    &hash[..12.min(hash.len())]
}

/// Reads the trajectory or recording and builds the scene it replays through.
fn resolve(args: &ReplayArgs) -> Result<Input, String> {
    let recorded = Recorded::find(&args.trajectory)?;
    let ticks_path = match &recorded {
        Some((r, i)) => r.ticks_path(*i),
        None => args.trajectory.clone(),
    };
    let (ticks, note) = Trajectory::load_noting(&ticks_path).map_err(|e| e.to_string())?;
    if let Some(note) = note {
        eprintln!("note: {note}");
    }
    let scene_path = match (&recorded, &args.scene.scene) {
        (_, Some(given)) => Some(given.clone()),
        (Some((r, _)), None) => {
            r.verify_inputs()?;
            Some(r.scene_path())
        }
        (None, None) => None,
    };
    let (scene, inputs) = SceneInputs::load(scene_path.as_deref())?;
    if let (Some((r, _)), Some(given)) = (&recorded, &args.scene.scene) {
        let recorded_with = &r.manifest.scene;
        let fingerprint = inputs.fingerprint();
        if fingerprint != recorded_with.fingerprint {
            eprintln!(
                "warning: {} was recorded with the scene {} (fingerprint {}…) and is \
                 replayed through {} (fingerprint {}…), another scene: its forces will differ",
                r.dir.display(),
                recorded_with.source,
                short(&recorded_with.fingerprint),
                given.display(),
                short(&fingerprint)
            );
        }
    }
    let built = build(scene, &args.scene)?;
    Ok(Input {
        ticks,
        recorded,
        built,
        inputs,
    })
}

/// The default output: `DIR/replay.csv` for a recording, `NAME-replay.csv` beside
/// `NAME.csv`.
fn default_out(args: &ReplayArgs, recorded: Option<&Recorded>) -> PathBuf {
    match recorded {
        Some(r) => r.dir.join(REPLAY),
        None => {
            let stem = args
                .trajectory
                .file_stem()
                .map_or("trajectory".into(), |s| s.to_string_lossy().into_owned());
            args.trajectory.with_file_name(format!("{stem}-replay.csv"))
        }
    }
}

/// The replay written as a lock-step recording in `dir`.
fn start_recording(
    args: &ReplayArgs,
    dir: &Path,
    input: &mut Input,
    setup: &ReplayDeviceSetup,
) -> Result<(RecordingDir, TickWriter), String> {
    let existing = if args.force {
        Existing::Replace
    } else {
        Existing::Refuse
    };
    let recording =
        RecordingDir::create(dir, &input.inputs, 1, false, RecordedBy::Replay, existing)?;
    // The same configuration the replay gets (attaching twice changes nothing).
    let config = input.built.attach_device(setup.rating);
    let how = match &input.recorded {
        Some(_) => "the recording's scene positions, used as they are".to_string(),
        None => "the scene's [device.workspace] (identity without one)".to_string(),
    };
    let record = DeviceRecord::new(
        &format!("replay of {}", args.trajectory.display()),
        "replay",
        &setup.rating,
        (&setup.mapping, &how),
        &config,
    );
    recording.write_device(0, &record, None)?;
    let ticks = recording.ticks(0)?;
    Ok((recording, ticks))
}

/// Runs `palpa replay`; errors are messages for the user.
pub fn run(args: &ReplayArgs) -> Result<(), String> {
    let mut input = resolve(args)?;
    let title = input.built.name();
    let setup = match &input.recorded {
        Some((r, i)) => ReplayDeviceSetup {
            mapping: Workspace::IDENTITY,
            rating: r.devices[*i].rating(),
        },
        None => ReplayDeviceSetup {
            mapping: input.built.scene.device.given_mapping(),
            rating: ReplayDevice::new(input.ticks.clone()).rating(),
        },
    };
    let recording = match &args.record {
        Some(dir) => Some(start_recording(args, dir, &mut input, &setup)?),
        None => None,
    };
    let health = RecordingHealth::default();
    let Input {
        ticks,
        recorded,
        built,
        ..
    } = input;
    let (recording_dir, mut writer) = recording.unzip();
    let Replay { rows, review } = replay_with(built, ticks.clone(), setup, writer.as_mut())
        .inspect_err(|e| health.fail(e.clone()))?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_out(args, recorded.as_ref().map(|r| &r.0)));
    let mut csv = Vec::with_capacity(rows.len() * 96);
    write_csv(&rows, &mut csv).expect("writing into memory");
    write_file_atomic(&out, &csv).map_err(|e| e.to_string())?;
    let peak = rows.iter().map(|r| r.force.norm()).fold(0.0, f64::max);
    let deepest = rows.iter().map(|r| r.depth).fold(0.0, f64::max);
    eprintln!(
        "{} ticks written to {}; peak force {peak:.3} N, deepest indentation {:.2} mm",
        rows.len(),
        out.display(),
        deepest * 1e3
    );
    if let (Some(dir), Some(w)) = (&recording_dir, &writer) {
        eprintln!(
            "recorded: {} ({} rows, lock-step)",
            dir.path().display(),
            w.rows()
        );
    }
    if recorded.is_some() || ticks.samples().iter().all(|s| s.force.is_some()) {
        print_difference(&ticks, &rows, recorded.as_ref().map(|r| &r.0));
    }
    for note in review.notes() {
        eprintln!("note: {note}");
    }
    if let Some(path) = &args.plot {
        plot::plot_csv(&out, path, &title)?;
        eprintln!("plot written to {}", path.display());
    }
    Ok(())
}

fn print_difference(ticks: &Trajectory, rows: &[ReplayRow], recorded: Option<&Recorded>) {
    let Some(d) = force_difference(ticks, rows) else {
        return;
    };
    let timing = if d.same_times {
        "at the same tick times"
    } else {
        "each at the nearest replay tick (a real-time session's ticks and model steps fall \
         at its threads' own times, the replay's on a virtual clock)"
    };
    eprintln!(
        "recorded vs replayed force: largest difference {:.3e} N at t = {:.3} s (recorded \
         {:.4} N, replayed {:.4} N), over {} ticks compared {timing}",
        d.largest, d.t, d.recorded, d.replayed, d.compared
    );
    // A live session's faded ticks (a stalled model thread, a stale sample) have no
    // counterpart in the replay: the difference over the ticks its safety filter passed.
    if let Some((normal, ticks)) = recorded
        .filter(|r| !r.manifest.lockstep)
        .and_then(|r| normal_ticks(&r.ticks_path(0), ticks))
    {
        if let Some(n) = force_difference(&ticks, rows) {
            eprintln!(
                "  over the {normal} ticks the live safety filter passed unchanged (state \
                 `normal`): largest difference {:.3e} N at t = {:.3} s (recorded {:.4} N, \
                 replayed {:.4} N)",
                n.largest, n.t, n.recorded, n.replayed
            );
        }
    }
    if let Some(r) = recorded.filter(|r| r.manifest.lockstep && d.largest > 0.0) {
        eprintln!(
            "note: {} was recorded in lock-step, so its replay should match bit for bit",
            r.dir.display()
        );
    }
}

/// The recorded ticks whose safety state was `normal` (read from the `safety` column of
/// the session's `ticks.csv`), as a trajectory, and how many there are.
fn normal_ticks(path: &Path, ticks: &Trajectory) -> Option<(usize, Trajectory)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut rows = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'));
    let safety = rows.next()?.split(',').position(|c| c.trim() == "safety")?;
    let normal: Vec<bool> = rows
        .map(|l| l.split(',').nth(safety).map(str::trim) == Some("normal"))
        .collect();
    let kept: Vec<_> = ticks
        .samples()
        .iter()
        .zip(&normal)
        .filter(|(_, &n)| n)
        .map(|(s, _)| *s)
        .collect();
    let count = kept.len();
    Trajectory::new(kept, &path.display().to_string())
        .ok()
        .map(|t| (count, t))
}
