//! Who may use the viewer server, each finding of the security review with its exact
//! input (issue 42): 64 WebSockets from a foreign web origin are refused with 403 and the
//! token holder connects and controls; 64 anonymous WebSockets holding every seat do not
//! keep the token holder out; a foreign `Host` (DNS rebinding) is refused on HTTP and
//! WebSocket; token guesses are throttled to at most 10 checked per second per address
//! and a connection is closed after 5 refusals; the token is not in the log at
//! `RUST_LOG=trace`; the served page's own origin passes.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::stream::AnalyticTissue;
use futures_util::StreamExt;
use palpa::stream::{
    control_channel, snapshot_slot, ControlReceiver, ProbeControl, StreamConfig, StreamServer,
    REFUSALS_PER_CONNECTION,
};
use palpa_client::palpa_protocol::{self as wire, ControlCommand, ErrorCode};
use palpa_client::{Client, ClientError, Event};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

const BINARY: &str = env!("CARGO_BIN_EXE_palpa");

/// The tests that count rates or fill the server run one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn loopback_config() -> StreamConfig {
    StreamConfig {
        bind: "127.0.0.1:0".parse().unwrap(),
        ..StreamConfig::default()
    }
}

/// A server over a still tissue with control enabled; the receiver gets the commands.
async fn server(config: StreamConfig) -> (StreamServer, ControlReceiver) {
    let tissue = AnalyticTissue::modal([2, 2, 1], 2);
    let (writer, reader) = snapshot_slot(tissue.snapshot_at(0.0, AnalyticTissue::idle_probe()));
    // The writer must live as long as the server reads from it.
    std::mem::forget(writer);
    let (control_tx, control_rx) = control_channel(256);
    let server = StreamServer::start(config, tissue.scene.clone(), reader, Some(control_tx))
        .await
        .unwrap();
    (server, control_rx)
}

/// Opens a WebSocket to `url` with `headers` and returns the HTTP status of a refusal, or
/// the open socket.
async fn websocket_with(
    url: &str,
    headers: &[(&str, &str)],
) -> Result<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    u16,
> {
    let mut request = url.into_client_request().unwrap();
    for (name, value) in headers {
        request.headers_mut().insert(
            tokio_tungstenite::tungstenite::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    match tokio_tungstenite::connect_async(request).await {
        Ok((socket, _)) => Ok(socket),
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            Err(response.status().as_u16())
        }
        Err(e) => panic!("{url}: {e}"),
    }
}

/// One raw HTTP/1.1 GET: the status code and the body.
fn http_get(addr: std::net::SocketAddr, path: &str, headers: &str) -> (u16, String) {
    let mut tcp = std::net::TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        tcp,
        "GET {path} HTTP/1.1\r\n{headers}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    tcp.read_to_string(&mut response).unwrap();
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, response)
}

/// Waits for the next control status on `client`.
async fn control_status(client: &mut Client) -> wire::ControlStatus {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        assert!(Instant::now() < deadline, "no control status within 10 s");
        if let Event::ControlStatus(s) = client.next_event().await.unwrap() {
            return s;
        }
    }
}

