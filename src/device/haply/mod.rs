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
//!
//! The force key (`vector` or `values`, [`message::ForceFormat`]) follows the service's
//! version ([`version`]); a service whose version is unknown gets the documented
//! `vector` and the link learns from its replies. A Verse Grip's buttons and orientation
//! become the sample's buttons and orientation.

pub mod link;
pub mod message;
pub mod version;

use std::time::{Duration, Instant};

use self::link::{FormatChoice, Link, LinkState, Phase};
use self::message::{ForceFormat, Inventory};
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
/// How long opening waits for the service's `GET /version`.
const VERSION_TIMEOUT: Duration = Duration::from_secs(1);
/// The workspace box's centre assumes Haply's default workspace.
const ASSUMED_PRESET: &str = "defaults";

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
    /// What was learned at opening: the version, the format and why, preset and mount.
    setup: String,
    identity: String,
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
    /// to list an Inverse3; the error says what was tried. The service's version
    /// decides the force format ([`version::format_for`]).
    pub fn open(url: &str, timeout: Duration) -> Result<Self, DeviceError> {
        let fail = |why: String| {
            DeviceError::Open(format!(
                "Haply Inverse Service at {url}: {why} (is the Haply Hub or \
                 haply-inverse-service running?)"
            ))
        };
        let version = version::query(url, VERSION_TIMEOUT);
        let (choice, how) = match &version {
            Ok(v) => match version::format_for(v) {
                Some(format) => (
                    FormatChoice {
                        format,
                        learn: false,
                    },
                    format!("service {v}: forces as set_cursor_force.{}", format.key()),
                ),
                None => unknown_version(&format!("service version `{v}` not understood")),
            },
            Err(why) => unknown_version(&format!("no version ({why})")),
        };
        let mut link = Link::start(url, timeout, PERIOD, choice)
            .map_err(|e| fail(format!("no thread: {e}")))?;
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
        let inventory = link.inventory().cloned().unwrap_or_default();
        let last = link.state();
        let identity = format!(
            "haply:{}",
            inventory.uuid.clone().unwrap_or_else(|| "no-uuid".into())
        );
        Ok(Self {
            url: url.to_owned(),
            name: format!("haply:{url}"),
            setup: format!("{how}; {}", workspace_note(&inventory)),
            identity,
            link,
            pending: None,
            earlier_states: 0,
            last,
            connected: true,
        })
    }

    /// What opening learned: the service's version and the force format (and why), and
    /// the preset and mount the workspace box assumes, for the console.
    pub fn setup(&self) -> &str {
        &self.setup
    }

    /// The force format in use now (the link may have learned another since opening).
    pub fn format(&mut self) -> ForceFormat {
        self.link.state().format
    }

    fn sample(&self, s: &LinkState) -> DeviceSample {
        DeviceSample {
            position: s.position,
            buttons: s.buttons,
            device_time: s.received,
            sequence: self.earlier_states + s.sequence,
            orientation: s.orientation,
            gripper: None,
        }
    }
}

/// The documented `vector`, learned from the replies, when the version does not say.
fn unknown_version(why: &str) -> (FormatChoice, String) {
    (
        FormatChoice {
            format: ForceFormat::Vector,
            learn: true,
        },
        format!(
            "{why}: forces as set_cursor_force.vector (the 3.5 documentation), switching to \
             .values if the service reports them not applied"
        ),
    )
}

/// The preset and mount the service reports, or the assumption palpa makes.
fn workspace_note(inventory: &Inventory) -> String {
    let box_note = "the workspace box is centred where the default workspace puts the cursor";
    match (&inventory.preset, &inventory.mount) {
        (None, None) => format!(
            "the service reports no preset or mount (before 3.5): palpa assumes the \
             `{ASSUMED_PRESET}` preset and no mount; {box_note}"
        ),
        (preset, mount) => {
            let preset = preset.as_deref().unwrap_or("not reported");
            let mount_text = match mount {
                None => "not reported".to_owned(),
                Some(m) if m.is_identity() => "none".to_owned(),
                Some(m) => format!(
                    "at ({}, {}, {}) m, rotated (w {}), scaled ({}, {}, {})",
                    m.position.x,
                    m.position.y,
                    m.position.z,
                    m.rotation.w,
                    m.scale.x,
                    m.scale.y,
                    m.scale.z
                ),
            };
            let assumed = preset == ASSUMED_PRESET && mount.is_none_or(|m| m.is_identity());
            format!(
                "preset `{preset}`, mount {mount_text}; {}",
                if assumed {
                    box_note.to_owned()
                } else {
                    format!(
                        "warning: palpa's workspace box assumes the `{ASSUMED_PRESET}` preset \
                         and no mount: give the scene a [device.workspace]"
                    )
                }
            )
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
            // The format the last link used (and learned, if it did).
            let choice = FormatChoice {
                format: self.last.format,
                learn: !self.last.format_confirmed,
            };
            self.pending = Some(
                Link::start(&self.url, RECONNECT_TIMEOUT, PERIOD, choice)
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

    fn identity(&self) -> Option<String> {
        Some(self.identity.clone())
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
