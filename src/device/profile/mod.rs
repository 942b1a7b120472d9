//! Device profiles: how a HID force-feedback device's reports map to positions,
//! buttons and forces (TOML, see `profiles/*.toml` and `docs/device-protocol.md`).
//!
//! A profile describes either a *Cartesian* device (the report carries the stylus
//! position and takes a force) or a *kinematic* one (the report carries joint encoder
//! counts and takes motor currents, and a `[kinematics]` section gives the arm).
//!
//! Offsets are byte offsets into the report buffer exactly as hidapi reads and writes
//! it: for numbered reports byte 0 is the report id; an input report of a device
//! without numbered reports starts at byte 0; an output report always starts with the
//! report id byte (`00` for devices without numbered reports).

mod codec;
mod field;
mod linkage;

pub use codec::{AxisMap, DecodedInput, ReportCodec};
pub use field::{Endian, Field, FieldType};
pub use linkage::{Calibration, CapstanSpec, DeltaSpec, KinematicsSpec, Linkage};

/// A profile's identity for the record of checked devices: its name and a hash of its
/// values (comments and formatting do not count; any changed value does).
pub fn profile_hash(profile: &DeviceProfile) -> String {
    let digest = blake3::hash(format!("{profile:?}").as_bytes());
    digest.to_hex()[..16].to_owned()
}

use super::{DeviceRating, DeviceWorkspace};
use crate::Vec3;
use serde::Deserialize;
use std::path::Path;

/// Largest report palpa handles (bytes): a full-speed USB HID report's 64, and the
/// report-id byte hidapi puts before an output report of a device without numbered
/// reports (the Teensy boards' 64-byte raw HID reports are written as 65). A profile's
/// report lengths must not exceed it.
pub const MAX_REPORT_LEN: usize = 65;
/// Largest rated force a profile may give (N): several times the strongest desk-top
/// haptic device's peak (Virtuose, Phantom Premium 1.5 HF: 35-37 N).
pub const MAX_RATED_FORCE: f64 = 200.0;
/// Largest rated stiffness a profile may give (N/m): well past any impedance device.
pub const MAX_RATED_STIFFNESS: f64 = 1e6;
/// Bounds of a field's `scale` magnitude (SI units per count).
pub const FIELD_SCALE_RANGE: std::ops::RangeInclusive<f64> = 1e-12..=1e12;

/// The profiles shipped with palpa, as `(file name, TOML)`; the first is the reference
/// profile (palpa's own reference report).
pub const SHIPPED_PROFILES: [(&str, &str); 5] = [
    (
        "palpa-reference.toml",
        include_str!("../../../profiles/palpa-reference.toml"),
    ),
    (
        "woodenhaptics.toml",
        include_str!("../../../profiles/woodenhaptics.toml"),
    ),
    (
        "woodenhaptics-2017.toml",
        include_str!("../../../profiles/woodenhaptics-2017.toml"),
    ),
    (
        "haptikfabriken-v2.toml",
        include_str!("../../../profiles/haptikfabriken-v2.toml"),
    ),
    (
        "haptikfabriken-v2019.toml",
        include_str!("../../../profiles/haptikfabriken-v2019.toml"),
    ),
];

/// The reference profile shipped with palpa (palpa's own reference report).
pub const REFERENCE_PROFILE_TOML: &str = SHIPPED_PROFILES[0].1;

/// A device profile, as loaded from TOML.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DeviceProfile {
    /// Short name shown by `palpa devices`.
    pub name: String,
    /// One line on what device this is.
    #[serde(default)]
    pub description: String,
    /// Which HID device this profile applies to.
    #[serde(rename = "match")]
    pub matcher: DeviceMatch,
    /// What the device is rated for.
    pub rating: Rating,
    /// The box the stylus tip reaches (device frame, after the axis mapping).
    pub workspace: WorkspaceBox,
    /// The input report carrying position (or joint counts), buttons, time and sequence.
    pub input: InputReport,
    /// The output report carrying force (or motor currents).
    pub output: OutputReport,
    /// Device-frame axis i = sign × raw axis j (e.g. `y = "-z"`); for a kinematic
    /// profile the raw axes are the arm's base frame.
    #[serde(default)]
    pub axes: Axes,
    /// The arm between joint encoders and the stylus tip (kinematic profiles only).
    pub kinematics: Option<KinematicsSpec>,
}

