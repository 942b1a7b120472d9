//! Device profiles: how a HID force-feedback device's reports map to positions,
//! buttons and forces (TOML, see `profiles/palpa-reference.toml` and
//! `docs/device-protocol.md`).
//!
//! Offsets are byte offsets into the report buffer exactly as hidapi reads and writes
//! it: for numbered reports byte 0 is the report id.

use super::{DeviceRating, DeviceWorkspace};
use crate::Vec3;
use serde::Deserialize;
use std::path::Path;

/// Largest report palpa handles (bytes); full-speed USB HID reports are at most 64. A
/// profile's report lengths must not exceed it.
pub const MAX_REPORT_LEN: usize = 64;

/// The reference profile shipped with palpa (palpa's own reference report).
pub const REFERENCE_PROFILE_TOML: &str = include_str!("../../profiles/palpa-reference.toml");

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
    /// The input report carrying position, buttons, time and sequence.
    pub input: InputReport,
    /// The output report carrying force.
    pub output: OutputReport,
    /// Device-frame axis i = sign × raw axis j (e.g. `y = "-z"`).
    #[serde(default)]
    pub axes: Axes,
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
    /// Report id (byte 0); 0 for a device without numbered reports.
    pub report_id: u8,
    /// Report length in bytes, including the id byte for numbered reports.
    pub length: usize,
    /// Stylus position, per raw axis, scaled to m.
    pub position: Xyz,
    /// Button bit mask.
    pub buttons: Option<Field>,
    /// Device time stamp, scaled to s (wraps with its integer type).
    pub time: Option<Field>,
    /// Sample counter incremented by one per report (wraps with its integer type);
    /// used to detect lost reports.
    pub sequence: Option<Field>,
}

/// The output report layout.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OutputReport {
    /// Report id (byte 0); 0 for a device without numbered reports (byte 0 is then 0).
    pub report_id: u8,
    /// Report length in bytes, including byte 0.
    pub length: usize,
    /// Force, per raw axis; `scale` is N per count.
    pub force: Xyz,
    /// Host heartbeat counter, incremented on every write; firmware zeroes its motors
    /// when it stops changing.
    pub heartbeat: Option<Field>,
}

/// One field per raw axis.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Xyz {
    /// Raw x.
    pub x: Field,
    /// Raw y.
    pub y: Field,
    /// Raw z.
    pub z: Field,
}

/// One numeric field in a report.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Field {
    /// Byte offset into the report buffer.
    pub offset: usize,
    /// Numeric type of the field.
    #[serde(rename = "type")]
    pub ty: FieldType,
    /// SI units per count (m, s or N per count); 1 for counters and masks.
    #[serde(default = "one")]
    pub scale: f64,
    /// Byte order.
    #[serde(default)]
    pub endian: Endian,
}

fn one() -> f64 {
    1.0
}

/// Numeric types a field may have.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    /// Unsigned 8-bit.
    U8,
    /// Signed 8-bit.
    I8,
    /// Unsigned 16-bit.
    U16,
    /// Signed 16-bit.
    I16,
    /// Unsigned 32-bit.
    U32,
    /// Signed 32-bit.
    I32,
    /// IEEE 754 single.
    F32,
}

/// Byte order of a multi-byte field.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Endian {
    /// Little endian (the HID convention).
    #[default]
    Little,
    /// Big endian.
    Big,
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

impl FieldType {
    /// Size in bytes.
    pub fn size(self) -> usize {
        match self {
            FieldType::U8 | FieldType::I8 => 1,
            FieldType::U16 | FieldType::I16 => 2,
            FieldType::U32 | FieldType::I32 | FieldType::F32 => 4,
        }
    }

    /// Number of distinct values of an integer type (for wrap-around), `None` for f32.
    pub fn modulus(self) -> Option<u64> {
        match self {
            FieldType::U8 | FieldType::I8 => Some(1 << 8),
            FieldType::U16 | FieldType::I16 => Some(1 << 16),
            FieldType::U32 | FieldType::I32 => Some(1 << 32),
            FieldType::F32 => None,
        }
    }

