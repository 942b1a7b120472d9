//! The visual stream end to end over real loopback sockets: a 200 Hz producer thread
//! publishes snapshots, the server streams them, real WebSocket clients watch.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::stream::{running_tissue, AnalyticTissue, SIZE};
use futures_util::SinkExt;
use palpa::stream::{StreamConfig, StreamServer};
use palpa::Vec3;
use palpa_client::palpa_protocol::{self as wire, ControlCommand, ErrorCode};
use palpa_client::{Client, ClientError};

/// The rate-sensitive tests run one at a time: each starts a server, a producer thread and
/// many clients, and the machine may have only two cores.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn loopback_config() -> StreamConfig {
    StreamConfig {
        bind: "127.0.0.1:0".parse().unwrap(),
        ..StreamConfig::default()
    }
}

/// Drops a client blocked for 8 s; closes one silent for 60 s.
fn stalling_config() -> StreamConfig {
    StreamConfig {
        send_stall_timeout: Duration::from_secs(8),
        idle_timeout: Duration::from_secs(60),
        ..loopback_config()
    }
}

/// A stream server on a tokio runtime of its own, as `palpa serve` runs it apart from
/// its viewers; the runtime must outlive the server.
async fn server_of_its_own(
    config: StreamConfig,
    scene: palpa::stream::StreamScene,
    reader: palpa::stream::SnapshotReader,
    control: palpa::stream::ControlSender,
) -> (tokio::runtime::Runtime, StreamServer) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime
        .spawn(async move {
            StreamServer::start(config, scene, reader, Some(control))
                .await
                .unwrap()
        })
        .await
        .unwrap();
    (runtime, server)
}

/// A WebSocket to the server at `addr` whose socket has a 4 kB receive buffer.
async fn small_buffer_websocket(
    addr: std::net::SocketAddr,
) -> tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>> {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let stream = tokio_tungstenite::MaybeTlsStream::Plain(socket.connect(addr).await.unwrap());
    let url = format!("ws://{addr}/ws");
    let (socket, _) = tokio_tungstenite::client_async(url.as_str(), stream)
        .await
        .unwrap();
    socket
}

/// What one watching client saw.
struct Watched {
    frames: usize,
    rate_hz: f64,
    max_error_m: f64,
    lost: u64,
}

/// Largest distance (m) between the surface `client` rebuilds from `frame` and the
/// analytic tissue recomputed in f64 at the frame's time and probe position.
fn frame_error(client: &Client, frame: &wire::Frame, tissue: &AnalyticTissue) -> f64 {
    let got = client.positions(frame).expect("frame fits the scene");
    let expected = tissue
        .scene
        .positions(&tissue.snapshot_at(frame.scene_time, Vec3::from(frame.probe)));
    got.iter()
        .zip(&expected)
        .map(|(g, e)| (Vec3::new(g[0] as f64, g[1] as f64, g[2] as f64) - e).norm())
        .fold(0.0f64, f64::max)
}

