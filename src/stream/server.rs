//! The HTTP + WebSocket server: the viewer at `/`, the stream at `/ws`, one port.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Extension, Router};
use bytes::Bytes;
use palpa_protocol as wire;
use tokio::sync::watch;

use super::access::{self, Peer, RequestOrigin};
use super::columns::ColumnFeed;
use super::config::StreamConfig;
use super::connection;
use super::fan_out::Audience;
use super::listener::{self, ConnectionCaps, ConnectionLimits};
use super::log_limit::LogBudget;
use super::publisher::{self, FrameEncoder};
use super::scene::StreamScene;
use super::seats::{SeatLimits, Seats};
use super::snapshot::{ControlSender, SnapshotReader};
use super::state::Shared;
use super::token::{ControlToken, TokenThrottle};

/// A running stream server. Dropping it does not stop it; call [`StreamServer::shutdown`].
pub struct StreamServer {
    addr: SocketAddr,
    token: Option<String>,
    stats: watch::Sender<Option<Bytes>>,
    safety: watch::Sender<Option<Bytes>>,
    notice: watch::Sender<Option<Bytes>>,
    shutdown: watch::Sender<bool>,
    stop_publisher: watch::Sender<bool>,
    publisher: tokio::task::JoinHandle<()>,
    server: tokio::task::JoinHandle<()>,
    /// The clients' seats: every connection holds one until it has said goodbye, so
    /// shutdown can wait for them.
    seats: Arc<Seats>,
    caps: Arc<ConnectionCaps>,
}

impl StreamServer {
    /// Checks `config` ([`StreamConfig::validate`]), raises the open-file limit to its
    /// hard limit, binds, then spawns the publisher and the server on the current tokio
    /// runtime. `control` is the sim device's command channel; without it viewers are
    /// read-only. An invalid setting, or a snapshot that does not fit `scene`, is an
    /// `InvalidInput` error naming it. Without a column feed every residual
    /// displacement goes as per-vertex corrections ([`Self::start_with_columns`]).
    pub async fn start(
        config: StreamConfig,
        scene: StreamScene,
        snapshots: SnapshotReader,
        control: Option<ControlSender>,
    ) -> std::io::Result<Self> {
        Self::start_with_columns(config, scene, snapshots, control, None).await
    }

    /// Starts as [`Self::start`] does, with the residual columns the model thread
    /// exports through `columns`: frames then carry the loads on those nodes instead of
    /// their per-vertex displacements.
    pub async fn start_with_columns(
        config: StreamConfig,
        scene: StreamScene,
        snapshots: SnapshotReader,
        control: Option<ControlSender>,
        columns: Option<ColumnFeed>,
    ) -> std::io::Result<Self> {
        config.validate().map_err(invalid_input)?;
        let listener = Self::bind(config.bind)?;
        Self::start_on(listener, config, scene, snapshots, control, columns).await
    }

    /// Binds `address` for [`Self::start_on`] (in a tokio runtime's context), so a caller
    /// can learn that the port is taken before it does any other work.
    pub fn bind(address: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
        listen(address)
    }

