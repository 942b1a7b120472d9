//! One numeric field of a HID report: where it is, its type, its scale, and reading and
//! writing it (allocation-free; runs in the haptic tick).

use serde::Deserialize;

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

    /// Smallest and largest count the type holds.
    pub fn range(self) -> (f64, f64) {
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

    /// Raw value of a counter or mask field as an unsigned count (two's complement for
    /// signed types, so it wraps with the type).
    pub fn read_counter(&self, buf: &[u8]) -> u64 {
        let v = self.read_raw(buf);
        let m = self.ty.modulus().unwrap_or(1 << 24) as f64;
        (if v < 0.0 { v + m } else { v }) as u64
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
