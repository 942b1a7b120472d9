//! Replay: a recorded session or a trajectory through a scene in deterministic lock-step
//! (one model step every haptic/model ticks on a virtual clock), giving the force the
//! user's hand would get at every haptic tick.
//!
//! A recording directory (`palpa serve --record DIR`, or `DIR/ticks.csv`) replays
//! through its own copy of the scene with the device it was recorded with: its
//! positions are scene positions (mapped once, when they were recorded), its rating sets
//! the same limits. A plain trajectory is in the device frame and goes through the
//! scene's `[device.workspace]`.

use std::path::{Path, PathBuf};

use super::config::{attach_device, given_mapping};
use super::paraview::{ParaviewOptions, ParaviewSeries, ParaviewWritten};
use crate::app::scene::{self, BuiltScene};
use crate::device::mapped::{MappedDevice, Workspace};
use crate::device::replay::{ReplayDevice, Trajectory};
use crate::device::{DeviceRating, HapticDevice};
use crate::files::write_file_atomic;
use crate::haptic::review::TickReview;
use crate::haptic::{LockStep, SafetyState};
use crate::modal::Progress;
use crate::recording::session_dir::REPLAY;
use crate::recording::TickWriter;
use crate::recording::{DeviceRecord, Existing, Recorded, RecordedBy, RecordingDir, SceneInputs};
use crate::scene::PrecomputeOutcome;
use crate::Vec3;

pub use crate::haptic::tick_csv::{write_csv, TickRow as ReplayRow, HEADER};

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
        mapping: given_mapping(&built.scene.device),
        rating: ReplayDevice::new(trajectory.clone()).rating(),
    };
    replay_with(built, trajectory, setup, Outputs::default()).expect("no file is written")
}

/// Replays a recording's probe positions (scene frame, used as they are) with the
/// device it was recorded with.
pub fn replay_recorded(built: BuiltScene, ticks: Trajectory, device: &DeviceRecord) -> Replay {
    let setup = ReplayDeviceSetup {
        mapping: Workspace::IDENTITY,
        rating: device.rating(),
    };
    replay_with(built, ticks, setup, Outputs::default()).expect("no file is written")
}

/// Warns of a trajectory that looks like a unit mistake against the scene (positions in
/// millimetres, times in milliseconds).
fn warn_implausible(built: &BuiltScene, trajectory: &Trajectory, mapping: &Workspace) {
    let rest = built.model.rest_positions();
    let bounds = rest.iter().fold(
        (Vec3::repeat(f64::INFINITY), Vec3::repeat(f64::NEG_INFINITY)),
        |(lo, hi), p| (lo.inf(p), hi.sup(p)),
    );
    let radius = built.scene.contact.probe_radius;
    for why in trajectory_warnings(trajectory, mapping, bounds, radius) {
        tracing::warn!("trajectory: {why}");
    }
}

