//! Assembled FEM system: patch test, mass, symmetry, fixed DOFs, the sparse factor.

use faer::Mat;
use palpa::fem::{
    self, Axis, DofMap, Factor, Fix, Material, MaterialMap, Ordering, Shape, TetElement,
};
use palpa::mesh::generate::box_mesh;
use palpa::{Mat3, Vec3};

fn soft() -> Material {
    Material::new(5.0e4, 0.3, 1000.0).unwrap()
}

#[test]
fn patch_test_linear_field_gives_uniform_strain_and_no_interior_force() {
    let mut mesh = box_mesh(Vec3::new(0.03, 0.02, 0.025), [4, 3, 5]).unwrap();
    // Jiggle interior nodes so elements are irregular.
    let boundary = mesh.boundary().nodes;
    for (v, p) in mesh.nodes.iter_mut().enumerate() {
        if boundary.binary_search(&v).is_err() {
            let s = (v as f64 * 0.618_033_988_75).fract() - 0.5;
            *p += Vec3::new(0.8e-3 * s, -0.6e-3 * s, 0.7e-3 * s);
        }
    }
    let per_tet = MaterialMap::uniform(soft()).per_tet(&mesh).unwrap();
    let sys = fem::assemble(
        &mesh,
        &per_tet,
        DofMap::new(&vec![false; mesh.nodes.len()]).unwrap(),
    )
    .unwrap();
    let a = Mat3::new(0.01, 0.002, -0.003, 0.004, -0.02, 0.001, 0.0, 0.005, 0.015);
    let u: Vec<Vec3> = mesh
        .nodes
        .iter()
        .map(|p| a * p + Vec3::new(1e-3, 0.0, -2e-3))
        .collect();
    let eps = (a + a.transpose()) * 0.5;
    for tet in &mesh.tets {
        let el = TetElement::new(tet.map(|v| mesh.nodes[v]));
        assert!((el.strain(&tet.map(|v| u[v])) - eps).abs().max() < 1e-13);
    }
    let x = sys.gather(&u);
    let f = sys.k_times(x.as_mat());
    let forces = sys.scatter(f.col(0));
    let scale = forces.iter().map(|f| f.norm()).fold(0.0, f64::max);
    assert!(scale > 0.0);
    for (v, fv) in forces.iter().enumerate() {
        if boundary.binary_search(&v).is_err() {
            assert!(fv.norm() < 1e-10 * scale, "interior node {v}: {fv}");
        }
    }
    // Boundary forces balance (no net force from a stress field in equilibrium).
    assert!(forces.iter().sum::<Vec3>().norm() < 1e-10 * scale);
}

#[test]
fn stiffness_is_symmetric_and_mass_sums_to_rho_v() {
    let mesh = box_mesh(Vec3::new(0.04, 0.02, 0.03), [4, 2, 3]).unwrap();
    let lump = Material::new(5.0e5, 0.3, 3000.0).unwrap();
    let map = MaterialMap::uniform(soft()).with_override(
        Shape::Sphere {
            center: Vec3::new(0.02, 0.01, 0.015),
            radius: 0.01,
        },
        lump,
    );
    let per_tet = map.per_tet(&mesh).unwrap();
    assert!(per_tet.contains(&lump) && per_tet.contains(&soft()));
    let expected: f64 = (0..mesh.tets.len())
        .map(|e| per_tet[e].density * mesh.tet_volume(e))
        .sum();
    let mass = fem::lumped_mass(&mesh, &per_tet).unwrap();
    assert!((mass.iter().sum::<f64>() - expected).abs() < 1e-12 * expected);
    let sys = fem::assemble(
        &mesh,
        &per_tet,
        DofMap::new(&vec![false; mesh.nodes.len()]).unwrap(),
    )
    .unwrap();
    assert!((sys.mass.iter().sum::<f64>() - 3.0 * expected).abs() < 1e-12 * expected);
    let dense = sys.k.to_dense();
    let max = dense.norm_max();
    for i in 0..dense.nrows() {
        for j in 0..i {
            assert!((dense[(i, j)] - dense[(j, i)]).abs() <= 1e-13 * max);
        }
    }
}

#[test]
fn fixed_dofs_are_removed_and_the_factor_solves_many_right_hand_sides() {
    let mesh = box_mesh(Vec3::new(0.03, 0.06, 0.03), [6, 12, 6]).unwrap();
    let per_tet = MaterialMap::uniform(soft()).per_tet(&mesh).unwrap();
    let fixed = fem::fixed_nodes(
        &mesh,
        &[Fix::Below {
            axis: Axis::Y,
            dist: 1e-9,
        }],
    )
    .unwrap();
    let dofs = DofMap::new(&fixed).unwrap();
    assert_eq!(dofs.n_fixed_nodes(), 49);
    let sys = fem::assemble(&mesh, &per_tet, dofs).unwrap();
    assert_eq!(sys.n_free(), 3 * (mesh.nodes.len() - 49));
    let b = Mat::from_fn(sys.n_free(), 7, |i, j| ((i * 7 + j) as f64 * 0.37).sin());
    let mut fills = Vec::new();
    for ordering in [Ordering::Amd, Ordering::NestedDissection] {
        let factor = Factor::for_system(&sys, 0.0, ordering, faer::Par::Seq).unwrap();
        let mut x = b.clone();
        factor.solve_in_place(x.as_mut()).unwrap();
        let r = sys.k_times(x.as_ref()) - &b;
        assert!(r.norm_l2() < 1e-10 * b.norm_l2(), "{ordering:?}");
        fills.push(factor.nnz_l());
    }
    println!(
        "fill of L: AMD {} vs nested dissection {}",
        fills[0], fills[1]
    );
    let factor = Factor::for_system(&sys, 0.0, Ordering::Amd, faer::Par::Seq).unwrap();
    assert!(factor.solve_in_place(Mat::zeros(3, 1).as_mut()).is_err());
}

#[test]
fn bad_inputs_are_errors_not_panics() {
    let mesh = box_mesh(Vec3::new(1.0, 1.0, 1.0), [1, 1, 1]).unwrap();
    let per_tet = MaterialMap::uniform(soft()).per_tet(&mesh).unwrap();
    let dofs = DofMap::new(&[false; 8]).unwrap();
    let err = fem::assemble(&mesh, &per_tet[..3], dofs.clone()).unwrap_err();
    assert!(
        err.to_string().contains("3 materials for 6 tetrahedra"),
        "{err}"
    );
    let err = fem::assemble(&mesh, &per_tet, DofMap::new(&[false; 4]).unwrap()).unwrap_err();
    assert!(err.to_string().contains("4 nodes"), "{err}");
    let bad = Material {
        poisson: 0.7,
        ..soft()
    };
    let err = MaterialMap::uniform(bad).per_tet(&mesh).unwrap_err();
    assert!(err.to_string().contains("poisson"), "{err}");
    let err = fem::fixed_nodes(
        &mesh,
        &[Fix::Below {
            axis: Axis::X,
            dist: f64::NAN,
        }],
    )
    .unwrap_err();
    assert!(err.to_string().contains("distance"), "{err}");
    // A free body's K is singular: the factor says so instead of returning garbage.
    let sys = fem::assemble(&mesh, &per_tet, dofs).unwrap();
    let err = Factor::for_system(&sys, 0.0, Ordering::Amd, faer::Par::Seq).unwrap_err();
    assert!(err.to_string().contains("not positive definite"), "{err}");
}
