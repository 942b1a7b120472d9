//! The full nonlinear static FEM on the default block with Veronda–Westmann γ = 5 in
//! both materials: internal forces and the tangent at a pressed state, and a whole press
//! from rest to 2 mm over the lump (Newton with line search, every tangent factorised).
//! This is the offline ground truth (`palpa indent --full`), not a model step. The
//! `nonlinear_reduced` group times the reduced model (`ReducedStatics`) on the same
//! block, and `model_step` the runtime backend's steps (`PALPA_BENCH_SCENE=breast` or
//! `=default` runs one scene; `PALPA_BENCH_IN_STEP=1` adds the in-step run and its
//! forces' comparison).

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};

use palpa::app::scene::build;
use palpa::nonlinear::{
    train_cubature, Hyperelastic, LawKind, LinearConstraint, NewtonOptions, NonlinearStatics,
    ReducedStatics,
};
use palpa::pipeline::SceneModel;
use palpa::scene::{FemInputs, Scene};
use palpa::tissue::ModelStep;
use palpa::Vec3;

/// The default block with every tetrahedron's law made Veronda–Westmann γ = 5, with
/// element pressure (the offline solver's own costs).
fn problem() -> (NonlinearStatics, FemInputs) {
    let inputs = FemInputs::resolve(&Scene::embedded_default()).expect("default scene");
    let laws: Vec<Hyperelastic> = inputs
        .per_tet
        .iter()
        .map(|m| Hyperelastic::new(LawKind::VerondaWestmann { stiffening: 5.0 }, m))
        .collect();
    let prescribed: Vec<bool> = inputs.fixed.iter().flat_map(|&f| [f; 3]).collect();
    let statics =
        NonlinearStatics::new(&inputs.mesh.mesh, laws, prescribed).expect("valid problem");
    (statics, inputs)
}

/// Newton's stopping rule for every solve here.
const OPTIONS: NewtonOptions = NewtonOptions {
    relative: 1e-9,
    max_iterations: 40,
};

/// A patch of top-face nodes within 1 cm of the centre, weights (1 − (d/r)²)², pressed
/// along −z to `depth` (m).
fn press(inputs: &FemInputs, depth: f64) -> LinearConstraint {
    let r = 0.01;
    let pairs: Vec<(usize, f64)> = inputs
        .mesh
        .mesh
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, x)| x.z.abs() < 1e-9 && x.xy().norm() < r)
        .map(|(v, x)| (v, (1.0 - (x.xy().norm() / r).powi(2)).powi(2)))
        .collect();
    let total: f64 = pairs.iter().map(|p| p.1).sum();
    LinearConstraint {
        coefficients: pairs.iter().map(|&(v, w)| (3 * v + 2, w / total)).collect(),
        value: -depth,
        multiplier: 0.0,
    }
}

fn nonlinear(c: &mut Criterion) {
    let (statics, inputs) = problem();
    let loads = vec![Vec3::zeros(); inputs.mesh.mesh.nodes.len()];
    let options = OPTIONS;
    // The state 2 mm deep, for the per-iteration parts.
    let mut pressed = loads.clone();
    let mut constraint = press(&inputs, 0.002);
    let report = statics
        .solve_constrained(&mut pressed, &loads, Some(&mut constraint), &options)
        .expect("the press converges");
    eprintln!(
        "2 mm over the lump: {:.4} N in {} Newton iterations",
        -constraint.multiplier,
        report.steps.len()
    );
    let mut g = c.benchmark_group("nonlinear");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    g.bench_function("internal_forces_default_block", |b| {
        b.iter(|| statics.internal_forces(&pressed))
    });
    g.bench_function("tangent_default_block", |b| {
        b.iter(|| statics.tangent(&pressed))
    });
    g.bench_function("press_2mm_from_rest_default_block", |b| {
        b.iter(|| {
            let mut u = loads.clone();
            let mut constraint = press(&inputs, 0.002);
            statics
                .solve_constrained(&mut u, &loads, Some(&mut constraint), &options)
                .expect("the press converges")
        })
    });
    g.finish();
}

