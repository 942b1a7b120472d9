//! The devices of a served scene: opened before the build (a wrong one fails before a
//! long precompute), then each mapped into the scene and given its haptic loop's
//! configuration.

use crate::app::scene::BuiltScene;
use crate::device::check;
use crate::device::choice::{DeviceChoice, OpenedDevice};
use crate::device::force_log::ForceLog;
use crate::device::mapped::{MappedDevice, Workspace};
use crate::device::{CalibrationRequest, HapticDevice};
use crate::haptic::runtime::RuntimeConfig;
use crate::recording::DeviceRecord;
use crate::rt::{RealtimeMode, RealtimePolicy};
use crate::Vec3;

use super::super::config::{attach_device, device_mapping, FORCE_CAP_MARGIN};
use super::Stylus;

/// The device as the haptic thread drives it: scene coordinates, force logged.
pub(super) type ServeDevice = ForceLog<MappedDevice<Box<dyn HapticDevice>>>;

/// One device as `serve` started it, for the user.
#[derive(Clone, Debug)]
pub struct DeviceSummary {
    /// How messages name it (`the device`, or `device 2 (NAME)` among several).
    pub label: String,
    /// What it is.
    pub description: String,
    /// How its workspace maps into the scene, and why.
    pub workspace: String,
    /// The force clamp on the hand and the cap on the tissue model.
    pub force: String,
}

/// A device ready for its haptic loop.
pub(super) struct ConfiguredDevice {
    pub device: ServeDevice,
    /// The virtual stylus viewers move, if this is it.
    pub stylus: Option<Stylus>,
    pub runtime: RuntimeConfig,
    pub summary: DeviceSummary,
    /// Asks an encoder device to take its calibration pose, if it has one.
    pub calibration: Option<CalibrationRequest>,
    /// Its HID profile's TOML, for a recorded session's copy.
    pub profile_toml: Option<String>,
    /// Its description for a recorded session's `device.toml`.
    pub record: DeviceRecord,
}

/// Opens every device and makes sure none holds a force from before; only the first
/// may be the viewer-moved virtual stylus.
pub(super) fn open_devices(
    choices: &[DeviceChoice],
    scene_profile: Option<&std::path::Path>,
) -> Result<Vec<OpenedDevice>, String> {
    let mut opened = Vec::with_capacity(choices.len());
    for (i, choice) in choices.iter().enumerate() {
        let mut device = choice.open(scene_profile)?;
        if i > 0 && device.stylus.is_some() {
            return Err(format!(
                "device {}: the viewer moves one virtual stylus, the first device's; give a \
                 second device that moves by itself (hid, a scripted sim:…, replay:…)",
                i + 1
            ));
        }
        device
            .device
            .zero_force()
            .map_err(|e| format!("device {}: {e}", device.device.name()))?;
        if let Some(warning) = check::unchecked_warning(&*device.device, &choice.spec()) {
            tracing::warn!("{warning}");
        }
        opened.push(device);
    }
    Ok(opened)
}

/// Maps `opened` (device `index` of `count`, its motion moved by `shift` (m) along the
/// scene's axes across its up axis) into the built scene and configures its haptic
/// loop; the idle virtual stylus rests at `idle` (m, scene frame).
pub(super) fn configure(
    built: &mut BuiltScene,
    (opened, shift): (OpenedDevice, Option<[f64; 2]>),
    (index, count): (usize, usize),
    realtime: RealtimeMode,
    idle: Vec3,
) -> ConfiguredDevice {
    let name = opened.device.name().to_string();
    let label = match count {
        1 => "the device".into(),
        _ => format!("device {} ({name})", index + 1),
    };
    let rating = opened.device.rating();
    // The viewer moves the virtual stylus in scene coordinates: no mapping to undo.
    let (mut map, mut how) = match opened.stylus {
        Some(_) => (
            Workspace::IDENTITY,
            "the viewer moves the stylus in scene coordinates".into(),
        ),
        None => device_mapping(built, &rating),
    };
    if let Some([x, y]) = shift {
        let axis = built.scene.view.up.vector().iamax();
        let across: Vec<usize> = (0..3).filter(|&a| a != axis).collect();
        map.offset[across[0]] += x;
        map.offset[across[1]] += y;
        how = format!("{how}; its motion moved by ({x}, {y}) m across the scene's up axis");
    }
    let haptic = attach_device(built, rating);
    let force = format!(
        "at most {:.3} N on the hand (the device is rated {:.3} N{}); the tissue model is \
         held below {:.3} N, so the model's force may exceed what the hand gets",
        haptic.limits.max_force,
        rating.max_force,
        if haptic.limits.max_force < rating.max_force {
            ", lowered by the scene's [safety] max_force"
        } else {
            ""
        },
        FORCE_CAP_MARGIN * haptic.limits.max_force
    );
    let calibration = opened.device.calibration_request();
    let stylus = opened.stylus.map(|input| Stylus::new(input, idle));
    let record = DeviceRecord::new(&opened.description, &name, &rating, (&map, &how), &haptic);
    ConfiguredDevice {
        device: ForceLog::new(MappedDevice::new(opened.device, map)),
        stylus,
        runtime: RuntimeConfig {
            haptic,
            realtime: RealtimePolicy {
                mode: realtime,
                core: None,
            },
            telemetry_capacity: 2 * built.scene.rates.haptic as usize,
            log_stats: false,
        },
        summary: DeviceSummary {
            label,
            description: opened.description,
            workspace: how,
            force,
        },
        calibration,
        profile_toml: opened.profile_toml,
        record,
    }
}
