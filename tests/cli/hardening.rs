//! The review's findings against the built binary (issue 42), each with its exact input:
//! special files for every path argument, input-sized allocations under an address-space
//! limit, `palpa modes` naming the mesh's warnings, and the unit mistakes a new user
//! makes.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn data(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(path)
}

/// Runs palpa with `args`, killed after 60 s (a hang fails the test, not the suite), with
/// the address-space limit `limit` (bytes) if given.
fn run(args: &[&str], dir: &Path, limit: Option<u64>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_palpa"));
    command
        .args(args)
        .current_dir(dir)
        .env("PALPA_CACHE_DIR", dir.join("cache"))
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(bytes) = limit {
        // SAFETY: setrlimit is async-signal-safe; nothing else runs in the child here.
        unsafe {
            command.pre_exec(move || {
                let limit = libc::rlimit {
                    rlim_cur: bytes,
                    rlim_max: bytes,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = command.spawn().unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("palpa {args:?} still running after 60 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

#[test]
fn every_path_argument_refuses_dev_zero_dev_urandom_and_a_fifo_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.toml");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let scene = data("scenes/coarse_block.toml");
    let trajectory = data("trajectories/press_hold_release.csv");
    let (scene, trajectory) = (scene.to_str().unwrap(), trajectory.to_str().unwrap());
    for (special, kind) in [
        ("/dev/zero", "character device"),
        ("/dev/urandom", "character device"),
        (fifo.to_str().unwrap(), "FIFO"),
    ] {
        let device = format!("replay:{special}");
        let profile = format!("hid:{special}");
        let commands: Vec<Vec<&str>> = vec![
            vec!["serve", "--scene", special, "--bind", "127.0.0.1:0"],
            vec!["precompute", "--scene", special],
            vec![
                "indent", "--scene", special, "--at", "0,0", "--depths", "0.001",
            ],
            vec!["replay", trajectory, "--scene", special],
            vec!["replay", special, "--scene", scene],
            vec!["modes", special],
            vec!["plot", special, "--out", "out.svg"],
            vec!["devices", "import-woodenhaptics", special],
            vec![
                "serve",
                "--scene",
                scene,
                "--device",
                &device,
                "--bind",
                "127.0.0.1:0",
            ],
            vec![
                "serve",
                "--scene",
                scene,
                "--device",
                &profile,
                "--bind",
                "127.0.0.1:0",
            ],
        ];
        for args in commands {
            let out = run(&args, dir.path(), None);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(1), "palpa {args:?}:\n{err}");
            assert!(
                err.contains(&format!("{special}: is a {kind}")),
                "palpa {args:?} does not name {special} as a {kind}:\n{err}"
            );
        }
        // A recording is a directory: the check says this is none.
        let out = run(&["recording", "check", special], dir.path(), None);
        let said = String::from_utf8_lossy(&out.stdout).to_string() + &stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{said}");
        assert!(said.contains("not a palpa recording directory"), "{said}");
    }
}

#[test]
fn modes_beyond_what_memory_allows_are_an_error_naming_the_limit() {
    // Issue input: `--modes 300000` on box:60x60x30 panicked in faer (AllocError of
    // 958 GB); here the same request on a smaller box under a 3 GiB address-space limit,
    // so the test does not depend on the machine's memory.
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &["modes", "box:20x20x20", "--modes", "20000"],
        dir.path(),
        Some(3 << 30),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("asking for 20000 modes")
            && err.contains("the 3.2 GB address-space limit (ulimit -v)"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn an_allocation_refused_by_the_address_space_limit_is_an_error_not_an_abort() {
    // Issue input: `ulimit -v 5G; palpa precompute` aborted ("memory allocation of
    // 1006632960 bytes failed"); a limit below what even the mesh needs reaches an
    // allocation that fails, and the binary says so with exit status 1.
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &["modes", "box:30x30x30", "--modes", "6"],
        dir.path(),
        Some(96 << 20),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("ulimit -v"), "{err}");
}

#[test]
fn modes_prints_the_mesh_readers_warnings() {
    // Issue input: a Gmsh element of unknown type 999 was skipped with no word.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(data("meshes/cubes22.msh")).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let at = lines.iter().position(|l| l == "$Elements").unwrap() + 1;
    let count: usize = lines[at].parse().unwrap();
    lines[at] = (count + 1).to_string();
    lines.insert(at + 1 + count, format!("{} 999 2 0 0 1 2 3", count + 1));
    let mesh = dir.path().join("unknown_type.msh");
    std::fs::write(&mesh, lines.join("\n") + "\n").unwrap();
    let out = run(
        &["modes", mesh.to_str().unwrap(), "--modes", "6"],
        dir.path(),
        None,
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("WARN") && err.contains("999"), "{err}");
}

#[test]
fn a_modulus_in_kpa_and_a_mesh_in_millimetres_are_warned_about_in_modes() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &["modes", "box:4x4x2", "--young", "30", "--modes", "6"],
        dir.path(),
        None,
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("--young: E = 30 Pa") && err.contains("kPa"),
        "{err}"
    );
    // The bunny without `scale` (9.7 m across: its file is in decimetres).
    let bunny = data("bunny.msh");
    let out = run(
        &["modes", bunny.to_str().unwrap(), "--modes", "6"],
        dir.path(),
        None,
    );
    let err = stderr(&out);
    assert!(err.contains("m across, larger than any organ"), "{err}");
}

/// The coarse block with `extra` appended, written to `dir`.
fn block_scene(dir: &Path, extra: &str) -> PathBuf {
    let text = std::fs::read_to_string(data("scenes/coarse_block.toml")).unwrap();
    let path = dir.join("scene.toml");
    std::fs::write(&path, format!("{text}\n{extra}")).unwrap();
    path
}

#[test]
fn a_scene_modulus_of_30_pa_and_an_inclusion_in_millimetres_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(data("scenes/coarse_block.toml"))
        .unwrap()
        .replace("young = 30e3", "young = 30")
        .replace(
            "center = [0.0, 0.0, -0.015], radius = 0.01",
            "center = [0.0, 0.0, -15.0], radius = 10.0",
        );
    let scene = dir.path().join("scene.toml");
    std::fs::write(&scene, text).unwrap();
    let out = run(
        &["precompute", "--scene", scene.to_str().unwrap()],
        dir.path(),
        None,
    );
    let err = stderr(&out);
    assert!(err.contains("materials.default.young: E = 30 Pa"), "{err}");
    assert!(
        err.contains("materials.inclusion: selects no element"),
        "{err}"
    );
}

/// A press into the coarse block near its centre, 100 rows at 1 kHz, positions mapped
/// by `position` and times by `time`.
fn press(dir: &Path, name: &str, position: f64, time: f64) -> PathBuf {
    let mut csv = String::from("t,x,y,z,buttons\n");
    for i in 0..100 {
        let z = 0.002 - 4e-3 * (i as f64 / 99.0);
        csv.push_str(&format!(
            "{},{},{},{},0\n",
            i as f64 * 1e-3 * time,
            0.01 * position,
            0.01 * position,
            z * position
        ));
    }
    let path = dir.join(name);
    std::fs::write(&path, csv).unwrap();
    path
}

#[test]
fn trajectories_in_millimetres_or_milliseconds_are_named_on_replay() {
    let dir = tempfile::tempdir().unwrap();
    let scene = block_scene(dir.path(), "");
    let scene = scene.to_str().unwrap();
    let replay = |trajectory: &Path| {
        let out = run(
            &["replay", trajectory.to_str().unwrap(), "--scene", scene],
            dir.path(),
            None,
        );
        let err = stderr(&out);
        assert!(out.status.success(), "{err}");
        err
    };
    let fine = replay(&press(dir.path(), "fine.csv", 1.0, 1.0));
    assert!(!fine.contains("trajectory:"), "{fine}");
    let mm = replay(&press(dir.path(), "mm.csv", 1e3, 1.0));
    assert!(
        mm.contains("never comes within the scene's box") && mm.contains("millimetres?"),
        "{mm}"
    );
    let ms = replay(&press(dir.path(), "ms.csv", 1.0, 1e3));
    assert!(
        ms.contains("time step is 1000 ms") && ms.contains("lasts 99 s over 100 rows"),
        "{ms}"
    );
}

#[test]
fn an_indentation_deeper_than_half_the_block_is_named() {
    // Issue input: `indent --depths 0.05` on a 40 mm block (26 N).
    let dir = tempfile::tempdir().unwrap();
    let scene = block_scene(dir.path(), "");
    let out = run(
        &[
            "indent",
            "--scene",
            scene.to_str().unwrap(),
            "--at",
            "0.03,0.03",
            "--depths",
            "0.05",
        ],
        dir.path(),
        None,
    );
    let err = stderr(&out);
    assert!(
        err.contains("a press 50.0 mm deep is deeper than half the 40.0 mm of tissue"),
        "{err}"
    );
}