/// Why a trajectory looks like a unit mistake against a scene whose mesh spans `lo`..`hi`
/// (m) with a probe of `radius` (m), its device positions taken to the scene by `map`:
/// it never comes within the scene's box (millimetres?), its median time step is not
/// about 1 ms, or it lasts more than 10 × its row count in ms (times in ms?).
fn trajectory_warnings(
    trajectory: &Trajectory,
    map: &Workspace,
    (lo, hi): (Vec3, Vec3),
    radius: f64,
) -> Vec<String> {
    let samples = trajectory.samples();
    let mut warnings = Vec::new();
    let margin = radius + 0.05 * (hi - lo).norm();
    let inside = |p: &Vec3| (0..3).all(|a| p[a] >= lo[a] - margin && p[a] <= hi[a] + margin);
    let scene: Vec<Vec3> = samples.iter().map(|s| map.to_scene(&s.position)).collect();
    if !scene.iter().any(inside) {
        let (min, max) = scene.iter().fold(
            (Vec3::repeat(f64::INFINITY), Vec3::repeat(f64::NEG_INFINITY)),
            |(a, b), p| (a.inf(p), b.sup(p)),
        );
        let reach = (max - min).norm().max(max.amax()).max(min.amax());
        let hint = if reach > 10.0 * (hi - lo).norm() {
            " (positions in millimetres?)"
        } else {
            ""
        };
        warnings.push(format!(
            "the probe never comes within the scene's box: it moves within \
             ({:.4}, {:.4}, {:.4})–({:.4}, {:.4}, {:.4}) m, the tissue lies within \
             ({:.4}, {:.4}, {:.4})–({:.4}, {:.4}, {:.4}) m{hint}; positions are in m",
            min.x, min.y, min.z, max.x, max.y, max.z, lo.x, lo.y, lo.z, hi.x, hi.y, hi.z
        ));
    }
    if samples.len() >= 2 {
        let mut steps: Vec<f64> = samples.windows(2).map(|w| w[1].t - w[0].t).collect();
        steps.sort_by(f64::total_cmp);
        let step = steps[steps.len() / 2];
        if !(0.5e-3..=2e-3).contains(&step) {
            warnings.push(format!(
                "the trajectory's time step is {} ms (median), not about 1 ms: the haptic \
                 loop holds each sample until the next; times are in s{}",
                step * 1e3,
                if step >= 0.5 {
                    " (in milliseconds?)"
                } else {
                    ""
                }
            ));
        }
    }
    let duration = trajectory.duration();
    if duration > 10.0 * samples.len() as f64 * 1e-3 {
        warnings.push(format!(
            "the trajectory lasts {duration} s over {} rows, more than 10 ms a row: times \
             are in s; are they in milliseconds?",
            samples.len()
        ));
    }
    warnings
}

/// Rows written between commits of a lock-step recording.
const COMMIT_ROWS: usize = 1000;

/// What a replay writes besides its rows.
#[derive(Default)]
pub struct Outputs<'a> {
    /// Every tick, as a lock-step recording.
    pub record: Option<&'a mut TickWriter>,
    /// The deformed tissue as a ParaView series.
    pub paraview: Option<&'a mut ParaviewSeries>,
}

