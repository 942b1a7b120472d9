//! `device.toml` of a recording: the device as the session drove it — its rating, the
//! workspace mapping from its frame to the scene's, the safety limits the hand got and
//! the haptic loop's settings — readable by a person and read back by `palpa replay`.

use serde::{Deserialize, Serialize};

use crate::device::mapped::Workspace;
use crate::device::{DeviceRating, DeviceWorkspace};
use crate::haptic::{HapticConfig, SafetyLimits};
use crate::Vec3;

/// One recorded device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceRecord {
    /// The device as the console described it.
    pub description: String,
    /// The device's short name.
    pub name: String,
    /// What the device is rated for.
    pub rating: RatingRecord,
    /// Device frame → scene frame.
    pub workspace: WorkspaceRecord,
    /// The safety limits applied to the force on the hand.
    pub safety: SafetyRecord,
    /// The haptic loop's settings.
    pub haptic: HapticRecord,
    /// Wall-clock time of the haptic loop's t = 0 (s since the Unix epoch), to line
    /// `ticks.csv` up with the stream's receive times; absent for lock-step recordings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_start_unix_s: Option<f64>,
    /// The copy of the device's HID profile in the recording, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

/// A device's rating.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RatingRecord {
    /// Largest continuous force (N).
    pub max_force_n: f64,
    /// Largest stiffness rendered stably (N/m).
    pub max_stiffness_n_per_m: f64,
    /// Centre of the box the stylus reaches (m, device frame); virtual devices have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reach_centre_m: Option<[f64; 3]>,
    /// Half the size of that box (m, device frame).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reach_half_extent_m: Option<[f64; 3]>,
}

/// p_scene = rotation · (scale · p_device) + offset; forces go back as Rᵀ f.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceRecord {
    /// How the mapping was chosen.
    pub how: String,
    /// Scene metres per device metre.
    pub scale: f64,
    /// Scene position of the device origin (m).
    pub offset_m: [f64; 3],
    /// Rotation device → scene, by rows.
    pub rotation: [[f64; 3]; 3],
}

/// The safety limits (see `haptic::SafetyLimits`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SafetyRecord {
    /// Largest force on the hand (N).
    pub max_force_n: f64,
    /// Largest force change (N/s).
    pub max_force_rate_n_per_s: f64,
    /// Start-up ramp (s).
    pub ramp_time_s: f64,
    /// Cap on the extrapolated stiffness (N/m).
    pub max_stiffness_n_per_m: f64,
    /// A device sample older than this fades the force (s).
    pub stale_sample_timeout_s: f64,
    /// A force model older than this fades the force (s).
    pub model_timeout_s: f64,
    /// Fade time (s).
    pub fade_time_s: f64,
    /// Passivity controller's largest damping (N·s/m), if on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passivity_max_damping_n_s_per_m: Option<f64>,
}

/// The haptic loop's settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HapticRecord {
    /// Tick period (s).
    pub tick_period_s: f64,
    /// Ticks per model step.
    pub ticks_per_model_step: u32,
    /// Force between model updates.
    pub strategy: String,
}

impl DeviceRecord {
    /// The record of a device rated `rating`, mapped by `workspace` (chosen as `how`),
    /// driven with `haptic`.
    pub fn new(
        description: &str,
        name: &str,
        rating: &DeviceRating,
        (workspace, how): (&Workspace, &str),
        haptic: &HapticConfig,
    ) -> Self {
        let l = &haptic.limits;
        let r = workspace.rotation;
        Self {
            description: description.to_string(),
            name: name.to_string(),
            rating: RatingRecord {
                max_force_n: rating.max_force,
                max_stiffness_n_per_m: rating.max_stiffness,
                reach_centre_m: rating.workspace.map(|w| w.centre.into()),
                reach_half_extent_m: rating.workspace.map(|w| w.half_extent.into()),
            },
            workspace: WorkspaceRecord {
                how: how.to_string(),
                scale: workspace.scale,
                offset_m: workspace.offset.into(),
                rotation: [0, 1, 2].map(|i| [r[(i, 0)], r[(i, 1)], r[(i, 2)]]),
            },
            safety: SafetyRecord {
                max_force_n: l.max_force,
                max_force_rate_n_per_s: l.max_force_rate,
                ramp_time_s: l.ramp_time,
                max_stiffness_n_per_m: l.max_stiffness,
                stale_sample_timeout_s: l.stale_sample_timeout,
                model_timeout_s: l.model_timeout,
                fade_time_s: l.fade_time,
                passivity_max_damping_n_s_per_m: l.passivity_max_damping,
            },
            haptic: HapticRecord {
                tick_period_s: haptic.tick_period,
                ticks_per_model_step: haptic.ticks_per_model_step,
                strategy: haptic.strategy.name().to_string(),
            },
            clock_start_unix_s: None,
            profile: None,
        }
    }

    /// The device's rating as recorded.
    pub fn rating(&self) -> DeviceRating {
        let r = &self.rating;
        DeviceRating {
            max_force: r.max_force_n,
            max_stiffness: r.max_stiffness_n_per_m,
            workspace: r
                .reach_centre_m
                .zip(r.reach_half_extent_m)
                .map(|(c, h)| DeviceWorkspace {
                    centre: Vec3::from(c),
                    half_extent: Vec3::from(h),
                }),
        }
    }

    /// The safety limits as recorded.
    pub fn limits(&self) -> SafetyLimits {
        let s = &self.safety;
        SafetyLimits {
            max_force: s.max_force_n,
            max_force_rate: s.max_force_rate_n_per_s,
            ramp_time: s.ramp_time_s,
            max_stiffness: s.max_stiffness_n_per_m,
            stale_sample_timeout: s.stale_sample_timeout_s,
            model_timeout: s.model_timeout_s,
            fade_time: s.fade_time_s,
            passivity_max_damping: s.passivity_max_damping_n_s_per_m,
        }
    }

    /// The file's text: a comment saying what it is, then the TOML.
    pub fn to_toml(&self) -> String {
        let body = toml::to_string(self).expect("a device record is plain data");
        format!(
            "# The device of this recording as the session drove it: its rating, how its\n\
             # frame maps into the scene's, the safety limits on the hand and the haptic\n\
             # loop. ticks.csv holds positions (m) and forces (N) in the scene frame.\n\n{body}"
        )
    }

    /// Parses a `device.toml`; `source` names it in errors.
    pub fn parse(text: &str, source: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|e| format!("{source}: {}", e.to_string().trim_end()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_record_reads_back_as_written() {
        let rating = DeviceRating {
            max_force: 3.3,
            max_stiffness: 2500.0,
            workspace: Some(DeviceWorkspace {
                centre: Vec3::new(0.0, 0.0, 0.1),
                half_extent: Vec3::new(0.08, 0.06, 0.05),
            }),
        };
        let w = Workspace::new(0.5, Vec3::new(0.01, 0.0, -0.02), [0.0, 0.0, 30.0]);
        let config = HapticConfig::new(SafetyLimits::for_device(rating));
        let record = DeviceRecord::new("hid: x", "hid", &rating, (&w, "given"), &config);
        let text = record.to_toml();
        assert!(text.contains("max_force_n = 3.3"), "{text}");
        let back = DeviceRecord::parse(&text, "device.toml").unwrap();
        assert_eq!(back, record);
        assert_eq!(back.rating(), rating);
        assert_eq!(back.limits(), config.limits);
        assert!(DeviceRecord::parse("name = 1", "d.toml")
            .unwrap_err()
            .starts_with("d.toml: "));
    }
}
