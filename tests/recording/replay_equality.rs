//! A session recorded in lock-step (`palpa replay TRAJ --record DIR`) through a scene
//! with a scaled and rotated workspace replays from its directory alone — moved, the
//! scene file gone — to the same forces: the recorded positions are the trajectory
//! mapped once (checked against palpa's own mapping), and the replay maps them no more.

use std::path::Path;

use palpa::device::mapped::Workspace;
use palpa::device::replay::Trajectory;
use palpa::Vec3;

use super::{palpa, palpa_ok, repo};

/// The workspace every scene gets here: scaled, rotated about all three axes, offset.
const SCALE: f64 = 1.5;
const OFFSET: [f64; 3] = [0.002, -0.001, 0.003];
const ROTATION_DEG: [f64; 3] = [15.0, -10.0, 30.0];

/// The scene `name` from scenes/, its mesh path made absolute, with the workspace above.
fn scene_with_workspace(name: &str, dir: &Path) -> std::path::PathBuf {
    let source = repo().join("scenes").join(name);
    let mut doc: toml_edit::DocumentMut =
        std::fs::read_to_string(&source).unwrap().parse().unwrap();
    if let Some(file) = doc
        .get("mesh")
        .and_then(|m| m.get("file"))
        .and_then(|f| f.as_str())
    {
        let absolute = repo().join("scenes").join(file);
        doc["mesh"]["file"] = toml_edit::value(absolute.to_str().unwrap());
    }
    let mut ws = toml_edit::Table::new();
    ws["scale"] = toml_edit::value(SCALE);
    ws["offset"] = toml_edit::value(toml_edit::Array::from_iter(OFFSET));
    ws["rotation_deg"] = toml_edit::value(toml_edit::Array::from_iter(ROTATION_DEG));
    doc["device"]["workspace"] = toml_edit::Item::Table(ws);
    let path = dir.join(name);
    std::fs::write(&path, doc.to_string()).unwrap();
    path
}

/// A press in the scene frame: 0.6 s still 4 mm off the surface (after the start-up
/// ramp), then 4 mm into it over 0.4 s, held 0.2 s; along −`axis` onto the outermost node
/// along `axis` near the middle of the other two (the top of a block; the bunny's flank,
/// not an ear's tip).
fn press_in_scene(scene: &Path, axis: Vec3) -> Vec<(f64, Vec3)> {
    let scene = palpa::scene::Scene::load(scene).unwrap();
    let mesh = palpa::scene::build_mesh(&scene).unwrap();
    let nodes = &mesh.mesh.nodes;
    let centroid = nodes.iter().sum::<Vec3>() / nodes.len() as f64;
    let (lo, hi) = mesh.mesh.bounds();
    let reach = 0.1 * (hi - lo).norm();
    let top = nodes
        .iter()
        .copied()
        .filter(|p| {
            let d = p - centroid;
            (d - axis * d.dot(&axis)).norm() < reach
        })
        .max_by(|a, b| a.dot(&axis).total_cmp(&b.dot(&axis)))
        .unwrap();
    (0..=120)
        .map(|k| {
            let t = k as f64 * 0.01;
            let s = ((t - 0.6) / 0.4).clamp(0.0, 1.0);
            (t, top + axis * (0.004 - 0.008 * s))
        })
        .collect()
}

fn write_trajectory(path: &Path, samples: &[(f64, Vec3)], map: &Workspace) {
    let mut text = String::from("t,x,y,z,buttons\n");
    for (t, p) in samples {
        let d = map.to_device(p);
        text.push_str(&format!("{t},{},{},{},0\n", d.x, d.y, d.z));
    }
    std::fs::write(path, text).unwrap();
}

/// "largest difference X N" from replay's output.
fn largest_difference(stderr: &str) -> f64 {
    stderr
        .split("largest difference ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no largest difference in:\n{stderr}"))
}

fn forces(path: &Path) -> Vec<Vec3> {
    let t = Trajectory::load(path).unwrap();
    t.samples().iter().map(|s| s.force.unwrap()).collect()
}

