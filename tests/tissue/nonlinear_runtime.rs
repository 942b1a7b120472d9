//! The `nonlinear` backend as the model thread runs it (`SceneModel::step`: proxy,
//! contact patch, reduced large-strain solve with its active set and corrections)
//! against independent references: the full nonlinear FEM (`indent --full`) where a
//! slide ends, the finite-difference slope of its own force for the stiffness it
//! publishes, rest after lift-off; and its scene keys' errors.

use std::path::Path;

use palpa::app::indent::{indent, IndentOptions};
use palpa::app::scene::build;
use palpa::pipeline::SceneModel;
use palpa::scene::Scene;
use palpa::tissue::{LocalForceModel, ModelStep, PointConstraint, TissueModel};
use palpa::Vec3;

const DT: f64 = 0.005;

/// The coarse block (1 cm cells) made Veronda–Westmann γ = 5, run by the nonlinear
/// backend.
fn scene() -> Scene {
    scene_with("")
}

/// [`scene`] with `[backend.nonlinear]` keys `keys`.
fn scene_with(keys: &str) -> Scene {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/scenes/coarse_block.toml"),
    )
    .unwrap();
    let law = "model = \"veronda-westmann\"\nstiffening = 5";
    let text = text
        .replace("young = 30e3", &format!("young = 30e3\n{law}"))
        .replace("young = 240e3", &format!("young = 240e3\n{law}"));
    Scene::parse(
        &format!("{text}\n[backend]\nkind = \"nonlinear\"\n[backend.nonlinear]\n{keys}\n"),
        "test.toml",
        Path::new("."),
    )
    .unwrap()
}

fn model() -> SceneModel {
    model_with("")
}

/// The model of [`scene_with`] `keys`.
fn model_with(keys: &str) -> SceneModel {
    let cache = tempfile::tempdir().unwrap();
    build(scene_with(keys), cache.path(), &mut |_| {})
        .unwrap()
        .model
}

fn tissue(model: &mut SceneModel) -> &mut palpa::nonlinear::NonlinearTissue {
    let SceneModel::Nonlinear(sim) = model else {
        panic!("the scene asked for the nonlinear backend")
    };
    sim.model_mut()
}

/// Steps `model` through `probes` (m), one model step each, from scene time `t`.
fn run(model: &mut SceneModel, t: &mut f64, probes: &[Vec3]) -> Vec<LocalForceModel> {
    probes
        .iter()
        .map(|&p| {
            *t += DT;
            model.step(*t, DT, p)
        })
        .collect()
}

/// Brings the probe down over the lump and presses it 5 mm in 20 steps; checks it
/// pushes.
fn press_5mm(model: &mut SceneModel, t: &mut f64) {
    run(model, t, &[Vec3::new(0.0, 0.0, 0.002)]);
    let pressed = run(
        model,
        t,
        &line(Vec3::zeros(), Vec3::new(0.0, 0.0, -0.005), 20),
    );
    assert!(pressed[19].f0.z > 1.0, "{:?}", pressed[19]);
}

fn line(from: Vec3, to: Vec3, steps: usize) -> Vec<Vec3> {
    (1..=steps)
        .map(|i| from + (to - from) * (i as f64 / steps as f64))
        .collect()
}

