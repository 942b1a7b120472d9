//! Values that used to pass validation and then crash, abort or silently misbehave:
//! each is refused at load with its key (or flag) named, before anything is allocated
//! from it. The inputs are the exact ones an adversarial pass found.

use std::path::Path;

use crate::support::serve::run_to_end;
use palpa::app::scene::build;
use palpa::scene::Scene;

const BINARY: &str = env!("CARGO_BIN_EXE_palpa");

/// The error `text` gets as a scene (parse or build), as a string.
fn refused(text: &str) -> String {
    match Scene::parse(text, "bad.toml", Path::new(".")) {
        Err(e) => e.to_string(),
        Ok(scene) => {
            let cache = tempfile::tempdir().unwrap();
            match build(scene, cache.path(), &mut |_| {}) {
                Err(e) => e.to_string(),
                Ok(_) => panic!("{text:?} should be refused"),
            }
        }
    }
}

fn assert_names(text: &str, needles: &[&str]) {
    let e = refused(text);
    for n in needles {
        assert!(
            e.contains(n),
            "{text:?}: the error does not name {n:?}: {e}"
        );
    }
}

#[test]
fn sizes_that_would_exhaust_memory_are_refused_with_the_key() {
    assert_names(
        "[mesh.box]\ncells = [1000000, 1000000, 1000000]\n",
        &["bad.toml", "mesh.box.cells"],
    );
    assert_names(
        "[rates]\nhaptic = 1e9\nmodel = 1e9\n",
        &["rates.haptic", "1000000000"],
    );
    assert_names(
        "[stream]\nmax_clients = 18446744073709551615\n",
        &["max_clients"],
    );
    assert_names(
        "[backend.modal]\nmodes = 100000\n",
        &["backend.modal.modes"],
    );
}

#[test]
fn rates_outside_what_a_loop_or_a_display_can_do_are_refused() {
    assert_names("[rates]\nvisual = 1e-300\n", &["rates.visual", "1e-300"]);
    assert_names("[rates]\nvisual = 1e12\n", &["rates.visual"]);
    assert_names("[rates]\nvisual = 1e9\n", &["rates.visual"]);
}

#[test]
fn numbers_that_overflow_the_model_are_refused() {
    assert_names(
        "[backend.modal]\nalpha1 = 1e300\nalpha2 = 1e300\n",
        &["backend.modal.alpha1"],
    );
    assert_names(
        "[backend.modal]\nalpha2 = 1e300\n",
        &["backend.modal.alpha2"],
    );
    assert_names(
        "[contact]\nprobe_radius = 1e300\n",
        &["contact.probe_radius"],
    );
    // Within the absolute bound but larger than the whole 10 cm block.
    assert_names(
        "[contact]\nprobe_radius = 5.0\n",
        &["contact.probe_radius", "larger"],
    );
    assert_names(
        "[materials.default]\nyoung = 1e300\n",
        &["materials.default.young"],
    );
}

#[test]
fn text_that_would_break_the_console_or_the_address_is_refused() {
    assert_names("[stream]\ntoken = \" \"\n", &["stream.token"]);
    assert_names("[stream]\ntoken = \"a&b\"\n", &["stream.token"]);
    assert_names("name = \"tissue\\u001b[2Jblock\"\n", &["name", "control"]);
}

#[test]
fn a_scene_that_keeps_no_mode_is_an_error_naming_the_keys_that_removed_them() {
    let small = "[mesh.box]\norigin = [-0.02, -0.02, -0.02]\nsize = [0.04, 0.04, 0.02]\n\
                 cells = [4, 4, 2]\n";
    assert_names(
        &format!("{small}[backend.modal]\nmax_frequency = 1.0\n"),
        &["no mode", "backend.modal.max_frequency = 1 Hz"],
    );
    assert_names(
        &format!("{small}[materials.default]\nyoung = 30e3\npoisson = -0.9999999\n"),
        &["no mode", "backend.modal.min_displacement"],
    );
}

/// `palpa modes` and `palpa precompute` fail with a message, not a panic or an abort.
#[test]
fn the_command_line_refuses_the_same_values() {
    let cache = tempfile::tempdir().unwrap();
    let fails = |args: &[&str], needle: &str| {
        let (status, stdout, stderr) = run_to_end(BINARY, args, cache.path());
        assert!(!status.success(), "{args:?} should fail:\n{stdout}");
        assert!(
            matches!(status.code(), Some(1 | 2)),
            "{args:?}: {status:?}\n{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}:\n{stderr}");
        assert!(
            stderr.contains(needle),
            "{args:?}: no {needle:?} in\n{stderr}"
        );
    };
    fails(
        &["modes", "box:1000000x1000000x1000000"],
        "cells exceed the limit",
    );
    for flag in [
        "--alpha-k",
        "--alpha-m",
        "--max-force",
        "--min-displacement",
        "--max-freq",
    ] {
        fails(&["modes", "box:2x2x2", flag, "NaN"], flag);
    }
    fails(
        &["modes", "box:2x2x2", "--pressure", "nodes"],
        "unknown pressure \"nodes\"; use element or nodal",
    );
    let scene = cache.path().join("no-modes.toml");
    std::fs::write(
        &scene,
        "[mesh.box]\ncells = [4, 4, 2]\n[backend.modal]\nmax_frequency = 1.0\n",
    )
    .unwrap();
    fails(
        &["precompute", "--scene", scene.to_str().unwrap()],
        "backend.modal.max_frequency",
    );
}

/// A render surface in other units than its mesh (here 100× off) is refused at load,
/// instead of embedding every vertex far outside the mesh for over a minute per start.
#[test]
fn a_render_surface_off_scale_is_refused_naming_the_key() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let dir = tempfile::tempdir().unwrap();
    let obj = std::fs::read_to_string(data.join("bunny.obj")).unwrap();
    let scaled: String = obj
        .lines()
        .map(|l| match l.strip_prefix("v ") {
            Some(xyz) => {
                let v: Vec<f64> = xyz.split_whitespace().map(|t| t.parse().unwrap()).collect();
                format!("v {} {} {}\n", 100.0 * v[0], 100.0 * v[1], 100.0 * v[2])
            }
            None => format!("{l}\n"),
        })
        .collect();
    std::fs::write(dir.path().join("bunny-mm.obj"), scaled).unwrap();
    let text = format!(
        "[mesh]\nfile = {:?}\nscale = 0.01\nrender_surface = \"bunny-mm.obj\"\n",
        data.join("bunny.msh")
    );
    let e = palpa::scene::build_mesh(&Scene::parse(&text, "bunny.toml", dir.path()).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("mesh.render_surface") && e.contains("units"),
        "{e}"
    );
    // The same surface in the mesh's units is embedded.
    std::fs::copy(data.join("bunny.obj"), dir.path().join("bunny.obj")).unwrap();
    let text = text.replace("bunny-mm.obj", "bunny.obj");
    let built = palpa::scene::build_mesh(&Scene::parse(&text, "bunny.toml", dir.path()).unwrap());
    assert!(built.unwrap().render.is_some());
}
