//! `palpa indent`, the virtual indentation test: the runtime models against the full
//! static FEM (an independent path: assembled Newton solve with a Lagrange multiplier
//! against the runtime's K⁻¹ columns and complementarity solve), the large-strain laws
//! against each other, and the command as a user runs it.

use palpa::app::indent::{indent, IndentOptions, Indentation, Method};
use palpa::app::scene::build;
use palpa::scene::Scene;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Depths of the acceptance curves (m).
const DEPTHS: [f64; 6] = [0.00025, 0.001, 0.002, 0.003, 0.004, 0.006];

/// Beside the inclusion and over it (m).
const BESIDE: [f64; 2] = [0.035, 0.0];
const OVER_THE_LUMP: [f64; 2] = [0.0, 0.0];

fn coarse_block() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/scenes/coarse_block.toml"),
    )
    .unwrap()
}

/// The coarse block with `law` (TOML lines) in both materials and `extra` appended.
fn scene_with(law: &str, extra: &str) -> Scene {
    let text = coarse_block()
        .replace("young = 30e3", &format!("young = 30e3\n{law}"))
        .replace("young = 240e3", &format!("young = 240e3\n{law}"));
    Scene::parse(&format!("{text}\n{extra}"), "test.toml", Path::new(".")).unwrap()
}

fn press(scene: Scene, at: [f64; 2], full: bool) -> Indentation {
    let cache = tempfile::tempdir().unwrap();
    let built = build(scene, cache.path(), &mut |_| {}).unwrap();
    indent(built, &options(at, &DEPTHS, full), &mut |_, _| {}).unwrap()
}

/// The runtime model pressed to `depths` (m).
fn press_at(scene: Scene, at: [f64; 2], depths: &[f64]) -> Indentation {
    let cache = tempfile::tempdir().unwrap();
    let built = build(scene, cache.path(), &mut |_| {}).unwrap();
    indent(built, &options(at, depths, false), &mut |_, _| {}).unwrap()
}

/// Pressing at `at` to `depths` (m), on the full FEM when `full`.
fn options(at: [f64; 2], depths: &[f64], full: bool) -> IndentOptions {
    IndentOptions {
        at,
        depths: depths.to_vec(),
        full,
    }
}

fn assert_close(a: &Indentation, b: &Indentation, tolerance: f64, what: &str) {
    for ((d, fa), fb) in a.depth_m.iter().zip(&a.force_n).zip(&b.force_n) {
        assert!(
            (fa - fb).abs() <= tolerance * fb.abs(),
            "{what}: at {d} m {fa} N against {fb} N"
        );
    }
}

#[test]
fn the_linear_runtime_models_give_the_full_fems_forces() {
    for at in [BESIDE, OVER_THE_LUMP] {
        let full = press(scene_with("", ""), at, true);
        assert!(matches!(full.method, Method::Full { .. }));
        assert!(full.force_n.windows(2).all(|w| w[1] > w[0]), "{full:?}");
        // The modal model held still is K⁻¹ (modes plus residual flexibility).
        let modal = press(scene_with("", ""), at, false);
        assert_eq!(modal.method, Method::Runtime { backend: "modal" });
        assert_close(&modal, &full, 1e-6, "modal");
        let condensed = press(scene_with("", "[backend]\nkind = \"condensed\""), at, false);
        assert_close(&condensed, &full, 1e-6, "condensed");
        // The nonlinear model's basis holds the patch's own shapes: K⁻¹ exactly.
        let nonlinear = press(scene_with("", "[backend]\nkind = \"nonlinear\""), at, false);
        assert_eq!(
            nonlinear.method,
            Method::Runtime {
                backend: "nonlinear"
            }
        );
        assert_close(&nonlinear, &full, 1e-6, "nonlinear");
        // The probe came down the up axis onto the top face and pressed along −z.
        assert!((full.surface_point.z).abs() < 1e-12, "{full:?}");
        assert!((full.normal - palpa::Vec3::z()).norm() < 1e-9, "{full:?}");
    }
}

