//! What every connection task shares with the server that spawned it.

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::watch;

use super::config::{ProbeWorkspace, StreamConfig};
use super::fan_out::Audience;
use super::fan_out::PublishedFrame;
use super::log_limit::LogBudget;
use super::seats::Seats;
use super::snapshot::ControlSender;
use super::token::{ControlToken, TokenThrottle};

/// The server's state as its connections see it.
pub(crate) struct Shared {
    /// The validated settings.
    pub config: StreamConfig,
    /// Where viewers may send the probe (m).
    pub workspace: ProbeWorkspace,
    /// The encoded `Hello`.
    pub hello: Bytes,
    /// The encoded `SceneInit`.
    pub scene_init: Bytes,
    /// The newest encoded frame and the columns it needs.
    pub frames: watch::Receiver<PublishedFrame>,
    /// The clients the publisher sends each frame to.
    pub audience: Arc<Audience>,
    /// The newest encoded haptic statistics, once there are any.
    pub stats: watch::Receiver<Option<Bytes>>,
    /// The newest encoded safety report, once there is one (cumulative: the newest says
    /// everything a lost one did).
    pub safety: watch::Receiver<Option<Bytes>>,
    /// The newest encoded notice, once there is one.
    pub notice: watch::Receiver<Option<Bytes>>,
    /// Turns true when the server stops.
    pub shutdown: watch::Receiver<bool>,
    /// The WebSocket clients' seats.
    pub seats: Arc<Seats>,
    /// The control token and the sim device's command channel, when control is enabled.
    pub control: Option<(ControlToken, ControlSender)>,
    /// Control attempts per remote address.
    pub throttle: TokenThrottle,
    /// Log lines the accept loop and all connections together may write per second.
    pub log: Arc<LogBudget>,
}
