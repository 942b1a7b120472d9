//! The reduced nonlinear static model (`nonlinear::ReducedStatics`) against independent
//! solves: for linear tissue the constraint's own shape gives the direct sparse solve
//! exactly; pressed deep into large-strain tissue, the adaptively grown basis gives the
//! full Newton solve's force on the whole mesh; a cubature of a few elements trained on
//! a press gives the exact reduced model's force; its basis is K-orthonormal; its Newton
//! iteration converges quadratically; bad input is an error.

use std::path::Path;
use std::sync::Arc;

use palpa::fem::{fixed_nodes, Axis, Fix, Material};
use palpa::mesh::generate::{grid_mesh, CubeSplit};
use palpa::mesh::TetMesh;
use palpa::nonlinear::{
    train_cubature, Hyperelastic, LawKind, LinearConstraint, NewtonOptions, NonlinearError,
    NonlinearStatics, ReducedStatics,
};
use palpa::scene::{FemInputs, Scene};
use palpa::Vec3;

use crate::reduced_press::{
    full_forces, options, patch, press_curves, reduced_forces, TOLERANCE, VW5,
};

/// A 4 × 4 × 2 cm block of 5 mm cells on a rigid base: 2,560 tetrahedra.
fn block() -> (TetMesh, Vec<bool>) {
    let xs: Vec<f64> = (0..=8).map(|i| -0.02 + 0.005 * i as f64).collect();
    let zs: Vec<f64> = (0..=4).map(|i| -0.02 + 0.005 * i as f64).collect();
    let mesh = grid_mesh("block", [&xs, &xs, &zs], CubeSplit::Six).unwrap();
    let fixed = fixed_nodes(
        &mesh,
        &[Fix::Below {
            axis: Axis::Z,
            dist: 0.0,
        }],
    )
    .unwrap();
    let prescribed = fixed.iter().flat_map(|&f| [f; 3]).collect();
    (mesh, prescribed)
}

fn statics(mesh: &TetMesh, prescribed: &[bool], laws: Vec<Hyperelastic>) -> Arc<NonlinearStatics> {
    Arc::new(NonlinearStatics::new(mesh, laws, prescribed.to_vec()).unwrap())
}

fn uniform(mesh: &TetMesh, kind: LawKind) -> Vec<Hyperelastic> {
    let m = Material::new(3.0e4, 0.45, 1000.0).unwrap();
    vec![Hyperelastic::new(kind, &m); mesh.tets.len()]
}

#[test]
fn for_linear_tissue_the_constraint_shape_alone_is_the_direct_solve() {
    let (mesh, prescribed) = block();
    let n = mesh.nodes.len();
    let linear = statics(&mesh, &prescribed, uniform(&mesh, LawKind::Linear));
    let press = patch(&mesh, [0.0, 0.0], 0.008, 1e-3);
    // Direct: Newton on the linear law is one sparse solve.
    let zero = vec![Vec3::zeros(); n];
    let mut direct = zero.clone();
    let mut c = press.clone();
    linear
        .solve_constrained(&mut direct, &zero, Some(&mut c), &options())
        .unwrap();
    let mut reduced = ReducedStatics::new(linear.clone(), 4).unwrap();
    let mut rc = [press.clone()];
    reduced.add_constraint_shapes(&rc).unwrap();
    assert_eq!(reduced.shapes(), 1);
    let mut q = vec![0.0];
    let (report, estimate) = reduced
        .solve_adaptive(&mut q, &zero, &mut rc, &options(), TOLERANCE)
        .unwrap();
    assert_eq!(
        report.steps,
        vec![1.0],
        "a linear problem is one Newton step"
    );
    assert!(
        estimate.basis <= 1e-9 && estimate.cut == 0.0,
        "{estimate:?}"
    );
    assert_eq!(reduced.shapes(), 1, "nothing to add for linear tissue");
    assert!(
        (rc[0].multiplier / c.multiplier - 1.0).abs() <= 1e-9,
        "{} vs {}",
        rc[0].multiplier,
        c.multiplier
    );
    let mut u = zero.clone();
    reduced.displacement(&q, &mut u);
    let miss = u
        .iter()
        .zip(&direct)
        .map(|(a, b)| (a - b).norm())
        .fold(0.0, f64::max);
    assert!(miss <= 1e-9 * 1e-3, "{miss:e} m");
}

