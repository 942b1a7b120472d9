//! A probe's contact patch pressed into large-strain tissue by the full nonlinear FEM and
//! by the reduced model (grown adaptively, then over a cubature trained on the press):
//! the comparison `nonlinear_reduced`'s tests assert on a coarser default block and
//! `examples/large_strain_accuracy.rs` prints on the shipped mesh.

use std::sync::Arc;

use palpa::mesh::TetMesh;
use palpa::nonlinear::{
    train_cubature, Hyperelastic, LawKind, LinearConstraint, NewtonOptions, NonlinearStatics,
    ReducedStatics,
};
use palpa::scene::FemInputs;
use palpa::Vec3;

/// The enrichment tolerance the reduced model solves to (energy norm, relative).
pub const TOLERANCE: f64 = 1e-3;

/// Veronda–Westmann with stiffening γ = 5.
pub const VW5: LawKind = LawKind::VerondaWestmann { stiffening: 5.0 };

/// Newton's stopping rule of every solve here.
pub fn options() -> NewtonOptions {
    NewtonOptions {
        relative: 1e-10,
        max_iterations: 40,
    }
}

/// The top-face nodes within `radius` (m) of (x, y), weights (1 − (d/r)²)² summing to 1,
/// pressed along −z to `depth` (m): a probe's contact patch.
pub fn patch(mesh: &TetMesh, at: [f64; 2], radius: f64, depth: f64) -> LinearConstraint {
    let top = mesh
        .nodes
        .iter()
        .map(|x| x.z)
        .fold(f64::NEG_INFINITY, f64::max);
    let pairs: Vec<(usize, f64)> = mesh
        .nodes
        .iter()
        .enumerate()
        .filter_map(|(v, x)| {
            let d = ((x.x - at[0]).powi(2) + (x.y - at[1]).powi(2)).sqrt();
            ((x.z - top).abs() < 1e-12 && d < radius)
                .then(|| (3 * v + 2, (1.0 - (d / radius).powi(2)).powi(2)))
        })
        .collect();
    let total: f64 = pairs.iter().map(|p| p.1).sum();
    LinearConstraint {
        coefficients: pairs.iter().map(|&(d, w)| (d, w / total)).collect(),
        value: -depth,
        multiplier: 0.0,
    }
}

/// The full Newton solve's force on the probe (N) at each depth, pressed in order, on a
/// mesh of `n` nodes.
pub fn full_forces(
    statics: &NonlinearStatics,
    press: &LinearConstraint,
    depths: &[f64],
    n: usize,
) -> Vec<f64> {
    let loads = vec![Vec3::zeros(); n];
    let mut u = loads.clone();
    let mut c = press.clone();
    depths
        .iter()
        .map(|&d| {
            c.value = -d;
            statics
                .solve_constrained(&mut u, &loads, Some(&mut c), &options())
                .unwrap();
            -c.multiplier
        })
        .collect()
}

/// The reduced model's force (N) at each depth, its basis grown as it presses, and its
/// reduced coordinates at the last depth.
pub fn reduced_forces(
    reduced: &mut ReducedStatics,
    press: &LinearConstraint,
    depths: &[f64],
    n: usize,
) -> (Vec<f64>, Vec<f64>) {
    let loads = vec![Vec3::zeros(); n];
    let mut c = [press.clone()];
    reduced.add_constraint_shapes(&c).unwrap();
    let mut q = vec![0.0; reduced.shapes()];
    let forces = depths
        .iter()
        .map(|&d| {
            c[0].value = -d;
            let (_, estimate) = reduced
                .solve_adaptive(&mut q, &loads, &mut c, &options(), TOLERANCE)
                .unwrap();
            assert!(estimate.basis <= TOLERANCE, "{estimate:?} at {d} m");
            -c[0].multiplier
        })
        .collect();
    (forces, q)
}

/// One law's force curve on a scene's block: the full FEM's, the reduced model's and
/// its cubature's (N, one per depth), and the reduced model's size at the deepest.
pub struct LawCurve {
    pub kind: LawKind,
    pub full: Vec<f64>,
    pub reduced: Vec<f64>,
    pub cubature: Vec<f64>,
    pub shapes: usize,
    pub active: usize,
    pub cubature_elements: usize,
}

/// The scene's block (`inputs`: its mesh, materials and fixed nodes) pressed at `at` by
/// a 1 cm patch to each of `depths` (m): the linear law's full-FEM curve, and for
/// neo-Hookean and Veronda–Westmann γ = 5 the full FEM's, the reduced model's (32 shapes
/// at most) and, trained on the press every 0.25 mm, its cubature's.
pub fn press_curves(inputs: &FemInputs, at: [f64; 2], depths: &[f64]) -> (Vec<f64>, Vec<LawCurve>) {
    let mesh = &inputs.mesh.mesh;
    let n = mesh.nodes.len();
    let prescribed: Vec<bool> = inputs.fixed.iter().flat_map(|&f| [f; 3]).collect();
    let statics = |kind| {
        let laws = inputs
            .per_tet
            .iter()
            .map(|m| Hyperelastic::new(kind, m))
            .collect();
        Arc::new(NonlinearStatics::new(mesh, laws, prescribed.clone()).unwrap())
    };
    let press = patch(mesh, at, 0.01, 0.0);
    let linear = full_forces(&statics(LawKind::Linear), &press, depths, n);
    let curves = [LawKind::NeoHookean, VW5]
        .into_iter()
        .map(|kind| {
            let model = statics(kind);
            let full = full_forces(&model, &press, depths, n);
            let mut reduced = ReducedStatics::new(model, 32).unwrap();
            let (forces, _) = reduced_forces(&mut reduced, &press, depths, n);
            let zero = vec![Vec3::zeros(); n];
            let mut c = [press.clone()];
            let mut q = vec![0.0; reduced.shapes()];
            let deepest = depths.iter().copied().fold(0.0, f64::max);
            let training = (deepest / 2.5e-4).ceil() as usize;
            let states: Vec<Vec<f64>> = (1..=training)
                .map(|i| {
                    c[0].value = -2.5e-4 * i as f64;
                    reduced.solve(&mut q, &zero, &mut c, &options()).unwrap();
                    q.clone()
                })
                .collect();
            let cubature = train_cubature(&reduced, &states, 100, 1e-3);
            let (shapes, active) = (reduced.shapes(), reduced.active_elements());
            reduced.set_cubature(&cubature);
            let mut q = vec![0.0; reduced.shapes()];
            let cubed = depths
                .iter()
                .map(|&d| {
                    c[0].value = -d;
                    reduced.solve(&mut q, &zero, &mut c, &options()).unwrap();
                    -c[0].multiplier
                })
                .collect();
            LawCurve {
                kind,
                full,
                reduced: forces,
                cubature: cubed,
                shapes,
                active,
                cubature_elements: cubature.elements.len(),
            }
        })
        .collect();
    (linear, curves)
}
