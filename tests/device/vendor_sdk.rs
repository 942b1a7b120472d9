//! The vendor SDK backends through the real loading path: stand-in `libHD.so` and
//! `libdhd.so` (C, `tests/support/standin/`, compiled here with the `cc` crate into a temporary
//! directory) simulate a Touch and an omega.3 pressing into the tissue and record every
//! force and call; `palpa serve --device openhaptics|dhd` loads them through
//! `PALPA_OPENHAPTICS_LIB` / `PALPA_DHD_LIB`, runs 10 s and is stopped with SIGINT. The
//! records show positions in, forces out (opposing the press), zero force and close on
//! exit; SDK errors and missing libraries are one clear line and exit code 1.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::serve::{run_to_end_with_env, Served};

const BINARY: &str = env!("CARGO_BIN_EXE_palpa");
/// Generous: the scene is built while other tests load the machine.
const START: Duration = Duration::from_secs(600);
/// How long each session runs once the server is ready.
const SESSION: Duration = Duration::from_secs(10);
/// A force the small block certainly exceeds when pressed 2–4 mm deep (N).
const PRESSED: f64 = 0.05;

/// Compiles `tests/standin/SOURCE` into `dir/FILE` as a shared library.
pub(crate) fn standin(source: &str, file: &str, dir: &Path) -> PathBuf {
    let triple = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    let compiler = cc::Build::new()
        .target(&triple)
        .host(&triple)
        .opt_level(1)
        .out_dir(dir)
        .cargo_metadata(false)
        .get_compiler();
    let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/standin");
    let library = dir.join(file);
    let status = compiler
        .to_command()
        .args(["-shared", "-fPIC", "-Wall", "-Werror", "-o"])
        .arg(&library)
        .arg(sources.join(source))
        .args(["-lpthread", "-lm"])
        .status()
        .expect("run the C compiler");
    assert!(status.success(), "compiling the {source} stand-in failed");
    library
}

/// A small condensed block, top face z = 0 (scene frame), with the device frame turned
/// by `rotation_deg` (x, y, z) into the scene.
pub(crate) fn scene(dir: &Path, rotation_deg: [f64; 3]) -> PathBuf {
    let path = dir.join("block.toml");
    std::fs::write(
        &path,
        format!(
            r#"
name = "small block"
[mesh.box]
origin = [-0.02, -0.02, -0.02]
size = [0.04, 0.04, 0.02]
cells = [4, 4, 2]
[backend]
kind = "condensed"
[device.workspace]
rotation_deg = {rotation_deg:?}
[stream]
bind = "127.0.0.1:0"
"#
        ),
    )
    .unwrap();
    path
}

/// One force a stand-in recorded.
#[derive(Clone, Copy, Debug)]
struct Force {
    /// Device time (s).
    t: f64,
    /// Stylus height above the tissue's top face (mm, device up axis).
    height_mm: f64,
    /// Force (N, device frame).
    f: [f64; 3],
}

/// A stand-in's record: the calls in order (`force` lines parsed, the rest verbatim).
struct Record {
    lines: Vec<String>,
}

impl Record {
    /// The record so far (empty before the stand-in wrote it).
    fn read_or_empty(path: &Path) -> Self {
        Self {
            lines: std::fs::read_to_string(path)
                .map(|t| t.lines().map(str::to_owned).collect())
                .unwrap_or_default(),
        }
    }

    fn read(path: &Path) -> Self {
        let text = std::fs::read_to_string(path).expect("the stand-in wrote its record");
        Self {
            lines: text.lines().map(str::to_owned).collect(),
        }
    }

    fn force(line: &str) -> Option<Force> {
        let v: Vec<f64> = line
            .strip_prefix("force ")?
            .split(' ')
            .map(|x| x.parse().unwrap())
            .collect();
        Some(Force {
            t: v[0],
            height_mm: v[1],
            f: [v[2], v[3], v[4]],
        })
    }

    fn forces(&self) -> Vec<Force> {
        self.lines.iter().filter_map(|l| Self::force(l)).collect()
    }

    /// Index of the first line equal to `call`.
    fn position(&self, call: &str) -> usize {
        self.lines
            .iter()
            .position(|l| l == call)
            .unwrap_or_else(|| panic!("no `{call}` in the record: {:?}", self.calls()))
    }

    fn first_force(&self) -> usize {
        self.lines
            .iter()
            .position(|l| l.starts_with("force "))
            .expect("forces were written")
    }