/// Replays `trajectory` as `setup` says, writing every tick and frame to `outputs`.
pub fn replay_with(
    mut built: BuiltScene,
    trajectory: Trajectory,
    setup: ReplayDeviceSetup,
    outputs: Outputs,
) -> Result<Replay, String> {
    let Outputs {
        mut record,
        mut paraview,
    } = outputs;
    let device = MappedDevice::new(
        ReplayDevice::with_rating(trajectory.clone(), setup.rating),
        setup.mapping,
    );
    warn_implausible(&built, &trajectory, &setup.mapping);
    let config = attach_device(&mut built, setup.rating);
    let ticks = (trajectory.duration() / config.tick_period).floor() as usize + 1;
    let mut review = TickReview::new(&config.limits);
    let mut lock = LockStep::new(device, built.model, config);
    let mut rows = Vec::with_capacity(ticks);
    for k in 0..ticks {
        let r = lock.step();
        review.add(&r);
        rows.push(ReplayRow::of(&r));
        if let Some(series) = paraview.as_deref_mut() {
            series.offer(r.t, lock.model_mut())?;
        }
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

/// What `palpa replay` replays, through which scene, and where its output goes.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    /// A recording directory (`palpa serve --record DIR`) or a `ticks.csv` in one; or a
    /// trajectory CSV (`t,x,y,z,buttons`, s and m, device frame).
    pub input: PathBuf,
    /// The scene file: a trajectory's (default: the embedded default scene); for a
    /// recording, another scene than its own copy (warned about).
    pub scene: Option<PathBuf>,
    /// Where the precompute is cached.
    pub cache_dir: PathBuf,
    /// The output CSV; default `DIR/replay.csv` for a recording, `NAME-replay.csv`
    /// beside a trajectory `NAME.csv`. Replaced if it exists.
    pub out: Option<PathBuf>,
    /// Also write the replay as a lock-step recording directory, and what to do with a
    /// recording already there.
    pub record: Option<(PathBuf, Existing)>,
    /// Also write the deformed tissue as a ParaView series.
    pub paraview: Option<ParaviewOptions>,
}

/// A recording's forces against its replay's.
#[derive(Clone, Debug)]
pub struct RecordedDifference {
    /// Over every recorded tick with a force.
    pub all: ForceDifference,
    /// Over the ticks a live session's safety filter passed unchanged (state `normal`),
    /// and how many: a faded tick has no counterpart in the replay.
    pub normal: Option<(usize, ForceDifference)>,
    /// The recording, if it was made in lock-step (its replay should match bit for bit).
    pub lockstep: Option<PathBuf>,
}

/// What a replay did.
pub struct ReplayOutcome {
    /// Its rows and their review.
    pub replay: Replay,
    /// The CSV written.
    pub out: PathBuf,
    /// The scene's name.
    pub title: String,
    /// What the precompute did (computed, or loaded from the cache).
    pub precompute: PrecomputeOutcome,
    /// What the user should know about the input (a different scene, a torn last row).
    pub warnings: Vec<String>,
    /// Notes on the input (a recording cut off by a crash).
    pub notes: Vec<String>,
    /// The lock-step recording written and its rows.
    pub recorded: Option<(PathBuf, u64)>,
    /// The recorded forces against the replayed ones (a recording, or a trajectory
    /// with forces).
    pub difference: Option<RecordedDifference>,
    /// The ParaView series written.
    pub paraview: Option<ParaviewWritten>,
}

/// What a replay is given, resolved.
struct Input {
    ticks: Trajectory,
    recorded: Option<(Recorded, usize)>,
    built: BuiltScene,
    inputs: SceneInputs,
    warnings: Vec<String>,
    notes: Vec<String>,
}

fn short(hash: &str) -> &str {
    &hash[..12.min(hash.len())]
}

/// Reads the trajectory or recording and builds the scene it replays through.
fn resolve(options: &ReplayOptions, progress: &mut dyn FnMut(Progress)) -> Result<Input, String> {
    let recorded = Recorded::find(&options.input)?;
    let ticks_path = match &recorded {
        Some((r, i)) => r.ticks_path(*i),
        None => options.input.clone(),
    };
    let (ticks, note) = Trajectory::load_noting(&ticks_path).map_err(|e| e.to_string())?;
    let scene_path = match (&recorded, &options.scene) {
        (_, Some(given)) => Some(given.clone()),
        (Some((r, _)), None) => {
            r.verify_inputs()?;
            Some(r.scene_path())
        }
        (None, None) => None,
    };
    let (scene, inputs) = SceneInputs::load(scene_path.as_deref())?;
    let mut warnings = Vec::new();
    if let (Some((r, _)), Some(given)) = (&recorded, &options.scene) {
        let recorded_with = &r.manifest.scene;
        let fingerprint = inputs.fingerprint();
        if fingerprint != recorded_with.fingerprint {
            warnings.push(format!(
                "{} was recorded with the scene {} (fingerprint {}…) and is replayed \
                 through {} (fingerprint {}…), another scene: its forces will differ",
                r.dir.display(),
                recorded_with.source,
                short(&recorded_with.fingerprint),
                given.display(),
                short(&fingerprint)
            ));
        }
    }
    let built = scene::build(scene, &options.cache_dir, progress).map_err(|e| e.to_string())?;
    Ok(Input {
        ticks,
        recorded,
        built,
        inputs,
        warnings,
        notes: note.into_iter().collect(),
    })
}

/// The default output: `DIR/replay.csv` for a recording, `NAME-replay.csv` beside
/// `NAME.csv`.
fn default_out(input: &Path, recorded: Option<&Recorded>) -> PathBuf {
    match recorded {
        Some(r) => r.dir.join(REPLAY),
        None => {
            let stem = input
                .file_stem()
                .map_or("trajectory".into(), |s| s.to_string_lossy().into_owned());
            input.with_file_name(format!("{stem}-replay.csv"))
        }
    }
}

/// The replay written as a lock-step recording in `dir`.
fn start_recording(
    options: &ReplayOptions,
    (dir, existing): (&Path, Existing),
    input: &mut Input,
    setup: &ReplayDeviceSetup,
) -> Result<(RecordingDir, TickWriter), String> {
    let recording =
        RecordingDir::create(dir, &input.inputs, 1, false, RecordedBy::Replay, existing)?;
    // The same configuration the replay gets (attaching twice changes nothing).
    let config = attach_device(&mut input.built, setup.rating);
    let how = match &input.recorded {
        Some(_) => "the recording's scene positions, used as they are".to_string(),
        None => "the scene's [device.workspace] (identity without one)".to_string(),
    };
    let record = DeviceRecord::new(
        &format!("replay of {}", options.input.display()),
        "replay",
        &setup.rating,
        (&setup.mapping, &how),
        &config,
    );
    recording.write_device(0, &record, None)?;
    let ticks = recording.ticks(0)?;
    Ok((recording, ticks))
}

/// Replays a recording or trajectory as `options` say: builds its scene (`progress`
/// hears of the stages), replays it in lock-step, writes the CSV (and the lock-step
/// recording), and compares the forces with the recorded ones.
pub fn replay_session(
    options: &ReplayOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<ReplayOutcome, String> {
    let mut input = resolve(options, progress)?;
    let title = input.built.name();
    let precompute = input.built.precompute.clone();
    let setup = match &input.recorded {
        Some((r, i)) => ReplayDeviceSetup {
            mapping: Workspace::IDENTITY,
            rating: r.devices[*i].rating(),
        },
        None => ReplayDeviceSetup {
            mapping: given_mapping(&input.built.scene.device),
            rating: ReplayDevice::new(input.ticks.clone()).rating(),
        },
    };
    let recording = match &options.record {
        Some((dir, existing)) => Some(start_recording(
            options,
            (dir, *existing),
            &mut input,
            &setup,
        )?),
        None => None,
    };
    let Input {
        ticks,
        recorded,
        built,
        warnings,
        notes,
        ..
    } = input;
    let (recording_dir, mut writer) = recording.unzip();
    let mut series = match &options.paraview {
        Some(o) => Some(ParaviewSeries::create(o, &built)?),
        None => None,
    };
    let outputs = Outputs {
        record: writer.as_mut(),
        paraview: series.as_mut(),
    };
    let replay = replay_with(built, ticks.clone(), setup, outputs)?;
    let paraview = series.map(ParaviewSeries::finish).transpose()?;
    let out = options
        .out
        .clone()
        .unwrap_or_else(|| default_out(&options.input, recorded.as_ref().map(|r| &r.0)));
    let mut csv = Vec::with_capacity(replay.rows.len() * 96);
    // `palpa plot` titles the plot from this line; readers skip `#` lines.
    let scene: String = title
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    csv.extend_from_slice(format!("# scene: {scene}\n").as_bytes());
    write_csv(&replay.rows, &mut csv).expect("writing into memory");
    write_file_atomic(&out, &csv).map_err(|e| e.to_string())?;
    let difference = match recorded.is_some() || ticks.samples().iter().all(|s| s.force.is_some()) {
        true => recorded_difference(
            &ticks,
            &replay.rows,
            recorded.as_ref().map(|(r, i)| (r, *i)),
        ),
        false => None,
    };
    Ok(ReplayOutcome {
        replay,
        out,
        title,
        precompute,
        warnings,
        notes,
        recorded: recording_dir
            .zip(writer)
            .map(|(d, w)| (d.path().to_path_buf(), w.rows())),
        difference,
        paraview,
    })
}

/// The recorded forces against the replayed `rows`. A session's last row, the zero
/// force commanded as it stopped (state `stopped`), has no counterpart in the replay and
/// is left out.
fn recorded_difference(
    ticks: &Trajectory,
    rows: &[ReplayRow],
    recorded: Option<(&Recorded, usize)>,
) -> Option<RecordedDifference> {
    let states = recorded.and_then(|(r, i)| safety_states(&r.ticks_path(i)));
    let Some(states) = states else {
        return Some(RecordedDifference {
            all: force_difference(ticks, rows)?,
            normal: None,
            lockstep: recorded
                .filter(|(r, _)| r.manifest.lockstep)
                .map(|(r, _)| r.dir.clone()),
        });
    };
    let (_, running) = ticks_in_states(ticks, &states, |s| s != SafetyState::Stopped.name())?;
    let all = force_difference(&running, rows)?;
    let (r, _) = recorded?;
    let normal = match r.manifest.lockstep {
        true => None,
        false => ticks_in_states(ticks, &states, |s| s == SafetyState::Normal.name())
            .and_then(|(count, normal)| force_difference(&normal, rows).map(|d| (count, d))),
    };
    Some(RecordedDifference {
        all,
        normal,
        lockstep: r.manifest.lockstep.then(|| r.dir.clone()),
    })
}

/// The safety state of every row of a session's `ticks.csv` (its `safety` column).
fn safety_states(path: &Path) -> Option<Vec<String>> {
    let text = crate::files::read_text(path, crate::files::FileKind::Trajectory).ok()?;
    let mut rows = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'));
    let safety = rows.next()?.split(',').position(|c| c.trim() == "safety")?;
    Some(
        rows.map(|l| l.split(',').nth(safety).unwrap_or("").trim().to_string())
            .collect(),
    )
}

/// The recorded ticks whose safety state `keep` accepts, as a trajectory, and how many.
fn ticks_in_states(
    ticks: &Trajectory,
    states: &[String],
    keep: impl Fn(&str) -> bool,
) -> Option<(usize, Trajectory)> {
    let kept: Vec<_> = ticks
        .samples()
        .iter()
        .zip(states)
        .filter(|(_, s)| keep(s))
        .map(|(s, _)| *s)
        .collect();
    let count = kept.len();
    Trajectory::new(kept, "recorded ticks")
        .ok()
        .map(|t| (count, t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::replay::TrajectorySample;

    fn trajectory(points: &[(f64, [f64; 3])]) -> Trajectory {
        let samples = points
            .iter()
            .map(|&(t, p)| TrajectorySample {
                t,
                position: Vec3::from(p),
                buttons: 0,
                force: None,
            })
            .collect();
        Trajectory::new(samples, "test").unwrap()
    }

    #[test]
    fn trajectories_in_millimetres_or_with_times_in_milliseconds_are_named() {
        let block = (Vec3::new(-0.05, -0.05, -0.04), Vec3::new(0.05, 0.05, 0.0));
        let at_1khz: Vec<(f64, [f64; 3])> = (0..100)
            .map(|i| (i as f64 * 1e-3, [0.0, 0.0, 0.005 - 1e-4 * i as f64]))
            .collect();
        let fine = trajectory(&at_1khz);
        assert!(trajectory_warnings(&fine, &Workspace::IDENTITY, block, 0.0).is_empty());
        let mm: Vec<(f64, [f64; 3])> = at_1khz
            .iter()
            .map(|&(t, p)| (t, p.map(|x| 1e3 * x + 20.0)))
            .collect();
        let w = trajectory_warnings(&trajectory(&mm), &Workspace::IDENTITY, block, 0.0);
        assert!(w.len() == 1 && w[0].contains("millimetres"), "{w:?}");
        let ms: Vec<(f64, [f64; 3])> = at_1khz.iter().map(|&(t, p)| (t * 1e3, p)).collect();
        let w = trajectory_warnings(&trajectory(&ms), &Workspace::IDENTITY, block, 0.0);
        assert!(
            w.len() == 2 && w.iter().all(|w| w.contains("milliseconds")),
            "{w:?}"
        );
    }
}
