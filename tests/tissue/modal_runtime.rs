//! Modal runtime: exact oscillator stepping against analytic solutions, and
//! constraints.

use palpa::modal::{ModeTransition, Oscillators};

/// Analytic response of z̈ + c ż + λ z = g (g constant) from (z0, v0) at time t,
/// by the closed form of each damping regime (independent of the matrix exponential).
fn analytic(lambda: f64, c: f64, g: f64, z0: f64, v0: f64, t: f64) -> (f64, f64) {
    if lambda == 0.0 {
        if c == 0.0 {
            return (z0 + v0 * t + 0.5 * g * t * t, v0 + g * t);
        }
        let e = (-c * t).exp();
        let vinf = g / c;
        return (
            z0 + vinf * t + (v0 - vinf) * (1.0 - e) / c,
            vinf + (v0 - vinf) * e,
        );
    }
    let zs = g / lambda;
    let (y0, v0) = (z0 - zs, v0);
    let disc = c * c - 4.0 * lambda;
    let (y, v) = if disc < 0.0 {
        let wd = (-disc).sqrt() / 2.0;
        let s = -c / 2.0;
        let a = y0;
        let b = (v0 - s * y0) / wd;
        let e = (s * t).exp();
        let (sn, cs) = (wd * t).sin_cos();
        (
            e * (a * cs + b * sn),
            e * (s * (a * cs + b * sn) + wd * (-a * sn + b * cs)),
        )
    } else if disc == 0.0 {
        let s = -c / 2.0;
        let b = v0 - s * y0;
        let e = (s * t).exp();
        (e * (y0 + b * t), e * (s * (y0 + b * t) + b))
    } else {
        let r1 = (-c + disc.sqrt()) / 2.0;
        let r2 = (-c - disc.sqrt()) / 2.0;
        let a1 = (v0 - r2 * y0) / (r1 - r2);
        let a2 = (r1 * y0 - v0) / (r1 - r2);
        (
            a1 * (r1 * t).exp() + a2 * (r2 * t).exp(),
            a1 * r1 * (r1 * t).exp() + a2 * r2 * (r2 * t).exp(),
        )
    };
    (y + zs, v)
}

#[test]
fn transition_matches_closed_form_in_every_damping_regime() {
    let h = 1e-3;
    // (λ, c): rigid, rigid damped, under-, critically-, over-damped, stiff
    // under-damped, stiff over-damped.
    let lambda_crit: f64 = 400.0;
    let cases = [
        (0.0, 0.0),
        (0.0, 3.0),
        (1.0e4, 2.0),
        (lambda_crit, 2.0 * lambda_crit.sqrt()),
        (100.0, 50.0),
        (4.0e7, 10.0),
        (1.0e6, 1.0e5),
    ];
    for (lambda, c) in cases {
        let tr = ModeTransition::new(lambda, c, h);
        for (z0, v0, g) in [
            (1.0, 0.0, 0.0),
            (0.0, 1.0, 0.0),
            (0.0, 0.0, 1.0),
            (0.3, -2.0, 5.0),
        ] {
            let (z, v) = tr.apply(z0, v0, g);
            let (za, va) = analytic(lambda, c, g, z0, v0, h);
            let scale_z = za
                .abs()
                .max(z0.abs() + v0.abs() * h + g.abs() * h * h)
                .max(1e-300);
            let scale_v = va
                .abs()
                .max(v0.abs() + lambda.sqrt() * z0.abs() + g.abs() * h)
                .max(1e-300);
            assert!(
                (z - za).abs() <= 1e-11 * scale_z,
                "λ={lambda} c={c}: z {z} vs {za}"
            );
            assert!(
                (v - va).abs() <= 1e-11 * scale_v,
                "λ={lambda} c={c}: v {v} vs {va}"
            );
        }
    }
}

#[test]
fn transition_is_continuous_through_critical_damping() {
    // The closed forms are ill-conditioned next to c² = 4λ; the exponential is not.
    let (lambda, h) = (400.0f64, 1e-3);
    let crit = 2.0 * lambda.sqrt();
    for rel in [-1e-6, -1e-9, -1e-12, 1e-12, 1e-9, 1e-6] {
        let tr = ModeTransition::new(lambda, crit * (1.0 + rel), h);
        for (z0, v0, g) in [(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)] {
            let (z, v) = tr.apply(z0, v0, g);
            let (za, va) = analytic(lambda, crit, g, z0, v0, h);
            // d(z, ż)/dc is O(h·scale): the change must be of order rel, no larger.
            assert!(
                (z - za).abs() <= (10.0 * rel.abs() + 1e-13) * (za.abs() + h * h),
                "rel {rel}: z {z} vs {za}"
            );
            assert!(
                (v - va).abs() <= (10.0 * rel.abs() + 1e-13) * (va.abs() + h),
                "rel {rel}: v {v} vs {va}"
            );
        }
    }
}

#[test]
fn undamped_free_vibration_conserves_energy_over_a_million_steps() {
    let lambda: Vec<f64> = [0.5, 7.0, 60.0, 300.0]
        .iter()
        .map(|f| (2.0 * std::f64::consts::PI * f).powi(2))
        .collect();
    let mut osc = Oscillators::new(&lambda, 0.0, 0.0, 1e-3);
    osc.set_state(&[1e-3, -2e-3, 5e-4, 1e-4], &[0.1, 0.0, -0.3, 2.0]);
    let e0 = osc.energy();
    let g = vec![0.0; lambda.len()];
    let mut worst: f64 = 0.0;
    for n in 0..1_000_000 {
        osc.step(&g);
        if n % 1000 == 999 {
            worst = worst.max((osc.energy() - e0).abs() / e0);
        }
    }
    println!("relative energy drift after 1e6 steps of 1 ms: {worst:.3e}");
    assert!(worst < 1e-9, "energy drift {worst:e}");
}

#[test]
fn damped_envelope_matches_analytic_decay_of_each_mode() {
    let lambda: Vec<f64> = [2.0, 15.0, 80.0]
        .iter()
        .map(|f| (2.0 * std::f64::consts::PI * f).powi(2))
        .collect();
    let (alpha1, alpha2) = (2e-4, 0.5);
    let dt = 1e-3;
    let mut osc = Oscillators::new(&lambda, alpha1, alpha2, dt);
    let z0 = [1e-3, 1e-3, 1e-3];
    osc.set_state(&z0, &[0.0; 3]);
    let g = [0.0; 3];
    for n in 1..=3000 {
        osc.step(&g);
        let t = n as f64 * dt;
        for i in 0..3 {
            let c = alpha1 * lambda[i] + alpha2;
            // Envelope √(z² + (ż + c z/2)²/ω_d²) of an under-damped mode decays as e^{−ct/2}.
            let wd = (lambda[i] - c * c / 4.0).sqrt();
            let (z, v) = (osc.z()[i], osc.zd()[i]);
            let env = (z * z + ((v + c * z / 2.0) / wd).powi(2)).sqrt();
            let env0 = (z0[i] * z0[i] + (c * z0[i] / 2.0 / wd).powi(2)).sqrt();
            let want = env0 * (-c * t / 2.0).exp();
            assert!(
                (env - want).abs() <= 1e-9 * env0,
                "mode {i} t={t}: {env} vs {want}"
            );
        }
    }
}

