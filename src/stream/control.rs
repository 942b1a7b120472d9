//! One client's control messages: size, decoding, the token (throttled per address,
//! [`super::token`]) and the command forwarded to the sim device. A wrong token is
//! answered read-only and the connection stays open, until it has been refused
//! [`REFUSALS_PER_CONNECTION`] times; the token is never logged.

use std::net::IpAddr;
use std::time::Instant;

use palpa_protocol as wire;
use wire::ErrorCode;

use super::log_limit::{limited_warn, Admit, LogBudget};
use super::snapshot::ProbeControl;
use super::state::Shared;
use super::token::{Verdict, REFUSALS_PER_CONNECTION};
use crate::Vec3;

/// What one connection has shown of the token.
#[derive(Debug)]
pub(crate) struct Credentials {
    /// The client's address (throttled together with every connection from it).
    pub address: IpAddr,
    /// Whether it presented the right token: its commands are then not held back.
    pub trusted: bool,
    /// Control attempts refused so far.
    pub refused: u32,
}

impl Credentials {
    pub(crate) fn new(address: IpAddr) -> Self {
        Self {
            address,
            trusted: false,
            refused: 0,
        }
    }
}

/// What a client message comes to.
pub(crate) enum Handled {
    /// Nothing to answer (a command forwarded).
    Quiet,
    /// The answer to send; `granted` tells whether the token was right.
    Answer(wire::ControlStatus),
}

/// Checks size, decoding and token of one client message and forwards its command; a
/// `MoveProbe` target outside the probe workspace is clamped to it. A refusal for a wrong
/// token or a disabled control drops the command and keeps the connection open, up to
/// [`REFUSALS_PER_CONNECTION`] refusals; a `CheckToken` with the right token is granted.
pub(crate) fn handle(
    bytes: &[u8],
    shared: &Shared,
    log: &LogBudget,
    credentials: &mut Credentials,
) -> Result<Handled, (ErrorCode, String)> {
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
    let Some((token, sender)) = &shared.control else {
        return refuse(
            shared,
            credentials,
            "control is disabled on this server".into(),
        );
    };
    let verdict = if credentials.trusted {
        if token.matches(&control.token) {
            Verdict::Granted
        } else {
            Verdict::Wrong(std::time::Duration::ZERO)
        }
    } else {
        shared
            .throttle
            .attempt(credentials.address, token, &control.token, Instant::now())
    };
    match verdict {
        Verdict::Granted => credentials.trusted = true,
        Verdict::Wrong(_) => return refuse(shared, credentials, "wrong control token".into()),
        Verdict::TooEarly(wait) => {
            let why = format!(
                "too many wrong control tokens from this address; the next attempt is \
                 checked in {:.1} s",
                wait.as_secs_f64()
            );
            return refuse(shared, credentials, why);
        }
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
            return Ok(Handled::Answer(wire::ControlStatus {
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
    Ok(Handled::Quiet)
}

/// The read-only answer, or the error that closes a connection refused too often.
fn refuse(
    shared: &Shared,
    credentials: &mut Credentials,
    why: String,
) -> Result<Handled, (ErrorCode, String)> {
    credentials.refused += 1;
    if let Admit::Log { suppressed } = shared.log.admit() {
        tracing::debug!(
            suppressed,
            "stream client from {} stays read-only: {why}",
            credentials.address
        );
    }
    if credentials.refused >= REFUSALS_PER_CONNECTION {
        return Err((
            ErrorCode::Unauthorized,
            format!(
                "{} control attempts refused ({why}); closing",
                credentials.refused
            ),
        ));
    }
    Ok(Handled::Answer(wire::ControlStatus {
        granted: false,
        message: format!("{why}: this viewer is read-only"),
    }))
}
