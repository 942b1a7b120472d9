//! One model step with a 5 mm sphere pressed 3 mm into the default block (beside the
//! inclusion, at (25, 10) mm) and sliding 0.05 mm per step: god-object on the rest
//! surface, contact rows (nodes and sphere samples), the complementarity solve in the
//! backend, the active set's stiffness and the local force model. Modal k = 40 with
//! residual flexibility, and condensed with the surface's K⁻¹ columns cached.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use palpa::model::ModelStep;
use palpa::scene::{build, BackendKind, Scene};
use palpa::session::SceneModel;
use palpa::Vec3;

/// The default scene with a 5 mm sphere on `backend`, pressed 3 mm and settled.
fn pressed(backend: BackendKind) -> SceneModel {
    let mut scene = Scene::embedded_default();
    scene.backend.kind = backend;
    scene.contact.probe_radius = 5e-3;
    let cache = std::env::temp_dir().join("palpa-bench-contact");
    let mut model = build(scene, &cache, &mut |_| {}).unwrap().model;
    model.set_force_cap(10.0);
    for i in 0..400 {
        model.step(i as f64 * 5e-3, 5e-3, probe(i));
    }
    let c = model.contact().expect("pressed");
    println!(
        "{backend:?}: {} pushing rows, {:.3} N at 3 mm",
        c.rows,
        model.step(2.0, 5e-3, probe(400)).f0.z
    );
    model
}

/// The sphere's centre at step `i`: 3 mm deep, sliding back and forth over 2 mm.
fn probe(i: usize) -> Vec3 {
    let s = (i % 80) as f64;
    let x = 0.025 + 5e-5 * if s < 40.0 { s } else { 80.0 - s };
    Vec3::new(x, 0.01, 5e-3 - 3e-3)
}

fn benches(c: &mut Criterion) {
    for (backend, label) in [
        (BackendKind::Modal, "modal k = 40"),
        (BackendKind::Condensed, "condensed, cached columns"),
    ] {
        let mut model = pressed(backend);
        let mut i = 400;
        c.bench_function(
            &format!("sphere 5 mm pressed 3 mm, one model step, {label}"),
            |b| {
                b.iter(|| {
                    i += 1;
                    black_box(model.step(i as f64 * 5e-3, 5e-3, probe(i)))
                })
            },
        );
    }
}

criterion_group! {
    name = contact;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    targets = benches
}
criterion_main!(contact);
