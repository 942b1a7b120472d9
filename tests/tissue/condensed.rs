//! Condensed static FEM backend against an independent dense solve of K u = f, and
//! probe contact through the backend.

use faer::Mat;
use nalgebra::{DMatrix, DVector};
use palpa::condensed::CondensedModel;
use palpa::contact::{ContactPatch, SurfaceBvh};
use palpa::fem::Support;
use palpa::fem::{Material, MaterialMap, Shape};
use palpa::mesh::generate::box_mesh;
use palpa::mesh::TetMesh;
use palpa::pipeline::ContactPipeline;
use palpa::tissue::{ModelError, ModelStep, PointConstraint, PointLoad, TissueModel};
use palpa::{Mat3, Vec3};

use crate::support::block::{block, Block, BOTTOM, SIZE};

fn condensed(b: &Block, cap: usize, cache: usize) -> CondensedModel {
    CondensedModel::new(b.geometry(), b.columns(cache), cap, 16).unwrap()
}

/// Independent reference: dense K (from K·I) factorised by nalgebra's Cholesky.
fn direct(b: &Block, loads: &[(usize, Vec3)]) -> Vec<Vec3> {
    let n = b.system.n_free();
    let mut k = Mat::<f64>::zeros(n, n);
    b.system
        .apply_k(k.as_mut(), Mat::<f64>::identity(n, n).as_ref());
    let kd = DMatrix::from_fn(n, n, |i, j| k[(i, j)]);
    let mut f = DVector::zeros(n);
    for &(v, load) in loads {
        if let Some(d) = b.system.dofs.node_dofs(v) {
            for a in 0..3 {
                f[d[a]] += load[a];
            }
        }
    }
    let u = kd.cholesky().expect("K is SPD").solve(&f);
    let mut out = vec![Vec3::zeros(); b.mesh.nodes.len()];
    for (j, &v) in b.system.dofs.free_nodes().iter().enumerate() {
        out[v] = Vec3::new(u[3 * j], u[3 * j + 1], u[3 * j + 2]);
    }
    out
}

/// The top-surface point above (x, y): triangle nodes and barycentric weights.
fn top_point(b: &Block, x: f64, y: f64) -> ([usize; 3], [f64; 3], Vec3) {
    let bvh = SurfaceBvh::build(b.triangles.clone(), &b.mesh.nodes);
    let c = bvh
        .closest_point(&Vec3::new(x, y, SIZE.z), 1e-6, &b.mesh.nodes)
        .unwrap();
    (b.triangles[c.triangle], c.bary, c.point)
}

fn max_norm(u: &[Vec3]) -> f64 {
    u.iter().map(|v| v.norm()).fold(0.0, f64::max)
}

#[test]
fn held_point_matches_the_direct_solve() {
    let b = block();
    let mut model = condensed(&b, 0, 8);
    let (nodes, w, x) = top_point(&b, 0.031, 0.027);
    let target = x + Vec3::new(3e-4, -2e-4, -1e-3);
    let mut f = [Vec3::zeros()];
    model
        .advance(5e-3, &[PointConstraint::hold(nodes, w, target)], &mut f)
        .unwrap();
    let loads: Vec<(usize, Vec3)> = nodes
        .iter()
        .zip(&w)
        .map(|(&v, &wv)| (v, f[0] * wv))
        .collect();
    let u = direct(&b, &loads);
    let at: Vec3 = nodes.iter().zip(&w).map(|(&v, &wv)| u[v] * wv).sum();
    assert!(
        (at - (target - x)).norm() <= 1e-8 * (target - x).norm(),
        "point moved {at:?}"
    );
    let mut got = vec![Vec3::zeros(); b.surface_nodes.len()];
    model.displacements(&b.surface_nodes, &mut got);
    let want: Vec<Vec3> = b.surface_nodes.iter().map(|&v| u[v]).collect();
    let err = got
        .iter()
        .zip(&want)
        .map(|(g, w)| (g - w).norm())
        .fold(0.0, f64::max);
    assert!(err <= 1e-8 * max_norm(&want), "surface error {err:e}");
    // Compliance at the point agrees with the force it produced.
    let c = model
        .point_compliance(&Support::triangle(nodes, w))
        .unwrap();
    assert!((c * f[0] - (target - x)).norm() <= 1e-8 * (target - x).norm());
}