#[test]
fn pressed_deep_into_large_strain_tissue_the_reduced_model_gives_the_full_fems_force() {
    let (mesh, prescribed) = block();
    let n = mesh.nodes.len();
    // To 20 % of the block's thickness.
    let depths = [5e-4, 1e-3, 2e-3, 3e-3, 4e-3];
    let press = patch(&mesh, [0.0, 0.0], 0.008, 0.0);
    let linear = full_forces(
        &statics(&mesh, &prescribed, uniform(&mesh, LawKind::Linear)),
        &press,
        &depths,
        n,
    );
    for kind in [LawKind::NeoHookean, VW5] {
        let full_model = statics(&mesh, &prescribed, uniform(&mesh, kind));
        let full = full_forces(&full_model, &press, &depths, n);
        let mut reduced = ReducedStatics::new(full_model, 24).unwrap();
        let (forces, _) = reduced_forces(&mut reduced, &press, &depths, n);
        println!(
            "{kind:?}: {} shapes, {} of {} elements active at the deepest",
            reduced.shapes(),
            reduced.active_elements(),
            mesh.tets.len()
        );
        for (i, d) in depths.iter().enumerate() {
            println!(
                "  {:.1} mm: linear {:.4} N, full {:.4} N, reduced {:.4} N ({:+.3} %)",
                d * 1e3,
                linear[i],
                full[i],
                forces[i],
                100.0 * (forces[i] / full[i] - 1.0)
            );
            assert!(
                (forces[i] / full[i] - 1.0).abs() <= 5e-3,
                "{kind:?} at {d} m: reduced {} N, full {} N",
                forces[i],
                full[i]
            );
        }
        // The deepest press is far from linear, and the basis stays small.
        assert!(
            (full[4] / linear[4] - 1.0).abs() > 0.02,
            "{full:?} {linear:?}"
        );
        assert!(reduced.shapes() <= 16, "{} shapes", reduced.shapes());
    }
}

#[test]
fn the_basis_is_k_orthonormal_and_newton_converges_quadratically_in_it() {
    let (mesh, prescribed) = block();
    let n = mesh.nodes.len();
    let model = statics(&mesh, &prescribed, uniform(&mesh, VW5));
    let mut reduced = ReducedStatics::new(model.clone(), 24).unwrap();
    let press = patch(&mesh, [0.0, 0.0], 0.008, 0.0);
    let (_, mut q) = reduced_forces(&mut reduced, &press, &[2e-3, 4e-3], n);
    let r = reduced.shapes();
    assert!(
        r >= 3,
        "{r} shapes: the press should have added corrections"
    );
    // UᵀKU = I, K the small-strain stiffness at rest (the tangent at u = 0).
    let k = model.tangent(&vec![Vec3::zeros(); n]);
    let shapes: Vec<faer::Mat<f64>> = (0..r)
        .map(|j| {
            let mut unit = vec![0.0; r];
            unit[j] = 1.0;
            let mut u = vec![Vec3::zeros(); n];
            reduced.displacement(&unit, &mut u);
            faer::Mat::from_fn(3 * n, 1, |d, _| u[d / 3][d % 3])
        })
        .collect();
    for i in 0..r {
        let ku = &k * &shapes[i];
        for (j, shape) in shapes.iter().enumerate() {
            let g: f64 = (0..3 * n).map(|d| ku[(d, 0)] * shape[(d, 0)]).sum();
            let want = if i == j { 1.0 } else { 0.0 };
            assert!((g - want).abs() <= 1e-9, "(UᵀKU)[{i},{j}] = {g}");
        }
    }
    // From 4 mm back to 3 mm in the basis as it is: quadratic once in the basin.
    let mut c = [LinearConstraint {
        value: -3e-3,
        ..press
    }];
    let report = reduced
        .solve(
            &mut q,
            &vec![Vec3::zeros(); n],
            &mut c,
            &NewtonOptions {
                relative: 1e-13,
                max_iterations: 30,
            },
        )
        .unwrap();
    // Relative to the first residual after the move (the start's is the move itself).
    crate::support::newton::assert_quadratic(&report, 1, 1e-12, "reduced, 4 → 3 mm");
}