/// Watches for `duration`, checking every frame's reconstructed surface against the
/// analytic tissue recomputed in f64 at the frame's time and probe position.
async fn watch(url: String, duration: Duration, tissue: Arc<AnalyticTissue>) -> Watched {
    let mut client = Client::connect(&url).await.expect("connect");
    assert_eq!(
        client.scene.triangles, tissue.scene.triangles,
        "scene init triangles"
    );
    assert_eq!(
        client.scene.rest_positions.len(),
        tissue.scene.rest_positions.len()
    );
    let end = Instant::now() + duration;
    let mut arrivals = Vec::new();
    let mut max_error_m = 0.0f64;
    while Instant::now() < end {
        let frame = client.next_frame().await.expect("frame");
        arrivals.push(Instant::now());
        max_error_m = max_error_m.max(frame_error(&client, &frame, &tissue));
    }
    // The first frame is the late-joiner frame sent at once; measure the rate after it.
    let span = arrivals
        .last()
        .unwrap()
        .duration_since(arrivals[1])
        .as_secs_f64();
    Watched {
        frames: arrivals.len(),
        rate_hz: (arrivals.len() - 2) as f64 / span,
        max_error_m,
        lost: client.stats.lost,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_clients_receive_scene_then_frames_at_30_hz_and_exact_positions() {
    let _serial = SERIAL.lock().await;
    let (tissue, _producer, reader, control) = running_tissue(AnalyticTissue::modal([8, 8, 3], 12));
    // On a busy machine the 32 clients' checks on this test's two workers delayed a
    // publisher sharing them (26 Hz, 0 lost, beside one busy loop per core).
    let (server_runtime, server) =
        server_of_its_own(loopback_config(), tissue.scene.clone(), reader, control).await;
    let url = format!("ws://{}/ws", server.local_addr());
    let watchers: Vec<_> = (0..32)
        .map(|_| tokio::spawn(watch(url.clone(), Duration::from_secs(5), tissue.clone())))
        .collect();
    for (i, w) in watchers.into_iter().enumerate() {
        let w = w.await.unwrap();
        println!(
            "client {i}: {} frames, {:.2} Hz, {} lost, max error {:.2e} m",
            w.frames, w.rate_hz, w.lost, w.max_error_m
        );
        assert!(
            (27.0..=33.0).contains(&w.rate_hz),
            "client {i}: {:.2} Hz not 30 ± 3",
            w.rate_hz
        );
        assert!(
            w.max_error_m <= 1e-5,
            "client {i}: reconstruction off by {} m",
            w.max_error_m
        );
    }
    server_runtime.spawn(server.shutdown()).await.unwrap();
    server_runtime.shutdown_background();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_does_not_slow_others_and_is_dropped() {
    crate::support::process::alone!(a_client_that_never_reads_does_not_slow_others_and_is_dropped);
    let _serial = SERIAL.lock().await;
    // Positions frames of ~90 kB (2.7 MB/s) so the stalled socket's kernel buffers fill
    // within seconds; then the server waits the 8 s stall timeout. A server that queued
    // frames per client would grow by ≥ 8 s × 2.7 MB/s ≈ 22 MB in that window.
    let (tissue, _producer, reader, control) =
        running_tissue(AnalyticTissue::positions([48, 48, 16]));
    let frame_bytes = 145 + 12 * tissue.scene.rest_positions.len();
    assert!(frame_bytes > 80_000, "frames of {frame_bytes} bytes");
    // On a busy machine the four watchers' decoding and checks on this test's two
    // workers delayed a publisher sharing them, which is not what this test is about.
    let (server_runtime, server) =
        server_of_its_own(stalling_config(), tissue.scene.clone(), reader, control).await;
    let addr = server.local_addr();
    let url = format!("ws://{addr}/ws");

    // The stalled client: a tiny receive buffer, a completed handshake, then no reads.
    let stalled = small_buffer_websocket(addr).await;

    let watchers: Vec<_> = (0..4)
        .map(|_| tokio::spawn(watch(url.clone(), Duration::from_secs(6), tissue.clone())))
        .collect();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let baseline = resident_bytes();
    let peak = Arc::new(std::sync::atomic::AtomicU64::new(baseline));
    let sampler = tokio::spawn({
        let peak = peak.clone();
        async move {
            loop {
                peak.fetch_max(resident_bytes(), std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    });
    for w in watchers {
        let w = w.await.unwrap();
        println!(
            "watcher: {} frames, {:.2} Hz, {} lost next to a stalled client",
            w.frames, w.rate_hz, w.lost
        );
        // Not slowed: every frame published reached each watcher (a skipped frame or two
        // for a watcher that was itself late), at the publisher's rate. The 30 ± 3 Hz of
        // the publisher is the 32-client test's; here, beside one busy loop per core, it
        // slipped below that with nothing lost (docs/benchmarks.md), while a publisher
        // held by the stalled socket would stop for its 8 s timeout, most of this window.
        assert!(
            w.lost <= 2,
            "{} frames skipped next to a stalled client",
            w.lost
        );
        assert!(
            (24.0..=33.0).contains(&w.rate_hz),
            "{:.2} Hz next to a stalled client",
            w.rate_hz
        );
        assert!(
            w.max_error_m <= 1e-5,
            "positions off by {} m",
            w.max_error_m
        );
    }
    // The stalled client is dropped once its socket has been blocked for the stall timeout.
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.client_count() > 0 {
        assert!(
            Instant::now() < deadline,
            "stalled client still connected after 60 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    sampler.abort();
    let peak = peak.load(std::sync::atomic::Ordering::Relaxed);
    let growth = peak.saturating_sub(baseline);
    println!("resident memory: baseline {baseline} B, peak {peak} B while stalled (+{growth} B)");
    assert!(
        growth < 10_000_000,
        "server memory grew by {growth} B while a client stalled"
    );
    drop(stalled);
    server_runtime.spawn(server.shutdown()).await.unwrap();
    server_runtime.shutdown_background();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_whose_socket_filled_resumes_with_the_newest_frames_exactly() {
    let _serial = SERIAL.lock().await;
    // Positions frames of ~90 kB at 30 Hz: 3 s without reading is ~8 MB, more than the
    // server's 4 MB send buffer and the client's 4 kB receive buffer hold, so the
    // publisher's direct writes would block and the client's own task takes over.
    let (tissue, _producer, reader, control) =
        running_tissue(AnalyticTissue::positions([48, 48, 16]));
    let server = StreamServer::start(
        stalling_config(),
        tissue.scene.clone(),
        reader,
        Some(control),
    )
    .await
    .unwrap();
    let mut client = Client::over(small_buffer_websocket(server.local_addr()).await, None)
        .await
        .unwrap();
    for _ in 0..5 {
        let frame = client.next_frame().await.unwrap();
        assert!(frame_error(&client, &frame, &tissue) <= 1e-5);
    }
    let before = client.stats.lost;
    tokio::time::sleep(Duration::from_secs(3)).await;
    // Resumed: what the buffers held, then the newest frames at 30 Hz again.
    let mut max_error_m = 0.0f64;
    let mut last_sequence = 0;
    let end = Instant::now() + Duration::from_secs(3);
    while Instant::now() < end {
        let frame = client.next_frame().await.unwrap();
        max_error_m = max_error_m.max(frame_error(&client, &frame, &tissue));
        last_sequence = frame.sequence;
    }
    let skipped = client.stats.lost - before;
    println!("resumed: {skipped} frames skipped, max error {max_error_m:.2e} m");
    assert!(skipped > 0, "the socket never filled: no frame was skipped");
    assert!(max_error_m <= 1e-5, "positions off by {max_error_m} m");
    // Caught up: the next 15 frames come one by one at the frame rate, not as a backlog.
    let lost = client.stats.lost;
    let start = Instant::now();
    for _ in 0..15 {
        let frame = client.next_frame().await.unwrap();
        assert_eq!(frame.sequence, last_sequence + 1, "consecutive frames");
        last_sequence = frame.sequence;
    }
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(350), "15 frames in {took:?}");
    assert_eq!(client.stats.lost, lost);
    assert_eq!(server.client_count(), 1, "the client stays connected");
    server.shutdown().await;
}

/// This process's resident memory (bytes), from /proc/self/statm.
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// Reads until the server closes the connection and returns its error message.
async fn closing_error(client: &mut Client) -> (ErrorCode, String) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        assert!(
            Instant::now() < deadline,
            "server did not close the connection"
        );
        match client.next_event().await {
            Ok(_) => continue,
            Err(ClientError::Server { code, message }) => return (code, message),
            Err(e) => panic!("expected an error message, got {e}"),
        }
    }
}

/// Reads until the server answers a control message and returns the answer.
async fn control_status(client: &mut Client) -> wire::ControlStatus {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        assert!(Instant::now() < deadline, "no control status within 10 s");
        if let palpa_client::Event::ControlStatus(s) = client.next_event().await.unwrap() {
            return s;
        }
    }
}

/// Frames keep arriving on `client`: `count` more, with increasing sequence numbers.
async fn frames_keep_arriving(client: &mut Client, count: usize) {
    let mut last = client.next_frame().await.unwrap().sequence;
    for _ in 0..count {
        let next = client.next_frame().await.unwrap().sequence;
        assert!(next > last, "frame {next} after {last}");
        last = next;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_and_oversized_messages_close_only_the_offender_a_wrong_token_is_read_only() {
    let (tissue, _producer, reader, control) = running_tissue(AnalyticTissue::modal([6, 6, 2], 8));
    let server = StreamServer::start(
        loopback_config(),
        tissue.scene.clone(),
        reader,
        Some(control),
    )
    .await
    .unwrap();
    let token = server.control_token().unwrap().to_owned();
    let url = format!("ws://{}/ws", server.local_addr());
    let mut observer = Client::connect(&url).await.unwrap();
    assert!(observer.hello.control_allowed);
    let first = observer.next_frame().await.unwrap().sequence;

    let mut garbage = Client::connect(&url).await.unwrap();
    garbage.send_raw(vec![9, 9, 9]).await.unwrap();
    assert_eq!(closing_error(&mut garbage).await.0, ErrorCode::Malformed);

    let mut oversized = Client::connect(&url).await.unwrap();
    oversized
        .send_raw(vec![0; wire::MAX_CLIENT_MESSAGE_BYTES + 1])
        .await
        .unwrap();
    let (code, message) = closing_error(&mut oversized).await;
    assert_eq!(code, ErrorCode::TooLarge, "{message}");

    // A wrong token is refused, the command dropped, and the stream goes on read-only;
    // the right token is granted.
    let mut intruder = Client::connect(&url).await.unwrap();
    intruder
        .send_control(
            "not the token",
            ControlCommand::MoveProbe {
                position: [0.05, 0.05, 0.0],
            },
        )
        .await
        .unwrap();
    let refused = control_status(&mut intruder).await;
    assert!(!refused.granted, "{refused:?}");
    assert!(
        refused.message.contains("read-only") && !refused.message.contains("not the token"),
        "{refused:?}"
    );
    frames_keep_arriving(&mut intruder, 10).await;
    let mut checker = Client::connect(&url).await.unwrap();
    checker
        .send_control(&token, ControlCommand::CheckToken)
        .await
        .unwrap();
    assert!(control_status(&mut checker).await.granted);

    let (mut texter, _) = tokio_tungstenite::connect_async(url.as_str())
        .await
        .unwrap();
    texter
        .send(tokio_tungstenite::tungstenite::Message::Text(
            "hello".into(),
        ))
        .await
        .unwrap();
    let mut saw = None;
    while let Some(Ok(message)) = futures_util::StreamExt::next(&mut texter).await {
        if let tokio_tungstenite::tungstenite::Message::Binary(b) = message {
            if let wire::ServerMessage::Error(e) = wire::decode_server(&b).unwrap() {
                saw = Some(e.code);
            }
        }
    }
    assert_eq!(saw, Some(ErrorCode::UnexpectedText));

    // The authorised client drives the probe into the tissue; the stream shows it.
    let mut operator = Client::connect(&url).await.unwrap();
    let target = [0.05, 0.05, SIZE[2] - 0.004];
    operator
        .send_control(&token, ControlCommand::MoveProbe { position: target })
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let frame = operator.next_frame().await.unwrap();
        if frame.probe == target {
            assert!(frame.in_contact);
            assert!((frame.force[2] - crate::support::stream::STIFFNESS * 0.004).abs() < 1e-9);
            let wire::Deformation::Superposed { corrections, .. } = &frame.deformation else {
                panic!("modal scene streams modal frames")
            };
            assert!(
                !corrections.is_empty(),
                "the dent's residual travels as corrections"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "probe command never reached the stream"
        );
    }

    // The observer saw none of this: it still gets consecutive frames.
    let mut last = first;
    for _ in 0..10 {
        let f = observer
            .next_frame()
            .await
            .expect("observer still connected");
        assert!(f.sequence > last);
        last = f.sequence;
    }
    assert_eq!(
        server.client_count(),
        4,
        "observer, operator, and the read-only intruder and checker remain"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_joiners_get_the_newest_frame_at_once_and_limits_hold() {
    let (tissue, _producer, reader, _control) = running_tissue(AnalyticTissue::modal([6, 6, 2], 8));
    let config = StreamConfig {
        max_clients: 2,
        ..loopback_config()
    };
    // No control sender: a read-only server.
    let server = StreamServer::start(config, tissue.scene.clone(), reader, None)
        .await
        .unwrap();
    assert!(server.control_token().is_none());
    let url = format!("ws://{}/ws", server.local_addr());
    let mut early = Client::connect(&url).await.unwrap();
    assert!(!early.hello.control_allowed);
    let stats = wire::HapticStats {
        ticks: 1000,
        period_p50_s: 1e-3,
        period_p99_s: 1.02e-3,
        period_max_s: 1.5e-3,
        compute_p99_s: 2e-5,
        missed_deadlines: 1,
        clamped_forces: 0,
    };
    server.publish_haptic_stats(&stats);
    loop {
        match early.next_event().await.unwrap() {
            palpa_client::Event::HapticStats(s) => break assert_eq!(s, stats),
            _ => continue,
        }
    }
    for _ in 0..30 {
        early.next_frame().await.unwrap();
    }
    let newest = early.next_frame().await.unwrap().sequence;
    let mut late = Client::connect(&url).await.unwrap();
    let first = late.next_frame().await.unwrap();
    assert!(
        first.sequence >= newest,
        "late joiner's first frame {} is older than {newest}",
        first.sequence
    );
    assert_eq!(first.sequence, late.stats.last_sequence.unwrap());

    let mut third = Client::connect(&url).await.map(|_| ()).unwrap_err();
    if let ClientError::Server { code, .. } = &mut third {
        assert_eq!(*code, ErrorCode::ServerFull);
    } else {
        panic!("expected ServerFull, got {third}");
    }

    late.send_control("anything", ControlCommand::ReleaseProbe)
        .await
        .unwrap();
    let refused = control_status(&mut late).await;
    assert!(
        !refused.granted && refused.message.contains("disabled"),
        "{refused:?}"
    );
    frames_keep_arriving(&mut late, 5).await;

    server.shutdown().await;
    let (code, _) = closing_error(&mut early).await;
    assert_eq!(code, ErrorCode::ShuttingDown);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_viewer_is_served_from_the_binary() {
    let (tissue, _producer, reader, _control) = running_tissue(AnalyticTissue::modal([4, 4, 2], 4));
    let server = StreamServer::start(loopback_config(), tissue.scene.clone(), reader, None)
        .await
        .unwrap();
    let addr = server.local_addr();
    for (path, needle, content_type) in [
        ("/", "viewer.js", "text/html"),
        ("/viewer.js", "WebGL2", "text/javascript"),
        ("/protocol.js", "decodeServerMessage", "text/javascript"),
    ] {
        let response = http_get(addr, path).await;
        assert!(
            response.starts_with("HTTP/1.1 200"),
            "{path}: {}",
            &response[..40.min(response.len())]
        );
        assert!(
            response
                .to_ascii_lowercase()
                .contains(&format!("content-type: {content_type}")),
            "{path}"
        );
        assert!(response.contains(needle), "{path} lacks {needle}");
    }
    server.shutdown().await;
}

async fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out))
        .await
        .unwrap()
        .unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_client_is_closed_after_the_idle_timeout() {
    let (tissue, _producer, reader, _control) = running_tissue(AnalyticTissue::modal([4, 4, 2], 4));
    let config = StreamConfig {
        idle_timeout: Duration::from_millis(900),
        ..loopback_config()
    };
    let server = StreamServer::start(config, tissue.scene.clone(), reader, None)
        .await
        .unwrap();
    let url = format!("ws://{}/ws", server.local_addr());
    // Handshake, then silence: no reads means no pongs to the server's pings.
    let (mut silent, _) = tokio_tungstenite::connect_async(url.as_str())
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.client_count() > 0 {
        assert!(
            Instant::now() < deadline,
            "silent client still connected after 30 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // What it finds when it finally reads the raw socket (a WebSocket library would
    // answer the queued pings and fail on the closed socket first): frames, then the
    // encoded IdleTimeout error, then the end of the stream.
    let mut raw = Vec::new();
    let read = tokio::io::AsyncReadExt::read_to_end(silent.get_mut(), &mut raw);
    let _ = tokio::time::timeout(Duration::from_secs(10), read).await;
    let mut error = 4u32.to_le_bytes().to_vec(); // ServerMessage::Error
    error.extend_from_slice(&4u32.to_le_bytes()); // ErrorCode::IdleTimeout
    let found = raw.windows(error.len()).position(|w| w == error);
    let text = b"nothing received for";
    assert!(
        found.is_some() && raw.windows(text.len()).any(|w| w == text),
        "no IdleTimeout error in {} bytes",
        raw.len()
    );
    server.shutdown().await;
}