#[test]
fn two_simultaneous_loads_equal_one_full_solve() {
    let b = block();
    let mut model = condensed(&b, 0, 8);
    let (n1, w1, x1) = top_point(&b, 0.021, 0.017);
    let (n2, w2, x2) = top_point(&b, 0.038, 0.041);
    let cons = [
        PointConstraint::hold(n1, w1, x1 + Vec3::new(0.0, 0.0, -1e-3)),
        PointConstraint::hold(n2, w2, x2 + Vec3::new(2e-4, 0.0, -5e-4)),
    ];
    let mut f = [Vec3::zeros(); 2];
    model.advance(5e-3, &cons, &mut f).unwrap();
    let mut loads = Vec::new();
    for (c, fc) in cons.iter().zip(&f) {
        for (v, wv) in c.support.iter() {
            loads.push((v, fc * wv));
        }
    }
    let u = direct(&b, &loads);
    for c in &cons {
        let x: Vec3 = c.support.iter().map(|(v, wv)| b.mesh.nodes[v] * wv).sum();
        let at: Vec3 = c.support.iter().map(|(v, wv)| u[v] * wv).sum();
        assert!(
            (at - (c.target - x)).norm() <= 1e-8 * (c.target - x).norm(),
            "{at:?} vs {:?}, f {f:?}",
            c.target - x
        );
    }
    let mut got = vec![Vec3::zeros(); b.surface_nodes.len()];
    model.displacements(&b.surface_nodes, &mut got);
    let want: Vec<Vec3> = b.surface_nodes.iter().map(|&v| u[v]).collect();
    let err = got
        .iter()
        .zip(&want)
        .map(|(g, w)| (g - w).norm())
        .fold(0.0, f64::max);
    assert!(err <= 1e-8 * max_norm(&want), "superposition error {err:e}");
}

#[test]
fn patch_contact_matches_the_direct_solve_with_the_same_load_distribution() {
    let b = block();
    let mut model = condensed(&b, 0, 64);
    let bvh = SurfaceBvh::build(b.triangles.clone(), &b.mesh.nodes);
    let mut patch = ContactPatch::new(0.02, &bvh, &b.mesh.nodes);
    let c = bvh
        .closest_point(&Vec3::new(0.031, 0.027, SIZE.z), 1e-6, &b.mesh.nodes)
        .unwrap();
    let n = Vec3::z();
    let support = patch.support(&bvh, &b.mesh.nodes, c.triangle, &c.bary, &n);
    assert!(support.nodes().len() > 6, "{} nodes", support.nodes().len());
    let depth = 1e-3;
    let mut f = [Vec3::zeros()];
    model
        .advance(
            5e-3,
            &[PointConstraint::contact_on(support, n, c.point - n * depth)],
            &mut f,
        )
        .unwrap();
    // Force along the normal, spread with the patch weights: the patch's weighted
    // displacement along n reaches the probe depth in the direct solve.
    assert!(f[0].z < 0.0 && f[0].xy().norm() == 0.0);
    let loads: Vec<(usize, Vec3)> = support.iter().map(|(v, w)| (v, f[0] * w)).collect();
    let u = direct(&b, &loads);
    let at: f64 = support.iter().map(|(v, w)| w * u[v].z).sum();
    assert!((at + depth).abs() <= 1e-8 * depth, "patch moved {at:e}");
    let mut got = vec![Vec3::zeros(); b.surface_nodes.len()];
    model.displacements(&b.surface_nodes, &mut got);
    let err = b
        .surface_nodes
        .iter()
        .zip(&got)
        .map(|(&v, g)| (g - u[v]).norm())
        .fold(0.0, f64::max);
    assert!(err <= 1e-8 * depth, "surface error {err:e}");
    // The compliance the haptic thread's stiffness comes from: wᵀ K⁻¹ w.
    let cn = model.point_compliance(&support).unwrap()[(2, 2)];
    assert!((cn * f[0].z + depth).abs() <= 1e-8 * depth);
}

#[test]
fn column_cache_stays_bounded_and_recomputes_evicted_nodes() {
    let b = block();
    let mut model = condensed(&b, 0, 3);
    let top: Vec<usize> = b
        .surface_nodes
        .iter()
        .copied()
        .filter(|&v| b.mesh.nodes[v].z == SIZE.z)
        .take(5)
        .collect();
    let first = model.columns().block(top[0], top[0]).unwrap();
    for &v in &top[1..] {
        model.columns().block(v, v).unwrap();
    }
    assert!(!model.columns().is_cached(top[0]));
    assert!(model.columns().is_cached(top[4]));
    let solves = model.columns().solves();
    assert_eq!(model.columns().block(top[0], top[0]).unwrap(), first);
    assert_eq!(model.columns().solves(), solves + 3);
}