/// Pressed 4 mm over the lump and slid 1.5 cm at 1.5 cm/s: the force changes smoothly
/// from step to step, the basis stays K-orthonormal through its restarts, and held at
/// the end the force is the full FEM's pressed there.
#[test]
fn a_slide_is_smooth_and_ends_on_the_full_fems_force() {
    let mut model = model();
    let mut t = 0.0;
    let (start, end) = (Vec3::new(0.0, 0.0, -0.004), Vec3::new(0.015, 0.0, -0.004));
    run(&mut model, &mut t, &[Vec3::new(0.0, 0.0, 0.002)]);
    run(&mut model, &mut t, &line(Vec3::zeros(), start, 40));
    let slide = run(&mut model, &mut t, &line(start, end, 200));
    let held = run(&mut model, &mut t, &[end; 20]);
    let forces: Vec<f64> = slide.iter().chain(&held).map(|m| m.f0.z).collect();
    let peak = forces.iter().copied().fold(0.0, f64::max);
    let jump = forces
        .windows(2)
        .map(|w| (w[1] - w[0]).abs())
        .fold(0.0, f64::max);
    let SceneModel::Nonlinear(sim) = &model else {
        panic!("the scene asked for the nonlinear backend")
    };
    let reduced = sim.model().reduced();
    eprintln!(
        "slide: peak {peak:.4} N, largest step-to-step change {jump:.4} N, end {:.4} N, \
         {} shapes, orthonormality error {:.1e}",
        forces[forces.len() - 1],
        reduced.shapes(),
        reduced.orthonormality_error()
    );
    assert!(jump <= 0.05 * peak, "jump {jump} N against peak {peak} N");
    assert!(reduced.orthonormality_error() < 1e-9);
    // The same press, held there, by the full FEM (the probe comes down at the end).
    let cache = tempfile::tempdir().unwrap();
    let built = build(scene(), cache.path(), &mut |_| {}).unwrap();
    let options = IndentOptions {
        at: [end.x, end.y],
        depths: vec![0.004],
        full: true,
    };
    let full = indent(built, &options, &mut |_, _| {}).unwrap();
    let at_end = forces[forces.len() - 1];
    eprintln!("full FEM at the end: {:.4} N", full.force_n[0]);
    assert!(
        (at_end / full.force_n[0] - 1.0).abs() < 0.01,
        "slid there {at_end} N, pressed there {} N",
        full.force_n[0]
    );
}

/// The stiffness the haptic thread extrapolates with is the tangent of the force: at
/// 4 mm over the lump its normal part matches the central difference of the force held
/// at 3.9 and 4.1 mm (the stiffening law makes it 1.3× the secant there).
#[test]
fn the_published_stiffness_is_the_forces_tangent() {
    // Quasi-static: each held depth is its equilibrium at once.
    let mut model = model_with("modes = 0");
    let mut t = 0.0;
    let depth = |d: f64| Vec3::new(0.0, 0.0, -d);
    run(&mut model, &mut t, &[Vec3::new(0.0, 0.0, 0.002)]);
    let settle = |model: &mut SceneModel, t: &mut f64, d: f64| {
        let last = run(model, t, &line(depth(d - 1e-4), depth(d), 1));
        let held = run(model, t, &[depth(d); 3]);
        (last[0], held[2])
    };
    run(&mut model, &mut t, &line(Vec3::zeros(), depth(0.0039), 40));
    let (_, below) = settle(&mut model, &mut t, 0.0039);
    let (_, at) = settle(&mut model, &mut t, 0.004);
    let (_, above) = settle(&mut model, &mut t, 0.0041);
    let slope = (above.f0.z - below.f0.z) / 2e-4;
    let k = -at.stiffness[(2, 2)];
    let secant = at.f0.z / 0.004;
    eprintln!("at 4 mm: {:.4} N, k_zz {k:.1} N/m, central difference {slope:.1} N/m, secant {secant:.1} N/m", at.f0.z);
    assert!(
        (k / slope - 1.0).abs() < 0.02,
        "k {k} N/m, slope {slope} N/m"
    );
    assert!(k > 1.2 * secant, "k {k} N/m, secant {secant} N/m");
}

