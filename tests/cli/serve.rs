//! `palpa serve` as a user runs it: the built binary with the embedded default scene,
//! the virtual stylus and an ephemeral port; a real WebSocket client drives the probe
//! into the tissue through the control channel and watches the force and the surface;
//! SIGINT stops it cleanly with zero force last; a second start loads the cache; bad
//! inputs fail with a message and a non-zero status, never a panic.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::support::serve::{run_to_end, Served, READY_LINE};
use palpa_client::palpa_protocol::{ControlCommand, ErrorCode, Frame};
use palpa_client::{Client, ClientError};

const BINARY: &str = env!("CARGO_BIN_EXE_palpa");
/// Generous: the first start precomputes the modes on a slow shared machine.
const START: Duration = Duration::from_secs(600);
const WAIT: Duration = Duration::from_secs(120);
/// Indentation the test presses to (m): 4 mm into the top surface z = 0.
const DEPTH: f64 = 0.004;
/// A force the 30 kPa block certainly exceeds at 4 mm (N); a few tenths of a newton
/// are expected.
const PRESSED: f64 = 0.05;

fn cache_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "palpa"))
        .collect();
    files.sort();
    files
}

fn fingerprint(path: &Path) -> (SystemTime, Vec<u8>) {
    (
        std::fs::metadata(path).unwrap().modified().unwrap(),
        std::fs::read(path).unwrap(),
    )
}

/// Largest distance of any surface vertex from its rest position (m).
fn largest_displacement(client: &Client, frame: &Frame) -> f64 {
    let positions = client.positions(frame).unwrap();
    positions
        .iter()
        .zip(&client.scene.rest_positions)
        .map(|(p, r)| {
            let d: f32 = (0..3).map(|i| (p[i] - r[i]).powi(2)).sum();
            d.sqrt() as f64
        })
        .fold(0.0, f64::max)
}

/// Displacement (m) of the surface vertex resting nearest to `at` (m).
fn displacement_near(client: &Client, frame: &Frame, at: [f32; 3]) -> [f32; 3] {
    let rest = &client.scene.rest_positions;
    let dist = |r: &[f32; 3]| (0..3).map(|i| (r[i] - at[i]).powi(2)).sum::<f32>();
    let v = (0..rest.len())
        .min_by(|&a, &b| dist(&rest[a]).total_cmp(&dist(&rest[b])))
        .unwrap();
    let p = client.positions(frame).unwrap()[v];
    [p[0] - rest[v][0], p[1] - rest[v][1], p[2] - rest[v][2]]
}

/// Reads frames until `accept` holds for one (returned), failing after `WAIT`.
async fn frame_where(
    client: &mut Client,
    what: &str,
    accept: impl Fn(&Client, &Frame) -> bool,
) -> Frame {
    let deadline = Instant::now() + WAIT;
    let mut last: Option<Frame> = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let frame = tokio::time::timeout(left, client.next_frame())
            .await
            .unwrap_or_else(|_| {
                let last = last.as_ref().map(|f| {
                    format!(
                        "t {:.3} s, probe {:?} m, force {:?} N, in contact {}",
                        f.scene_time, f.probe, f.force, f.in_contact
                    )
                });
                panic!("no frame where {what} within {WAIT:?}; the last frame: {last:?}")
            })
            .unwrap();
        if accept(client, &frame) {
            return frame;
        }
        last = Some(frame);
    }
}

