//! What the log may carry from the stream's WebSocket library: tungstenite traces each
//! frame with its payload (text and hex), which carries the control token, and the
//! token is never logged.

/// Targets whose trace events carry frame payloads.
const PAYLOAD_TARGETS: [&str; 2] = ["tungstenite", "tokio_tungstenite"];

/// Whether an event may be logged: not a trace event of the WebSocket library.
pub fn without_payloads(meta: &tracing::Metadata<'_>) -> bool {
    let target = meta.target();
    let payload = PAYLOAD_TARGETS
        .iter()
        .any(|t| target == *t || target.starts_with(&format!("{t}::")));
    !(payload && *meta.level() == tracing::Level::TRACE)
}
