//! `palpa replay` and `palpa precompute` as a user runs them (the built binary): the
//! replay CSV holds exactly the forces of an in-process lock-step run of the same scene,
//! behaves physically (no force above the surface, indentation = probe depth), the plot
//! is well-formed SVG, and the second build of a scene loads its precompute from the
//! cache instead of recomputing.

use palpa::app::scene::build;
use palpa::device::replay::Trajectory;
use palpa::scene::PrecomputeOutcome;
use palpa::scene::{BackendKind, Scene};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The default block, coarse (10 × 10 × 4 cells) so it precomputes in about a second.
const SCENE: &str = include_str!("../data/scenes/coarse_block.toml");

fn trajectory(name: &str) -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/trajectories"
    ))
    .join(name)
}

fn palpa(args: &[&str], cache: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_palpa"))
        .args(args)
        .env("PALPA_CACHE_DIR", cache)
        .env("RUST_LOG", "error")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "palpa {args:?} failed:\n{text}");
    text
}

/// The header and rows of a replay CSV, after its `# scene:` line (which must be first).
fn parse_csv(text: &str) -> (String, Vec<Vec<f64>>) {
    assert!(
        text.starts_with("# scene: "),
        "{}",
        &text[..text.len().min(80)]
    );
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let header = lines.next().unwrap().to_string();
    let rows = lines
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    (header, rows)
}

/// Well-formedness of the SVG: one `<svg>` root in the SVG namespace, every element
/// closed in order, attribute quotes balanced, and every polyline's points numeric.
fn check_svg(text: &str) {
    assert!(text.trim_start().starts_with("<svg "), "root is not <svg>");
    assert!(text.contains(r#"xmlns="http://www.w3.org/2000/svg""#));
    let mut stack: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        let close = rest[open..].find('>').expect("unterminated tag") + open;
        let tag = &rest[open + 1..close];
        assert_eq!(
            tag.matches('"').count() % 2,
            0,
            "unbalanced quotes in <{tag}>"
        );
        assert!(!rest[..open].contains('>'), "stray '>' in text");
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(
                stack.pop().as_deref(),
                Some(name.trim()),
                "mismatched </{name}>"
            );
        } else if !tag.ends_with('/') {
            stack.push(tag.split_whitespace().next().unwrap().to_string());
        }
        if tag.starts_with("polyline") {
            let points = tag
                .split("points=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            for p in points.split_whitespace() {
                let (x, y) = p.split_once(',').unwrap();
                assert!(x.parse::<f64>().unwrap().is_finite());
                assert!(y.parse::<f64>().unwrap().is_finite());
            }
        }
        rest = &rest[close + 1..];
    }
    assert!(stack.is_empty(), "unclosed elements {stack:?}");
    assert!(rest.trim().is_empty());
}