#[test]
fn new_contact_gets_its_exact_force_and_contact_positions_at_once_and_all_once_complete() {
    let b = block();
    let mut model = condensed(&b, 0, 8);
    // One supernode of back solve per step: completing the columns takes many steps.
    model.columns().set_completion_budget(1);
    let (nodes, w, x) = top_point(&b, 0.031, 0.027);
    // A node contacted earlier, its columns complete: it reads the new load from them.
    let (earlier, _, _) = top_point(&b, 0.045, 0.01);
    model.columns().precompute(&earlier[..1]).unwrap();
    let target = x + Vec3::new(3e-4, -2e-4, -1e-3);
    let cons = [PointConstraint::hold(nodes, w, target)];
    let mut f = [Vec3::zeros()];
    model.advance(5e-3, &cons, &mut f).unwrap();
    assert!(nodes.iter().all(|&v| !model.columns().is_complete(v)));
    assert!(!nodes.contains(&earlier[0]) && model.columns().is_complete(earlier[0]));
    // The first step's force already puts the point exactly on the target.
    let loads: Vec<(usize, Vec3)> = nodes
        .iter()
        .zip(&w)
        .map(|(&v, &wv)| (v, f[0] * wv))
        .collect();
    let u = direct(&b, &loads);
    let at: Vec3 = nodes.iter().zip(&w).map(|(&v, &wv)| u[v] * wv).sum();
    assert!(
        (at - (target - x)).norm() <= 1e-10 * (target - x).norm(),
        "point moved {at:?}"
    );
    let mut got = vec![Vec3::zeros(); b.surface_nodes.len()];
    let first = f[0];
    let mut steps = 1;
    while model.columns().pending() > 0 {
        // Until the columns are complete the contacted (cached) nodes are already
        // where the direct solve puts them; nodes never contacted leave the load
        // out; the displacement bound covers both.
        model.displacements(&b.surface_nodes, &mut got);
        for (&v, g) in b.surface_nodes.iter().zip(&got) {
            let want = if model.columns().is_cached(v) {
                u[v]
            } else {
                Vec3::zeros()
            };
            assert!(
                (g - want).norm() <= 1e-8 * max_norm(&u),
                "step {steps}, node {v}: {g:?} vs {want:?}"
            );
        }
        assert!(nodes.iter().all(|&v| model.columns().is_cached(v)));
        assert!(model.displacement_bound() >= max_norm(&got));
        model.advance(5e-3, &cons, &mut f).unwrap();
        steps += 1;
        // Full columns and forward solves give the same force.
        assert!(
            (f[0] - first).norm() <= 1e-10 * first.norm(),
            "step {steps}"
        );
    }
    assert!(steps > 2, "completed in {steps} steps");
    model.displacements(&b.surface_nodes, &mut got);
    let want: Vec<Vec3> = b.surface_nodes.iter().map(|&v| u[v]).collect();
    let err = got
        .iter()
        .zip(&want)
        .map(|(g, w)| (g - w).norm())
        .fold(0.0, f64::max);
    assert!(err <= 1e-10 * max_norm(&want), "surface error {err:e}");
    assert!(model.displacement_bound() >= max_norm(&want));
}

#[test]
fn first_contact_step_of_the_simulation_returns_the_direct_solve_force() {
    let b = block();
    let mut model = condensed(&b, 0, 8);
    model.columns().set_completion_budget(1);
    let mut sim = ContactPipeline::new(model, 0.0);
    let dt = 5e-3;
    let (nodes, w, x) = top_point(&b, 0.031, 0.027);
    let above = sim.step(0.0, dt, x + Vec3::z() * 2e-3);
    assert!(!above.in_contact);
    let depth = 8e-4;
    let lfm = sim.step(dt, dt, x - Vec3::z() * depth);
    assert!(lfm.in_contact);
    // Direct: compliance along z at the point from a unit load split over its nodes.
    let unit: Vec<(usize, Vec3)> = nodes
        .iter()
        .zip(&w)
        .map(|(&v, &wv)| (v, Vec3::z() * wv))
        .collect();
    let u = direct(&b, &unit);
    let cz: f64 = nodes.iter().zip(&w).map(|(&v, &wv)| u[v].z * wv).sum();
    let want = Vec3::z() * (depth / cz);
    assert!(
        (lfm.f0 - want).norm() <= 1e-8 * want.norm(),
        "{:?} vs {want:?}",
        lfm.f0
    );
}

fn probe_sim(b: &Block) -> ContactPipeline<CondensedModel> {
    ContactPipeline::new(condensed(b, usize::MAX, 8), 0.0)
}

