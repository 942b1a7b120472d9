//! What `palpa modes` and the scene commands tell the user (the built binary): rigid
//! modes at 0 Hz, the response column explained with its units, the default material
//! the default scene's, the Poisson-ratio warning naming each material once, and nodal
//! pressure unlocking a nearly incompressible beam.

use std::path::Path;
use std::process::Command;

/// (stdout, stderr) of a successful run with warnings only on stderr.
fn palpa(args: &[&str], cache: &Path) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_palpa"))
        .args(args)
        .env("PALPA_CACHE_DIR", cache)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    );
    assert!(out.status.success(), "palpa {args:?}:\n{stdout}{stderr}");
    (stdout, stderr)
}

#[test]
fn modes_of_a_free_box_show_rigid_modes_at_0_hz_and_explain_the_response_column() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("modes.json");
    let (out, _) = palpa(
        &[
            "modes",
            "box:2x2x2",
            "--modes",
            "10",
            "--json",
            json.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(!out.contains("-0.0"), "{out}");
    let header = out
        .lines()
        .position(|l| l.trim_start().starts_with("mode "))
        .unwrap();
    assert!(out.lines().nth(header).unwrap().contains("response (m)"));
    let legend: String = out.lines().take(header).collect::<Vec<_>>().join(" ");
    assert!(
        legend.contains("response (m):")
            && legend.contains("10 N")
            && legend.contains("--max-force"),
        "the column is explained before the table: {legend}"
    );
    let rows: Vec<Vec<&str>> = out
        .lines()
        .skip(header + 1)
        .take(10)
        .map(|l| l.split_whitespace().collect())
        .collect();
    // No node is fixed: six rigid-body modes (3 translations, 3 rotations) at 0 Hz,
    // then elastic ones with a response in metres.
    for (i, row) in rows.iter().enumerate() {
        if i < 6 {
            assert_eq!(&row[1..4], &["0.00000", "-", "rigid"], "mode {i}: {row:?}");
        } else {
            assert!(row[1].parse::<f64>().unwrap() > 1.0, "mode {i}: {row:?}");
            assert!(row[3].parse::<f64>().unwrap() > 0.0, "mode {i}: {row:?}");
        }
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let freq: Vec<f64> = report["freq_hz"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_f64().unwrap())
        .collect();
    assert!(freq[..6].iter().all(|f| f.to_bits() == 0), "{freq:?}");
}

#[test]
fn modes_defaults_to_the_default_scenes_material() {
    let scene: toml::Table = toml::from_str(palpa::scene::DEFAULT_SCENE).unwrap();
    let default = &scene["materials"]["default"];
    let number = |k: &str| {
        default[k]
            .as_float()
            .or(default[k].as_integer().map(|i| i as f64))
    };
    let (e, nu, rho) = (
        number("young").unwrap(),
        number("poisson").unwrap(),
        number("density").unwrap(),
    );
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = palpa(&["modes", "box:1x1x1", "--modes", "6"], dir.path());
    let expected = format!("material: E = {e:.4e} Pa, ν = {nu}, ρ = {rho} kg/m³");
    assert!(out.contains(&expected), "expected {expected:?} in\n{out}");
}

/// `--pressure nodal` unlocks a nearly incompressible beam: 2 cells across a 20:1
/// cantilever at ν = 0.499, element pressure is over 5× Euler–Bernoulli's f₁
/// (0.4039 Hz) and warns; nodal pressure is within 30 % (measured +24 %) and does not.
#[test]
fn modes_with_nodal_pressure_do_not_lock() {
    let dir = tempfile::tempdir().unwrap();
    let f1 = |pressure: &str| -> (f64, String) {
        let json = dir.path().join(format!("{pressure}.json"));
        let (_, err) = palpa(
            &[
                "modes",
                "box:40x2x2:0.2x0.01x0.01",
                "--fix-below",
                "x=1e-9",
                "--young",
                "1e5",
                "--poisson",
                "0.499",
                "--modes",
                "2",
                "--pressure",
                pressure,
                "--json",
                json.to_str().unwrap(),
            ],
            dir.path(),
        );
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        (report["freq_hz"][0].as_f64().unwrap(), err)
    };
    let exact = 0.4039;
    let (element, warned) = f1("element");
    let (nodal, quiet) = f1("nodal");
    assert!(element > 5.0 * exact, "{element} Hz");
    assert!((nodal / exact - 1.0).abs() < 0.3, "{nodal} Hz");
    assert!(warned.contains("use --pressure nodal"), "{warned}");
    assert!(!quiet.contains("lock"), "{quiet}");
}

const SCENE: &str = r#"
name = "coarse block"
[mesh.box]
origin = [-0.05, -0.05, -0.04]
size = [0.10, 0.10, 0.04]
cells = [6, 6, 3]
[materials.default]
young = 30e3
poisson = 0.45
[materials.inclusion]
young = 240e3
poisson = 0.48
sphere = { center = [0.0, 0.0, -0.015], radius = 0.01 }
[backend.modal]
modes = 12
"#;

#[test]
fn the_poisson_warning_names_each_material_once_and_only_when_it_applies() {
    let dir = tempfile::tempdir().unwrap();
    let scene = dir.path().join("coarse.toml");
    std::fs::write(&scene, SCENE).unwrap();
    let (_, err) = palpa(
        &["precompute", "--scene", scene.to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(err.matches("Poisson ratio").count(), 1, "{err}");
    assert!(err.contains("materials.default (ν = 0.45)"), "{err}");
    assert!(err.contains("materials.inclusion (ν = 0.48)"), "{err}");
    assert!(err.contains("coarse.toml"), "names the scene: {err}");

    std::fs::write(&scene, SCENE.replace("poisson = 0.45", "poisson = 0.3")).unwrap();
    let (_, err) = palpa(
        &["precompute", "--scene", scene.to_str().unwrap()],
        dir.path(),
    );
    assert!(
        err.contains("materials.inclusion") && !err.contains("materials.default"),
        "{err}"
    );

    std::fs::write(
        &scene,
        SCENE
            .replace("poisson = 0.45", "poisson = 0.3")
            .replace("poisson = 0.48", "poisson = 0.3"),
    )
    .unwrap();
    let (_, err) = palpa(
        &["precompute", "--scene", scene.to_str().unwrap()],
        dir.path(),
    );
    assert!(!err.contains("Poisson"), "{err}");

    let (_, err) = palpa(
        &["modes", "box:1x1x1", "--modes", "6", "--poisson", "0.49"],
        dir.path(),
    );
    assert_eq!(err.matches("Poisson ratio").count(), 1, "{err}");
    assert!(err.contains("--poisson 0.49"), "{err}");
    let (_, err) = palpa(
        &["modes", "box:1x1x1", "--modes", "6", "--poisson", "0.3"],
        dir.path(),
    );
    assert!(!err.contains("Poisson"), "{err}");
    // Commands that build no model say nothing about materials.
    let (_, err) = palpa(&["devices"], dir.path());
    assert!(!err.contains("Poisson"), "{err}");
}

/// The default block, coarse (1 cm cells).
fn coarse_block() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/scenes/coarse_block.toml"),
    )
    .unwrap()
}

fn indent_stderr(scene_text: &str) -> String {
    indent_at_the_centre(scene_text, "0.001", None).1
}

/// `palpa indent --at 0,0 --depths DEPTHS` of `scene_text` (written to a temporary
/// directory, which is also the cache): stderr, and the forces (N) when `json` names the
/// `--json` file to write there.
fn indent_at_the_centre(scene_text: &str, depths: &str, json: Option<&str>) -> (Vec<f64>, String) {
    let dir = tempfile::tempdir().unwrap();
    let scene = dir.path().join("block.toml");
    std::fs::write(&scene, scene_text).unwrap();
    let json = json.map(|name| dir.path().join(name));
    let mut args = vec![
        "indent",
        "--scene",
        scene.to_str().unwrap(),
        "--at",
        "0,0",
        "--depths",
        depths,
    ];
    if let Some(json) = &json {
        args.extend(["--json", json.to_str().unwrap()]);
    }
    let err = palpa(&args, dir.path()).1;
    let Some(json) = json else {
        return (Vec::new(), err);
    };
    let forces: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let forces = forces["force_n"].as_array().unwrap();
    (forces.iter().map(|f| f.as_f64().unwrap()).collect(), err)
}

#[test]
fn a_patch_radius_covering_more_nodes_than_a_patch_keeps_is_warned_about() {
    // 4.5 cm on 1 cm cells: about 69 top-face nodes around the centre, beyond the 48 kept.
    let err = indent_stderr(&format!(
        "{}\n[contact]\npatch_radius = 0.045\n",
        coarse_block()
    ));
    assert!(
        err.contains("contact.patch_radius = 0.045 m covers up to")
            && err.contains("largest weights")
            && err.contains("set contact.patch_radius to at most about"),
        "{err}"
    );
    let err = indent_stderr(&coarse_block());
    assert!(!err.contains("patch"), "the default radius fits: {err}");
}

#[test]
fn large_strain_materials_in_a_linear_backend_are_named_once() {
    let err = indent_stderr(
        &coarse_block().replace("young = 240e3", "young = 240e3\nmodel = \"neo-hookean\""),
    );
    assert_eq!(err.matches("large-strain law").count(), 1, "{err}");
    assert!(
        err.contains(
            "materials.inclusion follows a large-strain law, but the modal backend is linear"
        ),
        "{err}"
    );
    assert!(
        !err.contains("materials.default, materials.inclusion follow"),
        "{err}"
    );
    assert!(!indent_stderr(&coarse_block()).contains("large-strain"));
}

/// `palpa indent` of the coarse block on the condensed backend at 2 and 4 mm, with
/// `extra` scene lines: the forces (N) and stderr.
fn condensed_indent(extra: &str) -> (Vec<f64>, String) {
    let text = format!(
        "{}\n[backend]\nkind = \"condensed\"\n{extra}",
        coarse_block()
    );
    indent_at_the_centre(&text, "0.002,0.004", Some("forces.json"))
}

#[test]
fn a_condensed_start_over_its_memory_budget_says_so_and_presses_the_same() {
    let (precomputed, err) = condensed_indent("");
    assert!(!err.contains("precompute_budget_mb"), "under 256 MB: {err}");
    let (on_demand, err) = condensed_indent("[backend.condensed]\nprecompute_budget_mb = 1\n");
    assert!(
        err.contains("would take")
            && err.contains("over the budget of 1 MB ([backend.condensed] precompute_budget_mb)")
            && err.contains("Raise the budget"),
        "{err}"
    );
    assert_eq!(err.matches("precompute_budget_mb").count(), 1, "{err}");
    println!("precomputed {precomputed:?} N, on demand {on_demand:?} N");
    assert_eq!(precomputed.len(), 2);
    for (a, b) in precomputed.iter().zip(&on_demand) {
        assert!(*a > 0.05 && (a - b).abs() <= 1e-9 * a, "{a} vs {b} N");
    }
}