fn recorded_replays_the_same(name: &str, axis: Vec3, tolerance: f64) {
    let tmp = tempfile::tempdir().unwrap();
    let scene = scene_with_workspace(name, tmp.path());
    let map = Workspace::new(SCALE, Vec3::from(OFFSET), ROTATION_DEG);
    let path = press_in_scene(&scene, axis);
    let trajectory = tmp.path().join("press.csv");
    write_trajectory(&trajectory, &path, &map);
    let first = tmp.path().join("first.csv");
    let rec = tmp.path().join("rec");
    palpa_ok(&[
        "replay",
        trajectory.to_str().unwrap(),
        "--scene",
        scene.to_str().unwrap(),
        "--record",
        rec.to_str().unwrap(),
        "--out",
        first.to_str().unwrap(),
    ]);
    // Mapped once: the recorded probe is the scene-frame path (the trajectory's samples
    // fall on ticks 10 apart).
    let ticks = Trajectory::load(&rec.join("ticks.csv")).unwrap();
    for (k, (t, p)) in path.iter().enumerate() {
        let s = &ticks.samples()[k * 10];
        assert!(
            (s.t - t).abs() < 1e-12,
            "{name}: tick {} at {}",
            k * 10,
            s.t
        );
        assert!(
            (s.position - p).norm() < 1e-9,
            "{name}: recorded probe {:?}, scene path {:?}",
            s.position,
            p
        );
    }
    // Self-contained: moved elsewhere, the scene file and its mesh's directory aside.
    let moved = tmp.path().join("elsewhere/rec");
    std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
    std::fs::rename(&rec, &moved).unwrap();
    std::fs::remove_file(&scene).unwrap();
    let stderr = palpa_ok(&["replay", moved.to_str().unwrap()]);
    let difference = largest_difference(&stderr);
    let (recorded, replayed) = (forces(&first), forces(&moved.join("replay.csv")));
    let peak = replayed.iter().map(|f| f.norm()).fold(0.0, f64::max);
    eprintln!("{name}: peak {peak:.4} N, largest difference recorded vs replayed {difference:e} N");
    assert!(
        peak > 0.05,
        "{name}: the press touches ({peak} N)\n{stderr}"
    );
    assert!(difference <= tolerance, "{name}: {difference} N\n{stderr}");
    assert_eq!(recorded.len(), replayed.len());
    let worst = recorded
        .iter()
        .zip(&replayed)
        .map(|(a, b)| (a - b).norm())
        .fold(0.0, f64::max);
    assert!(worst <= tolerance, "{name}: rows differ by {worst} N");
    // Through another scene: warned, naming both.
    let other = super::coarse_scene(tmp.path());
    let (status, _, stderr) = palpa(&[
        "replay",
        moved.to_str().unwrap(),
        "--scene",
        other.to_str().unwrap(),
        "--out",
        tmp.path().join("other.csv").to_str().unwrap(),
    ]);
    assert!(status.success(), "{stderr}");
    let warning = stderr
        .lines()
        .find(|l| l.starts_with("warning: ") && l.contains("another scene"))
        .unwrap_or_else(|| panic!("no warning:\n{stderr}"));
    assert!(
        warning.contains(name) && warning.contains("coarse.toml"),
        "{warning}"
    );
}

#[test]
fn a_recording_of_the_default_scene_replays_to_the_same_forces() {
    recorded_replays_the_same("default.toml", Vec3::z(), 1e-9);
}

#[test]
fn a_recording_of_the_bunny_replays_to_the_same_forces() {
    // The bunny stands along +y: pressed into its flank along −x.
    recorded_replays_the_same("bunny.toml", Vec3::x(), 1e-9);
}

#[test]
fn a_recording_of_the_large_strain_breast_replays_to_the_same_forces() {
    recorded_replays_the_same("breast.toml", Vec3::z(), 1e-9);
}
