//! One client connection: it takes a seat ([`super::seats`]), its task sends hello, scene
//! init and the first frame, then stats, control-status messages, pings and whatever
//! frames the publisher's fan-out could not send at once; a reader checks control
//! messages ([`super::control`]). On a full server a client may still prove the control
//! token within [`TOKEN_GRACE`] and take the oldest anonymous viewer's seat; the token is
//! never logged.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket};
use bytes::Bytes;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use palpa_protocol as wire;
use tokio::sync::watch;
use wire::ErrorCode;

use super::access::{Peer, RequestOrigin};
use super::control::{self, Credentials, Handled};
use super::fan_out::{ClientLink, SendFailure};
use super::log_limit::{Admit, LogBudget};
use super::seats::{NoSeat, Seat};
use super::state::Shared;

/// How long a client that found no seat may take to prove the control token (the
/// browser viewer sends `CheckToken` as soon as the hello arrives).
pub const TOKEN_GRACE: Duration = Duration::from_secs(2);

/// Why a connection ends.
enum Closed {
    /// The peer went away or the socket failed; nothing more to send.
    Gone,
    /// The socket accepted nothing for this long; nothing more can be sent.
    Stalled(Duration),
    /// The server closes it and tells the client why.
    Error(ErrorCode, String),
}

/// Serves one upgraded WebSocket from `peer` (whose request came from `origin`) until it
/// closes.
pub(crate) async fn serve(
    socket: WebSocket,
    shared: Arc<Shared>,
    peer: Peer,
    origin: RequestOrigin,
) {
    let (mut sink, mut stream) = socket.split();
    let mut credentials = Credentials::new(peer.remote.ip());
    let log = LogBudget::new(shared.config.log_lines_per_second);
    let (mut seat, granted) = match shared.seats.take_viewer(peer.remote.ip(), origin.0.clone()) {
        Ok(seat) => (seat, None),
        Err(no_seat) => {
            let entry = prove_token(
                &mut sink,
                &mut stream,
                &shared,
                &log,
                &mut credentials,
                no_seat,
            );
            match entry.await {
                Ok(answer) => match shared.seats.take_controller(peer.remote.ip(), origin.0) {
                    Ok(seat) => (seat, Some(answer)),
                    Err(no_seat) => {
                        send_error(
                            &mut sink,
                            &shared,
                            ErrorCode::ServerFull,
                            no_seat.to_string(),
                        )
                        .await;
                        return;
                    }
                },
                Err(Some((code, why))) => {
                    send_error(&mut sink, &shared, code, why).await;
                    return;
                }
                Err(None) => return,
            }
        }
    };
    if credentials.trusted {
        seat.promote();
    }
    let link = Arc::new(ClientLink::new(sink));
    // The reader's answers to control messages, for the writer; only the newest counts.
    let (status_tx, status_rx) = watch::channel(granted);
    let hello_sent = credentials.trusted;
    let eviction = seat.eviction();
    let closed = tokio::select! {
        closed = write_loop(&link, &shared, status_rx, hello_sent) => closed,
        closed = read_loop(stream, &shared, &log, &status_tx, &mut credentials, &seat) => closed,
        () = eviction.wait() => Closed::Error(
            ErrorCode::ServerFull,
            "the holder of the control token needed a seat; the oldest read-only viewer \
             gives it up"
                .into(),
        ),
    };
    shared.audience.leave(&link);
    drop(seat);
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

/// A client that found no seat: on a server with control, it gets the hello and
/// [`TOKEN_GRACE`] to present the right token; `Ok` carries the grant to send. `Err`
/// carries the error to close with (`None`: the client went away).
async fn prove_token(
    sink: &mut SplitSink<WebSocket, Message>,
    stream: &mut SplitStream<WebSocket>,
    shared: &Shared,
    log: &LogBudget,
    credentials: &mut Credentials,
    no_seat: NoSeat,
) -> Result<Bytes, Option<(ErrorCode, String)>> {
    let full = |why: &str| Some((ErrorCode::ServerFull, format!("{no_seat}{why}")));
    if shared.control.is_none() {
        return Err(full(""));
    }
    let hello = Message::Binary(shared.hello.clone());
    let stall = shared.config.send_stall_timeout;
    match tokio::time::timeout(stall, sink.send(hello)).await {
        Ok(Ok(())) => {}
        _ => return Err(None),
    }
    let deadline = tokio::time::Instant::now() + TOKEN_GRACE;
    let only_token = "; only the holder of the control token may join now";
    loop {
        let message = match tokio::time::timeout_at(deadline, stream.next()).await {
            Err(_) => return Err(full(only_token)),
            Ok(None | Some(Err(_))) => return Err(None),
            Ok(Some(Ok(message))) => message,
        };
        match message {
            Message::Binary(bytes) => match control::handle(&bytes, shared, log, credentials) {
                Ok(Handled::Answer(status)) if status.granted => {
                    return Ok(status_message(status));
                }
                Ok(Handled::Quiet) if credentials.trusted => {
                    let granted = wire::ControlStatus {
                        granted: true,
                        message: "control granted".into(),
                    };
                    return Ok(status_message(granted));
                }
                Ok(Handled::Answer(status)) => {
                    return Err(full(&format!("; {}", status.message)));
                }
                Ok(Handled::Quiet) => return Err(full(only_token)),
                Err(error) => return Err(Some(error)),
            },
            Message::Ping(_) | Message::Pong(_) => {}
            Message::Text(_) | Message::Close(_) => return Err(None),
        }
    }
}

fn status_message(status: wire::ControlStatus) -> Bytes {
    Bytes::from(wire::encode_server(&wire::ServerMessage::ControlStatus(
        status,
    )))
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
    hello_sent: bool,
) -> Closed {
    let stall = shared.config.send_stall_timeout;
    let mut stats = shared.stats.clone();
    let mut safety = shared.safety.clone();
    let mut notice = shared.notice.clone();
    let mut shutdown = shared.shutdown.clone();
    {
        let mut outbox = link.outbox().await;
        if !hello_sent {
            outbox.queue(Message::Binary(shared.hello.clone()));
        }
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
    if status.borrow().is_some() {
        status.mark_changed();
    }
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
    credentials: &mut Credentials,
    seat: &Seat,
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
            Message::Binary(bytes) => {
                let was_trusted = credentials.trusted;
                let handled = control::handle(&bytes, shared, log, credentials);
                if credentials.trusted && !was_trusted {
                    seat.promote();
                }
                match handled {
                    Ok(Handled::Quiet) => {}
                    Ok(Handled::Answer(answer)) => {
                        status.send_replace(Some(status_message(answer)));
                    }
                    Err((code, why)) => return Closed::Error(code, why),
                }
            }
            Message::Text(_) => {
                let why = "text message; the palpa protocol is binary only".into();
                return Closed::Error(ErrorCode::UnexpectedText, why);
            }
            Message::Ping(_) | Message::Pong(_) => {}
            Message::Close(_) => return Closed::Gone,
        }
    }
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