/// Waits up to 5 s for `wanted` on the device's channel.
fn arrives(control: &ControlReceiver, wanted: &ProbeControl) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        while let Ok(command) = control.try_recv() {
            if command == *wanted {
                return true;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_foreign_origin_websockets_are_refused_and_the_token_holder_controls() {
    let _serial = SERIAL.lock().await;
    let (server, control) = server(loopback_config()).await;
    let addr = server.local_addr();
    let url = format!("ws://{addr}/ws");
    // The review's attack: what any page the user visits can do to 127.0.0.1.
    let mut refused = 0;
    for _ in 0..64 {
        match websocket_with(&url, &[("Origin", "http://evil.example")]).await {
            Err(403) => refused += 1,
            Err(status) => panic!("HTTP {status}"),
            Ok(_) => panic!("a foreign origin got a WebSocket"),
        }
    }
    println!("foreign-origin WebSockets refused with 403: {refused} of 64");
    assert_eq!(refused, 64);
    assert_eq!(server.client_count(), 0);
    // The viewer's own page (its origin is the server's) connects and controls.
    let own = format!("http://{addr}");
    let socket = websocket_with(&url, &[("Origin", own.as_str())])
        .await
        .expect("the served page's own origin passes");
    let token = server.control_token().unwrap().to_owned();
    let mut holder = Client::over(socket, None).await.unwrap();
    let target = [0.01, 0.02, 0.03];
    holder
        .send_control(&token, ControlCommand::MoveProbe { position: target })
        .await
        .unwrap();
    assert!(arrives(&control, &ProbeControl::MoveTo(target.into())));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_anonymous_websockets_holding_every_seat_do_not_keep_the_token_holder_out() {
    let _serial = SERIAL.lock().await;
    // A local process can forge any Origin: it fills all 64 seats (one address may take
    // them all here), reading and answering pings.
    let config = StreamConfig {
        max_viewers_per_address: 64,
        ..loopback_config()
    };
    let (server, control) = server(config).await;
    let url = format!("ws://{}/ws", server.local_addr());
    let (closed_tx, mut closed_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut squatters = Vec::new();
    for i in 0..64 {
        let mut client = Client::connect(&url).await.unwrap();
        let closed_tx = closed_tx.clone();
        squatters.push(tokio::spawn(async move {
            loop {
                match client.next_event().await {
                    Ok(_) => {}
                    Err(e) => {
                        let _ = closed_tx.send((i, e.to_string()));
                        break;
                    }
                }
            }
        }));
    }
    assert_eq!(server.client_count(), 64);
    let anonymous = Client::connect(&url).await.map(|_| ()).unwrap_err();
    assert!(
        matches!(
            &anonymous,
            ClientError::Server {
                code: ErrorCode::ServerFull,
                ..
            }
        ),
        "a 65th anonymous client: {anonymous}"
    );
    // The token holder still gets in, takes the oldest anonymous seat, and controls.
    let token = server.control_token().unwrap().to_owned();
    let started = Instant::now();
    let mut holder = Client::connect_with_token(&url, &token, None)
        .await
        .unwrap();
    let status = control_status(&mut holder).await;
    println!(
        "token holder seated and granted in {:.0} ms on a full server",
        started.elapsed().as_secs_f64() * 1e3
    );
    assert!(status.granted, "{status:?}");
    let target = [0.0, 0.01, 0.02];
    holder
        .send_control(&token, ControlCommand::MoveProbe { position: target })
        .await
        .unwrap();
    assert!(arrives(&control, &ProbeControl::MoveTo(target.into())));
    let (evicted, why) = tokio::time::timeout(Duration::from_secs(5), closed_rx.recv())
        .await
        .expect("an anonymous viewer gave up its seat")
        .unwrap();
    assert_eq!(evicted, 0, "the oldest anonymous viewer is evicted: {why}");
    assert!(why.contains("control token"), "{why}");
    assert_eq!(server.client_count(), 64);
    for s in squatters {
        s.abort();
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_viewers_are_capped_per_address_and_per_origin() {
    let _serial = SERIAL.lock().await;
    let tissue = AnalyticTissue::modal([2, 2, 1], 2);
    let (_writer, reader) = snapshot_slot(tissue.snapshot_at(0.0, AnalyticTissue::idle_probe()));
    let config = StreamConfig {
        max_viewers_per_address: 3,
        max_viewers_per_origin: 2,
        allowed_origins: vec!["https://viewer.example".into()],
        ..loopback_config()
    };
    // Read-only: a client without a seat is told at once.
    let server = StreamServer::start(config, tissue.scene.clone(), reader, None)
        .await
        .unwrap();
    let url = format!("ws://{}/ws", server.local_addr());
    let mut held = Vec::new();
    for _ in 0..2 {
        let socket = websocket_with(&url, &[("Origin", "https://viewer.example")])
            .await
            .unwrap();
        held.push(Client::over(socket, None).await.unwrap());
    }
    let socket = websocket_with(&url, &[("Origin", "https://viewer.example")])
        .await
        .unwrap();
    let third = Client::over(socket, None).await.map(|_| ()).unwrap_err();
    assert!(
        third
            .to_string()
            .contains("full for this origin (2 read-only viewers)"),
        "{third}"
    );
    held.push(Client::connect(&url).await.unwrap());
    let fourth = Client::connect(&url).await.map(|_| ()).unwrap_err();
    assert!(
        fourth
            .to_string()
            .contains("full for this address (3 read-only viewers)"),
        "{fourth}"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_host_or_origin_is_refused_with_403_on_http_and_websocket() {
    let (server, _control) = server(loopback_config()).await;
    let addr = server.local_addr();
    let host = format!("Host: {addr}\r\n");
    let (status, body) = http_get(addr, "/", &host);
    assert_eq!(status, 200, "{body}");
    // DNS rebinding: evil.example re-pointed at 127.0.0.1.
    for (path, headers) in [
        ("/", "Host: evil.example:7878\r\n".to_string()),
        ("/viewer.js", "Host: evil.example\r\n".to_string()),
        ("/", String::new()),
        ("/", format!("{host}Origin: http://evil.example\r\n")),
        ("/", format!("{host}Origin: null\r\n")),
    ] {
        let (status, body) = http_get(addr, path, &headers);
        assert_eq!(status, 403, "GET {path} with {headers:?}: {body}");
        assert!(body.contains("forbidden"), "{body}");
    }
    let url = format!("ws://{addr}/ws");
    for headers in [
        &[("Host", "evil.example")][..],
        &[("Origin", "http://evil.example")],
        &[("Origin", "http://127.0.0.1:1")],
    ] {
        assert_eq!(
            websocket_with(&url, headers).await.err(),
            Some(403),
            "{headers:?}"
        );
    }
    let own = format!("http://{addr}");
    assert!(websocket_with(&url, &[("Origin", &own)]).await.is_ok());
    let localhost = format!("localhost:{}", addr.port());
    assert!(websocket_with(&url, &[("Host", &localhost)]).await.is_ok());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_guesses_are_at_most_ten_checked_per_second_per_address() {
    let _serial = SERIAL.lock().await;
    let (server, control) = server(loopback_config()).await;
    let url = format!("ws://{}/ws", server.local_addr());
    let token = server.control_token().unwrap().to_owned();
    // A viewer that proved the token before the guessing starts keeps control through it.
    let mut holder = Client::connect_with_token(&url, &token, None)
        .await
        .unwrap();
    assert!(control_status(&mut holder).await.granted);

    // The review's input: CheckToken as fast as the socket goes (17-26k/s before), here
    // from 8 connections at once, each reconnecting when it is closed: for 3 s, and on a
    // busy machine on until the first guesses were checked and a connection was closed.
    const SECONDS: f64 = 3.0;
    const AT_MOST: f64 = 30.0;
    let started = Instant::now();
    let seen = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let guessers: Vec<_> = (0..8)
        .map(|g| {
            let url = url.clone();
            let seen = seen.clone();
            let counts = seen.clone();
            let go_on = move || {
                let t = started.elapsed().as_secs_f64();
                let (checked, closed) = (&counts.0, &counts.1);
                t < SECONDS
                    || (t < AT_MOST && (checked.load(Relaxed) < 3 || closed.load(Relaxed) == 0))
            };
            tokio::spawn(async move {
                let (mut checked, mut early, mut closed) = (0u64, 0u64, 0u64);
                let mut n = 0u64;
                while go_on() {
                    let mut client = Client::connect(&url).await.unwrap();
                    loop {
                        n += 1;
                        let guess = format!("{g:02}{n:030x}");
                        if client
                            .send_control(&guess, ControlCommand::CheckToken)
                            .await
                            .is_err()
                        {
                            break;
                        }
                        match next_status(&mut client).await {
                            Ok(s) if s.message.starts_with("wrong control token") => {
                                checked += 1;
                                seen.0.fetch_add(1, Relaxed);
                            }
                            Ok(s) => {
                                assert!(s.message.contains("too many wrong"), "{s:?}");
                                early += 1;
                            }
                            Err(ClientError::Server { code, .. }) => {
                                assert_eq!(code, ErrorCode::Unauthorized);
                                closed += 1;
                                seen.1.fetch_add(1, Relaxed);
                                break;
                            }
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
                (checked, early, closed)
            })
        })
        .collect();
    // Meanwhile the trusted viewer moves the probe.
    let target = [0.0, 0.0, 0.01];
    holder
        .send_control(&token, ControlCommand::MoveProbe { position: target })
        .await
        .unwrap();
    let (mut checked, mut early, mut closed) = (0, 0, 0);
    for g in guessers {
        let (c, e, x) = g.await.unwrap();
        checked += c;
        early += e;
        closed += x;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let rate = checked as f64 / elapsed;
    println!(
        "in {elapsed:.2} s from one address: {checked} guesses checked ({rate:.1}/s), \
         {early} refused unchecked, {closed} connections closed after \
         {REFUSALS_PER_CONNECTION} refusals"
    );
    assert!(rate <= 10.0, "{rate:.1} checked guesses per second");
    assert!(checked >= 3, "the first guesses are checked: {checked}");
    assert!(closed > 0, "connections that keep guessing are closed");
    assert!(
        arrives(&control, &ProbeControl::MoveTo(target.into())),
        "the trusted viewer kept control through the guessing"
    );
    server.shutdown().await;
}

/// The next control status, or the error that closed the connection.
async fn next_status(client: &mut Client) -> Result<wire::ControlStatus, ClientError> {
    loop {
        if let Event::ControlStatus(s) = client.next_event().await? {
            return Ok(s);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_server_gives_a_wrong_token_no_seat() {
    let _serial = SERIAL.lock().await;
    let config = StreamConfig {
        max_clients: 1,
        ..loopback_config()
    };
    let (server, _control) = server(config).await;
    let url = format!("ws://{}/ws", server.local_addr());
    let mut first = Client::connect(&url).await.unwrap();
    let started = Instant::now();
    let intruder = Client::connect_with_token(&url, "not the token at all, 0123456789", None)
        .await
        .map(|_| ())
        .unwrap_err();
    assert!(
        intruder.to_string().contains("wrong control token"),
        "{intruder}"
    );
    // One without any token waits out the grace period, then is told.
    let silent = Client::connect(&url).await.map(|_| ()).unwrap_err();
    let waited = started.elapsed();
    assert!(
        silent
            .to_string()
            .contains("only the holder of the control token"),
        "{silent}"
    );
    assert!(waited >= palpa::stream::TOKEN_GRACE, "{waited:?}");
    // The seated viewer was never disturbed.
    first.next_frame().await.unwrap();
    assert_eq!(server.client_count(), 1);
    server.shutdown().await;
}

/// A scene on a small condensed block that `palpa serve` starts in seconds.
const SMALL_SCENE: &str = r#"
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
token = "7d3f9a2c4e1b8d6f0a5c3e9b7d2f4a1c"
"#;

#[test]
fn the_token_is_in_no_log_line_at_rust_log_trace() {
    let token = "7d3f9a2c4e1b8d6f0a5c3e9b7d2f4a1c";
    let dir = tempfile::tempdir().unwrap();
    let scene = dir.path().join("small.toml");
    std::fs::write(&scene, SMALL_SCENE).unwrap();
    let mut command = std::process::Command::new(BINARY);
    command
        .args(["serve", "--scene", scene.to_str().unwrap()])
        .env("PALPA_CACHE_DIR", dir.path())
        .env("PALPA_REALTIME", "off")
        .env("RUST_LOG", "trace");
    let mut served = crate::support::serve::Served::spawn(command);
    let ready = served.ready(Duration::from_secs(120));
    assert_eq!(ready.token, token);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut holder = Client::connect_with_token(&ready.websocket, token, None)
            .await
            .unwrap();
        assert!(control_status(&mut holder).await.granted);
        holder
            .send_control(
                token,
                ControlCommand::MoveProbe {
                    position: [0.0, 0.0, 0.01],
                },
            )
            .await
            .unwrap();
        let mut other = Client::connect(&ready.websocket).await.unwrap();
        other
            .send_control(
                "wrong-token-0123456789abcdefABCDEF",
                ControlCommand::CheckToken,
            )
            .await
            .unwrap();
        assert!(!control_status(&mut other).await.granted);
        holder.next_frame().await.unwrap();
        // The page the browser loads carries the token in its address.
        let (mut socket, _) = tokio_tungstenite::connect_async(ready.websocket.as_str())
            .await
            .unwrap();
        let _ = socket.next().await;
    });
    let host = ready
        .viewer
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap();
    let (status, _) = http_get(
        host.parse().unwrap(),
        &format!("/?token={token}"),
        &format!("Host: {host}\r\n"),
    );
    assert_eq!(status, 200);
    let (status, _, stderr) = served.interrupt(Duration::from_secs(30));
    assert!(status.success(), "{stderr}");
    let hex: String = token.bytes().map(|b| format!("{b:02x}")).collect();
    let decimal = token
        .bytes()
        .map(|b| b.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    println!("{} bytes of log at RUST_LOG=trace", stderr.len());
    assert!(
        stderr.contains("DEBUG"),
        "the log ran below info: {}",
        &stderr[..stderr.len().min(2000)]
    );
    for (form, needle) in [
        ("text", token),
        ("hex", hex.as_str()),
        ("decimal", decimal.as_str()),
    ] {
        assert!(
            !stderr.contains(needle),
            "the token is in the log as {form}:\n{}",
            stderr
                .lines()
                .filter(|l| l.contains(needle))
                .take(3)
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// A log writer into a shared buffer.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_websocket_librarys_frame_traces_carry_the_token_and_the_log_filter_drops_them() {
    // It installs the global log subscriber: alone in a child process.
    crate::support::process::alone!(
        the_websocket_librarys_frame_traces_carry_the_token_and_the_log_filter_drops_them
    );
    let _serial = SERIAL.lock().await;
    // Two logs of everything at trace: one through the filter `palpa` installs, one
    // without it (what the review found: tungstenite's frames with their payloads).
    let (filtered, unfiltered) = (Captured::default(), Captured::default());
    let (f, u) = (filtered.clone(), unfiltered.clone());
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(move || f.clone())
                .with_filter(tracing_subscriber::filter::filter_fn(
                    palpa::stream::without_payloads,
                )),
        )
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(move || u.clone())
                .with_filter(tracing_subscriber::filter::LevelFilter::TRACE),
        )
        .init();
    let token = "5b8e1f3a9c2d7e4f6a0b3c8d1e5f9a2b";
    let config = StreamConfig {
        control_token: Some(token.into()),
        ..loopback_config()
    };
    let (server, control) = server(config).await;
    let url = format!("ws://{}/ws", server.local_addr());
    let mut holder = Client::connect_with_token(&url, token, None).await.unwrap();
    assert!(control_status(&mut holder).await.granted);
    let target = [0.0, 0.0, 0.02];
    holder
        .send_control(token, ControlCommand::MoveProbe { position: target })
        .await
        .unwrap();
    assert!(arrives(&control, &ProbeControl::MoveTo(target.into())));
    server.shutdown().await;
    let hex: String = token.bytes().map(|b| format!("{b:02x}")).collect();
    let (filtered, unfiltered) = (filtered.text(), unfiltered.text());
    assert!(
        unfiltered.contains(&hex),
        "without the filter the frames' payloads are logged (hex)"
    );
    assert!(
        !filtered.contains(token) && !filtered.contains(&hex),
        "{filtered}"
    );
    println!(
        "unfiltered log {} bytes with the token, filtered {} bytes without",
        unfiltered.len(),
        filtered.len()
    );
}