    fn range(self) -> (f64, f64) {
        match self {
            FieldType::U8 => (0.0, u8::MAX as f64),
            FieldType::I8 => (i8::MIN as f64, i8::MAX as f64),
            FieldType::U16 => (0.0, u16::MAX as f64),
            FieldType::I16 => (i16::MIN as f64, i16::MAX as f64),
            FieldType::U32 => (0.0, u32::MAX as f64),
            FieldType::I32 => (i32::MIN as f64, i32::MAX as f64),
            FieldType::F32 => (f32::MIN as f64, f32::MAX as f64),
        }
    }
}

impl Field {
    /// Raw value (counts) at this field in `buf`.
    pub fn read_raw(&self, buf: &[u8]) -> f64 {
        let b = &buf[self.offset..self.offset + self.ty.size()];
        let le = self.endian == Endian::Little;
        macro_rules! int {
            ($t:ty, $n:expr) => {{
                let mut a = [0u8; $n];
                a.copy_from_slice(b);
                (if le {
                    <$t>::from_le_bytes(a)
                } else {
                    <$t>::from_be_bytes(a)
                }) as f64
            }};
        }
        match self.ty {
            FieldType::U8 => b[0] as f64,
            FieldType::I8 => b[0] as i8 as f64,
            FieldType::U16 => int!(u16, 2),
            FieldType::I16 => int!(i16, 2),
            FieldType::U32 => int!(u32, 4),
            FieldType::I32 => int!(i32, 4),
            FieldType::F32 => int!(f32, 4),
        }
    }

    /// Value in SI units (raw × scale).
    pub fn read(&self, buf: &[u8]) -> f64 {
        self.read_raw(buf) * self.scale
    }

    /// Writes `value` (SI) as counts, rounded and saturated to the field's type; returns
    /// whether it saturated.
    pub fn write(&self, buf: &mut [u8], value: f64) -> bool {
        let raw = value / self.scale;
        let (lo, hi) = self.ty.range();
        let rounded = if self.ty == FieldType::F32 {
            raw
        } else {
            raw.round()
        };
        let clamped = rounded.clamp(lo, hi);
        self.write_raw(buf, clamped);
        clamped != rounded
    }

    /// Writes a raw count (wrapped for counters) without scaling.
    pub fn write_counter(&self, buf: &mut [u8], count: u64) {
        let m = self.ty.modulus().unwrap_or(1 << 24);
        let v = count % m;
        let signed = match self.ty {
            FieldType::I8 if v >= 1 << 7 => v as f64 - (1u64 << 8) as f64,
            FieldType::I16 if v >= 1 << 15 => v as f64 - (1u64 << 16) as f64,
            FieldType::I32 if v >= 1 << 31 => v as f64 - (1u64 << 32) as f64,
            _ => v as f64,
        };
        self.write_raw(buf, signed);
    }

    fn write_raw(&self, buf: &mut [u8], v: f64) {
        let b = &mut buf[self.offset..self.offset + self.ty.size()];
        let le = self.endian == Endian::Little;
        macro_rules! put {
            ($t:ty) => {{
                let x = v as $t;
                b.copy_from_slice(&if le { x.to_le_bytes() } else { x.to_be_bytes() });
            }};
        }
        match self.ty {
            FieldType::U8 => b[0] = v as u8,
            FieldType::I8 => b[0] = v as i8 as u8,
            FieldType::U16 => put!(u16),
            FieldType::I16 => put!(i16),
            FieldType::U32 => put!(u32),
            FieldType::I32 => put!(i32),
            FieldType::F32 => put!(f32),
        }
    }
}

/// The parsed axis mapping: device-frame axis i = `sign[i]` × raw axis `source[i]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AxisMap {
    /// Raw axis index feeding each device-frame axis.
    pub source: [usize; 3],
    /// Sign applied to it (±1).
    pub sign: [f64; 3],
}

