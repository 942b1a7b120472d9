//! Modal precompute against analytic frequencies, direct solves and its own invariants.

use faer::Mat;
use palpa::fem::{self, DofMap, Factor, FemSystem, Fix, Material, MaterialMap, Ordering, Pressure};
use palpa::mesh::{generate::box_mesh, TetMesh};
use palpa::modal::{compute_modes, ModalBasis, Timings};
use palpa::Vec3;

fn system(mesh: &TetMesh, m: Material, fixes: &[Fix]) -> FemSystem {
    system_with(mesh, m, fixes, Pressure::Element)
}

fn system_with(mesh: &TetMesh, m: Material, fixes: &[Fix], pressure: Pressure) -> FemSystem {
    let per_tet = MaterialMap::uniform(m).per_tet(mesh).unwrap();
    let fixed = fem::fixed_nodes(mesh, fixes).unwrap();
    fem::assemble_with(mesh, &per_tet, DofMap::new(&fixed).unwrap(), pressure).unwrap()
}

fn modes(sys: &FemSystem, k: usize) -> ModalBasis {
    let mut t = Timings::default();
    compute_modes(sys, k, Ordering::NestedDissection, &mut t)
        .unwrap()
        .0
}

/// First bending frequency of a clamped-free beam, Euler–Bernoulli: (β₁L)²/(2πL²)·√(EI/ρA).
fn euler_bernoulli_f1(m: &Material, length: f64, h: f64) -> f64 {
    let beta_l: f64 = 1.875_104_07;
    let (i, a) = (h.powi(4) / 12.0, h * h);
    beta_l.powi(2) / (2.0 * std::f64::consts::PI * length.powi(2))
        * (m.young * i / (m.density * a)).sqrt()
}

fn cantilever_error(cells_across: usize) -> f64 {
    cantilever_error_with(cells_across, 0.3, Pressure::Element)
}

/// The first bending frequency's relative error of the clamped beam with `cells_across`
/// cells through its thickness, Poisson's ratio `poisson` and `pressure`.
fn cantilever_error_with(cells_across: usize, poisson: f64, pressure: Pressure) -> f64 {
    let (length, h) = (0.2, 0.01);
    let m = Material::new(1.0e5, poisson, 1000.0).unwrap();
    let mesh = box_mesh(
        Vec3::new(length, h, h),
        [20 * cells_across, cells_across, cells_across],
    )
    .unwrap();
    let sys = system_with(
        &mesh,
        m,
        &[Fix::Below {
            axis: fem::Axis::X,
            dist: 1e-9,
        }],
        pressure,
    );
    let basis = modes(&sys, 2);
    // The square section has two equal first bending modes (y and z).
    let f = basis.frequency_hz(0);
    let exact = euler_bernoulli_f1(&m, length, h);
    println!(
        "cells across {cells_across}, ν = {poisson}, {pressure:?} pressure: f1 = {f:.4} Hz, f2 = {:.4}, exact {exact:.4}, error {:.2}%",
        basis.frequency_hz(1),
        100.0 * (f - exact) / exact
    );
    (f - exact) / exact
}

#[test]
fn cantilever_first_bending_frequency_converges_to_euler_bernoulli() {
    let errors: Vec<f64> = [2, 4, 6].iter().map(|&c| cantilever_error(c)).collect();
    assert!(
        errors.iter().all(|&e| e > 0.0),
        "linear tets are too stiff: {errors:?}"
    );
    assert!(
        errors.windows(2).all(|w| w[1] < 0.6 * w[0]),
        "error must fall: {errors:?}"
    );
    assert!(errors[2] < 0.05, "{errors:?}");
}

/// Locking: linear tetrahedra's element pressure makes the beam far too stiff as
/// ν → 0.5 (Euler–Bernoulli's f₁ does not depend on ν); nodal-averaged pressure keeps it
/// near the compressible beam's accuracy.
#[test]
fn nodal_pressure_removes_volumetric_locking() {
    for (poisson, element_at_least) in [(0.49, 0.5), (0.499, 2.0)] {
        let element = cantilever_error_with(4, poisson, Pressure::Element);
        let nodal = cantilever_error_with(4, poisson, Pressure::Nodal);
        assert!(element > element_at_least, "ν = {poisson}: {element}");
        assert!(
            (0.0..0.09).contains(&nodal),
            "ν = {poisson}: nodal pressure error {nodal}"
        );
    }
}

fn soft() -> Material {
    Material::new(5.0e4, 0.3, 1000.0).unwrap()
}