/// Which HID device a profile applies to: by vendor/product id, or by path.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DeviceMatch {
    /// USB vendor id.
    pub vendor_id: Option<u16>,
    /// USB product id.
    pub product_id: Option<u16>,
    /// HID usage page of the interface (to pick one interface of a composite device).
    pub usage_page: Option<u16>,
    /// OS device path (e.g. `/dev/hidraw3`); matches that device only.
    pub path: Option<String>,
}

/// Rated limits (N, N/m).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Rating {
    /// Largest continuous force (N).
    pub max_force: f64,
    /// Largest stiffness rendered stably (N/m).
    pub max_stiffness: f64,
}

/// The reachable box of a device (m, device frame after the axis mapping).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceBox {
    /// Centre of the box (m).
    pub centre: [f64; 3],
    /// Half the box's size along x, y, z (m, each > 0).
    pub half_extent: [f64; 3],
}

/// The input report layout.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct InputReport {
    /// Report id (byte 0); 0 for a device without numbered reports (its data then
    /// starts at byte 0).
    pub report_id: u8,
    /// Report length in bytes as hidapi returns it (with the id byte for numbered
    /// reports).
    pub length: usize,
    /// Stylus position, per raw axis, scaled to m (Cartesian profiles).
    pub position: Option<Xyz>,
    /// Joint encoder counts, per joint (kinematic profiles); `scale` is counts per
    /// raw count (−1 reverses an encoder).
    pub joints: Option<Joints>,
    /// Button bit mask.
    pub buttons: Option<Field>,
    /// Device time stamp, scaled to s (wraps with its integer type).
    pub time: Option<Field>,
    /// Sample counter incremented by one per report (wraps with its integer type);
    /// used to detect lost and repeated reports.
    pub sequence: Option<Field>,
    /// Non-zero while the board asks the host for its calibration report
    /// (`calibration = "firmware"` profiles; haptikfabriken v2's `info`).
    pub calibration_request: Option<Field>,
}

/// The output report layout.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OutputReport {
    /// Report id (byte 0); 0 for a device without numbered reports (byte 0 is then 0).
    pub report_id: u8,
    /// Report length in bytes, including byte 0.
    pub length: usize,
    /// Force, per raw axis; `scale` is N per count (Cartesian profiles).
    pub force: Option<Xyz>,
    /// Motor currents, per joint; `scale` is A per count (kinematic profiles).
    pub currents: Option<Joints>,
    /// Host heartbeat counter, incremented on every write; firmware zeroes its motors
    /// when it stops changing.
    pub heartbeat: Option<Field>,
    /// The report that sets the board's encoder counters to the calibration counts
    /// (`calibration = "firmware"` profiles).
    pub calibration: Option<CalibrationCommand>,
}

/// The output report that calibrates a board's counters: `command` holds `code`, and
/// `counts` the counts each joint's counter is set to (the profile's
/// `kinematics.calibration_counts`, in the board's raw counts); no motor current flows.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CalibrationCommand {
    /// The command field.
    pub command: Field,
    /// The command's code (haptikfabriken v2: 1).
    pub code: u64,
    /// Where each joint's count goes.
    pub counts: Joints,
}

/// One field per raw axis.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Xyz {
    /// Raw x.
    pub x: Field,
    /// Raw y.
    pub y: Field,
    /// Raw z.
    pub z: Field,
}

/// One field per joint of a three-joint arm.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Joints {
    /// Joint a (the base joint of a capstan arm; arm 0 of a delta).
    pub a: Field,
    /// Joint b.
    pub b: Field,
    /// Joint c.
    pub c: Field,
}

impl Xyz {
    fn fields(&self) -> [Field; 3] {
        [self.x, self.y, self.z]
    }
}

impl Joints {
    fn fields(&self) -> [Field; 3] {
        [self.a, self.b, self.c]
    }
}

