//! One client connection: its task sends hello, scene init and the first frame, then
//! stats, control-status messages, pings and whatever frames the publisher's fan-out
//! could not send at once; a reader checks control messages. A control message with a
//! wrong token is refused with a `ControlStatus` and the connection stays open,
//! read-only; the token is never logged.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket};
use bytes::Bytes;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use palpa_protocol as wire;
use tokio::sync::watch;
use wire::ErrorCode;

use super::fan_out::{ClientLink, SendFailure};
use super::log_limit::{limited_warn, Admit, LogBudget};
use super::snapshot::ProbeControl;
use super::state::Shared;
use crate::Vec3;

/// Why a connection ends.
enum Closed {
    /// The peer went away or the socket failed; nothing more to send.
    Gone,
    /// The socket accepted nothing for this long; nothing more can be sent.
    Stalled(Duration),
    /// The server closes it and tells the client why.
    Error(ErrorCode, String),
}

/// Serves one upgraded WebSocket until it closes.
pub(crate) async fn serve(socket: WebSocket, shared: Arc<Shared>) {
    let (mut sink, stream) = socket.split();
    let Ok(_permit) = shared.slots.clone().try_acquire_owned() else {
        let max = shared.config.max_clients;
        let why = format!("server is full ({max} clients)");
        send_error(&mut sink, &shared, ErrorCode::ServerFull, why).await;
        return;
    };
    let log = LogBudget::new(shared.config.log_lines_per_second);
    let link = Arc::new(ClientLink::new(sink));
    // The reader's answers to control messages, for the writer; only the newest counts.
    let (status_tx, status_rx) = watch::channel(None);
    let closed = tokio::select! {
        closed = write_loop(&link, &shared, status_rx) => closed,
        closed = read_loop(stream, &shared, &log, &status_tx) => closed,
    };
    shared.audience.leave(&link);
    match closed {
        Closed::Gone => {}
        Closed::Stalled(stall) => {
            if let Admit::Log { suppressed } = shared.log.admit() {
                tracing::info!(
                    suppressed,
                    "dropping stream client: socket blocked for {stall:?}"
                );
            }
        }
        Closed::Error(code, why) => {
            if let Admit::Log { suppressed } = shared.log.admit() {
                tracing::debug!(suppressed, "closing stream client: {why}");
            }
            send_error(link.outbox().await.sink(), &shared, code, why).await;
        }
    }
    let held_back = log.take_suppressed();
    if held_back > 0 {
        if let Admit::Log { suppressed } = shared.log.admit() {
            tracing::warn!(
                held_back,
                suppressed,
                "stream client closed; {held_back} of its warnings were suppressed"
            );
        }
    }
}

/// Sends hello, scene init and the newest frame, then joins the audience: from then on
/// the publisher sends frames itself ([`super::fan_out`]) and this task sends stats,
/// control-status messages, a ping every third of the idle timeout, and whatever the
/// publisher could not send at once, followed by the newest frame. A send that does not
/// complete within the stall timeout drops the client.
async fn write_loop(
    link: &Arc<ClientLink>,
    shared: &Shared,
    mut status: watch::Receiver<Option<Bytes>>,
) -> Closed {
    let stall = shared.config.send_stall_timeout;
    let mut stats = shared.stats.clone();
    let mut safety = shared.safety.clone();
    let mut notice = shared.notice.clone();
    let mut shutdown = shared.shutdown.clone();
    {
        let mut outbox = link.outbox().await;
        outbox.queue(Message::Binary(shared.hello.clone()));
        outbox.queue(Message::Binary(shared.scene_init.clone()));
        outbox.queue_frame(&shared.frames.borrow().clone());
        if let Err(failure) = outbox.drain(stall).await {
            return failure.into();
        }
    }
    shared.audience.join(link);
    // A frame published before the join is caught up with at once.
    link.fall_behind();
    stats.mark_changed();
    safety.mark_changed();
    notice.mark_changed();
    let mut ping = tokio::time::interval(shared.config.idle_timeout / 3);
    ping.tick().await;
    loop {
        let message = tokio::select! {
            biased;
            _ = async { shutdown.wait_for(|stop| *stop).await.is_ok() } => {
                // The publisher's final frame goes out before the goodbye.
                return match catch_up(link, shared, None, stall).await {
                    Ok(()) => Closed::Error(ErrorCode::ShuttingDown, "server is shutting down".into()),
                    Err(failure) => failure.into(),
                };
            }
            () = link.behind() => None,
            changed = stats.changed() => match (changed, stats.borrow_and_update().clone()) {
                (Ok(()), Some(bytes)) => Some(Message::Binary(bytes)),
                (Ok(()), None) => continue,
                (Err(_), _) => return Closed::Error(ErrorCode::ShuttingDown, "stream ended".into()),
            },
            changed = safety.changed() => match (changed, safety.borrow_and_update().clone()) {
                (Ok(()), Some(bytes)) => Some(Message::Binary(bytes)),
                (Ok(()), None) => continue,
                (Err(_), _) => return Closed::Error(ErrorCode::ShuttingDown, "stream ended".into()),
            },
            changed = notice.changed() => match (changed, notice.borrow_and_update().clone()) {
                (Ok(()), Some(bytes)) => Some(Message::Binary(bytes)),
                (Ok(()), None) => continue,
                (Err(_), _) => return Closed::Error(ErrorCode::ShuttingDown, "stream ended".into()),
            },
            changed = status.changed() => match (changed, status.borrow_and_update().clone()) {
                (Ok(()), Some(bytes)) => Some(Message::Binary(bytes)),
                (Ok(()), None) => continue,
                (Err(_), _) => return Closed::Gone,
            },
            _ = ping.tick() => Some(Message::Ping(Bytes::new())),
        };
        if let Err(failure) = catch_up(link, shared, message, stall).await {
            return failure.into();
        }
    }
}

