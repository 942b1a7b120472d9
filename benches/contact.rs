//! One model step with a 5 mm sphere pressed 3 mm into the default block (beside the
//! inclusion, at (25, 10) mm) and sliding 0.05 mm per step: god-object on the rest
//! surface, contact rows (nodes and sphere samples), the complementarity solve in the
//! backend, the active set's stiffness and the local force model. Modal k = 40 with
//! residual flexibility, and condensed with the surface's K⁻¹ columns cached.
//!
//! And the same sphere held still 3 mm deep (beside the lump and over it), single steps
//! timed with the clock (p50, p99, max printed): the target is p99 ≤ 1 ms on
//! one core, both backends.
//!
//! And a point probe pressed 6 mm and slid 3 cm/s across fresh nodes, modal, single steps
//! timed with the clock (median, p90, p99, max printed): K⁻¹ columns completed in step
//! against on the worker thread `palpa serve` uses, on the default scene (graded, nodal
//! pressure) and on the uniform 5 mm element-pressure block it replaced.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use palpa::app::scene::build;
use palpa::pipeline::SceneModel;
use palpa::scene::{BackendKind, Scene};
use palpa::tissue::ModelStep;
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

/// Step times of a 5 mm sphere pressed 3 mm in 0.2 s at `place` and then held still
/// for 2,000 model steps (10 s), both backends: prints the percentiles of the wall
/// time and of the thread's CPU time.
fn held_sphere(_: &mut Criterion) {
    for background in [false, true] {
        for backend in [BackendKind::Modal, BackendKind::Condensed] {
            for (x, y) in [(0.025, 0.01), (0.0, 0.0)] {
                held_sphere_at(backend, (x, y), background);
            }
        }
    }
}

/// [`held_sphere`] on `backend` at (x, y) (m), the K⁻¹ columns completed in step (as
/// replays and tests do) or on the worker thread (as `palpa serve` does).
fn held_sphere_at(backend: BackendKind, (x, y): (f64, f64), background: bool) {
    let mut scene = Scene::embedded_default();
    scene.backend.kind = backend;
    scene.contact.probe_radius = 5e-3;
    let cache = std::env::temp_dir().join("palpa-bench-contact");
    let mut model = build(scene, &cache, &mut |_| {}).unwrap().model;
    if background {
        model.work_in_background().unwrap();
    }
    let dt = 5e-3;
    let held = Vec3::new(x, y, 5e-3 - 3e-3);
    let mut t = 0.0;
    for k in 0..=40 {
        t += dt;
        let depth = 3e-3 * k as f64 / 40.0 - 1e-3 * (40 - k) as f64 / 40.0;
        model.step(t, dt, Vec3::new(x, y, 5e-3 - depth));
    }
    let mut ms = Vec::with_capacity(2000);
    let mut cpu = Vec::with_capacity(2000);
    let mut force = 0.0;
    for _ in 0..2000 {
        t += dt;
        let (started, cpu_started) = (Instant::now(), thread_cpu_ms());
        force = black_box(model.step(t, dt, held)).f0.z;
        cpu.push(thread_cpu_ms() - cpu_started);
        ms.push(started.elapsed().as_secs_f64() * 1e3);
    }
    // Which held steps were slow (thread CPU > 0.5 ms): early ones are the
    // contact's columns completing, steady ones the step itself.
    let slow: Vec<usize> = (0..cpu.len()).filter(|&i| cpu[i] > 0.5).collect();
    let [wall, cpu] = [ms, cpu].map(|mut v| {
        v.sort_by(f64::total_cmp);
        let q = |p: f64| v[((p * v.len() as f64) as usize).min(v.len() - 1)];
        (q(0.5), q(0.99), v[v.len() - 1])
    });
    println!(
        "{backend:?} step, columns {}, 5 mm sphere held 3 mm deep at ({:.0}, {:.0}) mm \
         ({force:.3} N): wall p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms; thread CPU p50 {:.3} ms, \
         p99 {:.3} ms, max {:.3} ms; {} steps over 0.5 ms CPU, the first at {:?}",
        if background {
            "on the worker thread"
        } else {
            "in step"
        },
        x * 1e3,
        y * 1e3,
        wall.0,
        wall.1,
        wall.2,
        cpu.0,
        cpu.1,
        cpu.2,
        slow.len(),
        &slow[..slow.len().min(12)]
    );
}

/// CPU time of the calling thread (ms): a step's compute without the time the shared
/// machine's scheduler gave to other processes.
fn thread_cpu_ms() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return f64::NAN;
    }
    ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 * 1e-6
}

/// The default scene's text with the former default mesh: uniform 5 mm cells, element
/// pressure (stiffer than the converged FEM, docs/fem-accuracy.md).
fn uniform_element() -> String {
    include_str!("../scenes/default.toml")
        .replace(
            "graded = { focus = [0.0, 0.0, 0.0], fine = 0.0033333333, growth = [1.0, 1.0, 1.3] }",
            "cells = [20, 20, 8]",
        )
        .replace("pressure = \"nodal\"", "pressure = \"element\"")
}

/// Step times of a press to 6 mm at x = −3 cm in 0.5 s, then a 3 cm/s slide for 2.7 s,
/// stepped at 200 Hz with 4 ms rests between steps (as a model thread leaves the
/// worker room): prints the percentiles.
fn press_and_slide(_: &mut Criterion) {
    for (scene_name, text) in [
        (
            "default scene",
            include_str!("../scenes/default.toml").to_string(),
        ),
        ("uniform 5 mm element", uniform_element()),
    ] {
        for background in [false, true] {
            let scene = Scene::parse(&text, "bench.toml", std::path::Path::new(".")).unwrap();
            let cache = std::env::temp_dir().join("palpa-bench-contact");
            let mut model = build(scene, &cache, &mut |_| {}).unwrap().model;
            if background {
                model.work_in_background().unwrap();
            }
            let dt = 5e-3;
            let mut ms = Vec::with_capacity(640);
            for i in 1..=640 {
                let t = i as f64 * dt;
                let p = if t < 0.5 {
                    Vec3::new(-0.03, 0.0, 0.004 - 0.01 * t / 0.5)
                } else {
                    Vec3::new(-0.03 + 0.03 * (t - 0.5), 0.0, -0.006)
                };
                let started = Instant::now();
                black_box(model.step(t, dt, p));
                ms.push(started.elapsed().as_secs_f64() * 1e3);
                std::thread::sleep(Duration::from_millis(4));
            }
            ms.sort_by(f64::total_cmp);
            let q = |p: f64| ms[((p * ms.len() as f64) as usize).min(ms.len() - 1)];
            println!(
                "modal step, point probe press and slide, {scene_name}, columns {}: p50 {:.2} \
                 ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
                if background {
                    "on the worker thread"
                } else {
                    "in step"
                },
                q(0.5),
                q(0.9),
                q(0.99),
                ms[ms.len() - 1]
            );
        }
    }
}

criterion_group! {
    name = contact;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    targets = benches, held_sphere, press_and_slide
}
criterion_main!(contact);
