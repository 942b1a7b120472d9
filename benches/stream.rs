//! Visual stream benchmarks (numbers in docs/benchmarks.md, "Visual stream"):
//! * bytes per frame and encode time, modal vs positions, bunny and block scenes;
//! * encode + fan-out of one frame to 64 real loopback clients: CPU time of the server's
//!   threads per frame (target ≤ 1 ms), read from /proc/self/task/*/schedstat — with 32
//!   corrections, and pressing (17 nodal loads whose residual columns every client holds,
//!   the residual field rebuilt and checked by the publisher every frame), and two floors
//!   under it: 64 plain loopback `send`s from one thread, and from one tokio task;
//! * probe motion → frame received by a local client (target p99 ≤ 50 ms).

#[path = "support/cpu.rs"]
mod cpu;
#[path = "../tests/support/stream.rs"]
mod stream_support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use palpa::stream::{
    column_link, snapshot_slot, ColumnFeed, FrameEncoder, SnapshotDeformation, StreamConfig,
    StreamScene, StreamServer, SurfaceColumn, VisualSnapshot,
};
use palpa::Mat3;
use palpa::Vec3;
use palpa_client::palpa_protocol::{self as wire, ControlCommand};
use palpa_client::Client;
use stream_support::{running_tissue, AnalyticTissue, SIZE};

/// The bunny surface (tests/data/bunny.obj: 1,839 vertices) with 40 modes.
fn bunny_scene(modal: bool) -> StreamScene {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/bunny.obj");
    let (models, _) = tobj::load_obj(path, &tobj::GPU_LOAD_OPTIONS).expect("bunny.obj");
    let mesh = &models[0].mesh;
    let rest: Vec<Vec3> = mesh
        .positions
        .chunks(3)
        .map(|p| Vec3::new(p[0] as f64, p[1] as f64, p[2] as f64) * 0.01)
        .collect();
    let triangles = mesh.indices.chunks(3).map(|t| [t[0], t[1], t[2]]).collect();
    let scene = StreamScene {
        name: "bunny".into(),
        triangles,
        rest_positions: rest.clone(),
        modal_basis: None,
        model_rate_hz: 200.0,
        haptic_rate_hz: 1000.0,
        up: Vec3::y(),
        regions: Vec::new(),
    };
    if modal {
        scene.with_modal_basis(40, move |v, j| {
            let x = rest[v];
            Vec3::new(0.0, 0.0, (x.x * 30.0 * (j + 1) as f64).sin() * 1e-3)
        })
    } else {
        scene
    }
}

/// A snapshot of `scene` in contact, with `corrections` residual corrections.
fn snapshot(scene: &StreamScene, corrections: usize) -> VisualSnapshot {
    let deformation = match scene.mode_count() {
        Some(k) => {
            let mut field = vec![Vec3::zeros(); scene.rest_positions.len()];
            for d in field.iter_mut().take(corrections) {
                *d = Vec3::new(0.0, 0.0, -1e-4);
            }
            SnapshotDeformation::Superposed {
                coordinates: (0..k).map(|j| 1e-3 / (j + 1) as f64).collect(),
                loads: Vec::new(),
                field,
                field_from_loads: false,
            }
        }
        None => SnapshotDeformation::Positions(scene.rest_positions.clone()),
    };
    VisualSnapshot {
        time: 1.0,
        probe: Vec3::new(0.0, 0.0, 0.01),
        proxy: Vec3::new(0.0, 0.0, 0.011),
        force: Vec3::new(0.0, 0.0, 1.0),
        in_contact: true,
        depth: 1e-3,
        normal: Vec3::z(),
        stylus: Default::default(),
        deformation,
    }
}

