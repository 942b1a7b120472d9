//! One brisk press on the default block made Veronda–Westmann γ = 5 (the brisk bench's
//! scene), in lock-step, with the large-strain model's per-step trace: for studying why
//! a step fails and what the next one starts from. `replay` runs the corrections in step
//! (`palpa replay`'s path); `serve` runs them and the K⁻¹ columns on their own threads
//! as `palpa serve` does, the ticks paced at their real times. Each tick at least 1 mm
//! inside whose force does not push is printed, then the counts and the later 4 mm
//! press against a fresh start.
//!
//! `RUST_LOG=palpa::nonlinear::trace=debug cargo run --release --example brisk_trace --
//! <replay|serve> <jump|20|50> [fresh]` (`=trace` adds Newton's residual per iteration).

use std::path::Path;
use std::time::{Duration, Instant};

use palpa::app::config::attach_device;
use palpa::app::replay::replay;
use palpa::app::scene::{build, BuiltScene};
use palpa::app::serve::{ControlRouter, ServeStep, Stylus, ViewerLink};
use palpa::device::force_log::ForceLog;
use palpa::device::mapped::{MappedDevice, Workspace};
use palpa::device::replay::{Trajectory, TrajectorySample};
use palpa::device::sim::SimDevice;
use palpa::device::HapticDevice;
use palpa::haptic::LockStep;
use palpa::scene::Scene;
use palpa::stream::{snapshot_slot, ProbeControl, SceneVisual};
use palpa::Vec3;

/// Where the later gentle press goes (m).
const ELSEWHERE: Vec3 = Vec3::new(0.03, 0.02, 0.0);

/// Ticks: time (s), probe (m), force on the hand (N), contact reported.
type Ticks = Vec<(f64, Vec3, Vec3, bool, String)>;

fn scene(cache: &Path) -> BuiltScene {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/default.toml"))
            .unwrap()
            .replace(
                "density = 1000\n",
                "density = 1000\nmodel = \"veronda-westmann\"\nstiffening = 5\n",
            )
            .replace("kind = \"modal\"", "kind = \"nonlinear\"");
    let scene = Scene::parse(&text, "default vw5", Path::new(".")).unwrap();
    build(scene, cache, &mut |_| {}).unwrap()
}

fn legs(legs: &[(f64, Vec3, Vec3)]) -> Vec<Vec3> {
    let mut out = Vec::new();
    for &(duration, from, to) in legs {
        let n = (duration / 1e-3).round().max(1.0) as usize;
        out.extend((1..=n).map(|k| from + (to - from) * (k as f64 / n as f64)));
    }
    out
}

fn gentle(from: Vec3) -> Vec<Vec3> {
    let up = ELSEWHERE + Vec3::new(0.0, 0.0, 0.01);
    let down = ELSEWHERE + Vec3::new(0.0, 0.0, -0.004);
    legs(&[(0.5, from, up), (1.4, up, down), (1.0, down, down)])
}

/// The brisk bench's path, held 1 s deep instead of 3 s.
fn brisk(speed: f64) -> Vec<Vec3> {
    let (above, deep) = (Vec3::new(0.0, 0.0, 0.01), Vec3::new(0.0, 0.0, -0.015));
    let mut path = if speed.is_finite() {
        legs(&[(1.0, above, above), (0.025 / speed, above, deep)])
    } else {
        let near = Vec3::new(0.0, 0.0, 0.005);
        legs(&[(1.0, near, near)])
    };
    path.extend(legs(&[(1.0, deep, deep), (0.5, deep, above)]));
    path.extend(gentle(above));
    path
}

fn fresh() -> Vec<Vec3> {
    let up = ELSEWHERE + Vec3::new(0.0, 0.0, 0.01);
    let mut path = legs(&[(1.0, up, up)]);
    path.extend(gentle(up));
    path
}