/// The reduced model (`ReducedStatics`) pressed over the lump to 6 mm with its basis
/// grown on the way (0.25, 1, 2, 3, 4, 6 mm), then: one move of the press by 0.1 mm
/// solved in the basis as it is (what a model step would do as the probe moves), one
/// reduced gradient and tangent (a Newton iteration's work), and one enrichment (full
/// residual, two solves with K); then the move and the iteration again with the forces
/// summed over a cubature trained on the press.
fn reduced(c: &mut Criterion) {
    let (statics, inputs) = problem();
    let loads = vec![Vec3::zeros(); inputs.mesh.mesh.nodes.len()];
    let options = OPTIONS;
    let mut model = ReducedStatics::new(Arc::new(statics), 32).expect("K factorises");
    let mut constraint = [press(&inputs, 0.0)];
    model
        .add_constraint_shapes(&constraint)
        .expect("room for the shape");
    let mut q = vec![0.0; model.shapes()];
    for depth in [0.00025, 0.001, 0.002, 0.003, 0.004, 0.006] {
        constraint[0].value = -depth;
        model
            .solve_adaptive(&mut q, &loads, &mut constraint, &options, 1e-3)
            .expect("the reduced press converges");
    }
    eprintln!(
        "reduced, 6 mm over the lump: {:.4} N, {} shapes, {} of {} elements active",
        -constraint[0].multiplier,
        model.shapes(),
        model.active_elements(),
        inputs.mesh.mesh.tets.len()
    );
    let mut g = c.benchmark_group("nonlinear_reduced");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    // The press moved 6 → 5.9 mm and solved in the basis; one Newton iteration's work.
    let move_press = |model: &ReducedStatics| {
        let mut moved = constraint.clone();
        moved[0].value = -0.0059;
        let mut q = q.clone();
        model
            .solve(&mut q, &loads, &mut moved, &options)
            .expect("the move converges")
    };
    let iteration = |model: &ReducedStatics, b: &mut criterion::Bencher| {
        let r = model.shapes();
        let (mut forces, mut tangent) = (vec![0.0; r], vec![0.0; r * r]);
        b.iter(|| model.reduced_forces_and_tangent(&q, &mut forces, &mut tangent))
    };
    g.bench_function("move_0.1mm_default_block", |b| {
        b.iter(|| move_press(&model))
    });
    g.bench_function("newton_iteration_default_block", |b| iteration(&model, b));
    g.bench_function("enrich_default_block", |b| {
        b.iter(|| {
            // An infinite tolerance estimates and refreshes the cut but adds no shape.
            model
                .enrich(&q, &loads, &constraint, f64::INFINITY)
                .expect("the state is valid")
        })
    });
    // A cubature trained on the press every 0.25 mm to 6 mm.
    let mut states = Vec::new();
    let mut at = q.clone();
    let mut c = constraint.clone();
    for i in 1..=24 {
        c[0].value = -0.00025 * i as f64;
        model
            .solve(&mut at, &loads, &mut c, &options)
            .expect("the press converges");
        states.push(at.clone());
    }
    let started = std::time::Instant::now();
    let cubature = train_cubature(&model, &states, 100, 1e-3);
    eprintln!(
        "cubature: {} of {} elements, training error {:.1e}, trained in {:.2} s",
        cubature.elements.len(),
        model.active().len(),
        cubature.training_error,
        started.elapsed().as_secs_f64()
    );
    model.set_cubature(&cubature);
    g.bench_function("move_0.1mm_cubature_default_block", |b| {
        b.iter(|| move_press(&model))
    });
    g.bench_function("newton_iteration_cubature_default_block", |b| {
        iteration(&model, b)
    });
    g.finish();
}

