//! Haply Inverse3 through Haply's local Inverse Service (`--device haply[:URL]`).
//!
//! The service speaks JSON over a WebSocket (the simulation channel, default
//! `ws://localhost:10001`; <https://docs.haply.co/inverseSDK/service/api/simulation>).
//! [`link`] runs the client in its own thread; the haptic thread only touches two
//! wait-free slots: [`HapticDevice::read`] takes the newest cursor state,
//! [`HapticDevice::write_force`] leaves the newest force for the link to send.
//!
//! Frame: palpa asks for Haply's own basis (`"XYZ"`: +X right, +Y forward, +Z up,
//! right-handed, metres and newtons), which is palpa's z-up device frame as it is, so
//! positions and forces pass through unchanged.
//!
//! Sequence numbers: a sample's `sequence` counts the states received, across
//! reconnections, so a link that stops delivering leaves it unchanged and the haptic
//! loop fades the force as for any stale device.

pub mod link;
pub mod message;

use std::time::{Duration, Instant};

use self::link::{Link, LinkState, Phase};
use super::{DeviceError, DeviceRating, DeviceSample, DeviceWorkspace, HapticDevice};
use crate::Vec3;

/// The simulation channel's documented default address.
pub const DEFAULT_URL: &str = "ws://localhost:10001";
/// How long opening waits for the service's inventory.
pub const OPEN_TIMEOUT: Duration = Duration::from_secs(2);
/// Time allowed for one connection attempt when reconnecting (TCP and handshake).
const RECONNECT_TIMEOUT: Duration = Duration::from_millis(200);
/// Shortest time between two commands: the haptic loop's 1 kHz (the service answers
/// each command with one state, so sending faster would only repeat forces).
const PERIOD: Duration = Duration::from_millis(1);

/// The Inverse3's rating. Figures from Haply's published Inverse3 specification (as
/// reproduced on a reseller's product page; Haply's own page was not reachable from
/// here): maximum force 4 N over 80 % of the workspace (10 N peak, not used: palpa
/// renders continuous contact), stiffness 1 N/mm, workspace 460 mm wide (x) × 230 mm
/// deep (y) × 510 mm high (z). The box is 80 % of that workspace (where the 4 N holds)
/// around the cursor position of the service's documented inventory example,
/// (0, −0.12, 0.15) m — an assumption, never checked on a device.
pub const INVERSE3_RATING: DeviceRating = DeviceRating {
    max_force: 4.0,
    max_stiffness: 1000.0,
    workspace: Some(DeviceWorkspace {
        centre: Vec3::new(0.0, -0.12, 0.15),
        half_extent: Vec3::new(0.8 * 0.230, 0.8 * 0.115, 0.8 * 0.255),
    }),
};

/// An Inverse3 driven through the Inverse Service.
pub struct HaplyDevice {
    url: String,
    name: String,
    link: Link,
    /// A connection being made by [`HapticDevice::reconnect`].
    pending: Option<Link>,
    /// States received on links before the current one.
    earlier_states: u64,
    /// The newest state read on the current link.
    last: LinkState,
    connected: bool,
}

impl HaplyDevice {
    /// Connects to the service at `url` and waits (up to `timeout`) for its inventory
    /// to list an Inverse3; the error says what was tried.
    pub fn open(url: &str, timeout: Duration) -> Result<Self, DeviceError> {
        let fail = |why: String| {
            DeviceError::Open(format!(
                "Haply Inverse Service at {url}: {why} (is the Haply Hub or \
                 haply-inverse-service running?)"
            ))
        };
        let mut link =
            Link::start(url, timeout, PERIOD).map_err(|e| fail(format!("no thread: {e}")))?;
        let start = Instant::now();
        loop {
            match link.state().phase {
                Phase::Connected => break,
                Phase::Closed => return Err(fail(link.finish())),
                Phase::Connecting if start.elapsed() > timeout + link::REPLY_TIMEOUT => {
                    drop(link);
                    return Err(fail(format!("no inventory within {timeout:?}")));
                }
                Phase::Connecting => std::thread::sleep(Duration::from_millis(1)),
            }
        }
        let last = link.state();
        Ok(Self {
            url: url.to_owned(),
            name: format!("haply:{url}"),
            link,
            pending: None,
            earlier_states: 0,
            last,
            connected: true,
        })
    }

    fn sample(&self, s: &LinkState) -> DeviceSample {
        DeviceSample {
            position: s.position,
            buttons: s.buttons,
            device_time: s.received,
            sequence: self.earlier_states + s.sequence,
        }
    }
}

impl HapticDevice for HaplyDevice {
    fn read(&mut self, _now: f64) -> Result<DeviceSample, DeviceError> {
        let s = self.link.state();
        self.last = s;
        if s.phase == Phase::Connected {
            return Ok(self.sample(&s));
        }
        // Allocates once per disconnect (the message), never while connected.
        self.connected = false;
        Err(DeviceError::Disconnected(format!(
            "the link to the Haply Inverse Service at {} ended",
            self.url
        )))
    }

    fn write_force(&mut self, force: Vec3) -> Result<(), DeviceError> {
        if !self.connected {
            return Err(DeviceError::Disconnected(format!(
                "the link to the Haply Inverse Service at {} ended",
                self.url
            )));
        }
        self.link.command(force);
        Ok(())
    }

    fn zero_force(&mut self) -> Result<(), DeviceError> {
        // Always reaches the link: a stopping link sends zero last in any case.
        self.link.command(Vec3::zeros());
        Ok(())
    }

    /// Starts a new connection in the background and reports `true` once it has the
    /// inventory; the new link's first command is zero force (fresh slots).
    fn reconnect(&mut self) -> Result<bool, DeviceError> {
        let Some(pending) = self.pending.as_mut() else {
            self.pending = Some(
                Link::start(&self.url, RECONNECT_TIMEOUT, PERIOD)
                    .map_err(|e| DeviceError::Open(format!("no link thread: {e}")))?,
            );
            return Ok(false);
        };
        match pending.state().phase {
            Phase::Connecting => Ok(false),
            Phase::Closed => {
                let why = self.pending.take().map(Link::finish).unwrap_or_default();
                tracing::debug!("Haply Inverse Service not back yet: {why}");
                Ok(false)
            }
            Phase::Connected => {
                let fresh = self.pending.take().expect("a pending link");
                // The old link has ended; dropping it joins its thread at once.
                drop(std::mem::replace(&mut self.link, fresh));
                self.earlier_states += self.last.sequence;
                self.last = self.link.state();
                self.connected = true;
                Ok(true)
            }
        }
    }

    fn rating(&self) -> DeviceRating {
        INVERSE3_RATING
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// Whether an Inverse Service answers at `url` within `timeout`: `Ok(the Inverse3 it
/// lists)`, else what was tried.
pub fn probe(url: &str, timeout: Duration) -> Result<String, String> {
    let mut socket = link::connect(url, timeout)
        .map_err(|e| format!("no Inverse Service answered at {url} within {timeout:?}: {e}"))?;
    let text = match socket.read() {
        Ok(tungstenite::Message::Text(t)) => t,
        Ok(other) => return Err(format!("{url} sent {other:?} instead of the inventory")),
        Err(e) => return Err(format!("{url} sent no inventory: {e}")),
    };
    let _ = socket.close(None);
    let _ = socket.flush();
    message::decode(&text, None)
        .map(|r| format!("Inverse Service at {url} lists Inverse3 {}", r.device_id))
        .map_err(|e| format!("Inverse Service at {url}: {e}"))
}