/// Moves the virtual probe from 5 mm above the centre of the top face down to `DEPTH`
/// below it in 0.25 mm steps, 20 ms apart.
async fn press(client: &mut Client, token: &str) {
    let steps = ((0.005 + DEPTH) / 0.00025).round() as usize;
    for i in 0..=steps {
        let z = 0.005 - i as f64 * 0.00025;
        client
            .send_control(
                token,
                ControlCommand::MoveProbe {
                    position: [0.0, 0.0, z],
                },
            )
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// [`press`], then waits for a frame that shows it: the probe at `DEPTH`, the tissue
/// pushing the hand up, and the surface under the probe following it down.
async fn press_and_see_it(client: &mut Client, token: &str) {
    press(client, token).await;
    frame_where(client, "the probe presses 4 mm deep", |c, f| {
        (f.probe[2] + DEPTH).abs() < 1e-9
            && pressed(f)
            && displacement_near(c, f, [0.0; 3])[2] < -0.5 * DEPTH as f32
    })
    .await;
}

/// Lets go and resets the tissue; waits until a frame shows it exactly at rest, with no
/// force.
async fn release_and_reset(client: &mut Client, token: &str) {
    client
        .send_control(token, ControlCommand::ReleaseProbe)
        .await
        .unwrap();
    frame_where(client, "the probe is released", |_, f| !f.in_contact).await;
    client
        .send_control(token, ControlCommand::ResetTissue)
        .await
        .unwrap();
    frame_where(client, "the tissue is reset", |c, f| {
        f.force == [0.0; 3] && largest_displacement(c, f) == 0.0
    })
    .await;
}

/// The async runtime the test's WebSocket clients run on.
fn client_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// In contact with a clear force pushing the hand up (+z, out of the tissue).
fn pressed(frame: &Frame) -> bool {
    let [fx, fy, fz] = frame.force;
    frame.in_contact && fz > PRESSED && fz > 3.0 * fx.abs().max(fy.abs())
}

#[test]
fn serve_palpates_stops_with_zero_force_last_and_restarts_from_the_cache() {
    let cache = tempfile::tempdir().unwrap();
    let args = ["--device", "sim", "--bind", "127.0.0.1:0"];
    let mut served = Served::start(BINARY, &args, cache.path());
    let ready = served.ready(START);
    let printed = served.stdout.join("\n");
    assert!(
        printed.contains("model: computed in"),
        "first start precomputes:\n{printed}"
    );
    assert!(
        ready.viewer.ends_with(&format!("/?token={}", ready.token)),
        "{}",
        ready.viewer
    );
    let files = cache_files(cache.path());
    assert_eq!(files.len(), 1, "one cache file written: {files:?}");
    let before = fingerprint(&files[0]);

    let runtime = client_runtime();
    let (status, stdout, stderr, last, closing) = runtime.block_on(async {
        let mut client = Client::connect(&ready.websocket).await.unwrap();
        assert!(client.hello.control_allowed);
        assert!(
            client.scene.modal_basis.is_some(),
            "the default scene streams modes"
        );
        let token = ready.token.clone();

        // Press 4 mm into the top face above the inclusion: the tissue pushes the hand
        // up and the surface under the probe follows it down.
        press_and_see_it(&mut client, &token).await;

        // Haptic loop statistics reach viewers about once a second.
        let stats = tokio::time::timeout(WAIT, async {
            loop {
                if let palpa_client::Event::HapticStats(s) = client.next_event().await.unwrap() {
                    return s;
                }
            }
        })
        .await
        .expect("haptic statistics within the wait");
        assert!(stats.ticks > 0 && stats.period_p50_s > 0.0, "{stats:?}");

        // Let go and reset: the tissue is exactly at rest again, with no force.
        release_and_reset(&mut client, &token).await;

        // `palpa watch` (the client library behind the subcommand) sees the same stream.
        let url = ready.websocket.clone();
        let watch = tokio::task::spawn_blocking(move || {
            std::process::Command::new(BINARY)
                .args(["watch", &url, "--frames", "5", "--quiet"])
                .output()
                .unwrap()
        });

        // Press again and stop while pressing: the last frame carries the device's last
        // commanded force, which must be exactly zero.
        press(&mut client, &token).await;
        frame_where(&mut client, "the probe presses again", |_, f| pressed(f)).await;
        let watched = watch.await.unwrap();
        let text = String::from_utf8_lossy(&watched.stdout);
        assert!(
            watched.status.success(),
            "palpa watch: {text}{}",
            String::from_utf8_lossy(&watched.stderr)
        );
        assert!(text.contains("summary: 5 frames"), "{text}");

        let stop = tokio::task::spawn_blocking(move || served.interrupt(WAIT));
        let mut last = None;
        let closing = loop {
            match tokio::time::timeout(WAIT, client.next_event()).await {
                Err(_) => panic!("the server did not close the stream within {WAIT:?} of SIGINT"),
                Ok(Ok(palpa_client::Event::Frame(f))) => last = Some(f),
                Ok(Ok(_)) => {}
                Ok(Err(e)) => break e,
            }
        };
        let (status, stdout, stderr) = stop.await.unwrap();
        (
            status,
            stdout,
            stderr,
            last.expect("frames until the end"),
            closing,
        )
    });
    assert!(
        status.success(),
        "clean exit after SIGINT: {status}\n{stderr}"
    );
    assert!(
        matches!(
            closing,
            ClientError::Server {
                code: ErrorCode::ShuttingDown,
                ..
            }
        ),
        "the server said goodbye: {closing}"
    );
    assert_eq!(
        last.force, [0.0; 3],
        "zero force last (frame {})",
        last.sequence
    );
    assert!(
        stdout
            .iter()
            .any(|l| l == "stopped: last force commanded to the device: 0 0 0 N"),
        "{stdout:?}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");

    // Second start, same cache: loaded, not recomputed, the file untouched. The viewer
    // is served before the tissue is ready (K's factor builds beside it): a viewer
    // connected at the viewer line sees the tissue at rest, and a press once
    // `model: ready` shows is felt.
    let mut served = Served::start(BINARY, &args, cache.path());
    let viewer = served.viewer(START);
    let mut client = runtime.block_on(async {
        let mut client = Client::connect(&viewer.websocket).await.unwrap();
        let rest = frame_where(&mut client, "the tissue shows", |_, _| true).await;
        assert!(!rest.in_contact && rest.force == [0.0; 3], "{rest:?}");
        client
    });
    served.ready(START);
    let line = |prefix: &str| {
        let at = served.stdout.iter().position(|l| l.starts_with(prefix));
        at.unwrap_or_else(|| panic!("no `{prefix}` line in {:#?}", served.stdout))
    };
    assert!(
        line("viewer: ") < line(READY_LINE),
        "the viewer is served first: {:#?}",
        served.stdout
    );
    runtime.block_on(press_and_see_it(&mut client, &viewer.token));
    let printed = served.stdout.join("\n");
    assert!(printed.contains("model: loaded from cache"), "{printed}");
    assert!(!printed.contains("model: computed"), "{printed}");
    assert_eq!(cache_files(cache.path()), files, "no new cache file");
    assert!(
        fingerprint(&files[0]) == before,
        "the cache file was not rewritten"
    );
    let (status, _, stderr) = served.interrupt(WAIT);
    assert!(status.success(), "{stderr}");

    // Third start: Ctrl-C at the viewer line, while K's factor is still building (it
    // takes about a second of CPU on this scene), stops at once: the hands never start
    // and no `model: ready` is printed.
    let mut served = Served::start(BINARY, &args, cache.path());
    served.viewer(START);
    let (status, stdout, stderr) = served.interrupt(WAIT);
    assert!(status.success(), "{stderr}");
    let printed = stdout.join("\n");
    assert!(
        printed.contains("stopped before the tissue was ready: no force was commanded"),
        "{printed}\n{stderr}"
    );
    assert!(
        !printed.contains(READY_LINE),
        "the start did not wait for the factor: {printed}"
    );
}

/// Runs `palpa ARGS`, expecting a clean failure whose stderr names every `needles`.
fn fails_naming(args: &[&str], needles: &[&str], cache: &Path) {
    let (status, stdout, stderr) = run_to_end(BINARY, args, cache);
    assert!(
        !status.success(),
        "{args:?} should fail:\n{stdout}\n{stderr}"
    );
    assert_ne!(status.code(), Some(101), "{args:?} panicked:\n{stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}:\n{stderr}");
    for n in needles {
        assert!(
            stderr.contains(n),
            "{args:?}: stderr does not name `{n}`:\n{stderr}"
        );
    }
    assert!(
        !stdout.contains("viewer:"),
        "{args:?} must not serve:\n{stdout}"
    );
}

#[test]
fn bad_inputs_fail_with_a_clear_message() {
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path();
    fails_naming(
        &["serve", "--scene", "/no/such/scene.toml"],
        &["/no/such/scene.toml"],
        dir,
    );
    fails_naming(&["serve", "--device", "bogus"], &["--device", "bogus"], dir);
    fails_naming(
        &["serve", "--device", "replay:/no/such/trajectory.csv"],
        &["/no/such/trajectory.csv"],
        dir,
    );
    fails_naming(
        &["serve", "--bind", "nonsense"],
        &["--bind", "nonsense"],
        dir,
    );

    // An occupied port fails before the model is built (nothing reaches the cache),
    // naming the address.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    fails_naming(
        &["serve", "--device", "sim", "--bind", &addr],
        &[&addr, "cannot serve the viewer"],
        dir,
    );
    assert_eq!(cache_files(dir), Vec::<PathBuf>::new(), "no precompute ran");
}

#[test]
fn the_scenes_stream_and_device_sections_apply_and_flags_override_them() {
    let dir = tempfile::tempdir().unwrap();
    let scene = dir.path().join("small.toml");
    std::fs::write(
        &scene,
        r#"
name = "small block"
[mesh.box]
origin = [-0.02, -0.02, -0.02]
size = [0.04, 0.04, 0.02]
cells = [4, 4, 2]
[backend]
kind = "condensed"
[device]
kind = "sim"
[stream]
bind = "127.0.0.1:0"
token = "scene-token-4f9a2c7e1b8d3f6a0c5e9b2d7a4f1c8e"
"#,
    )
    .unwrap();
    let scene = scene.to_str().unwrap();

    let mut served = Served::start(BINARY, &["--scene", scene], dir.path());
    let ready = served.ready(START);
    assert_eq!(ready.token, "scene-token-4f9a2c7e1b8d3f6a0c5e9b2d7a4f1c8e");
    let printed = served.stdout.join("\n");
    assert!(printed.contains("device: virtual stylus"), "{printed}");
    assert!(printed.contains("condensed backend"), "{printed}");
    let runtime = client_runtime();
    runtime.block_on(async {
        let mut client = Client::connect(&ready.websocket).await.unwrap();
        assert_eq!(client.hello.scene_name, "small block");
        assert!(
            client.scene.modal_basis.is_none(),
            "condensed scenes stream positions"
        );
        client.next_frame().await.unwrap();
    });
    let (status, _, stderr) = served.interrupt(WAIT);
    assert!(status.success(), "{stderr}");

    // --bind overrides the scene's address: a taken port fails, naming it.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    fails_naming(
        &["serve", "--scene", scene, "--bind", &addr],
        &[&addr],
        dir.path(),
    );
}