    /// Starts as [`Self::start_with_columns`] does, on a `listener` bound earlier
    /// ([`Self::bind`]); `config.bind` is then only what messages name.
    pub async fn start_on(
        listener: tokio::net::TcpListener,
        mut config: StreamConfig,
        scene: StreamScene,
        mut snapshots: SnapshotReader,
        control: Option<ControlSender>,
        columns: Option<ColumnFeed>,
    ) -> std::io::Result<Self> {
        config.validate().map_err(invalid_input)?;
        fit_connections_to_file_limit(&mut config, listener::raise_open_file_limit())
            .map_err(invalid_input)?;
        let addr = listener.local_addr()?;
        if !addr.ip().is_loopback() {
            tracing::warn!(
                "visual stream bound to non-loopback address {addr}: anyone who can reach it \
                 can watch; browsers reach it by IP address, `localhost` or a name in \
                 [stream] allowed_hosts"
            );
        }
        let token = control.as_ref().map(|_| {
            config
                .control_token
                .clone()
                .unwrap_or_else(|| format!("{:032x}", rand::random::<u128>()))
        });

        let scene = Arc::new(scene);
        let mut encoder = FrameEncoder::new(columns);
        let first = encoder
            .encode_next(&scene, &mut snapshots)
            .map_err(invalid_input)?;
        let (frames_tx, frames_rx) = watch::channel(first);
        let (stats_tx, stats_rx) = watch::channel(None);
        let (safety_tx, safety_rx) = watch::channel(None);
        let (notice_tx, notice_rx) = watch::channel(None);
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let (stop_publisher_tx, stop_publisher_rx) = watch::channel(false);

        let audience = Arc::new(Audience::default());
        let seats = Seats::new(SeatLimits {
            total: config.max_clients,
            per_address: config.max_viewers_per_address,
            per_origin: config.max_viewers_per_origin,
        });
        let log = Arc::new(LogBudget::new(config.log_lines_per_second));
        let shared = Arc::new(Shared {
            hello: Bytes::from(wire::encode_server(
                &scene.hello(config.frame_rate_hz, control.is_some()),
            )),
            scene_init: Bytes::from(wire::encode_server(&scene.scene_init())),
            frames: frames_rx,
            audience: audience.clone(),
            stats: stats_rx,
            safety: safety_rx,
            notice: notice_rx,
            shutdown: shutdown_rx.clone(),
            seats: seats.clone(),
            control: token.as_deref().map(ControlToken::new).zip(control),
            throttle: TokenThrottle::default(),
            workspace: config.workspace(),
            log: log.clone(),
            config: config.clone(),
        });

        let publisher = tokio::spawn(publisher::run(
            scene,
            snapshots,
            encoder,
            frames_tx,
            audience,
            config.frame_period(),
            stop_publisher_rx,
        ));
        let app = Router::new()
            .route("/", get(index))
            .route("/viewer.js", get(|| async { javascript(VIEWER_JS) }))
            .route("/protocol.js", get(|| async { javascript(PROTOCOL_JS) }))
            .route("/plots.js", get(|| async { javascript(PLOTS_JS) }))
            .route("/ws", get(websocket))
            .with_state(shared)
            .layer(axum::middleware::from_fn_with_state(
                Arc::new(config.access_policy()),
                access::guard,
            ));
        let caps = Arc::new(ConnectionCaps::new(ConnectionLimits {
            max_connections: config.max_connections,
            max_per_address: config.max_connections_per_address,
            header_timeout: config.header_timeout,
            upgrade_timeout: config.http_connection_timeout,
        }));
        let server = tokio::spawn(listener::accept_loop(
            listener,
            app,
            caps.clone(),
            log,
            shutdown_rx,
        ));
        let server = Self {
            addr,
            token,
            stats: stats_tx,
            safety: safety_tx,
            notice: notice_tx,
            shutdown: shutdown_tx,
            stop_publisher: stop_publisher_tx,
            publisher,
            server,
            seats,
            caps,
        };
        // The token is never logged: whoever starts the server prints it once.
        match &server.token {
            Some(_) => tracing::info!(
                "visual stream on http://{addr}/ (WebSocket /ws), control with the token"
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

    /// The viewer's URL on this machine, with the control token when control is
    /// enabled; on 0.0.0.0 or :: the loopback address stands for the unspecified one.
    pub fn viewer_url(&self) -> String {
        let ip = match self.addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        self.url_at(ip)
    }

    /// The viewer's URLs another machine can open: on 0.0.0.0 (::), one per address of
    /// this machine's non-loopback interfaces (of both families on ::, which also takes
    /// IPv4); otherwise none but [`Self::viewer_url`] when that is not loopback.
    pub fn remote_viewer_urls(&self) -> Vec<String> {
        let bound = self.addr.ip();
        if !bound.is_unspecified() {
            return match bound.is_loopback() {
                true => Vec::new(),
                false => vec![self.url_at(bound)],
            };
        }
        let mut ips: Vec<IpAddr> = if_addrs::get_if_addrs()
            .unwrap_or_default()
            .iter()
            .map(|i| i.ip())
            .filter(|ip| !ip.is_loopback() && (bound.is_ipv6() || ip.is_ipv4()))
            // An IPv6 link-local address needs a zone id (`%eth0`) that browsers refuse.
            .filter(|ip| !matches!(ip, IpAddr::V6(v6) if v6.is_unicast_link_local()))
            .collect();
        ips.sort_by_key(|ip| (ip.is_ipv6(), *ip));
        ips.dedup();
        ips.into_iter().map(|ip| self.url_at(ip)).collect()
    }

    fn url_at(&self, ip: IpAddr) -> String {
        let at = SocketAddr::new(ip, self.addr.port());
        match &self.token {
            Some(t) => format!("http://{at}/?token={t}"),
            None => format!("http://{at}/"),
        }
    }

    /// Number of WebSocket clients connected now (each holds one seat).
    pub fn client_count(&self) -> usize {
        self.seats.count()
    }

    /// Number of TCP connections open now, WebSocket or not.
    pub fn connection_count(&self) -> usize {
        self.caps.open()
    }

    /// Sends haptic loop statistics to every client (call about once a second from a
    /// telemetry thread, never from the haptic thread).
    pub fn publish_haptic_stats(&self, stats: &wire::HapticStats) {
        let bytes = wire::encode_server(&wire::ServerMessage::HapticStats(stats.clone()));
        self.stats.send_replace(Some(Bytes::from(bytes)));
    }

    /// Sends every device's safety state to every client (newest wins: the report is
    /// cumulative) and to clients that join later.
    pub fn publish_safety(&self, report: &wire::SafetyReport) {
        let bytes = wire::encode_server(&wire::ServerMessage::Safety(report.clone()));
        self.safety.send_replace(Some(Bytes::from(bytes)));
    }

    /// Sends a notice to every client (and to clients that join later).
    pub fn publish_notice(&self, notice: &wire::Notice) {
        let bytes = wire::encode_server(&wire::ServerMessage::Notice(notice.clone()));
        self.notice.send_replace(Some(Bytes::from(bytes)));
    }

    /// What of the server stopped by itself (a panic or an error in its task), if
    /// anything, before [`Self::shutdown`] was asked for: the caller should stop too.
    pub fn failure(&self) -> Option<&'static str> {
        if self.publisher.is_finished() {
            Some("the visual stream's frame publisher stopped")
        } else if self.server.is_finished() {
            Some("the viewer's HTTP and WebSocket server stopped")
        } else {
            None
        }
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
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, self.seats.all_empty()).await;
    }
}

/// Pending connections the kernel may queue for `accept` (it caps this at
/// `net.core.somaxconn`). Larger than tokio's 1024 so a burst of connections is queued
/// rather than dropped, or answered with SYN cookies whose final ACK is lost when the
/// queue is full.
const LISTEN_BACKLOG: u32 = 4096;

/// Binds `address` with [`LISTEN_BACKLOG`] (and `SO_REUSEADDR`, as tokio's bind does).
fn listen(address: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if address.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(LISTEN_BACKLOG)
}

fn invalid_input(why: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, why)
}

