//! The reduced large-strain model against the full nonlinear FEM on the shipped default
//! mesh (`scenes/default.toml`: 3.33 mm cells under the probe, nodal pressure): a 1 cm
//! patch pressed beside (35, 0) mm and over (0, 0) the lump to 0.25, 2, 4 and 6 mm,
//! neo-Hookean and Veronda–Westmann γ = 5, the full FEM's force beside the reduced
//! model's (grown to its tolerance) and its cubature's, with the linear law's for scale.
//! `tests/tissue`'s `nonlinear_reduced` asserts the same comparison (1 %) on 5 mm cells,
//! which a debug test run can afford; the numbers are in docs/fem-accuracy.md.
//!
//! `cargo run --release --example large_strain_accuracy`

#[path = "../tests/tissue/reduced_press.rs"]
mod reduced_press;

use std::time::Instant;

use palpa::scene::{FemInputs, Scene};

fn main() {
    let scene = Scene::embedded_default();
    let inputs = FemInputs::resolve(&scene).expect("the default scene's mesh");
    let tets = inputs.mesh.mesh.tets.len();
    let depths = [0.00025, 0.002, 0.004, 0.006];
    for (name, at) in [
        ("beside the lump", [0.035, 0.0]),
        ("over the lump", [0.0, 0.0]),
    ] {
        let started = Instant::now();
        let (linear, curves) = reduced_press::press_curves(&inputs, at, &depths);
        println!(
            "{name} ({tets} tetrahedra, {:.0} s):",
            started.elapsed().as_secs_f64()
        );
        for curve in curves {
            println!(
                "  {:?}: {} shapes, {} elements active at 6 mm, cubature of {}",
                curve.kind, curve.shapes, curve.active, curve.cubature_elements
            );
            for (i, d) in depths.iter().enumerate() {
                let full = curve.full[i];
                let off = |f: f64| 100.0 * (f / full - 1.0);
                println!(
                    "    {:5.2} mm: linear {:7.4} N, full {:7.4} N, reduced {:7.4} N ({:+.3} %), \
                     cubature {:7.4} N ({:+.3} %)",
                    d * 1e3,
                    linear[i],
                    full,
                    curve.reduced[i],
                    off(curve.reduced[i]),
                    curve.cubature[i],
                    off(curve.cubature[i])
                );
            }
        }
    }
}