/// A large-strain scene served in real time: the nonlinear backend's corrections run on
/// their own thread (`palpa-corrections`) beside the model thread, the probe presses
/// and the surface follows it, a reset puts the tissue back at rest, and no step fails.
#[test]
fn a_nonlinear_scene_serves_with_its_corrections_beside_the_model_thread() {
    let dir = tempfile::tempdir().unwrap();
    let scene = dir.path().join("stiffening.toml");
    std::fs::write(
        &scene,
        r#"
name = "stiffening block"
[mesh.box]
origin = [-0.05, -0.05, -0.04]
size = [0.10, 0.10, 0.04]
cells = [10, 10, 4]
[materials.default]
young = 30e3
model = "veronda-westmann"
stiffening = 5
[backend]
kind = "nonlinear"
[device]
kind = "sim"
[stream]
bind = "127.0.0.1:0"
"#,
    )
    .unwrap();
    let mut served = Served::start(BINARY, &["--scene", scene.to_str().unwrap()], dir.path());
    let ready = served.ready(START);
    let printed = served.stdout.join("\n");
    assert!(printed.contains("nonlinear backend"), "{printed}");
    // Thread names as the kernel keeps them: at most 15 bytes.
    let threads: Vec<String> = std::fs::read_dir(format!("/proc/{}/task", served.pid()))
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .map(|name| name.trim().to_string())
        .collect();
    assert!(
        threads
            .iter()
            .any(|name| "palpa-corrections".starts_with(name.as_str())),
        "{threads:?}"
    );
    let runtime = client_runtime();
    runtime.block_on(async {
        let mut client = Client::connect(&ready.websocket).await.unwrap();
        let token = ready.token.clone();
        press_and_see_it(&mut client, &token).await;
        release_and_reset(&mut client, &token).await;
    });
    let (status, stdout, stderr) = served.interrupt(WAIT);
    assert!(status.success(), "{stderr}");
    assert!(!stderr.contains("tissue step failed"), "{stderr}");
    let stdout = stdout.join("\n");
    assert!(
        stdout.contains("last force commanded to the device: 0 0 0 N"),
        "{stdout}"
    );
}

