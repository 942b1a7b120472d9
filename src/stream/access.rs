//! Who may reach the server from a browser: the `Host` and `Origin` checks every HTTP
//! request and WebSocket upgrade passes before anything is served (OWASP's WebSocket
//! guidance; Jupyter's notebook server does the same).
//!
//! * `Host` must name this server: an IP address equal to the address the connection
//!   reached (the bind address, or for a wildcard bind the interface's), `localhost`, or
//!   a name in `allowed_hosts`. A page on `evil.example` whose name was re-pointed at
//!   127.0.0.1 (DNS rebinding) sends `Host: evil.example` and is refused.
//! * `Origin`, when present (browsers send it on every WebSocket and on cross-origin
//!   requests), must be this server's own origin (`http://` or `https://` and the `Host`
//!   as sent) or one listed in `allowed_origins`. A page on any other site that opens
//!   `ws://127.0.0.1:7878/ws` is refused. Clients that are not browsers send no `Origin`
//!   and pass; they are held by the token, the seat rules and the connection caps.
//!
//! Refusals are `403 Forbidden` with a one-line reason.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The two ends of the TCP connection a request came over, put into every request's
/// extensions by the accept loop.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Peer {
    /// The client's address.
    pub remote: SocketAddr,
    /// The server address the client reached.
    pub local: SocketAddr,
}

/// The hosts and origins a server answers, checked per request.
#[derive(Clone, Debug, Default)]
pub(crate) struct AccessPolicy {
    /// Host names (lowercase, no port) allowed besides IP addresses and `localhost`.
    pub hosts: Vec<String>,
    /// Origins (`scheme://host[:port]`, lowercase) allowed besides the server's own.
    pub origins: Vec<String>,
}

/// Why a request was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No `Host` header, or one that does not parse.
    MissingHost,
    /// A `Host` that does not name this server.
    ForeignHost(String),
    /// An `Origin` of another site.
    ForeignOrigin(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::MissingHost => write!(f, "a request without a valid Host header"),
            Refusal::ForeignHost(host) => write!(
                f,
                "Host {host:?} does not name this server (add it to [stream] allowed_hosts)"
            ),
            Refusal::ForeignOrigin(origin) => write!(
                f,
                "Origin {origin:?} is another site (add it to [stream] allowed_origins)"
            ),
        }
    }
}

/// The `Origin` of a request that passed, if it sent one (lowercase): what per-origin
/// caps count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RequestOrigin(pub Option<String>);

impl AccessPolicy {
    /// Checks one request's headers as they arrived over a connection to `local`.
    pub(crate) fn check(
        &self,
        headers: &HeaderMap,
        local: SocketAddr,
    ) -> Result<RequestOrigin, Refusal> {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .ok_or(Refusal::MissingHost)?
            .to_ascii_lowercase();
        let name = host_name(&host).ok_or(Refusal::MissingHost)?;
        if !self.host_allowed(name, local.ip()) {
            return Err(Refusal::ForeignHost(host));
        }
        let Some(origin) = headers.get(header::ORIGIN) else {
            return Ok(RequestOrigin(None));
        };
        let origin = origin
            .to_str()
            .map(|o| o.trim().to_ascii_lowercase())
            .map_err(|_| Refusal::ForeignOrigin("(not text)".into()))?;
        let own = ["http://", "https://"]
            .iter()
            .any(|scheme| origin.strip_prefix(scheme) == Some(host.as_str()));
        if own || self.origins.contains(&origin) {
            Ok(RequestOrigin(Some(origin)))
        } else {
            Err(Refusal::ForeignOrigin(origin))
        }
    }

    fn host_allowed(&self, name: &str, local: IpAddr) -> bool {
        let name = name.strip_suffix('.').unwrap_or(name);
        let literal = name
            .strip_prefix('[')
            .and_then(|n| n.strip_suffix(']'))
            .unwrap_or(name);
        if name == "localhost" || self.hosts.iter().any(|h| h == literal) {
            return true;
        }
        match literal.parse::<IpAddr>() {
            Ok(ip) => canonical(ip) == canonical(local),
            Err(_) => false,
        }
    }
}

