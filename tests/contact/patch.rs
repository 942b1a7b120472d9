//! The contact patch and Coulomb friction through the whole probe step
//! (`ContactPipeline`), on the default tissue block and the shared test block.

use palpa::app::scene::build;
use palpa::pipeline::SceneModel;
use palpa::scene::{BackendKind, Scene};
use palpa::tissue::{LocalForceModel, ModelStep};
use palpa::Vec3;

/// The default scene's block (top at z = 0) on the condensed backend (static:
/// the force depends on the probe position only), with contact patch radius `patch`
/// (m; `None`: the scene default).
fn default_block(patch: Option<f64>, cache: &std::path::Path) -> SceneModel {
    default_block_on(BackendKind::Condensed, patch, cache)
}

/// The default scene's block on `backend` with contact patch radius `patch`.
fn default_block_on(
    backend: BackendKind,
    patch: Option<f64>,
    cache: &std::path::Path,
) -> SceneModel {
    let mut scene = Scene::embedded_default();
    scene.backend.kind = backend;
    scene.backend.condensed.precompute_cap = 0;
    scene.backend.columns.cache_size = 512;
    scene.contact.patch_radius = patch;
    build(scene, cache, &mut |_| {}).unwrap().model
}

/// Local force models sliding 2 mm deep along x across five cells of the middle of
/// the block (beside the inclusion), 0.1 mm per step.
fn slide(model: &mut SceneModel) -> Vec<LocalForceModel> {
    let (y, depth, dt) = (-0.0263, 2e-3, 5e-3);
    let x0 = -0.0125;
    model.step(0.0, dt, Vec3::new(x0, y, 1e-3));
    (0..=250)
        .map(|i| {
            model.step(
                (i + 1) as f64 * dt,
                dt,
                Vec3::new(x0 + 1e-4 * i as f64, y, -depth),
            )
        })
        .collect()
}

/// Mesh ripple of the normal force: peak-to-peak of its deviation from the best
/// quadratic in x (the block's own smooth variation toward the inclusion) over the
/// mean force.
fn ripple(forces: &[LocalForceModel]) -> f64 {
    let f: Vec<f64> = forces.iter().map(|m| m.f0.z).collect();
    let n = f.len();
    let s: Vec<f64> = (0..n).map(|i| i as f64 / (n - 1) as f64 - 0.5).collect();
    let a = nalgebra::DMatrix::from_fn(n, 3, |i, j| s[i].powi(j as i32));
    let fit = a
        .clone()
        .svd(true, true)
        .solve(&nalgebra::DVector::from_column_slice(&f), 1e-12)
        .unwrap();
    let resid = nalgebra::DVector::from_column_slice(&f) - a * fit;
    let mean = f.iter().sum::<f64>() / n as f64;
    (resid.max() - resid.min()) / mean
}

#[test]
fn patch_contact_removes_the_mesh_ripple_when_sliding() {
    let cache = crate::cache_dir();
    let mut measured = Vec::new();
    // 0: the barycentric point (before); None: the scene default, twice the mean
    // surface edge (11.4 mm on this block).
    for patch in [Some(0.0), Some(8e-3), None] {
        let mut model = default_block(patch, &cache);
        let forces = slide(&mut model);
        assert!(
            forces.iter().all(|m| m.in_contact),
            "{patch:?} lost contact"
        );
        let mean = forces.iter().map(|m| m.f0.z).sum::<f64>() / forces.len() as f64;
        let r = ripple(&forces);
        println!(
            "patch radius {patch:?}: mean normal force {mean:.4} N, \
             ripple (peak-to-peak / mean) {:.2} %",
            100.0 * r
        );
        measured.push(r);
    }
    // The point constraint feels every cell (measured 40.7 %); the default patch
    // leaves 2.3 %.
    assert!(
        measured[0] > 0.25,
        "point contact ripple {:.3}",
        measured[0]
    );
    assert!(
        measured[1] < 0.5 * measured[0],
        "8 mm patch {:.3}",
        measured[1]
    );
    assert!(
        measured[2] < 0.04,
        "default patch ripple {:.3}",
        measured[2]
    );
}

