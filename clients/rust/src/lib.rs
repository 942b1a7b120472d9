//! Rust client of the palpa visual stream: connect, decode, measure, record.
//!
//! ```no_run
//! # async fn demo() -> Result<(), palpa_client::ClientError> {
//! let mut client = palpa_client::Client::connect("ws://127.0.0.1:7878/ws").await?;
//! println!("scene {} with {} vertices", client.hello.scene_name, client.scene.rest_positions.len());
//! while let palpa_client::Event::Frame(frame) = client.next_event().await? {
//!     println!("frame {} force {:?} N", frame.sequence, frame.force);
//! }
//! # Ok(()) }
//! ```

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::{SinkExt, StreamExt};
use palpa_protocol as wire;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub use palpa_protocol;

mod bounds;
pub mod recording;
pub mod watch;

pub use bounds::{Limits, DEFAULT_MAX_HELD_BYTES, MAX_COLUMN_CAPACITY};
pub use recording::{
    read_recording, Recorder, RecorderSummary, StreamRecording, TornTail, RECORDING_MAGIC,
};

/// Why the client stopped.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server at `url` could not be reached or refused the WebSocket.
    #[error("cannot connect to {url}: {source}")]
    Connect {
        /// The WebSocket URL tried.
        url: String,
        /// Why it failed.
        source: tokio_tungstenite::tungstenite::Error,
    },
    /// The WebSocket failed.
    #[error("WebSocket error: {0}")]
    WebSocket(#[from] tokio_tungstenite::tungstenite::Error),
    /// A server message did not decode.
    #[error("bad message from server: {0}")]
    Decode(#[from] wire::DecodeError),
    /// The server broke the protocol (wrong order, version, text message …).
    #[error("protocol violation: {0}")]
    Protocol(String),
    /// The server closed the connection with an error message.
    #[error("server closed the connection: {code:?}: {message}")]
    Server {
        /// The server's reason.
        code: wire::ErrorCode,
        /// Its detail.
        message: String,
    },
    /// The connection closed without an error message.
    #[error("connection closed")]
    Closed,
    /// Writing the recording failed.
    #[error("recording failed: {0}")]
    Record(#[from] std::io::Error),
}

/// A message after the handshake.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A visual frame.
    Frame(wire::Frame),
    /// Haptic loop statistics.
    HapticStats(wire::HapticStats),
    /// Whether this connection may control the probe (the answer to a refused token or
    /// to `CheckToken`).
    ControlStatus(wire::ControlStatus),
    /// Every device's safety state (sent within 50 ms of a change).
    Safety(wire::SafetyReport),
    /// A notice for the user (a recording ended).
    Notice(wire::Notice),
}

/// A connected stream client that has received the hello and the scene.
pub struct Client {
    /// The server's hello.
    pub hello: wire::ServerHello,
    /// The scene (surface, rest positions, modal basis).
    pub scene: wire::SceneInit,
    /// The residual columns the server sent and has not told this client to forget.
    pub columns: wire::ColumnCache,
    /// Receive statistics since connecting.
    pub stats: StreamStats,
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
    recorder: Option<Recorder>,
    limits: Limits,
    /// Bytes the scene and the held columns take.
    held_bytes: usize,
}

impl Client {
    /// Connects to `url` (`ws://host:port/ws`; `http://host:port/` is accepted too) and
    /// reads the hello and the scene init.
    pub async fn connect(url: &str) -> Result<Self, ClientError> {
        Self::connect_recording(url, None).await
    }

    /// Like [`Client::connect`], writing every received message to `recorder` as well.
    pub async fn connect_recording(
        url: &str,
        recorder: Option<Recorder>,
    ) -> Result<Self, ClientError> {
        Self::connect_as(url, recorder, None).await
    }

    /// Connects as the holder of the control `token`: right after the hello it asks
    /// whether the token grants control (`CheckToken`; the answer comes as an
    /// [`Event::ControlStatus`]), so it gets a seat even on a full server, which gives it
    /// the oldest read-only viewer's.
    pub async fn connect_with_token(
        url: &str,
        token: &str,
        recorder: Option<Recorder>,
    ) -> Result<Self, ClientError> {
        Self::connect_as(url, recorder, Some(token)).await
    }

    async fn connect_as(
        url: &str,
        recorder: Option<Recorder>,
        token: Option<&str>,
    ) -> Result<Self, ClientError> {
        let url = websocket_url(url);
        // TCP_NODELAY: a control message must not wait for the ACK of the previous one.
        let (socket, _) = tokio_tungstenite::connect_async_with_config(url.as_str(), None, true)
            .await
            .map_err(|source| ClientError::Connect {
                url: url.clone(),
                source,
            })?;
        Self::handshake(socket, recorder, token, Limits::default()).await
    }

    /// Reads the hello and the scene init from a WebSocket the caller connected itself
    /// (to choose socket options such as buffer sizes), recording to `recorder` if given.
    pub async fn over(
        socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
        recorder: Option<Recorder>,
    ) -> Result<Self, ClientError> {
        Self::handshake(socket, recorder, None, Limits::default()).await
    }

    /// Like [`Client::over`], holding at most what `limits` allow.
    pub async fn over_with_limits(
        socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
        recorder: Option<Recorder>,
        limits: Limits,
    ) -> Result<Self, ClientError> {
        Self::handshake(socket, recorder, None, limits).await
    }

    async fn handshake(
        mut socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
        mut recorder: Option<Recorder>,
        token: Option<&str>,
        limits: Limits,
    ) -> Result<Self, ClientError> {
        let mut stats = StreamStats::new();
        let hello = match next_message(&mut socket, &mut stats, &mut recorder)
            .await?
            .0
        {
            wire::ServerMessage::Hello(h) => h,
            other => return Err(unexpected("Hello", &other)),
        };
        if hello.protocol_version != wire::PROTOCOL_VERSION {
            return Err(ClientError::Protocol(format!(
                "server speaks protocol version {}, this client {}",
                hello.protocol_version,
                wire::PROTOCOL_VERSION
            )));
        }
        bounds::check_hello(&hello)?;
        if let Some(token) = token.filter(|_| hello.control_allowed) {
            let check = wire::ClientMessage::Control(wire::Control {
                token: token.into(),
                command: wire::ControlCommand::CheckToken,
            });
            socket
                .send(Message::Binary(wire::encode_client(&check).into()))
                .await?;
        }
        let scene = match next_message(&mut socket, &mut stats, &mut recorder)
            .await?
            .0
        {
            wire::ServerMessage::SceneInit(s) => s,
            other => return Err(unexpected("SceneInit", &other)),
        };
        // The hello and the scene are all that arrived so far.
        stats.initial_bytes = stats.bytes;
        let held_bytes = bounds::check_scene(&scene, &limits)?;
        Ok(Self {
            hello,
            scene,
            columns: wire::ColumnCache::default(),
            stats,
            socket,
            recorder,
            limits,
            held_bytes,
        })
    }

    /// Waits for the next frame, statistics or control-status message, updating
    /// [`Client::stats`]; residual columns and evictions update [`Client::columns`] on
    /// the way.
    pub async fn next_event(&mut self) -> Result<Event, ClientError> {
        loop {
            let (message, bytes) =
                next_message(&mut self.socket, &mut self.stats, &mut self.recorder).await?;
            match message {
                wire::ServerMessage::Frame(frame) => {
                    self.stats.record_frame(&frame, bytes);
                    return Ok(Event::Frame(frame));
                }
                wire::ServerMessage::ResidualColumn(column) => {
                    self.stats.record_one_off(bytes);
                    bounds::admit_column(
                        &column,
                        &self.columns,
                        &self.scene,
                        self.held_bytes,
                        &self.limits,
                    )?;
                    let freed = self
                        .columns
                        .get(column.node)
                        .map_or(0, bounds::column_bytes);
                    self.held_bytes = self.held_bytes - freed + bounds::column_bytes(&column);
                    self.columns.insert(column);
                }
                wire::ServerMessage::ForgetColumns(forget) => {
                    self.stats.record_one_off(bytes);
                    for node in &forget.nodes {
                        if let Some(column) = self.columns.remove(*node) {
                            self.held_bytes -= bounds::column_bytes(&column);
                        }
                    }
                }
                wire::ServerMessage::HapticStats(s) => {
                    self.stats.telemetry_bytes += bytes as u64;
                    return Ok(Event::HapticStats(s));
                }
                wire::ServerMessage::ControlStatus(s) => {
                    self.stats.telemetry_bytes += bytes as u64;
                    return Ok(Event::ControlStatus(s));
                }
                wire::ServerMessage::Safety(s) => {
                    self.stats.telemetry_bytes += bytes as u64;
                    return Ok(Event::Safety(s));
                }
                wire::ServerMessage::Notice(n) => {
                    self.stats.telemetry_bytes += bytes as u64;
                    return Ok(Event::Notice(n));
                }
                other => {
                    let wanted = "Frame, HapticStats, ControlStatus, Safety or Notice";
                    return Err(unexpected(wanted, &other));
                }
            }
        }
    }

    /// Waits for the next frame, skipping statistics, control-status, safety and notice
    /// messages.
    pub async fn next_frame(&mut self) -> Result<wire::Frame, ClientError> {
        loop {
            if let Event::Frame(frame) = self.next_event().await? {
                return Ok(frame);
            }
        }
    }

    /// Sends a control command with the server's token.
    pub async fn send_control(
        &mut self,
        token: &str,
        command: wire::ControlCommand,
    ) -> Result<(), ClientError> {
        let message = wire::ClientMessage::Control(wire::Control {
            token: token.into(),
            command,
        });
        self.send_raw(wire::encode_client(&message)).await
    }

    /// Sends arbitrary bytes as one binary message (for tests of the server's checks).
    pub async fn send_raw(&mut self, bytes: Vec<u8>) -> Result<(), ClientError> {
        self.socket.send(Message::Binary(bytes.into())).await?;
        Ok(())
    }

    /// Surface positions of `frame` in this client's scene, with the residual columns
    /// held now (m): call it for a frame before reading the next one.
    pub fn positions(&self, frame: &wire::Frame) -> Result<Vec<[f32; 3]>, ClientError> {
        wire::reconstruct_positions(&self.scene, &self.columns, frame).map_err(|e| {
            ClientError::Protocol(format!(
                "frame {} does not fit the scene: {e}",
                frame.sequence
            ))
        })
    }

    /// Takes the recorder out of the client (to finish it: [`Recorder::finish`]); the
    /// client records nothing after.
    pub fn take_recorder(&mut self) -> Option<Recorder> {
        self.recorder.take()
    }

    /// Closes the connection politely.
    pub async fn close(mut self) -> Result<(), ClientError> {
        self.socket.close(None).await?;
        if let Some(r) = self.recorder.as_mut() {
            r.flush()?;
        }
        Ok(())
    }
}

fn unexpected(wanted: &str, got: &wire::ServerMessage) -> ClientError {
    if let wire::ServerMessage::Error(e) = got {
        return ClientError::Server {
            code: e.code,
            message: e.message.clone(),
        };
    }
    let kind = match got {
        wire::ServerMessage::Hello(_) => "Hello",
        wire::ServerMessage::SceneInit(_) => "SceneInit",
        wire::ServerMessage::Frame(_) => "Frame",
        wire::ServerMessage::HapticStats(_) => "HapticStats",
        wire::ServerMessage::Error(_) => "Error",
        wire::ServerMessage::ControlStatus(_) => "ControlStatus",
        wire::ServerMessage::ResidualColumn(_) => "ResidualColumn",
        wire::ServerMessage::ForgetColumns(_) => "ForgetColumns",
        wire::ServerMessage::Safety(_) => "Safety",
        wire::ServerMessage::Notice(_) => "Notice",
    };
    ClientError::Protocol(format!("expected {wanted}, got {kind}"))
}

/// The next server message and its length (bytes).
async fn next_message(
    socket: &mut WebSocketStream<MaybeTlsStream<TcpStream>>,
    stats: &mut StreamStats,
    recorder: &mut Option<Recorder>,
) -> Result<(wire::ServerMessage, usize), ClientError> {
    loop {
        let message = socket.next().await.ok_or(ClientError::Closed)??;
        match message {
            Message::Binary(bytes) => {
                stats.bytes += bytes.len() as u64;
                if let Some(r) = recorder.as_mut() {
                    r.write(&bytes)?;
                }
                let decoded = wire::decode_server(&bytes)?;
                if let wire::ServerMessage::Error(e) = decoded {
                    return Err(ClientError::Server {
                        code: e.code,
                        message: e.message,
                    });
                }
                return Ok((decoded, bytes.len()));
            }
            Message::Close(_) => return Err(ClientError::Closed),
            Message::Text(_) => {
                return Err(ClientError::Protocol("text message from server".into()))
            }
            Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => {}
        }
    }
}

/// `http://h:p/` and a bare `h:p` → `ws://h:p/ws`; `ws://` URLs pass unchanged.
pub fn websocket_url(url: &str) -> String {
    let url = url.trim();
    let bare = match url.strip_prefix("http://") {
        Some(rest) => Some(rest),
        None => (!url.contains("://")).then_some(url),
    };
    match bare {
        Some(rest) => format!("ws://{}/ws", rest.split('/').next().unwrap_or(rest)),
        None => url.to_owned(),
    }
}

/// Microseconds since the Unix epoch on this machine's clock.
pub fn unix_now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Receive statistics: frames, lost frames, bytes, latency.
#[derive(Clone, Debug)]
pub struct StreamStats {
    /// When the client connected.
    pub started: Instant,
    /// Frames received.
    pub frames: u64,
    /// Frames skipped by the server for this client (gaps in `sequence`).
    pub lost: u64,
    /// Bytes of all binary messages received.
    pub bytes: u64,
    /// Bytes of the frames received.
    pub frame_bytes: u64,
    /// Bytes of the one-off residual messages received (columns and evictions).
    pub one_off_bytes: u64,
    /// Bytes of the hello and the scene, received once on connecting.
    pub initial_bytes: u64,
    /// Bytes of the statistics, safety reports, notices and control statuses.
    pub telemetry_bytes: u64,
    /// Size of the most recent frames (bytes, at most [`StreamStats::HISTORY`]).
    pub frame_sizes: Vec<usize>,
    /// Arrival time, size (bytes) and whether it was a frame, of the messages of the
    /// last [`StreamStats::RATE_WINDOW`].
    recent: std::collections::VecDeque<(Instant, usize, bool)>,
    /// Sequence of the last frame.
    pub last_sequence: Option<u64>,
    /// Arrival times of the most recent frames (at most [`StreamStats::HISTORY`]).
    pub arrivals: Vec<Instant>,
    /// Per-frame latency of the most recent frames: this clock minus the server's
    /// `sent_unix_us` (s); meaningful on the same machine or with synchronised clocks.
    pub latencies_s: Vec<f64>,
}

impl Default for StreamStats {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamStats {
    /// Frames whose arrival time and latency are kept (older halves are dropped), so a
    /// client that runs for days uses bounded memory.
    pub const HISTORY: usize = 1 << 14;

    /// Empty statistics starting now.
    pub fn new() -> Self {
        Self {
            started: Instant::now(),
            frames: 0,
            lost: 0,
            bytes: 0,
            frame_bytes: 0,
            one_off_bytes: 0,
            initial_bytes: 0,
            telemetry_bytes: 0,
            frame_sizes: Vec::new(),
            recent: std::collections::VecDeque::new(),
            last_sequence: None,
            arrivals: Vec::new(),
            latencies_s: Vec::new(),
        }
    }

    /// Window of [`StreamStats::recent_bandwidth`].
    pub const RATE_WINDOW: Duration = Duration::from_secs(1);

    fn record_one_off(&mut self, bytes: usize) {
        self.one_off_bytes += bytes as u64;
        self.remember(bytes, false);
    }

    fn remember(&mut self, bytes: usize, frame: bool) {
        let now = Instant::now();
        while self
            .recent
            .front()
            .is_some_and(|(t, _, _)| now.duration_since(*t) > Self::RATE_WINDOW)
        {
            self.recent.pop_front();
        }
        if self.recent.len() >= Self::HISTORY {
            self.recent.pop_front();
        }
        self.recent.push_back((now, bytes, frame));
    }

    fn record_frame(&mut self, frame: &wire::Frame, bytes: usize) {
        let now = Instant::now();
        self.frames += 1;
        self.frame_bytes += bytes as u64;
        self.remember(bytes, true);
        if let Some(last) = self.last_sequence {
            self.lost += frame.sequence.saturating_sub(last + 1);
        }
        self.last_sequence = Some(frame.sequence);
        if self.arrivals.len() >= Self::HISTORY {
            self.arrivals.drain(..Self::HISTORY / 2);
            self.latencies_s.drain(..Self::HISTORY / 2);
            self.frame_sizes.drain(..Self::HISTORY / 2);
        }
        self.frame_sizes.push(bytes);
        self.arrivals.push(now);
        let latency = unix_now_us() as f64 * 1e-6 - frame.sent_unix_us as f64 * 1e-6;
        self.latencies_s.push(latency);
    }

    /// Frame rate (Hz) over the frames that arrived within `window` before the last one.
    pub fn frame_rate(&self, window: Duration) -> Option<f64> {
        let last = *self.arrivals.last()?;
        let first_in = self
            .arrivals
            .iter()
            .position(|t| last.duration_since(*t) <= window)?;
        let span = last.duration_since(self.arrivals[first_in]).as_secs_f64();
        let intervals = self.arrivals.len() - 1 - first_in;
        (intervals > 0 && span > 0.0).then(|| intervals as f64 / span)
    }

    /// Mean bandwidth since connecting (bytes/s).
    pub fn bandwidth(&self) -> f64 {
        self.bytes as f64 / self.started.elapsed().as_secs_f64().max(1e-9)
    }

    /// Bytes per second over the last [`StreamStats::RATE_WINDOW`]: (frames, one-off
    /// residual messages).
    pub fn recent_bandwidth(&self) -> (f64, f64) {
        let window = Self::RATE_WINDOW.as_secs_f64();
        let (mut frames, mut one_off) = (0usize, 0usize);
        for &(_, bytes, frame) in &self.recent {
            if frame {
                frames += bytes;
            } else {
                one_off += bytes;
            }
        }
        (frames as f64 / window, one_off as f64 / window)
    }

    /// Median size of the kept frames (bytes).
    pub fn median_frame_bytes(&self) -> Option<usize> {
        let mut sizes = self.frame_sizes.clone();
        sizes.sort_unstable();
        sizes.get(sizes.len() / 2).copied()
    }

    /// Latency quantile `q` in [0, 1] over the kept frames (s).
    pub fn latency_quantile(&self, q: f64) -> Option<f64> {
        quantile(&self.latencies_s, q)
    }
}

/// The `q` quantile (nearest rank) of `values`, or `None` when empty.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((q.clamp(0.0, 1.0) * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}