#[test]
fn force_grows_with_stiffening_and_agrees_with_the_linear_law_when_shallow() {
    let laws = [
        ("linear", ""),
        ("neo-Hookean", "model = \"neo-hookean\""),
        (
            "Veronda–Westmann γ = 1e-6",
            "model = \"veronda-westmann\"\nstiffening = 1e-6",
        ),
        (
            "Veronda–Westmann γ = 2",
            "model = \"veronda-westmann\"\nstiffening = 2",
        ),
        (
            "Veronda–Westmann γ = 5",
            "model = \"veronda-westmann\"\nstiffening = 5",
        ),
    ];
    for (place, at) in [
        ("beside the lump", BESIDE),
        ("over the lump", OVER_THE_LUMP),
    ] {
        let curves: Vec<Indentation> = laws
            .iter()
            .map(|(_, law)| press(scene_with(law, ""), at, true))
            .collect();
        eprintln!("force (N) {place}, full FEM, coarse block:");
        eprint!("{:>30}", "depth (mm)");
        for d in DEPTHS {
            eprint!("{:>9.2}", d * 1e3);
        }
        eprintln!();
        for ((name, _), c) in laws.iter().zip(&curves) {
            eprint!("{name:>30}");
            for f in &c.force_n {
                eprint!("{f:>9.4}");
            }
            eprintln!();
        }
        let [linear, neo, vw0, vw2, vw5] = &curves[..] else {
            unreachable!()
        };
        // γ → 0 is neo-Hookean.
        assert_close(vw0, neo, 1e-5, "γ = 1e-6 against neo-Hookean");
        // All laws share the small-strain moduli: at 0.25 mm they are within a few
        // percent of Hooke's law.
        for c in &curves {
            assert!(
                (c.force_n[0] / linear.force_n[0] - 1.0).abs() < 0.03,
                "{c:?}"
            );
        }
        // And the force grows with γ at every depth past the first.
        for (i, depth) in DEPTHS.iter().enumerate().skip(1) {
            assert!(
                vw5.force_n[i] > vw2.force_n[i] && vw2.force_n[i] > neo.force_n[i],
                "{place} at {depth} m: γ = 5 {} N, γ = 2 {} N, neo-Hookean {} N",
                vw5.force_n[i],
                vw2.force_n[i],
                neo.force_n[i]
            );
        }
        // Exponential stiffening: the γ = 5 curve's secant stiffness rises with depth.
        let secant = |i: usize| vw5.force_n[i] / DEPTHS[i];
        assert!(secant(5) > 1.2 * secant(1), "{vw5:?}");
    }
}

/// The default scene with `law` (TOML lines) in both materials, run by `backend`, with
/// 5 mm cells under the probe instead of 3.3 mm: the runtime-vs-full comparison is of the
/// reduction, not of the mesh, and the shipped mesh's full solves took minutes of a debug
/// test run (docs/benchmarks.md).
fn default_with(law: &str, backend: &str) -> Scene {
    let text = crate::default_scene_with_5mm_cells()
        .replace("density = 1000\n", &format!("density = 1000\n{law}\n"))
        .replace("kind = \"modal\"", &format!("kind = \"{backend}\""))
        .replace("pressure = \"nodal\"", "pressure = \"element\"");
    Scene::parse(&text, "default.toml", Path::new(".")).unwrap()
}

