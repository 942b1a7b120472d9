//! `palpa serve`'s arguments: scene, devices, address, real-time mode and recording.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

use super::precompute::SceneArgs;
use crate::device::choice::DeviceChoice;
use crate::rt::RealtimeMode;

/// Arguments of `palpa serve`.
#[derive(Args, Debug, Clone, Default)]
pub struct ServeArgs {
    /// Scene and cache.
    #[command(flatten)]
    pub scene: SceneArgs,
    /// Device: `auto` (a connected HID device a profile matches, else the virtual
    /// stylus), `hid`, `hid:PROFILE.toml`, `sim` (the virtual stylus, moved from the
    /// viewer), `sim:still|circle|press` (scripted), `sim:press@X,Y` (the press moved
    /// by X, Y metres across the scene's up axis, as `indent --at`),
    /// `replay:FILE.csv`, `haply` or `haply:ws://HOST:PORT` (a Haply Inverse3 through
    /// its Inverse Service), `openhaptics` or `openhaptics:NAME` (a 3D Systems Touch
    /// through OpenHaptics), `dhd` or `dhd:INDEX` (Force Dimension, Novint Falcon);
    /// `palpa devices` says which are usable here. Default: the scene's `device.kind`.
    /// Repeat for several devices, each with its own haptic loop and probe, on one
    /// tissue.
    #[arg(long = "device", value_name = "DEVICE", value_parser = DeviceChoice::parse)]
    pub devices: Vec<DeviceChoice>,
    /// Address and port of the viewer and the stream: an IP address or a host name
    /// (`localhost:7878`), port 0 for any free port; 0.0.0.0 (or [::]) listens on every
    /// interface and prints the URLs other machines can open. Bound before the model is
    /// built. Default: the scene's `stream.bind` (127.0.0.1:7878).
    #[arg(long, value_name = "HOST:PORT", value_parser = bind_address)]
    pub bind: Option<SocketAddr>,
    /// Real-time haptic thread: `auto` (default; SCHED_FIFO and the thread's memory
    /// locked where the process may have them — root, CAP_SYS_NICE or RLIMIT_RTPRIO —
    /// else one warning and the normal scheduler; with it, the model thread runs
    /// SCHED_FIFO below it), `required` (refuse to start without SCHED_FIFO) or `off`; a
    /// bare `--realtime` means `auto`. Also `PALPA_REALTIME`.
    #[arg(
        long,
        value_name = "off|auto|required",
        env = "PALPA_REALTIME",
        num_args = 0..=1,
        default_value_t = RealtimeMode::Auto,
        default_missing_value = "auto",
        value_parser = str::parse::<RealtimeMode>
    )]
    pub realtime: RealtimeMode,
    /// Record the session into this directory (created, or empty; one holding a
    /// recording is refused unless `--force`): `ticks.csv` (one row per haptic tick:
    /// t,x,y,z,fx,fy,fz,depth,contact,safety — the probe, m, and the force commanded to
    /// the device after safety, N, both in the scene frame), `stream.palparec` (every
    /// message of the visual stream as a viewer receives it), `scene.toml` with copies of
    /// the files it names, `device.toml` (the device, its workspace mapping and limits)
    /// and `recording.toml`. Complete after Ctrl-C, ending on the zero force the device
    /// got last; readable up to about 60 ms before a crash. A failed write (a full disk)
    /// ends the recording at once, is logged, and makes serve exit with status 1.
    /// `palpa replay DIR` replays it; `palpa recording check DIR` says what is there.
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,
    /// Replace a recording already in the `--record` directory.
    #[arg(long, requires = "record")]
    pub force: bool,
}

/// `--bind`'s value: `IP:PORT`, `[IPv6]:PORT` or `HOST:PORT`, a host name resolved to
/// its first IPv4 address (browsers and `localhost` agree on 127.0.0.1), else its first.
pub fn bind_address(text: &str) -> Result<SocketAddr, String> {
    crate::scene::resolve_bind(text)
}
