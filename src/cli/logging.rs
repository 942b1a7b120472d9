//! The command line's log: `RUST_LOG` levels (default `info`) through
//! [`LogWriter`](super::progress::LogWriter), with the WebSocket library's trace events
//! filtered out at every level: tungstenite traces each frame with its payload (text and
//! hex), which carries the control token, and the token is never logged.

use tracing_subscriber::filter::{filter_fn, EnvFilter};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use super::progress::LogWriter;
use crate::stream::without_payloads;

/// Installs the log for the `palpa` binary.
pub fn init() {
    let levels = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(levels)
        .with_writer(LogWriter)
        .finish()
        .with(filter_fn(without_payloads))
        .init();
}