/// The acceptance curves at `at` (`place` names it): the runtime nonlinear model
/// (`indent`) against the full FEM (`indent --full`) on the default block (5 mm cells)
/// made neo-Hookean and Veronda–Westmann γ = 5, at 0.25, 2 and 6 mm (the ends and middle
/// of the issue's 0.25–6 mm). The issue asks for 5 %; the reduced model gave 0.4 % on the
/// shipped mesh, and the test holds it to 1 %. The force at 6 mm grows with the
/// stiffening: linear < neo-Hookean < γ = 5.
fn assert_runtime_matches_full_fem(place: &str, at: [f64; 2]) {
    let laws = [
        ("neo-Hookean", "model = \"neo-hookean\""),
        (
            "Veronda–Westmann γ = 5",
            "model = \"veronda-westmann\"\nstiffening = 5",
        ),
    ];
    let depths = [0.00025, 0.002, 0.006];
    let press = |scene: Scene, full: bool| {
        let cache = tempfile::tempdir().unwrap();
        let built = build(scene, cache.path(), &mut |_| {}).unwrap();
        indent(built, &options(at, &depths, full), &mut |_, _| {}).unwrap()
    };
    let linear = press(default_with("", "modal"), false);
    eprintln!("force (N) {place}, default block, depths (m) {depths:?}:");
    eprintln!("{:>40} {:?}", "linear (modal runtime)", linear.force_n);
    let mut deepest = vec![linear.force_n[2]];
    for (name, law) in laws {
        let runtime = press(default_with(law, "nonlinear"), false);
        let full = press(default_with(law, "modal"), true);
        eprintln!("{:>40} {:?}", format!("{name}, runtime"), runtime.force_n);
        eprintln!("{:>40} {:?}", format!("{name}, full FEM"), full.force_n);
        assert_close(&runtime, &full, 1e-2, &format!("{name} {place}"));
        deepest.push(runtime.force_n[2]);
    }
    assert!(
        deepest.windows(2).all(|w| w[1] > w[0]),
        "{place}: {deepest:?}"
    );
}

#[test]
fn beside_the_lump_the_nonlinear_runtime_model_gives_the_full_fems_forces() {
    assert_runtime_matches_full_fem("beside the lump", BESIDE);
}

#[test]
fn over_the_lump_the_nonlinear_runtime_model_gives_the_full_fems_forces() {
    assert_runtime_matches_full_fem("over the lump", OVER_THE_LUMP);
}

/// Nodal-averaged pressure (`mesh.pressure = "nodal"`) reaches every backend: the modal
/// and condensed models held still give the full FEM's forces with the same K, and
/// without locking the block is softer than with element pressure.
#[test]
fn nodal_pressure_gives_every_backend_the_full_fems_forces() {
    let nodal = |backend: &str| {
        scene_with(
            "",
            &format!("[backend]\nkind = \"{backend}\"")
                .replace("[backend]", "[mesh]\npressure = \"nodal\"\n[backend]"),
        )
    };
    let full = press(nodal("modal"), BESIDE, true);
    let element = press(scene_with("", ""), BESIDE, true);
    for backend in ["modal", "condensed", "nonlinear"] {
        let runtime = press(nodal(backend), BESIDE, false);
        assert_close(&runtime, &full, 1e-6, backend);
    }
    for (n, e) in full.force_n.iter().zip(&element.force_n) {
        assert!(n < &(0.95 * e), "nodal {n} N against element {e} N");
    }
}

/// A sphere tip is pressed by its lowest point: at depth 0 it just touches (no force),
/// and the model's own indentation (the rest-surface proxy's) is each depth pressed (the
/// command checks it). Pressing the centre to the depth instead put half the sphere in
/// the tissue at depth 0.
#[test]
fn a_sphere_tip_is_pressed_by_its_lowest_point() {
    let depths = [0.0, 2.5e-4, 5e-4, 1e-3];
    for backend in ["modal", "condensed", "nonlinear"] {
        let sphere = scene_with(
            "",
            &format!("[contact]\nprobe_radius = 0.005\n[backend]\nkind = \"{backend}\""),
        );
        let result = press_at(sphere, BESIDE, &depths);
        println!("{backend}: {:?} N", result.force_n);
        assert_eq!(result.force_n[0], 0.0, "{backend}: touching pushes nothing");
        assert!(
            result.force_n.windows(2).all(|w| w[1] > w[0]),
            "{backend}: {:?}",
            result.force_n
        );
        // From touching, the force grows at least linearly in the depth (Hertz: as
        // d^1.5), so a quarter of the depth carries well under half the force; with the
        // centre pressed instead, 5.25 mm against 6 mm of sphere would carry most of it.
        let f = &result.force_n;
        assert!(f[1] < 0.5 * f[3], "{backend}: {f:?}");
    }
}