fn frame_size_and_encode(c: &mut Criterion) {
    let block = |modal| {
        let t = if modal {
            AnalyticTissue::modal([12, 12, 6], 40)
        } else {
            AnalyticTissue::positions([12, 12, 6])
        };
        t.scene
    };
    let scenes = [
        ("bunny/modal", bunny_scene(true)),
        ("bunny/positions", bunny_scene(false)),
        ("block/modal", block(true)),
        ("block/positions", block(false)),
    ];
    let mut group = c.benchmark_group("stream/encode_frame");
    for (name, scene) in &scenes {
        let (mut writer, mut reader) = snapshot_slot(snapshot(scene, 0));
        writer.publish(&snapshot(scene, 32));
        let mut encoder = FrameEncoder::new(None);
        let bytes = encoder.encode_next(scene, &mut reader).unwrap().frame;
        let init = wire::encode_server(&scene.scene_init()).len();
        println!(
            "{name}: {} surface vertices, frame {} bytes (with 32 corrections), scene init {} bytes",
            scene.rest_positions.len(),
            bytes.len(),
            init
        );
        group.bench_function(*name, |b| {
            b.iter(|| encoder.encode_next(scene, &mut reader).unwrap())
        });
    }
    let bunny = bunny_scene(true);
    let (pressed, feed) = pressing(&bunny);
    let (_writer, mut reader) = snapshot_slot(pressed);
    let mut encoder = FrameEncoder::new(Some(feed));
    let published = encoder.encode_next(&bunny, &mut reader).unwrap();
    println!(
        "bunny/modal pressing: frame {} bytes with {PRESSED_NODES} loads, columns {} bytes each",
        published.frame.len(),
        published.columns[0].1.len()
    );
    group.bench_function("bunny/modal_pressing_17_loads", |b| {
        b.iter(|| encoder.encode_next(&bunny, &mut reader).unwrap())
    });
    group.finish();
}

fn fan_out_to_64_clients(c: &mut Criterion) {
    send_floor(c);
    tokio_send_floor(c);
    for workers in [1, 2] {
        fan_out(c, workers, false);
    }
    for workers in [1, 2] {
        fan_out(c, workers, true);
    }
}

/// Bytes per send in [`send_floor`]: the pressing frame's size.
const FLOOR_MESSAGE: usize = 593;

/// 64 loopback TCP connections (TCP_NODELAY on the server side), each read on its own
/// thread in messages of [`FLOOR_MESSAGE`] bytes; returns the server sockets and the
/// count of messages the first reader got.
fn loopback_readers() -> (Vec<std::net::TcpStream>, Arc<AtomicU64>) {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let received = Arc::new(AtomicU64::new(0));
    let mut sockets = Vec::new();
    for i in 0..64 {
        let mut client = std::net::TcpStream::connect(address).unwrap();
        let (server, _) = listener.accept().unwrap();
        server.set_nodelay(true).unwrap();
        sockets.push(server);
        let received = received.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; FLOOR_MESSAGE];
            while client.read_exact(&mut buffer).is_ok() {
                if i == 0 {
                    received.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
    (sockets, received)
}

/// Benchmarks `name` in the fan-out group: CPU time of the threads named `threads` per
/// message the first client received.
fn cpu_per_message(c: &mut Criterion, name: &str, threads: &str, received: &AtomicU64) {
    let mut group = c.benchmark_group("stream/fan_out");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let start = received.load(Ordering::Relaxed);
            let cpu0 = cpu::threads_cpu_ns(None, threads);
            while received.load(Ordering::Relaxed) < start + iters {
                std::thread::sleep(Duration::from_micros(200));
            }
            Duration::from_nanos(cpu::threads_cpu_ns(None, threads) - cpu0)
        })
    });
    group.finish();
}

