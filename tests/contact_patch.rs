//! The contact patch and Coulomb friction through the whole probe step
//! (`Simulation`), on the default tissue block and the shared test block.

use palpa::model::{LocalForceModel, ModelStep};
use palpa::scene::model::{build, SceneModel};
use palpa::scene::{BackendKind, Scene};
use palpa::Vec3;

/// The default scene's block (5 mm cells, top at z = 0) on the condensed backend (static:
/// the force depends on the probe position only), with contact patch radius `patch`
/// (m; `None`: the scene default).
fn default_block(patch: Option<f64>, cache: &std::path::Path) -> SceneModel {
    let mut scene = Scene::embedded_default();
    scene.backend.kind = BackendKind::Condensed;
    scene.backend.condensed.precompute_cap = 0;
    scene.backend.condensed.cache_size = 512;
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
    let cache = tempfile::tempdir().unwrap();
    let mut measured = Vec::new();
    for patch in [Some(0.0), Some(5e-3), Some(8e-3), None, Some(15e-3)] {
        let mut model = default_block(patch, cache.path());
        let forces = slide(&mut model);
        assert!(forces.iter().all(|m| m.in_contact));
        let mean = forces.iter().map(|m| m.f0.z).sum::<f64>() / forces.len() as f64;
        let r = ripple(&forces);
        println!("patch {patch:?}: mean {mean:.4} N, ripple {:.2} %", 100.0 * r);
        measured.push(r);
    }
}