/// A 2 × 2 × 1 cm block of 1.25 mm cells on a rigid base, a sphere probe of 5 mm.
const FINE_SPHERE_BLOCK: &str = r#"
name = "fine block"
[mesh.box]
origin = [-0.01, -0.01, -0.01]
size = [0.02, 0.02, 0.01]
cells = [16, 16, 8]
[materials.default]
young = 30e3
[[fixed]]
below = { axis = "z", distance = 0.0 }
[contact]
probe_radius = 0.005
[backend]
kind = "condensed"
"#;

/// `indent --full` presses a sphere probe with the runtime's row on the full FEM: nothing
/// at touching, then a force growing as Hertz's d^1.5 steepened by the thin
/// block; the runtime, solving the same contact on its reduced model, gives the same
/// forces.
#[test]
fn the_full_fem_presses_a_sphere_probe() {
    let scene = Scene::parse(FINE_SPHERE_BLOCK, "fine.toml", Path::new(".")).unwrap();
    let depths = [0.0, 5e-4, 1e-3, 1.5e-3];
    let at = [3e-4, -2e-4];
    let cache = tempfile::tempdir().unwrap();
    let full = indent(
        build(scene.clone(), cache.path(), &mut |_| {}).unwrap(),
        &options(at, &depths, true),
        &mut |_, _| {},
    )
    .unwrap();
    let runtime = indent(
        build(scene, cache.path(), &mut |_| {}).unwrap(),
        &options(at, &depths[..3], false),
        &mut |_, _| {},
    )
    .unwrap();
    println!(
        "full FEM {:?} N\nruntime  {:?} N",
        full.force_n, runtime.force_n
    );
    let f = &full.force_n;
    // At touching nothing pushes, on either: the sphere's row shrinks to the pole's
    // material point, whose gap is zero.
    assert_eq!(runtime.force_n[0], 0.0);
    assert!(f[0].abs() <= 1e-9 * f[1], "at touching {} N: {f:?}", f[0]);
    let slope = (f[3] / f[1]).ln() / 3f64.ln();
    println!("log-log slope 0.5–1.5 mm: {slope:.3}");
    assert!((1.35..=1.65).contains(&slope), "slope {slope}: {f:?}");
    // Hertz on a half-space (E = 30 kPa, ν = 0.45) is the floor: a 1 cm layer bonded
    // to a rigid base under a contact 1.6–2.7 mm across is stiffer, by tens of percent,
    // and at 0.5 mm the contact disc (radius 1.6 mm) spans about one 1.25 mm cell, where
    // the mesh is stiffer still (1.61 × Hertz there, 1.49 at 1.5 mm).
    let e_star = 30e3 / (1.0 - 0.45f64.powi(2));
    for k in 1..4 {
        let hertz = 4.0 / 3.0 * e_star * 0.005f64.sqrt() * depths[k].powf(1.5);
        println!("{} mm: {:.4} N, Hertz {hertz:.4} N", depths[k] * 1e3, f[k]);
        assert!(
            (1.0..=1.65).contains(&(f[k] / hertz)),
            "{} vs {hertz}",
            f[k]
        );
    }
    let excess: Vec<f64> = (1..3).map(|k| runtime.force_n[k] / f[k] - 1.0).collect();
    println!("runtime above the full FEM by {excess:?}");
    assert!(excess.iter().all(|e| e.abs() < 1e-6), "{excess:?}");
}

