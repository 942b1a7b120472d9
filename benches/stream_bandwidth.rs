//! Bytes on the wire per viewer of a running `palpa serve` (default scene, virtual
//! stylus, 64 WebSocket clients): the median frame and bytes per second at rest, while
//! pressing 6 mm and while sliding 6 mm deep across the lump, with one-off messages
//! (residual columns, column evictions) counted apart. The clients read raw messages and
//! look only at the leading `u32` tag, so the same run measures any protocol version:
//! `PALPA_BINARY=/path/to/palpa cargo bench --bench stream_bandwidth` measures another
//! build (docs/benchmarks.md, "Bytes per viewer"). With `PALPA_WATCH=1` a `palpa watch`
//! of that build watches the whole run as a 65th client and its report is printed.
//! Per phase it also reads the CPU time of the server's async runtime threads (all of
//! the stream: publisher, fan-out to the 64 viewers, their control messages) per frame.

#[path = "support/cpu.rs"]
mod cpu;
#[path = "../tests/support/serve.rs"]
mod serve_support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use palpa_client::palpa_protocol as wire;
use serve_support::Served;
use tokio_tungstenite::tungstenite::Message;

/// Viewers connected during the run.
const CLIENTS: usize = 64;
/// Indentation while pressing and sliding (m).
const DEPTH: f64 = 0.006;
/// Where the press starts and the slide ends (m, x on the top face y = 0); the lump is
/// centred under x = 0.
const SLIDE_FROM: f64 = -0.03;
const SLIDE_TO: f64 = 0.03;

/// Name of `palpa serve`'s async runtime threads.
const SERVE_RUNTIME_THREADS: &str = "tokio-rt-worker";

/// `ServerMessage` tag of a frame (every protocol version so far).
const FRAME_TAG: u32 = 2;
/// Tags of hello, scene init, haptic statistics, errors and control status: neither
/// frames nor one-off residual data.
const OTHER_TAGS: [u32; 5] = [0, 1, 3, 4, 5];

/// One received message: when, its tag, its length (bytes).
type Received = (Instant, u32, usize);

#[derive(Default)]
struct Phase {
    name: &'static str,
    start: Option<Instant>,
    end: Option<Instant>,
    /// The server's async runtime CPU time (ns) over the phase.
    cpu_ns: u64,
}