#[test]
fn bad_input_is_an_error_naming_it() {
    let (mesh, prescribed) = block();
    let n = mesh.nodes.len();
    let model = statics(&mesh, &prescribed, uniform(&mesh, VW5));
    let mut reduced = ReducedStatics::new(model, 1).unwrap();
    let err = reduced.add_shape(&[1.0; 5]).unwrap_err();
    assert!(err.to_string().contains("shape force"), "{err}");
    let press = patch(&mesh, [0.0, 0.0], 0.008, 1e-3);
    let mut c = [press.clone()];
    reduced.add_constraint_shapes(&c).unwrap();
    let err = reduced
        .solve(&mut [0.0, 0.0], &vec![Vec3::zeros(); n], &mut c, &options())
        .unwrap_err();
    assert!(err.to_string().contains("reduced coordinates"), "{err}");
    // A second, different shape does not fit a basis of one.
    let other = patch(&mesh, [0.01, 0.0], 0.008, 1e-3);
    let err = reduced.add_constraint_shapes(&[other]).unwrap_err();
    assert!(matches!(err, NonlinearError::BasisFull(1)), "{err}");
    // The same shape again is in the span already and adds nothing.
    reduced.add_constraint_shapes(&[press]).unwrap();
    assert_eq!(reduced.shapes(), 1);
    let far = LinearConstraint {
        coefficients: vec![(3 * n, 1.0)],
        value: 0.0,
        multiplier: 0.0,
    };
    let err = reduced.add_constraint_shapes(&[far]).unwrap_err();
    assert!(err.to_string().contains("constraint DOF index"), "{err}");
}

#[test]
fn beside_the_lump_on_the_default_block_the_reduced_model_is_within_a_percent_of_the_full_fem() {
    assert_reduced_matches_full_fem_on_the_default_block("beside the lump", [0.035, 0.0]);
}

#[test]
fn over_the_lump_on_the_default_block_the_reduced_model_is_within_a_percent_of_the_full_fem() {
    assert_reduced_matches_full_fem_on_the_default_block("over the lump", [0.0, 0.0]);
}

/// The default scene's block, lump and base with 5 mm cells under the probe instead of
/// 3.3 mm: the comparison is of the reduction, not of the mesh, and the shipped mesh's
/// full solves took minutes of a debug test run (docs/benchmarks.md).
fn coarser_default_block() -> FemInputs {
    let text = crate::default_scene_with_5mm_cells();
    FemInputs::resolve(&Scene::parse(&text, "default.toml", Path::new(".")).unwrap()).unwrap()
}