/// The same on the modal backend (k = 40 with residual flexibility), sliding slowly
/// (2 mm/s) so the modes follow quasi-statically.
#[test]
fn patch_contact_removes_the_mesh_ripple_on_the_modal_backend() {
    let cache = crate::cache_dir();
    let mut measured = Vec::new();
    for patch in [Some(0.0), None] {
        let mut model = default_block_on(BackendKind::Modal, patch, &cache);
        let (y, depth, dt) = (-0.0263, 2e-3, 5e-3);
        let x0 = -0.0125;
        model.step(0.0, dt, Vec3::new(x0, y, 1e-3));
        let mut t = 0.0;
        for i in 1..=200 {
            t += dt;
            model.step(t, dt, Vec3::new(x0, y, -depth * i as f64 / 200.0));
        }
        let forces: Vec<LocalForceModel> = (0..=2500)
            .map(|i| {
                t += dt;
                model.step(t, dt, Vec3::new(x0 + 1e-5 * i as f64, y, -depth))
            })
            .collect();
        assert!(
            forces.iter().all(|m| m.in_contact),
            "{patch:?} lost contact"
        );
        let r = ripple(&forces);
        println!("modal, patch radius {patch:?}: ripple {:.2} %", 100.0 * r);
        measured.push(r);
    }
    assert!(
        measured[0] > 0.25,
        "point contact ripple {:.3}",
        measured[0]
    );
    assert!(
        measured[1] < 0.04,
        "default patch ripple {:.3}",
        measured[1]
    );
}

#[test]
fn a_slowly_lifted_patch_contact_unloads_smoothly_and_releases_at_the_surface() {
    let cache = crate::cache_dir();
    let mut model = default_block(None, &cache);
    let (x, y, dt) = (-0.0213, -0.0263, 5e-3);
    model.step(0.0, dt, Vec3::new(x, y, 1e-3));
    for i in 1..=20 {
        model.step(i as f64 * dt, dt, Vec3::new(x, y, -1e-4 * i as f64));
    }
    // Lift from 2 mm deep to 1 mm above in 0.05 mm steps.
    let mut last = f64::INFINITY;
    let mut released_at = None;
    for i in 0..=60 {
        let z = -2e-3 + 5e-5 * i as f64;
        let m = model.step((21 + i) as f64 * dt, dt, Vec3::new(x, y, z));
        let f = m.f0.z;
        assert!(
            f >= 0.0 && f <= last + 1e-12,
            "z {z}: force {f} after {last}"
        );
        if m.in_contact {
            assert!(released_at.is_none(), "contact came back at z {z}");
        } else if released_at.is_none() {
            released_at = Some(z);
        }
        last = f;
    }
    // Static tissue: the force reaches zero where the tip meets the rest surface.
    let z = released_at.expect("released");
    assert!(z.abs() <= 5e-5 + 1e-12, "released at z = {z}");
}

#[test]
fn scene_friction_reaches_the_probe() {
    let cache = crate::cache_dir();
    let mut scene = Scene::embedded_default();
    scene.backend.kind = BackendKind::Condensed;
    scene.backend.condensed.precompute_cap = 0;
    scene.contact.friction = 0.5;
    let mut model = build(scene, &cache, &mut |_| {}).unwrap().model;
    let SceneModel::Condensed(sim) = &model else {
        panic!("condensed scene");
    };
    assert!(
        (sim.patch_radius() - 8.76e-3).abs() < 0.1e-3,
        "{}",
        sim.patch_radius()
    );
    let (x, y, dt) = (-0.02, -0.0263, 5e-3);
    model.step(0.0, dt, Vec3::new(x, y, 1e-3));
    model.step(dt, dt, Vec3::new(x, y, -2e-3));
    let dragged = model.step(2.0 * dt, dt, Vec3::new(x + 5e-4, y, -2e-3));
    assert!(dragged.in_contact && dragged.f0.x < -0.05 * dragged.f0.z);
}

mod friction {
    use crate::support::block::{block, SIZE};

    use palpa::condensed::CondensedModel;
    use palpa::contact::{Friction, FrictionPhase};

    use palpa::pipeline::ContactPipeline;
    use palpa::tissue::{LocalForceModel, ModelStep};
    use palpa::Vec3;

    const DT: f64 = 5e-3;

    /// The shared clamped block on the condensed backend, a 10 mm contact patch.
    fn sim(friction: Friction) -> ContactPipeline<CondensedModel> {
        let b = block();
        let model = CondensedModel::new(b.geometry(), b.columns(256), 0, 6).unwrap();
        ContactPipeline::new(model, 0.0)
            .with_patch_radius(0.01)
            .with_friction(friction)
    }

