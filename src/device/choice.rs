//! The one device-spec parser (`--device`, and the scene's `[device]` section through
//! it) and opening the device it names.

use std::path::{Path, PathBuf};

use super::haply::{HaplyDevice, DEFAULT_URL, OPEN_TIMEOUT};
use super::hid::{HidDevice, HidapiTransport};
use super::profile::{DeviceProfile, REFERENCE_PROFILE_TOML, SHIPPED_PROFILES};
use super::replay::{ReplayDevice, Trajectory};
use super::sdk::dhd::DhdDevice;
use super::sdk::openhaptics::OpenHapticsDevice;
use super::sim::{Script, SimDevice};
use super::{DeviceError, HapticDevice};
use crate::rt::SlotWriter;
use crate::Vec3;

/// What every `--device` takes, for error messages.
pub const DEVICE_SPECS: &str = "auto, hid, hid:PROFILE.toml, sim, sim:still, sim:circle, \
     sim:press, sim:press@X,Y, replay:FILE.csv, haply, haply:ws://HOST:PORT, openhaptics, \
     openhaptics:NAME, dhd or dhd:INDEX";

/// A scripted motion of the virtual stylus (device frame, m).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SimMotion {
    /// Still, 1 cm above the origin.
    Still,
    /// A 2 cm circle 3 mm below the origin, once every 4 s.
    Circle,
    /// Down 16 mm from 1 cm above the origin and back, once every 2 s.
    Press,
    /// [`SimMotion::Press`] moved by these two distances (m) along the scene's axes
    /// across its up axis (as `palpa indent --at`), so several presses can land apart.
    PressAt([f64; 2]),
}

impl SimMotion {
    /// The `--device` value's part after `sim:`.
    fn spec(self) -> String {
        match self {
            SimMotion::Still => "still".into(),
            SimMotion::Circle => "circle".into(),
            SimMotion::Press => "press".into(),
            SimMotion::PressAt([x, y]) => format!("press@{x},{y}"),
        }
    }

    fn script(self) -> Script {
        let above = Vec3::new(0.0, 0.0, 0.01);
        match self {
            SimMotion::Still => Script::Still(above),
            SimMotion::Circle => Script::Circle {
                center: Vec3::new(0.0, 0.0, -0.003),
                radius: 0.02,
                period: 4.0,
            },
            SimMotion::Press | SimMotion::PressAt(_) => Script::Press {
                top: above,
                depth: 0.016,
                period: 2.0,
            },
        }
    }
}

/// Which device drives the probe.
#[derive(Clone, Debug, PartialEq)]
pub enum DeviceChoice {
    /// A connected HID device a profile matches (the scene's, then the shipped ones),
    /// else the viewer-driven virtual stylus.
    Auto,
    /// A HID device matched by this profile (absent: the scene's, else the reference
    /// profile).
    Hid(Option<PathBuf>),
    /// The virtual stylus: moved by viewers' control messages, or following a script.
    Sim(Option<SimMotion>),
    /// A recorded trajectory (CSV, device frame).
    Replay(PathBuf),
    /// A Haply Inverse3 through the Inverse Service at this WebSocket address.
    Haply(String),
    /// A Touch, Touch X or Phantom through OpenHaptics HDAPI: the device configuration
    /// name given to `hdInitDevice` (absent: `HD_DEFAULT_DEVICE`).
    OpenHaptics(Option<String>),
    /// A Force Dimension device or Falcon through the DHD SDK: the device index, 0–127
    /// (absent: the first device found).
    Dhd(Option<u8>),
}

/// An opened device and what it is.
pub struct OpenedDevice {
    /// The device.
    pub device: Box<dyn HapticDevice>,
    /// The virtual stylus's input (positions in the device frame, m), when nothing
    /// else moves it.
    pub stylus: Option<SlotWriter<(Vec3, u32)>>,
    /// One line for the console.
    pub description: String,
    /// When the device's motion ends by itself (s; a replay's duration).
    pub motion_end: Option<f64>,
    /// The TOML of the HID profile that describes the device (a recorded session keeps
    /// a copy); `None` for devices without a profile.
    pub profile_toml: Option<String>,
    /// The HID profile that describes the device, and where it came from (a file, or a
    /// shipped profile's name), for `devices check` and its fixes.
    pub profile: Option<(DeviceProfile, String)>,
}

