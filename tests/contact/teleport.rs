//! A probe first seen under the clamped base (a viewer's wild target, a device switched
//! on below the table) presses the tissue from above once lifted, as serve builds its
//! contact (the faces on the support left out); with them in, its proxy catches on the
//! base, where the tissue gives no force, and stays there.

use palpa::condensed::CondensedModel;
use palpa::pipeline::ContactPipeline;
use palpa::tissue::{LocalForceModel, ModelStep};
use palpa::Vec3;

use crate::support::block::{block, SIZE};

const DT: f64 = 5e-3;

/// Steps a point probe first at a target far below the base, then 1 cm above the top
/// face, then down to 4 mm deep; returns the force model at the end.
fn first_below_then_pressed(mut sim: ContactPipeline<CondensedModel>) -> LocalForceModel {
    let (x, y) = (SIZE.x / 2.0, SIZE.y / 2.0);
    let mut t = 0.0;
    let mut step = |sim: &mut ContactPipeline<CondensedModel>, z: f64| {
        t += DT;
        sim.step(t, DT, Vec3::new(x, y, z))
    };
    for _ in 0..3 {
        step(&mut sim, -1e160);
    }
    step(&mut sim, SIZE.z + 0.01);
    let mut last = None;
    for i in 0..=20 {
        last = Some(step(&mut sim, SIZE.z + 0.005 - 9e-3 * i as f64 / 20.0));
    }
    last.unwrap()
}

#[test]
fn a_probe_first_seen_under_the_clamped_base_presses_from_above_once_lifted() {
    let b = block();
    let model = || CondensedModel::new(b.geometry(), b.columns(256), 0, 6).unwrap();
    let serve_like = ContactPipeline::new(model(), 0.0)
        .with_fixed_nodes(|n| b.system.dofs.is_fixed(n))
        .with_patch_radius(0.01);
    let pressed = first_below_then_pressed(serve_like);
    assert!(
        pressed.in_contact && pressed.f0.z > 0.05,
        "{:?}",
        pressed.f0
    );
    // The same press made from above all along gives the same force.
    let mut fresh = ContactPipeline::new(model(), 0.0).with_patch_radius(0.01);
    let (x, y) = (SIZE.x / 2.0, SIZE.y / 2.0);
    let mut from_above = LocalForceModel::NONE;
    for i in 0..=20 {
        let z = SIZE.z + 0.005 - 9e-3 * i as f64 / 20.0;
        from_above = fresh.step(DT * (i + 1) as f64, DT, Vec3::new(x, y, z));
    }
    let gap = (pressed.f0 - from_above.f0).norm() / from_above.f0.norm();
    assert!(gap < 1e-9, "{:?} against {:?}", pressed.f0, from_above.f0);
    // With the base's faces touchable the proxy is trapped under it: no force.
    let trapped =
        first_below_then_pressed(ContactPipeline::new(model(), 0.0).with_patch_radius(0.01));
    assert!(!trapped.in_contact, "{:?}", trapped.f0);
}
