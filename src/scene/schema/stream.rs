//! `[stream]`: the visual stream server's address, control token, client limit, and the
//! web origins and host names it answers besides its own.

use std::net::{SocketAddr, ToSocketAddrs};

use serde::Deserialize;

use super::check::Check;
use super::SceneError;

/// Most simultaneous stream clients a scene may allow (each holds a socket and a task).
pub const MAX_CLIENTS: usize = 4096;
/// Most entries of `allowed_origins` and of `allowed_hosts`.
const MAX_ALLOWED: usize = 64;

/// Visual stream server.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StreamSpec {
    /// Address and port to listen on (port 0: any free port).
    pub bind: String,
    /// Control token for viewers that move the probe; absent: a random one per start.
    pub token: Option<String>,
    /// Most simultaneous clients, ≥ 1.
    pub max_clients: usize,
    /// Web origins (`https://host[:port]`) whose pages may use the viewer server besides
    /// its own.
    pub allowed_origins: Vec<String>,
    /// Host names the server answers to besides its address and `localhost`.
    pub allowed_hosts: Vec<String>,
}

impl Default for StreamSpec {
    fn default() -> Self {
        Self {
            bind: "127.0.0.1:7878".into(),
            token: None,
            max_clients: 64,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
        }
    }
}

/// `ADDRESS:PORT` or `HOST:PORT` (such as `localhost:7878`) as a socket address: a host
/// name resolves to its first IPv4 address, else its first one.
pub fn resolve_bind(text: &str) -> Result<SocketAddr, String> {
    if let Ok(address) = text.parse() {
        return Ok(address);
    }
    if !text.contains(':') {
        return Err(format!(
            "expected HOST:PORT (such as localhost:7878), got {text:?}"
        ));
    }
    let resolved: Vec<SocketAddr> = text
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {text:?}: {e}"))?
        .collect();
    resolved
        .iter()
        .find(|a| a.is_ipv4())
        .or(resolved.first())
        .copied()
        .ok_or_else(|| format!("{text:?} resolves to no address"))
}

impl StreamSpec {
    /// The bind address (resolved when the scene is loaded).
    pub fn bind_addr(&self) -> SocketAddr {
        resolve_bind(&self.bind).expect("validated bind address")
    }

    pub(super) fn validate(&self, c: &Check) -> Result<(), SceneError> {
        resolve_bind(&self.bind).map_err(|e| c.invalid("stream.bind", e))?;
        c.count("stream.max_clients", self.max_clients, 1, MAX_CLIENTS)?;
        if let Some(token) = &self.token {
            let url_safe = |ch: char| ch.is_ascii_alphanumeric() || "-._~".contains(ch);
            if token.is_empty() || token.len() > 256 || !token.chars().all(url_safe) {
                return Err(c.invalid(
                    "stream.token",
                    format!(
                        "must be 1 to 256 characters of A–Z, a–z, 0–9, '-', '.', '_', '~' \
                         (it goes into the viewer's address), got {token:?}"
                    ),
                ));
            }
        }
        if self.allowed_origins.len() > MAX_ALLOWED || self.allowed_hosts.len() > MAX_ALLOWED {
            return Err(c.invalid(
                "stream",
                format!(
                    "allowed_origins and allowed_hosts take at most {MAX_ALLOWED} entries each"
                ),
            ));
        }
        Ok(())
    }
}