/// With its corrections on their own thread (what `palpa serve` does), the model steps
/// in the basis it has while a correction is computed beside it, and pressed 4 mm over
/// the lump and held still it settles on the force of a model correcting in step, and
/// on its stiffness: the tangent the thread took at the settled state.
#[test]
fn corrected_on_their_own_thread_a_held_press_settles_on_the_in_step_force() {
    let mut in_step = model_with("modes = 0");
    let mut beside = model_with("modes = 0");
    beside.work_in_background().unwrap();
    let path: Vec<Vec3> = std::iter::once(Vec3::new(0.0, 0.0, 0.002))
        .chain(line(Vec3::zeros(), Vec3::new(0.0, 0.0, -0.004), 40))
        .collect();
    let (mut t, mut u) = (0.0, 0.0);
    run(&mut in_step, &mut t, &path);
    let reference = run(&mut in_step, &mut t, &[path[40]; 4])[3];
    run(&mut beside, &mut u, &path);
    let pressed = tissue(&mut beside).shapes();
    // Held, each step joins what the thread finished and hands it the next state.
    let started = std::time::Instant::now();
    let mut forces = Vec::new();
    while !tissue(&mut beside).settled() && started.elapsed().as_secs_f64() < 20.0 {
        forces.push(run(&mut beside, &mut u, &[path[40]])[0].f0.z);
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    assert!(tissue(&mut beside).settled(), "not settled in 20 s");
    let settled = run(&mut beside, &mut u, &[path[40]])[0];
    let (held, k) = (settled.f0.z, -settled.stiffness[(2, 2)]);
    let (reference, k_reference) = (reference.f0.z, -reference.stiffness[(2, 2)]);
    let estimate = tissue(&mut beside).estimate().expect("a correction joined");
    let reduced = tissue(&mut beside).reduced();
    let (summed, active) = (reduced.quadrature_elements(), reduced.active_elements());
    eprintln!(
        "held at 4 mm: {held:.5} N, k_zz {k:.2} N/m after {} held steps ({} → {} shapes, \
         estimate {:.1e}, forces summed over {summed} of {active} active elements); \
         corrected in step {reference:.5} N, k_zz {k_reference:.2} N/m",
        forces.len(),
        pressed,
        tissue(&mut beside).shapes(),
        estimate.basis
    );
    // The steps summed the forces over the thread's cubature, offset to the full sum
    // at the state it corrected.
    assert!(summed < active / 4, "{summed} of {active}");
    assert!(estimate.basis <= 1e-3, "{estimate:?}");
    assert!(
        (held / reference - 1.0).abs() < 1e-3,
        "held {held} N, in step {reference} N"
    );
    // The two models' bases differ (each within the 1e-3 estimate), and the stiffness
    // with them: 4,633.6 against 4,625.6 N/m with the beside model's tangent taken in
    // step, 4,635.6 N/m with the thread's.
    assert!(
        (k / k_reference - 1.0).abs() < 5e-3,
        "held k_zz {k} N/m, in step {k_reference} N/m"
    );
}

/// Lifted off, the quasi-static tissue (no modes) is back at rest: no force, no
/// displacement.
#[test]
fn lifted_off_the_tissue_returns_to_rest() {
    let mut model = model_with("modes = 0");
    let mut t = 0.0;
    press_5mm(&mut model, &mut t);
    let lifted = run(&mut model, &mut t, &[Vec3::new(0.0, 0.0, 0.003); 2]);
    assert!(!lifted[1].in_contact && lifted[1].f0 == Vec3::zeros());
    let SceneModel::Nonlinear(sim) = &mut model else {
        panic!("nonlinear backend")
    };
    let tissue = sim.model_mut();
    assert!(
        tissue.displacement_bound() < 1e-12,
        "{}",
        tissue.displacement_bound()
    );
}

/// Velocity constraints (dynamics) are refused by name; bad scene keys are named.
#[test]
fn bad_input_is_named() {
    let mut model = model();
    let SceneModel::Nonlinear(sim) = &mut model else {
        panic!("nonlinear backend")
    };
    let tissue = sim.model_mut();
    let node = tissue.surface_nodes()[0];
    let mut c = PointConstraint::hold_on(palpa::fem::Support::node(node), Vec3::zeros());
    c.kind = palpa::tissue::ConstraintKind::Velocity;
    let err = tissue
        .advance(DT, &[c], &mut [Vec3::zeros()])
        .unwrap_err()
        .to_string();
    assert!(err.contains("position constraints only"), "{err}");
    for (key, value) in [
        ("shapes", "2"),
        ("tolerance", "0"),
        ("corrections_per_step", "0"),
        ("modes", "61"),
        ("alpha1", "-1"),
        ("alpha2", "nan"),
    ] {
        let text =
            format!("[backend]\nkind = \"nonlinear\"\n[backend.nonlinear]\n{key} = {value}\n");
        let err = Scene::parse(&text, "bad.toml", Path::new("."))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("backend.nonlinear.{key}")),
            "{key}: {err}"
        );
    }
}

