//! The spherical probe against independent references: Hertz's half-space solution on
//! a mesh graded fine under the contact, a direct solve of K for several simultaneous
//! contacts, and mirror symmetry for a straight press.

use palpa::condensed::CondensedModel;
use palpa::fem::{Material, MaterialMap};
use palpa::mesh::generate::{graded_axis, grid_mesh, CubeSplit};
use palpa::mesh::TetMesh;
use palpa::pipeline::ContactPipeline;
use palpa::tissue::ModelStep;
use palpa::Vec3;

use crate::support::block::{Block, BOTTOM};

/// A block on a rigid base with its top face at z = 0 (every node at z ≤ 1 nm fixed), of
/// one material.
fn clamped(mesh: TetMesh, young: f64, poisson: f64) -> Block {
    let material = MaterialMap::uniform(Material::new(young, poisson, 1000.0).unwrap());
    Block::clamped(mesh, &material, BOTTOM)
}

/// The condensed model of `block` with room for `rows` contact rows.
fn condensed(block: &Block, rows: usize) -> CondensedModel {
    CondensedModel::new(block.geometry(), block.columns(4096), 0, rows).unwrap()
}

/// Presses a sphere of `radius` (m) straight down at (x, y) to each depth of `depths`
/// (m; the sphere's indentation), settling each depth over a few static steps (the
/// contact rows are linearised about the last step's surface). Returns per depth the
/// normal force (N) and the simulation after it.
fn press_to(
    sim: &mut ContactPipeline<CondensedModel>,
    radius: f64,
    x: f64,
    y: f64,
    depth: f64,
) -> f64 {
    let mut f = 0.0;
    for _ in 0..6 {
        f = sim.step(0.0, 5e-3, Vec3::new(x, y, radius - depth)).f0.z;
    }
    f
}

#[test]
fn a_sphere_pressed_into_a_graded_block_follows_hertz() {
    let (young, poisson, radius) = (30e3, 0.3, 5e-3);
    // 120 × 120 × 60 mm, 0.5 mm cells under the contact growing by 1.25 outward: the
    // contact (a ≤ 3.9 mm) spans 6–8 cells and the block is 15 contact radii deep.
    let xs = graded_axis(-0.06, 0.06, 0.0, 5e-4, 1.25);
    let zs = graded_axis(-0.06, 0.0, 0.0, 5e-4, 1.25);
    let mesh = grid_mesh("graded block", [&xs, &xs, &zs], CubeSplit::Six).unwrap();
    println!(
        "graded block: {} nodes, {} tetrahedra",
        mesh.nodes.len(),
        mesh.tets.len()
    );
    let block = clamped(mesh, young, poisson);
    let mut sim = ContactPipeline::new(condensed(&block, 1024), radius);
    let e_star = young / (1.0 - poisson * poisson);
    let hertz = |d: f64| 4.0 / 3.0 * e_star * radius.sqrt() * d.powf(1.5);
    let depths = [0.5e-3, 0.75e-3, 1e-3, 1.5e-3, 2e-3, 2.5e-3, 3e-3];
    let mut forces = Vec::new();
    sim.step(0.0, 5e-3, Vec3::new(0.0, 0.0, radius + 1e-3));
    // The contact radius is the row's own (Hertz's √(R d): the pressure profile it
    // samples), so only the force is checked against Hertz.
    println!("depth mm   force N   Hertz N   ratio");
    for &d in &depths {
        let f = press_to(&mut sim, radius, 0.0, 0.0, d);
        println!(
            "{:8.2} {:9.4} {:9.4} {:7.3}",
            d * 1e3,
            f,
            hertz(d),
            f / hertz(d)
        );
        forces.push(f);
    }
    let n = depths.len() as f64;
    let (lx, ly): (Vec<f64>, Vec<f64>) = depths
        .iter()
        .zip(&forces)
        .map(|(d, f)| (d.ln(), f.ln()))
        .unzip();
    let (mx, my) = (lx.iter().sum::<f64>() / n, ly.iter().sum::<f64>() / n);
    let slope = lx
        .iter()
        .zip(&ly)
        .map(|(x, y)| (x - mx) * (y - my))
        .sum::<f64>()
        / lx.iter().map(|x| (x - mx).powi(2)).sum::<f64>();
    let f2 = forces[4];
    println!(
        "log-log slope {slope:.3}; force at 2 mm {:+.1} % of Hertz",
        100.0 * (f2 / hertz(2e-3) - 1.0)
    );
    assert!((slope - 1.5).abs() <= 0.1, "slope {slope}");
    assert!((f2 / hertz(2e-3) - 1.0).abs() <= 0.15, "force {f2}");
}