/// Replays press_hold_release.csv through `scene` (None: the built-in default scene)
/// with the binary, and checks the CSV against an in-process lock-step run, physics,
/// and the plot.
fn replay_press_hold_release(scene: Option<&str>) {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let scene_path = dir.path().join("scene.toml");
    std::fs::write(&scene_path, scene.unwrap_or(palpa::scene::DEFAULT_SCENE)).unwrap();
    let mut scene_args = vec![];
    if scene.is_some() {
        scene_args = vec!["--scene", scene_path.to_str().unwrap()];
    }
    let traj_path = trajectory("press_hold_release.csv");
    let out = dir.path().join("out.csv");
    let plot = dir.path().join("out.svg");
    let mut args = vec![
        "replay",
        traj_path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--plot",
        plot.to_str().unwrap(),
    ];
    args.extend(scene_args);
    palpa(&args, &cache);
    let (header, rows) = parse_csv(&std::fs::read_to_string(&out).unwrap());
    assert_eq!(header, "t,x,y,z,fx,fy,fz,depth,contact");

    // The same scene and trajectory in lock-step, in this process; a modal build must
    // load the precompute the binary cached (the condensed and nonlinear backends have
    // none).
    let traj = Trajectory::load(&traj_path).unwrap();
    let built = build(Scene::load(&scene_path).unwrap(), &cache, &mut |_| {}).unwrap();
    let expected_outcome = match built.scene.backend.kind {
        BackendKind::Modal => matches!(built.precompute, PrecomputeOutcome::Loaded { .. }),
        BackendKind::Condensed | BackendKind::Nonlinear => {
            matches!(built.precompute, PrecomputeOutcome::NotModal)
        }
    };
    assert!(expected_outcome, "{:?}", built.precompute);
    let expected = palpa::app::replay::replay(built, traj.clone());
    let ticks = (traj.duration() / 1e-3).floor() as usize + 1;
    assert_eq!(rows.len(), ticks);
    assert_eq!(expected.len(), ticks);
    for (k, (row, e)) in rows.iter().zip(&expected).enumerate() {
        assert_eq!(row[0], e.t, "tick {k}");
        assert_eq!(row[0], k as f64 * 1e-3, "tick {k}");
        assert_eq!(&row[1..4], e.probe.as_slice(), "tick {k}");
        assert_eq!(&row[4..7], e.force.as_slice(), "tick {k}: forces differ");
        assert_eq!(row[7], e.depth, "tick {k}");
        assert_eq!(row[8], f64::from(u8::from(e.contact)), "tick {k}");
    }

    // Physics, independent of the implementation: the probe sits at (20, 0) mm, the
    // undeformed top surface is z = 0 with normal +z. Above it there is no force; below
    // it (pressing in until 1.3 s, holding 8 mm deep until 2.3 s) the indentation is the
    // probe's depth and the force pushes the hand back out (+z), growing while pressing.
    let mut last_fz = 0.0;
    for row in &rows {
        let (t, z, fz, depth) = (row[0], row[3], row[6], row[7]);
        if z > 1e-3 {
            assert_eq!(
                &row[4..7],
                &[0.0, 0.0, 0.0],
                "force above the surface at t = {t}"
            );
            assert_eq!(depth, 0.0);
        }
        if z < -1e-3 && t <= 2.3 {
            assert_eq!(row[8], 1.0, "t = {t}");
            assert!((depth + z).abs() < 5e-4, "t = {t}: depth {depth} for z {z}");
            assert!(fz > 0.0, "t = {t}: fz {fz}");
            // Frictionless: along the deformed surface's normal, which tilts by a few
            // degrees next to the stiff inclusion, so mostly +z.
            assert!(
                row[4].abs() < 0.2 * fz && row[5].abs() < 0.2 * fz,
                "t = {t}"
            );
            if t <= 1.3 {
                assert!(fz >= last_fz - 1e-3, "t = {t}: fz {fz} after {last_fz}");
                last_fz = fz;
            }
        }
    }
    assert!(
        last_fz > 0.5,
        "8 mm into 30 kPa tissue should push back, got {last_fz} N"
    );

    check_svg(&std::fs::read_to_string(&plot).unwrap());
}

#[test]
fn replay_of_the_default_scene_writes_the_lock_step_forces_and_a_valid_plot() {
    replay_press_hold_release(None);
}

#[test]
fn replay_of_a_coarse_block_keeps_contact_while_held() {
    replay_press_hold_release(Some(SCENE));
}

#[test]
fn replay_of_a_coarse_block_on_the_condensed_backend_keeps_contact_while_held() {
    let scene = SCENE.replace(
        "[backend.modal]",
        "[backend]\nkind = \"condensed\"\n[backend.modal]",
    );
    replay_press_hold_release(Some(&scene));
}

#[test]
fn precompute_writes_the_cache_and_the_second_run_loads_it() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let scene_path = dir.path().join("coarse.toml");
    std::fs::write(&scene_path, SCENE).unwrap();
    let scene = scene_path.to_str().unwrap();
    let first = palpa(&["precompute", "--scene", scene], &cache);
    assert!(first.contains("computed in"), "{first}");
    let files: Vec<_> = std::fs::read_dir(&cache).unwrap().collect();
    assert_eq!(files.len(), 1);
    let second = palpa(&["precompute", "--scene", scene], &cache);
    assert!(second.contains("loaded from cache"), "{second}");
    // A changed material is a different precompute: recomputed, not the stale file.
    std::fs::write(&scene_path, SCENE.replace("young = 30e3", "young = 31e3")).unwrap();
    let third = palpa(&["precompute", "--scene", scene], &cache);
    assert!(third.contains("computed in"), "{third}");
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 2);
}

#[test]
fn bad_input_is_a_message_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let scene_path = dir.path().join("bad.toml");
    std::fs::write(&scene_path, "[materials.default]\nyoung = -5\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_palpa"))
        .args(["precompute", "--scene", scene_path.to_str().unwrap()])
        .env("PALPA_CACHE_DIR", dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.toml")
            && err.contains("materials.default.young: must lie in (0, 1e12], got -5"),
        "{err}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_palpa"))
        .args(["replay", "missing.csv", "--out", "x.csv"])
        .env("PALPA_CACHE_DIR", dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.csv"));
}
