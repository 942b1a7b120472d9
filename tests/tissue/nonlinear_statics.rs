//! The full nonlinear static FEM against closed forms: a uniaxial stretch of a
//! hyperelastic cube (homogeneous, so linear tetrahedra represent it exactly) against the
//! analytic stress–stretch curve; small strain against the linear solver; Newton's
//! quadratic convergence; errors for bad input.

use faer::{Col, Par};
use palpa::fem::{
    assemble_with, fixed_nodes, Axis, DofMap, Factor, Fix, Material, Ordering, Pressure,
};
use palpa::mesh::generate::{grid_mesh, CubeSplit};
use palpa::mesh::TetMesh;
use palpa::nonlinear::{
    Hyperelastic, LawKind, LinearConstraint, NewtonOptions, NonlinearError, NonlinearStatics,
    RigidSphere, SphereContactState,
};
use palpa::Vec3;

const SIDE: f64 = 0.01;

fn cube() -> TetMesh {
    let xs: Vec<f64> = (0..=3).map(|i| SIDE * i as f64 / 3.0).collect();
    grid_mesh("cube", [&xs, &xs, &xs], CubeSplit::Six).unwrap()
}

fn material(poisson: f64) -> Material {
    Material::new(3.0e4, poisson, 1000.0).unwrap()
}

