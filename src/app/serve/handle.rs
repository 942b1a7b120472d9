//! A running `serve`: the stream server on its async runtime beside the devices'
//! threads; polled for telemetry, stopped with zero force first, and its report.

use crate::device::HapticDevice;
use palpa_protocol as wire;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::device::CalibrationRequest;
use crate::haptic::runtime::RuntimeShared;
use crate::haptic::stats::StatsSnapshot;
use crate::stream::{
    ColumnFeed, ControlSender, SnapshotReader, StreamConfig, StreamScene, StreamServer,
};
use crate::Vec3;

use super::hands::Hand;
use super::safety::safety_report;
use super::stats::{drain_telemetry, haptic_stats};
use super::summary::{model_note, Started};
use crate::recording::{RecordingDir, RecordingHealth, TickFileSummary};

/// How often [`ServeHandle::run_until`] polls (the statistics go out every 20th poll).
const POLL: Duration = Duration::from_millis(50);
/// Time the clients' tasks get to send the last notice before the server's goodbye.
const NOTICE_GRACE: Duration = Duration::from_millis(100);

/// What the stream server starts from.
pub(super) type StreamParts = (
    StreamConfig,
    StreamScene,
    SnapshotReader,
    ControlSender,
    ColumnFeed,
);

/// A served scene, running until [`ServeHandle::stop`].
pub struct ServeHandle {
    tokio: tokio::runtime::Runtime,
    server: StreamServer,
    hands: Vec<Hand>,
    shared: Vec<Arc<RuntimeShared>>,
    previous: StatsSnapshot,
    /// When `previous` was taken: the statistics window is about, not exactly, 1 s.
    previous_at: Instant,
    /// Device 1's clamped ticks since the last statistics.
    clamped: u64,
    /// The safety report viewers were sent last.
    last_safety: Option<wire::SafetyReport>,
    polls: u32,
    warned_ramp: Vec<bool>,
    stream_recording: Option<(PathBuf, tokio::task::JoinHandle<StreamRecording>)>,
    /// The recording directory, when recording.
    session: Option<RecordingDir>,
    /// The recording's first failure (a full disk ends it at once).
    health: Arc<RecordingHealth>,
    told_recording_failed: bool,
    /// The thread routing viewers' commands; it ends with the server.
    router: JoinHandle<()>,
    calibration: Vec<CalibrationRequest>,
    /// What started.
    pub started: Started,
}

/// One device at the stop.
#[derive(Clone, Debug)]
pub struct DeviceReport {
    /// How messages name it.
    pub label: String,
    /// The force commanded to it last (N, scene frame): zero after a stop.
    pub last_force: Vec3,
    /// The largest force commanded to it (N).
    pub peak_commanded: f64,
    /// What its ticks tell the user: no contact, the clamp, the watchdog's fades.
    pub notes: Vec<String>,
}

/// The frames a stream recording received and what its file holds.
pub type StreamRecording = Result<(u64, palpa_client::RecorderSummary), String>;

/// What a stopped `serve` did.
#[derive(Debug)]
pub struct ServeReport {
    /// Every device, in order.
    pub devices: Vec<DeviceReport>,
    /// Each device's recorded `ticks.csv` and what it holds (with its failure, if a
    /// write failed).
    pub ticks: Vec<(PathBuf, TickFileSummary)>,
    /// The stream recording, its frame count and what the file holds (or why it did
    /// not end).
    pub stream: Option<(PathBuf, StreamRecording)>,
    /// The recording directory and the failure that ended the recording early, if one
    /// did (the session went on unrecorded).
    pub recording: Option<(PathBuf, Option<String>)>,
    /// The thread or server failure that stopped it, if one did.
    pub failure: Option<String>,
}