#[test]
fn ten_small_steps_equal_one_large_step() {
    let lambda = [0.0, 3.0e3, 1.0e5, 4.0e6];
    let (alpha1, alpha2) = (1e-4, 2.0);
    let g = [1.0, -2.0, 30.0, 400.0];
    let mut fine = Oscillators::new(&lambda, alpha1, alpha2, 1e-4);
    let mut coarse = Oscillators::new(&lambda, alpha1, alpha2, 1e-3);
    let z0 = [1e-3, 2e-3, -1e-3, 1e-4];
    let v0 = [0.1, -0.2, 0.3, 0.5];
    fine.set_state(&z0, &v0);
    coarse.set_state(&z0, &v0);
    for _ in 0..10 {
        fine.step(&g);
    }
    coarse.step(&g);
    let mut any = coarse.clone();
    any.set_state(&z0, &v0);
    any.step_by(1e-3, &g);
    for i in 0..lambda.len() {
        let sz = coarse.z()[i].abs().max(1e-12);
        let sv = coarse.zd()[i].abs().max(1e-9);
        assert!(
            (fine.z()[i] - coarse.z()[i]).abs() / sz <= 1e-12,
            "mode {i} z: {} vs {}",
            fine.z()[i],
            coarse.z()[i]
        );
        assert!(
            (fine.zd()[i] - coarse.zd()[i]).abs() / sv <= 1e-12,
            "mode {i} ż: {} vs {}",
            fine.zd()[i],
            coarse.zd()[i]
        );
        assert_eq!(any.z()[i], coarse.z()[i]);
    }
}

mod with_fem {
    use std::path::Path;
    use std::sync::Arc;

    use faer::Mat;
    use palpa::contact::{ContactPatch, SurfaceBvh};
    use palpa::fem::ComplianceColumns;
    use palpa::fem::Support;
    use palpa::fem::{Axis, Factor, FemSystem, Fix, Material, MaterialMap, Ordering};
    use palpa::mesh::generate::box_mesh;

    use crate::support::block::{Block, BOTTOM};
    use palpa::mesh::TetMesh;
    use palpa::modal::{
        compute_modes, ModalBasis, ModalParams, ModalRuntime, Oscillators, Timings,
    };
    use palpa::tissue::{ModelError, PointConstraint, PointLoad, TissueGeometry, TissueModel};
    use palpa::Vec3;

    struct Fixture {
        mesh: TetMesh,
        system: FemSystem,
        basis: ModalBasis,
        factor: Arc<Factor>,
        triangles: Vec<[usize; 3]>,
        surface: Vec<usize>,
    }

    fn fixture(mesh: TetMesh, fix: Fix, young: f64, k: usize) -> Fixture {
        let material = MaterialMap::uniform(Material::new(young, 0.45, 1000.0).unwrap());
        let block = Block::clamped(mesh, &material, fix);
        let (basis, _, _) = compute_modes(
            &block.system,
            k,
            Ordering::default(),
            &mut Timings::default(),
        )
        .unwrap();
        Fixture {
            factor: block.factor(),
            mesh: block.mesh,
            system: block.system,
            basis,
            triangles: block.triangles,
            surface: block.surface_nodes,
        }
    }

    /// The shared block ([`crate::support::block::block`]), 20 modes.
    fn block_fixture() -> Fixture {
        let size = crate::support::block::SIZE;
        fixture(box_mesh(size, [6, 6, 3]).unwrap(), BOTTOM, 5e3, 20)
    }

    fn runtime(fx: &Fixture, params: ModalParams, residual: bool) -> ModalRuntime {
        let columns = residual.then(|| {
            ComplianceColumns::new(
                fx.factor.clone(),
                fx.system.dofs.clone(),
                &fx.system.positions,
                32,
            )
            .unwrap()
        });
        ModalRuntime::new(
            TissueGeometry {
                rest: fx.mesh.nodes.clone(),
                triangles: fx.triangles.clone(),
                surface_nodes: fx.surface.clone(),
            },
            &fx.basis.eigenvalues,
            fx.basis.shapes.as_ref(),
            params,
            columns,
        )
        .unwrap()
    }

    fn point_displacement(model: &mut ModalRuntime, nodes: &[usize; 3], w: &[f64; 3]) -> Vec3 {
        let mut u = [Vec3::zeros(); 3];
        model.displacements(nodes, &mut u);
        u[0] * w[0] + u[1] * w[1] + u[2] * w[2]
    }

