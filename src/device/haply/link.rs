//! The WebSocket client of the Inverse Service, in a thread of its own.
//!
//! The simulation channel is lock-step: the service answers every message with exactly
//! one state update. The link thread sends the newest force (taken from a wait-free
//! slot the haptic thread writes), waits for the answer, publishes the cursor through a
//! second slot and repeats, at most once per `period`. Any failure — refused
//! connection, no answer within [`REPLY_TIMEOUT`], a close, a message palpa cannot read
//! — ends the thread after it publishes [`Phase::Closed`]; the haptic thread sees it on
//! its next read. A link asked to stop sends a zero force as its last command.
//!
//! The force goes out as `set_cursor_force.vector` or `.values` ([`ForceFormat`]). Where
//! the service's version did not settle which, the link learns it from the replies: a
//! service that reports `current_cursor_force` yet shows none of [`LEARN_AFTER`]
//! commanded forces in a row gets the other format (once), and the switch is logged.
//!
//! Blocking `tungstenite` (the library under the async `tokio-tungstenite`) is used
//! because the thread does nothing but wait on this one socket.

use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tungstenite::client::IntoClientRequest;
use tungstenite::{Message, WebSocket};

use super::message::{self, ForceFormat, Inventory, Reading};
use crate::device::Orientation;
use crate::rt::{slot, SlotReader, SlotWriter};
use crate::Vec3;

/// How long the service may take to answer one message before the link counts it gone.
pub const REPLY_TIMEOUT: Duration = Duration::from_millis(100);
/// Longest part of a malformed message quoted in the log (characters).
const QUOTE_LEN: usize = 120;
/// Commanded forces of at least [`LEARN_FORCE`] in a row that the service reports as
/// not applied before the link tries the other format.
pub const LEARN_AFTER: u32 = 50;
/// Smallest commanded force (N) that the learning judges by.
const LEARN_FORCE: f64 = 0.2;
/// A reported force below this fraction of the commanded one counts as not applied.
const NOT_APPLIED: f64 = 0.05;

/// Where the link is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Connecting, or waiting for the inventory.
    Connecting,
    /// Exchanging commands and states.
    Connected,
    /// Ended (the thread's return value says why).
    Closed,
}

/// What the link thread last published.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkState {
    /// Where the link is.
    pub phase: Phase,
    /// Cursor position (m, Haply frame = palpa's device frame).
    pub position: Vec3,
    /// The grip's buttons (bits 0–2: a, b, c).
    pub buttons: u32,
    /// The grip's orientation (palpa's tool convention, Haply frame).
    pub orientation: Option<Orientation>,
    /// Number of states with a cursor position received on this link (1 = inventory).
    pub sequence: u64,
    /// When the newest state arrived (s since the link started).
    pub received: f64,
    /// The force format in use.
    pub format: ForceFormat,
    /// Whether the replies showed the format applies forces.
    pub format_confirmed: bool,
}

impl LinkState {
    fn new(format: ForceFormat) -> Self {
        Self {
            phase: Phase::Connecting,
            position: Vec3::zeros(),
            buttons: 0,
            orientation: None,
            sequence: 0,
            received: 0.0,
            format,
            format_confirmed: false,
        }
    }
}

/// How the link chooses the force format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FormatChoice {
    /// The format to start with.
    pub format: ForceFormat,
    /// Whether to switch (once) when the replies show no force applied.
    pub learn: bool,
}

/// A running link thread and its two slots.
pub struct Link {
    state: SlotReader<LinkState>,
    force: SlotWriter<Vec3>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<String>>,
    inventory: Arc<OnceLock<Inventory>>,
}

impl Link {
    /// Starts a thread that connects to `url` (a `ws://` address; connecting and the
    /// handshake time out after `connect_timeout`) and then exchanges one command per
    /// `period`, forces in the format `choice` gives.
    pub fn start(
        url: &str,
        connect_timeout: Duration,
        period: Duration,
        choice: FormatChoice,
    ) -> std::io::Result<Self> {
        let (writer, state) = slot(LinkState::new(choice.format));
        let (force, forces) = slot(Vec3::zeros());
        let stop = Arc::new(AtomicBool::new(false));
        let inventory = Arc::new(OnceLock::new());
        let mut client = Client {
            inventory: inventory.clone(),
            url: url.to_owned(),
            period,
            stop: stop.clone(),
            forces,
            writer,
            last: LinkState::new(choice.format),
            epoch: Instant::now(),
            learning: choice.learn.then_some(Learning::default()),
        };
        let thread = std::thread::Builder::new()
            .name("palpa-haply".into())
            .spawn(move || {
                let why = client.run(connect_timeout);
                client.publish(Phase::Closed, None);
                why
            })?;
        Ok(Self {
            state,
            force,
            stop,
            thread: Some(thread),
            inventory,
        })
    }

