//! One model step of the default scene (modal, point probe with its contact patch) with
//! one probe and with two, as `palpa serve` steps them for one and two devices: the
//! probes move as `sim:press@X,Y` (from 1 cm above the top face down 16 mm and back,
//! 2 s period) and `sim:circle` (20 mm radius, 3 mm deep, 4 s period). Each step is
//! timed with the thread's CPU clock (the machine is shared: wall time includes other
//! processes) and p50, p90, p99, max and mean are printed per case, with the K⁻¹ columns
//! completed on the worker thread as `palpa serve` does.
//!
//! And the coupling of two contacts through the tissue: a press held 6 mm deep at the
//! block's centre, alone and beside a second probe 3 mm deep 20 mm away (at six
//! angles, as `sim:circle` passes), each settled, on the modal runtime and on the
//! condensed static FEM (K⁻¹ columns of the same mesh: no modes, no dynamics).
//!
//! Each case is also run in lock-step (columns completed in step, no worker) and prints
//! a digest of every force it produced, bit for bit: two builds that print the same
//! digest produced the same forces.

use std::f64::consts::TAU;
use std::hash::{DefaultHasher, Hash, Hasher};

use palpa::app::scene::build;
use palpa::pipeline::SceneModel;
use palpa::scene::{BackendKind, Scene};
use palpa::tissue::{LocalForceModel, ModelStep, MAX_PROBES};
use palpa::Vec3;

const DT: f64 = 5e-3;

/// A scripted probe position at time `t` (s).
#[derive(Clone, Copy)]
enum Motion {
    /// `sim:press@x,y`.
    Press(f64, f64),
    /// `sim:circle`.
    Circle,
}

impl Motion {
    fn at(self, t: f64) -> Vec3 {
        match self {
            Motion::Press(x, y) => {
                let s = 0.5 * (1.0 - (TAU * t / 2.0).cos());
                Vec3::new(x, y, 0.01 - 0.016 * s)
            }
            Motion::Circle => {
                let a = TAU * t / 4.0;
                Vec3::new(0.02 * a.cos(), 0.02 * a.sin(), -0.003)
            }
        }
    }
}

fn model(probes: usize, background: bool) -> SceneModel {
    model_on(BackendKind::Modal, probes, background)
}

fn model_on(backend: BackendKind, probes: usize, background: bool) -> SceneModel {
    let cache = std::env::temp_dir().join("palpa-bench-probes");
    let mut scene = Scene::embedded_default();
    scene.backend.kind = backend;
    let mut model = build(scene, &cache, &mut |_| {})
        .unwrap()
        .model
        .with_probes(probes);
    model.set_force_cap(10.0);
    if background {
        model.work_in_background().unwrap();
    }
    model
}

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec that outlives the call.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Steps `motions` for `seconds` (s); returns each step's CPU time (ns) and the digest
/// of every force model's f₀ and stiffness bits.
fn run(motions: &[Motion], seconds: f64, background: bool) -> (Vec<u64>, u64) {
    let mut model = model(motions.len(), background);
    let mut out = [LocalForceModel::NONE; MAX_PROBES];
    let mut probes = [Vec3::zeros(); MAX_PROBES];
    let mut times = Vec::new();
    let mut digest = DefaultHasher::new();
    let steps = (seconds / DT).round() as usize;
    for i in 0..steps {
        let t = i as f64 * DT;
        for (p, m) in probes.iter_mut().zip(motions) {
            *p = m.at(t);
        }
        let n = motions.len();
        let start = thread_cpu_ns();
        model.step_probes(t, DT, &probes[..n], &mut out[..n]);
        times.push(thread_cpu_ns() - start);
        for o in &out[..n] {
            for x in o.f0.iter().chain(o.stiffness.iter()) {
                x.to_bits().hash(&mut digest);
            }
        }
    }
    (times, digest.finish())
}

/// Probe 1's settled force (N) held at `press`, with probe 2 held at `other` if given,
/// on `backend`: the probes come down from above over 0.5 s and are held 1.5 s.
fn settled(backend: BackendKind, press: Vec3, other: Option<Vec3>) -> f64 {
    let n = 1 + usize::from(other.is_some());
    let mut model = model_on(backend, n, false);
    let mut out = [LocalForceModel::NONE; MAX_PROBES];
    let targets = [press, other.unwrap_or(press)];
    for i in 0..400 {
        let t = i as f64 * DT;
        let s = (t / 0.5).min(1.0);
        let probes = targets.map(|p| p + Vec3::z() * (0.01 * (1.0 - s)));
        model.step_probes(t, DT, &probes[..n], &mut out[..n]);
    }
    out[0].f0.norm()
}

/// Probe 1's force beside probe 2 against alone, per backend, at six angles.
fn coupling() {
    let press = Vec3::new(0.0, 0.0, -0.006);
    for (backend, label) in [
        (BackendKind::Modal, "modal runtime"),
        (BackendKind::Condensed, "condensed static FEM"),
    ] {
        let alone = settled(backend, press, None);
        let beside: Vec<String> = (0..6)
            .map(|k| {
                let a = TAU * k as f64 / 6.0;
                let other = Vec3::new(0.02 * a.cos(), 0.02 * a.sin(), -0.003);
                let f = settled(backend, press, Some(other));
                format!("{:+.2} %", 100.0 * (f / alone - 1.0))
            })
            .collect();
        println!(
            "coupling, {label}: press 6 mm deep at the centre alone {alone:.4} N; beside a \
             probe 3 mm deep 20 mm away at 0°, 60°, …, 300°: {}",
            beside.join(", ")
        );
    }
}

fn main() {
    // `cargo bench` passes --bench; a filter word selects cases by name.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let cases: [(&str, &[Motion]); 4] = [
        ("one press@-0.025,0", &[Motion::Press(-0.025, 0.0)]),
        (
            "two presses @-0.025,0 @0.025,0",
            &[Motion::Press(-0.025, 0.0), Motion::Press(0.025, 0.0)],
        ),
        ("one circle", &[Motion::Circle]),
        ("press + circle", &[Motion::Press(0.0, 0.0), Motion::Circle]),
    ];
    if filter.is_empty() || filter.iter().any(|f| f == "coupling") {
        coupling();
    }
    for (name, motions) in cases {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let (_, digest) = run(motions, 4.0, false);
        let (mut times, _) = run(motions, 8.0, true);
        let mean = times.iter().sum::<u64>() as f64 / times.len() as f64;
        times.sort_unstable();
        let q = |p: f64| times[((times.len() - 1) as f64 * p).round() as usize] as f64 * 1e-3;
        println!(
            "model step, {name}: CPU µs p50 {:.0}, p90 {:.0}, p99 {:.0}, max {:.0}, mean {:.0} \
             ({} steps); lock-step force digest {digest:016x}",
            q(0.5),
            q(0.9),
            q(0.99),
            q(1.0),
            mean * 1e-3,
            times.len(),
        );
    }
}