/// ‖Kx − λMx‖/‖Kx‖ for elastic modes, ‖Kx‖/(λ_max‖Mx‖) for rigid ones, and ‖XᵀMX − I‖max.
fn check_eigenpairs(sys: &FemSystem, basis: &ModalBasis) {
    let x = basis.free_shapes(&sys.dofs);
    let kx = sys.k_times(x.as_ref());
    let lmax = basis.eigenvalues.iter().cloned().fold(0.0, f64::max);
    for c in 0..basis.n_modes() {
        let l = basis.eigenvalues[c];
        let (mut r, mut k, mut m) = (0.0, 0.0, 0.0);
        for i in 0..x.nrows() {
            let mx = sys.mass[i] * x[(i, c)];
            r += (kx[(i, c)] - l * mx).powi(2);
            k += kx[(i, c)].powi(2);
            m += mx * mx;
        }
        if basis.rigid[c] {
            assert!(
                k.sqrt() < 1e-8 * lmax * m.sqrt(),
                "rigid mode {c} is not force-free"
            );
        } else {
            assert!(
                r.sqrt() / k.sqrt() < 1e-8,
                "mode {c}: residual {}",
                r.sqrt() / k.sqrt()
            );
        }
    }
    let mx = Mat::from_fn(x.nrows(), x.ncols(), |i, c| sys.mass[i] * x[(i, c)]);
    let gram = x.transpose() * &mx;
    for i in 0..gram.nrows() {
        for j in 0..gram.ncols() {
            let want = if i == j { 1.0 } else { 0.0 };
            assert!(
                (gram[(i, j)] - want).abs() < 1e-10,
                "XᵀMX[{i},{j}] = {}",
                gram[(i, j)]
            );
        }
    }
}

fn check_free_cube(cells: usize, k: usize) {
    let mesh = box_mesh(Vec3::new(0.05, 0.05, 0.05), [cells; 3]).unwrap();
    let sys = system(&mesh, soft(), &[]);
    let basis = modes(&sys, k);
    let f7 = basis.frequency_hz(6);
    assert!(f7 > 0.0);
    for i in 0..6 {
        assert!(
            basis.frequency_hz(i).abs() < 1e-6 * f7,
            "mode {i}: {} Hz vs f7 {f7}",
            basis.frequency_hz(i)
        );
        assert!(basis.rigid[i]);
    }
    for i in 6..k {
        assert!(basis.frequency_hz(i) > 0.0 && !basis.rigid[i]);
    }
    check_eigenpairs(&sys, &basis);
}

#[test]
fn free_cube_has_six_rigid_modes_dense_path() {
    // 4³ nodes: 192 DOFs, solved densely.
    check_free_cube(3, 20);
}

#[test]
fn free_cube_has_six_rigid_modes_shift_invert_path() {
    // 9³ nodes: 2187 DOFs, shift-invert Lanczos with a negative shift.
    check_free_cube(8, 30);
}

#[test]
fn clamped_block_modes_are_accurate_eigenpairs() {
    let mesh = box_mesh(Vec3::new(0.04, 0.06, 0.03), [6, 9, 5]).unwrap();
    let sys = system(
        &mesh,
        soft(),
        &[Fix::Below {
            axis: fem::Axis::Y,
            dist: 1e-9,
        }],
    );
    let basis = modes(&sys, 40);
    assert!(basis.rigid.iter().all(|r| !r));
    assert!(basis.eigenvalues.windows(2).all(|w| w[0] <= w[1]));
    check_eigenpairs(&sys, &basis);
    // Fixed nodes have zero rows.
    for v in sys.dofs.fixed_nodes() {
        assert!(basis.node_rows(v).norm_max() == 0.0);
    }
    // Lanczos and the dense solver agree on the spectrum of a smaller clamped block.
    let small = box_mesh(Vec3::new(0.04, 0.06, 0.03), [6, 8, 4]).unwrap();
    let sys = system(
        &small,
        soft(),
        &[Fix::Below {
            axis: fem::Axis::Y,
            dist: 1e-9,
        }],
    );
    assert!(sys.n_free() > 600, "must take the Lanczos path");
    let lanczos = modes(&sys, 12);
    let dense = dense_eigenvalues(&sys);
    for (i, l) in lanczos.eigenvalues.iter().enumerate() {
        assert!(
            (l - dense[i]).abs() < 1e-9 * dense[i],
            "mode {i}: {l} vs {}",
            dense[i]
        );
    }
}

/// All eigenvalues of M^-½ K M^-½ from a dense solve, ascending.
fn dense_eigenvalues(sys: &FemSystem) -> Vec<f64> {
    let n = sys.n_free();
    let mut a = Mat::<f64>::zeros(n, n);
    let k = sys.k.as_ref();
    for j in 0..n {
        for (&i, &v) in k.row_idx_of_col_raw(j).iter().zip(k.val_of_col(j)) {
            a[(i, j)] = v / (sys.mass[i] * sys.mass[j]).sqrt();
        }
    }
    a.self_adjoint_eigenvalues(faer::Side::Lower).unwrap()
}