    /// Tangential part of the force on the probe (N).
    fn tangential(m: &LocalForceModel) -> Vec3 {
        m.f0 - m.normal * m.f0.dot(&m.normal)
    }

    /// Presses 1.5 mm at (x, y) and returns the step count used.
    fn press(sim: &mut ContactPipeline<CondensedModel>, x: f64, y: f64) -> LocalForceModel {
        sim.step(0.0, DT, Vec3::new(x, y, SIZE.z + 1e-3));
        let mut last = LocalForceModel::NONE;
        for i in 1..=10 {
            last = sim.step(
                i as f64 * DT,
                DT,
                Vec3::new(x, y, SIZE.z - 1.5e-3 * i as f64 / 10.0),
            );
        }
        last
    }

    #[test]
    fn zero_friction_is_the_frictionless_contact_bit_for_bit() {
        let mut plain = sim(Friction::NONE);
        let mut zero = sim(Friction::new(0.0, 0.0).unwrap());
        let path = |i: usize| {
            let s = i as f64 * DT;
            Vec3::new(
                0.03 + 4e-3 * s.sin(),
                0.027 + 3e-3 * (2.0 * s).sin(),
                SIZE.z + 1e-3 - 2.5e-3 * (s * 0.7).sin().abs(),
            )
        };
        for i in 0..600 {
            let (a, b) = (
                plain.step(i as f64 * DT, DT, path(i)),
                zero.step(i as f64 * DT, DT, path(i)),
            );
            assert_eq!(a, b, "step {i}");
            assert_eq!(tangential(&a).norm(), 0.0);
        }
    }