impl ServeReport {
    /// What each recorded file holds (`Ok`, for `recorded: …`), or where it ended early
    /// and what it holds before that (`Err`).
    pub fn recording_lines(&self) -> Vec<Result<String, String>> {
        let ended = self.recording.as_ref().and_then(|(_, f)| f.as_deref());
        let mut lines = Vec::with_capacity(self.ticks.len() + 1);
        match &self.stream {
            Some((path, Ok((frames, s)))) => lines.push(match s.failure.as_deref().or(ended) {
                None => Ok(format!(
                    "{} ({frames} frames; {} records, {} dropped)",
                    path.display(),
                    s.records,
                    s.dropped
                )),
                Some(e) => Err(format!(
                    "{}: recording ended early ({e}); the file holds the {} records before it",
                    path.display(),
                    s.records
                )),
            }),
            Some((_, Err(e))) => lines.push(Err(e.clone())),
            None => {}
        }
        for (path, s) in &self.ticks {
            let span = s.span.map_or(String::new(), |(a, b)| {
                let rate = (s.rows.max(1) - 1) as f64 / (b - a).max(1e-9);
                format!(", t = {a:.3} to {b:.3} s, {rate:.0} rows/s")
            });
            let (path, rows, dropped) = (path.display(), s.rows, s.dropped);
            lines.push(match &s.failure {
                None => Ok(format!(
                    "{path} ({rows} rows{span}; {dropped} ticks dropped)"
                )),
                Some(e) => Err(format!(
                    "{path}: recording ended early ({e}); the file holds the {rows} \
                     rows{span} before it"
                )),
            });
        }
        lines
    }
}

/// The stream server's runtime and its listener, bound before any model work.
pub(super) struct Listening {
    tokio: tokio::runtime::Runtime,
    listener: tokio::net::TcpListener,
}

/// Starts the stream server's runtime and binds `bind` on it; a taken port or an address
/// not on this machine is an error naming the address.
pub(super) fn listen(bind: SocketAddr) -> Result<Listening, String> {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let listener = {
        let _context = tokio.enter();
        StreamServer::bind(bind)
    };
    let listener = listener.map_err(|e| format!("cannot serve the viewer on {bind}: {e}"))?;
    Ok(Listening { tokio, listener })
}

/// The stream server serving viewers on its runtime (the tissue at rest), before the
/// hands start.
pub(super) struct Viewers {
    tokio: tokio::runtime::Runtime,
    server: StreamServer,
}

impl Viewers {
    /// The viewer's address on this machine, with the control token.
    pub(super) fn viewer_url(&self) -> String {
        self.server.viewer_url()
    }

    /// Its addresses other machines can open.
    pub(super) fn remote_viewer_urls(&self) -> Vec<String> {
        self.server.remote_viewer_urls()
    }
}

/// Starts the stream server on the listener bound first.
pub(super) fn serve_viewers(
    Listening { tokio, listener }: Listening,
    (config, scene, snapshots, control, columns): StreamParts,
) -> Result<Viewers, String> {
    let bind = config.bind;
    let server = tokio.block_on(StreamServer::start_on(
        listener,
        config,
        scene,
        snapshots,
        Some(control),
        Some(columns),
    ));
    let server = server.map_err(|e| format!("cannot serve the viewer on {bind}: {e}"))?;
    Ok(Viewers { tokio, server })
}

/// Runs `hands` beside the viewers' server (dropping the hands on an error stops their
/// threads, zeroing every force) and, when recording into `session`, a stream client
/// recording it.
pub(super) fn start_stream(
    Viewers { tokio, server }: Viewers,
    hands: Vec<Hand>,
    router: JoinHandle<()>,
    (session, health): (Option<RecordingDir>, Arc<RecordingHealth>),
    calibration: Vec<CalibrationRequest>,
    started: Started,
) -> Result<ServeHandle, String> {
    let stream_recording = match &session {
        Some(dir) => {
            let url = format!("ws://{}/ws", local_address(server.local_addr()));
            let (file, path) = dir.stream_file()?;
            let recorder = palpa_client::Recorder::start(file, &path)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            let token = server.control_token().map(str::to_owned);
            let task = tokio.spawn(record_stream(url, recorder, token, health.clone()));
            Some((path, task))
        }
        None => None,
    };
    let shared: Vec<_> = hands.iter().map(|h| h.runtime.shared().clone()).collect();
    Ok(ServeHandle {
        previous: shared[0].stats.snapshot(),
        previous_at: Instant::now(),
        warned_ramp: vec![false; hands.len()],
        started,
        tokio,
        server,
        hands,
        shared,
        clamped: 0,
        last_safety: None,
        polls: 0,
        stream_recording,
        session,
        health,
        told_recording_failed: false,
        router,
        calibration,
    })
}