/// The same with a contact patch of `radius` (m) and a cache large enough for it.
fn patch_sim(b: &Block, radius: f64) -> ContactPipeline<CondensedModel> {
    ContactPipeline::new(condensed(b, usize::MAX, 64), 0.0).with_patch_radius(radius)
}

#[test]
fn contact_force_is_normal_monotonic_and_released_on_pull() {
    let b = block();
    let mut sim = probe_sim(&b);
    let dt = 5e-3;
    let xy = (0.031, 0.027);
    let above = sim.step(0.0, dt, Vec3::new(xy.0, xy.1, SIZE.z + 0.002));
    assert!(!above.in_contact && above.f0 == Vec3::zeros());
    let mut last = 0.0;
    for i in 1..=10 {
        let depth = 2e-4 * i as f64;
        let lfm = sim.step(i as f64 * dt, dt, Vec3::new(xy.0, xy.1, SIZE.z - depth));
        assert!(lfm.in_contact, "depth {depth}");
        // Along the contact normal, which is the dented surface's and close to +z.
        let f = lfm.f0;
        assert!(
            (f - lfm.normal * f.norm()).norm() <= 1e-9 * f.norm(),
            "force {f:?} not along the normal"
        );
        assert!(lfm.normal.z > 0.95, "normal {:?}", lfm.normal);
        assert!(f.norm() > last, "force not increasing at depth {depth}");
        last = f.norm();
        // The local model's stiffness predicts the force from the contact point.
        assert!(lfm.stiffness[(2, 2)] < 0.0);
    }
    let pulled = sim.step(11.0 * dt, dt, Vec3::new(xy.0, xy.1, SIZE.z + 1e-4));
    assert!(!pulled.in_contact && pulled.f0 == Vec3::zeros());
    // Released: the tissue is back at rest.
    let mut u = vec![Vec3::zeros(); b.surface_nodes.len()];
    sim.model_mut().displacements(&b.surface_nodes, &mut u);
    assert_eq!(max_norm(&u), 0.0);
}

#[test]
fn sliding_while_pressed_has_no_force_jumps() {
    let b = block();
    for (name, mut sim) in [("point", probe_sim(&b)), ("patch", patch_sim(&b, 0.02))] {
        println!("{name} contact");
        slide_without_jumps(&mut sim);
    }
}

fn slide_without_jumps(sim: &mut ContactPipeline<CondensedModel>) {
    let dt = 5e-3;
    sim.step(0.0, dt, Vec3::new(0.012, 0.027, SIZE.z + 0.001));
    let mut prev = sim.step(dt, dt, Vec3::new(0.012, 0.027, SIZE.z - 0.0015));
    let step = 2e-4;
    for i in 1..=180 {
        let probe = Vec3::new(0.012 + step * i as f64, 0.027, SIZE.z - 0.0015);
        let lfm = sim.step((i + 1) as f64 * dt, dt, probe);
        assert!(lfm.in_contact, "lost contact at step {i}");
        let k_loc = prev.stiffness.norm().max(lfm.stiffness.norm());
        let jump = (lfm.f0 - prev.f0).norm();
        assert!(
            jump <= k_loc * step,
            "step {i}: force jump {jump:e} N > {:e}",
            k_loc * step
        );
        assert!(
            (probe - lfm.contact_point).norm() < 2e-3,
            "contact point far from the probe"
        );
        prev = lfm;
    }
}

#[test]
fn degenerate_queries_do_not_panic() {
    let b = block();
    let mut sim = probe_sim(&b);
    let dt = 5e-3;
    // NaN probe: rejected, zero force.
    sim.step(0.0, dt, Vec3::new(0.03, 0.03, SIZE.z + 0.001));
    sim.step(dt, dt, Vec3::new(0.03, 0.03, SIZE.z - 0.001));
    let nan = sim.step(2.0 * dt, dt, Vec3::new(f64::NAN, 0.03, 0.02));
    assert!(!nan.in_contact && nan.f0 == Vec3::zeros());
    // Exactly on a mesh node of the top face, then on an edge.
    for p in [
        Vec3::new(0.03, 0.03, SIZE.z - 0.001),
        Vec3::new(0.025, 0.03, SIZE.z - 0.001),
    ] {
        let mut sim = probe_sim(&b);
        sim.step(0.0, dt, p + Vec3::new(0.0, 0.0, 0.002));
        let lfm = sim.step(dt, dt, p);
        assert!(lfm.in_contact && lfm.f0.z > 0.0 && lfm.f0.iter().all(|x| x.is_finite()));
    }
    // Pressing up into the clamped bottom face: every node is fixed, so the tissue
    // cannot be moved there; the constraint is unenforceable and gives zero force.
    let mut sim = probe_sim(&b);
    sim.step(0.0, dt, Vec3::new(0.03, 0.03, -0.002));
    let lfm = sim.step(dt, dt, Vec3::new(0.03, 0.03, 0.001));
    assert!(!lfm.in_contact && lfm.f0 == Vec3::zeros() && lfm.stiffness == Mat3::zeros());
    // Invalid step size: zero force.
    let bad = sim.step(2.0 * dt, f64::NAN, Vec3::new(0.03, 0.03, 0.001));
    assert_eq!(bad.f0, Vec3::zeros());
}

