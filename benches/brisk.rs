//! Brisk presses through the real `palpa serve` (issue 40's acceptance): the probe
//! moved by a viewer's MoveProbe every 2 ms (a real WebSocket client with the control
//! token) from 1 cm above the centre to 15 mm deep at 20 and 50 cm/s, and jumped 20 mm
//! in one step, held 3 s, then a gentle 4 mm press elsewhere held 2 s, against that press
//! on a fresh start; on `scenes/breast.toml` and the default block made
//! Veronda–Westmann γ = 5. Every haptic tick comes from the session's recording
//! (`--record DIR`, `ticks.csv`): the ticks at least 1 mm inside whose force does not push
//! out, the largest force against the clamp, and the later press's force (the mean of its
//! last 0.5 s). Real time: a run takes its path's seconds. Not a criterion bench (the
//! numbers are counts), run with `cargo bench --bench brisk`; `PALPA_BENCH_SCENE=breast`
//! or `=default` runs one scene.

#[path = "../tests/support/serve.rs"]
mod serve_support;

use std::path::Path;
use std::time::{Duration, Instant};

use palpa_protocol as wire;
use serve_support::Served;

const BINARY: &str = env!("CARGO_BIN_EXE_palpa");

/// The virtual stylus's clamp (N).
const CLAMP: f64 = 8.0;

/// Where the gentle press goes (m): beside the first, off the lump.
const ELSEWHERE: [f64; 3] = [0.03, 0.02, 0.0];

/// A path at 1 kHz: each leg (duration s, from, to) at constant speed.
fn legs(legs: &[(f64, [f64; 3], [f64; 3])]) -> Vec<[f64; 3]> {
    let mut out = Vec::new();
    for &(duration, a, b) in legs {
        let n = (duration / 1e-3).round().max(1.0) as usize;
        out.extend((1..=n).map(|k| {
            let s = k as f64 / n as f64;
            [0, 1, 2].map(|i| a[i] + (b[i] - a[i]) * s)
        }));
    }
    out
}

fn at(p: [f64; 3], dz: f64) -> [f64; 3] {
    [p[0], p[1], p[2] + dz]
}

/// The gentle press from `from`: over to [`ELSEWHERE`] 1 cm up, 4 mm down at 1 cm/s,
/// held 2 s.
fn gentle(from: [f64; 3]) -> Vec<[f64; 3]> {
    let (up, down) = (at(ELSEWHERE, 0.01), at(ELSEWHERE, -0.004));
    legs(&[(0.5, from, up), (1.4, up, down), (2.0, down, down)])
}

/// 1 s resting 1 cm above the centre (the start-up ramp), in to 15 mm at `speed`
/// (m/s; infinite: in one step from 5 mm above), held 3 s, out at 5 cm/s, the gentle
/// press.
fn brisk(speed: f64) -> Vec<[f64; 3]> {
    let (above, deep) = ([0.0, 0.0, 0.01], [0.0, 0.0, -0.015]);
    let mut path = if speed.is_finite() {
        legs(&[(1.0, above, above), (0.025 / speed, above, deep)])
    } else {
        legs(&[(1.0, at(above, -0.005), at(above, -0.005))])
    };
    path.extend(legs(&[(3.0, deep, deep), (0.5, deep, above)]));
    path.extend(gentle(above));
    path
}

/// The gentle press alone on a fresh start.
fn fresh() -> Vec<[f64; 3]> {
    let up = at(ELSEWHERE, 0.01);
    let mut path = legs(&[(1.0, up, up)]);
    path.extend(gentle(up));
    path
}