    /// What the inventory said about the device (its `config`), once connected.
    pub fn inventory(&self) -> Option<&Inventory> {
        self.inventory.get()
    }

    /// The newest published state (wait-free).
    pub fn state(&mut self) -> LinkState {
        self.state.read().0
    }

    /// Hands the link the force to send next (N, Haply frame; wait-free).
    pub fn command(&mut self, force: Vec3) {
        self.force.write(force);
    }

    /// Stops the thread (a connected link sends zero force last) and returns why it
    /// ended.
    pub fn finish(mut self) -> String {
        self.join()
    }

    fn join(&mut self) -> String {
        self.stop.store(true, Ordering::Release);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(why)) => why,
            Some(Err(_)) => "the link thread panicked".into(),
            None => "already stopped".into(),
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.join();
        }
    }
}

/// The link thread's side.
struct Client {
    url: String,
    period: Duration,
    stop: Arc<AtomicBool>,
    forces: SlotReader<Vec3>,
    writer: SlotWriter<LinkState>,
    last: LinkState,
    epoch: Instant,
    /// While the format is being learned from the replies.
    learning: Option<Learning>,
    /// The inventory's `config`, for the device.
    inventory: Arc<OnceLock<Inventory>>,
}

/// The replies seen while learning the force format.
#[derive(Clone, Copy, Debug, Default)]
struct Learning {
    /// Commanded forces in a row the service reported as not applied.
    unapplied: u32,
    /// Whether the other format was tried already.
    switched: bool,
}

impl Client {
    fn publish(&mut self, phase: Phase, reading: Option<&Reading>) {
        self.last.phase = phase;
        if let Some(p) = reading.and_then(|r| r.position) {
            self.last.position = p;
            self.last.sequence += 1;
            self.last.received = self.epoch.elapsed().as_secs_f64();
        }
        if let Some(r) = reading {
            self.last.buttons = r.buttons;
            self.last.orientation = r.orientation;
        }
        self.writer.write(self.last);
    }

    /// Judges the format by a reply to a command of `commanded` (N): a service that
    /// applies the force reports it; one that ignores the key reports none.
    fn learn(&mut self, commanded: Vec3, reading: &Reading) {
        let (Some(learning), Some(applied)) = (self.learning.as_mut(), reading.applied_force)
        else {
            return;
        };
        let wanted = commanded.norm();
        if wanted < LEARN_FORCE {
            return;
        }
        if applied.norm() >= NOT_APPLIED * wanted {
            self.last.format_confirmed = true;
            tracing::info!(
                "Haply Inverse Service at {}: set_cursor_force.{} applies forces",
                self.url,
                self.last.format.key()
            );
            self.learning = None;
            return;
        }
        learning.unapplied += 1;
        if learning.unapplied < LEARN_AFTER {
            return;
        }
        if learning.switched {
            tracing::warn!(
                "Haply Inverse Service at {}: it reports no force applied for \
                 set_cursor_force.vector nor .values; keeping .{}",
                self.url,
                self.last.format.key()
            );
            self.learning = None;
            return;
        }
        let from = self.last.format;
        self.last.format = from.other();
        *learning = Learning {
            unapplied: 0,
            switched: true,
        };
        tracing::warn!(
            "Haply Inverse Service at {}: {LEARN_AFTER} forces sent as set_cursor_force.{} \
             were reported as not applied; sending set_cursor_force.{} from now on",
            self.url,
            from.key(),
            self.last.format.key()
        );
    }

    /// Connects and exchanges commands until something fails or palpa stops; returns
    /// why it ended.
    fn run(&mut self, connect_timeout: Duration) -> String {
        let mut socket = match connect(&self.url, connect_timeout) {
            Ok(s) => s,
            Err(why) => return why,
        };
        let inventory = match self
            .receive_text(&mut socket)
            .and_then(|text| self.decode(&text, None))
        {
            Ok((r, config)) => {
                let _ = self.inventory.set(config);
                r
            }
            Err(why) => return why,
        };
        let id = inventory.device_id.clone();
        tracing::info!(
            "Haply Inverse Service at {}: driving Inverse3 {id}",
            self.url
        );
        self.publish(Phase::Connected, Some(&inventory));
        let mut handshake = true;
        let mut next = Instant::now();
        loop {
            let stopping = self.stop.load(Ordering::Acquire);
            let force = if stopping {
                Vec3::zeros()
            } else {
                self.forces.read().0
            };
            let command = message::force_command(&id, &force, self.last.format, handshake);
            handshake = false;
            if let Err(e) = socket.send(Message::text(command)) {
                return format!("cannot send to {}: {e}", self.url);
            }
            let reading = self
                .receive_text(&mut socket)
                .and_then(|text| self.decode(&text, Some(&id)))
                .map(|(r, _)| r);
            if stopping {
                let _ = socket.close(None);
                let _ = socket.flush();
                return "stopped by palpa after a zero-force command".into();
            }
            match reading {
                Ok(r) => {
                    self.learn(force, &r);
                    self.publish(Phase::Connected, Some(&r));
                }
                Err(why) => return why,
            }
            next += self.period;
            let now = Instant::now();
            match next.checked_duration_since(now) {
                Some(wait) => std::thread::sleep(wait),
                None => next = now,
            }
        }
    }