/// Force for pressing `depth` straight down at (x, y) of a block of `materials`, with a
/// contact patch of radius `patch` (m; 0: point contact).
fn press(
    mesh: &TetMesh,
    materials: &MaterialMap,
    (x, y): (f64, f64),
    depth: f64,
    patch: f64,
) -> f64 {
    let blk = Block::clamped(mesh.clone(), materials, BOTTOM);
    let mut sim = ContactPipeline::new(condensed(&blk, 0, 64), 0.0).with_patch_radius(patch);
    sim.step(0.0, 5e-3, Vec3::new(x, y, SIZE.z + 1e-3));
    let mut f = 0.0;
    for i in 1..=5 {
        f = sim
            .step(
                i as f64 * 5e-3,
                5e-3,
                Vec3::new(x, y, SIZE.z - depth * i as f64 / 5.0),
            )
            .f0
            .norm();
    }
    f
}

#[test]
fn stiff_inclusion_is_found_by_palpation() {
    let mesh = box_mesh(SIZE, [12, 12, 6]).unwrap();
    let soft = Material::new(5e3, 0.45, 1000.0).unwrap();
    let stiff = Material::new(8.0 * 5e3, 0.45, 1000.0).unwrap();
    let lump = Shape::Sphere {
        center: Vec3::new(0.03, 0.03, 0.019),
        radius: 0.007,
    };
    let with_lump = MaterialMap::uniform(soft).with_override(lump, stiff);
    let plain = MaterialMap::uniform(soft);
    let above = (0.03, 0.03);
    let beside = (0.03, 0.015);
    // Point contact, and the scene's default patch (twice the mean surface edge of
    // these 5 mm cells).
    for patch in [0.0, 0.0114] {
        let ratio_lump = press(&mesh, &with_lump, above, 1e-3, patch)
            / press(&mesh, &with_lump, beside, 1e-3, patch);
        let ratio_plain =
            press(&mesh, &plain, above, 1e-3, patch) / press(&mesh, &plain, beside, 1e-3, patch);
        println!(
            "patch {patch} m: force above / beside at 1 mm: with inclusion {ratio_lump:.3}, \
             homogeneous {ratio_plain:.3}"
        );
        assert!(
            ratio_lump > 1.25 * ratio_plain,
            "patch {patch}: inclusion not felt: {ratio_lump:.3} vs {ratio_plain:.3}"
        );
    }
}

/// Independent reference for point loads: K assembled by the crate's FEM assembly,
/// factorised by faer's high-level sparse Cholesky (not the crate's `Factor`), solved
/// for the nodal loads `loads` (node, N); displacement of every node (m).
fn direct_sparse(b: &Block, loads: &[(usize, Vec3)]) -> Vec<Vec3> {
    let llt = b.system.k.sp_cholesky(faer::Side::Lower).unwrap();
    let mut f = Mat::<f64>::zeros(b.system.n_free(), 1);
    for &(v, load) in loads {
        if let Some(d) = b.system.dofs.node_dofs(v) {
            for a in 0..3 {
                f[(d[a], 0)] += load[a];
            }
        }
    }
    let u = faer::linalg::solvers::Solve::solve(&llt, &f);
    let mut out = vec![Vec3::zeros(); b.mesh.nodes.len()];
    for (j, &v) in b.system.dofs.free_nodes().iter().enumerate() {
        out[v] = Vec3::new(u[(3 * j, 0)], u[(3 * j + 1, 0)], u[(3 * j + 2, 0)]);
    }
    out
}

/// The top-face surface node nearest (x, y).
fn top_node(b: &Block, x: f64, y: f64) -> usize {
    *b.surface_nodes
        .iter()
        .filter(|&&v| b.mesh.nodes[v].z == SIZE.z)
        .min_by(|&&u, &&v| {
            let d = |w: usize| (b.mesh.nodes[w].xy() - nalgebra::Vector2::new(x, y)).norm();
            d(u).total_cmp(&d(v))
        })
        .unwrap()
}