    fn last_force(&self) -> (usize, Force) {
        let i = self
            .lines
            .iter()
            .rposition(|l| l.starts_with("force "))
            .expect("forces were written");
        (i, Self::force(&self.lines[i]).unwrap())
    }

    /// Checks that the session ended while pressing (the script holds the stylus 4 mm
    /// deep) and that only zero forces follow the last pressing one, of which there is
    /// at least one; returns the index (among the forces) of the last pressing force.
    fn stopped_pressing(&self, up: usize) -> usize {
        let forces = self.forces();
        let last = forces
            .iter()
            .rposition(|s| s.f != [0.0; 3])
            .expect("a force was rendered");
        assert!(
            forces[last].height_mm < -3.9 && forces[last].f[up] > PRESSED,
            "still pressing when stopped: {:?}",
            forces[last]
        );
        assert!(last + 1 < forces.len(), "zero force after the last press");
        last
    }

    /// Every line but the forces.
    fn calls(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter(|l| !l.starts_with("force "))
            .map(String::as_str)
            .collect()
    }
}

/// Positions in, forces out: pressed 2–4 mm deep the force pushes the stylus back up
/// (`up`: the device's up axis) and grows with depth up to the device's force clamp
/// (`max_force`, N); 2 mm above the surface it is zero; below the clamp the force
/// follows the stylus tick by tick.
fn assert_forces_oppose_the_press(forces: &[Force], up: usize, max_force: f64) {
    assert!(
        forces.len() > 5000,
        "a 10 s session at 1 kHz: {} forces",
        forces.len()
    );
    let first = forces
        .iter()
        .position(|s| s.f.iter().any(|c| *c != 0.0))
        .expect("some force was rendered");
    // The force ramps in from the first model step: judge from 1 s later, while the
    // script presses and releases (until 7 s; then it holds the stylus 4 mm deep).
    let settled: Vec<Force> = forces[first..]
        .iter()
        .copied()
        .filter(|s| s.t > forces[first].t + 1.0 && s.t < 7.0)
        .collect();
    let pressed: Vec<&Force> = settled.iter().filter(|s| s.height_mm < -2.0).collect();
    let touching: Vec<&Force> = settled.iter().filter(|s| s.height_mm < -0.5).collect();
    assert!(pressed.len() > 500, "{} pressed samples", pressed.len());
    let opposing = pressed
        .iter()
        .filter(|s| {
            let side = (0..3).filter(|&i| i != up).map(|i| s.f[i].abs());
            s.f[up] > PRESSED && s.f[up] > 3.0 * side.fold(0.0, f64::max)
        })
        .count();
    assert!(
        opposing * 100 >= pressed.len() * 95,
        "{opposing} of {} pressed samples push up; e.g. {:?}",
        pressed.len(),
        pressed.iter().take(3).collect::<Vec<_>>()
    );
    // Medians: under load a late model step fades a few ticks' force (the watchdog),
    // and those must not decide the comparison.
    let median_up = |lo: f64, hi: f64| {
        let mut v: Vec<f64> = touching
            .iter()
            .filter(|s| s.height_mm >= lo && s.height_mm < hi)
            .map(|s| s.f[up])
            .collect();
        assert!(!v.is_empty(), "samples between {lo} and {hi} mm");
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (shallow, deep) = (median_up(-2.5, -2.0), median_up(-4.0, -3.5));
    // Where the shallow press already reaches the device's clamp, the deeper one can
    // only stay there.
    if shallow < 0.99 * max_force {
        assert!(
            deep > shallow,
            "deeper presses push harder: {deep} vs {shallow} N"
        );
    } else {
        assert!(
            deep >= 0.99 * max_force,
            "the deeper press stays at the {max_force} N clamp: {deep} vs {shallow} N"
        );
    }
    let free: Vec<&Force> = settled.iter().filter(|s| s.height_mm > 2.0).collect();
    let zero = free
        .iter()
        .filter(|s| s.f.iter().all(|c| c.abs() < 1e-3))
        .count();
    assert!(
        !free.is_empty() && zero * 100 >= free.len() * 95,
        "{zero} of {} samples above the surface are force-free",
        free.len()
    );
    // The force is recomputed every device tick: in contact, moving and below the
    // clamp it differs from one tick to the next.
    let unclamped = |s: &Force| s.height_mm < -0.5 && s.f[up] < 0.99 * max_force;
    let pairs: Vec<&[Force]> = settled
        .windows(2)
        .filter(|w| unclamped(&w[0]) && unclamped(&w[1]))
        .collect();
    let changed = pairs.iter().filter(|w| w[0].f[up] != w[1].f[up]).count();
    assert!(
        pairs.len() > 100 && changed * 10 >= pairs.len() * 9,
        "{changed} of {} consecutive unclamped forces differ",
        pairs.len()
    );
}

/// Runs a 10 s session of `palpa serve --device DEVICE` with `env`, stops it with
/// SIGINT and returns what it printed.
fn session(device: &str, scene: &Path, cache: &Path, env: &[(&str, &OsStr)]) -> Vec<String> {
    session_with(device, scene, cache, env, &[])
}

/// [`session`] with `extra` arguments for `palpa serve`.
fn session_with(
    device: &str,
    scene: &Path,
    cache: &Path,
    env: &[(&str, &OsStr)],
    extra: &[&str],
) -> Vec<String> {
    // Real-time threads, as `serve` runs by default (the test servers' default is off):
    // on the normal scheduler, beside one busy process per core, the model thread ran
    // late and the watchdog faded the force (823 of 926 pressed samples pushing up).
    let mut args = vec![
        "--scene",
        scene.to_str().unwrap(),
        "--device",
        device,
        "--realtime",
        "auto",
    ];
    args.extend_from_slice(extra);
    let mut served = Served::start_with_env(BINARY, &args, cache, env);
    served.ready(START);
    std::thread::sleep(SESSION);
    let (status, stdout, stderr) = served.interrupt(Duration::from_secs(60));
    assert!(
        status.success(),
        "{status}\n{}\n{stderr}",
        stdout.join("\n")
    );
    let printed = stdout.join("\n");
    assert!(
        printed.contains("stopped: last force commanded to the device: 0 0 0 N"),
        "{printed}"
    );
    stdout
}

#[test]
fn an_openhaptics_session_renders_the_press_through_hdapi_frames_and_stops_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let library = standin("hdapi.c", "libHD.so", dir.path());
    let record = dir.path().join("hdapi.record");
    // palpa turns HDAPI's y-up frame so that z is up: the scene maps it unturned.
    let scene = scene(dir.path(), [0.0, 0.0, 0.0]);
    let env = [
        ("PALPA_OPENHAPTICS_LIB", library.as_os_str()),
        ("STANDIN_RECORD", record.as_os_str()),
    ];
    let recording = dir.path().join("recording");
    let stdout = session_with(
        "openhaptics",
        &scene,
        dir.path(),
        &env,
        &["--record", recording.to_str().unwrap()],
    );

    // The rating comes from the device, converted: 1.5 N/mm, a workspace box of
    // (−80, −50, −35)…(80, 70, 35) mm in HDAPI's frame, whose y is palpa's z and whose
    // z (toward the user) is palpa's −y.
    let device = stdout.iter().find(|l| l.starts_with("device: ")).unwrap();
    assert!(
        device.contains("Touch stand-in (HD_DEFAULT_DEVICE): 3.3 N, 1500 N/m")
            && device.contains("centre (0.0, 0.0, 10.0) mm ± (80.0, 35.0, 60.0) mm"),
        "{device}"
    );

    let r = Record::read(&record);
    assert_forces_oppose_the_press(&r.forces(), 1, 3.3);
    // Init, force output, the callback and the scheduler before the first frame.
    let init = r.position("init HD_DEFAULT_DEVICE");
    let enable = r.position("enable 16384");
    let schedule = r.position("schedule 32767");
    let start = r.position("start_scheduler");
    assert!(init < enable && enable < schedule && schedule < start && start < r.first_force());
    // Zero force in the last frame, then stop, unschedule, disable, in that order.
    let last = r.stopped_pressing(1);
    let forces = r.forces();
    let gap = forces[forces.len() - 1].t - forces[last].t;
    assert!(
        (gap - 1e-3).abs() < 1e-9,
        "one zero frame, not {gap} s of them"
    );
    let stop = r.position("stop_scheduler");
    let unschedule = r.position("unschedule 7");
    let disable = r.position("disable_device 1");
    assert!(last < stop && stop < unschedule && unschedule < disable);
    assert_eq!(disable, r.lines.len() - 1, "{:?}", r.calls());

    // The stylus's orientation reaches the recording: the stand-in's end effector turned
    // Rx(0.4)·Ry(0.3) in HDAPI's frame; the stylus (the tool's x) is its z axis, the
    // tool's y its x axis, both turned into palpa's z-up frame (x, −z, y).
    let (ca, sa, cb, sb) = (0.4f64.cos(), 0.4f64.sin(), 0.3f64.cos(), 0.3f64.sin());
    let hd_x = [cb, sa * sb, -ca * sb];
    let hd_z = [sb, -sa * cb, ca * cb];
    let up = |v: [f64; 3]| nalgebra::Vector3::new(v[0], -v[2], v[1]);
    let (tool_x, tool_y) = (up(hd_z), up(hd_x));
    let ticks = std::fs::read_to_string(recording.join("ticks.csv")).unwrap();
    let mut lines = ticks.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (qx, qy, qz, qw) = (col("qx"), col("qy"), col("qz"), col("qw"));
    let mut checked = 0;
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        let q: Vec<f64> = [qx, qy, qz, qw]
            .iter()
            .map(|&i| f[i].parse().unwrap())
            .collect();
        let q = nalgebra::UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(
            q[3], q[0], q[1], q[2],
        ));
        let error = (q * nalgebra::Vector3::x() - tool_x).norm()
            + (q * nalgebra::Vector3::y() - tool_y).norm();
        assert!(error < 1e-9, "{line}: {error}");
        checked += 1;
    }
    assert!(
        checked > 5000,
        "{checked} rows with the stylus's orientation"
    );
}