/// Steps of the `nonlinear` backend as the model thread runs them (`SceneModel::step`:
/// proxy, contact patch, reduced solve with its rows, corrections, surface bound), with
/// the scene's point probe, on two scenes: the default block made Veronda–Westmann
/// γ = 5 (its mesh and nodal pressure as shipped) and `scenes/breast.toml`. Single steps
/// are timed with the clock and their median, p99 and maximum printed (criterion
/// reports batch statistics only): a press to 4 mm at 1 cm/s beside the lump, the press
/// held, a slide at 5 cm/s across the lump and back at 1 cm/s. Correcting in step
/// (replays, `palpa indent`) once; as `palpa serve` runs it, the corrections and K⁻¹
/// columns on their own threads and the steps paced at the model rate (a step that
/// overruns starts the next at once), [`SERVED_RUNS`] times on fresh models, with the
/// median of the runs' percentiles: a p99 is a run's few slowest steps, and on a shared
/// 2-core VM one stall of the model thread's core moves it.
fn model_step(_: &mut Criterion) {
    let vw5 = include_str!("../scenes/default.toml")
        .replace(
            "density = 1000\n",
            "density = 1000\nmodel = \"veronda-westmann\"\nstiffening = 5\n",
        )
        .replace("kind = \"modal\"", "kind = \"nonlinear\"");
    let only = std::env::var("PALPA_BENCH_SCENE").ok();
    for (name, text) in [
        ("default block, Veronda–Westmann γ = 5", vw5),
        (
            "breast scene",
            include_str!("../scenes/breast.toml").to_string(),
        ),
    ] {
        if only.as_deref().is_some_and(|o| !name.starts_with(o)) {
            continue;
        }
        let scene = Scene::parse(&text, "bench.toml", std::path::Path::new(".")).expect("scene");
        steps_on(name, &scene);
    }
}