/// The force on the hand is never above the device's rating (N): the sim device's.
const DEVICE_MAX_FORCE: f64 = 8.0;

/// Targets no hand could reach — a finite −1e160 m, a kilometre deep, half a metre
/// into a 4 cm block — neither break the tissue for later presses nor show forces the
/// device never got: frames carry the force commanded after the safety clamp.
#[test]
fn wild_probe_targets_keep_the_tissue_sound_and_frames_show_the_force_on_the_hand() {
    let cache = tempfile::tempdir().unwrap();
    let args = ["--device", "sim", "--bind", "127.0.0.1:0"];
    let mut served = Served::start(BINARY, &args, cache.path());
    let ready = served.ready(START);
    let runtime = client_runtime();
    runtime.block_on(async {
        let mut client = Client::connect(&ready.websocket).await.unwrap();
        let token = ready.token.clone();
        let to = |z: f64| ControlCommand::MoveProbe {
            position: [0.0, 0.0, z],
        };
        for wild in [-1e160, -1e6, -0.5] {
            client.send_control(&token, to(wild)).await.unwrap();
            // Hold for a second: every frame's force stays finite and within the rating.
            let until = Instant::now() + Duration::from_secs(1);
            while Instant::now() < until {
                let f = client.next_frame().await.unwrap();
                let norm = f.force.iter().map(|x| x * x).sum::<f64>().sqrt();
                assert!(
                    norm.is_finite() && norm <= DEVICE_MAX_FORCE * 1.0001,
                    "z = {wild}: frame force {:?}",
                    f.force
                );
            }
            client.send_control(&token, to(0.01)).await.unwrap();
            frame_where(&mut client, "the probe lifts off", |_, f| {
                !f.in_contact && f.force == [0.0; 3]
            })
            .await;
            // The tissue still answers an ordinary press.
            press(&mut client, &token).await;
            frame_where(&mut client, "an ordinary press pushes back", |_, f| {
                pressed(f)
            })
            .await;
        }
    });
    let (status, _, stderr) = served.interrupt(WAIT);
    assert!(status.success(), "{stderr}");
}