impl AxisMap {
    /// Raw (report) axes → device frame.
    pub fn to_device(&self, raw: [f64; 3]) -> Vec3 {
        Vec3::new(
            self.sign[0] * raw[self.source[0]],
            self.sign[1] * raw[self.source[1]],
            self.sign[2] * raw[self.source[2]],
        )
    }

    /// Device frame → raw (report) axes (the inverse signed permutation).
    pub fn to_raw(&self, v: Vec3) -> [f64; 3] {
        let mut raw = [0.0; 3];
        for i in 0..3 {
            raw[self.source[i]] = self.sign[i] * v[i];
        }
        raw
    }
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
        let text = std::fs::read_to_string(path).map_err(|e| ProfileError {
            source_name: path.display().to_string(),
            message: e.to_string(),
        })?;
        Self::from_toml(&text, &path.display().to_string())
    }

    /// Largest report palpa handles (bytes); full-speed USB HID reports are at most 64. A
    /// profile's report lengths must not exceed it.
    pub const MAX_REPORT_LEN: usize = 64;

    /// The reference profile shipped with palpa.
    pub fn reference() -> Self {
        Self::from_toml(REFERENCE_PROFILE_TOML, "profiles/palpa-reference.toml")
            .expect("the shipped reference profile is valid (tested)")
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

    /// The parsed axis mapping (validated at load).
    pub fn axis_map(&self) -> AxisMap {
        parse_axes(&self.axes).expect("axes validated at load")
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
        for (key, v) in [
            ("rating.max_force", self.rating.max_force),
            ("rating.max_stiffness", self.rating.max_stiffness),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!(
                    "{key}: must be a positive number of SI units, got {v}"
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
        let input = &self.input;
        let mut fields: Vec<(&str, &Field, usize)> = vec![
            ("input.position.x", &input.position.x, input.length),
            ("input.position.y", &input.position.y, input.length),
            ("input.position.z", &input.position.z, input.length),
        ];
        for (key, f) in [
            ("input.buttons", &input.buttons),
            ("input.time", &input.time),
            ("input.sequence", &input.sequence),
        ] {
            if let Some(f) = f {
                fields.push((key, f, input.length));
            }
        }
        let out = &self.output;
        fields.push(("output.force.x", &out.force.x, out.length));
        fields.push(("output.force.y", &out.force.y, out.length));
        fields.push(("output.force.z", &out.force.z, out.length));
        if let Some(f) = &out.heartbeat {
            fields.push(("output.heartbeat", f, out.length));
        }
        for (key, f, len) in fields {
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
            if f.offset == 0 {
                return Err(format!(
                    "{key}.offset: 0 is the report id byte (hidapi puts it first)"
                ));
            }
            if !(f.scale.is_finite() && f.scale != 0.0) {
                return Err(format!("{key}.scale: must be finite and non-zero"));
            }
        }
        for (key, f) in [
            ("input.sequence", &input.sequence),
            ("input.buttons", &input.buttons),
            ("output.heartbeat", &out.heartbeat),
        ] {
            if f.is_some_and(|f| f.ty == FieldType::F32) {
                return Err(format!("{key}.type: must be an integer type"));
            }
        }
        parse_axes(&self.axes)?;
        Ok(())
    }
}

fn parse_axes(axes: &Axes) -> Result<AxisMap, String> {
    let mut map = AxisMap {
        source: [0; 3],
        sign: [1.0; 3],
    };
    let mut used = [false; 3];
    for (i, (key, s)) in [
        ("axes.x", &axes.x),
        ("axes.y", &axes.y),
        ("axes.z", &axes.z),
    ]
    .into_iter()
    .enumerate()
    {
        let bytes = s.as_bytes();
        let (sign, axis) = match bytes {
            [b'+', a] => (1.0, *a),
            [b'-', a] => (-1.0, *a),
            [a] => (1.0, *a),
            _ => return Err(format!("{key}: `{s}` is not one of +x -x +y -y +z -z")),
        };
        let j = match axis {
            b'x' => 0,
            b'y' => 1,
            b'z' => 2,
            _ => return Err(format!("{key}: `{s}` is not one of +x -x +y -y +z -z")),
        };
        if used[j] {
            return Err(format!("{key}: raw axis `{}` used twice", axis as char));
        }
        used[j] = true;
        map.source[i] = j;
        map.sign[i] = sign;
    }
    Ok(map)
}

/// One decoded input report, in device-frame SI units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DecodedInput {
    /// Position (m, device frame).
    pub position: Vec3,
    /// Button mask.
    pub buttons: u32,
    /// Raw device time counts (wrapping), if the report has a time field.
    pub time_raw: Option<u64>,
    /// Raw sequence counter (wrapping), if the report has one.
    pub sequence_raw: Option<u64>,
}

impl DeviceProfile {
    /// Decodes an input report buffer (its length already checked against the profile).
    pub fn decode_input(&self, buf: &[u8]) -> DecodedInput {
        let p = &self.input.position;
        let raw = [p.x.read(buf), p.y.read(buf), p.z.read(buf)];
        let counter = |f: &Option<Field>| {
            f.map(|f| {
                let v = f.read_raw(buf);
                let m = f.ty.modulus().unwrap_or(1 << 24) as f64;
                (if v < 0.0 { v + m } else { v }) as u64
            })
        };
        DecodedInput {
            position: self.axis_map().to_device(raw),
            buttons: counter(&self.input.buttons).unwrap_or(0) as u32,
            time_raw: counter(&self.input.time),
            sequence_raw: counter(&self.input.sequence),
        }
    }

    /// Encodes an input report as the device's firmware would (for simulators, the
    /// in-memory transport and firmware test vectors). Returns the report length.
    pub fn encode_input(
        &self,
        buf: &mut [u8],
        position: Vec3,
        buttons: u32,
        time_raw: u64,
        sequence_raw: u64,
    ) -> usize {
        let len = self.input.length;
        buf[..len].fill(0);
        buf[0] = self.input.report_id;
        let raw = self.axis_map().to_raw(position);
        let p = &self.input.position;
        p.x.write(buf, raw[0]);
        p.y.write(buf, raw[1]);
        p.z.write(buf, raw[2]);
        if let Some(f) = &self.input.buttons {
            f.write_counter(buf, buttons as u64);
        }
        if let Some(f) = &self.input.time {
            f.write_counter(buf, time_raw);
        }
        if let Some(f) = &self.input.sequence {
            f.write_counter(buf, sequence_raw);
        }
        len
    }

    /// Encodes a force (N, device frame) into an output report; the heartbeat counter
    /// goes in its field. Returns the report length and whether any axis saturated its
    /// integer range.
    pub fn encode_output(&self, buf: &mut [u8], force: Vec3, heartbeat: u64) -> (usize, bool) {
        let len = self.output.length;
        buf[..len].fill(0);
        buf[0] = self.output.report_id;
        let raw = self.axis_map().to_raw(force);
        let f = &self.output.force;
        let saturated = f.x.write(buf, raw[0]) | f.y.write(buf, raw[1]) | f.z.write(buf, raw[2]);
        if let Some(h) = &self.output.heartbeat {
            h.write_counter(buf, heartbeat);
        }
        (len, saturated)
    }

    /// Decodes an output report as firmware would: force (N, device frame) and the
    /// heartbeat counter.
    pub fn decode_output(&self, buf: &[u8]) -> (Vec3, Option<u64>) {
        let f = &self.output.force;
        let raw = [f.x.read(buf), f.y.read(buf), f.z.read(buf)];
        let hb = self.output.heartbeat.map(|h| {
            let v = h.read_raw(buf);
            let m = h.ty.modulus().unwrap_or(1 << 24) as f64;
            (if v < 0.0 { v + m } else { v }) as u64
        });
        (self.axis_map().to_device(raw), hb)
    }
}
