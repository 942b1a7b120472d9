//! The sphere probe on the shipped default scene, measured the way a hand uses it:
//! held still (the force's range over 1 s, the tangential force's steps, whether the
//! held force depends on how the probe got there) and slid at 1 cm/s (the normal
//! force's ripple and its largest step between model steps), on both linear backends,
//! R = 3 and 5 mm, beside (35, 0) mm and over (0, 0) the lump, with and without
//! friction 0.3. Prints the tables of docs/fem-accuracy.md ("A held sphere").
//!
//! `cargo run --release --example sphere_study [-- quick]` (quick: R 5 mm, 2 mm only).

use palpa::app::scene::build;
use palpa::pipeline::SceneModel;
use palpa::scene::{BackendKind, Scene};
use palpa::tissue::ModelStep;
use palpa::Vec3;

const DT: f64 = 5e-3;

fn model(backend: BackendKind, radius: f64, friction: f64) -> SceneModel {
    let mut scene = Scene::embedded_default();
    scene.backend.kind = backend;
    scene.contact.probe_radius = radius;
    scene.contact.friction = friction;
    let cache = std::env::temp_dir().join("palpa-sphere-study");
    build(scene, &cache, &mut |_| {}).unwrap().model
}

/// The sphere's centre with its lowest point `depth` (m) under the top face at (x, y).
fn at(x: f64, y: f64, radius: f64, depth: f64) -> Vec3 {
    Vec3::new(x, y, radius - depth)
}

/// Steps the probe along `path` (one position per model step); returns the forces.
fn run(m: &mut SceneModel, t: &mut f64, path: impl Iterator<Item = Vec3>) -> Vec<Vec3> {
    path.map(|p| {
        *t += DT;
        m.step(*t, DT, p).f0
    })
    .collect()
}

/// From `from` to `to` in `steps` model steps.
fn ramp(from: Vec3, to: Vec3, steps: usize) -> impl Iterator<Item = Vec3> {
    (1..=steps).map(move |k| from + (to - from) * (k as f64 / steps as f64))
}

struct Held {
    mean: f64,
    p2p: f64,
    tangential_step: f64,
}

/// Holds at `p` for 1.5 s and measures the last 1 s.
fn hold(m: &mut SceneModel, t: &mut f64, p: Vec3) -> Held {
    let f = run(m, t, std::iter::repeat_n(p, 300));
    let last = &f[100..];
    let (lo, hi) = last
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), f| {
            (lo.min(f.z), hi.max(f.z))
        });
    let mean = last.iter().map(|f| f.z).sum::<f64>() / last.len() as f64;
    let tangential_step = last
        .windows(2)
        .map(|w| (w[1].xy() - w[0].xy()).norm())
        .fold(0.0, f64::max);
    Held {
        mean,
        p2p: hi - lo,
        tangential_step,
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let radii: &[f64] = if quick { &[5e-3] } else { &[3e-3, 5e-3] };
    let depths: &[f64] = if quick {
        &[2e-3]
    } else {
        &[1e-3, 2e-3, 4e-3, 6e-3]
    };
    let places = [("beside", 0.035, 0.0), ("over", 0.0, 0.0)];
    println!(
        "backend | R mm | friction | place | depth mm | held N | p-p % | tangential step N | \
         slow press % | from deeper %"
    );
    for backend in [BackendKind::Modal, BackendKind::Condensed] {
        for &radius in radii {
            for friction in [0.0, 0.3] {
                let mut m = model(backend, radius, friction);
                let mut t = 0.0;
                for (name, x, y) in places {
                    for &d in depths {
                        let above = at(x, y, radius, -2e-3);
                        let target = at(x, y, radius, d);
                        // The press `palpa indent` makes: 0.2 s down, then held.
                        m.reset();
                        run(&mut m, &mut t, std::iter::once(above));
                        run(&mut m, &mut t, ramp(above, target, 40));
                        let h = hold(&mut m, &mut t, target);
                        // A slow press at 1 mm/s.
                        m.reset();
                        run(&mut m, &mut t, std::iter::once(above));
                        let slow = ((d + 2e-3) / 1e-3 / DT).round() as usize;
                        run(&mut m, &mut t, ramp(above, target, slow));
                        let s = hold(&mut m, &mut t, target);
                        // From 1 mm deeper, back up.
                        m.reset();
                        run(&mut m, &mut t, std::iter::once(above));
                        let deeper = at(x, y, radius, d + 1e-3);
                        run(&mut m, &mut t, ramp(above, deeper, 40));
                        run(&mut m, &mut t, ramp(deeper, target, 20));
                        let b = hold(&mut m, &mut t, target);
                        println!(
                            "{backend:?} | {} | {friction} | {name} | {} | {:.4} | {:.2e} | \
                             {:.1e} | {:+.3} | {:+.3}",
                            radius * 1e3,
                            d * 1e3,
                            h.mean,
                            100.0 * h.p2p / h.mean.abs(),
                            h.tangential_step
                                .max(s.tangential_step)
                                .max(b.tangential_step),
                            100.0 * (s.mean / h.mean - 1.0),
                            100.0 * (b.mean / h.mean - 1.0),
                        );
                    }
                }
                // Sliding at 1 cm/s, 2 mm deep, 2 cm along y beside the lump.
                m.reset();
                let (x, d) = (0.035, 2e-3);
                let start = at(x, -0.01, radius, d);
                run(&mut m, &mut t, std::iter::once(at(x, -0.01, radius, -2e-3)));
                run(&mut m, &mut t, ramp(at(x, -0.01, radius, -2e-3), start, 40));
                run(&mut m, &mut t, std::iter::repeat_n(start, 100));
                let end = at(x, 0.01, radius, d);
                let f = run(&mut m, &mut t, ramp(start, end, 400));
                let fz: Vec<f64> = f.iter().map(|f| f.z).collect();
                let mean = fz.iter().sum::<f64>() / fz.len() as f64;
                let (lo, hi) = fz
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &f| {
                        (lo.min(f), hi.max(f))
                    });
                let step = fz
                    .windows(2)
                    .map(|w| (w[1] - w[0]).abs() / w[0].abs().max(1e-12))
                    .fold(0.0, f64::max);
                println!(
                    "slide {backend:?} R {} mm friction {friction}: mean {mean:.4} N, ripple \
                     {:.2} % p-p, largest step {:.2} %",
                    radius * 1e3,
                    100.0 * (hi - lo) / mean,
                    100.0 * step
                );
            }
        }
    }
}
