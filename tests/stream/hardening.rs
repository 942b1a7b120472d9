//! Bad settings and bad control input at the stream: each finding of the hardening review
//! with its exact input. Settings are refused with a message naming the field, never a
//! panic; probe targets are kept inside the workspace; a flood of control messages does
//! not become a flood of log lines.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::support::stream::AnalyticTissue;
use palpa::stream::{
    control_channel, snapshot_slot, ProbeControl, ProbeWorkspace, StreamConfig, StreamServer,
};
use palpa::Vec3;
use palpa_client::palpa_protocol::{ControlCommand, ErrorCode};
use palpa_client::{Client, ClientError};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

fn loopback_config() -> StreamConfig {
    StreamConfig {
        bind: "127.0.0.1:0".parse().unwrap(),
        ..StreamConfig::default()
    }
}

/// The settings of the review's findings, each with the field its error must name.
fn bad_settings() -> Vec<(&'static str, StreamConfig, &'static str)> {
    let base = loopback_config();
    vec![
        (
            "max_clients = u64::MAX",
            StreamConfig {
                max_clients: u64::MAX as usize,
                ..base.clone()
            },
            "stream.max_clients",
        ),
        (
            "frame rate 1e12",
            StreamConfig {
                frame_rate_hz: 1e12,
                ..base.clone()
            },
            "stream.frame_rate_hz",
        ),
        (
            "frame rate 1e9",
            StreamConfig {
                frame_rate_hz: 1e9,
                ..base.clone()
            },
            "stream.frame_rate_hz",
        ),
        (
            "frame rate 1e-300",
            StreamConfig {
                frame_rate_hz: 1e-300,
                ..base.clone()
            },
            "stream.frame_rate_hz",
        ),
        (
            "frame rate NaN",
            StreamConfig {
                frame_rate_hz: f64::NAN,
                ..base.clone()
            },
            "stream.frame_rate_hz",
        ),
        (
            "max_clients = 0",
            StreamConfig {
                max_clients: 0,
                ..base.clone()
            },
            "stream.max_clients",
        ),
        (
            "max_connections = usize::MAX",
            StreamConfig {
                max_connections: usize::MAX,
                ..base.clone()
            },
            "stream.max_connections",
        ),
        (
            "idle timeout 0",
            StreamConfig {
                idle_timeout: Duration::ZERO,
                ..base.clone()
            },
            "stream.idle_timeout",
        ),
        (
            "header timeout Duration::MAX",
            StreamConfig {
                header_timeout: Duration::MAX,
                ..base.clone()
            },
            "stream.header_timeout",
        ),
        (
            "max_message_bytes = usize::MAX",
            StreamConfig {
                max_message_bytes: usize::MAX,
                ..base.clone()
            },
            "stream.max_message_bytes",
        ),
        (
            "probe workspace with a NaN corner",
            StreamConfig {
                probe_workspace: Some(ProbeWorkspace {
                    min: Vec3::new(0.0, f64::NAN, 0.0),
                    max: Vec3::new(1.0, 1.0, 1.0),
                }),
                ..base.clone()
            },
            "stream.probe_workspace",
        ),
        (
            "probe workspace upside down",
            StreamConfig {
                probe_workspace: Some(ProbeWorkspace {
                    min: Vec3::new(0.0, 0.0, 1.0),
                    max: Vec3::new(1.0, 1.0, 0.0),
                }),
                ..base
            },
            "stream.probe_workspace",
        ),
    ]
}

