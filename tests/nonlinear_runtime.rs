//! The `nonlinear` backend as the model thread runs it (`SceneModel::step`: proxy,
//! contact patch, reduced large-strain solve with its active set and corrections)
//! against independent references: the full nonlinear FEM (`indent --full`) where a
//! slide ends, the finite-difference slope of its own force for the stiffness it
//! publishes, rest after lift-off; and its scene keys' errors.

use std::path::Path;

use palpa::cli::indent::indent;
use palpa::model::{LocalForceModel, ModelStep, PointConstraint, TissueModel};
use palpa::scene::{build, Scene};
use palpa::session::SceneModel;
use palpa::Vec3;

const DT: f64 = 0.005;

/// The coarse block (1 cm cells) made Veronda–Westmann γ = 5, run by the nonlinear
/// backend.
fn scene() -> Scene {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/scenes/coarse_block.toml"),
    )
    .unwrap();
    let law = "model = \"veronda-westmann\"\nstiffening = 5";
    let text = text
        .replace("young = 30e3", &format!("young = 30e3\n{law}"))
        .replace("young = 240e3", &format!("young = 240e3\n{law}"));
    Scene::parse(
        &format!("{text}\n[backend]\nkind = \"nonlinear\"\n"),
        "test.toml",
        Path::new("."),
    )
    .unwrap()
}

fn model() -> SceneModel {
    let cache = tempfile::tempdir().unwrap();
    build(scene(), cache.path(), &mut |_| {}).unwrap().model
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
    let full = indent(built, [end.x, end.y], &[0.004], true, &mut |_, _| {}).unwrap();
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
    let mut model = model();
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

/// Lifted off, the quasi-static tissue is back at rest: no force, no displacement.
#[test]
fn lifted_off_the_tissue_returns_to_rest() {
    let mut model = model();
    let mut t = 0.0;
    run(&mut model, &mut t, &[Vec3::new(0.0, 0.0, 0.002)]);
    let pressed = run(
        &mut model,
        &mut t,
        &line(Vec3::zeros(), Vec3::new(0.0, 0.0, -0.005), 20),
    );
    assert!(pressed[19].f0.z > 1.0, "{:?}", pressed[19]);
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
    c.kind = palpa::model::ConstraintKind::Velocity;
    let err = tissue
        .advance(DT, &[c], &mut [Vec3::zeros()])
        .unwrap_err()
        .to_string();
    assert!(err.contains("position constraints only"), "{err}");
    for (key, value) in [
        ("shapes", "2"),
        ("tolerance", "0"),
        ("corrections_per_step", "0"),
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