/// The floor under the fan-out: one plain thread writing [`FLOOR_MESSAGE`] bytes to each
/// of 64 loopback TCP sockets (blocking reads on 64 threads), 200 rounds a second; CPU
/// time of the writing thread per round. On loopback a `send` also runs the receiver's
/// TCP input path in the sender's context, so this is what any server pays here before
/// WebSocket framing, tasks and wake-ups.
fn send_floor(c: &mut Criterion) {
    use std::io::Write;
    let (mut sockets, received) = loopback_readers();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("floor-send".into())
            .spawn(move || {
                let message = [7u8; FLOOR_MESSAGE];
                let mut next = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    for socket in &mut sockets {
                        socket.write_all(&message).unwrap();
                    }
                    next += Duration::from_millis(5);
                    std::thread::sleep(next.saturating_duration_since(Instant::now()));
                }
            })
            .unwrap()
    };
    cpu_per_message(
        c,
        "floor_64_loopback_sends_cpu_per_round",
        "floor-send",
        &received,
    );
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
}

/// [`send_floor`] through tokio: one task on a 1-worker runtime writes to 64 tokio
/// TcpStreams (epoll-registered, as the server's sockets are) each round.
fn tokio_send_floor(c: &mut Criterion) {
    use tokio::io::AsyncWriteExt;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("tfloor-send")
        .enable_all()
        .build()
        .unwrap();
    let (sockets, received) = loopback_readers();
    let task = rt.spawn(async move {
        let mut sockets: Vec<_> = sockets
            .into_iter()
            .map(|s| {
                s.set_nonblocking(true).unwrap();
                tokio::net::TcpStream::from_std(s).unwrap()
            })
            .collect();
        let message = [7u8; FLOOR_MESSAGE];
        let mut ticker = tokio::time::interval(Duration::from_millis(5));
        loop {
            ticker.tick().await;
            for socket in &mut sockets {
                if socket.write_all(&message).await.is_err() {
                    return;
                }
            }
        }
    });
    cpu_per_message(
        c,
        "tokio_floor_64_loopback_sends_cpu_per_round",
        "tfloor-send",
        &received,
    );
    task.abort();
    rt.shutdown_background();
}

/// Loaded nodes of the pressing snapshot: about a contact patch of the default block.
const PRESSED_NODES: u32 = 17;

/// A pressing snapshot of `scene` (modal): [`PRESSED_NODES`] nodal loads of 0.35 N down,
/// their K⁻¹ columns (a smooth 1/(1 + r/5 mm) falloff over every surface vertex, with a
/// static modal response) exported through the returned feed, and the field they cause.
fn pressing(scene: &StreamScene) -> (VisualSnapshot, ColumnFeed) {
    let (exporter, feed) = column_link();
    let rest = &scene.rest_positions;
    let k = scene.mode_count().unwrap_or(0);
    let mut field = vec![Vec3::zeros(); rest.len()];
    let mut loads = Vec::new();
    for node in 0..PRESSED_NODES {
        let at = rest[node as usize];
        let force = Vec3::new(0.0, 0.0, -0.35);
        let entries: Vec<(u32, Mat3)> = (0..)
            .zip(rest)
            .map(|(v, x)| {
                (
                    v,
                    Mat3::identity() * (2e-3 / (1.0 + (x - at).norm() / 5e-3)),
                )
            })
            .collect();
        for (v, block) in &entries {
            field[*v as usize] += block * force;
        }
        let static_modes = (0..k)
            .map(|j| Vec3::new(0.0, 0.0, 1e-4 / (j + 1) as f64))
            .collect();
        exporter.export(SurfaceColumn {
            node,
            entries,
            static_modes,
        });
        loads.push((node, force));
    }
    let mut snapshot = snapshot(scene, 0);
    if let SnapshotDeformation::Superposed {
        loads: l,
        field: f,
        field_from_loads,
        ..
    } = &mut snapshot.deformation
    {
        *l = loads;
        *f = field;
        *field_from_loads = true;
    }
    (snapshot, feed)
}

