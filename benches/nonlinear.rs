//! The full nonlinear static FEM on the default block (20 × 20 × 8 cells, 19,200
//! tetrahedra, 10,584 free DOFs) with Veronda–Westmann γ = 5 in both materials: internal
//! forces and the tangent at a pressed state, and a whole press from rest to 2 mm over
//! the lump (Newton with line search, every tangent factorised). This is the offline
//! ground truth (`palpa indent --full`), not a model step.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use palpa::nonlinear::{Hyperelastic, LawKind, LinearConstraint, NewtonOptions, NonlinearStatics};
use palpa::scene::{FemInputs, Scene};
use palpa::Vec3;

/// The default block with every tetrahedron's law made Veronda–Westmann γ = 5.
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
    let n = inputs.mesh.mesh.nodes.len();
    let loads = vec![Vec3::zeros(); n];
    let options = NewtonOptions {
        relative: 1e-9,
        max_iterations: 40,
    };
    // The state 2 mm deep, for the per-iteration parts.
    let mut pressed = vec![Vec3::zeros(); n];
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
            let mut u = vec![Vec3::zeros(); n];
            let mut constraint = press(&inputs, 0.002);
            statics
                .solve_constrained(&mut u, &loads, Some(&mut constraint), &options)
                .expect("the press converges")
        })
    });
    g.finish();
}

criterion_group!(benches, nonlinear);
criterion_main!(benches);