/// The host of a `Host` value without its port (`[::1]:7878` → `[::1]`), or `None` when
/// the port is not a number.
fn host_name(host: &str) -> Option<&str> {
    let (name, port) = if host.starts_with('[') {
        let end = host.find(']')?;
        let rest = &host[end + 1..];
        (&host[..=end], rest.strip_prefix(':'))
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host, None),
        }
    };
    match port {
        Some(p) if p.parse::<u16>().is_err() => None,
        _ => Some(name),
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is (a dual-stack socket reports
/// 127.0.0.1 as ::ffff:127.0.0.1).
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Checks that `origin` is an origin as browsers send it (`http://` or `https://`, a
/// host, an optional port, nothing else) and returns it lowercase.
pub(crate) fn normalise_origin(origin: &str) -> Result<String, String> {
    let lower = origin.trim().to_ascii_lowercase();
    let rest = lower
        .strip_prefix("http://")
        .or_else(|| lower.strip_prefix("https://"))
        .ok_or_else(|| format!("{origin:?} is not http://HOST[:PORT] or https://HOST[:PORT]"))?;
    if rest.is_empty() || rest.contains(['/', '?', '#', '@', ' ', '*']) || host_name(rest).is_none()
    {
        return Err(format!(
            "{origin:?} is not an origin: give scheme, host and port only, like https://lab.example:8443"
        ));
    }
    Ok(lower)
}

/// Checks that `host` is a host name or address (no port, no wildcard) and returns it
/// lowercase.
pub(crate) fn normalise_host(host: &str) -> Result<String, String> {
    let lower = host.trim().to_ascii_lowercase();
    let name_char = |c: char| c.is_ascii_alphanumeric() || "-.:[]".contains(c);
    let bare = lower.trim_start_matches('[').trim_end_matches(']');
    let address = bare.parse::<IpAddr>().is_ok();
    if lower.is_empty()
        || lower.len() > 253
        || !lower.chars().all(name_char)
        || (lower.contains(':') && !address)
    {
        return Err(format!(
            "{host:?} is not a host name (letters, digits, '-' and '.', or an IP address; no port)"
        ));
    }
    Ok(if address { bare.to_string() } else { lower })
}

/// The middleware in front of every route: refuses a foreign `Host` or `Origin` with
/// 403, and hands the origin on to the WebSocket route.
pub(crate) async fn guard(
    State(policy): State<Arc<AccessPolicy>>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(peer) = request.extensions().get::<Peer>().copied() else {
        return (StatusCode::FORBIDDEN, "no connection information\n").into_response();
    };
    match policy.check(request.headers(), peer.local) {
        Ok(origin) => {
            request.extensions_mut().insert(origin);
            next.run(request).await
        }
        Err(refusal) => {
            tracing::debug!("refused a request from {}: {refusal}", peer.remote);
            (StatusCode::FORBIDDEN, format!("forbidden: {refusal}\n")).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(host: Option<&str>, origin: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(host) = host {
            h.insert(header::HOST, HeaderValue::from_str(host).unwrap());
        }
        if let Some(origin) = origin {
            h.insert(header::ORIGIN, HeaderValue::from_str(origin).unwrap());
        }
        h
    }

    const LOOPBACK: &str = "127.0.0.1:7878";

    #[test]
    fn the_bind_address_localhost_and_configured_names_pass_and_others_do_not() {
        let policy = AccessPolicy {
            hosts: vec!["lab-pc".into()],
            origins: vec!["https://lab.example:8443".into()],
        };
        let local: SocketAddr = LOOPBACK.parse().unwrap();
        for host in [
            "127.0.0.1:7878",
            "127.0.0.1",
            "localhost:7878",
            "LocalHost",
            "lab-pc:7878",
        ] {
            assert!(
                policy.check(&headers(Some(host), None), local).is_ok(),
                "{host}"
            );
        }
        for host in [
            "evil.example:7878",
            "127.0.0.2:7878",
            "localhost.evil.example",
            "[::1]:7878",
        ] {
            assert!(
                matches!(
                    policy.check(&headers(Some(host), None), local),
                    Err(Refusal::ForeignHost(_))
                ),
                "{host}"
            );
        }
        assert_eq!(
            policy.check(&headers(None, None), local),
            Err(Refusal::MissingHost)
        );
        assert_eq!(
            policy.check(&headers(Some("127.0.0.1:port"), None), local),
            Err(Refusal::MissingHost)
        );
        let v6: SocketAddr = "[::ffff:127.0.0.1]:7878".parse().unwrap();
        assert!(policy
            .check(&headers(Some("127.0.0.1:7878"), None), v6)
            .is_ok());
        let v6: SocketAddr = "[::1]:7878".parse().unwrap();
        assert!(policy.check(&headers(Some("[::1]:7878"), None), v6).is_ok());
    }

    #[test]
    fn only_the_own_and_configured_origins_pass() {
        let policy = AccessPolicy {
            hosts: vec![],
            origins: vec!["https://lab.example:8443".into()],
        };
        let local: SocketAddr = LOOPBACK.parse().unwrap();
        let ok = |origin: &str| policy.check(&headers(Some("127.0.0.1:7878"), Some(origin)), local);
        assert_eq!(
            ok("http://127.0.0.1:7878"),
            Ok(RequestOrigin(Some("http://127.0.0.1:7878".into())))
        );
        assert!(ok("https://lab.example:8443").is_ok());
        for foreign in [
            "http://evil.example",
            "null",
            "http://127.0.0.1:7879",
            "http://127.0.0.1",
            "https://lab.example",
        ] {
            assert!(
                matches!(ok(foreign), Err(Refusal::ForeignOrigin(_))),
                "{foreign}"
            );
        }
    }

    #[test]
    fn configured_origins_and_hosts_are_checked_for_shape() {
        assert_eq!(
            normalise_origin("HTTPS://Lab.Example:8443").unwrap(),
            "https://lab.example:8443"
        );
        for bad in [
            "lab.example",
            "ftp://x",
            "https://x/path",
            "*",
            "https://*.x",
            "http://",
        ] {
            assert!(normalise_origin(bad).is_err(), "{bad}");
        }
        assert_eq!(normalise_host("Lab-PC").unwrap(), "lab-pc");
        assert_eq!(normalise_host("[::1]").unwrap(), "::1");
        for bad in ["", "lab pc", "*.example", "a/b", "lab-pc:7878"] {
            assert!(normalise_host(bad).is_err(), "{bad}");
        }
    }
}