    #[test]
    fn new_contact_force_and_contact_positions_are_exact_at_once_the_rest_once_complete() {
        let size = Vec3::new(0.06, 0.06, 0.03);
        let fx = block_fixture();
        let params = ModalParams {
            max_rows: 3,
            ..ModalParams::default()
        };
        // Lazy: one supernode of back solve a step; eager: every column complete.
        let mut lazy = runtime(&fx, params, true);
        lazy.columns().unwrap().set_completion_budget(1);
        let mut eager = runtime(&fx, params, true);
        eager.columns().unwrap().precompute(&fx.surface).unwrap();
        let bvh = SurfaceBvh::build(fx.triangles.clone(), &fx.mesh.nodes);
        let c = bvh
            .closest_point(&Vec3::new(0.031, 0.027, size.z), 1e-6, &fx.mesh.nodes)
            .unwrap();
        let nodes = fx.triangles[c.triangle];
        // A node contacted earlier, its columns complete: it reads the new load from them.
        let earlier = *fx
            .surface
            .iter()
            .find(|&&v| fx.mesh.nodes[v].z == size.z && !nodes.contains(&v))
            .unwrap();
        lazy.columns().unwrap().precompute(&[earlier]).unwrap();
        let hold = PointConstraint::hold(nodes, c.bary, c.point + Vec3::new(2e-4, 0.0, -1e-3));
        let (mut fl, mut fe) = ([Vec3::zeros()], [Vec3::zeros()]);
        let mut steps = 0;
        loop {
            lazy.advance(5e-3, &[hold], &mut fl).unwrap();
            eager.advance(5e-3, &[hold], &mut fe).unwrap();
            steps += 1;
            assert!(
                (fl[0] - fe[0]).norm() <= 1e-10 * fe[0].norm(),
                "step {steps}: {:?} vs {:?}",
                fl[0],
                fe[0]
            );
            if lazy.columns().unwrap().pending() == 0 {
                break;
            }
            // Pending: the contacted (cached) nodes already carry the residual field,
            // so the held point sits on its target and they match the model with
            // complete columns; the bound covers what is drawn.
            let u = point_displacement(&mut lazy, &nodes, &c.bary);
            assert!(
                (u - (hold.target - c.point)).norm() <= 1e-9 * 1e-3,
                "step {steps}: {u:?}"
            );
            let mut ul = vec![Vec3::zeros(); fx.surface.len()];
            let mut ue = ul.clone();
            lazy.displacements(&fx.surface, &mut ul);
            eager.displacements(&fx.surface, &mut ue);
            let scale = ue.iter().map(|u| u.norm()).fold(0.0, f64::max);
            let mut q = vec![0.0; lazy.n_modes()];
            lazy.visual_coordinates(&mut q);
            let mut cached = 0;
            for ((&v, a), b) in fx.surface.iter().zip(&ul).zip(&ue) {
                if lazy.columns().unwrap().is_cached(v) {
                    cached += 1;
                    assert!((a - b).norm() <= 1e-8 * scale, "step {steps}, node {v}");
                } else {
                    // Elsewhere the new load's modal part stays, and the visual
                    // coordinates alone draw the node (no residual correction).
                    let modal = Vec3::from_fn(|axis, _| {
                        lazy.mode_row(v, axis)
                            .iter()
                            .zip(&q)
                            .map(|(w, q)| w * q)
                            .sum()
                    });
                    assert!(
                        (a - modal).norm() <= 1e-12 * scale,
                        "step {steps}, node {v}"
                    );
                }
            }
            assert!(cached >= 4);
            let drawn = ul.iter().map(|u| u.norm()).fold(0.0, f64::max);
            assert!(lazy.displacement_bound() >= drawn);
        }
        assert!(steps > 2, "completed in {steps} steps");
        let mut ul = vec![Vec3::zeros(); fx.surface.len()];
        let mut ue = ul.clone();
        lazy.displacements(&fx.surface, &mut ul);
        eager.displacements(&fx.surface, &mut ue);
        let scale = ue.iter().map(|u| u.norm()).fold(0.0, f64::max);
        for (a, b) in ul.iter().zip(&ue) {
            assert!((a - b).norm() <= 1e-10 * scale);
        }
        let u = point_displacement(&mut lazy, &nodes, &c.bary);
        assert!((u - (hold.target - c.point)).norm() <= 1e-9 * 1e-3);
    }

    #[test]
    fn position_constraint_holds_every_step_and_release_gives_free_vibration() {
        let size = Vec3::new(0.06, 0.06, 0.03);
        let fx = block_fixture();
        for residual in [false, true] {
            let params = ModalParams {
                alpha1: 0.0,
                alpha2: 0.0,
                dt: 5e-3,
                max_rows: 12,
            };
            let mut model = runtime(&fx, params, residual);
            let bvh = SurfaceBvh::build(fx.triangles.clone(), &fx.mesh.nodes);
            let c = bvh
                .closest_point(&Vec3::new(0.031, 0.027, size.z), 1e-6, &fx.mesh.nodes)
                .unwrap();
            let nodes = fx.triangles[c.triangle];
            let mut f = [Vec3::zeros()];
            for n in 0..200 {
                // The held point is dragged along a path; it must be on it after every step.
                let s = n as f64 * 5e-3;
                let offset = Vec3::new(
                    5e-4 * s.sin(),
                    3e-4 * (2.0 * s).sin(),
                    -1e-3 * (1.0 - (-3.0 * s).exp()),
                );
                let hold = PointConstraint::hold(nodes, c.bary, c.point + offset);
                model.advance(5e-3, &[hold], &mut f).unwrap();
                let u = point_displacement(&mut model, &nodes, &c.bary);
                assert!(
                    (u - offset).norm() <= 1e-9 * offset.norm().max(1e-4),
                    "residual {residual}, step {n}: {u:?} vs {offset:?}"
                );
            }
            // Released: undamped free vibration of the modes, exactly as the bare
            // oscillators evolve it, with constant energy.
            let mut free = Oscillators::new(&fx.basis.eigenvalues, 0.0, 0.0, 5e-3);
            model.advance(5e-3, &[], &mut []).unwrap();
            free.set_state(model.oscillators().z(), model.oscillators().zd());
            let e0 = free.energy();
            assert!(e0 > 0.0);
            let zero = vec![0.0; free.len()];
            for _ in 0..1000 {
                model.advance(5e-3, &[], &mut []).unwrap();
                free.step(&zero);
            }
            assert_eq!(model.oscillators().z(), free.z());
            assert!((model.oscillators().energy() - e0).abs() <= 1e-9 * e0);
        }
    }

    #[test]
    fn velocity_and_acceleration_constraints_hit_their_targets() {
        use palpa::tissue::{ConstraintKind, Directions};
        let size = Vec3::new(0.06, 0.06, 0.03);
        let fx = block_fixture();
        let bvh = SurfaceBvh::build(fx.triangles.clone(), &fx.mesh.nodes);
        let c = bvh
            .closest_point(&Vec3::new(0.031, 0.027, size.z), 1e-6, &fx.mesh.nodes)
            .unwrap();
        let nodes = fx.triangles[c.triangle];
        let k = fx.basis.n_modes();
        // Point row of mode m along axis a: Σ_v w_v W̄[(v, a), m].
        let row = |a: usize, m: usize| -> f64 {
            (0..3)
                .map(|i| c.bary[i] * fx.basis.shapes[(3 * nodes[i] + a, m)])
                .sum()
        };
        let point = |q: &[f64]| Vec3::from_fn(|a, _| (0..k).map(|m| row(a, m) * q[m]).sum());
        let params = ModalParams {
            alpha1: 1e-3,
            alpha2: 2.0,
            dt: 5e-3,
            max_rows: 3,
        };
        let target_v = Vec3::new(2e-3, 0.0, -1e-2);
        let target_a = Vec3::new(0.0, 0.5, -1.0);
        for (kind, target) in [
            (ConstraintKind::Velocity, target_v),
            (ConstraintKind::Acceleration, target_a),
        ] {
            let mut model = runtime(&fx, params, false);
            let con = PointConstraint {
                support: palpa::fem::Support::triangle(nodes, c.bary),
                kind,
                directions: Directions::All,
                target,
                unilateral: false,
            };
            let mut f = [Vec3::zeros()];
            for n in 0..50 {
                model.advance(5e-3, &[con], &mut f).unwrap();
                let osc = model.oscillators();
                // Round-off scale of the constrained quantity (cancellation in
                // g − c ż − λ z grows as the point accelerates away).
                let scale: f64 = (0..k)
                    .map(|m| {
                        let w = Vec3::from_fn(|a, _| row(a, m)).norm();
                        w * (osc.zd()[m].abs() * (1.0 + osc.damping()[m])
                            + osc.lambda()[m] * osc.z()[m].abs())
                    })
                    .sum();
                let got = match kind {
                    ConstraintKind::Velocity => point(osc.zd()),
                    _ => {
                        // z̈ = g − c ż − λ z with g = W̄ᵀ F at the point.
                        let acc: Vec<f64> = (0..k)
                            .map(|m| {
                                let g: f64 = (0..3).map(|a| row(a, m) * f[0][a]).sum();
                                g - osc.damping()[m] * osc.zd()[m] - osc.lambda()[m] * osc.z()[m]
                            })
                            .collect();
                        point(&acc)
                    }
                };
                let tol = 1e-9 * target.norm() + 1e-12 * scale;
                assert!(
                    (got - target).norm() <= tol,
                    "{kind:?} step {n}: {got:?} vs {target:?}"
                );
            }
        }
    }

