//! The accept loop: TCP connection caps (overall and per remote address), HTTP/1.1 with
//! a header deadline and a deadline to upgrade, and back-off on accept errors.
//!
//! Hand-written around hyper's connection builder because `axum::serve` exposes none of
//! these limits: it has no header timeout, no connection cap, and retries a failing
//! `accept` once a second with an unthrottled error line each time.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use super::access::Peer;
use super::log_limit::{Admit, LogBudget};

/// First pause after a failed `accept` (EMFILE, ENFILE, ENOBUFS…); doubled after each
/// further failure up to [`ACCEPT_BACKOFF_MAX`], reset by a successful accept.
const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(5);
/// Longest pause between two failing `accept`s.
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);
/// How long a connection being closed (deadline or shutdown) may finish its response.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// The connection limits of one server.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConnectionLimits {
    /// Most simultaneous TCP connections.
    pub max_connections: usize,
    /// Most simultaneous TCP connections from one IP address.
    pub max_per_address: usize,
    /// Deadline for a request's complete headers.
    pub header_timeout: Duration,
    /// Deadline for a connection to become a WebSocket.
    pub upgrade_timeout: Duration,
}

/// Counts open connections overall and per remote address.
pub(crate) struct ConnectionCaps {
    limits: ConnectionLimits,
    total: Arc<Semaphore>,
    per_address: Arc<Mutex<HashMap<IpAddr, usize>>>,
    open: Arc<AtomicUsize>,
}

impl ConnectionCaps {
    /// Caps with nothing open.
    pub(crate) fn new(limits: ConnectionLimits) -> Self {
        Self {
            limits,
            total: Arc::new(Semaphore::new(limits.max_connections)),
            per_address: Arc::default(),
            open: Arc::default(),
        }
    }

    /// Number of TCP connections open now (HTTP and WebSocket).
    pub(crate) fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Claims a place for one more connection from `address`, if it has fewer than its
    /// cap open.
    fn claim_address(&self, address: IpAddr) -> Option<ConnectionSlot> {
        let mut open = self.per_address.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(address).or_insert(0);
        if *count >= self.limits.max_per_address {
            return None;
        }
        *count += 1;
        self.open.fetch_add(1, Ordering::Relaxed);
        Some(ConnectionSlot {
            address,
            per_address: self.per_address.clone(),
            open: self.open.clone(),
        })
    }
}

/// One connection's place in its address's count and in the count of open
/// connections; given back when dropped.
struct ConnectionSlot {
    address: IpAddr,
    per_address: Arc<Mutex<HashMap<IpAddr, usize>>>,
    open: Arc<AtomicUsize>,
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
        let mut per_address = self.per_address.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = per_address.get_mut(&self.address) {
            *count -= 1;
            if *count == 0 {
                per_address.remove(&self.address);
            }
        }
    }
}

/// A TCP stream that holds its connection's places in the caps for as long as it lives,
/// also after hyper hands it to the WebSocket as an upgraded connection.
struct CountedStream {
    tcp: TcpStream,
    _total: OwnedSemaphorePermit,
    _slot: ConnectionSlot,
}

impl AsyncRead for CountedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for CountedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}

/// Accepts connections until `shutdown` turns true, then closes the ones still in HTTP
/// (upgraded WebSockets end through their own shutdown path) and returns once they are
/// gone. A connection beyond the overall cap waits in the kernel's accept queue (it costs
/// this process no file descriptor there); one beyond its address's cap is closed at once.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    app: Router,
    caps: Arc<ConnectionCaps>,
    log: Arc<LogBudget>,
    mut shutdown: watch::Receiver<bool>,
) {
    let limits = caps.limits;
    let mut connections = JoinSet::new();
    let mut backoff = ACCEPT_BACKOFF_MIN;
    loop {
        let permit = tokio::select! {
            permit = caps.total.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            _ = shutdown.wait_for(|stop| *stop) => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.wait_for(|stop| *stop) => break,
        };
        let (tcp, peer) = match accepted {
            Ok(accepted) => {
                backoff = ACCEPT_BACKOFF_MIN;
                accepted
            }
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                if let Admit::Log { suppressed } = log.admit() {
                    tracing::warn!(
                        suppressed,
                        "visual stream cannot accept a connection ({e}); retrying in {backoff:?}"
                    );
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
                continue;
            }
        };
        let Some(slot) = caps.claim_address(peer.ip()) else {
            if let Admit::Log { suppressed } = log.admit() {
                tracing::debug!(
                    suppressed,
                    "closing a connection from {peer}: it already has {} open",
                    limits.max_per_address
                );
            }
            continue;
        };
        // Frames are small and latency matters more than packet count: no Nagle delay.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY on a stream client: {e}");
        }
        let stream = CountedStream {
            tcp,
            _total: permit,
            _slot: slot,
        };
        connections.spawn(serve_http(
            stream,
            peer,
            app.clone(),
            limits,
            shutdown.clone(),
        ));
    }
    while connections.join_next().await.is_some() {}
}

/// Serves HTTP/1.1 on one connection until it upgrades to a WebSocket, closes, misses the
/// header deadline (hyper's own timer, which also runs before the first byte), or is
/// still not a WebSocket at the upgrade deadline.
async fn serve_http(
    stream: CountedStream,
    peer: SocketAddr,
    app: Router,
    limits: ConnectionLimits,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let local = stream.tcp.local_addr().unwrap_or(peer);
    let peer_info = Peer {
        remote: peer,
        local,
    };
    // Every request learns which connection it came over (the Host check and the seats
    // need both ends).
    let app = tower::ServiceExt::map_request(
        app,
        move |mut request: hyper::Request<hyper::body::Incoming>| {
            request.extensions_mut().insert(peer_info);
            request
        },
    );
    let connection = builder
        .serve_connection(TokioIo::new(stream), TowerToHyperService::new(app))
        .with_upgrades();
    let mut connection = pin!(connection);
    let finished = tokio::select! {
        result = connection.as_mut() => Some(result),
        _ = tokio::time::sleep(limits.upgrade_timeout) => None,
        _ = shutdown.wait_for(|stop| *stop) => None,
    };
    let result = match finished {
        Some(result) => result,
        None => {
            connection.as_mut().graceful_shutdown();
            match tokio::time::timeout(CLOSE_GRACE, connection).await {
                Ok(result) => result,
                Err(_) => return,
            }
        }
    };
    if let Err(e) = result {
        tracing::trace!("HTTP connection from {peer} ended: {e}");
    }
}

/// Errors of one pending connection (the peer gave up), not of the listener.
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// File descriptors kept for everything but stream connections (device, scene and cache
/// files, the runtime's own).
pub(crate) const FD_RESERVE: u64 = 128;

/// Raises this process's soft limit on open files to its hard limit and returns the
/// soft limit in force afterwards (unchanged if it cannot be raised).
pub fn raise_open_file_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read/write the struct passed by pointer.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 1024;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
    }
    limit.rlim_cur
}