    /// Reads the service's next text message (pings and pongs are answered by
    /// tungstenite); a close, a timeout or a binary message is logged and returned.
    fn receive_text(&mut self, socket: &mut WebSocket<TcpStream>) -> Result<String, String> {
        loop {
            return match socket.read() {
                Ok(Message::Text(t)) => Ok(t.as_str().to_owned()),
                Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_)) => continue,
                Ok(Message::Binary(_)) => {
                    Err(self.log_bad("a binary message (the service speaks JSON text)"))
                }
                Ok(Message::Close(_)) => {
                    let why = format!("the Inverse Service at {} closed the connection", self.url);
                    tracing::warn!("{why}; force is off, palpa reconnects when it is back");
                    Err(why)
                }
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    let why = format!(
                        "the Inverse Service at {} did not answer within {} ms",
                        self.url,
                        REPLY_TIMEOUT.as_millis()
                    );
                    tracing::warn!("{why}; force is off, palpa reconnects");
                    Err(why)
                }
                Err(e) => {
                    let why = format!(
                        "connection to the Inverse Service at {} lost: {e}",
                        self.url
                    );
                    tracing::warn!("{why}; force is off, palpa reconnects when it is back");
                    Err(why)
                }
            };
        }
    }

    /// Reads one message of the service (the entry of `id`, or the first Inverse3); one
    /// palpa cannot use is logged, quoted.
    fn decode(&self, text: &str, id: Option<&str>) -> Result<(Reading, Inventory), String> {
        message::decode_with_inventory(text, id).map_err(|e| {
            let quoted: String = text.chars().take(QUOTE_LEN).collect();
            self.log_bad(&format!("a message palpa cannot use: {e}: `{quoted}`"))
        })
    }

    fn log_bad(&self, what: &str) -> String {
        let why = format!("the Inverse Service at {} sent {what}", self.url);
        tracing::error!("{why}; dropping the connection (force is off) and reconnecting");
        why
    }
}

/// Opens the WebSocket at `url` (`ws://HOST:PORT[/PATH]`), trying each address the
/// host resolves to; connect, handshake and every later read and write time out.
pub fn connect(url: &str, timeout: Duration) -> Result<WebSocket<TcpStream>, String> {
    let request = url
        .into_client_request()
        .map_err(|e| format!("`{url}` is not a WebSocket address: {e}"))?;
    let uri = request.uri();
    if uri.scheme_str() != Some("ws") {
        return Err(format!(
            "`{url}`: only ws:// addresses (the Inverse Service listens locally without TLS)"
        ));
    }
    let host = uri.host().unwrap_or("localhost").trim_matches(['[', ']']);
    let port = uri.port_u16().unwrap_or(80);
    let addresses = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}:{port}: {e}"))?;
    let mut last = format!("{host}:{port} resolves to no address");
    for address in addresses {
        let stream = match TcpStream::connect_timeout(&address, timeout) {
            Ok(s) => s,
            Err(e) => {
                last = format!("cannot connect to {address}: {e}");
                continue;
            }
        };
        let setup = stream
            .set_nodelay(true)
            .and(stream.set_read_timeout(Some(timeout)))
            .and(stream.set_write_timeout(Some(timeout)));
        if let Err(e) = setup {
            last = format!("cannot configure the socket to {address}: {e}");
            continue;
        }
        match tungstenite::client(request.clone(), stream) {
            Ok((socket, _)) => {
                let stream = socket.get_ref();
                stream
                    .set_read_timeout(Some(REPLY_TIMEOUT))
                    .map_err(|e| format!("cannot configure the socket to {address}: {e}"))?;
                return Ok(socket);
            }
            Err(e) => last = format!("WebSocket handshake with {url} failed: {e}"),
        }
    }
    Err(last)
}