/// Independent reference: u = K⁻¹ F by a dense Cholesky of K (nalgebra), from K
/// applied to the identity.
fn direct(block: &Block, loads: &[(usize, Vec3)]) -> Vec<Vec3> {
    use faer::Mat;
    use nalgebra::{DMatrix, DVector};
    let n = block.system.n_free();
    let mut k = Mat::<f64>::zeros(n, n);
    block
        .system
        .apply_k(k.as_mut(), Mat::<f64>::identity(n, n).as_ref());
    let kd = DMatrix::from_fn(n, n, |i, j| k[(i, j)]);
    let mut f = DVector::zeros(n);
    for &(v, load) in loads {
        if let Some(d) = block.system.dofs.node_dofs(v) {
            for a in 0..3 {
                f[d[a]] += load[a];
            }
        }
    }
    let u = kd.cholesky().expect("K is SPD").solve(&f);
    let mut out = vec![Vec3::zeros(); block.mesh.nodes.len()];
    for (j, &v) in block.system.dofs.free_nodes().iter().enumerate() {
        out[v] = Vec3::new(u[3 * j], u[3 * j + 1], u[3 * j + 2]);
    }
    out
}

/// Checks the last step's contact rows against a direct solve: the forces the model
/// reported, applied to K, put every pushing row exactly on its target and leave every
/// other row short of it. Returns the largest miss over the depth scale.
fn rows_hold_under_a_direct_solve(sim: &ContactPipeline<CondensedModel>, block: &Block) -> f64 {
    let mut loads = Vec::new();
    palpa::tissue::push_nodal_loads(sim.constraints(), sim.constraint_forces(), &mut loads);
    let u = direct(block, &loads);
    let rest = &block.mesh.nodes;
    let mut worst: f64 = 0.0;
    for (c, f) in sim.constraints().iter().zip(sim.constraint_forces()) {
        let d = c.direction(0);
        let at = c.support.rest_point(rest) + c.support.iter().map(|(v, w)| u[v] * w).sum::<Vec3>();
        let miss = d.dot(&(at - c.target));
        if *f != Vec3::zeros() {
            assert!(d.dot(f) < 0.0, "a row pulls: {f:?}");
            worst = worst.max(miss.abs());
        } else {
            // A released row's point stays on the free side of its target.
            worst = worst.max(miss.max(0.0));
        }
    }
    worst
}

/// The 6 × 6 × 3 cm block of 8 × 8 × 4 cells, top face at z = 0 (small enough for a
/// dense K).
fn small_block(split: CubeSplit) -> Block {
    let xs: Vec<f64> = (0..=8).map(|i| -0.03 + 0.0075 * i as f64).collect();
    let zs: Vec<f64> = (0..=4).map(|i| -0.03 + 0.0075 * i as f64).collect();
    let mesh = grid_mesh("small block", [&xs, &xs, &zs], split).unwrap();
    clamped(mesh, 5e3, 0.45)
}

#[test]
fn two_probes_solved_together_match_a_direct_solve_and_interact() {
    let block = small_block(CubeSplit::Six);
    let radius = 5e-3;
    let (a, b) = (Vec3::new(-0.008, 0.002, 0.0), Vec3::new(0.009, -0.001, 0.0));
    for depth in [2e-4, 1e-3, 4e-3] {
        let mut two = ContactPipeline::new(condensed(&block, 384), radius).with_probes(2);
        let mut out = [palpa::tissue::LocalForceModel::NONE; 2];
        let at = |p: Vec3| p + Vec3::z() * (radius - depth);
        for _ in 0..4 {
            two.step_probes(0.0, 5e-3, &[at(a), at(b)], &mut out);
        }
        let miss = rows_hold_under_a_direct_solve(&two, &block);
        assert!(
            miss <= 1e-6 * depth,
            "rows miss their targets by {miss:e} m at {depth}"
        );
        // Alone, each probe pushes harder than beside the other: the other's dent
        // lowers the surface under it.
        let mut alone = ContactPipeline::new(condensed(&block, 384), radius);
        let mut f_alone = 0.0;
        for _ in 0..4 {
            f_alone = alone.step(0.0, 5e-3, at(a)).f0.z;
        }
        let miss_alone = rows_hold_under_a_direct_solve(&alone, &block);
        assert!(
            miss_alone <= 1e-6 * depth,
            "alone: rows miss by {miss_alone:e} m at {depth}"
        );
        let together = out[0].f0.z;
        println!(
            "depth {:.1} mm: probe A alone {f_alone:.4} N, beside B {together:.4} N \
             (interaction {:+.2} %), probe B {:.4} N; rows {} + {}; direct-solve miss \
             {miss:.1e} m together, {miss_alone:.1e} m alone",
            depth * 1e3,
            100.0 * (together / f_alone - 1.0),
            out[1].f0.z,
            two.contact_of(0).unwrap().rows,
            two.contact_of(1).unwrap().rows
        );
        assert!(together < f_alone && together > 0.5 * f_alone);
    }
}