impl ServeHandle {
    /// The address the viewer and stream listen on.
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// The calibration requests of encoder devices (taken once).
    pub fn calibration_requests(&mut self) -> Vec<CalibrationRequest> {
        std::mem::take(&mut self.calibration)
    }

    /// A thread or the server that stopped by itself, if any: stop then.
    pub fn failure(&self) -> Option<String> {
        let thread = self
            .shared
            .iter()
            .find_map(|s| s.failure().map(str::to_owned));
        thread.or(self.server.failure().map(str::to_owned))
    }

    /// Drains every device's telemetry and sends the viewers its safety report when it
    /// changed (so a fade reaches them within 50 ms of its tick); every 20th call sends
    /// the haptic statistics and warns of a contact during the start-up ramp (call every
    /// 50 ms).
    pub fn poll(&mut self) {
        self.polls += 1;
        if let (Some(failure), false) = (self.health.failure(), self.told_recording_failed) {
            self.told_recording_failed = true;
            tracing::error!(
                "the recording ended: {failure}; the session goes on unrecorded and palpa \
                 will exit with status 1"
            );
            self.server.publish_notice(&wire::Notice {
                kind: wire::NoticeKind::RecordingFailed,
                message: format!("the recording ended: {failure}; the session goes on unrecorded"),
            });
        }
        for (other, hand) in self.shared[1..].iter().zip(&mut self.hands[1..]) {
            drain_telemetry(other, &mut hand.review);
        }
        self.clamped += drain_telemetry(&self.shared[0], &mut self.hands[0].review);
        let report = safety_report(self.hands.iter().map(|h| h.review.fades()));
        if self.last_safety.as_ref() != Some(&report) {
            self.server.publish_safety(&report);
            self.last_safety = Some(report);
        }
        if self.polls % 20 != 0 {
            return;
        }
        let clamped = std::mem::take(&mut self.clamped);
        let stats = haptic_stats(&self.shared[0], &mut self.previous, clamped);
        let window_s = std::mem::replace(&mut self.previous_at, Instant::now())
            .elapsed()
            .as_secs_f64();
        for (hand, warned) in self.hands.iter().zip(&mut self.warned_ramp) {
            if let (Some(note), false) = (hand.review.ramp_note(), *warned) {
                *warned = true;
                tracing::warn!("{}: {note}", hand.label);
            }
        }
        if self.polls % 200 == 0 {
            tracing::info!(
                "haptic loop: {:.0} ticks/s, period p99 {:.0} µs, missed {}; {} viewers",
                stats.ticks as f64 / window_s.max(1e-3),
                stats.period_p99_s * 1e6,
                stats.missed_deadlines,
                self.server.client_count()
            );
        }
        self.server.publish_haptic_stats(&stats);
    }

    /// Polls until `stop` is set or something fails.
    pub fn run_until(&mut self, stop: &AtomicBool) {
        while !stop.load(Ordering::SeqCst) && self.failure().is_none() {
            std::thread::sleep(POLL);
            self.poll();
        }
    }