    /// Direct sparse solve: displacement of `node` along `n` per unit force along `n`
    /// there (m/N), K u = n e_node by the Cholesky factor.
    fn direct_compliance(fx: &Fixture, node: usize, n: &Vec3) -> f64 {
        direct_support_compliance(fx, &[(node, 1.0)], n)
    }

    /// The same for a load spread over weighted nodes (a contact patch): K u = Σ w_v n
    /// e_v, measured through the same weights, Σ w_v n·u_v (m/N).
    fn direct_support_compliance(fx: &Fixture, support: &[(usize, f64)], n: &Vec3) -> f64 {
        let mut rhs = Mat::<f64>::zeros(fx.system.n_free(), 1);
        for &(v, w) in support {
            if let Some(d) = fx.system.dofs.node_dofs(v) {
                for a in 0..3 {
                    rhs[(d[a], 0)] += w * n[a];
                }
            }
        }
        fx.factor.solve_in_place(rhs.as_mut()).unwrap();
        support
            .iter()
            .filter_map(|&(v, w)| fx.system.dofs.node_dofs(v).map(|d| (d, w)))
            .map(|(d, w)| w * (0..3).map(|a| rhs[(d[a], 0)] * n[a]).sum::<f64>())
            .sum()
    }

    #[test]
    fn bunny_static_stiffness_with_residual_flexibility_matches_full_fem() {
        let mut mesh = palpa::mesh::load(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/bunny.msh"
        )))
        .unwrap();
        mesh.scale(0.01);
        let fx = fixture(
            mesh,
            Fix::Below {
                axis: Axis::Y,
                dist: 0.005,
            },
            50e3,
            40,
        );
        let bvh = SurfaceBvh::build(fx.triangles.clone(), &fx.mesh.nodes);
        let (lo, hi) = fx.mesh.bounds();
        // Free surface nodes spread over the body (top, sides), one per probe.
        let picks: Vec<usize> = [
            (0.5, 1.0, 0.5),
            (0.0, 0.6, 0.5),
            (1.0, 0.5, 0.5),
            (0.5, 0.5, 0.0),
            (0.3, 0.8, 1.0),
        ]
        .iter()
        .map(|&(a, b, c)| {
            let p = lo + (hi - lo).component_mul(&Vec3::new(a, b, c));
            let near = bvh
                .closest_point(&p, f64::INFINITY, &fx.mesh.nodes)
                .unwrap();
            let t = fx.triangles[near.triangle];
            *t.iter()
                .max_by(|&&x, &&y| {
                    near.bary[t.iter().position(|&v| v == x).unwrap()]
                        .total_cmp(&near.bary[t.iter().position(|&v| v == y).unwrap()])
                })
                .unwrap()
        })
        .filter(|&v| !fx.system.dofs.is_fixed(v))
        .collect();
        assert!(picks.len() >= 4);
        let depth = 1e-3;
        let dt = 5e-3;
        let mut worst = [0.0f64; 2];
        for &node in &picks {
            // Triangle holding the node, with the point exactly on it.
            let t = (0..fx.triangles.len())
                .find(|&t| fx.triangles[t].contains(&node))
                .unwrap();
            let nodes = fx.triangles[t];
            let w = nodes.map(|v| if v == node { 1.0 } else { 0.0 });
            let normal = bvh.shaded_normal(t, &w, &fx.mesh.nodes);
            let want = 1.0 / direct_compliance(&fx, node, &normal);
            for (r, residual) in [false, true].into_iter().enumerate() {
                let params = ModalParams {
                    alpha1: 2e-3,
                    alpha2: 20.0,
                    dt,
                    max_rows: 3,
                };
                let mut model = runtime(&fx, params, residual);
                let mut f = [Vec3::zeros()];
                // Press slowly (1 s ramp) and hold until the modes settle.
                for n in 0..800 {
                    let d = depth * (n as f64 / 200.0).min(1.0);
                    let c = PointConstraint::contact(
                        nodes,
                        w,
                        normal,
                        fx.mesh.nodes[node] - normal * d,
                    );
                    model.advance(dt, &[c], &mut f).unwrap();
                }
                let got = -f[0].dot(&normal) / depth;
                let err = (got - want).abs() / want;
                println!("node {node}: stiffness {got:.4} N/m vs direct {want:.4} N/m, residual {residual}: error {:.2}%", 100.0 * err);
                worst[r] = worst[r].max(err);
            }
        }
        // The same through a contact patch (the scene default radius, twice the mean
        // surface edge): the reference loads the same nodes with the same weights.
        let edges: f64 = fx
            .triangles
            .iter()
            .map(|t| {
                (0..3)
                    .map(|i| (fx.mesh.nodes[t[i]] - fx.mesh.nodes[t[(i + 1) % 3]]).norm())
                    .sum::<f64>()
            })
            .sum();
        let radius = 2.0 * edges / (3.0 * fx.triangles.len() as f64);
        let mut patch = ContactPatch::new(radius, &bvh, &fx.mesh.nodes);
        let mut worst_patch = 0.0f64;
        for &node in &picks {
            let t = (0..fx.triangles.len())
                .find(|&t| fx.triangles[t].contains(&node))
                .unwrap();
            let w = fx.triangles[t].map(|v| if v == node { 1.0 } else { 0.0 });
            let normal = bvh.shaded_normal(t, &w, &fx.mesh.nodes);
            let support = patch.support(&bvh, &fx.mesh.nodes, t, &w, &normal);
            assert!(
                support.nodes().len() > 3,
                "patch of {} nodes",
                support.nodes().len()
            );
            let pairs: Vec<(usize, f64)> = support.iter().collect();
            let want = 1.0 / direct_support_compliance(&fx, &pairs, &normal);
            let params = ModalParams {
                alpha1: 2e-3,
                alpha2: 20.0,
                dt,
                max_rows: 3,
            };
            let mut model = runtime(&fx, params, true);
            let mut f = [Vec3::zeros()];
            for n in 0..800 {
                let d = depth * (n as f64 / 200.0).min(1.0);
                let c =
                    PointConstraint::contact_on(support, normal, fx.mesh.nodes[node] - normal * d);
                model.advance(dt, &[c], &mut f).unwrap();
            }
            let got = -f[0].dot(&normal) / depth;
            let err = (got - want).abs() / want;
            println!("node {node}, patch of {} nodes: stiffness {got:.4} N/m vs direct {want:.4} N/m: error {:.3}%", support.nodes().len(), 100.0 * err);
            worst_patch = worst_patch.max(err);
        }
        println!("bunny k=40, worst static stiffness error: without residual {:.1}%, with residual {:.4}%, patch with residual {:.4}%", 100.0 * worst[0], 100.0 * worst[1], 100.0 * worst_patch);
        assert!(worst_patch < 0.02, "patch: {:.3}%", 100.0 * worst_patch);
        assert!(
            worst[1] < 0.02,
            "with residual flexibility: {:.3}%",
            100.0 * worst[1]
        );
        assert!(worst[0] > worst[1]);
    }
    /// Independent static reference: K from the crate's assembly, factorised by faer's
    /// high-level sparse Cholesky (not the crate's `Factor`), solved for the nodal
    /// loads `loads` (node, N); every node's displacement (m).
    fn direct_static(fx: &Fixture, loads: &[(usize, Vec3)]) -> Vec<Vec3> {
        let llt = fx.system.k.sp_cholesky(faer::Side::Lower).unwrap();
        let mut f = Mat::<f64>::zeros(fx.system.n_free(), 1);
        for &(v, load) in loads {
            if let Some(d) = fx.system.dofs.node_dofs(v) {
                for a in 0..3 {
                    f[(d[a], 0)] += load[a];
                }
            }
        }
        let u = faer::linalg::solvers::Solve::solve(&llt, &f);
        let mut out = vec![Vec3::zeros(); fx.mesh.nodes.len()];
        for (j, &v) in fx.system.dofs.free_nodes().iter().enumerate() {
            out[v] = Vec3::new(u[(3 * j, 0)], u[(3 * j + 1, 0)], u[(3 * j + 2, 0)]);
        }
        out
    }

    /// The node on the block's top face (z = 3 cm) at (x, y) (m), a multiple of 1 cm.
    fn top_node(fx: &Fixture, x: f64, y: f64) -> usize {
        let p = Vec3::new(x, y, 0.03);
        fx.mesh
            .nodes
            .iter()
            .position(|q| (q - p).norm() < 1e-9)
            .unwrap()
    }

    /// A point load of `force` (N) on the single node `v`.
    fn node_load(fx: &Fixture, v: usize, force: Vec3) -> PointLoad {
        PointLoad {
            support: Support::patch([(v, 1.0)], fx.mesh.nodes[v]).unwrap(),
            force,
        }
    }

    /// Modal force W̄ᵀ f of a force `force` (N) on node `v`, from the basis itself.
    fn modal_force(fx: &Fixture, v: usize, force: Vec3) -> Vec<f64> {
        let w = fx.basis.node_rows(v);
        (0..fx.basis.n_modes())
            .map(|m| (0..3).map(|a| w[(a, m)] * force[a]).sum())
            .collect()
    }

    #[test]
    fn constant_point_load_settles_on_the_static_full_fem_response() {
        let fx = block_fixture();
        let v = top_node(&fx, 0.02, 0.03);
        let force = Vec3::new(0.03, -0.02, 0.0);
        let want = direct_static(&fx, &[(v, force)]);
        let params = ModalParams {
            max_rows: 3,
            ..ModalParams::default()
        };
        let mut errors = [0.0; 2];
        for (r, residual) in [false, true].into_iter().enumerate() {
            let mut model = runtime(&fx, params, residual);
            model.set_loads(&[node_load(&fx, v, force)]).unwrap();
            // 15 s: the slowest mode has decayed by far more than 1e-6.
            for _ in 0..3000 {
                model.advance(5e-3, &[], &mut []).unwrap();
            }
            let mut u = vec![Vec3::zeros(); fx.surface.len()];
            model.displacements(&fx.surface, &mut u);
            let at = u[fx.surface.iter().position(|&s| s == v).unwrap()];
            errors[r] = (at - want[v]).norm() / want[v].norm();
            let scale = fx
                .surface
                .iter()
                .map(|&s| want[s].norm())
                .fold(0.0, f64::max);
            let surface = fx
                .surface
                .iter()
                .zip(&u)
                .map(|(&s, g)| (g - want[s]).norm())
                .fold(0.0, f64::max)
                / scale;
            println!(
                "residual {residual}: loaded node at {at:?} m vs K⁻¹F {:?} m: error {:.2e}, \
                 surface error {surface:.2e} (relative)",
                want[v], errors[r]
            );
            if residual {
                assert!(surface <= 1e-6, "surface error {surface:e}");
                let drawn = u.iter().map(|u| u.norm()).fold(0.0, f64::max);
                assert!(model.displacement_bound() >= drawn);
            }
        }
        assert!(
            errors[1] <= 1e-6,
            "with residual flexibility: {:e}",
            errors[1]
        );
        // The 20 modes alone are too stiff: the residual is what makes it exact.
        assert!(errors[0] > 1e-2, "without: {:e}", errors[0]);
    }

    #[test]
    fn undamped_point_load_follows_the_analytic_response_and_its_work_stays_in_the_modes() {
        let fx = block_fixture();
        let k = fx.basis.n_modes();
        let lambda = &fx.basis.eigenvalues;
        let v = top_node(&fx, 0.02, 0.03);
        let force = Vec3::new(0.03, -0.02, 0.01);
        let g = modal_force(&fx, v, force);
        let w = fx.basis.node_rows(v);
        let u_static = direct_static(&fx, &[(v, force)])[v];
        // Static work FᵀW̄Λ⁻¹W̄ᵀF, the scale of the modes' energy (J).
        let work_scale: f64 = (0..k).map(|m| g[m] * g[m] / lambda[m]).sum();
        let dt = 5e-3;
        let params = ModalParams {
            alpha1: 0.0,
            alpha2: 0.0,
            dt,
            max_rows: 3,
        };
        let mut model = runtime(&fx, params, true);
        model.set_loads(&[node_load(&fx, v, force)]).unwrap();
        let (mut err_z, mut err_u, mut err_e) = (0.0f64, 0.0f64, 0.0f64);
        let mut u = [Vec3::zeros()];
        for n in 1..=300 {
            model.advance(dt, &[], &mut []).unwrap();
            let t = n as f64 * dt;
            let z = model.oscillators().z().to_vec();
            // From rest under a constant modal force: z = g/λ (1 − cos ωt), per mode.
            for m in 0..k {
                let za = g[m] / lambda[m] * (1.0 - (lambda[m].sqrt() * t).cos());
                err_z = err_z.max((z[m] - za).abs() / (g[m] / lambda[m]).abs().max(1e-300));
            }
            // The loaded node: K⁻¹F − Σ W̄_v,m (g_m/λ_m) cos(ω_m t) (residual included).
            let mut ua = u_static;
            for m in 0..k {
                let c = g[m] / lambda[m] * (lambda[m].sqrt() * t).cos();
                ua -= Vec3::new(w[(0, m)], w[(1, m)], w[(2, m)]) * c;
            }
            model.displacements(&[v], &mut u);
            err_u = err_u.max((u[0] - ua).norm() / u_static.norm());
            // Work–energy: a constant force from rest has done g·z; the modes hold it.
            let work: f64 = (0..k).map(|m| g[m] * z[m]).sum();
            err_e = err_e.max((model.oscillators().energy() - work).abs() / work_scale);
        }
        // Switched off: the work done stays in the modes, and nothing but the modes
        // moves the node (no residual field).
        let z = model.oscillators().z().to_vec();
        let work: f64 = (0..k).map(|m| g[m] * z[m]).sum();
        model.set_loads(&[]).unwrap();
        let mut err_off = 0.0f64;
        for _ in 0..1000 {
            model.advance(dt, &[], &mut []).unwrap();
            err_off = err_off.max((model.oscillators().energy() - work).abs() / work_scale);
        }
        model.displacements(&[v], &mut u);
        let z = model.oscillators().z();
        let modal = Vec3::from_fn(|a, _| (0..k).map(|m| w[(a, m)] * z[m]).sum());
        println!(
            "undamped load: modes vs analytic {err_z:.2e}, loaded node vs analytic \
             {err_u:.2e}, energy vs work {err_e:.2e} while on, {err_off:.2e} after \
             (relative); work {work:.3e} J"
        );
        assert!(work > 1e-3 * work_scale);
        assert!(err_z <= 1e-9 && err_u <= 1e-9, "{err_z:e}, {err_u:e}");
        assert!(err_e <= 1e-9 && err_off <= 1e-9, "{err_e:e}, {err_off:e}");
        assert!((u[0] - modal).norm() <= 1e-12 * u_static.norm());
    }

    #[test]
    fn held_point_beside_a_point_load_stays_on_target_and_settles_on_the_static_solution() {
        let size = Vec3::new(0.06, 0.06, 0.03);
        let fx = block_fixture();
        let bvh = SurfaceBvh::build(fx.triangles.clone(), &fx.mesh.nodes);
        let c = bvh
            .closest_point(&Vec3::new(0.031, 0.027, size.z), 1e-6, &fx.mesh.nodes)
            .unwrap();
        let nodes = fx.triangles[c.triangle];
        let offset = Vec3::new(2e-4, 0.0, -1e-3);
        let hold = PointConstraint::hold(nodes, c.bary, c.point + offset);
        // A drag beside the held point, pressing a little too.
        let v = top_node(&fx, 0.02, 0.03);
        let force = Vec3::new(0.03, -0.02, -0.01);
        let params = ModalParams {
            alpha1: 2e-3,
            alpha2: 20.0,
            dt: 5e-3,
            max_rows: 3,
        };
        for residual in [false, true] {
            // `plain` holds the same point without the load.
            let mut model = runtime(&fx, params, residual);
            let mut plain = runtime(&fx, params, residual);
            let (mut f, mut f_plain) = ([Vec3::zeros()], [Vec3::zeros()]);
            let mut worst = 0.0f64;
            for n in 0..800 {
                if n == 10 {
                    model.set_loads(&[node_load(&fx, v, force)]).unwrap();
                }
                model.advance(5e-3, &[hold], &mut f).unwrap();
                plain.advance(5e-3, &[hold], &mut f_plain).unwrap();
                let u = point_displacement(&mut model, &nodes, &c.bary);
                worst = worst.max((u - offset).norm() / offset.norm());
            }
            println!(
                "residual {residual}: held point off target by {worst:.2e} (relative); settled \
                 force {:.4?} N, {:.4?} N without the load",
                f[0], f_plain[0]
            );
            assert!(worst <= 1e-9, "residual {residual}: {worst:e}");
            assert!((f[0] - f_plain[0]).norm() > 0.05 * f_plain[0].norm());
            if residual {
                // Settled: the field is K⁻¹ of the load and the constraint force.
                let mut loads: Vec<(usize, Vec3)> = nodes
                    .iter()
                    .zip(&c.bary)
                    .map(|(&n, &w)| (n, f[0] * w))
                    .collect();
                loads.push((v, force));
                let want = direct_static(&fx, &loads);
                let mut u = vec![Vec3::zeros(); fx.surface.len()];
                model.displacements(&fx.surface, &mut u);
                let scale = fx
                    .surface
                    .iter()
                    .map(|&s| want[s].norm())
                    .fold(0.0, f64::max);
                let err = fx
                    .surface
                    .iter()
                    .zip(&u)
                    .map(|(&s, g)| (g - want[s]).norm())
                    .fold(0.0, f64::max)
                    / scale;
                let at: Vec3 = nodes.iter().zip(&c.bary).map(|(&n, &w)| want[n] * w).sum();
                let held = (at - offset).norm() / offset.norm();
                println!(
                    "settled: surface vs K⁻¹(F_load + F_hold) {err:.2e}, held point in the \
                     direct solve off by {held:.2e} (relative)"
                );
                assert!(err <= 1e-6, "surface error {err:e}");
                assert!(held <= 1e-6, "held point error {held:e}");
            }
        }
    }

    #[test]
    fn velocity_and_acceleration_constraints_hit_their_targets_under_a_point_load() {
        use palpa::tissue::{ConstraintKind, Directions};
        let size = Vec3::new(0.06, 0.06, 0.03);
        let fx = block_fixture();
        let bvh = SurfaceBvh::build(fx.triangles.clone(), &fx.mesh.nodes);
        let c = bvh
            .closest_point(&Vec3::new(0.031, 0.027, size.z), 1e-6, &fx.mesh.nodes)
            .unwrap();
        let nodes = fx.triangles[c.triangle];
        let k = fx.basis.n_modes();
        let row = |a: usize, m: usize| -> f64 {
            (0..3)
                .map(|i| c.bary[i] * fx.basis.shapes[(3 * nodes[i] + a, m)])
                .sum()
        };
        let point = |q: &[f64]| Vec3::from_fn(|a, _| (0..k).map(|m| row(a, m) * q[m]).sum());
        let v = top_node(&fx, 0.02, 0.03);
        let force = Vec3::new(0.3, -0.2, -0.1);
        let g_load = modal_force(&fx, v, force);
        let params = ModalParams {
            alpha1: 1e-3,
            alpha2: 2.0,
            dt: 5e-3,
            max_rows: 3,
        };
        for (kind, target) in [
            (ConstraintKind::Velocity, Vec3::new(2e-3, 0.0, -1e-2)),
            (ConstraintKind::Acceleration, Vec3::new(0.0, 0.5, -1.0)),
        ] {
            let mut model = runtime(&fx, params, false);
            model.set_loads(&[node_load(&fx, v, force)]).unwrap();
            let con = PointConstraint {
                support: Support::triangle(nodes, c.bary),
                kind,
                directions: Directions::All,
                target,
                unilateral: false,
            };
            let mut f = [Vec3::zeros()];
            let mut worst = 0.0f64;
            for _ in 0..50 {
                model.advance(5e-3, &[con], &mut f).unwrap();
                let osc = model.oscillators();
                let scale: f64 = (0..k)
                    .map(|m| {
                        let w = Vec3::from_fn(|a, _| row(a, m)).norm();
                        w * (osc.zd()[m].abs() * (1.0 + osc.damping()[m])
                            + osc.lambda()[m] * osc.z()[m].abs()
                            + g_load[m].abs())
                    })
                    .sum();
                let got = match kind {
                    ConstraintKind::Velocity => point(osc.zd()),
                    _ => {
                        // z̈ = W̄ᵀ(F at the point) + W̄ᵀ(F of the load) − c ż − λ z.
                        let acc: Vec<f64> = (0..k)
                            .map(|m| {
                                let g: f64 = (0..3).map(|a| row(a, m) * f[0][a]).sum();
                                g + g_load[m]
                                    - osc.damping()[m] * osc.zd()[m]
                                    - osc.lambda()[m] * osc.z()[m]
                            })
                            .collect();
                        point(&acc)
                    }
                };
                let err = (got - target).norm();
                assert!(
                    err <= 1e-9 * target.norm() + 1e-12 * scale,
                    "{kind:?}: {got:?} vs {target:?}"
                );
                worst = worst.max(err / target.norm());
            }
            println!("{kind:?} under a load: off target by {worst:.2e} (relative)");
        }
    }

    #[test]
    fn point_load_with_columns_still_completing_is_drawn_consistently() {
        let fx = block_fixture();
        let params = ModalParams {
            max_rows: 3,
            ..ModalParams::default()
        };
        let v = top_node(&fx, 0.02, 0.03);
        let load = node_load(&fx, v, Vec3::new(0.03, -0.02, -0.01));
        // Lazy: one supernode of back solve a step; eager: every column complete.
        let mut lazy = runtime(&fx, params, true);
        lazy.columns().unwrap().set_completion_budget(1);
        let mut eager = runtime(&fx, params, true);
        eager.columns().unwrap().precompute(&fx.surface).unwrap();
        lazy.set_loads(&[load]).unwrap();
        eager.set_loads(&[load]).unwrap();
        let n = fx.surface.len();
        let (mut ul, mut ue, mut corr) = (
            vec![Vec3::zeros(); n],
            vec![Vec3::zeros(); n],
            vec![Vec3::zeros(); n],
        );
        let mut q = vec![0.0; lazy.n_modes()];
        let mut steps = 0;
        let mut pending_steps = 0;
        loop {
            lazy.advance(5e-3, &[], &mut []).unwrap();
            eager.advance(5e-3, &[], &mut []).unwrap();
            steps += 1;
            lazy.displacements(&fx.surface, &mut ul);
            eager.displacements(&fx.surface, &mut ue);
            lazy.visual_coordinates(&mut q);
            lazy.residual_displacements(&fx.surface, &mut corr);
            let scale = ue.iter().map(|u| u.norm()).fold(0.0, f64::max);
            let pending = lazy.columns().unwrap().pending() > 0;
            for (i, &s) in fx.surface.iter().enumerate() {
                let modal = Vec3::from_fn(|axis, _| {
                    lazy.mode_row(s, axis)
                        .iter()
                        .zip(&q)
                        .map(|(w, q)| w * q)
                        .sum()
                });
                // The viewer's picture (W̄q + corrections) is the model's.
                assert!(
                    (modal + corr[i] - ul[i]).norm() <= 1e-12 * scale,
                    "step {steps}"
                );
                if !pending || lazy.columns().unwrap().is_cached(s) {
                    assert!(
                        (ul[i] - ue[i]).norm() <= 1e-8 * scale,
                        "step {steps}, node {s}"
                    );
                } else {
                    // The load's modal part stays where its residual is not known yet.
                    assert!(
                        (ul[i] - modal).norm() <= 1e-12 * scale,
                        "step {steps}, node {s}"
                    );
                }
            }
            let drawn = ul.iter().map(|u| u.norm()).fold(0.0, f64::max);
            assert!(lazy.displacement_bound() >= drawn);
            if !pending {
                break;
            }
            pending_steps += 1;
        }
        println!("the loaded node's columns completed after {steps} steps");
        assert!(pending_steps > 2, "completed in {steps} steps");
    }

    #[test]
    fn bad_point_loads_are_refused_and_leave_the_held_ones() {
        let fx = block_fixture();
        let params = ModalParams {
            max_rows: 2,
            ..ModalParams::default()
        };
        let v = top_node(&fx, 0.02, 0.03);
        let good = node_load(&fx, v, Vec3::new(0.03, 0.0, 0.0));
        let (mut a, mut b) = (runtime(&fx, params, true), runtime(&fx, params, true));
        a.set_loads(&[good]).unwrap();
        b.set_loads(&[good]).unwrap();
        let n_nodes = fx.mesh.nodes.len();
        let bad = [
            vec![good, node_load(&fx, v, Vec3::new(0.0, f64::NAN, 0.0))],
            vec![PointLoad {
                support: Support::triangle([v, v, n_nodes + 5], [0.5, 0.5, 0.0]),
                force: Vec3::x(),
            }],
            vec![good; 3],
        ];
        for (loads, want) in bad.iter().zip([
            ModelError::BadLoad {
                index: 1,
                msg: "non-finite force, weight or rest point".into(),
            },
            ModelError::BadLoad {
                index: 0,
                msg: format!("node {} is not in the mesh of {n_nodes} nodes", n_nodes + 5),
            },
            ModelError::TooManyLoads { given: 3, limit: 2 },
        ]) {
            assert_eq!(a.set_loads(loads), Err(want));
        }
        // The refused calls changed nothing: both models move alike.
        let (mut ua, mut ub) = ([Vec3::zeros()], [Vec3::zeros()]);
        for _ in 0..20 {
            a.advance(5e-3, &[], &mut []).unwrap();
            b.advance(5e-3, &[], &mut []).unwrap();
        }
        a.displacements(&[v], &mut ua);
        b.displacements(&[v], &mut ub);
        assert!(ua[0].norm() > 0.0 && ua == ub);
        // Reset clears the held loads: the tissue stays at rest.
        a.reset();
        for _ in 0..20 {
            a.advance(5e-3, &[], &mut []).unwrap();
        }
        a.displacements(&[v], &mut ua);
        assert_eq!(ua[0], Vec3::zeros());
        assert!(a.oscillators().z().iter().all(|&z| z == 0.0));
    }
}

