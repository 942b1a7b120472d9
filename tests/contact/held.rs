//! A sphere probe held still on the shipped default scene is a fixed point: its contact
//! converges within a few model steps and its force then stays constant to round-off
//! (it was a 100 Hz square wave, 26–48 % peak-to-peak over the lump), whatever the
//! backend, radius, depth, place and friction, and whatever path brought it there. And
//! sliding, its force changes smoothly.

use palpa::app::scene::build;
use palpa::contact::Friction;
use palpa::pipeline::SceneModel;
use palpa::scene::{BackendKind, Scene};
use palpa::tissue::ModelStep;
use palpa::Vec3;

const DT: f64 = 5e-3;

fn model(backend: BackendKind) -> SceneModel {
    let mut scene = Scene::embedded_default();
    scene.backend.kind = backend;
    scene.contact.probe_radius = 5e-3;
    // Columns as the contact needs them, not the whole surface's at start (the same
    // columns; the start-up precompute took most of this file's time).
    scene.backend.condensed.precompute_cap = 0;
    build(scene, &crate::cache_dir(), &mut |_| {})
        .unwrap()
        .model
}

/// The sphere's centre with its lowest point `depth` (m) under the top face at (x, y).
fn at(x: f64, y: f64, radius: f64, depth: f64) -> Vec3 {
    Vec3::new(x, y, radius - depth)
}

/// Steps the probe through `path` (one position per model step); the forces (N).
fn run(m: &mut SceneModel, t: &mut f64, path: impl Iterator<Item = Vec3>) -> Vec<Vec3> {
    path.map(|p| {
        *t += DT;
        m.step(*t, DT, p).f0
    })
    .collect()
}

fn ramp(from: Vec3, to: Vec3, steps: usize) -> impl Iterator<Item = Vec3> {
    (1..=steps).map(move |k| from + (to - from) * (k as f64 / steps as f64))
}

/// Steps the probe held at `p` until its contact has settled (`SETTLE` steps), then
/// `MEASURE` more: the mean normal force (N), its range (N) and the largest change of
/// the tangential force between model steps (N) over those. (examples/sphere_study
/// measures 1 s held on the whole matrix of the issue.)
fn hold(m: &mut SceneModel, t: &mut f64, p: Vec3) -> (f64, f64, f64) {
    let f = run(m, t, std::iter::repeat_n(p, SETTLE + MEASURE));
    let last = &f[SETTLE..];
    let (lo, hi) = last
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), f| {
            (lo.min(f.z), hi.max(f.z))
        });
    let mean = last.iter().map(|f| f.z).sum::<f64>() / last.len() as f64;
    let step = last
        .windows(2)
        .map(|w| (w[1].xy() - w[0].xy()).norm())
        .fold(0.0, f64::max);
    (mean, hi - lo, step)
}

/// Model steps a held probe is given to settle, and then measured over.
const SETTLE: usize = 20;
const MEASURE: usize = 40;

/// Presses from 2 mm above to `depth` in `steps` model steps (from `via` deeper first,
/// when given) and holds.
#[allow(clippy::too_many_arguments)]
fn press_and_hold(
    m: &mut SceneModel,
    t: &mut f64,
    (x, y): (f64, f64),
    radius: f64,
    depth: f64,
    steps: usize,
    via: Option<f64>,
) -> (f64, f64, f64) {
    m.reset();
    let above = at(x, y, radius, -2e-3);
    let target = at(x, y, radius, depth);
    run(m, t, std::iter::once(above));
    match via {
        Some(deeper) => {
            let deep = at(x, y, radius, deeper);
            run(m, t, ramp(above, deep, steps));
            run(m, t, ramp(deep, target, steps / 2));
        }
        None => {
            run(m, t, ramp(above, target, steps));
        }
    }
    hold(m, t, target)
}

const BESIDE: (f64, f64) = (0.035, 0.0);
const OVER: (f64, f64) = (0.0, 0.0);