    /// Stops every haptic thread (zero force first), then the model threads, publishes
    /// the final frame, shuts the server down and finishes the recordings.
    pub fn stop(self) -> ServeReport {
        let mut stopped = Vec::with_capacity(self.hands.len());
        for hand in self.hands {
            let (haptic, step) = hand.runtime.stop();
            stopped.push((hand.label, haptic, step, hand.review, hand.ticks));
        }
        let mut devices = Vec::with_capacity(stopped.len());
        let mut ticks = Vec::new();
        for (i, (label, haptic, step, mut review, file)) in stopped.into_iter().enumerate() {
            let last_force = haptic.device().last_force();
            // What the device handled without stopping (an SDK's force errors).
            let faults = haptic.device().fault_summary();
            let degraded = step.as_ref().and_then(|s| model_note(s.scene_model()));
            if let Some(mut step) = step {
                step.publish_final(last_force);
            }
            drop(haptic);
            drain_telemetry(&self.shared[i], &mut review);
            if let Some(file) = file {
                ticks.push((file.path().to_path_buf(), file.finish()));
            }
            // The ramp was warned about as it happened.
            let notes = [
                faults,
                review.never_touched_note(),
                review.clamp_note(),
                review.fade_note(),
                degraded,
            ];
            devices.push(DeviceReport {
                label,
                last_force,
                peak_commanded: review.peak_commanded(),
                notes: notes.into_iter().flatten().collect(),
            });
        }
        let thread = self
            .shared
            .iter()
            .find_map(|s| s.failure().map(str::to_owned));
        let failure = thread.or(self.server.failure().map(str::to_owned));
        let server = self.server;
        let recording = self.stream_recording;
        let health = self.health;
        let notice = match (&self.session, health.failure()) {
            (Some(dir), None) => Some(wire::Notice {
                kind: wire::NoticeKind::RecordingEnded,
                message: format!(
                    "the recording in {} ended: the server stops",
                    dir.path().display()
                ),
            }),
            _ => None,
        };
        let stream = self.tokio.block_on(async move {
            if let Some(notice) = notice {
                server.publish_notice(&notice);
                // The clients' tasks forward it before the goodbye.
                tokio::time::sleep(NOTICE_GRACE).await;
            }
            server.shutdown().await;
            let (path, task) = recording?;
            let frames = match tokio::time::timeout(Duration::from_secs(5), task).await {
                Ok(Ok(result)) => result,
                _ => Err(format!(
                    "{}: the stream recording did not end",
                    path.display()
                )),
            };
            Some((path, frames))
        });
        if let Some((path, result)) = &stream {
            let failure = match result {
                Ok((_, s)) => s.failure.clone(),
                Err(e) => Some(e.clone()),
            };
            if let (Some(e), None) = (failure, health.failure()) {
                health.fail(format!("{}: {e}", path.display()));
            }
        }
        let recording = self.session.map(|dir| {
            (
                dir.path().to_path_buf(),
                health.failure().map(str::to_owned),
            )
        });
        // The server is gone, so the router's channel is closed.
        let _ = self.router.join();
        ServeReport {
            devices,
            ticks,
            stream,
            recording,
            failure,
        }
    }
}

/// The address a local viewer reaches the server at (loopback for a wildcard bind).
fn local_address(addr: SocketAddr) -> SocketAddr {
    if addr.ip().is_unspecified() {
        let loopback = match addr.ip() {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
        };
        SocketAddr::new(loopback, addr.port())
    } else {
        addr
    }
}

/// Records the visual stream as a viewer receives it through `recorder` until the
/// server shuts down (or a write fails: reported to `health` at once); returns the
/// number of frames and what the file holds. It holds the control token (when there is
/// one), so no read-only viewer takes its seat.
async fn record_stream(
    url: String,
    recorder: palpa_client::Recorder,
    token: Option<String>,
    health: Arc<RecordingHealth>,
) -> StreamRecording {
    let path = recorder.path().to_path_buf();
    let connected = match &token {
        Some(token) => palpa_client::Client::connect_with_token(&url, token, Some(recorder)).await,
        None => palpa_client::Client::connect_recording(&url, Some(recorder)).await,
    };
    let mut client = connected.map_err(|e| format!("recording the stream from {url}: {e}"))?;
    let mut frames = 0;
    // The stream ends with the server's shutdown message (an error to the client).
    while health.failure().is_none() {
        match client.next_frame().await {
            Ok(_) => frames += 1,
            Err(palpa_client::ClientError::Record(e)) => {
                health.fail(format!("{}: {e}", path.display()));
                break;
            }
            Err(_) => break,
        }
    }
    let summary = client
        .take_recorder()
        .map(palpa_client::Recorder::finish)
        .ok_or("the stream recording was not kept")?;
    Ok((frames, summary))
}