#[test]
fn settings_outside_their_bounds_are_refused_naming_the_field() {
    loopback_config()
        .validate()
        .expect("the defaults are valid");
    for rate in [1.0, 30.0, 240.0] {
        let config = StreamConfig {
            frame_rate_hz: rate,
            ..loopback_config()
        };
        config
            .validate()
            .expect("rates within 1..=240 Hz are valid");
    }
    for (finding, config, field) in bad_settings() {
        let why = config.validate().expect_err(finding);
        assert!(why.starts_with(field), "{finding}: {why}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_returns_an_error_for_every_bad_setting_instead_of_panicking() {
    let tissue = AnalyticTissue::modal([2, 2, 1], 2);
    for (finding, config, field) in bad_settings() {
        let (_writer, reader) =
            snapshot_slot(tissue.snapshot_at(0.0, AnalyticTissue::idle_probe()));
        let started = StreamServer::start(config, tissue.scene.clone(), reader, None).await;
        let error = match started {
            Ok(server) => {
                server.shutdown().await;
                panic!("{finding}: the server started");
            }
            Err(e) => e,
        };
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput, "{finding}");
        assert!(error.to_string().contains(field), "{finding}: {error}");
    }
}

/// The box of the review's scene: the analytic tissue's bounding box grown by its size.
fn workspace() -> ProbeWorkspace {
    let size = Vec3::from(crate::support::stream::SIZE);
    ProbeWorkspace {
        min: -size,
        max: 2.0 * size,
    }
}

/// Sends each position as `MoveProbe` with the token and returns what reached the
/// device's channel, or the error that closed the connection.
async fn forwarded(
    config: StreamConfig,
    positions: &[[f64; 3]],
) -> (Vec<ProbeControl>, Option<ErrorCode>) {
    let tissue = AnalyticTissue::modal([2, 2, 1], 2);
    let (_writer, reader) = snapshot_slot(tissue.snapshot_at(0.0, AnalyticTissue::idle_probe()));
    let (control_tx, control_rx) = control_channel(64);
    let server = StreamServer::start(config, tissue.scene.clone(), reader, Some(control_tx))
        .await
        .unwrap();
    let token = server.control_token().unwrap().to_owned();
    let mut client = Client::connect(&format!("ws://{}/ws", server.local_addr()))
        .await
        .unwrap();
    for &position in positions {
        client
            .send_control(&token, ControlCommand::MoveProbe { position })
            .await
            .unwrap();
    }
    // A ReleaseProbe marks the end: once it arrived, every earlier command has been
    // handled (the server reads one connection's messages in order).
    let _ = client
        .send_control(&token, ControlCommand::ReleaseProbe)
        .await;
    let mut received = Vec::new();
    let mut closed_with = None;
    let deadline = Instant::now() + Duration::from_secs(10);
    while received.last() != Some(&ProbeControl::Release) && closed_with.is_none() {
        assert!(Instant::now() < deadline, "commands never arrived");
        while let Ok(command) = control_rx.try_recv() {
            received.push(command);
        }
        let next = tokio::time::timeout(Duration::from_millis(20), client.next_event()).await;
        if let Ok(Err(ClientError::Server { code, .. })) = next {
            closed_with = Some(code);
        }
    }
    while let Ok(command) = control_rx.try_recv() {
        received.push(command);
    }
    server.shutdown().await;
    (received, closed_with)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn move_probe_far_outside_the_workspace_is_clamped_to_it() {
    let config = StreamConfig {
        probe_workspace: Some(workspace()),
        ..loopback_config()
    };
    let inside = [0.05, 0.05, 0.03];
    let (received, closed) =
        forwarded(config, &[[0.0, 0.0, -1e160], [0.0, 0.0, -1e6], inside]).await;
    assert_eq!(closed, None, "finite targets do not close the connection");
    let w = workspace();
    assert_eq!(
        received,
        vec![
            ProbeControl::MoveTo(Vec3::new(0.0, 0.0, w.min.z)),
            ProbeControl::MoveTo(Vec3::new(0.0, 0.0, w.min.z)),
            ProbeControl::MoveTo(Vec3::from(inside)),
            ProbeControl::Release,
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_scene_box_targets_are_kept_within_ten_metres() {
    let (received, closed) = forwarded(loopback_config(), &[[1e300, -1e160, 0.5]]).await;
    assert_eq!(closed, None);
    assert_eq!(
        received,
        vec![
            ProbeControl::MoveTo(Vec3::new(10.0, -10.0, 0.5)),
            ProbeControl::Release
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_finite_move_probe_is_refused_and_never_forwarded() {
    for bad in [
        [0.0, 0.0, f64::NAN],
        [f64::INFINITY, 0.0, 0.0],
        [0.0, f64::NEG_INFINITY, 0.0],
    ] {
        let config = StreamConfig {
            probe_workspace: Some(workspace()),
            ..loopback_config()
        };
        let (received, closed) = forwarded(config, &[bad]).await;
        assert_eq!(closed, Some(ErrorCode::Malformed), "{bad:?}");
        assert!(received.is_empty(), "{bad:?} forwarded as {received:?}");
    }
}

/// One log event the stream wrote.
#[derive(Clone, Debug)]
struct Logged {
    level: tracing::Level,
    message: String,
    suppressed: u64,
    held_back: u64,
}

/// Records every event of palpa's stream module.
struct Recorder(Arc<Mutex<Vec<Logged>>>);

impl<S: tracing::Subscriber> Layer<S> for Recorder {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if !event.metadata().target().starts_with("palpa::stream") {
            return;
        }
        struct Fields(Logged);
        impl Visit for Fields {
            fn record_u64(&mut self, field: &Field, value: u64) {
                match field.name() {
                    "suppressed" => self.0.suppressed = value,
                    "held_back" => self.0.held_back = value,
                    _ => {}
                }
            }
            fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0.message = format!("{value:?}");
                }
            }
        }
        let mut fields = Fields(Logged {
            level: *event.metadata().level(),
            message: String::new(),
            suppressed: 0,
            held_back: 0,
        });
        event.record(&mut fields);
        self.0.lock().unwrap().push(fields.0);
    }
}

/// The stream's log lines since the recorder was installed (once per process: the log
/// tests run alone, each in its own child process).
fn log_lines() -> &'static Arc<Mutex<Vec<Logged>>> {
    static LINES: OnceLock<Arc<Mutex<Vec<Logged>>>> = OnceLock::new();
    LINES.get_or_init(|| {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let subscriber = tracing_subscriber::registry().with(Recorder(lines.clone()));
        tracing::subscriber::set_global_default(subscriber).expect("one global subscriber");
        lines
    })
}

static LOG_TESTS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_thousand_surplus_control_messages_log_a_bounded_number_of_lines() {
    crate::support::process::alone!(
        twenty_thousand_surplus_control_messages_log_a_bounded_number_of_lines
    );
    let _one_at_a_time = LOG_TESTS.lock().await;
    let lines = log_lines();
    let tissue = AnalyticTissue::modal([2, 2, 1], 2);
    let (_writer, reader) = snapshot_slot(tissue.snapshot_at(0.0, AnalyticTissue::idle_probe()));
    // A device that never drains its channel of one: every command after the first is
    // dropped, and each drop is a warning.
    let (control_tx, _control_rx) = control_channel(1);
    let config = loopback_config();
    let per_second = u64::from(config.log_lines_per_second);
    let server = StreamServer::start(config, tissue.scene.clone(), reader, Some(control_tx))
        .await
        .unwrap();
    let token = server.control_token().unwrap().to_owned();
    let mut client = Client::connect(&format!("ws://{}/ws", server.local_addr()))
        .await
        .unwrap();
    lines.lock().unwrap().clear();
    let start = Instant::now();
    const MESSAGES: u64 = 20_000;
    for i in 0..MESSAGES {
        let position = [0.05, 0.05, 0.04 - 1e-7 * i as f64];
        client
            .send_control(&token, ControlCommand::MoveProbe { position })
            .await
            .unwrap();
    }
    // Quiet for more than a window, then a malformed message closes the connection;
    // its error arrives after the server handled every message before it.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    client.send_raw(vec![9, 9, 9]).await.unwrap();
    let code = loop {
        match client.next_event().await {
            Ok(_) => continue,
            Err(ClientError::Server { code, .. }) => break code,
            Err(e) => panic!("expected the Malformed error, got {e}"),
        }
    };
    assert_eq!(code, ErrorCode::Malformed);
    // The connection's summary line is written after the error went out.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !lines.lock().unwrap().iter().any(|l| l.held_back > 0) {
        assert!(
            Instant::now() < deadline,
            "no summary line when the client closed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let elapsed = start.elapsed().as_secs_f64();
    server.shutdown().await;

    let logged = lines.lock().unwrap().clone();
    let drops: Vec<&Logged> = logged
        .iter()
        .filter(|l| l.message.contains("command dropped"))
        .collect();
    let warnings = logged
        .iter()
        .filter(|l| l.level <= tracing::Level::WARN)
        .count() as u64;
    let summary = logged.iter().map(|l| l.held_back).sum::<u64>();
    let reported = drops.len() as u64 + drops.iter().map(|l| l.suppressed).sum::<u64>() + summary;
    println!(
        "{MESSAGES} messages in {elapsed:.2} s: {warnings} warning lines ({} drop lines, \
         {summary} reported as suppressed at close)",
        drops.len()
    );
    assert!(!drops.is_empty(), "the first drops are logged");
    let bound = per_second * (elapsed.ceil() as u64 + 1) + 1;
    assert!(
        warnings <= bound,
        "{warnings} warning lines in {elapsed:.2} s (at most {bound})"
    );
    assert_eq!(
        reported,
        MESSAGES - 1,
        "every dropped command is logged or counted as suppressed exactly once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_connections_sending_malformed_messages_log_a_bounded_number_of_lines() {
    crate::support::process::alone!(
        many_connections_sending_malformed_messages_log_a_bounded_number_of_lines
    );
    let _one_at_a_time = LOG_TESTS.lock().await;
    let lines = log_lines();
    let tissue = AnalyticTissue::modal([2, 2, 1], 2);
    let (_writer, reader) = snapshot_slot(tissue.snapshot_at(0.0, AnalyticTissue::idle_probe()));
    let (control_tx, _control_rx) = control_channel(64);
    // 50 at a time from one address: more than its default share of read-only seats.
    let config = StreamConfig {
        max_viewers_per_address: 64,
        ..loopback_config()
    };
    let per_second = u64::from(config.log_lines_per_second);
    let server = StreamServer::start(config, tissue.scene.clone(), reader, Some(control_tx))
        .await
        .unwrap();
    let url = format!("ws://{}/ws", server.local_addr());
    lines.lock().unwrap().clear();
    let start = Instant::now();
    // 2,000 connections, 50 at a time, each closed for a malformed message.
    const CONNECTIONS: usize = 2_000;
    for _ in 0..CONNECTIONS / 50 {
        let batch: Vec<_> = (0..50)
            .map(|_| {
                let url = url.clone();
                tokio::spawn(async move {
                    let mut client = Client::connect(&url).await.unwrap();
                    client.send_raw(vec![9, 9, 9]).await.unwrap();
                    loop {
                        match client.next_event().await {
                            Ok(_) => continue,
                            Err(ClientError::Server { code, .. }) => break code,
                            Err(e) => panic!("expected Malformed, got {e}"),
                        }
                    }
                })
            })
            .collect();
        for client in batch {
            assert_eq!(client.await.unwrap(), ErrorCode::Malformed);
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    server.shutdown().await;
    let logged = lines.lock().unwrap().len() as u64;
    println!("{CONNECTIONS} malformed messages in {elapsed:.2} s: {logged} log lines");
    assert!(logged > 0, "closing a client is logged at all");
    let bound = per_second * (elapsed.ceil() as u64 + 1) + 4;
    assert!(
        logged <= bound,
        "{logged} log lines in {elapsed:.2} s (at most {bound})"
    );
}