impl DeviceChoice {
    /// The `--device` value that names this choice.
    pub fn spec(&self) -> String {
        match self {
            DeviceChoice::Auto => "auto".into(),
            DeviceChoice::Hid(None) => "hid".into(),
            DeviceChoice::Hid(Some(p)) => format!("hid:{}", p.display()),
            DeviceChoice::Sim(None) => "sim".into(),
            DeviceChoice::Sim(Some(m)) => format!("sim:{}", m.spec()),
            DeviceChoice::Replay(p) => format!("replay:{}", p.display()),
            DeviceChoice::Haply(url) if url == DEFAULT_URL => "haply".into(),
            DeviceChoice::Haply(url) => format!("haply:{url}"),
            DeviceChoice::OpenHaptics(None) => "openhaptics".into(),
            DeviceChoice::OpenHaptics(Some(n)) => format!("openhaptics:{n}"),
            DeviceChoice::Dhd(None) => "dhd".into(),
            DeviceChoice::Dhd(Some(i)) => format!("dhd:{i}"),
        }
    }

    /// Parses a `--device` value ([`DEVICE_SPECS`]); an unknown one is named.
    pub fn parse(spec: &str) -> Result<Self, String> {
        let (kind, arg) = spec.split_once(':').unwrap_or((spec, ""));
        match (kind, arg) {
            ("auto", "") if !spec.ends_with(':') => Ok(Self::Auto),
            ("hid", "") if !spec.ends_with(':') => Ok(Self::Hid(None)),
            ("hid", profile) if !profile.is_empty() => Ok(Self::Hid(Some(profile.into()))),
            ("sim", "") if !spec.ends_with(':') => Ok(Self::Sim(None)),
            ("sim", "still") => Ok(Self::Sim(Some(SimMotion::Still))),
            ("sim", "circle") => Ok(Self::Sim(Some(SimMotion::Circle))),
            ("sim", "press") => Ok(Self::Sim(Some(SimMotion::Press))),
            ("sim", at) if at.starts_with("press@") => press_at(spec, at),
            ("replay", file) if !file.is_empty() => Ok(Self::Replay(file.into())),
            ("haply", "") if !spec.ends_with(':') => Ok(Self::Haply(DEFAULT_URL.into())),
            ("haply", url) if url.starts_with("ws://") => Ok(Self::Haply(url.into())),
            ("openhaptics", "") if !spec.ends_with(':') => Ok(Self::OpenHaptics(None)),
            ("openhaptics", name) if !name.is_empty() => Ok(Self::OpenHaptics(Some(name.into()))),
            ("dhd", "") if !spec.ends_with(':') => Ok(Self::Dhd(None)),
            ("dhd", index) if index.bytes().all(|b| b.is_ascii_digit()) => match index.parse() {
                Ok(i @ 0..=127) => Ok(Self::Dhd(Some(i))),
                _ => Err(format!("device `{spec}`: the DHD device index is 0 to 127")),
            },
            _ => Err(format!("unknown device `{spec}`: use {DEVICE_SPECS}")),
        }
    }

    /// How far (m) the device's motion is moved in the scene, along the scene's two axes
    /// across its up axis (`sim:press@X,Y`).
    pub fn scene_shift(&self) -> Option<[f64; 2]> {
        match self {
            DeviceChoice::Sim(Some(SimMotion::PressAt(at))) => Some(*at),
            _ => None,
        }
    }