/// Where the probe is lifted to, well off the tissue (m).
const UP: Vec3 = Vec3::new(0.0, 0.0, 0.01);

/// The coarse block with `[backend.nonlinear]` keys `keys`, pressed 5 mm over the lump
/// and lifted off for 20 steps (the corrections settle in the first ones); its scene
/// time (s) and its energy while pressed (J).
fn pressed_and_lifted(keys: &str) -> (SceneModel, f64, f64) {
    let mut model = model_with(keys);
    let mut t = 0.0;
    press_5mm(&mut model, &mut t);
    let pressed = tissue(&mut model).energy();
    run(&mut model, &mut t, &[UP; 20]);
    (model, t, pressed)
}

/// Pressed 5 mm over the lump and released without damping, the tissue swings on its
/// modes (the static shapes follow in equilibrium) and keeps its energy, kinetic plus
/// potential, to 1e-6 over 10⁴ model steps (50 s of tissue time).
#[test]
fn released_without_damping_the_tissue_keeps_its_energy() {
    let (mut model, mut t, pressed_energy) =
        pressed_and_lifted("modes = 6\nalpha1 = 0\nalpha2 = 0");
    let start = tissue(&mut model).energy();
    let shapes = tissue(&mut model).shapes();
    let (mut worst, mut most_kinetic) = (0.0f64, 0.0f64);
    for _ in 0..10_000 {
        t += DT;
        let m = model.step(t, DT, UP);
        assert!(!m.in_contact);
        let tissue = tissue(&mut model);
        worst = worst.max((tissue.energy() / start - 1.0).abs());
        most_kinetic = most_kinetic.max(1.0 - tissue.potential_energy() / tissue.energy());
    }
    eprintln!(
        "pressed: {pressed_energy:.4e} J; released: {start:.4e} J, {} modes, {shapes} shapes; \
         over 10⁴ steps the energy stays within {worst:.1e} of it, at most {:.1} % kinetic",
        tissue(&mut model).dynamic_coordinates(),
        100.0 * most_kinetic
    );
    assert_eq!(tissue(&mut model).shapes(), shapes, "the basis changed");
    assert!(worst <= 1e-6, "energy drifted by {worst:e}");
    assert!(
        most_kinetic > 0.1,
        "the tissue hardly moved: {most_kinetic}"
    );
}

/// With the scene's damping, the released tissue's energy never grows and decays.
#[test]
fn released_with_damping_the_tissue_loses_energy() {
    let (mut model, mut t, _) = pressed_and_lifted("modes = 6");
    let mut last = tissue(&mut model).energy();
    let start = last;
    for _ in 0..400 {
        run(&mut model, &mut t, &[UP]);
        let e = tissue(&mut model).energy();
        assert!(
            e <= last * (1.0 + 1e-9),
            "energy grew from {last:e} to {e:e} J"
        );
        last = e;
    }
    eprintln!("damped: {start:.4e} J → {last:.4e} J after 2 s");
    assert!(last < 0.5 * start, "{start:e} → {last:e} J");
}