#[test]
fn k_inverse_columns_complete_the_modal_compliance() {
    let mesh = box_mesh(Vec3::new(0.04, 0.06, 0.03), [5, 8, 4]).unwrap();
    let sys = system(
        &mesh,
        soft(),
        &[Fix::Below {
            axis: fem::Axis::Y,
            dist: 1e-9,
        }],
    );
    let basis = modes(&sys, 20);
    let factor = Factor::for_system(&sys, 0.0, Ordering::Amd, faer::Par::Seq).unwrap();
    let surface = mesh.boundary().nodes;
    // The runtime's residual flexibility is K⁻¹ (from the column cache) minus the modal
    // part; here it must complete the truncated basis to the direct solve.
    let mut columns = palpa::fem::ComplianceColumns::new(
        std::sync::Arc::new(factor),
        sys.dofs.clone(),
        &sys.positions,
        64,
    )
    .unwrap();
    // Independent direct solve: faer's high-level sparse Cholesky of K.
    let llt = sys.k.sp_cholesky(faer::Side::Lower).unwrap();
    let free_surface: Vec<usize> = surface
        .iter()
        .copied()
        .filter(|&v| !sys.dofs.is_fixed(v))
        .collect();
    for &v in free_surface.iter().step_by(free_surface.len() / 7) {
        let d = sys.dofs.node_dofs(v).unwrap();
        let mut e = Mat::<f64>::zeros(sys.n_free(), 3);
        for a in 0..3 {
            e[(d[a], a)] = 1.0;
        }
        let u = faer::linalg::solvers::Solve::solve(&llt, &e);
        let direct = palpa::Mat3::from_fn(|r, c| u[(d[r], c)]);
        let w = basis.node_rows(v);
        let modal = palpa::Mat3::from_fn(|r, c| {
            (0..basis.n_modes())
                .map(|i| w[(r, i)] * w[(c, i)] / basis.eigenvalues[i])
                .sum()
        });
        let residual = columns.block(v, v).unwrap() - modal;
        let total = modal + residual;
        assert!((total - direct).norm() < 1e-8 * direct.norm(), "node {v}");
        // The truncated basis alone is too stiff: the residual is a real correction.
        assert!(residual.norm() > 1e-3 * direct.norm());
    }
    for v in sys.dofs.fixed_nodes() {
        assert_eq!(columns.block(v, v).unwrap(), palpa::Mat3::zeros());
    }
}

#[test]
fn impossible_requests_are_errors() {
    let mesh = box_mesh(Vec3::new(0.01, 0.01, 0.01), [1, 1, 1]).unwrap();
    let sys = system(&mesh, soft(), &[Fix::Nodes(vec![0])]);
    let mut t = Timings::default();
    let err = compute_modes(&sys, sys.n_free() + 1, Ordering::Amd, &mut t).unwrap_err();
    assert!(err.to_string().contains("free DOFs"), "{err}");
    assert!(compute_modes(&sys, 0, Ordering::Amd, &mut t).is_err());
    let all = fem::fixed_nodes(
        &mesh,
        &[Fix::Below {
            axis: fem::Axis::Z,
            dist: 1.0,
        }],
    )
    .unwrap();
    let err = DofMap::new(&all).unwrap_err();
    assert!(err.to_string().contains("all 8 nodes are fixed"), "{err}");
    // A free body has no static compliance: K is singular.
    let free = system(&mesh, soft(), &[]);
    assert!(Factor::for_system(&free, 0.0, Ordering::Amd, faer::Par::Seq).is_err());
}

#[test]
fn bunny_modes_are_accurate_and_selected() {
    let mut mesh = palpa::mesh::load(std::path::Path::new("tests/data/bunny.msh")).unwrap();
    mesh.scale(0.01);
    let tissue = Material::new(5.0e4, 0.45, 1000.0).unwrap();
    let sys = system(
        &mesh,
        tissue,
        &[Fix::Below {
            axis: fem::Axis::Y,
            dist: 0.005,
        }],
    );
    let basis = modes(&sys, 20);
    assert!(basis.rigid.iter().all(|r| !r));
    check_eigenpairs(&sys, &basis);
    // Selection: a tiny force makes the stiffer modes unobservable, a low cut-off drops
    // the fast ones, and every report carries the Rayleigh damping ratio.
    let params = palpa::modal::SelectionParams {
        max_force: 1e-3,
        min_displacement: 1e-5,
        max_frequency_hz: 30.0,
        alpha_stiffness: 1e-3,
        alpha_mass: 1.0,
    };
    let reports = palpa::modal::select_modes(&basis, &params);
    use palpa::modal::ModeFate;
    for r in &reports {
        let lambda = basis.eigenvalues[r.index];
        let zeta = (1e-3 * lambda + 1.0) / (2.0 * lambda.sqrt());
        assert!((r.damping_ratio.unwrap() - zeta).abs() < 1e-12);
        let w = basis.shapes.col(r.index);
        let w_max = (0..mesh.nodes.len())
            .map(|v| (0..3).map(|a| w[3 * v + a].powi(2)).sum::<f64>())
            .fold(0.0, f64::max);
        let response = w_max * 1e-3 / lambda;
        let expected = if response < 1e-5 {
            ModeFate::Unobservable
        } else if r.freq_hz > 30.0 {
            ModeFate::AboveCutoff
        } else {
            ModeFate::Kept
        };
        assert_eq!(r.fate, expected, "mode {}", r.index);
    }
    assert!(reports.iter().any(|r| r.fate == ModeFate::Kept));
    assert!(reports.iter().any(|r| r.fate != ModeFate::Kept));
}
