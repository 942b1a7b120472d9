//! The Python package (`python/`): built with maturin (in this build's target
//! directory, reusing palpa and the dependencies built there; python/Cargo.toml says
//! how), its wheel
//! installed with pip into a fresh directory, and `python/tests` run with pytest against
//! this build's `palpa` CLI. The interpreter is `$PALPA_PYTHON`, else `python3`; without
//! it, numpy, pytest or maturin the test skips, unless `PALPA_REQUIRE_PYTHON=1` (CI).
//! Its own test binary: cargo runs binaries one after another, so the two-core maturin
//! build never runs beside the live `serve` tests of `tests/cli`. With
//! `PALPA_WHEEL_DIR` set (`.ci/run` sets it) the tested wheel is kept there.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Where cargo builds this workspace; maturin builds the package there too.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| if p.is_absolute() { p } else { repo().join(p) })
        .unwrap_or_else(|| repo().join("target"))
}

/// Runs `python args…` with `envs`; panics with its output unless it succeeds.
fn run(python: &str, args: &[&str], envs: &[(&str, &Path)], what: &str) -> Output {
    let out = Command::new(python)
        .args(args)
        .envs(envs.iter().map(|(k, v)| (*k, v.as_os_str())))
        .current_dir(repo())
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {python}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn python_package_passes_its_pytest_suite() {
    let python = std::env::var("PALPA_PYTHON").unwrap_or_else(|_| "python3".into());
    let probe = Command::new(&python)
        .args(["-c", "import numpy, pytest, maturin"])
        .output();
    let missing = match &probe {
        Err(e) => Some(format!("{python}: {e}")),
        Ok(o) if !o.status.success() => Some(format!(
            "{python} lacks numpy, pytest or maturin: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Ok(_) => None,
    };
    if let Some(why) = missing {
        let required = std::env::var("PALPA_REQUIRE_PYTHON").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "PALPA_REQUIRE_PYTHON=1 but {why} (pip install maturin numpy pytest)"
        );
        eprintln!("skipped: {why}");
        return;
    }

    let scratch = tempfile::tempdir().unwrap();
    let (wheels, site) = (scratch.path().join("wheels"), scratch.path().join("site"));
    let start = Instant::now();
    let manifest = repo().join("python/Cargo.toml");
    run(
        &python,
        &[
            "-m",
            "maturin",
            "build",
            "--manifest-path",
            manifest.to_str().unwrap(),
            "--out",
            wheels.to_str().unwrap(),
        ],
        &[("CARGO_TARGET_DIR", &target_dir())],
        "maturin build",
    );
    let built = start.elapsed();
    let wheel = std::fs::read_dir(&wheels)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .expect("maturin wrote a wheel");
    // CI keeps the wheel it tested (dev profile: opt-level 2, debug assertions on).
    if let Some(keep) = std::env::var_os("PALPA_WHEEL_DIR") {
        let keep = Path::new(&keep);
        std::fs::create_dir_all(keep).unwrap();
        let name = wheel.file_name().unwrap();
        std::fs::copy(&wheel, keep.join(name))
            .unwrap_or_else(|e| panic!("cannot keep the wheel in {}: {e}", keep.display()));
    }
    run(
        &python,
        &[
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--target",
            site.to_str().unwrap(),
            wheel.to_str().unwrap(),
        ],
        &[],
        "pip install",
    );
    let out = run(
        &python,
        &[
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "-rs",
            "python/tests",
        ],
        &[
            ("PYTHONPATH", &site),
            ("PALPA_BIN", Path::new(env!("CARGO_BIN_EXE_palpa"))),
        ],
        "pytest python/tests",
    );
    let report = String::from_utf8_lossy(&out.stdout);
    eprintln!("{report}");
    assert!(
        !report.contains("skipped"),
        "no pytest test may skip here:\n{report}"
    );
    eprintln!(
        "maturin build {:.1} s, install and pytest {:.1} s",
        built.as_secs_f64(),
        (start.elapsed() - built).as_secs_f64()
    );
}