/// One session: serve `scene`, follow `path` with MoveProbe every 2 ms, stop; the
/// recorded ticks (t, z, fz, |f|).
fn session(scene: &Path, path: &[[f64; 3]], cache: &Path) -> Vec<[f64; 4]> {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("session");
    let args = [
        "--scene",
        scene.to_str().unwrap(),
        "--device",
        "sim",
        "--bind",
        "127.0.0.1:0",
        "--record",
        record.to_str().unwrap(),
    ];
    let mut served = Served::start(BINARY, &args, cache);
    let ready = served.ready(Duration::from_secs(600));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut client = palpa_client::Client::connect(&ready.websocket)
            .await
            .expect("connect");
        let start = Instant::now();
        for (k, p) in path.iter().enumerate().step_by(2) {
            let due = start + Duration::from_secs_f64(k as f64 * 1e-3);
            tokio::time::sleep_until(due.into()).await;
            client
                .send_control(
                    &ready.token,
                    wire::ControlCommand::MoveProbe { position: *p },
                )
                .await
                .expect("send");
        }
    });
    let stopping = Instant::now();
    let (status, _, stderr) = served.interrupt(Duration::from_secs(300));
    assert!(status.success(), "palpa serve failed: {stderr}");
    let count = |what: &str| stderr.lines().filter(|l| l.contains(what)).count();
    println!(
        "  serve stopped {:.1} s after SIGINT; log lines: {} held on the last good state, \
         {} sub-stepped, {} frozen tangent, {} inverted",
        stopping.elapsed().as_secs_f64(),
        count("did not converge"),
        count("intermediate"),
        count("frozen tangent"),
        count("inverted")
    );
    let text = std::fs::read_to_string(record.join("ticks.csv")).expect("ticks.csv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (t, z, fx, fy, fz) = (col("t"), col("z"), col("fx"), col("fy"), col("fz"));
    lines
        .map(|l| {
            let v: Vec<f64> = l
                .split(',')
                .map(|x| x.parse().unwrap_or(f64::NAN))
                .collect();
            [
                v[t],
                v[z],
                v[fz],
                (v[fx].powi(2) + v[fy].powi(2) + v[fz].powi(2)).sqrt(),
            ]
        })
        .collect()
}

/// The mean force along z over the recording's last ticks at the gentle press's depth
/// (its last 0.5 s held, N).
fn gentle_force(ticks: &[[f64; 4]]) -> f64 {
    let held: Vec<f64> = ticks
        .iter()
        .filter(|r| (r[1] + 0.004).abs() < 1e-9)
        .map(|r| r[2])
        .collect();
    let last = &held[held.len().saturating_sub(500)..];
    last.iter().sum::<f64>() / last.len().max(1) as f64
}

fn main() {
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let vw5 = dir.path().join("default_vw5.toml");
    std::fs::write(
        &vw5,
        include_str!("../scenes/default.toml")
            .replace(
                "density = 1000\n",
                "density = 1000\nmodel = \"veronda-westmann\"\nstiffening = 5\n",
            )
            .replace("kind = \"modal\"", "kind = \"nonlinear\""),
    )
    .unwrap();
    let breast = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/breast.toml");
    let only = std::env::var("PALPA_BENCH_SCENE").ok();
    for (name, scene) in [("breast", breast.as_path()), ("default", vw5.as_path())] {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let expected = gentle_force(&session(scene, &fresh(), cache.path()));
        println!("brisk, {name}: the 4 mm press on a fresh start {expected:.4} N");
        for (what, speed) in [
            ("20 cm/s", 0.2),
            ("50 cm/s", 0.5),
            ("20 mm jump", f64::INFINITY),
        ] {
            let ticks = session(scene, &brisk(speed), cache.path());
            let inside: Vec<&[f64; 4]> = ticks.iter().filter(|r| r[1] <= -1e-3).collect();
            let lost = inside.iter().filter(|r| r[2] <= 0.0).count();
            let peak = ticks.iter().map(|r| r[3]).fold(0.0, f64::max);
            let later = gentle_force(&ticks);
            println!(
                "brisk, {name}, {what}: {} ticks 1 mm or more inside, {lost} without a pushing \
                 force; peak {peak:.3} N (clamp {CLAMP} N); the later 4 mm press {later:.4} N \
                 ({:+.2} % of the fresh start's)",
                inside.len(),
                100.0 * (later / expected - 1.0)
            );
        }
    }
}