/// [`model_step`] on one scene.
fn steps_on(name: &str, scene: &Scene) {
    let cache = std::env::temp_dir().join("palpa-bench-nonlinear");
    let model = || {
        build(scene.clone(), &cache, &mut |_| {})
            .expect("builds")
            .model
    };
    let in_step = (std::env::var_os("PALPA_BENCH_IN_STEP").is_some())
        .then(|| script(&mut model(), &format!("{name}, corrections in step"), false));
    let served = format!("{name}, corrections and columns on their own threads, paced at 200 Hz");
    let runs: Vec<_> = (0..SERVED_RUNS)
        .map(|_| {
            let mut model = model();
            model
                .work_in_background()
                .expect("starts the worker threads");
            let out = script(&mut model, &served, true);
            if let SceneModel::Nonlinear(sim) = &model {
                println!("  {:?}", sim.model().health());
            }
            out
        })
        .collect();
    for (i, phase) in PHASES.iter().enumerate() {
        let median = |k: usize| {
            let mut v: Vec<f64> = runs.iter().map(|(_, t)| t[i][k]).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        println!(
            "nonlinear model step, {served}, {phase}: median of {SERVED_RUNS} runs: p50 {:.2} \
             ms, p99 {:.2} ms, max {:.2} ms; the model thread's CPU time p50 {:.2} ms, p99 \
             {:.2} ms, max {:.2} ms",
            median(0),
            median(1),
            median(2),
            median(3),
            median(4),
            median(5)
        );
    }
    // What the basis lagging behind the contact costs: the largest difference between
    // the forces in step and served (the first run) in each phase, against that
    // phase's largest force.
    let Some((in_step, _)) = in_step else {
        return;
    };
    for (phase, (in_step, beside)) in PHASES.iter().zip(in_step.iter().zip(&runs[0].0)) {
        let peak = in_step.iter().copied().fold(0.0, f64::max);
        let worst = in_step
            .iter()
            .zip(beside)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        println!(
            "nonlinear model step, {name}, {phase}: the force served differs from in step by \
             at most {worst:.4} N ({:.2} % of the phase's peak {peak:.3} N)",
            100.0 * worst / peak
        );
    }
}

/// Runs of [`model_step`]'s script as `palpa serve` steps it.
const SERVED_RUNS: usize = 3;

/// [`model_step`]'s phases, in order.
const PHASES: [&str; 4] = [
    "pressing 0 → 4 mm at 1 cm/s",
    "held at 4 mm",
    "sliding 5 cm/s at 4 mm",
    "sliding back 1 cm/s at 4 mm",
];

/// [`model_step`]'s press, hold and slides on `model`, each step started at the model
/// rate if `paced`; returns each phase's forces along z (N) and its step times' median,
/// p99 and maximum (ms), wall clock then the stepping thread's CPU time (what the step
/// costs a core: on a shared machine the wall clock adds the time it waited for one).
fn script(model: &mut SceneModel, how: &str, paced: bool) -> ([Vec<f64>; 4], [[f64; 6]; 4]) {
    let dt = 0.005;
    let mut t = 0.0;
    let mut next = Instant::now();
    let mut step = |model: &mut SceneModel, probe: Vec3| {
        if paced {
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
        }
        t += dt;
        let started = Instant::now();
        let cpu = thread_cpu_ms();
        let force = model.step(t, dt, probe).f0.z;
        let cpu = thread_cpu_ms() - cpu;
        next = started + Duration::from_secs_f64(dt);
        ((started.elapsed().as_secs_f64() * 1e3, cpu), force)
    };
    // Onto the surface beside the lump, down to 4 mm, held, slid across the lump to
    // the other side and back.
    let (x0, x1) = (-0.03, 0.03);
    step(model, Vec3::new(x0, 0.0, 0.002));
    let mut phase = |model: &mut SceneModel, what: &str, probes: Vec<Vec3>| {
        let (times, forces): (Vec<(f64, f64)>, Vec<f64>) =
            probes.into_iter().map(|p| step(model, p)).unzip();
        let percentiles = |mut ms: Vec<f64>| {
            ms.sort_by(f64::total_cmp);
            let q = |p: f64| ms[((p * ms.len() as f64) as usize).min(ms.len() - 1)];
            [q(0.5), q(0.99), ms[ms.len() - 1]]
        };
        let wall = percentiles(times.iter().map(|t| t.0).collect());
        let cpu = percentiles(times.iter().map(|t| t.1).collect());
        let times = [wall[0], wall[1], wall[2], cpu[0], cpu[1], cpu[2]];
        println!(
            "nonlinear model step, {how}, {what} ({} steps, last force {:.3} N): p50 \
             {:.2} ms, p99 {:.2} ms, max {:.2} ms; CPU p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            forces.len(),
            forces[forces.len() - 1],
            times[0],
            times[1],
            times[2],
            times[3],
            times[4],
            times[5]
        );
        (forces, times)
    };
    let depth = |i: usize| Vec3::new(x0, 0.0, -5e-5 * i as f64);
    let pressing = phase(model, PHASES[0], (1..=80).map(depth).collect());
    let held = phase(model, PHASES[1], vec![depth(80); 200]);
    let across = |i: usize, steps: usize, from: f64, to: f64| {
        Vec3::new(from + (to - from) * i as f64 / steps as f64, 0.0, -0.004)
    };
    let fast = phase(
        model,
        PHASES[2],
        (1..=240).map(|i| across(i, 240, x0, x1)).collect(),
    );
    let slow = phase(
        model,
        PHASES[3],
        (1..=600).map(|i| across(i, 600, x1, x0)).collect(),
    );
    (
        [pressing.0, held.0, fast.0, slow.0],
        [pressing.1, held.1, fast.1, slow.1],
    )
}

/// The calling thread's CPU time (ms).
fn thread_cpu_ms() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to write.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 * 1e3 + t.tv_nsec as f64 * 1e-6
}

criterion_group!(benches, nonlinear, reduced, model_step);
criterion_main!(benches);