    /// Opens the device. `scene_profile` is the profile a scene names for HID devices
    /// (`hid` and `auto` try it before the shipped reference profile).
    pub fn open(&self, scene_profile: Option<&Path>) -> Result<OpenedDevice, String> {
        let load = |p: &Path| -> Result<(DeviceProfile, String, String), String> {
            let profile = DeviceProfile::load(p).map_err(|e| e.to_string())?;
            let toml = crate::files::read_text(p, crate::files::FileKind::Profile)
                .map_err(|e| e.to_string())?;
            Ok((profile, toml, p.display().to_string()))
        };
        let shipped = |file: &str| format!("the shipped profiles/{file}");
        match self {
            DeviceChoice::Sim(None) => Ok(virtual_stylus("device sim")),
            DeviceChoice::Sim(Some(motion)) => Ok(OpenedDevice {
                device: Box::new(SimDevice::new(motion.script())),
                stylus: None,
                description: match motion {
                    SimMotion::PressAt([x, y]) => {
                        format!("virtual stylus, scripted: press at ({x}, {y}) m in the scene")
                    }
                    m => format!("virtual stylus, scripted: {}", m.spec()),
                },
                motion_end: None,
                profile_toml: None,
                profile: None,
            }),
            DeviceChoice::Replay(path) => {
                let trajectory = Trajectory::load(path).map_err(|e| e.to_string())?;
                let end = trajectory.duration();
                Ok(OpenedDevice {
                    device: Box::new(ReplayDevice::new(trajectory)),
                    stylus: None,
                    description: format!(
                        "replay of {} ({end:.1} s, then holds its last sample)",
                        path.display()
                    ),
                    motion_end: Some(end),
                    profile_toml: None,
                    profile: None,
                })
            }
            DeviceChoice::Haply(url) => {
                let device = HaplyDevice::open(url, OPEN_TIMEOUT).map_err(|e| e.to_string())?;
                Ok(OpenedDevice {
                    description: format!(
                        "Haply Inverse3 through the Inverse Service at {url} ({})",
                        device.setup()
                    ),
                    device: Box::new(device),
                    stylus: None,
                    motion_end: None,
                    profile_toml: None,
                    profile: None,
                })
            }
            DeviceChoice::Hid(path) => {
                let (profile, toml, source) = match path.as_deref().or(scene_profile) {
                    Some(p) => load(p)?,
                    None => (
                        DeviceProfile::reference(),
                        REFERENCE_PROFILE_TOML.into(),
                        shipped(SHIPPED_PROFILES[0].0),
                    ),
                };
                open_hid(&profile, &toml, &source)
                    .map_err(|e| format!("HID device with profile `{}`: {e}", profile.name))
            }
            DeviceChoice::OpenHaptics(config) => {
                let device = OpenHapticsDevice::open(config.as_deref())?;
                Ok(sdk_device(
                    Box::new(device),
                    "its HDAPI scheduler paces the haptic loop",
                ))
            }
            DeviceChoice::Dhd(index) => {
                let device = DhdDevice::open(*index)?;
                Ok(sdk_device(Box::new(device), "polled by the haptic thread"))
            }
            DeviceChoice::Auto => {
                let mut profiles: Vec<(DeviceProfile, String, String)> = DeviceProfile::shipped()
                    .into_iter()
                    .zip(
                        SHIPPED_PROFILES
                            .iter()
                            .map(|(file, toml)| (toml.to_string(), shipped(file))),
                    )
                    .map(|(p, (toml, source))| (p, toml, source))
                    .collect();
                if let Some(p) = scene_profile {
                    profiles.insert(0, load(p)?);
                }
                let mut misses = Vec::new();
                for (profile, toml, source) in &profiles {
                    match open_hid(profile, toml, source) {
                        Ok(opened) => return Ok(opened),
                        Err(e) => misses.push(format!("{}: {e}", profile.name)),
                    }
                }
                tracing::debug!("no HID device: {}", misses.join("; "));
                Ok(virtual_stylus("no HID device matches a profile"))
            }
        }
    }
}

fn open_hid(
    profile: &DeviceProfile,
    toml: &str,
    source: &str,
) -> Result<OpenedDevice, DeviceError> {
    let transport = HidapiTransport::open(profile)?;
    let device = HidDevice::new(transport, profile.clone());
    let description = format!("HID device `{}` (profile {})", device.name(), profile.name);
    Ok(OpenedDevice {
        device: Box::new(device),
        stylus: None,
        description,
        motion_end: None,
        profile_toml: Some(toml.into()),
        profile: Some((profile.clone(), source.to_owned())),
    })
}

/// A vendor SDK device, described with its rating and how it is paced.
fn sdk_device(device: Box<dyn HapticDevice>, pacing: &str) -> OpenedDevice {
    let r = device.rating();
    let workspace = r.workspace.map_or(String::new(), |w| {
        let (c, h) = (w.centre * 1e3, w.half_extent * 1e3);
        format!(
            ", workspace centre ({:.1}, {:.1}, {:.1}) mm ± ({:.1}, {:.1}, {:.1}) mm",
            c.x, c.y, c.z, h.x, h.y, h.z
        )
    });
    OpenedDevice {
        description: format!(
            "{}: {} N, {} N/m{workspace}; {pacing}",
            device.name(),
            r.max_force,
            r.max_stiffness
        ),
        device,
        stylus: None,
        motion_end: None,
        profile_toml: None,
        profile: None,
    }
}

/// `sim:press@X,Y` (`at` = `press@X,Y`): two finite distances (m) within a metre of the
/// scene's origin.
fn press_at(spec: &str, at: &str) -> Result<DeviceChoice, String> {
    let at = at.strip_prefix("press@").unwrap_or(at);
    let bad = || {
        format!(
            "device `{spec}`: sim:press@X,Y takes two distances in metres, e.g. \
             sim:press@0.02,-0.01"
        )
    };
    let (x, y) = at.split_once(',').ok_or_else(bad)?;
    let parse = |v: &str| v.trim().parse::<f64>().ok().filter(|v| v.abs() <= 1.0);
    match (parse(x), parse(y)) {
        (Some(x), Some(y)) => Ok(DeviceChoice::Sim(Some(SimMotion::PressAt([x, y])))),
        _ => Err(bad()),
    }
}