/// Nominal stress P₁₁ (Pa) and lateral stretch of a uniaxial stretch λ of the law,
/// from the principal Cauchy stresses σᵢ = (2/J) Ψ'(Ī₁) (λ̄ᵢ² − Ī₁/3) + κ ln J / J
/// (λ̄ᵢ = J^(−1/3) λᵢ) with the lateral stretch t found by bisection on σ₂ = 0.
fn uniaxial(law: &Hyperelastic, stretch: f64) -> (f64, f64) {
    let dpsi = |i1_bar: f64| match law.kind {
        LawKind::VerondaWestmann { stiffening: g } => 0.5 * law.mu * (g * (i1_bar - 3.0)).exp(),
        _ => 0.5 * law.mu,
    };
    let cauchy = |l: f64, t: f64| {
        let j = l * t * t;
        let s = j.powf(-2.0 / 3.0);
        let i1_bar = s * (l * l + 2.0 * t * t);
        let d = dpsi(i1_bar);
        let vol = law.kappa * j.ln() / j;
        (
            2.0 / j * d * (s * l * l - i1_bar / 3.0) + vol,
            2.0 / j * d * (s * t * t - i1_bar / 3.0) + vol,
        )
    };
    // σ₂ rises with t: bracket and bisect to round-off.
    let (mut lo, mut hi) = (0.2, 2.0);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if cauchy(stretch, mid).1 > 0.0 {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let t = 0.5 * (lo + hi);
    let j = stretch * t * t;
    (cauchy(stretch, t).0 * j / stretch, t)
}

#[test]
fn a_uniaxial_stretch_follows_the_analytic_stress_stretch_curve() {
    let mesh = cube();
    let on = |v: usize, axis: usize, at: f64| (mesh.nodes[v][axis] - at).abs() < 1e-12;
    // Rollers on the three faces through the origin, the x = L face pulled along x.
    let mut prescribed = vec![false; 3 * mesh.nodes.len()];
    for v in 0..mesh.nodes.len() {
        for axis in 0..3 {
            prescribed[3 * v + axis] |= on(v, axis, 0.0);
        }
        prescribed[3 * v] |= on(v, 0, SIDE);
    }
    let corner = (0..mesh.nodes.len())
        .find(|&v| (0..3).all(|a| on(v, a, SIDE)))
        .unwrap();
    let loads = vec![Vec3::zeros(); mesh.nodes.len()];
    for kind in [
        LawKind::NeoHookean,
        LawKind::VerondaWestmann { stiffening: 5.0 },
    ] {
        let law = Hyperelastic::new(kind, &material(0.3));
        let element =
            NonlinearStatics::new(&mesh, vec![law; mesh.tets.len()], prescribed.clone()).unwrap();
        // A homogeneous stretch has the same J at every node: the nodal-averaged volume
        // energy is the elements' own, and the curve the same.
        let nodal = element.clone().with_nodal_pressure(&mesh);
        for (statics, path) in [
            (&element, &[1.05, 1.1, 1.2, 1.3, 1.4, 1.5][..]),
            (&element, &[0.95, 0.9, 0.8, 0.7][..]),
            (&nodal, &[1.1, 1.3, 1.5][..]),
            (&nodal, &[0.9, 0.7][..]),
        ] {
            let mut u = vec![Vec3::zeros(); mesh.nodes.len()];
            for &stretch in path {
                for (v, d) in u.iter_mut().enumerate() {
                    if on(v, 0, SIDE) {
                        d.x = (stretch - 1.0) * SIDE;
                    }
                }
                let report = statics
                    .solve(&mut u, &loads, &NewtonOptions::default())
                    .unwrap();
                let f = statics.internal_forces(&u).unwrap();
                let reaction: f64 = (0..mesh.nodes.len())
                    .filter(|&v| on(v, 0, SIDE))
                    .map(|v| f[v].x)
                    .sum();
                let (p11, t) = uniaxial(&law, stretch);
                let exact = p11 * SIDE * SIDE;
                let lateral = 1.0 + u[corner].y / SIDE;
                println!(
                    "{kind:?} stretch {stretch:.2}: force {reaction:.6e} N, analytic {exact:.6e} N \
                     (rel {:.1e}); lateral stretch {lateral:.8} vs {t:.8}; {} iterations",
                    (reaction / exact - 1.0).abs(),
                    report.steps.len()
                );
                assert!((reaction / exact - 1.0).abs() <= 1e-6);
                assert!((lateral - t).abs() <= 1e-6 * t);
                assert!((u[corner].z - u[corner].y).abs() <= 1e-9 * SIDE);
            }
        }
    }
}

/// A 2 × 2 × 1 cm block fixed at its base, its top nodes loaded with `top` each.
struct Block {
    mesh: TetMesh,
    fixed: Vec<bool>,
}

impl Block {
    /// 5 mm cells.
    fn new() -> Self {
        Self::of_cells(0.005)
    }

    /// Cells of `h` (m, dividing 1 cm).
    fn of_cells(h: f64) -> Self {
        let n = (0.01 / h).round() as usize;
        let xs: Vec<f64> = (0..=2 * n).map(|i| -0.01 + h * i as f64).collect();
        let zs: Vec<f64> = (0..=n).map(|i| -0.01 + h * i as f64).collect();
        let mesh = grid_mesh("block", [&xs, &xs, &zs], CubeSplit::Six).unwrap();
        let fixed = fixed_nodes(
            &mesh,
            &[Fix::Below {
                axis: Axis::Z,
                dist: 0.0,
            }],
        )
        .unwrap();
        Self { mesh, fixed }
    }

    /// The nodes of the top face (z = 0).
    fn top_nodes(&self) -> Vec<usize> {
        (0..self.mesh.nodes.len())
            .filter(|&v| self.mesh.nodes[v].z.abs() < 1e-12)
            .collect()
    }

    fn loads(&self, top: Vec3) -> Vec<Vec3> {
        self.mesh
            .nodes
            .iter()
            .map(|p| {
                if p.z.abs() < 1e-12 {
                    top
                } else {
                    Vec3::zeros()
                }
            })
            .collect()
    }

    fn statics(&self, kind: LawKind, m: &Material) -> NonlinearStatics {
        let prescribed = self.fixed.iter().flat_map(|&f| [f; 3]).collect();
        let laws = vec![Hyperelastic::new(kind, m); self.mesh.tets.len()];
        NonlinearStatics::new(&self.mesh, laws, prescribed).unwrap()
    }

    /// The linear FEM's displacement under `loads` (the solver the runtime models use).
    fn linear(&self, m: &Material, loads: &[Vec3]) -> Vec<Vec3> {
        self.linear_of(&vec![*m; self.mesh.tets.len()], Pressure::Element, loads)
    }

    /// [`Block::linear`] with a material per tetrahedron and `pressure`.
    fn linear_of(&self, materials: &[Material], pressure: Pressure, loads: &[Vec3]) -> Vec<Vec3> {
        let dofs = DofMap::new(&self.fixed).unwrap();
        let system = assemble_with(&self.mesh, materials, dofs, pressure).unwrap();
        let factor = Factor::for_system(&system, 0.0, Ordering::Amd, Par::Seq).unwrap();
        let mut rhs: Col<f64> = system.gather(loads);
        factor.solve_in_place(rhs.as_mat_mut()).unwrap();
        system.scatter(rhs.as_ref())
    }
}

fn largest(u: &[Vec3]) -> f64 {
    u.iter().map(|d| d.norm()).fold(0.0, f64::max)
}

/// At small strain every law is linear elasticity: the difference from the linear
/// solver is first order in the strain (geometric and material nonlinearity both start
/// at O(ε)), about 1e-3 relative at 0.1 % strain and 1e-4 at 0.01 %, for any large-strain
/// law (the closed-form uniaxial curve of a neo-Hookean solid differs from Hooke's law by
/// 1.0–1.1e-3 at 0.1 % strain). The `Linear` law reproduces it to round-off.
#[test]
fn at_small_strain_every_law_agrees_with_the_linear_solver() {
    let block = Block::new();
    let m = material(0.45);
    // Per-node load for a mean vertical strain `strain` over the 1 cm height
    // (25 top nodes share E·ε·A), with a sideways share to bend the block too.
    let top = |strain: f64| Vec3::new(0.3, 0.0, -1.0) * (m.young * strain * 4e-4 / 25.0);
    let kinds = [
        LawKind::Linear,
        LawKind::NeoHookean,
        LawKind::VerondaWestmann { stiffening: 5.0 },
    ];
    let mut differences = [[0.0; 2]; 3];
    for (s, strain) in [1e-3, 1e-4].into_iter().enumerate() {
        let loads = block.loads(top(strain));
        let linear = block.linear(&m, &loads);
        for (k, kind) in kinds.into_iter().enumerate() {
            let statics = block.statics(kind, &m);
            let mut u = vec![Vec3::zeros(); block.mesh.nodes.len()];
            statics
                .solve(&mut u, &loads, &NewtonOptions::default())
                .unwrap();
            let diff: Vec<Vec3> = u.iter().zip(&linear).map(|(a, b)| a - b).collect();
            differences[k][s] = largest(&diff) / largest(&linear);
            println!(
                "{kind:?} at {:.2} % strain: largest displacement {:.3e} m, against linear {:.2e}",
                strain * 100.0,
                largest(&u),
                differences[k][s]
            );
        }
    }
    assert!(
        differences[0].iter().all(|&d| d <= 1e-10),
        "{differences:?}"
    );
    for d in &differences[1..] {
        assert!(d[1] <= 1e-4, "{differences:?}");
        assert!(d[0] <= 1e-3, "{differences:?}");
        // First order: ten times less strain, ten times closer.
        assert!((d[0] / d[1] / 10.0 - 1.0).abs() < 0.05, "{differences:?}");
    }
}

/// Nodal-averaged pressure in the full FEM (its own pattern and tangent, the laws'
/// deviatoric stress) and in the linear assembly (the elements' deviatoric stiffness)
/// give the same displacement, with a lump 8× stiffer; it is softer than element
/// pressure at ν = 0.45, and a large-strain law is refused by name.
#[test]
fn nodal_pressure_in_the_full_fem_matches_the_linear_assembly() {
    let block = Block::new();
    let (soft, stiff) = (material(0.45), Material::new(2.4e5, 0.45, 1000.0).unwrap());
    let materials: Vec<Material> = block
        .mesh
        .tets
        .iter()
        .map(|t| {
            let centroid: Vec3 = t.iter().map(|&v| block.mesh.nodes[v]).sum::<Vec3>() / 4.0;
            if centroid.x < 0.0 && centroid.z > -0.005 {
                stiff
            } else {
                soft
            }
        })
        .collect();
    let prescribed: Vec<bool> = block.fixed.iter().flat_map(|&f| [f; 3]).collect();
    let laws = materials
        .iter()
        .map(|m| Hyperelastic::new(LawKind::Linear, m))
        .collect();
    let statics = NonlinearStatics::new(&block.mesh, laws, prescribed.clone())
        .unwrap()
        .with_nodal_pressure(&block.mesh);
    assert!(statics.has_nodal_pressure());
    let loads = block.loads(Vec3::new(0.2, 0.1, -1.0) * 1e-3);
    let mut u = vec![Vec3::zeros(); block.mesh.nodes.len()];
    statics
        .solve(&mut u, &loads, &NewtonOptions::default())
        .unwrap();
    let nodal = block.linear_of(&materials, Pressure::Nodal, &loads);
    let element = block.linear_of(&materials, Pressure::Element, &loads);
    let diff: Vec<Vec3> = u.iter().zip(&nodal).map(|(a, b)| a - b).collect();
    assert!(
        largest(&diff) < 1e-9 * largest(&nodal),
        "{}",
        largest(&diff)
    );
    let top_z = |u: &[Vec3]| -> f64 { block.top_nodes().iter().map(|&v| u[v].z).sum() };
    println!(
        "mean top deflection: nodal {:.4e} m, element {:.4e} m",
        top_z(&nodal),
        top_z(&element)
    );
    // Both press down; nodal pressure, without locking, further.
    assert!(top_z(&nodal) / top_z(&element) > 1.1);

    // At small strain the large-strain laws' nodal volume is the linear nodal pressure:
    // neo-Hookean with the same two materials, under a load a thousandth as large,
    // deflects as the linear solve to first order in the strain.
    let laws = materials
        .iter()
        .map(|m| Hyperelastic::new(LawKind::NeoHookean, m))
        .collect();
    let statics = NonlinearStatics::new(&block.mesh, laws, prescribed)
        .unwrap()
        .with_nodal_pressure(&block.mesh);
    let small: Vec<Vec3> = loads.iter().map(|f| f * 1e-3).collect();
    let mut u = vec![Vec3::zeros(); block.mesh.nodes.len()];
    let loose = NewtonOptions {
        relative: 1e-8,
        ..NewtonOptions::default()
    };
    statics.solve(&mut u, &small, &loose).unwrap();
    let linear: Vec<Vec3> = nodal.iter().map(|x| x * 1e-3).collect();
    let diff: Vec<Vec3> = u.iter().zip(&linear).map(|(a, b)| a - b).collect();
    let strain = largest(&linear) / 0.005;
    println!(
        "neo-Hookean, nodal volume, strain {strain:.1e}: off the linear nodal solve by {:.2e}",
        largest(&diff) / largest(&linear)
    );
    assert!(largest(&diff) < 20.0 * strain * largest(&linear));
}

/// The nodal-averaged volume at large strain: the internal forces are the energy's
/// gradient and the tangent the forces' (central differences), over two materials and a
/// deformation that compresses some nodes' volume by a quarter and rotates others.
#[test]
fn nodal_volume_forces_and_tangent_are_the_energys_derivatives() {
    let block = Block::of_cells(0.005);
    let n = block.mesh.nodes.len();
    let (soft, stiff) = (material(0.45), Material::new(2.4e5, 0.45, 1000.0).unwrap());
    let laws: Vec<Hyperelastic> = block
        .mesh
        .tets
        .iter()
        .enumerate()
        .map(|(e, _)| {
            if e % 5 == 0 {
                Hyperelastic::new(LawKind::VerondaWestmann { stiffening: 5.0 }, &stiff)
            } else {
                Hyperelastic::new(LawKind::NeoHookean, &soft)
            }
        })
        .collect();
    let prescribed: Vec<bool> = block.fixed.iter().flat_map(|&f| [f; 3]).collect();
    let statics = NonlinearStatics::new(&block.mesh, laws, prescribed.clone())
        .unwrap()
        .with_nodal_pressure(&block.mesh);
    let u: Vec<Vec3> = block
        .mesh
        .nodes
        .iter()
        .enumerate()
        .map(|(v, p)| {
            if block.fixed[v] {
                return Vec3::zeros();
            }
            // Above the fixed base (z = −1 cm): turned up to 20° about z at the top and
            // compressed by a quarter, plus a ripple.
            let height = (p.z + 0.01) / 0.01;
            let (s, c) = (20f64.to_radians() * height).sin_cos();
            Vec3::new(
                c * p.x - s * p.y - p.x,
                s * p.x + c * p.y - p.y,
                -0.25 * (p.z + 0.01),
            ) + Vec3::new((v as f64).sin(), (1.3 * v as f64).cos(), 0.5) * 2e-4
        })
        .collect();
    let zero = vec![Vec3::zeros(); n];
    let forces = statics.internal_forces(&u).unwrap();
    let k = statics.tangent(&u);
    let h = 1e-8;
    for (node, axis) in [(n / 3, 0), (n / 2, 2), (2 * n / 3, 1)] {
        let d = 3 * node + axis;
        if prescribed[d] {
            continue;
        }
        let (mut up, mut down) = (u.clone(), u.clone());
        up[node][axis] += h;
        down[node][axis] -= h;
        let slope = (statics.energy(&up, &zero).unwrap() - statics.energy(&down, &zero).unwrap())
            / (2.0 * h);
        assert!(
            (slope - forces[node][axis]).abs() < 1e-5 * forces[node][axis].abs().max(1e-3),
            "∂Π/∂u[{d}] {slope} against the force {}",
            forces[node][axis]
        );
        let (fu, fd) = (
            statics.internal_forces(&up).unwrap(),
            statics.internal_forces(&down).unwrap(),
        );
        let column: Vec<f64> = (0..3 * n)
            .map(|i| (fu[i / 3][i % 3] - fd[i / 3][i % 3]) / (2.0 * h))
            .collect();
        let dense = k.to_dense();
        let worst = (0..3 * n)
            .filter(|&i| !prescribed[i])
            .map(|i| (dense[(i, d)] - column[i]).abs())
            .fold(0.0, f64::max);
        let scale = column.iter().fold(0.0f64, |a, x| a.max(x.abs()));
        assert!(
            worst < 1e-5 * scale,
            "tangent column {d} off by {worst} of {scale}"
        );
    }
}

#[test]
fn newton_converges_quadratically() {
    let block = Block::new();
    let m = material(0.45);
    // About 20 % mean strain: far from linear.
    let loads = block.loads(Vec3::new(0.3, 0.1, -1.0) * (m.young * 0.2 * 4e-4 / 25.0));
    for kind in [
        LawKind::NeoHookean,
        LawKind::VerondaWestmann { stiffening: 5.0 },
    ] {
        let statics = block.statics(kind, &m);
        let mut u = vec![Vec3::zeros(); block.mesh.nodes.len()];
        let report = statics
            .solve(
                &mut u,
                &loads,
                &NewtonOptions {
                    relative: 1e-13,
                    max_iterations: 30,
                },
            )
            .unwrap();
        // Once in the basin (full steps, e < 1e-2) and above round-off, e_{k+1} ≤ C e_k².
        crate::support::newton::assert_quadratic(&report, 0, 1e-13, &format!("{kind:?}"));
        assert!(
            largest(&u) > 1e-3,
            "the load should deform the block by millimetres"
        );
    }
}

#[test]
fn bad_input_is_an_error_naming_it() {
    let block = Block::new();
    let m = material(0.3);
    let law = Hyperelastic::new(LawKind::NeoHookean, &m);
    let n = block.mesh.nodes.len();
    let err = NonlinearStatics::new(&block.mesh, vec![law; 3], vec![false; 3 * n]).unwrap_err();
    assert!(
        matches!(err, NonlinearError::LawCount { given: 3, .. }),
        "{err}"
    );
    let statics = block.statics(LawKind::NeoHookean, &m);
    // A starting displacement that pushes the top centre node one and a half cells down,
    // through the layer below it, inverts the elements around it.
    let mut u = vec![Vec3::zeros(); n];
    let top = block.top_nodes();
    let centre = *top
        .iter()
        .min_by(|&&a, &&b| {
            let r = |v: usize| block.mesh.nodes[v].xy().norm();
            r(a).total_cmp(&r(b))
        })
        .unwrap();
    u[centre].z = -0.0075;
    let inverted = block
        .mesh
        .tets
        .iter()
        .enumerate()
        .filter(|(e, _)| statics.deformation_gradient(*e, &u).determinant() <= 0.0)
        .count();
    assert!(inverted > 0);
    // The laws continue through inversion, so the solve pushes the elements back and
    // ends where it ends from rest under the same (small) load.
    let loads = block.loads(Vec3::new(0.0, 0.0, -1e-3));
    statics
        .solve(&mut u, &loads, &NewtonOptions::default())
        .expect("an inverted start is pushed back");
    let mut from_rest = vec![Vec3::zeros(); n];
    statics
        .solve(&mut from_rest, &loads, &NewtonOptions::default())
        .unwrap();
    let diff: Vec<Vec3> = u.iter().zip(&from_rest).map(|(a, b)| a - b).collect();
    assert!(
        largest(&diff) < 1e-9 * largest(&from_rest),
        "{}",
        largest(&diff)
    );
    // A displacement that is not finite has no energy.
    u[n / 2].x = f64::NAN;
    let err = statics
        .solve(&mut u, &vec![Vec3::zeros(); n], &NewtonOptions::default())
        .unwrap_err();
    assert!(matches!(err, NonlinearError::NonFinite(_)), "{err}");
    // A sphere without a size, or touching a node the mesh does not have.
    let zero = vec![Vec3::zeros(); n];
    let press = |radius: f64, candidates: &[usize]| {
        let mut u = zero.clone();
        let mut state = SphereContactState::default();
        let options = NewtonOptions::default();
        let centre = Vec3::new(0.0, 0.0, 0.004);
        statics
            .press_sphere(
                &mut u,
                &zero,
                RigidSphere { centre, radius },
                candidates,
                &mut state,
                &options,
            )
            .unwrap_err()
            .to_string()
    };
    for radius in [0.0, -1.0, f64::NAN] {
        let err = press(radius, &block.top_nodes());
        assert!(err.contains("radius must be positive and finite"), "{err}");
    }
    let err = press(0.005, &[n + 2]);
    let needle = format!(
        "sphere contact candidate node {}: the mesh has {n} nodes",
        n + 2
    );
    assert!(err.contains(&needle), "{err}");
}

/// A probe's patch pressed to a depth (one linear equality constraint): with the linear
/// law, the multiplier and the field equal the direct solve λ = d / (cᵀK⁻¹c), u = λ K⁻¹c;
/// with the large-strain laws, the pressed patch sits exactly at its depth, and the
/// reactions at the fixed base balance the probe's force.
#[test]
fn a_patch_pressed_to_a_depth_matches_the_direct_solve_and_balances() {
    let block = Block::new();
    let m = material(0.45);
    let n = block.mesh.nodes.len();
    // The top node at the centre and its four top neighbours, weights ½ and ⅛.
    let top = block.top_nodes();
    let near = |v: usize| block.mesh.nodes[v].xy().norm();
    let centre = *top
        .iter()
        .min_by(|a, b| near(**a).total_cmp(&near(**b)))
        .unwrap();
    let ring: Vec<usize> = top
        .iter()
        .copied()
        .filter(|&v| (near(v) - 0.005).abs() < 1e-9)
        .collect();
    assert_eq!(ring.len(), 4);
    let mut coefficients = vec![(3 * centre + 2, 0.5)];
    coefficients.extend(ring.iter().map(|&v| (3 * v + 2, 0.125)));
    let zero = vec![Vec3::zeros(); n];
    for (kind, depth) in [
        (LawKind::Linear, 1e-4),
        (LawKind::NeoHookean, 3e-3),
        (LawKind::VerondaWestmann { stiffening: 5.0 }, 3e-3),
    ] {
        let statics = block.statics(kind, &m);
        let mut press = LinearConstraint {
            coefficients: coefficients.clone(),
            value: -depth,
            multiplier: 0.0,
        };
        let mut u = zero.clone();
        let report = statics
            .solve_constrained(&mut u, &zero, Some(&mut press), &NewtonOptions::default())
            .unwrap();
        let pressed: f64 = coefficients.iter().map(|&(d, w)| w * u[d / 3][d % 3]).sum();
        assert!(
            (pressed + depth).abs() <= 1e-10 * depth,
            "{kind:?}: patch at {pressed}"
        );
        let f = statics.internal_forces(&u).unwrap();
        let base: Vec3 = (0..n).filter(|&v| block.fixed[v]).map(|v| f[v]).sum();
        println!(
            "{kind:?}: patch pressed {:.2} mm: {:.4} N, base reaction {:.4} N, {} iterations",
            depth * 1e3,
            press.multiplier,
            -base.z,
            report.steps.len()
        );
        // Σ f_int = 0 over the body: the base carries what the probe pushes.
        assert!((base.z + press.multiplier).abs() <= 1e-8 * press.multiplier.abs());
        if kind == LawKind::Linear {
            // Direct: x = K⁻¹c, λ = value / cᵀx.
            let mut c = vec![Vec3::zeros(); n];
            for &(d, w) in &coefficients {
                c[d / 3][d % 3] += w;
            }
            let x = block.linear(&m, &c);
            let cx: f64 = coefficients.iter().map(|&(d, w)| w * x[d / 3][d % 3]).sum();
            let lambda = -depth / cx;
            assert!(
                (press.multiplier / lambda - 1.0).abs() <= 1e-9,
                "{} vs {lambda}",
                press.multiplier
            );
            let miss = u
                .iter()
                .zip(&x)
                .map(|(a, b)| (a - b * lambda).norm())
                .fold(0.0, f64::max);
            assert!(miss <= 1e-9 * depth, "{miss:e}");
        }
    }
}

/// Krouskop et al. 1998: tangent moduli (Pa) at 1 Hz about 5 % and 20 % precompression.
const GLANDULAR: [f64; 2] = [28e3, 48e3];
const CARCINOMA: [f64; 2] = [106e3, 558e3];

#[test]
fn the_shipped_breast_scene_meets_krouskops_moduli() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/breast.toml");
    let scene = palpa::scene::Scene::load(&path).unwrap();
    let inputs = palpa::scene::FemInputs::resolve(&scene).unwrap();
    for (young, published) in [(24.89e3, GLANDULAR), (85.0e3, CARCINOMA)] {
        let e = inputs
            .per_tet
            .iter()
            .position(|m| m.young == young)
            .unwrap_or_else(|| panic!("no tetrahedron of E = {young} Pa"));
        let law = inputs.laws[e];
        assert!(
            matches!(law.kind, LawKind::VerondaWestmann { .. }),
            "{law:?}"
        );
        for (precompression, modulus) in [0.05, 0.20].into_iter().zip(published) {
            // The nominal tangent dP₁₁/dλ of uniaxial compression, by central difference.
            let (stretch, h) = (1.0 - precompression, 1e-5);
            let tangent =
                (uniaxial(&law, stretch + h).0 - uniaxial(&law, stretch - h).0) / (2.0 * h);
            eprintln!(
                "E = {young} Pa at {:.0} % precompression: tangent {tangent:.0} Pa, published {modulus} Pa",
                precompression * 100.0
            );
            assert!(
                (tangent / modulus - 1.0).abs() < 0.01,
                "E = {young} Pa at {precompression}: {tangent} Pa against {modulus} Pa"
            );
        }
    }
}