#[test]
fn a_dhd_session_is_polled_by_the_haptic_thread_and_closes_with_zero_force() {
    let dir = tempfile::tempdir().unwrap();
    let library = standin("dhd.c", "libdhd.so", dir.path());
    let record = dir.path().join("dhd.record");
    let scene = scene(dir.path(), [0.0, 0.0, 0.0]);
    let env = [
        ("PALPA_DHD_LIB", library.as_os_str()),
        ("STANDIN_RECORD", record.as_os_str()),
    ];
    let stdout = session("dhd", &scene, dir.path(), &env);

    // omega.3 by its type: 12 N, 5000 N/m, the cube inscribed in a 75 mm sphere.
    let device = stdout.iter().find(|l| l.starts_with("device: ")).unwrap();
    assert!(
        device.contains("omega.3 stand-in (DHD device 0, omega.3): 12 N, 5000 N/m")
            && device.contains("± (43.3, 43.3, 43.3) mm"),
        "{device}"
    );

    let r = Record::read(&record);
    assert_forces_oppose_the_press(&r.forces(), 2, 12.0);
    let open = r.position("open 0");
    let enable = r.position("enable_force 1 0");
    assert!(open < enable && enable < r.first_force());
    r.stopped_pressing(2);
    let (last, _) = r.last_force();
    let close = r.position("close 0");
    assert!(
        last < close && close == r.lines.len() - 1,
        "{:?}",
        r.calls()
    );
}