/// SIGTERM and SIGHUP (a closed terminal) stop `serve` like Ctrl-C: zero force on the
/// device first, the viewers told, exit 0.
#[test]
fn sigterm_and_sighup_stop_with_zero_force_like_ctrl_c() {
    let cache = tempfile::tempdir().unwrap();
    let args = ["--device", "sim", "--bind", "127.0.0.1:0"];
    for signal in [libc::SIGTERM, libc::SIGHUP] {
        let mut served = Served::start(BINARY, &args, cache.path());
        let ready = served.ready(START);
        let runtime = client_runtime();
        runtime.block_on(async {
            let mut client = Client::connect(&ready.websocket).await.unwrap();
            press(&mut client, &ready.token).await;
            frame_where(&mut client, "the probe presses", |_, f| pressed(f)).await;
        });
        let (status, stdout, stderr) = served.signal(signal, WAIT);
        assert!(status.success(), "signal {signal}: {status}\n{stderr}");
        assert!(
            stdout
                .iter()
                .any(|l| l == "stopped: last force commanded to the device: 0 0 0 N"),
            "signal {signal}: {stdout:?}\n{stderr}"
        );
    }
}

/// Two devices: each has its own haptic loop and probe on one tissue (their contacts
/// solved together by the first device's model thread), both end at zero force; a
/// second viewer-driven stylus is refused.
#[test]
fn a_second_device_gets_its_own_haptic_loop_and_ends_at_zero_force() {
    let cache = tempfile::tempdir().unwrap();
    let args = [
        "--device",
        "sim",
        "--device",
        "sim:press",
        "--bind",
        "127.0.0.1:0",
    ];
    let mut served = Served::start(BINARY, &args, cache.path());
    served.ready(START);
    // sim:press reaches 6 mm into the block after 1 s.
    std::thread::sleep(Duration::from_millis(2500));
    let (status, stdout, stderr) = served.interrupt(WAIT);
    assert!(status.success(), "{stderr}");
    let line = |prefix: &str| {
        stdout
            .iter()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` line in {stdout:#?}"))
            .clone()
    };
    assert!(line("2 devices palpate one tissue").contains("solved together"));
    let largest = |label: &str| -> f64 {
        line(label)
            .split("largest force commanded ")
            .nth(1)
            .and_then(|r| r.trim_end_matches(" N").parse().ok())
            .unwrap()
    };
    assert!(
        largest("device 2 (sim)") > 0.3,
        "the pressing device felt the tissue"
    );
    assert_eq!(
        largest("device 1 (sim)"),
        0.0,
        "the idle stylus stayed above it"
    );
    for device in ["device 1 (sim)", "device 2 (sim)"] {
        assert_eq!(
            line(&format!("stopped: last force commanded to {device}")),
            format!("stopped: last force commanded to {device}: 0 0 0 N")
        );
    }

    let (status, _, stderr) = run_to_end(
        BINARY,
        &[
            "serve",
            "--device",
            "sim",
            "--device",
            "sim",
            "--bind",
            "127.0.0.1:0",
        ],
        cache.path(),
    );
    assert!(!status.success() && stderr.contains("device 2"), "{stderr}");
}