/// A point load of `force` (N) on the single node `v`.
fn node_load(b: &Block, v: usize, force: Vec3) -> PointLoad {
    PointLoad {
        support: Support::patch([(v, 1.0)], b.mesh.nodes[v]).unwrap(),
        force,
    }
}

/// Largest error of the surface displacements `got` against `want` (all nodes),
/// relative to the largest surface displacement of `want`.
fn surface_error(b: &Block, got: &[Vec3], want: &[Vec3]) -> f64 {
    let scale = b
        .surface_nodes
        .iter()
        .map(|&v| want[v].norm())
        .fold(0.0, f64::max);
    b.surface_nodes
        .iter()
        .zip(got)
        .map(|(&v, g)| (g - want[v]).norm())
        .fold(0.0, f64::max)
        / scale
}

#[test]
fn tangential_point_load_displaces_the_surface_by_the_direct_solve() {
    let b = block();
    // Every surface column precomputed: the field is complete from the first step.
    let mut model = condensed(&b, usize::MAX, 8);
    let v = top_node(&b, 0.02, 0.03);
    let force = Vec3::new(0.03, -0.02, 0.0);
    model.set_loads(&[node_load(&b, v, force)]).unwrap();
    model.advance(5e-3, &[], &mut []).unwrap();
    let want = direct_sparse(&b, &[(v, force)]);
    let mut got = vec![Vec3::zeros(); b.surface_nodes.len()];
    model.displacements(&b.surface_nodes, &mut got);
    let err = surface_error(&b, &got, &want);
    println!(
        "load {force:?} N at node {v}: moved {:.3e} m, surface error {err:.2e} (relative)",
        want[v].norm()
    );
    assert!(want[v].norm() > 1e-4, "the load moves the node");
    assert!(err <= 1e-6, "surface error {err:e}");
    assert!(model.displacement_bound() >= max_norm(&got));
    // Static: another step changes nothing; an empty slice removes the load.
    model.advance(5e-3, &[], &mut []).unwrap();
    let mut again = got.clone();
    model.displacements(&b.surface_nodes, &mut again);
    assert_eq!(again, got);
    model.set_loads(&[]).unwrap();
    model.advance(5e-3, &[], &mut []).unwrap();
    model.displacements(&b.surface_nodes, &mut got);
    assert_eq!(max_norm(&got), 0.0);
}

#[test]
fn contact_under_a_point_load_holds_its_target_and_superposes() {
    let b = block();
    // A drag beside the contact, pressing a little too.
    let v = top_node(&b, 0.025, 0.03);
    let force = Vec3::new(0.03, -0.02, -0.01);
    let bvh = SurfaceBvh::build(b.triangles.clone(), &b.mesh.nodes);
    let mut patch = ContactPatch::new(0.012, &bvh, &b.mesh.nodes);
    let c = bvh
        .closest_point(&Vec3::new(0.031, 0.027, SIZE.z), 1e-6, &b.mesh.nodes)
        .unwrap();
    let n = Vec3::z();
    let support = patch.support(&bvh, &b.mesh.nodes, c.triangle, &c.bary, &n);
    let depth = 1e-3;
    let contact = PointConstraint::contact_on(support, n, c.point - n * depth);
    // Eager: every surface column precomputed. Lazy: one supernode of back solve a
    // step, so the first step's load coupling comes from forward solves alone.
    for eager in [true, false] {
        let mut model = condensed(&b, if eager { usize::MAX } else { 0 }, 64);
        if !eager {
            model.columns().set_completion_budget(1);
        }
        let mut free = [Vec3::zeros()];
        model.advance(5e-3, &[contact], &mut free).unwrap();
        model.set_loads(&[node_load(&b, v, force)]).unwrap();
        let mut f = [Vec3::zeros()];
        model.advance(5e-3, &[contact], &mut f).unwrap();
        let mut loads: Vec<(usize, Vec3)> = support.iter().map(|(u, w)| (u, f[0] * w)).collect();
        loads.push((v, force));
        let want = direct_sparse(&b, &loads);
        // The constraint holds its target with the load acting.
        let at: f64 = support.iter().map(|(u, w)| w * want[u].z).sum();
        let held = (at + depth).abs() / depth;
        // What the load alone moves the contact point along n: the constraint had to
        // account for it.
        let by_load = direct_sparse(&b, &[(v, force)]);
        let shift: f64 = support.iter().map(|(u, w)| w * by_load[u].z).sum();
        let mut got = vec![Vec3::zeros(); b.surface_nodes.len()];
        model.displacements(&b.surface_nodes, &mut got);
        println!(
            "eager {eager}: contact force {:.5} N ({:.5} N without the load), the load \
             alone moves the contact {shift:.3e} m; target error {held:.2e}",
            f[0].z, free[0].z,
        );
        assert!(shift.abs() > 0.05 * depth && (f[0] - free[0]).norm() > 0.05 * free[0].norm());
        assert!(held <= 1e-9, "target missed by {held:e}");
        assert!(f[0].z < 0.0 && f[0].xy().norm() == 0.0);
        if eager {
            let err = surface_error(&b, &got, &want);
            println!("surface error {err:.2e} (relative)");
            assert!(err <= 1e-6, "surface error {err:e}");
        } else {
            // Columns still being completed: exact at the cached nodes (the patch and
            // the loaded node).
            let cols = model.columns();
            assert!(cols.pending() > 0 && cols.is_cached(v));
            let scale = max_norm(&want);
            let mut err = 0.0f64;
            for (&u, g) in b.surface_nodes.iter().zip(&got) {
                if model.columns().is_cached(u) {
                    err = err.max((g - want[u]).norm() / scale);
                }
            }
            println!("error at the cached nodes {err:.2e} (relative)");
            assert!(err <= 1e-6, "error at the cached nodes {err:e}");
        }
    }
}