/// Server on its own runtime of `workers` named threads so their CPU time can be read;
/// the 64 clients on another. Frames at 200 Hz so the measurement takes seconds. With
/// `loads`, the pressing snapshot and its columns.
fn fan_out(c: &mut Criterion, workers: usize, loads: bool) {
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("stream-srv")
        .enable_all()
        .build()
        .unwrap();
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let scene = bunny_scene(true);
    let (published, feed) = if loads {
        let (s, feed) = pressing(&scene);
        (s, Some(feed))
    } else {
        (snapshot(&scene, 32), None)
    };
    let (mut writer, reader) = snapshot_slot(published.clone());
    writer.publish(&published);
    let config = StreamConfig {
        bind: "127.0.0.1:0".parse().unwrap(),
        frame_rate_hz: 200.0,
        ..StreamConfig::default()
    };
    let server = server_rt
        .block_on(StreamServer::start_with_columns(
            config, scene, reader, None, feed,
        ))
        .unwrap();
    let url = format!("ws://{}/ws", server.local_addr());
    let received = Arc::new(AtomicU64::new(0));
    for i in 0..64 {
        let url = url.clone();
        let received = received.clone();
        client_rt.spawn(async move {
            let mut client = Client::connect(&url).await.unwrap();
            while client.next_frame().await.is_ok() {
                if i == 0 {
                    received.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
    while server.client_count() < 64 {
        std::thread::sleep(Duration::from_millis(10));
    }
    let what = if loads {
        "pressing_17_loads"
    } else {
        "32_corrections"
    };
    let name =
        format!("bunny_modal_64_clients_server_cpu_per_frame/{what}/{workers}_worker_threads");
    cpu_per_message(c, &name, "stream-srv", &received);
    server_rt.block_on(server.shutdown());
    client_rt.shutdown_background();
}

fn probe_to_frame_latency(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (_tissue, _producer, reader, control) =
        running_tissue(AnalyticTissue::modal([8, 8, 3], 12));
    let scene = _tissue.scene.clone();
    let config = StreamConfig {
        bind: "127.0.0.1:0".parse().unwrap(),
        ..StreamConfig::default()
    };
    let server = rt
        .block_on(StreamServer::start(config, scene, reader, Some(control)))
        .unwrap();
    let token = server.control_token().unwrap().to_owned();
    let mut client = rt
        .block_on(Client::connect(&format!("ws://{}/ws", server.local_addr())))
        .unwrap();
    let mut latencies = Vec::new();
    let mut step = 0u64;
    let mut group = c.benchmark_group("stream/latency");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10));
    group.bench_function("probe_motion_to_frame_received", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                step += 1;
                let target = [
                    0.02 + 0.06 * ((step % 97) as f64 / 97.0),
                    0.05,
                    SIZE[2] - 0.003,
                ];
                // A user moves at any moment, not right after a frame: wait a
                // quasi-random fraction (golden-ratio sequence) of a frame period first.
                let phase = (step as f64 * 0.618_033_988_75).fract();
                std::thread::sleep(Duration::from_secs_f64(phase / 30.0));
                let sent = Instant::now();
                rt.block_on(async {
                    client
                        .send_control(&token, ControlCommand::MoveProbe { position: target })
                        .await
                        .unwrap();
                    while client.next_frame().await.unwrap().probe != target {}
                });
                let latency = sent.elapsed();
                latencies.push(latency.as_secs_f64());
                total += latency;
            }
            total
        })
    });
    group.finish();
    // Nothing was measured when a filter skipped this benchmark.
    if let (Some(p50), Some(p99), Some(max)) = (
        palpa_client::quantile(&latencies, 0.5),
        palpa_client::quantile(&latencies, 0.99),
        palpa_client::quantile(&latencies, 1.0),
    ) {
        println!(
            "probe motion -> frame received over {} moves: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms (target p99 <= 50 ms)",
            latencies.len(),
            p50 * 1e3,
            p99 * 1e3,
            max * 1e3
        );
    }
    rt.block_on(server.shutdown());
}

criterion_group!(
    benches,
    frame_size_and_encode,
    fan_out_to_64_clients,
    probe_to_frame_latency
);
criterion_main!(benches);