/// A sample of the matrix (R, place, depth, friction) that meets every branch
/// of the contact: a 3 mm sphere deeper than its radius beside and over the lump, a
/// 5 mm one shallow and at 2 mm, with and without friction.
const HELD: [(f64, (f64, f64), f64, f64); 4] = [
    (3e-3, BESIDE, 6e-3, 0.3),
    (3e-3, OVER, 4e-3, 0.0),
    (5e-3, OVER, 2e-3, 0.3),
    (5e-3, BESIDE, 1e-3, 0.0),
];

fn a_held_sphere_is_a_fixed_point(backend: BackendKind) {
    let mut m = model(backend);
    let mut t = 0.0;
    println!("{backend:?}: R mm, friction, place, depth mm: held N, p-p / mean, tangential step N; slow press, from 1 mm deeper (change of the held force)");
    for (radius, place, depth, mu) in HELD {
        m.set_probe(radius, Friction::new(mu, mu).unwrap());
        // The press `palpa indent` makes: 0.2 s down, then held.
        let (mean, range, step) = press_and_hold(&mut m, &mut t, place, radius, depth, 40, None);
        let mut line = format!(
            "{} {mu} {place:?} {}: {mean:.5} N, {:.1e}, {step:.1e} N",
            radius * 1e3,
            depth * 1e3,
            range / mean
        );
        assert!(mean > 0.0, "{line}");
        assert!(range <= 1e-3 * mean, "{line}");
        assert!(step <= 5e-3, "{line}");
        // The same place reached from 1 mm deeper, and at 2 mm slowly (1 mm/s).
        let (b, _, _) =
            press_and_hold(&mut m, &mut t, place, radius, depth, 40, Some(depth + 1e-3));
        line += &format!("; from deeper {:+.2e}", b / mean - 1.0);
        assert!((b / mean - 1.0).abs() <= 5e-3, "{line}");
        if depth == 2e-3 {
            let slow = ((depth + 2e-3) / 1e-3 / DT).round() as usize;
            let (s, _, _) = press_and_hold(&mut m, &mut t, place, radius, depth, slow, None);
            line += &format!(", slowly {:+.2e}", s / mean - 1.0);
            assert!((s / mean - 1.0).abs() <= 5e-3, "{line}");
        }
        println!("{line}");
    }
}

#[test]
fn a_held_sphere_is_a_fixed_point_on_the_modal_backend() {
    a_held_sphere_is_a_fixed_point(BackendKind::Modal);
}

#[test]
fn a_held_sphere_is_a_fixed_point_on_the_condensed_backend() {
    a_held_sphere_is_a_fixed_point(BackendKind::Condensed);
}

/// Presses in steps to 1, 2, 4 and 6 mm (20 model steps down, 20 held at each) and
/// returns the settled force at each (N).
fn staircase(m: &mut SceneModel, t: &mut f64, (x, y): (f64, f64), radius: f64) -> Vec<f64> {
    m.reset();
    let mut from = at(x, y, radius, -2e-3);
    run(m, t, std::iter::once(from));
    [1e-3, 2e-3, 4e-3, 6e-3]
        .iter()
        .map(|&d| {
            let to = at(x, y, radius, d);
            run(m, t, ramp(from, to, 20));
            from = to;
            run(m, t, std::iter::repeat_n(to, 20)).last().unwrap().z
        })
        .collect()
}

