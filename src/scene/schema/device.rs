//! `[device]`: which device drives the probe and how its workspace maps into the scene.

use std::path::PathBuf;

use serde::Deserialize;

use super::check::{Check, MAX_COORDINATE};
use super::SceneError;
use crate::files::FileKind;

/// Which device drives the probe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceKind {
    /// A connected HID device a profile matches, else the viewer-driven virtual stylus.
    #[default]
    Auto,
    /// A HID device (the profile's, or the reference profile).
    Hid,
    /// The virtual stylus, moved by a viewer's control messages.
    Sim,
    /// A recorded trajectory (`device.trajectory`).
    Replay,
    /// A Haply Inverse3 through the Inverse Service at its default local address.
    Haply,
    /// A Touch, Touch X or Phantom through OpenHaptics HDAPI (the default device).
    Openhaptics,
    /// A Force Dimension device (or Falcon) through the DHD SDK (the first one).
    Dhd,
}

/// Device choice and workspace mapping.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DeviceSpec {
    /// Which device.
    pub kind: DeviceKind,
    /// HID device profile (TOML), relative to the scene file; absent: shipped profiles.
    pub profile: Option<PathBuf>,
    /// Trajectory CSV for `kind = "replay"`, relative to the scene file.
    pub trajectory: Option<PathBuf>,
    /// Device frame → scene frame; absent: `serve` fits a physical device's workspace
    /// to the scene, and virtual devices move in scene coordinates.
    pub workspace: Option<WorkspaceSpec>,
}

/// Device frame → scene frame: p_scene = R · (scale · p_device) + offset, with
/// R = Rz(rz) · Ry(ry) · Rx(rx); forces go back as f_device = Rᵀ f_scene.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkspaceSpec {
    /// Motion scale (scene metres per device metre), > 0.
    pub scale: f64,
    /// Scene position of the device origin (m).
    pub offset: [f64; 3],
    /// Rotation angles about x, y, z (degrees), applied in that order.
    pub rotation_deg: [f64; 3],
}

impl Default for WorkspaceSpec {
    fn default() -> Self {
        Self {
            scale: 1.0,
            offset: [0.0; 3],
            rotation_deg: [0.0; 3],
        }
    }
}

impl DeviceSpec {
    pub(super) fn validate(&self, c: &Check) -> Result<(), SceneError> {
        if let Some(p) = &self.profile {
            c.file_exists("device.profile", p, FileKind::Profile)?;
        }
        match (&self.trajectory, self.kind) {
            (Some(t), _) => c.file_exists("device.trajectory", t, FileKind::Trajectory)?,
            (None, DeviceKind::Replay) => {
                return Err(c.invalid(
                    "device.trajectory",
                    "kind = \"replay\" needs a trajectory file",
                ))
            }
            (None, _) => {}
        }
        if let Some(w) = &self.workspace {
            c.within("device.workspace.scale", w.scale, 1e-3, 1e3)?;
            c.bounded3("device.workspace.offset", &w.offset, MAX_COORDINATE)?;
            c.bounded3("device.workspace.rotation_deg", &w.rotation_deg, 360.0)?;
        }
        Ok(())
    }
}