#[test]
fn a_straight_press_over_a_symmetric_point_keeps_the_contact_point_still() {
    // The five-tetrahedra split alternates with the parity of the cell, so the block is
    // mirror symmetric about the planes through its centre node.
    let block = small_block(CubeSplit::Five);
    for radius in [0.0, 5e-3] {
        let mut sim = ContactPipeline::new(condensed(&block, 384), radius);
        sim.step(0.0, 5e-3, Vec3::new(0.0, 0.0, radius + 1e-3));
        let mut worst: f64 = 0.0;
        for i in 1..=60 {
            let depth = 1e-4 * i as f64;
            sim.step(0.0, 5e-3, Vec3::new(0.0, 0.0, radius - depth));
            let c = sim
                .contact()
                .unwrap_or_else(|| panic!("radius {radius}: no contact at depth {depth}"));
            worst = worst.max(c.point.xy().norm());
        }
        println!("radius {radius}: contact point off the axis by at most {worst:e} m over 6 mm");
        assert!(worst < 1e-9, "{worst}");
    }
}

#[test]
fn friction_drags_the_surface_by_the_compliance_of_its_load() {
    use palpa::contact::{Friction, FrictionPhase};
    use palpa::tissue::TissueModel;
    let block = small_block(CubeSplit::Six);
    let radius = 5e-3;
    let depth = 2e-3;
    let mut sim = ContactPipeline::new(condensed(&block, 384), radius)
        .with_friction(Friction::new(1.0, 0.8).unwrap());
    let at = |x: f64| Vec3::new(x, 0.001, radius - depth);
    sim.step(0.0, 5e-3, Vec3::new(0.0, 0.001, radius + 1e-3));
    for _ in 0..4 {
        sim.step(0.0, 5e-3, at(0.0));
    }
    // Drag 0.6 mm along x while sticking, then hold.
    for i in 1..=12 {
        sim.step(0.0, 5e-3, at(5e-5 * i as f64));
    }
    for _ in 0..5 {
        sim.step(0.0, 5e-3, at(6e-4));
    }
    let before: Vec3 = sim.loads().iter().map(|l| l.force).sum();
    sim.step(0.0, 5e-3, at(6e-4));
    assert_eq!(sim.friction_phase(), Some(FrictionPhase::Stick));
    let drag: Vec3 = sim.loads().iter().map(|l| l.force).sum();
    assert!(
        drag.x > 0.0,
        "the probe drags the tissue along +x: {drag:?}"
    );
    // The drag is the reaction of the last step's friction (5 ms lag), settled by now.
    assert!(
        (drag - before).norm() < 1e-3 * drag.x,
        "{drag:?} {before:?}"
    );
    // Independent reference: K⁻¹ of the contact rows' forces plus the drag.
    let mut loads = Vec::new();
    palpa::tissue::push_nodal_loads(sim.constraints(), sim.constraint_forces(), &mut loads);
    for l in sim.loads() {
        loads.extend(l.support.iter().map(|(v, w)| (v, l.force * w)));
    }
    let u = direct(&block, &loads);
    let nodes = block.surface_nodes.clone();
    let mut model_u = vec![Vec3::zeros(); nodes.len()];
    sim.model_mut().displacements(&nodes, &mut model_u);
    let scale = nodes.iter().map(|&v| u[v].norm()).fold(0.0, f64::max);
    let worst = nodes
        .iter()
        .zip(&model_u)
        .map(|(&v, m)| (u[v] - m).norm())
        .fold(0.0, f64::max);
    let footprint: Vec3 = sim.loads()[0].support.iter().map(|(v, w)| u[v] * w).sum();
    println!(
        "drag {:.4} N moves the footprint {:.3} mm along x; surface against K⁻¹F: {:.1e} \
         of the largest displacement",
        drag.x,
        footprint.x * 1e3,
        worst / scale
    );
    assert!(worst <= 1e-6 * scale, "{worst:e} against {scale:e}");
    // The drag's share: the footprint moves along +x against where the normal rows
    // alone put it (the sphere, now on the flank of the dent it made, pushes that flank
    // back along −x).
    let mut without = Vec::new();
    palpa::tissue::push_nodal_loads(sim.constraints(), sim.constraint_forces(), &mut without);
    let u0 = direct(&block, &without);
    let footprint0: Vec3 = sim.loads()[0].support.iter().map(|(v, w)| u0[v] * w).sum();
    println!(
        "the drag moves the footprint {:.3} mm along x",
        (footprint.x - footprint0.x) * 1e3
    );
    assert!(
        footprint.x - footprint0.x > 0.0,
        "{footprint:?} {footprint0:?}"
    );
}