/// Axis mapping, each entry like `"+x"` or `"-z"` (which raw axis, with which sign).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Axes {
    /// Source of device-frame x.
    pub x: String,
    /// Source of device-frame y.
    pub y: String,
    /// Source of device-frame z.
    pub z: String,
}

impl Default for Axes {
    fn default() -> Self {
        Self {
            x: "+x".into(),
            y: "+y".into(),
            z: "+z".into(),
        }
    }
}

/// A profile that cannot be used, naming the file and the key.
#[derive(Debug, thiserror::Error)]
#[error("{source_name}: {message}")]
pub struct ProfileError {
    /// File (or other source) of the profile.
    pub source_name: String,
    /// What is wrong, naming the key.
    pub message: String,
}

impl DeviceProfile {
    /// Parses and validates a profile; `source_name` (file name) appears in errors.
    pub fn from_toml(text: &str, source_name: &str) -> Result<Self, ProfileError> {
        let err = |message: String| ProfileError {
            source_name: source_name.to_string(),
            message,
        };
        let profile: DeviceProfile = toml::from_str(text).map_err(|e| err(e.to_string()))?;
        profile.validate().map_err(err)?;
        Ok(profile)
    }

    /// Loads a profile file.
    pub fn load(path: &Path) -> Result<Self, ProfileError> {
        let text = crate::files::read_text(path, crate::files::FileKind::Profile).map_err(|e| {
            ProfileError {
                source_name: path.display().to_string(),
                message: e.reason(),
            }
        })?;
        Self::from_toml(&text, &path.display().to_string())
    }

    /// The reference profile shipped with palpa.
    pub fn reference() -> Self {
        Self::from_toml(REFERENCE_PROFILE_TOML, "profiles/palpa-reference.toml")
            .expect("the shipped reference profile is valid (tested)")
    }

    /// Every profile shipped with palpa ([`SHIPPED_PROFILES`]), the reference first.
    pub fn shipped() -> Vec<Self> {
        SHIPPED_PROFILES
            .iter()
            .map(|(file, text)| {
                Self::from_toml(text, &format!("profiles/{file}"))
                    .expect("the shipped profiles are valid (tested)")
            })
            .collect()
    }

    /// The rated limits as the haptic layer uses them.
    pub fn device_rating(&self) -> DeviceRating {
        DeviceRating {
            max_force: self.rating.max_force,
            max_stiffness: self.rating.max_stiffness,
            workspace: Some(DeviceWorkspace {
                centre: Vec3::from(self.workspace.centre),
                half_extent: Vec3::from(self.workspace.half_extent),
            }),
        }
    }

    /// `force` (N) limited to the rated force, direction kept; zero when not finite.
    /// The last line of defence below the safety layer, applied to every write. The
    /// length is taken of the force divided by its largest component, so any finite
    /// force (even 1e308 N, whose squared length overflows) keeps its direction.
    pub fn rated_force(&self, force: Vec3) -> Vec3 {
        let max = self.rating.max_force;
        if !force.iter().all(|c| c.is_finite()) {
            return Vec3::zeros();
        }
        let largest = force.amax();
        if largest == 0.0 {
            return force;
        }
        let unit_scaled = force / largest;
        let norm = largest * unit_scaled.norm();
        if norm > max {
            unit_scaled * (max / unit_scaled.norm())
        } else {
            force
        }
    }

    /// The parsed axis mapping (validated at load).
    pub fn axis_map(&self) -> AxisMap {
        AxisMap::parse(&self.axes).expect("axes validated at load")
    }

    /// The report codec of this profile: decoding input reports and encoding forces,
    /// through the arm's kinematics for a kinematic profile.
    pub fn codec(&self) -> ReportCodec {
        ReportCodec::new(self)
    }

    /// Whether this profile applies to a HID device with these ids and path.
    pub fn matches(&self, vendor_id: u16, product_id: u16, usage_page: u16, path: &str) -> bool {
        let m = &self.matcher;
        if let Some(p) = &m.path {
            return p == path;
        }
        m.vendor_id == Some(vendor_id)
            && m.product_id == Some(product_id)
            && m.usage_page.is_none_or(|u| u == usage_page)
    }