fn main() {
    // `cargo bench` passes `--bench`; this benchmark has no options of its own.
    let binary =
        std::env::var("PALPA_BINARY").unwrap_or_else(|_| env!("CARGO_BIN_EXE_palpa").into());
    let cache = tempfile::tempdir().unwrap();
    let mut served = Served::start(
        &binary,
        &["--device", "sim", "--bind", "127.0.0.1:0"],
        cache.path(),
    );
    let ready = served.ready(Duration::from_secs(600));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let watch = std::env::var_os("PALPA_WATCH").map(|_| {
        std::process::Command::new(&binary)
            .args(["watch", &ready.websocket, "--seconds", "14"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("start palpa watch")
    });
    let phases = runtime.block_on(run(&ready.websocket, &ready.token, served.pid()));
    if let Some(watch) = watch {
        let out = watch.wait_with_output().expect("palpa watch");
        println!("palpa watch:\n{}", String::from_utf8_lossy(&out.stdout));
    }
    let (status, _, stderr) = served.interrupt(Duration::from_secs(60));
    assert!(status.success(), "palpa serve failed: {stderr}");
    println!("palpa: {binary}");
    println!(
        "phase      median frame  frames/s  frame B/s/viewer  one-off B/s/viewer  total B/s/viewer  async CPU/frame"
    );
    for (phase, stats) in phases {
        println!(
            "{:<10} {:>10} B  {:>8.1}  {:>16.0}  {:>18.0}  {:>16.0}  {:>11.0} µs",
            phase,
            stats.median_frame,
            stats.frames_per_s,
            stats.frame_bps,
            stats.one_off_bps,
            stats.total_bps,
            stats.cpu_per_frame_us
        );
    }
}

struct PhaseStats {
    median_frame: usize,
    frames_per_s: f64,
    frame_bps: f64,
    one_off_bps: f64,
    total_bps: f64,
    /// CPU time of the server's async runtime threads per frame (µs).
    cpu_per_frame_us: f64,
}

async fn run(url: &str, token: &str, pid: u32) -> Vec<(&'static str, PhaseStats)> {
    let logs: Vec<Arc<Mutex<Vec<Received>>>> = (0..CLIENTS).map(|_| Arc::default()).collect();
    let mut readers = Vec::new();
    let mut control = None;
    for (i, log) in logs.iter().enumerate() {
        let (socket, _) = tokio_tungstenite::connect_async(url)
            .await
            .expect("connect");
        let (sink, mut stream) = socket.split();
        if i == 0 {
            control = Some(sink);
        }
        let log = log.clone();
        readers.push(tokio::spawn(async move {
            while let Some(Ok(message)) = stream.next().await {
                if let Message::Binary(bytes) = message {
                    let tag = u32::from_le_bytes(bytes[..4].try_into().unwrap());
                    log.lock().unwrap().push((Instant::now(), tag, bytes.len()));
                }
            }
        }));
    }
    let mut control = control.unwrap();
    let mut phases = vec![
        Phase {
            name: "rest",
            ..Phase::default()
        },
        Phase {
            name: "pressing",
            ..Phase::default()
        },
        Phase {
            name: "sliding",
            ..Phase::default()
        },
    ];
    let tick = Duration::from_millis(10);
    // Rest: the stylus idles above the block.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let cpu = cpu::threads_cpu_ns(Some(pid), SERVE_RUNTIME_THREADS);
    phases[0].start = Some(Instant::now());
    tokio::time::sleep(Duration::from_secs(3)).await;
    phases[0].end = Some(Instant::now());
    phases[0].cpu_ns = cpu::threads_cpu_ns(Some(pid), SERVE_RUNTIME_THREADS) - cpu;
    // Press in over 1 s, then hold for 3 s (measured).
    for i in 0..=100 {
        let z = 0.005 - (0.005 + DEPTH) * i as f64 / 100.0;
        command(
            &mut control,
            token,
            wire::ControlCommand::MoveProbe {
                position: [SLIDE_FROM, 0.0, z],
            },
        )
        .await;
        tokio::time::sleep(tick).await;
    }
    let cpu = cpu::threads_cpu_ns(Some(pid), SERVE_RUNTIME_THREADS);
    phases[1].start = Some(Instant::now());
    tokio::time::sleep(Duration::from_secs(3)).await;
    phases[1].end = Some(Instant::now());
    phases[1].cpu_ns = cpu::threads_cpu_ns(Some(pid), SERVE_RUNTIME_THREADS) - cpu;
    // Slide across the lump in 4 s (1.5 cm/s), 6 mm deep (measured).
    let cpu = cpu::threads_cpu_ns(Some(pid), SERVE_RUNTIME_THREADS);
    phases[2].start = Some(Instant::now());
    for i in 0..=400 {
        let x = SLIDE_FROM + (SLIDE_TO - SLIDE_FROM) * i as f64 / 400.0;
        command(
            &mut control,
            token,
            wire::ControlCommand::MoveProbe {
                position: [x, 0.0, -DEPTH],
            },
        )
        .await;
        tokio::time::sleep(tick).await;
    }
    phases[2].end = Some(Instant::now());
    phases[2].cpu_ns = cpu::threads_cpu_ns(Some(pid), SERVE_RUNTIME_THREADS) - cpu;
    command(&mut control, token, wire::ControlCommand::ReleaseProbe).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    for r in &readers {
        r.abort();
    }
    phases
        .into_iter()
        .map(|phase| {
            let (start, end) = (phase.start.unwrap(), phase.end.unwrap());
            let seconds = (end - start).as_secs_f64();
            let mut frames = Vec::new();
            let (mut frame_bytes, mut one_off, mut total) = (0usize, 0usize, 0usize);
            for log in &logs {
                for &(at, tag, len) in log.lock().unwrap().iter() {
                    if at < start || at >= end {
                        continue;
                    }
                    total += len;
                    if tag == FRAME_TAG {
                        frames.push(len);
                        frame_bytes += len;
                    } else if !OTHER_TAGS.contains(&tag) {
                        one_off += len;
                    }
                }
            }
            frames.sort_unstable();
            let per_viewer = |bytes: usize| bytes as f64 / seconds / CLIENTS as f64;
            let stats = PhaseStats {
                median_frame: frames.get(frames.len() / 2).copied().unwrap_or(0),
                frames_per_s: frames.len() as f64 / seconds / CLIENTS as f64,
                frame_bps: per_viewer(frame_bytes),
                one_off_bps: per_viewer(one_off),
                total_bps: per_viewer(total),
                cpu_per_frame_us: phase.cpu_ns as f64
                    / 1e3
                    / (frames.len() as f64 / CLIENTS as f64).max(1.0),
            };
            (phase.name, stats)
        })
        .collect()
}

/// Sends one control command with the token.
async fn command<S>(sink: &mut S, token: &str, command: wire::ControlCommand)
where
    S: SinkExt<Message> + Unpin,
    S::Error: std::fmt::Debug,
{
    let message = wire::encode_client(&wire::ClientMessage::Control(wire::Control {
        token: token.to_owned(),
        command,
    }));
    sink.send(Message::Binary(message.into()))
        .await
        .expect("send control");
}