fn virtual_stylus(why: &str) -> OpenedDevice {
    let (device, input) = SimDevice::external(Vec3::zeros());
    OpenedDevice {
        device: Box::new(device),
        stylus: Some(input),
        description: format!("virtual stylus, moved from the viewer ({why})"),
        motion_end: None,
        profile_toml: None,
        profile: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_choices_parse_and_unknown_ones_are_named() {
        assert_eq!(DeviceChoice::parse("auto"), Ok(DeviceChoice::Auto));
        assert_eq!(DeviceChoice::parse("sim"), Ok(DeviceChoice::Sim(None)));
        assert_eq!(
            DeviceChoice::parse("sim:circle"),
            Ok(DeviceChoice::Sim(Some(SimMotion::Circle)))
        );
        assert_eq!(DeviceChoice::parse("hid"), Ok(DeviceChoice::Hid(None)));
        assert_eq!(
            DeviceChoice::parse("hid:my.toml"),
            Ok(DeviceChoice::Hid(Some("my.toml".into())))
        );
        assert_eq!(
            DeviceChoice::parse("replay:a.csv"),
            Ok(DeviceChoice::Replay("a.csv".into()))
        );
        assert_eq!(
            DeviceChoice::parse("haply"),
            Ok(DeviceChoice::Haply("ws://localhost:10001".into()))
        );
        assert_eq!(
            DeviceChoice::parse("haply:ws://127.0.0.1:4321"),
            Ok(DeviceChoice::Haply("ws://127.0.0.1:4321".into()))
        );
        assert_eq!(
            DeviceChoice::parse("openhaptics"),
            Ok(DeviceChoice::OpenHaptics(None))
        );
        assert_eq!(
            DeviceChoice::parse("openhaptics:Left Touch"),
            Ok(DeviceChoice::OpenHaptics(Some("Left Touch".into())))
        );
        assert_eq!(DeviceChoice::parse("dhd"), Ok(DeviceChoice::Dhd(None)));
        assert_eq!(DeviceChoice::parse("dhd:0"), Ok(DeviceChoice::Dhd(Some(0))));
        assert_eq!(
            DeviceChoice::parse("dhd:127"),
            Ok(DeviceChoice::Dhd(Some(127)))
        );
        for bad in ["dhd:128", "dhd:99999999999999999999"] {
            let e = DeviceChoice::parse(bad).unwrap_err();
            assert!(
                e.contains(&format!("`{bad}`")) && e.contains("0 to 127"),
                "{e}"
            );
        }
        for bad in [
            "",
            "replay",
            "replay:",
            "sim:",
            "hid:",
            "auto:",
            "sim:wobble",
            "sim:press@",
            "sim:press@0.02",
            "sim:press@x,0",
            "sim:press@NaN,0",
            "sim:press@3,0",
            "joystick",
            "haply:",
            "haply:localhost:10001",
            "haply:http://localhost:10001",
            "openhaptics:",
            "dhd:",
            "dhd:-1",
            "dhd:one",
            "dhd: 1",
        ] {
            let e = DeviceChoice::parse(bad).unwrap_err();
            assert!(e.contains(&format!("`{bad}`")), "{e}");
        }
    }

    #[test]
    fn a_choice_s_spec_parses_back_to_the_same_choice() {
        // `devices check` prints the spec in its advice and records it: it must name the
        // same device when typed back.
        for spec in [
            "auto",
            "hid",
            "hid:profiles/woodenhaptics-2017.toml",
            "sim",
            "sim:still",
            "sim:circle",
            "sim:press",
            "sim:press@0.02,-0.01",
            "replay:a.csv",
            "haply",
            "haply:ws://127.0.0.1:4321",
            "openhaptics",
            "openhaptics:Left Touch",
            "dhd",
            "dhd:3",
        ] {
            let choice = DeviceChoice::parse(spec).unwrap();
            assert_eq!(choice.spec(), spec);
            assert_eq!(DeviceChoice::parse(&choice.spec()), Ok(choice));
        }
    }

    #[test]
    fn a_scripted_stylus_moves_and_a_missing_replay_is_named() {
        let mut opened = DeviceChoice::Sim(Some(SimMotion::Press))
            .open(None)
            .unwrap();
        assert!(opened.stylus.is_none());
        let top = opened.device.read(0.0).unwrap().position;
        let bottom = opened.device.read(1.0).unwrap().position;
        assert!((top.z - 0.01).abs() < 1e-12 && (bottom.z + 0.006).abs() < 1e-12);
        let e = DeviceChoice::Replay("no/such.csv".into())
            .open(None)
            .err()
            .unwrap();
        assert!(e.contains("no/such.csv"), "{e}");
    }
}