#[test]
fn bad_point_loads_are_refused_naming_the_load_and_leave_the_held_ones() {
    let b = block();
    let mut model = condensed(&b, usize::MAX, 16);
    let v = top_node(&b, 0.02, 0.03);
    let good = node_load(&b, v, Vec3::new(0.01, 0.0, 0.0));
    model.set_loads(&[good]).unwrap();
    model.advance(5e-3, &[], &mut []).unwrap();
    let mut before = vec![Vec3::zeros(); b.surface_nodes.len()];
    model.displacements(&b.surface_nodes, &mut before);
    assert!(max_norm(&before) > 0.0);
    let n_nodes = b.mesh.nodes.len();
    let mut nan_weight = good;
    nan_weight.support = Support::triangle([v, v, v], [f64::NAN, 0.5, 0.5]);
    let cases = [
        (
            vec![good, node_load(&b, v, Vec3::new(f64::NAN, 0.0, 0.0))],
            ModelError::BadLoad {
                index: 1,
                msg: "non-finite force, weight or rest point".into(),
            },
        ),
        (
            vec![node_load(&b, v, Vec3::new(0.0, f64::INFINITY, 0.0))],
            ModelError::BadLoad {
                index: 0,
                msg: "non-finite force, weight or rest point".into(),
            },
        ),
        (
            vec![nan_weight],
            ModelError::BadLoad {
                index: 0,
                msg: "non-finite force, weight or rest point".into(),
            },
        ),
        (
            vec![
                good,
                good,
                PointLoad {
                    support: Support::triangle([v, n_nodes, v], [0.2, 0.3, 0.5]),
                    force: Vec3::x(),
                },
            ],
            ModelError::BadLoad {
                index: 2,
                msg: format!("node {n_nodes} is not in the mesh of {n_nodes} nodes"),
            },
        ),
        (
            vec![good; 17],
            ModelError::TooManyLoads {
                given: 17,
                limit: 16,
            },
        ),
    ];
    for (loads, want) in cases {
        assert_eq!(model.set_loads(&loads), Err(want.clone()));
        println!("{want}");
        // The held load is unchanged.
        model.advance(5e-3, &[], &mut []).unwrap();
        let mut now = before.clone();
        model.displacements(&b.surface_nodes, &mut now);
        assert_eq!(now, before);
    }
    model.set_loads(&[good; 16]).unwrap();
    // Reset clears the held loads.
    model.reset();
    model.advance(5e-3, &[], &mut []).unwrap();
    model.displacements(&b.surface_nodes, &mut before);
    assert_eq!(max_norm(&before), 0.0);
}