fn palpa(args: &[&str]) -> (bool, String, String) {
    let cache = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_palpa"))
        .args(args)
        .env("PALPA_CACHE_DIR", cache.path())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn scene_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn the_command_prints_a_table_and_writes_json() {
    let dir = tempfile::tempdir().unwrap();
    let scene = scene_file(dir.path(), "block.toml", &coarse_block());
    let json = dir.path().join("curve.json");
    let (ok, stdout, stderr) = palpa(&[
        "indent",
        "--scene",
        scene.to_str().unwrap(),
        "--at",
        "-0.035,0",
        "--depths",
        "0.001,0.003,0.002",
        "--full",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(ok, "{stdout}\n{stderr}");
    let table: Vec<(f64, f64)> = stdout
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace().map(|x| x.parse::<f64>());
            match (it.next(), it.next(), it.next()) {
                (Some(Ok(d)), Some(Ok(f)), None) => Some((d, f)),
                _ => None,
            }
        })
        .collect();
    assert_eq!(table.len(), 3, "{stdout}");
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let numbers = |key: &str| -> Vec<f64> {
        value[key]
            .as_array()
            .unwrap_or_else(|| panic!("{key} in {value}"))
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    assert_eq!(numbers("depth_m"), [0.001, 0.003, 0.002]);
    let forces = numbers("force_n");
    for ((d, f), (dj, fj)) in table.iter().zip(numbers("depth_m").iter().zip(&forces)) {
        assert!(
            (d - dj * 1e3).abs() < 1e-9 && (f - fj).abs() < 1e-6,
            "{stdout}"
        );
    }
    // Pressed in the order given: 3 mm deeper than 2 mm, both linear in depth.
    assert!((forces[1] / forces[2] - 1.5).abs() < 1e-6, "{forces:?}");
    assert!(stderr.contains("free DOFs"), "{stderr}");
}

#[test]
fn bad_arguments_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let scene = scene_file(dir.path(), "block.toml", &coarse_block());
    let scene = scene.to_str().unwrap();
    for (args, needle) in [
        (
            vec!["--scene", scene, "--at", "0.2,0", "--depths", "0.001"],
            "misses the tissue (it spans x ∈ [-0.05, 0.05] m, y ∈ [-0.05, 0.05] m)",
        ),
        (
            vec!["--scene", scene, "--at", "0", "--depths", "0.001"],
            "give two coordinates X,Y",
        ),
        (
            vec!["--scene", scene, "--at", "0,0", "--depths", "0.001,5"],
            "depth 5 m: each must lie in [0, 1] m (metres, not millimetres)",
        ),
        (
            vec!["--scene", scene, "--at", "0,0", "--depths", "0.001,x"],
            "\"x\" is not a finite number",
        ),
    ] {
        let mut all = vec!["indent"];
        all.extend(args);
        let (ok, stdout, stderr) = palpa(&all);
        assert!(!ok, "{all:?} succeeded:\n{stdout}");
        assert!(stderr.contains(needle), "{all:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// The shipped bunny at its back and the top of its body (where one tries it first) and
/// the default block at its centre and side: a force at every depth, growing with it
/// (the linear modal model: about in proportion, ±10 %). Pressed along the shaded normal,
/// the proxy slid on the bunny's curved triangles and `indent` failed at (0, 0). The
/// bunny's back lies over its stiff lump: stiffer than the top of its body, which it is
/// not without the lump (softer there than at the top).
#[test]
fn indent_gives_a_force_at_every_depth_on_the_shipped_bunny_and_block() {
    let cache = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bunny = || Scene::load(&root.join("scenes/bunny.toml")).unwrap();
    let block = || Scene::load(&root.join("scenes/default.toml")).unwrap();
    let cases: [(&str, Scene, [f64; 2]); 5] = [
        ("bunny (0, 0)", bunny(), [0.0, 0.0]),
        ("bunny's back (0.03, 0)", bunny(), [0.03, 0.0]),
        ("bunny's side (0, 0.02)", bunny(), [0.0, 0.02]),
        ("block centre", block(), [0.0, 0.0]),
        ("block side", block(), [0.035, 0.0]),
    ];
    let mut at_1mm = Vec::new();
    for (place, scene, at) in cases {
        let built = build(scene, cache.path(), &mut |_| {}).unwrap();
        let got = indent(built, &options(at, &[0.001, 0.003], false), &mut |_, _| {})
            .unwrap_or_else(|e| panic!("{place}: {e}"));
        let [f1, f3] = [got.force_n[0], got.force_n[1]];
        assert!(f1 > 0.01, "{place}: {f1} N at 1 mm");
        let ratio = f3 / f1;
        assert!((ratio - 3.0).abs() < 0.3, "{place}: 3 mm / 1 mm = {ratio}");
        at_1mm.push(f1);
    }
    let (top, back) = (at_1mm[0], at_1mm[1]);
    assert!(
        back > 1.1 * top,
        "the bunny's back over its lump ({back} N at 1 mm) is stiffer than its top ({top} N)"
    );
}
