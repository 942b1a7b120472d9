use palpa::model::ModelStep;
use palpa::scene::build;
use palpa::scene::{BackendKind, Scene};
use palpa::Vec3;

#[test]
fn explore() {
    let dir = std::env::temp_dir().join("palpa-before");
    for (backend, r) in [(BackendKind::Condensed, 0.0), (BackendKind::Condensed, 0.005), (BackendKind::Modal, 0.005)] {
        let mut scene = Scene::embedded_default();
        scene.backend.kind = backend;
        scene.contact.probe_radius = r;
        let mut m0 = build(scene, &dir, &mut |_| {}).unwrap().model;
        for (x, y) in [(0.0, 0.0), (0.001, 0.0005), (0.0025, 0.0025), (0.035, 0.0)] {
            let m = &mut m0; m.reset();
            m.step(0.0, 5e-3, Vec3::new(x, y, r + 1e-3));
            let mut line = String::new();
            let mut pts = vec![];
            for i in 1..=240 {
                let d = 6e-3 * i as f64 / 240.0;
                let lf = m.step(i as f64 * 5e-3, 5e-3, Vec3::new(x, y, r - d));
                if i % 40 == 0 {
                    let c = m.contact();
                    line += &format!(" d={:.1}:F={:.3},k={:.0},rows={}", d*1e3, lf.f0.z, -lf.stiffness[(2,2)], c.map_or(0, |c| c.rows));
                    if let Some(c) = c { pts.push((d, c.point)); }
                }
            }
            let lat = if pts.len() > 1 { (pts[pts.len()-1].1 - pts[0].1).xy().norm() / (pts[pts.len()-1].0 - pts[0].0) } else { f64::NAN };
            println!("{backend:?} r={r} ({x},{y}) drift {lat:.4}{line}");
        }
    }
}
