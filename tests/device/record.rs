//! `palpa record` and `palpa devices` as a user runs them: the built binary, a real
//! SIGINT, and the recorded file read back by the replay parser.

use palpa::device::replay::Trajectory;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const PALPA: &str = env!("CARGO_BIN_EXE_palpa");

#[test]
fn ctrl_c_during_record_leaves_a_complete_csv_that_replay_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rec.csv");
    let child = Command::new(PALPA)
        .args(["record", "--device", "sim:circle", "--out"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until rows have been flushed (the writer flushes every 100 ms), then SIGINT.
    let start = Instant::now();
    loop {
        let len = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
        if len > 2000 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "record wrote nothing"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: plain kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("wrote"), "{stderr}");
    assert!(
        stderr.contains("motion only") && stderr.contains("palpa serve --record"),
        "record says it records motion only, and what records forces: {stderr}"
    );

    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.ends_with('\n'), "last row complete");
    let t = Trajectory::load(&out).unwrap();
    let rows = t.samples().len();
    assert!(rows > 20, "{rows} rows");
    assert!(
        stderr.contains(&format!("wrote {rows} rows")),
        "every row counted is in the file: {stderr}"
    );
    // The sim circle: radius 2 cm around (0, 0, −3 mm), zero force commanded.
    for s in t.samples() {
        let r = (s.position.x.powi(2) + s.position.y.powi(2)).sqrt();
        assert!((r - 0.02).abs() < 1e-9 && (s.position.z + 0.003).abs() < 1e-12);
        assert_eq!(s.force, Some(palpa::Vec3::zeros()));
    }
    // Rows are 1 ms apart (ticks may be skipped on a loaded machine, never duplicated).
    for w in t.samples().windows(2) {
        let dt = w[1].t - w[0].t;
        assert!(dt > 0.99e-3, "{dt}");
        assert!(((dt * 1e3).round() - dt * 1e3).abs() < 1e-6, "{dt}");
    }
}

#[test]
fn record_replays_a_file_to_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.csv");
    std::fs::write(
        &src,
        "t,x,y,z,buttons\n0,0,0,0.01,0\n0.05,0.001,0,0.005,1\n0.1,0.002,0,0,0\n",
    )
    .unwrap();
    let out = dir.path().join("out.csv");
    let status = Command::new(PALPA)
        .args(["record", "--device"])
        .arg(format!("replay:{}", src.display()))
        .arg("--out")
        .arg(&out)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let t = Trajectory::load(&out).unwrap();
    let last = t.samples().last().unwrap();
    assert!(last.t <= 0.1 + 1e-9 && last.t > 0.09);
    // Linear interpolation of the source at t = 0.025 s, if that tick was recorded.
    if let Some(s) = t.samples().iter().find(|s| (s.t - 0.025).abs() < 1e-9) {
        assert!((s.position.x - 0.0005).abs() < 1e-12);
        assert!((s.position.z - 0.0075).abs() < 1e-12);
    }
}

#[test]
fn record_with_a_bad_device_spec_fails_with_a_message() {
    let out = Command::new(PALPA)
        .args([
            "record",
            "--device",
            "sim:spiral",
            "--out",
            "/nonexistent/x.csv",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown device `sim:spiral`"));
}

#[test]
fn devices_lists_profiles_and_works_with_no_device_plugged_in() {
    let out = Command::new(PALPA).arg("devices").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("palpa-reference"), "{stdout}");
    assert!(stdout.contains("no HID devices found") || stdout.contains("HID devices:"));
}

#[test]
fn trajectory_errors_name_file_and_line() {
    let e =
        Trajectory::parse("t,x,y,z,buttons\n0,0,0,0,0\n0.001,0,zero,0,0\n", "a.csv").unwrap_err();
    assert_eq!(e.to_string(), "a.csv:3: y: `zero` is not a finite number");
    let e = Trajectory::parse("t,x,y,z,buttons\n0,0,0,0,0\n0,0,0,0,0\n", "a.csv").unwrap_err();
    assert!(
        e.to_string().starts_with("a.csv:3: time 0 is not after"),
        "{e}"
    );
    let e = Trajectory::parse("t,x,y\n", "a.csv").unwrap_err();
    assert!(e.to_string().starts_with("a.csv:1: header `t,x,y`"), "{e}");
    let e = Trajectory::parse("t,x,y,z,buttons,fx,fy,fz\n0,0,0,0,0,1,2\n", "a.csv").unwrap_err();
    assert_eq!(e.to_string(), "a.csv:2: 7 fields, expected 8");
    let e = Trajectory::parse("t,x,y,z,buttons\n0,0,0,0,-1\n", "a.csv").unwrap_err();
    assert!(e.to_string().contains("buttons"), "{e}");
}

#[test]
fn csv_round_trip_is_bit_exact() {
    let text = "t,x,y,z,buttons,fx,fy,fz\n0.001,0.1,-0.2,0.30000000000000004,3,1e-300,-0,2.5\n";
    let t = Trajectory::parse(text, "x").unwrap();
    let mut out = Vec::new();
    t.write_csv(&mut out).unwrap();
    let back = Trajectory::parse(std::str::from_utf8(&out).unwrap(), "y").unwrap();
    assert_eq!(t, back);
}