/// Runs `palpa serve` expecting it to fail at once; returns stderr.
fn fails(device: &str, dir: &Path, env: &[(&str, &OsStr)], unset: &[&str]) -> String {
    let scene = scene(dir, [0.0; 3]);
    let args = [
        "serve",
        "--scene",
        scene.to_str().unwrap(),
        "--device",
        device,
    ];
    let (status, stdout, stderr) = run_to_end_with_env(BINARY, &args, dir, env, unset);
    assert_eq!(status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(errors.len(), 1, "one error line: {stderr}");
    errors[0].to_owned()
}

#[test]
fn sdk_errors_and_missing_libraries_are_one_clear_line_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let hd = standin("hdapi.c", "libHD.so", dir.path());
    let dhd = standin("dhd.c", "libdhd.so", dir.path());
    let record = dir.path().join("init.record");
    let yes = OsStr::new("1");

    let e = fails(
        "openhaptics",
        dir.path(),
        &[
            ("PALPA_OPENHAPTICS_LIB", hd.as_os_str()),
            ("STANDIN_FAIL_INIT", yes),
            ("STANDIN_RECORD", record.as_os_str()),
        ],
        &[],
    );
    assert_eq!(
        e,
        "error: OpenHaptics: hdInitDevice(HD_DEFAULT_DEVICE) failed: HD_COMM_ERROR \
         (0x0302, device error 7): stand-in: communication with the device failed"
    );
    // A named configuration reaches hdInitDevice as given.
    fails(
        "openhaptics:Left Touch",
        dir.path(),
        &[
            ("PALPA_OPENHAPTICS_LIB", hd.as_os_str()),
            ("STANDIN_FAIL_INIT", yes),
            ("STANDIN_RECORD", record.as_os_str()),
        ],
        &[],
    );
    assert_eq!(Record::read(&record).lines, ["init Left Touch"]);

    let e = fails(
        "dhd:2",
        dir.path(),
        &[
            ("PALPA_DHD_LIB", dhd.as_os_str()),
            ("STANDIN_FAIL_OPEN", yes),
        ],
        &[],
    );
    assert_eq!(
        e,
        "error: Force Dimension: dhdOpenID(2) failed: stand-in: no Force Dimension device found"
    );

    // `palpa record` polls at its own pace: it refuses a device HDAPI's scheduler paces,
    // and leaves it disabled.
    let out = dir.path().join("never.csv");
    let args = [
        "record",
        "--device",
        "openhaptics",
        "--out",
        out.to_str().unwrap(),
    ];
    let env = [
        ("PALPA_OPENHAPTICS_LIB", hd.as_os_str()),
        ("STANDIN_RECORD", record.as_os_str()),
    ];
    let (status, _, stderr) = run_to_end_with_env(BINARY, &args, dir.path(), &env, &[]);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot record this device"), "{stderr}");
    assert_eq!(
        Record::read(&record).lines,
        ["init HD_DEFAULT_DEVICE", "enable 16384", "disable_device 1"]
    );

    // A library that is not there: the override is named with the loader's reason.
    let absent = dir.path().join("nowhere/libHD.so");
    let e = fails(
        "openhaptics",
        dir.path(),
        &[("PALPA_OPENHAPTICS_LIB", absent.as_os_str())],
        &[],
    );
    assert!(
        e.contains(&format!("PALPA_OPENHAPTICS_LIB={}", absent.display())),
        "{e}"
    );
    // A library that lacks a function palpa calls is named with the function.
    let e = fails("dhd", dir.path(), &[("PALPA_DHD_LIB", hd.as_os_str())], &[]);
    assert!(e.contains("lacks `dhdOpen`"), "{e}");
    // Neither SDK is installed on the machines palpa is tested on: without the
    // override, one line names the library and every place looked in.
    for (device, file, var, dir_listed) in [
        (
            "openhaptics",
            "libHD.so",
            "PALPA_OPENHAPTICS_LIB",
            "/usr/lib64",
        ),
        ("dhd", "libdhd.so", "PALPA_DHD_LIB", "/usr/local/lib"),
    ] {
        let e = fails(device, dir.path(), &[], &[var]);
        for needle in [
            file,
            &format!("${var} (unset)"),
            "LD_LIBRARY_PATH",
            dir_listed,
        ] {
            assert!(e.contains(needle), "`{needle}` missing in: {e}");
        }
    }
}