#[test]
fn columns_completed_in_the_background_match_the_direct_solve_and_anticipated_nodes_arrive_complete(
) {
    let b = block();
    let top: Vec<usize> = b
        .surface_nodes
        .iter()
        .copied()
        .filter(|&v| b.mesh.nodes[v].z == SIZE.z)
        .collect();
    let (touched, ahead) = (&top[..3], &top[3..14]);
    let all: Vec<usize> = (0..b.mesh.nodes.len()).collect();

    // In step, anticipation changes nothing.
    let mut in_step = b.columns(64);
    in_step.anticipate(ahead);
    in_step.cache(touched.iter().copied()).unwrap();
    in_step.complete_all();
    assert!(!in_step.completes_in_background());
    assert!(ahead.iter().all(|&v| !in_step.is_cached(v)));

    let mut columns = b.columns(64);
    columns.complete_in_background().unwrap();
    assert!(columns.completes_in_background());
    columns.cache(touched.iter().copied()).unwrap();
    assert!(touched.iter().all(|&v| !columns.is_complete(v)));
    columns.anticipate(ahead);
    let start = std::time::Instant::now();
    while !ahead.iter().chain(touched).all(|&v| columns.is_complete(v)) {
        columns.advance_completion(0.005).unwrap();
        assert!(
            start.elapsed().as_secs() < 60,
            "background columns incomplete after 60 s: {columns:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(columns.advance_completion(0.005).unwrap());
    // 3 columns per node, forward solved once: the touched nodes by the caller, the
    // anticipated ones by the worker (not counted).
    assert_eq!(columns.solves(), 9);

    for &v in touched.iter().chain(ahead) {
        let got = columns.complete_column(v, &all).unwrap();
        let mut worst: f64 = 0.0;
        for b_axis in 0..3 {
            let mut f = Vec3::zeros();
            f[b_axis] = 1.0;
            let u = direct(&b, &[(v, f)]);
            let scale = max_norm(&u);
            let mut dense = vec![Vec3::zeros(); all.len()];
            for &(i, block) in &got {
                dense[i as usize] = block.column(b_axis).into();
            }
            for (d, e) in dense.iter().zip(&u) {
                worst = worst.max((d - e).norm() / scale);
            }
        }
        assert!(worst < 1e-9, "node {v}: column off by {worst:e} relative");
        if touched.contains(&v) {
            // The same arithmetic as the in-step back solve.
            assert_eq!(got, in_step.complete_column(v, &all).unwrap(), "node {v}");
        }
    }
}

#[test]
fn the_displacement_bound_beyond_a_distance_covers_the_direct_solve_there_and_tightens() {
    let b = block();
    let mut model = condensed(&b, usize::MAX, 64);
    // A pressing patch: the top node nearest (2, 2) cm and its top-face neighbours.
    let centre = top_node(&b, 0.02, 0.02);
    let patch: Vec<usize> = b
        .surface_nodes
        .iter()
        .copied()
        .filter(|&v| {
            b.mesh.nodes[v].z == SIZE.z && (b.mesh.nodes[v] - b.mesh.nodes[centre]).norm() < 0.011
        })
        .collect();
    let loads: Vec<PointLoad> = patch
        .iter()
        .map(|&v| node_load(&b, v, Vec3::new(0.002, 0.0, -0.05)))
        .collect();
    model.set_loads(&loads).unwrap();
    model.advance(5e-3, &[], &mut []).unwrap();
    let raw: Vec<(usize, Vec3)> = loads
        .iter()
        .map(|l| (l.support.iter().next().unwrap().0, l.force))
        .collect();
    let want = direct_sparse(&b, &raw);
    let everywhere = model.displacement_bound();
    let largest = max_norm(&want);
    assert!(everywhere >= largest);
    for point in [b.mesh.nodes[centre], Vec3::new(0.0, 0.05, SIZE.z)] {
        let mut last = f64::INFINITY;
        for i in 0..=12 {
            let distance = 0.005 * i as f64;
            let bound = model.displacement_bound_beyond(&point, distance);
            let beyond = b
                .surface_nodes
                .iter()
                .filter(|&&v| (b.mesh.nodes[v] - point).norm() >= distance)
                .map(|&v| want[v].norm())
                .fold(0.0, f64::max);
            println!(
                "{} loads, from {point:?} beyond {distance:.3} m: largest {beyond:.3e} m, \
                 bound {bound:.3e} m (over every node {everywhere:.3e} m)",
                patch.len()
            );
            assert!(
                bound >= beyond,
                "beyond {distance} m: {bound:e} < {beyond:e}"
            );
            assert!(bound <= last && bound <= everywhere);
            last = bound;
        }
    }
    assert_eq!(
        model.displacement_bound_beyond(&b.mesh.nodes[centre], 0.0),
        everywhere
    );
    // Tighter away from the loads: 3.5 cm from the patch the bound is under half the
    // one over every node (which holds at the patch itself); 0.43 when written.
    let far = model.displacement_bound_beyond(&b.mesh.nodes[centre], 0.035);
    assert!(far < 0.5 * everywhere, "{far:e} vs {everywhere:e}");
}