fn replayed(built: BuiltScene, path: &[Vec3]) -> Ticks {
    let samples = path
        .iter()
        .enumerate()
        .map(|(k, &position)| TrajectorySample {
            t: k as f64 * 1e-3,
            position,
            buttons: 0,
            force: None,
        })
        .collect();
    let trajectory = Trajectory::new(samples, "brisk press").unwrap();
    replay(built, trajectory)
        .iter()
        .map(|r| (r.t, r.probe, r.force, r.contact, String::new()))
        .collect()
}

fn served(mut built: BuiltScene, path: &[Vec3]) -> Ticks {
    let (stylus, input) = SimDevice::external(path[0]);
    let mut device = ForceLog::new(MappedDevice::new(stylus, Workspace::IDENTITY));
    let config = attach_device(&mut built, device.rating());
    built.model.work_in_background().unwrap();
    let (_, visual) = SceneVisual::new(&built.name(), &built.mesh.mesh, &built.model);
    let (frames, _) = snapshot_slot(visual.at_rest(path[0]));
    let (mut control, resets) = ControlRouter::new(Some(Stylus::new(input, path[0])));
    let link = ViewerLink {
        snapshots: frames,
        resets,
        commanded: device.commanded(),
        samples: None,
    };
    let step = ServeStep::new(built.model, visual, link, built.scene.rates.visual, path[0]);
    let mut lock = LockStep::new(device, step, config);
    let start = Instant::now();
    let mut ticks = Ticks::new();
    for (k, &p) in path.iter().enumerate() {
        if k % 2 == 0 {
            control.route(ProbeControl::MoveTo(p));
        }
        let r = lock.step();
        let due = start + Duration::from_secs_f64(r.t);
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        ticks.push((
            r.t,
            r.probe,
            r.force,
            r.model_in_contact,
            format!("{:?}", r.state),
        ));
    }
    ticks
}

/// The mean force along z over the last 0.5 s (N).
fn later(ticks: &Ticks) -> f64 {
    let last = &ticks[ticks.len() - 500..];
    last.iter().map(|t| t.2.z).sum::<f64>() / last.len() as f64
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stdout)
        .without_time()
        .init();
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map_or("replay", String::as_str);
    let speed = match args.get(2).map_or("jump", String::as_str) {
        "jump" => f64::INFINITY,
        cm => cm.parse::<f64>().expect("jump, or a speed in cm/s") / 100.0,
    };
    let cache = tempfile::tempdir().unwrap();
    let run = |path: &[Vec3]| match mode {
        "serve" => served(scene(cache.path()), path),
        _ => replayed(scene(cache.path()), path),
    };
    let started = Instant::now();
    let ticks = run(&brisk(speed));
    let (mut inside, mut lost, mut no_contact) = (0, 0, 0);
    for (t, p, f, contact, state) in &ticks {
        let (t, p, f, contact) = (*t, *p, *f, *contact);
        if p.z > -1e-3 {
            continue;
        }
        inside += 1;
        if f.z <= 0.0 {
            lost += 1;
            no_contact += usize::from(!contact);
            println!(
                "LOST t {t:.3} z {:.4} fz {:.4} contact {contact} {state}",
                p.z, f.z
            );
        }
    }
    let peak = ticks.iter().map(|t| t.2.norm()).fold(0.0, f64::max);
    let l = later(&ticks);
    // The fresh start's press after (the brisk run's trace comes first).
    let expected = if args.get(3).is_some_and(|a| a == "fresh") {
        later(&run(&fresh()))
    } else {
        f64::NAN
    };
    println!(
        "{mode} {speed} m/s: {inside} ticks inside, {lost} without a push ({no_contact} no \
         contact); peak {peak:.3} N; later press {l:.4} N ({:+.2} % of a fresh start's {expected:.4} N); {:.0} s",
        100.0 * (l / expected - 1.0),
        started.elapsed().as_secs_f64()
    );
}