#[test]
fn an_hdapi_fault_mid_session_stops_palpa_with_zero_force_and_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let library = standin("hdapi.c", "libHD.so", dir.path());
    let record = dir.path().join("fault.record");
    let scene = scene(dir.path(), [0.0; 3]);
    let args = [
        "serve",
        "--scene",
        scene.to_str().unwrap(),
        "--device",
        "openhaptics",
    ];
    let env = [
        ("PALPA_OPENHAPTICS_LIB", library.as_os_str()),
        ("STANDIN_RECORD", record.as_os_str()),
        ("STANDIN_FAIL_FRAME", OsStr::new("3000")),
    ];
    let (status, stdout, stderr) = run_to_end_with_env(BINARY, &args, dir.path(), &env, &[]);
    assert_eq!(status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("OpenHaptics servo frame failed: HD_COMM_ERROR (0x0302, device error 42): stand-in: communication with the device failed")
            && stderr.contains("palpa stopped with zero force on the device"),
        "{stderr}"
    );
    let r = Record::read(&record);
    let forces = r.forces();
    // Frame 3000 failed; frame 3001 zeroed the force and was the last.
    let (_, last) = r.last_force();
    assert_eq!(last.f, [0.0; 3]);
    assert!((last.t - 3.001).abs() < 1e-9, "{last:?}");
    assert_eq!(forces.len(), 3001);
    let stop = r.position("stop_scheduler");
    assert!(stop < r.position("unschedule 7") && r.position("disable_device 1") > stop);
}