mod contact_through_modal {
    use crate::support::block::{block, SIZE};

    use palpa::fem::Ordering;
    use palpa::modal::{compute_modes, ModalParams, ModalRuntime, Timings};
    use palpa::pipeline::ContactPipeline;
    use palpa::tissue::{ModelStep, TissueModel};
    use palpa::Vec3;

    fn sim() -> ContactPipeline<ModalRuntime> {
        sim_with_patch(0.0)
    }

    fn sim_with_patch(radius: f64) -> ContactPipeline<ModalRuntime> {
        let b = block();
        let (basis, _, _) =
            compute_modes(&b.system, 20, Ordering::default(), &mut Timings::default()).unwrap();
        let params = ModalParams {
            alpha1: 2e-3,
            alpha2: 20.0,
            dt: 5e-3,
            max_rows: 3,
        };
        let model = ModalRuntime::new(
            b.geometry(),
            &basis.eigenvalues,
            basis.shapes.as_ref(),
            params,
            Some(b.columns(64)),
        )
        .unwrap();
        ContactPipeline::new(model, 0.0).with_patch_radius(radius)
    }

    #[test]
    fn sliding_with_a_contact_patch_on_the_modal_backend() {
        let mut sim = sim_with_patch(0.02);
        let dt = 5e-3;
        let (x, y) = (0.031, 0.027);
        sim.step(0.0, dt, Vec3::new(x, y, SIZE.z + 2e-3));
        let mut t = 0.0;
        let mut prev = None;
        for i in 1..=100 {
            t += dt;
            let lfm = sim.step(t, dt, Vec3::new(x, y, SIZE.z - 1.5e-3 * i as f64 / 100.0));
            assert!(lfm.in_contact, "step {i}");
            prev = Some(lfm);
        }
        let mut prev = prev.unwrap();
        // Slide 6 mm at 4 mm/s: held, no jump beyond local stiffness × motion, and the
        // dent's centre stays within a fraction of the depth below the tip.
        for i in 1..=300 {
            t += dt;
            let probe = Vec3::new(x + 2e-5 * i as f64, y, SIZE.z - 1.5e-3);
            let lfm = sim.step(t, dt, probe);
            assert!(lfm.in_contact, "lost contact sliding, step {i}");
            let k_loc = prev.stiffness.norm().max(lfm.stiffness.norm());
            let jump = (lfm.f0 - prev.f0).norm();
            assert!(
                jump <= k_loc * 2e-5,
                "step {i}: force jump {jump:e} N > {:e}",
                k_loc * 2e-5
            );
            let below = probe.z - lfm.contact_point.z;
            assert!(
                (-1e-5..0.5e-3).contains(&below),
                "step {i}: surface {below:e} m below the tip"
            );
            prev = lfm;
        }
        t += dt;
        let pulled = sim.step(t, dt, Vec3::new(x + 6e-3, y, SIZE.z + 2e-3));
        assert!(!pulled.in_contact && pulled.f0 == Vec3::zeros());
    }