#[test]
fn several_constraints_match_the_direct_solve_and_their_multipliers_balance() {
    let block = Block::new();
    let m = material(0.45);
    let n = block.mesh.nodes.len();
    let top = block.top_nodes();
    // Three top nodes, each along its own direction (a sphere's node rows are like this).
    let nodes = [top[0], top[top.len() / 2], top[top.len() - 1]];
    let directions = [
        Vec3::new(0.0, 0.0, 1.0),
        Vec3::new(0.3, 0.0, 1.0).normalize(),
        Vec3::new(0.0, -0.4, 1.0).normalize(),
    ];
    let values = [-1e-4, -2e-4, 5e-5];
    let constraint = |i: usize| LinearConstraint {
        coefficients: (0..3)
            .map(|a| (3 * nodes[i] + a, directions[i][a]))
            .collect(),
        value: values[i],
        multiplier: 0.0,
    };
    let zero = vec![Vec3::zeros(); n];
    let statics = block.statics(LawKind::Linear, &m);
    let mut constraints: Vec<LinearConstraint> = (0..3).map(constraint).collect();
    let mut u = zero.clone();
    statics
        .solve_with_constraints(&mut u, &zero, &mut constraints, &NewtonOptions::default())
        .unwrap();
    // Direct: x_j = K⁻¹c_j, then (cᵢᵀx_j) λ = values, u = Σ λ_j x_j.
    let x: Vec<Vec<Vec3>> = (0..3)
        .map(|j| {
            let mut c = vec![Vec3::zeros(); n];
            c[nodes[j]] = directions[j];
            block.linear(&m, &c)
        })
        .collect();
    let s = nalgebra::Matrix3::from_fn(|i, j| directions[i].dot(&x[j][nodes[i]]));
    let lambda = s.lu().solve(&nalgebra::Vector3::from(values)).unwrap();
    for (k, c) in constraints.iter().enumerate() {
        assert!(
            (c.multiplier - lambda[k]).abs() <= 1e-9 * lambda.amax(),
            "constraint {k}: {} vs {}",
            c.multiplier,
            lambda[k]
        );
        let reached = directions[k].dot(&u[nodes[k]]);
        assert!((reached - values[k]).abs() <= 1e-10 * 2e-4, "{reached}");
    }
    let miss = (0..n)
        .map(|v| (u[v] - (0..3).map(|j| x[j][v] * lambda[j]).sum::<Vec3>()).norm())
        .fold(0.0, f64::max);
    assert!(miss <= 1e-9 * 2e-4, "{miss:e}");
    // A large-strain law balances too: Σ f_int = 0, the base carries the three forces.
    let statics = block.statics(LawKind::VerondaWestmann { stiffening: 5.0 }, &m);
    let mut constraints: Vec<LinearConstraint> = (0..3)
        .map(|i| LinearConstraint {
            value: 20.0 * values[i],
            ..constraint(i)
        })
        .collect();
    let mut u = zero.clone();
    statics
        .solve_with_constraints(&mut u, &zero, &mut constraints, &NewtonOptions::default())
        .unwrap();
    let f = statics.internal_forces(&u).unwrap();
    let base: Vec3 = (0..n).filter(|&v| block.fixed[v]).map(|v| f[v]).sum();
    let applied: Vec3 = constraints
        .iter()
        .zip(&directions)
        .map(|(c, d)| d * c.multiplier)
        .sum();
    assert!(
        (base + applied).norm() <= 1e-8 * applied.norm(),
        "{base} vs {applied}"
    );
}