/// Sends what is planned for the client, then `message`, then the newest frame if the
/// client has not been sent it.
async fn catch_up(
    link: &ClientLink,
    shared: &Shared,
    message: Option<Message>,
    stall: Duration,
) -> Result<(), SendFailure> {
    let mut outbox = link.outbox().await;
    if let Some(message) = message {
        outbox.queue(message);
    }
    outbox.queue_frame(&shared.frames.borrow().clone());
    outbox.drain(stall).await
}

impl From<SendFailure> for Closed {
    fn from(failure: SendFailure) -> Self {
        match failure {
            SendFailure::Gone => Closed::Gone,
            SendFailure::Stalled(stall) => Closed::Stalled(stall),
        }
    }
}

/// Reads client messages until the client goes, misbehaves, or stays silent (no pong)
/// for the idle timeout; answers to control messages go to `status`.
async fn read_loop(
    mut stream: SplitStream<WebSocket>,
    shared: &Shared,
    log: &LogBudget,
    status: &watch::Sender<Option<Bytes>>,
) -> Closed {
    let idle = shared.config.idle_timeout;
    loop {
        let message = match tokio::time::timeout(idle, stream.next()).await {
            Err(_) => {
                let why = format!("nothing received for {idle:?}");
                return Closed::Error(ErrorCode::IdleTimeout, why);
            }
            Ok(None) => return Closed::Gone,
            Ok(Some(Err(e))) => {
                return Closed::Error(ErrorCode::Malformed, format!("WebSocket read failed: {e}"));
            }
            Ok(Some(Ok(message))) => message,
        };
        match message {
            Message::Binary(bytes) => match handle_client_message(&bytes, shared, log) {
                Ok(None) => {}
                Ok(Some(answer)) => {
                    let answer = wire::encode_server(&wire::ServerMessage::ControlStatus(answer));
                    status.send_replace(Some(Bytes::from(answer)));
                }
                Err((code, why)) => return Closed::Error(code, why),
            },
            Message::Text(_) => {
                let why = "text message; the palpa protocol is binary only".into();
                return Closed::Error(ErrorCode::UnexpectedText, why);
            }
            Message::Ping(_) | Message::Pong(_) => {}
            Message::Close(_) => return Closed::Gone,
        }
    }
}

/// Checks size, decoding and token of one client message and forwards its command; a
/// `MoveProbe` target outside the probe workspace is clamped to it. Returns the answer
/// to send: a refusal for a wrong token or a disabled control (the command is dropped,
/// the connection stays open), the grant for a `CheckToken` with the right token.
fn handle_client_message(
    bytes: &[u8],
    shared: &Shared,
    log: &LogBudget,
) -> Result<Option<wire::ControlStatus>, (ErrorCode, String)> {
    let limit = shared.config.max_message_bytes;
    if bytes.len() > limit {
        let why = format!(
            "message of {} bytes exceeds the limit of {limit} bytes",
            bytes.len()
        );
        return Err((ErrorCode::TooLarge, why));
    }
    let wire::ClientMessage::Control(control) =
        wire::decode_client(bytes).map_err(|e| (ErrorCode::Malformed, e.to_string()))?;
    let refuse = |why: &str| {
        if let Admit::Log { suppressed } = shared.log.admit() {
            tracing::debug!(suppressed, "stream client stays read-only: {why}");
        }
        Ok(Some(wire::ControlStatus {
            granted: false,
            message: format!("{why}: this viewer is read-only"),
        }))
    };
    let Some((token, sender)) = &shared.control else {
        return refuse("control is disabled on this server");
    };
    if !constant_time_eq(control.token.as_bytes(), token.as_bytes()) {
        return refuse("wrong control token");
    }
    let command = match control.command {
        wire::ControlCommand::MoveProbe { position } => {
            if !position.iter().all(|x| x.is_finite()) {
                let why = format!("probe position {position:?} is not finite");
                return Err((ErrorCode::Malformed, why));
            }
            ProbeControl::MoveTo(shared.workspace.clamp(Vec3::from(position)))
        }
        wire::ControlCommand::ReleaseProbe => ProbeControl::Release,
        wire::ControlCommand::ResetTissue => ProbeControl::ResetTissue,
        wire::ControlCommand::CheckToken => {
            return Ok(Some(wire::ControlStatus {
                granted: true,
                message: "control granted".into(),
            }))
        }
    };
    if sender.try_send(command).is_err() {
        limited_warn!(
            log,
            &shared.log,
            "probe control channel full or closed; command dropped"
        );
    }
    Ok(None)
}

/// Token comparison whose time does not depend on where the first difference is.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn send_error(
    sink: &mut SplitSink<WebSocket, Message>,
    shared: &Shared,
    code: ErrorCode,
    message: String,
) {
    let error = wire::encode_server(&wire::ServerMessage::Error(wire::ErrorMessage {
        code,
        message,
    }));
    let stall = shared.config.send_stall_timeout.min(Duration::from_secs(1));
    let _ = tokio::time::timeout(stall, async {
        sink.send(Message::Binary(Bytes::from(error))).await?;
        sink.send(Message::Close(None)).await
    })
    .await;
}