    #[test]
    fn sticks_inside_the_cone_slips_on_it_and_releases_on_lift_off() {
        let (mu_s, mu_k) = (0.6, 0.4);
        let mut sim = sim(Friction::new(mu_s, mu_k).unwrap());
        let (x, y) = (0.031, 0.027);
        let pressed = press(&mut sim, x, y);
        // Pressing straight in: the material point under the tip barely moves sideways.
        let fn0 = pressed.f0.dot(&pressed.normal);
        assert!(pressed.in_contact && tangential(&pressed).norm() <= 0.02 * fn0);
        let anchor = sim.stick_point().unwrap();
        // Stick: small sideways moves leave the stick point where it was, and the
        // tangential force pulls back, growing in proportion to the move.
        let mut t = 11.0 * DT;
        let mut ratios = Vec::new();
        let mut prev = pressed;
        for i in 1..=5 {
            let dx = 4e-5 * i as f64;
            let m = sim.step(t, DT, Vec3::new(x + dx, y, SIZE.z - 1.5e-3));
            t += DT;
            assert_eq!(sim.friction_phase(), Some(FrictionPhase::Stick));
            assert_eq!(sim.stick_point(), Some(anchor));
            let ft = tangential(&m);
            let fn_ = m.f0.dot(&m.normal);
            let ft0 = tangential(&pressed);
            assert!(ft.x < ft0.x && ft.norm() <= mu_s * fn_ + 1e-12);
            ratios.push(-(ft.x - ft0.x) / dx);
            // The local model predicts this step's change of the force along the motion
            // from the last one (the contact point does not track the tip exactly on
            // this coarse mesh, so only to 35 %).
            let predicted = prev.stiffness * (m.x0 - prev.x0);
            let actual = m.f0 - prev.f0;
            assert!(
                (predicted.x - actual.x).abs() <= 0.35 * actual.x.abs(),
                "stick step {i}: predicted change {predicted:?}, got {actual:?}"
            );
            prev = m;
        }
        let (lo, hi) = ratios
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &r| (a.min(r), b.max(r)));
        println!("stick: tangential stiffness {lo:.2}..{hi:.2} N/m");
        // A spring: the same stiffness for every move (to the contact point noise of
        // this 10 mm mesh).
        assert!(
            hi / lo < 1.3,
            "tangential force not proportional to the move"
        );
        // Slip: drag 6 mm; the tangential force sits on the kinetic cone and the stick
        // point trails the probe. With μ_k < μ_s the contact sticks again after each
        // slip until the spring reaches the static cone: stick-slip.
        let mut slips = 0;
        for i in 1..=60 {
            let probe = Vec3::new(x + 2e-4 + 1e-4 * i as f64, y, SIZE.z - 1.5e-3);
            let m = sim.step(t, DT, probe);
            t += DT;
            assert!(m.in_contact, "slip step {i}");
            let (ft, fn_) = (tangential(&m), m.f0.dot(&m.normal));
            assert!(ft.norm() <= mu_s * fn_ * (1.0 + 1e-12), "outside the cone");
            if sim.friction_phase() == Some(FrictionPhase::Slip) {
                assert!(
                    (ft.norm() - mu_k * fn_).abs() <= 1e-9 * fn_,
                    "slip step {i}"
                );
                assert!(ft.x < 0.0);
                slips += 1;
            }
            assert!(m.f0.iter().all(|c| c.is_finite()));
        }
        println!("slip in {slips} of 60 drag steps");
        assert!(slips >= 5);
        let trail = sim.stick_point().unwrap();
        // Within the static cone distance μ_s f_n / k_t (~1.3 mm) behind the tip.
        assert!(
            trail.x > x + 4e-3 && trail.x < x + 6.2e-3,
            "stick point {trail:?}"
        );
        // Lift-off releases the contact and the stick point.
        let lifted = sim.step(t, DT, Vec3::new(x + 6.2e-3, y, SIZE.z + 2e-3));
        assert!(!lifted.in_contact && lifted.f0 == Vec3::zeros());
        assert_eq!(sim.stick_point(), None);
        // Pressing again sticks afresh: no tangential force at the new spot.
        let again = press(&mut sim, x - 0.01, y);
        assert!(again.in_contact && tangential(&again).norm() <= 0.02 * again.f0.norm());
    }

    #[test]
    fn a_closed_rubbing_cycle_injects_no_energy() {
        let mut sim = sim(Friction::new(0.5, 0.3).unwrap());
        let (x, y) = (0.03, 0.027);
        let mut prev = press(&mut sim, x, y);
        // Work of the force on the probe over three back-and-forth strokes (trapezoid
        // over the model steps); friction may only take energy out.
        let mut work = 0.0;
        let mut dissipated_scale = 0.0;
        let mut t = 11.0 * DT;
        for i in 1..=300 {
            let s = i as f64 / 100.0 * std::f64::consts::TAU;
            let probe = Vec3::new(
                x + 3e-3 * s.sin(),
                y + 1e-3 * (1.0 - s.cos()),
                SIZE.z - 1.5e-3,
            );
            let m = sim.step(t, DT, probe);
            t += DT;
            let dx = m.x0 - prev.x0;
            work += 0.5 * (m.f0 + prev.f0).dot(&dx);
            dissipated_scale += tangential(&m).norm() * dx.norm();
            prev = m;
        }
        println!("closed cycle: work on the probe {work:.3e} J (friction scale {dissipated_scale:.3e} J)");
        assert!(work < 0.0, "friction cycle returned {work:e} J");
        assert!(-work > 0.5 * dissipated_scale, "too little dissipated");
    }

    #[test]
    fn friction_survives_degenerate_queries() {
        let fr = Friction::new(0.8, 0.8).unwrap();
        // Exactly on a node, on an edge; NaN probe; pressing into the clamped bottom.
        for p in [
            Vec3::new(0.03, 0.03, SIZE.z - 1e-3),
            Vec3::new(0.025, 0.03, SIZE.z - 1e-3),
        ] {
            let mut sim = sim(fr);
            sim.step(0.0, DT, p + Vec3::new(0.0, 0.0, 2e-3));
            let m = sim.step(DT, DT, p);
            assert!(m.in_contact && m.f0.iter().all(|c| c.is_finite()));
            let m = sim.step(2.0 * DT, DT, p);
            assert!(
                m.f0.iter().all(|c| c.is_finite()) && m.stiffness.iter().all(|c| c.is_finite())
            );
            let nan = sim.step(3.0 * DT, DT, Vec3::new(f64::NAN, 0.0, 0.0));
            assert!(!nan.in_contact && nan.f0 == Vec3::zeros());
            assert_eq!(sim.stick_point(), None);
        }
        let mut sim = sim(fr);
        sim.step(0.0, DT, Vec3::new(0.03, 0.03, -2e-3));
        let m = sim.step(DT, DT, Vec3::new(0.03, 0.03, 1e-3));
        assert!(!m.in_contact && m.f0 == Vec3::zeros());
    }
}