    #[test]
    fn pressing_pulling_and_sliding_on_the_modal_backend() {
        let mut sim = sim();
        let dt = 5e-3;
        let (x, y) = (0.031, 0.027);
        let above = sim.step(0.0, dt, Vec3::new(x, y, SIZE.z + 2e-3));
        assert!(!above.in_contact && above.f0 == Vec3::zeros());
        // Slow press: force along the normal, growing with depth.
        let mut last = 0.0;
        let mut t = 0.0;
        for i in 1..=100 {
            t += dt;
            let lfm = sim.step(t, dt, Vec3::new(x, y, SIZE.z - 1.5e-3 * i as f64 / 100.0));
            assert!(lfm.in_contact, "step {i}");
            let f = lfm.f0;
            assert!((f - lfm.normal * f.norm()).norm() <= 1e-9 * f.norm());
            assert!(lfm.normal.z > 0.95);
            if i % 10 == 0 {
                assert!(f.norm() > last, "force not increasing at step {i}");
                last = f.norm();
            }
        }
        // The drawn surface follows the probe tip: contact point at the probe depth.
        let c = sim.contact().unwrap().entry.unwrap();
        let nodes = palpa::contact::SurfaceBvh::build(
            sim.model().surface_triangles().to_vec(),
            sim.model().rest_positions(),
        )
        .triangles()[c.triangle];
        let mut u = [Vec3::zeros(); 3];
        sim.model_mut().displacements(&nodes, &mut u);
        let rest = sim.model().rest_positions();
        let at: Vec3 = (0..3).map(|k| (rest[nodes[k]] + u[k]) * c.bary[k]).sum();
        assert!((at.z - (SIZE.z - 1.5e-3)).abs() < 2e-5, "surface at {at:?}");
        // Slide 6 mm at 4 mm/s while pressed: no force jump beyond local stiffness × motion.
        let mut prev = sim.step(t, dt, Vec3::new(x, y, SIZE.z - 1.5e-3));
        for i in 1..=300 {
            t += dt;
            let lfm = sim.step(t, dt, Vec3::new(x + 2e-5 * i as f64, y, SIZE.z - 1.5e-3));
            assert!(lfm.in_contact, "lost contact sliding, step {i}");
            let k_loc = prev.stiffness.norm().max(lfm.stiffness.norm());
            let jump = (lfm.f0 - prev.f0).norm();
            assert!(
                jump <= k_loc * 2e-5,
                "step {i}: force jump {jump:e} N > {:e}",
                k_loc * 2e-5
            );
            prev = lfm;
        }
        // Pull away: released, zero force.
        t += dt;
        let pulled = sim.step(t, dt, Vec3::new(x + 6e-3, y, SIZE.z + 2e-3));
        assert!(!pulled.in_contact && pulled.f0 == Vec3::zeros());
        // NaN probe: zero force, no panic.
        let nan = sim.step(t + dt, dt, Vec3::new(f64::NAN, y, 0.0));
        assert!(!nan.in_contact && nan.f0 == Vec3::zeros());
    }
}