    fn validate(&self) -> Result<(), String> {
        let m = &self.matcher;
        if m.path.is_none() && (m.vendor_id.is_none() || m.product_id.is_none()) {
            return Err("match: give either `path` or both `vendor_id` and `product_id`".into());
        }
        for (key, v, max) in [
            ("rating.max_force", self.rating.max_force, MAX_RATED_FORCE),
            (
                "rating.max_stiffness",
                self.rating.max_stiffness,
                MAX_RATED_STIFFNESS,
            ),
        ] {
            if !(v.is_finite() && v > 0.0 && v <= max) {
                return Err(format!(
                    "{key}: must be positive and at most {max} (SI units), got {v}"
                ));
            }
        }
        for (i, axis) in ["x", "y", "z"].into_iter().enumerate() {
            let (c, h) = (self.workspace.centre[i], self.workspace.half_extent[i]);
            if !(c.is_finite() && c.abs() <= 10.0) {
                return Err(format!(
                    "workspace.centre: {axis} = {c} m, must be finite and within ±10 m"
                ));
            }
            if !(h.is_finite() && h > 0.0 && h <= 10.0) {
                return Err(format!(
                    "workspace.half_extent: {axis} = {h} m, must be in (0, 10] m"
                ));
            }
        }
        for (key, len) in [
            ("input.length", self.input.length),
            ("output.length", self.output.length),
        ] {
            if len == 0 || len > MAX_REPORT_LEN {
                return Err(format!("{key}: {len} bytes, must be 1..={MAX_REPORT_LEN}"));
            }
        }
        self.validate_kind()?;
        self.validate_fields()?;
        AxisMap::parse(&self.axes)?;
        if let Some(k) = &self.kinematics {
            k.validate()?;
        }
        Ok(())
    }

    /// The largest value the output is written with (the rated force on each axis, or
    /// the largest current) fits every output field's type: a field that saturated
    /// would turn the force.
    fn validate_output_range(&self) -> Result<(), String> {
        let mut fields = Vec::new();
        if let Some(f) = &self.output.force {
            let names = ["x", "y", "z"].map(|n| format!("output.force.{n}"));
            fields.extend(
                names
                    .into_iter()
                    .zip(f.fields())
                    .map(|(k, f)| (k, f, self.rating.max_force, "rating.max_force")),
            );
        }
        if let (Some(c), Some(k)) = (&self.output.currents, &self.kinematics) {
            let names = ["a", "b", "c"].map(|n| format!("output.currents.{n}"));
            fields.extend(
                names
                    .into_iter()
                    .zip(c.fields())
                    .map(|(key, f)| (key, f, k.max_current(), "kinematics.max_current")),
            );
        }
        for (key, field, largest, by) in fields {
            let (lo, hi) = field.ty.range();
            let counts = largest / field.scale.abs();
            if counts > hi || -counts < lo {
                return Err(format!(
                    "{key}: {by} = {largest} is {counts:.0} counts at scale {}, beyond the \
                     field's range {lo}..={hi}",
                    field.scale
                ));
            }
        }
        Ok(())
    }

    /// A Cartesian profile has `input.position` and `output.force`; a kinematic one has
    /// `[kinematics]`, `input.joints` and `output.currents`.
    fn validate_kind(&self) -> Result<(), String> {
        let (input, output) = (&self.input, &self.output);
        match (&self.kinematics, &input.position, &input.joints) {
            (None, Some(_), None) | (Some(_), None, Some(_)) => {}
            (None, _, _) => {
                return Err(
                    "input: give `[input.position]` (or `[input.joints]` with a `[kinematics]` section)"
                        .into(),
                )
            }
            (Some(_), _, _) => {
                return Err("input: a profile with `[kinematics]` reads `[input.joints]` (encoder counts), not `[input.position]`".into())
            }
        }
        match (&self.kinematics, &output.force, &output.currents) {
            (None, Some(_), None) | (Some(_), None, Some(_)) => Ok(()),
            (None, _, _) => Err(
                "output: give `[output.force]` (or `[output.currents]` with a `[kinematics]` section)"
                    .into(),
            ),
            (Some(_), _, _) => Err("output: a profile with `[kinematics]` writes `[output.currents]` (motor currents), not `[output.force]`".into()),
        }
    }