/// A 2 × 2 × 1 cm block of 1.25 mm cells fixed at its base, for sphere presses.
fn fine_block() -> Block {
    Block::of_cells(0.00125)
}

/// A sphere touching one node only (its contact circle, √(R d) = 0.7 mm, inside the
/// 1.25 mm cells) pushes that node alone, frictionless: the direct sparse solve under
/// the found force λ d at the node gives the solver's whole displacement field and
/// puts the node on the sphere with d its normal there.
#[test]
fn a_sphere_on_one_node_matches_the_direct_solve() {
    let block = fine_block();
    let m = material(0.45);
    let n = block.mesh.nodes.len();
    let top = block.top_nodes();
    let node = *top
        .iter()
        .min_by(|a, b| {
            block.mesh.nodes[**a]
                .norm()
                .total_cmp(&block.mesh.nodes[**b].norm())
        })
        .unwrap();
    let (radius, depth) = (0.005, 1e-4);
    let centre = block.mesh.nodes[node] + Vec3::z() * (radius - depth);
    let statics = block.statics(LawKind::Linear, &m);
    let zero = vec![Vec3::zeros(); n];
    let mut u = zero.clone();
    let mut state = SphereContactState::default();
    statics
        .press_sphere(
            &mut u,
            &zero,
            RigidSphere { centre, radius },
            &top,
            &mut state,
            &NewtonOptions::default(),
        )
        .unwrap();
    assert_eq!(state.rows.len(), 1, "{:?}", state.rows);
    let row = state.rows[0];
    assert_eq!(row.node, node);
    let mut push = zero.clone();
    push[node] = row.normal * row.multiplier;
    let direct = block.linear(&m, &push);
    let miss = u
        .iter()
        .zip(&direct)
        .map(|(a, b)| (a - b).norm())
        .fold(0.0, f64::max);
    assert!(miss <= 1e-9 * depth, "field off by {miss:e} m");
    let on = block.mesh.nodes[node] + direct[node] - centre;
    assert!((on.norm() - radius).abs() <= 1e-9 * depth, "{on:?}");
    assert!(
        (on / radius - row.normal).norm() <= 1e-9,
        "{on:?} vs {:?}",
        row.normal
    );
    println!(
        "one node: {:.6} N along {:?}, slid {:.2} µm",
        row.multiplier,
        row.normal,
        direct[node].xy().norm() * 1e6
    );
}

