//! `palpa devices check` through the binary, on the terminal as a person uses it (Enter
//! pressed whenever it asks), against the stand-in SDK libraries whose tip follows the
//! person the check asks for (`STANDIN_SCRIPT=hand`): a sigma.7 polled by the check's
//! own 1 kHz loop and a Touch whose HDAPI scheduler paces it. Both pass and are recorded;
//! `serve` then stops warning about the sigma.7 (and records its orientation and
//! gripper), while a state directory without the record gets the warning.

use std::ffi::OsStr;
use std::time::Duration;

use super::vendor_sdk::{scene, standin};
use crate::support::serve::Served;

const BINARY: &str = env!("CARGO_BIN_EXE_palpa");
/// Generous: the scene is built while other tests load the machine.
const START: Duration = Duration::from_secs(600);

/// Runs `palpa devices check DEVICE` with `env`, pressing Enter whenever it asks; returns
/// the exit status and what it printed.
fn check_interactively(
    device: &str,
    env: &[(&str, &OsStr)],
) -> (std::process::ExitStatus, Vec<String>, String) {
    use std::io::{BufRead, BufReader, Read, Write};
    let mut child = std::process::Command::new(BINARY)
        .args(["devices", "check", device])
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let mut lines = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if line.contains("press Enter") {
            // The person takes a moment before pressing Enter.
            std::thread::sleep(Duration::from_millis(300));
            let _ = writeln!(stdin);
        }
        lines.push(line);
    }
    let status = child.wait().unwrap();
    (status, lines, errors.join().unwrap())
}

#[test]
fn devices_check_passes_a_sigma7_and_an_openhaptics_device_and_serve_stops_warning() {
    let dir = tempfile::tempdir().unwrap();
    let dhd = standin("dhd.c", "libdhd.so", dir.path());
    let hd = standin("hdapi.c", "libHD.so", dir.path());
    let state = dir.path().join("state");
    let hand = OsStr::new("hand");
    let checks = [
        (
            "dhd",
            vec![
                ("PALPA_DHD_LIB", dhd.as_os_str()),
                ("STANDIN_DHD_TYPE", OsStr::new("104")),
                ("STANDIN_SCRIPT", hand),
                ("PALPA_STATE_DIR", state.as_os_str()),
            ],
        ),
        (
            "openhaptics",
            vec![
                ("PALPA_OPENHAPTICS_LIB", hd.as_os_str()),
                ("STANDIN_SCRIPT", hand),
                ("PALPA_STATE_DIR", state.as_os_str()),
            ],
        ),
    ];
    // Both checks at once: each takes some 15 s of a person moving and holding.
    let results: Vec<_> = std::thread::scope(|scope| {
        let running: Vec<_> = checks
            .iter()
            .map(|(device, env)| scope.spawn(move || (*device, check_interactively(device, env))))
            .collect();
        running.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (device, (status, out, err)) in results {
        let out = out.join("\n");
        eprintln!("palpa devices check {device}:\n{out}\n{err}");
        assert!(status.success(), "{status}\n{out}\n{err}");
        assert!(out.contains("result: PASSED"), "{out}");
        assert!(out.contains("recorded as checked"), "{out}");
        assert_eq!(
            out.lines().filter(|l| l.starts_with("ok   push")).count(),
            6,
            "six pushes: {out}"
        );
        if device == "dhd" {
            // The sigma.7's workspace is centred where CHAI3D centres it.
            assert!(
                out.contains("sigma.7 (right)") && out.contains("centre (10.0, -20.0, 0.0) mm"),
                "{out}"
            );
        }
    }

    // serve knows the sigma.7 was checked; its stylus's orientation and gripper reach the
    // recording. A state directory without the record gets the warning.
    let scene = scene(dir.path(), [0.0; 3]);
    let recording = dir.path().join("rec");
    let args = [
        "--scene",
        scene.to_str().unwrap(),
        "--device",
        "dhd",
        "--record",
        recording.to_str().unwrap(),
    ];
    let env = [
        ("PALPA_DHD_LIB", dhd.as_os_str()),
        ("STANDIN_DHD_TYPE", OsStr::new("104")),
        ("PALPA_STATE_DIR", state.as_os_str()),
    ];
    let mut served = Served::start_with_env(BINARY, &args, dir.path(), &env);
    served.ready(START);
    std::thread::sleep(Duration::from_millis(500));
    let (status, _, stderr) = served.interrupt(Duration::from_secs(60));
    assert!(status.success(), "{stderr}");
    assert!(!stderr.contains("never checked"), "{stderr}");
    let ticks = std::fs::read_to_string(recording.join("ticks.csv")).unwrap();
    let row: Vec<&str> = ticks.lines().nth(1).unwrap().split(',').collect();
    let (c, s) = (0.25f64.cos(), 0.25f64.sin());
    let expected = [0.0, 0.0, s, c];
    // gripper, then qx qy qz qw: the handle turned 0.5 rad about z.
    assert_eq!(row[11].parse::<f64>().unwrap(), 0.25, "{row:?}");
    for (got, want) in row[12..16].iter().zip(expected) {
        assert!(
            (got.parse::<f64>().unwrap().abs() - want).abs() < 1e-9,
            "{row:?}"
        );
    }
    let elsewhere = dir.path().join("other-state");
    let env = [
        ("PALPA_DHD_LIB", dhd.as_os_str()),
        ("STANDIN_DHD_TYPE", OsStr::new("104")),
        ("PALPA_STATE_DIR", elsewhere.as_os_str()),
    ];
    let mut served = Served::start_with_env(BINARY, &args[..4], dir.path(), &env);
    served.ready(START);
    let (status, _, stderr) = served.interrupt(Duration::from_secs(60));
    assert!(status.success(), "{stderr}");
    assert!(
        stderr.contains("was never checked: run `palpa devices check dhd`"),
        "{stderr}"
    );
}
