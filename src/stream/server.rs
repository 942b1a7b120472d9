//! The HTTP + WebSocket server: the viewer at `/`, the stream at `/ws`, one port.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use palpa_protocol as wire;
use tokio::sync::{watch, Semaphore};

use super::connection;
use super::publisher::{self, FrameEncoder};
use super::scene::StreamScene;
use super::snapshot::{ControlSender, SnapshotReader};

/// Settings of the stream server. Defaults: loopback, 30 Hz, 64 clients, 4 KiB client
/// messages, 10 s idle timeout, 3 s send stall.
#[derive(Clone, Debug)]
pub struct StreamConfig {
    /// Address to bind; port 0 picks a free port. A non-loopback address is logged as a
    /// warning: anyone who can reach it can watch.
    pub bind: SocketAddr,
    /// Frame rate (Hz).
    pub frame_rate_hz: f64,
    /// Most simultaneous clients; further connections get `ServerFull`.
    pub max_clients: usize,
    /// Largest client message accepted (bytes); larger ones get `TooLarge`.
    pub max_message_bytes: usize,
    /// A client from which nothing (not even a pong) arrives for this long is closed.
    pub idle_timeout: Duration,
    /// A client whose socket accepts no message for this long is dropped.
    pub send_stall_timeout: Duration,
    /// The control token; `None` generates a random one when control is enabled.
    pub control_token: Option<String>,
}

impl Default for StreamConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 7878)),
            frame_rate_hz: 30.0,
            max_clients: 64,
            max_message_bytes: wire::MAX_CLIENT_MESSAGE_BYTES,
            idle_timeout: Duration::from_secs(10),
            send_stall_timeout: Duration::from_secs(3),
            control_token: None,
        }
    }
}

/// What every connection task shares.
pub(crate) struct Shared {
    pub config: StreamConfig,
    pub hello: Bytes,
    pub scene_init: Bytes,
    pub frames: watch::Receiver<Bytes>,
    pub stats: watch::Receiver<Option<Bytes>>,
    pub shutdown: watch::Receiver<bool>,
    pub slots: Arc<Semaphore>,
    pub control: Option<(String, ControlSender)>,
}

/// A running stream server. Dropping it does not stop it; call [`StreamServer::shutdown`].
pub struct StreamServer {
    addr: SocketAddr,
    token: Option<String>,
    stats: watch::Sender<Option<Bytes>>,
    shutdown: watch::Sender<bool>,
    stop_publisher: watch::Sender<bool>,
    frames: watch::Sender<Bytes>,
    publisher: tokio::task::JoinHandle<()>,
    server: tokio::task::JoinHandle<()>,
    /// The clients' connection slots: every connection holds one until it has said
    /// goodbye, so shutdown can wait for them.
    slots: Arc<Semaphore>,
    max_clients: usize,
}