/// A sphere pressed deeper pushes back harder, also deeper than its radius: a 3 mm
/// sphere on the default mesh's 3.33 mm cells once got weaker from 2 to 6 mm (0.26 to
/// 0.16 N beside the lump) as its rows let the faces between its nodes slide past it.
fn the_force_grows_with_depth(backend: BackendKind) {
    let mut m = model(backend);
    let mut t = 0.0;
    for radius in [3e-3, 5e-3] {
        m.set_probe(radius, Friction::NONE);
        for place in [BESIDE, OVER] {
            let f = staircase(&mut m, &mut t, place, radius);
            println!(
                "{backend:?} R {} mm at {place:?}: {:.4} / {:.4} / {:.4} / {:.4} N at 1/2/4/6 mm",
                radius * 1e3,
                f[0],
                f[1],
                f[2],
                f[3]
            );
            // At least as much again per extra millimetre as a tenth of the mean
            // stiffness so far: a plateau would not pass either.
            for (k, (w, d)) in f.windows(2).zip([1e-3, 2e-3, 2e-3]).enumerate() {
                assert!(
                    w[1] - w[0] > 0.1 * w[0] / [1e-3, 2e-3, 4e-3][k] * d,
                    "{backend:?} R {radius} {place:?}: {f:?}"
                );
            }
        }
    }
}

#[test]
fn the_force_grows_with_depth_on_the_modal_backend() {
    the_force_grows_with_depth(BackendKind::Modal);
}

#[test]
fn the_force_grows_with_depth_on_the_condensed_backend() {
    the_force_grows_with_depth(BackendKind::Condensed);
}

/// Slides a 5 mm sphere 2 mm deep at 1 cm/s for 1 cm beside the lump (along y at
/// x = 35 mm, where the block is the same on both sides); the normal force's range over
/// the slide, its range after the first millimetre (friction's stick turning to slip),
/// and its largest change between model steps, as fractions of its mean.
fn slide(backend: BackendKind, mu: f64) -> (f64, f64, f64) {
    let mut m = model(backend);
    m.set_probe(5e-3, Friction::new(mu, mu).unwrap());
    let mut t = 0.0;
    let (x, r, d) = (0.035, 5e-3, 2e-3);
    let start = at(x, -0.01, r, d);
    run(&mut m, &mut t, std::iter::once(at(x, -0.01, r, -2e-3)));
    run(&mut m, &mut t, ramp(at(x, -0.01, r, -2e-3), start, 40));
    run(&mut m, &mut t, std::iter::repeat_n(start, 20));
    let f = run(&mut m, &mut t, ramp(start, at(x, 0.0, r, d), 200));
    let fz: Vec<f64> = f.iter().map(|f| f.z).collect();
    let mean = fz.iter().sum::<f64>() / fz.len() as f64;
    let range = |f: &[f64]| {
        let (lo, hi) = f
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &f| {
                (lo.min(f), hi.max(f))
            });
        (hi - lo) / mean
    };
    let step = fz
        .windows(2)
        .map(|w| (w[1] - w[0]).abs())
        .fold(0.0, f64::max);
    if std::env::var_os("PALPA_SLIDE_TRACE").is_some() {
        let tangential: Vec<f64> = f.iter().map(|f| f.xy().norm()).collect();
        println!("{backend:?} {mu}: fz {fz:.5?}\nft {tangential:.5?}");
    }
    (range(&fz), range(&fz[20..]), step / mean)
}

#[test]
fn a_sliding_sphere_changes_its_force_smoothly() {
    for backend in [BackendKind::Modal, BackendKind::Condensed] {
        for mu in [0.0, 0.3] {
            let (ripple, sliding, step) = slide(backend, mu);
            println!(
                "{backend:?}, friction {mu}: normal force over the slide {:.2} % peak-to-peak \
                 of its mean ({:.2} % after the first millimetre), largest change between \
                 model steps {:.2} %",
                100.0 * ripple,
                100.0 * sliding,
                100.0 * step
            );
            // No step above 5 % of the force while the probe moves 0.05 mm per step.
            assert!(step <= 0.05, "{step}");
            // The target is 2 %; node rows gave 27 % (the force followed which
            // nodes lay under a contact as wide as a cell), the sampled Hertz row about
            // 2 %, friction's start of slip a little more (docs/fem-accuracy.md;
            // PALPA_SLIDE_TRACE=1 prints the forces).
            assert!(ripple <= 0.025, "{backend:?} {mu}: {ripple}");
        }
    }
}