/// The default block (5 mm cells) made neo-Hookean and Veronda–Westmann γ = 5, pressed at
/// `at` (`name` says where) to 0.25–6 mm by a 1 cm patch: the reduced model, exact over its
/// active elements and over a cubature trained on the press, gives the full FEM's force
/// to 1 % (the curves, printed with the linear curve for scale), and the force
/// grows with the stiffening. `examples/large_strain_accuracy.rs` prints the same on the
/// shipped mesh.
fn assert_reduced_matches_full_fem_on_the_default_block(name: &str, at: [f64; 2]) {
    let inputs = coarser_default_block();
    let depths = [0.00025, 0.002, 0.004, 0.006];
    let (linear, curves) = press_curves(&inputs, at, &depths);
    let mut last = linear.clone();
    for curve in curves {
        let kind = curve.kind;
        println!(
            "{name}, {kind:?}: {} shapes, {} of {} elements active at 6 mm, cubature of {}",
            curve.shapes,
            curve.active,
            inputs.mesh.mesh.tets.len(),
            curve.cubature_elements
        );
        let full = curve.full;
        for (i, d) in depths.iter().enumerate() {
            let (forces, cubed) = (curve.reduced[i], curve.cubature[i]);
            println!(
                "  {:5.2} mm: linear {:7.4} N, full {:7.4} N, reduced {:7.4} N ({:+.3} %), \
                 cubature {:7.4} N ({:+.3} %)",
                d * 1e3,
                linear[i],
                full[i],
                forces,
                100.0 * (forces / full[i] - 1.0),
                cubed,
                100.0 * (cubed / full[i] - 1.0)
            );
            for (what, f) in [("reduced", forces), ("cubature", cubed)] {
                assert!(
                    (f / full[i] - 1.0).abs() <= 1e-2,
                    "{name}, {kind:?}, {d} m: {what} {f} N, full {} N",
                    full[i]
                );
            }
        }
        // Force grows with the stiffening at depth.
        let deepest = depths.len() - 1;
        assert!(
            full[deepest] > last[deepest],
            "{name}: {full:?} after {last:?}"
        );
        last = full;
    }
}

#[test]
fn a_cubature_trained_on_a_press_gives_the_exact_reduced_force_from_a_few_elements() {
    let (mesh, prescribed) = block();
    let n = mesh.nodes.len();
    let model = statics(&mesh, &prescribed, uniform(&mesh, VW5));
    let mut reduced = ReducedStatics::new(model, 24).unwrap();
    let press = patch(&mesh, [0.0, 0.0], 0.008, 0.0);
    reduced_forces(&mut reduced, &press, &[1e-3, 2e-3, 4e-3], n);
    let active = reduced.active().len();
    // Training states: the press every 0.25 mm in the basis as grown; test depths
    // between them.
    let loads = vec![Vec3::zeros(); n];
    let solve_at = |reduced: &ReducedStatics, depths: &[f64]| -> (Vec<Vec<f64>>, Vec<f64>) {
        let mut c = [press.clone()];
        let mut q = vec![0.0; reduced.shapes()];
        depths
            .iter()
            .map(|&d| {
                c[0].value = -d;
                reduced.solve(&mut q, &loads, &mut c, &options()).unwrap();
                (q.clone(), -c[0].multiplier)
            })
            .unzip()
    };
    let training: Vec<f64> = (1..=16).map(|i| 2.5e-4 * i as f64).collect();
    let (states, _) = solve_at(&reduced, &training);
    let tests = [3e-4, 1.1e-3, 2.3e-3, 3.6e-3];
    let (_, exact) = solve_at(&reduced, &tests);
    let cubature = train_cubature(&reduced, &states, 40, 1e-3);
    println!(
        "{} of {active} active elements, training error {:.1e}",
        cubature.elements.len(),
        cubature.training_error
    );
    assert!(cubature.training_error <= 1e-3, "{cubature:?}");
    assert!(cubature.elements.len() <= 40 && 4 * cubature.elements.len() < active);
    assert!(cubature
        .elements
        .iter()
        .all(|&(e, w)| w > 0.0 && e < mesh.tets.len()));
    reduced.set_cubature(&cubature);
    assert_eq!(reduced.quadrature_elements(), cubature.elements.len());
    let (_, cubed) = solve_at(&reduced, &tests);
    for ((d, a), b) in tests.iter().zip(&cubed).zip(&exact) {
        println!("  {:.1} mm: cubature {a:.5} N, exact {b:.5} N", d * 1e3);
        assert!((a / b - 1.0).abs() <= 2e-3, "{d} m: {a} N against {b} N");
    }
    // The next enrichment sums over the active elements again.
    let mut c = [press.clone()];
    c[0].value = -1e-3;
    let mut q = states[3].clone();
    reduced.solve(&mut q, &loads, &mut c, &options()).unwrap();
    reduced.enrich(&q, &loads, &c, f64::INFINITY).unwrap();
    assert_eq!(reduced.quadrature_elements(), reduced.active().len());
}