impl StreamServer {
    /// Binds, then spawns the publisher and the server on the current tokio runtime.
    /// `control` is the sim device's command channel; without it viewers are read-only.
    pub async fn start(
        config: StreamConfig,
        scene: StreamScene,
        mut snapshots: SnapshotReader,
        control: Option<ControlSender>,
    ) -> std::io::Result<Self> {
        if !config.bind.ip().is_loopback() {
            tracing::warn!(
                "visual stream bound to non-loopback address {}: anyone who can reach it can watch",
                config.bind
            );
        }
        let listener = tokio::net::TcpListener::bind(config.bind).await?;
        let addr = listener.local_addr()?;
        let token = control.as_ref().map(|_| {
            config
                .control_token
                .clone()
                .unwrap_or_else(|| format!("{:032x}", rand::random::<u128>()))
        });

        let scene = Arc::new(scene);
        let mut encoder = FrameEncoder::new();
        let first = encoder
            .encode_next(&scene, &mut snapshots)
            .map_err(|why| std::io::Error::new(std::io::ErrorKind::InvalidInput, why))?;
        let (frames_tx, frames_rx) = watch::channel(first);
        let (stats_tx, stats_rx) = watch::channel(None);
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let (stop_publisher_tx, stop_publisher_rx) = watch::channel(false);

        let slots = Arc::new(Semaphore::new(config.max_clients));
        let shared = Arc::new(Shared {
            hello: Bytes::from(wire::encode_server(
                &scene.hello(config.frame_rate_hz, control.is_some()),
            )),
            scene_init: Bytes::from(wire::encode_server(&scene.scene_init())),
            frames: frames_rx,
            stats: stats_rx,
            shutdown: shutdown_rx.clone(),
            slots: slots.clone(),
            control: token.clone().zip(control),
            config: config.clone(),
        });

        let publisher = tokio::spawn(publisher::run(
            scene,
            snapshots,
            encoder,
            frames_tx.clone(),
            Duration::from_secs_f64(1.0 / config.frame_rate_hz),
            stop_publisher_rx,
        ));
        let app = Router::new()
            .route("/", get(index))
            .route("/viewer.js", get(viewer_js))
            .route("/protocol.js", get(protocol_js))
            .route("/ws", get(websocket))
            .with_state(shared);
        let mut stop = shutdown_rx;
        // Frames are small and latency matters more than packet count: no Nagle delay.
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::debug!("cannot set TCP_NODELAY on a stream client: {e}");
            }
        });
        let server = tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
                let _ = stop.wait_for(|s| *s).await;
            });
            if let Err(e) = serve.await {
                tracing::error!("visual stream server failed: {e}");
            }
        });
        let server = Self {
            addr,
            token,
            stats: stats_tx,
            shutdown: shutdown_tx,
            stop_publisher: stop_publisher_tx,
            frames: frames_tx,
            publisher,
            server,
            slots,
            max_clients: config.max_clients,
        };
        match &server.token {
            Some(token) => tracing::info!(
                "visual stream on http://{addr}/ (WebSocket /ws); control token {token}; \
                 viewer with control: {}",
                server.viewer_url()
            ),
            None => tracing::info!("visual stream on http://{addr}/ (WebSocket /ws), read-only"),
        }
        Ok(server)
    }

    /// The bound address (with the real port when the config asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The control token, when control is enabled.
    pub fn control_token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// The viewer's URL, with the control token when control is enabled.
    pub fn viewer_url(&self) -> String {
        match &self.token {
            Some(t) => format!("http://{}/?token={t}", self.addr),
            None => format!("http://{}/", self.addr),
        }
    }

    /// Number of clients connected now.
    pub fn client_count(&self) -> usize {
        self.frames.receiver_count() - 1
    }

    /// Sends haptic loop statistics to every client (call about once a second from a
    /// telemetry thread, never from the haptic thread).
    pub fn publish_haptic_stats(&self, stats: &wire::HapticStats) {
        let bytes = wire::encode_server(&wire::ServerMessage::HapticStats(stats.clone()));
        self.stats.send_replace(Some(Bytes::from(bytes)));
    }

    /// Stops the publisher after it encoded the newest snapshot one last time, sends that
    /// final frame to every client that has not seen it, tells every client the server
    /// stops, stops the listener, and waits for all of it. Whatever the model thread
    /// published last before this call is what viewers see last.
    pub async fn shutdown(self) {
        self.stop_publisher.send_replace(true);
        let _ = self.publisher.await;
        self.shutdown.send_replace(true);
        let _ = self.server.await;
        // Upgraded WebSockets outlive the HTTP server's graceful shutdown: wait (briefly)
        // until every client got its last frame and the goodbye, so the process does not
        // exit under them.
        let all = u32::try_from(self.max_clients).unwrap_or(u32::MAX);
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, self.slots.acquire_many(all)).await;
    }
}

/// Longest wait for connected clients to receive their goodbye at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

const INDEX_HTML: &str = include_str!("../../clients/web/index.html");
const VIEWER_JS: &str = include_str!("../../clients/web/viewer.js");
const PROTOCOL_JS: &str = include_str!("../../clients/web/protocol.js");

async fn index() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        INDEX_HTML,
    )
}

async fn viewer_js() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        VIEWER_JS,
    )
}

async fn protocol_js() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        PROTOCOL_JS,
    )
}

async fn websocket(ws: WebSocketUpgrade, State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    // Let tungstenite read messages up to 16× the limit so an oversized one still gets a
    // clear `TooLarge` reply; beyond that the read itself fails and the client is closed.
    let transport_limit = shared.config.max_message_bytes.saturating_mul(16);
    ws.max_message_size(transport_limit)
        .max_frame_size(transport_limit)
        .on_upgrade(move |socket| connection::serve(socket, shared))
}
