//! Settings of the stream server and their bounds: every value outside them is refused
//! with a message naming the field, before anything is bound or spawned.

use std::net::SocketAddr;
use std::ops::RangeInclusive;
use std::time::Duration;

use palpa_protocol as wire;

use super::access::{normalise_host, normalise_origin, AccessPolicy};
use super::token::weak_token;
use crate::Vec3;

/// Columns a client is asked to hold at once (told in the scene init): enough for the
/// nodes a probe slides over in a few centimetres, so a stroke gone over again resends
/// nothing.
pub const CLIENT_CAPACITY: usize = 256;

/// Frame rates the server accepts (Hz): below 1 Hz a viewer looks frozen, above 240 Hz
/// no display shows the difference and the publisher only burns CPU.
pub const FRAME_RATE_RANGE_HZ: RangeInclusive<f64> = 1.0..=240.0;
/// Most WebSocket clients one server accepts.
pub const MAX_CLIENTS: usize = 4096;
/// Most simultaneous TCP connections one server accepts (each holds a file descriptor).
pub const MAX_CONNECTIONS: usize = 65_536;
/// Largest configurable client message (bytes).
pub const MAX_MESSAGE_BYTES: usize = 65_536;
/// Shortest configurable timeout: shorter ones close healthy clients on loopback jitter.
pub const MIN_TIMEOUT: Duration = Duration::from_millis(10);
/// Longest configurable timeout: one day (longer ones overflow deadline arithmetic).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 3600);
/// Most warning lines the stream logs per second, per connection and for all of them
/// together; the rest are counted and reported as suppressed.
pub const DEFAULT_LOG_LINES_PER_SECOND: u32 = 10;

/// The box (m, scene coordinates) the probe may be sent to by viewers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProbeWorkspace {
    /// Lowest corner (m).
    pub min: Vec3,
    /// Highest corner (m).
    pub max: Vec3,
}

impl ProbeWorkspace {
    /// The box used when the scene gives none: a 10 m cube around the origin, far beyond
    /// any tissue, so no viewer target can overflow the model.
    pub const FALLBACK: ProbeWorkspace = ProbeWorkspace {
        min: Vec3::new(-10.0, -10.0, -10.0),
        max: Vec3::new(10.0, 10.0, 10.0),
    };

    /// The nearest point of the box to `target` (m), component-wise.
    pub fn clamp(&self, target: Vec3) -> Vec3 {
        target.zip_zip_map(&self.min, &self.max, |x, lo, hi| x.clamp(lo, hi))
    }

    /// Checks that both corners are finite and `min ≤ max` on every axis.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.min.iter().chain(self.max.iter())).all(|x| x.is_finite()) {
            return Err(format!(
                "stream.probe_workspace: corners must be finite, got min {:?} max {:?}",
                self.min.as_slice(),
                self.max.as_slice()
            ));
        }
        if self.min.iter().zip(self.max.iter()).any(|(lo, hi)| lo > hi) {
            return Err(format!(
                "stream.probe_workspace: min {:?} exceeds max {:?} on some axis",
                self.min.as_slice(),
                self.max.as_slice()
            ));
        }
        Ok(())
    }
}

/// Settings of the stream server. Defaults: loopback, 30 Hz, 64 clients (32 read-only
/// viewers per address and per web origin), 1024 connections (128 per remote address),
/// 4 KiB client messages, 10 s idle timeout, 3 s send stall, 10 s for a request's
/// headers, 30 s for a connection to upgrade; only the server's own origin and host.
#[derive(Clone, Debug)]
pub struct StreamConfig {
    /// Address to bind; port 0 picks a free port. A non-loopback address is logged as a
    /// warning: anyone who can reach it can watch.
    pub bind: SocketAddr,
    /// Frame rate (Hz), within [`FRAME_RATE_RANGE_HZ`].
    pub frame_rate_hz: f64,
    /// Most simultaneous WebSocket clients (1 ..= [`MAX_CLIENTS`], at most
    /// `max_connections`); further ones get `ServerFull`, but for a client that proves
    /// the control token, who takes the oldest read-only viewer's seat.
    pub max_clients: usize,
    /// Most read-only viewers from one remote address (1 ..= [`MAX_CLIENTS`]; above
    /// `max_clients` it does not bind).
    pub max_viewers_per_address: usize,
    /// Most read-only viewers from one web origin (1 ..= [`MAX_CLIENTS`]; above
    /// `max_clients` it does not bind).
    pub max_viewers_per_origin: usize,
    /// Web origins (`scheme://host[:port]`) whose pages may use the server besides its
    /// own (a viewer served elsewhere); every other `Origin` is refused with 403.
    pub allowed_origins: Vec<String>,
    /// Host names the server answers to besides its IP address and `localhost` (the
    /// machine's name on a lab network); every other `Host` is refused with 403.
    pub allowed_hosts: Vec<String>,
    /// Most simultaneous TCP connections of any kind (1 ..= [`MAX_CONNECTIONS`]). Further
    /// connections wait in the kernel's accept queue until one closes. Lowered at start
    /// to what the process's file-descriptor limit allows.
    pub max_connections: usize,
    /// Most simultaneous TCP connections from one remote IP address (1 ..=
    /// `max_connections`); further ones are closed at once.
    pub max_connections_per_address: usize,
    /// Largest client message accepted (bytes, 1 ..= [`MAX_MESSAGE_BYTES`]); larger ones
    /// get `TooLarge`.
    pub max_message_bytes: usize,
    /// A client from which nothing (not even a pong) arrives for this long is closed.
    pub idle_timeout: Duration,
    /// A client whose socket accepts no message for this long is dropped.
    pub send_stall_timeout: Duration,
    /// A connection must deliver a request's complete headers within this time of
    /// opening or of its previous response; idle and slow-header (slowloris)
    /// connections are closed after it.
    pub header_timeout: Duration,
    /// A connection that has not become a WebSocket this long after it opened is closed,
    /// whatever it is doing (slow bodies, responses nobody reads).
    pub http_connection_timeout: Duration,
    /// Most warning lines per second, per connection and for all connections together.
    pub log_lines_per_second: u32,
    /// Where viewers may send the probe (m); `MoveProbe` targets outside are clamped to
    /// it. `None` uses [`ProbeWorkspace::FALLBACK`].
    pub probe_workspace: Option<ProbeWorkspace>,
    /// The control token; `None` generates a random one when control is enabled.
    pub control_token: Option<String>,
}