/// Lowers `max_connections` (and with it the per-address and client caps) to what an
/// open-file limit of `open_files` leaves after [`listener::FD_RESERVE`], with a warning;
/// an error when it leaves none.
fn fit_connections_to_file_limit(config: &mut StreamConfig, open_files: u64) -> Result<(), String> {
    let room =
        usize::try_from(open_files.saturating_sub(listener::FD_RESERVE)).unwrap_or(usize::MAX);
    if room == 0 {
        return Err(format!(
            "stream.max_connections: the open-file limit ({open_files}) leaves no room for connections"
        ));
    }
    if config.max_connections > room {
        tracing::warn!(
            "visual stream: max_connections lowered from {} to {room} to fit the open-file limit \
             of {open_files}",
            config.max_connections
        );
        config.max_connections = room;
        config.max_connections_per_address = config.max_connections_per_address.min(room);
        config.max_clients = config.max_clients.min(room);
    }
    Ok(())
}

/// Longest wait for connected clients to receive their goodbye at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

const INDEX_HTML: &str = include_str!("../../clients/web/index.html");
const VIEWER_JS: &str = include_str!("../../clients/web/viewer.js");
const PROTOCOL_JS: &str = include_str!("../../clients/web/protocol.js");
const PLOTS_JS: &str = include_str!("../../clients/web/plots.js");

async fn index() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        INDEX_HTML,
    )
}

fn javascript(source: &'static str) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        source,
    )
}

async fn websocket(
    ws: WebSocketUpgrade,
    State(shared): State<Arc<Shared>>,
    Extension(peer): Extension<Peer>,
    Extension(origin): Extension<RequestOrigin>,
) -> impl IntoResponse {
    // Let tungstenite read messages up to 16× the limit so an oversized one still gets a
    // clear `TooLarge` reply; beyond that the read itself fails and the client is closed.
    let transport_limit = shared.config.max_message_bytes.saturating_mul(16);
    ws.max_message_size(transport_limit)
        .max_frame_size(transport_limit)
        .on_upgrade(move |socket| connection::serve(socket, shared, peer, origin))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_caps_shrink_to_the_open_file_limit() {
        let mut config = StreamConfig {
            max_connections: 4096,
            max_connections_per_address: 2048,
            max_clients: 1000,
            ..StreamConfig::default()
        };
        fit_connections_to_file_limit(&mut config, 1024).unwrap();
        assert_eq!(config.max_connections, 1024 - 128);
        assert_eq!(config.max_connections_per_address, 1024 - 128);
        assert_eq!(config.max_clients, 896);
        config.validate().expect("the lowered caps are consistent");

        let mut roomy = StreamConfig::default();
        fit_connections_to_file_limit(&mut roomy, 1 << 20).unwrap();
        assert_eq!(
            roomy.max_connections,
            StreamConfig::default().max_connections
        );

        let why = fit_connections_to_file_limit(&mut StreamConfig::default(), 100).unwrap_err();
        assert!(why.starts_with("stream.max_connections"), "{why}");
    }
}