    fn validate_fields(&self) -> Result<(), String> {
        let (input, out) = (&self.input, &self.output);
        let mut fields: Vec<(String, Field, usize, usize)> = Vec::new();
        // An input report without an id starts at byte 0; every output report starts
        // with its id byte.
        let first_input_byte = usize::from(input.report_id != 0);
        let mut add = |key: String, f: Field, len: usize, first: usize| {
            fields.push((key, f, len, first));
        };
        let named = |prefix: &str, names: [&str; 3], f: [Field; 3]| {
            names
                .into_iter()
                .zip(f)
                .map(|(n, f)| (format!("{prefix}.{n}"), f))
                .collect::<Vec<_>>()
        };
        let mut input_fields = Vec::new();
        if let Some(p) = &input.position {
            input_fields.extend(named("input.position", ["x", "y", "z"], p.fields()));
        }
        if let Some(j) = &input.joints {
            input_fields.extend(named("input.joints", ["a", "b", "c"], j.fields()));
        }
        for (key, f) in [
            ("input.buttons", &input.buttons),
            ("input.time", &input.time),
            ("input.sequence", &input.sequence),
            ("input.calibration_request", &input.calibration_request),
        ] {
            if let Some(f) = f {
                input_fields.push((key.to_string(), *f));
            }
        }
        for (key, f) in input_fields {
            add(key, f, input.length, first_input_byte);
        }
        let mut output_fields = Vec::new();
        if let Some(p) = &out.force {
            output_fields.extend(named("output.force", ["x", "y", "z"], p.fields()));
        }
        if let Some(j) = &out.currents {
            output_fields.extend(named("output.currents", ["a", "b", "c"], j.fields()));
        }
        if let Some(f) = &out.heartbeat {
            output_fields.push(("output.heartbeat".to_string(), *f));
        }
        if let Some(c) = &out.calibration {
            output_fields.push(("output.calibration.command".to_string(), c.command));
            output_fields.extend(named(
                "output.calibration.counts",
                ["a", "b", "c"],
                c.counts.fields(),
            ));
        }
        for (key, f) in output_fields {
            add(key, f, out.length, 1);
        }
        for (key, f, len, first) in fields {
            if f.offset
                .checked_add(f.ty.size())
                .is_none_or(|end| end > len)
            {
                return Err(format!(
                    "{key}.offset: {} + {} bytes runs past the report length {len}",
                    f.offset,
                    f.ty.size()
                ));
            }
            if f.offset < first {
                return Err(format!(
                    "{key}.offset: 0 is the report id byte (hidapi puts it first)"
                ));
            }
            if !FIELD_SCALE_RANGE.contains(&f.scale.abs()) {
                return Err(format!(
                    "{key}.scale: {} must be within ±[{:e}, {:e}]",
                    f.scale,
                    FIELD_SCALE_RANGE.start(),
                    FIELD_SCALE_RANGE.end()
                ));
            }
        }
        self.validate_output_range()?;
        for (key, f) in [
            ("input.sequence", &input.sequence),
            ("input.buttons", &input.buttons),
            ("input.calibration_request", &input.calibration_request),
            ("output.heartbeat", &out.heartbeat),
            (
                "output.calibration.command",
                &out.calibration.map(|c| c.command),
            ),
        ] {
            if f.is_some_and(|f| f.ty == FieldType::F32) {
                return Err(format!("{key}.type: must be an integer type"));
            }
        }
        self.validate_firmware_calibration()
    }

    /// A `calibration = "firmware"` arm needs the report that calibrates its board.
    fn validate_firmware_calibration(&self) -> Result<(), String> {
        let firmware = self
            .kinematics
            .as_ref()
            .is_some_and(|k| k.calibration() == Calibration::Firmware);
        match (firmware, &self.output.calibration) {
            (true, None) => Err(
                "kinematics.calibration: \"firmware\" needs an [output.calibration] report \
                 (command, code, counts)"
                    .into(),
            ),
            (false, Some(_)) => {
                Err("output.calibration: only a `calibration = \"firmware\"` arm sends it".into())
            }
            _ => Ok(()),
        }
    }
}