impl Default for StreamConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 7878)),
            frame_rate_hz: 30.0,
            max_clients: 64,
            max_viewers_per_address: 32,
            max_viewers_per_origin: 32,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            max_connections: 1024,
            max_connections_per_address: 128,
            max_message_bytes: wire::MAX_CLIENT_MESSAGE_BYTES,
            idle_timeout: Duration::from_secs(10),
            send_stall_timeout: Duration::from_secs(3),
            header_timeout: Duration::from_secs(10),
            http_connection_timeout: Duration::from_secs(30),
            log_lines_per_second: DEFAULT_LOG_LINES_PER_SECOND,
            probe_workspace: None,
            control_token: None,
        }
    }
}

impl StreamConfig {
    /// Checks every setting against its bounds; the error names the first field outside
    /// them (as `stream.<field>`) and its value.
    pub fn validate(&self) -> Result<(), String> {
        let rate = self.frame_rate_hz;
        if !FRAME_RATE_RANGE_HZ.contains(&rate) {
            return Err(format!(
                "stream.frame_rate_hz: must be within {}..={} Hz, got {rate:e}",
                FRAME_RATE_RANGE_HZ.start(),
                FRAME_RATE_RANGE_HZ.end()
            ));
        }
        within("max_connections", self.max_connections, 1, MAX_CONNECTIONS)?;
        within(
            "max_clients",
            self.max_clients,
            1,
            MAX_CLIENTS.min(self.max_connections),
        )?;
        for (field, value) in [
            ("max_viewers_per_address", self.max_viewers_per_address),
            ("max_viewers_per_origin", self.max_viewers_per_origin),
        ] {
            within(field, value, 1, MAX_CLIENTS)?;
        }
        for origin in &self.allowed_origins {
            normalise_origin(origin).map_err(|e| format!("stream.allowed_origins: {e}"))?;
        }
        for host in &self.allowed_hosts {
            normalise_host(host).map_err(|e| format!("stream.allowed_hosts: {e}"))?;
        }
        within(
            "max_connections_per_address",
            self.max_connections_per_address,
            1,
            self.max_connections,
        )?;
        within(
            "max_message_bytes",
            self.max_message_bytes,
            1,
            MAX_MESSAGE_BYTES,
        )?;
        for (field, value) in [
            ("idle_timeout", self.idle_timeout),
            ("send_stall_timeout", self.send_stall_timeout),
            ("header_timeout", self.header_timeout),
            ("http_connection_timeout", self.http_connection_timeout),
        ] {
            if !(MIN_TIMEOUT..=MAX_TIMEOUT).contains(&value) {
                return Err(format!(
                    "stream.{field}: must be within {MIN_TIMEOUT:?}..={MAX_TIMEOUT:?}, got {value:?}"
                ));
            }
        }
        if self.log_lines_per_second == 0 {
            return Err("stream.log_lines_per_second: must be >= 1, got 0".into());
        }
        if let Some(workspace) = &self.probe_workspace {
            workspace.validate()?;
        }
        if let Some(token) = &self.control_token {
            if let Some(why) = weak_token(token) {
                return Err(format!("stream.control_token: {why}"));
            }
        }
        Ok(())
    }

    /// The frame period (s as a [`Duration`]); valid once [`StreamConfig::validate`]
    /// passed.
    pub fn frame_period(&self) -> Duration {
        Duration::from_secs_f64(1.0 / self.frame_rate_hz)
    }

    /// The hosts and origins requests may name (valid once [`StreamConfig::validate`]
    /// passed).
    pub(crate) fn access_policy(&self) -> AccessPolicy {
        AccessPolicy {
            hosts: self
                .allowed_hosts
                .iter()
                .filter_map(|h| normalise_host(h).ok())
                .collect(),
            origins: self
                .allowed_origins
                .iter()
                .filter_map(|o| normalise_origin(o).ok())
                .collect(),
        }
    }

    /// The workspace `MoveProbe` targets are clamped to (m).
    pub fn workspace(&self) -> ProbeWorkspace {
        self.probe_workspace.unwrap_or(ProbeWorkspace::FALLBACK)
    }
}

fn within(field: &str, value: usize, min: usize, max: usize) -> Result<(), String> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(format!(
            "stream.{field}: must be within {min}..={max}, got {value}"
        ))
    }
}