/// A sphere pressed over many nodes meets the contact conditions for every law: no
/// surface node inside the sphere, every row pushing (λ ≥ 0) with its node on the
/// sphere, the base reaction balancing the push; and the stiffening law pushes back
/// hardest.
#[test]
fn a_pressed_sphere_meets_the_contact_conditions() {
    let block = fine_block();
    let m = material(0.45);
    let n = block.mesh.nodes.len();
    let top = block.top_nodes();
    let (radius, depth) = (0.005, 0.0015);
    let centre = Vec3::new(0.0003, -0.0002, radius - depth);
    let zero = vec![Vec3::zeros(); n];
    let mut pushes = Vec::new();
    for kind in [
        LawKind::Linear,
        LawKind::NeoHookean,
        LawKind::VerondaWestmann { stiffening: 5.0 },
    ] {
        let statics = block.statics(kind, &m);
        let mut u = zero.clone();
        let mut state = SphereContactState::default();
        // Pressed in three increments, each starting from the last contact set.
        for k in 1..=3 {
            let at = centre + Vec3::z() * depth * (1.0 - k as f64 / 3.0);
            let options = NewtonOptions::default();
            statics
                .press_sphere(
                    &mut u,
                    &zero,
                    RigidSphere { centre: at, radius },
                    &top,
                    &mut state,
                    &options,
                )
                .unwrap();
        }
        let on = |v: usize| (block.mesh.nodes[v] + u[v] - centre).norm();
        let deepest = top.iter().map(|&v| on(v)).fold(f64::INFINITY, f64::min);
        assert!(
            deepest >= radius * (1.0 - 1e-6),
            "{kind:?}: a node at {deepest}"
        );
        assert!(state.rows.len() >= 9, "{kind:?}: {} rows", state.rows.len());
        for r in &state.rows {
            assert!(r.multiplier >= 0.0, "{kind:?}: row {r:?} pulls");
            assert!(
                (on(r.node) - radius).abs() <= 1e-9 * radius,
                "{kind:?}: {r:?} off"
            );
        }
        let push = state.force_on_tissue();
        let f = statics.internal_forces(&u).unwrap();
        let base: Vec3 = (0..n).filter(|&v| block.fixed[v]).map(|v| f[v]).sum();
        println!(
            "{kind:?}: {} rows, {:.5} N, base {:.5} N, {} rounds",
            state.rows.len(),
            -push.z,
            base.z,
            state.rounds
        );
        assert!(
            (base + push).norm() <= 1e-7 * push.norm(),
            "{base:?} vs {push:?}"
        );
        pushes.push(-push.z);
    }
    assert!(pushes[2] > pushes[1], "{pushes:?}");
}