#[test]
fn an_hdapi_velocity_error_zeroes_one_frame_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let library = standin("hdapi.c", "libHD.so", dir.path());
    let record = dir.path().join("velocity.record");
    let scene = scene(dir.path(), [0.0; 3]);
    let args = [
        "--scene",
        scene.to_str().unwrap(),
        "--device",
        "openhaptics",
    ];
    // Frame 3000 (3 s in, the stylus 4 mm deep) ends with HD_EXCEEDED_MAX_VELOCITY.
    let env = [
        ("PALPA_OPENHAPTICS_LIB", library.as_os_str()),
        ("STANDIN_RECORD", record.as_os_str()),
        ("STANDIN_FAIL_FRAME", OsStr::new("3000")),
        ("STANDIN_FAIL_CODE", OsStr::new("0203")),
    ];
    let mut served = Served::start_with_env(BINARY, &args, dir.path(), &env);
    served.ready(START);
    // Until the stand-in has pressed again (frame 5000: 4 mm deep, 2 s after the error).
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let frames = |r: Record| r.lines.iter().filter(|l| l.starts_with("force ")).count();
    while frames(Record::read_or_empty(&record)) < 5300 {
        assert!(std::time::Instant::now() < deadline, "the session stopped");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, stdout, stderr) = served.interrupt(Duration::from_secs(60));
    assert!(
        status.success(),
        "the session goes on and ends cleanly: {status}\n{stderr}"
    );
    let stdout = stdout.join("\n");
    assert!(
        stdout.contains("HD_EXCEEDED_MAX_VELOCITY ×1"),
        "the handled error is in the stop summary:\n{stdout}"
    );
    let forces = Record::read(&record).forces();
    let at = |t: f64| {
        forces
            .iter()
            .find(|f| (f.t - t).abs() < 5e-4)
            .copied()
            .unwrap()
    };
    let before = at(3.0);
    assert!(
        before.f[1] > PRESSED,
        "pressing before the error: {before:?}"
    );
    assert_eq!(
        at(3.001).f,
        [0.0; 3],
        "zero force in the frame after the error"
    );
    // Then the force ramps in again and pushes back as before.
    let later = at(5.0);
    assert!(
        later.f[1] > PRESSED,
        "pushing again after the error: {later:?}"
    );
    let around: Vec<(f64, f64)> = [2.999, 3.0, 3.001, 3.002, 3.01, 3.05, 3.2, 3.6]
        .iter()
        .map(|&t| (t, at(t).f[1]))
        .collect();
    eprintln!("HD_EXCEEDED_MAX_VELOCITY at frame 3000: (t s, force up N) {around:?}");
    // The force restarts from zero (the ramp's 2 ms of 0.5 s), not where it was.
    assert!(
        at(3.002).f[1] < 0.1,
        "ramping in, not jumping back: {around:?}"
    );
}

#[test]
fn a_dhd_read_failure_mid_session_zeroes_the_force_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let library = standin("dhd.c", "libdhd.so", dir.path());
    let record = dir.path().join("read.record");
    let scene = scene(dir.path(), [0.0; 3]);
    let args = ["--scene", scene.to_str().unwrap(), "--device", "dhd"];
    let env = [
        ("PALPA_DHD_LIB", library.as_os_str()),
        ("STANDIN_RECORD", record.as_os_str()),
        ("STANDIN_FAIL_AFTER_READS", OsStr::new("3000")),
    ];
    let mut served = Served::start_with_env(BINARY, &args, dir.path(), &env);
    served.ready(START);
    std::thread::sleep(Duration::from_secs(5));
    let (status, stdout, stderr) = served.interrupt(Duration::from_secs(60));
    assert!(
        status.success(),
        "{status}\n{}\n{stderr}",
        stdout.join("\n")
    );
    let r = Record::read(&record);
    let failed = r.position("position_failed");
    let after: Vec<Force> = r.lines[failed..]
        .iter()
        .filter_map(|l| Record::force(l))
        .collect();
    assert!(!after.is_empty(), "a force follows the failed read");
    assert!(
        after.iter().all(|s| s.f == [0.0; 3]),
        "only zero force after the failure: {:?}",
        &after[..after.len().min(5)]
    );
    assert_eq!(
        Record::force(&r.lines[failed + 1]).map(|s| s.f),
        Some([0.0; 3]),
        "zeroed at once"
    );
    assert_eq!(r.lines.last().map(String::as_str), Some("close 0"));
}
