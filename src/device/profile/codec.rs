//! Decoding input reports and encoding force reports for one profile, allocation-free
//! (it runs in the haptic tick). A kinematic profile's codec keeps the arm's pose from
//! the newest input report: forces become motor currents at that pose.

use super::linkage::{Calibration, Linkage};
use super::{Axes, DeviceProfile, Field, InputReport, OutputReport};
use crate::Vec3;

/// The parsed axis mapping: device-frame axis i = `sign[i]` × raw axis `source[i]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AxisMap {
    /// Raw axis index feeding each device-frame axis.
    pub source: [usize; 3],
    /// Sign applied to it (±1).
    pub sign: [f64; 3],
}

impl AxisMap {
    /// Raw (report or arm) axes → device frame.
    pub fn to_device(&self, raw: [f64; 3]) -> Vec3 {
        Vec3::new(
            self.sign[0] * raw[self.source[0]],
            self.sign[1] * raw[self.source[1]],
            self.sign[2] * raw[self.source[2]],
        )
    }

    /// Device frame → raw (report or arm) axes (the inverse signed permutation).
    pub fn to_raw(&self, v: Vec3) -> [f64; 3] {
        let mut raw = [0.0; 3];
        for i in 0..3 {
            raw[self.source[i]] = self.sign[i] * v[i];
        }
        raw
    }

    /// Parses `[axes]`, naming the key that is wrong.
    pub fn parse(axes: &Axes) -> Result<Self, String> {
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

/// A kinematic profile's arm and the pose it is in.
#[derive(Clone, Copy, Debug)]
struct Arm {
    linkage: Linkage,
    /// Counts (after the field scales) read at the calibration pose.
    reference: [f64; 3],
    /// Counts (after the field scales) of the newest report.
    counts: [f64; 3],
    /// Joint angles (rad) of the newest report, from the reference.
    angles: [f64; 3],
    /// Button mask that recalibrates, and whether it was held in the previous report.
    calibrate_button: Option<u32>,
    button_held: bool,
}

/// Decodes input reports and encodes output reports for one profile.
#[derive(Clone, Debug)]
pub struct ReportCodec {
    input: InputReport,
    output: OutputReport,
    axes: AxisMap,
    arm: Option<Arm>,
}

impl ReportCodec {
    /// The codec of `profile`; a kinematic arm starts with the profile's calibration
    /// (counts from power-on, or absolute counts).
    pub fn new(profile: &DeviceProfile) -> Self {
        let arm = profile.kinematics.as_ref().map(|k| {
            let reference = match k.calibration() {
                Calibration::PowerOn => [0.0; 3],
                Calibration::Absolute => k.calibration_counts(),
            };
            Arm {
                linkage: k.linkage(),
                reference,
                counts: reference,
                angles: k.linkage().joint_angles([0.0; 3]),
                calibrate_button: k.calibrate_button(),
                button_held: false,
            }
        });
        Self {
            input: profile.input.clone(),
            output: profile.output.clone(),
            axes: profile.axis_map(),
            arm,
        }
    }

    /// Makes the pose of the newest report the calibration pose (the calibration step:
    /// hold the arm there, then call this) and returns the tip position there (m,
    /// device frame). `None` (and no effect) for a Cartesian profile.
    pub fn calibrate(&mut self) -> Option<Vec3> {
        let arm = self.arm.as_mut()?;
        arm.reference = arm.counts;
        let tip = arm.pose();
        Some(self.axes.to_device([tip.x, tip.y, tip.z]))
    }

    /// Decodes an input report buffer (its length already checked against the profile);
    /// for a kinematic profile the report becomes the pose forces are encoded at.
    pub fn decode_input(&mut self, buf: &[u8]) -> DecodedInput {
        let counter = |f: &Option<Field>| f.map(|f| f.read_counter(buf));
        let buttons = counter(&self.input.buttons).unwrap_or(0) as u32;
        let position = match (&mut self.arm, &self.input.position, &self.input.joints) {
            (Some(arm), _, Some(joints)) => {
                arm.counts = joints.fields().map(|f| f.read(buf));
                if let Some(mask) = arm.calibrate_button {
                    let held = buttons & mask == mask;
                    if held && !arm.button_held {
                        arm.reference = arm.counts;
                    }
                    arm.button_held = held;
                }
                let tip = arm.pose();
                self.axes.to_device([tip.x, tip.y, tip.z])
            }
            (_, Some(p), _) => self.axes.to_device(p.fields().map(|f| f.read(buf))),
            // A profile that skipped validation (built in code) without position fields.
            _ => Vec3::zeros(),
        };
        DecodedInput {
            position,
            buttons,
            time_raw: counter(&self.input.time),
            sequence_raw: counter(&self.input.sequence),
        }
    }

    /// Encodes an input report as the device's firmware would (for simulators, the
    /// in-memory transport and firmware test vectors): `values` is the position (m,
    /// device frame) for a Cartesian profile, the encoder counts (after the field
    /// scales) for a kinematic one. Returns the report length.
    pub fn encode_input(
        &self,
        buf: &mut [u8],
        values: [f64; 3],
        buttons: u32,
        time_raw: u64,
        sequence_raw: u64,
    ) -> usize {
        let len = self.input.length;
        buf[..len].fill(0);
        if self.input.report_id != 0 {
            buf[0] = self.input.report_id;
        }
        if let Some(p) = &self.input.position {
            let raw = self.axes.to_raw(Vec3::from(values));
            for (f, v) in p.fields().into_iter().zip(raw) {
                f.write(buf, v);
            }
        }
        if let Some(j) = &self.input.joints {
            for (f, v) in j.fields().into_iter().zip(values) {
                f.write(buf, v);
            }
        }
        for (field, value) in [
            (&self.input.buttons, buttons as u64),
            (&self.input.time, time_raw),
            (&self.input.sequence, sequence_raw),
        ] {
            if let Some(f) = field {
                f.write_counter(buf, value);
            }
        }
        len
    }

    /// Encodes a force (N, device frame) into an output report (motor currents at the
    /// newest pose for a kinematic profile); the heartbeat counter goes in its field.
    /// Returns the report length and whether any value saturated its field.
    pub fn encode_output(&self, buf: &mut [u8], force: Vec3, heartbeat: u64) -> (usize, bool) {
        let len = self.output.length;
        buf[..len].fill(0);
        buf[0] = self.output.report_id;
        let raw = self.axes.to_raw(force);
        let mut saturated = false;
        if let Some(f) = &self.output.force {
            for (field, v) in f.fields().into_iter().zip(raw) {
                saturated |= field.write(buf, v);
            }
        }
        if let (Some(c), Some(arm)) = (&self.output.currents, &self.arm) {
            let currents = arm.linkage.motor_currents(arm.angles, Vec3::from(raw));
            for (field, v) in c.fields().into_iter().zip(currents) {
                saturated |= field.write(buf, v);
            }
        }
        if let Some(h) = &self.output.heartbeat {
            h.write_counter(buf, heartbeat);
        }
        (len, saturated)
    }

    /// Decodes an output report as firmware would: the force (N, device frame) of a
    /// Cartesian profile or the motor currents (A) of a kinematic one, and the
    /// heartbeat counter.
    pub fn decode_output(&self, buf: &[u8]) -> ([f64; 3], Option<u64>) {
        let values = match (&self.output.force, &self.output.currents) {
            (Some(f), _) => {
                let d = self.axes.to_device(f.fields().map(|f| f.read(buf)));
                [d.x, d.y, d.z]
            }
            (_, Some(c)) => c.fields().map(|f| f.read(buf)),
            _ => [0.0; 3],
        };
        (values, self.output.heartbeat.map(|h| h.read_counter(buf)))
    }
}

impl Arm {
    /// Takes the newest counts relative to the reference as the pose (the angles forces
    /// are encoded at) and returns the tip position there (m, arm base frame). A delta
    /// pose whose forearms cannot close (a miscounted encoder) puts the tip at the
    /// workspace origin rather than inventing a point.
    fn pose(&mut self) -> Vec3 {
        let from_reference = std::array::from_fn(|i| self.counts[i] - self.reference[i]);
        self.angles = self.linkage.joint_angles(from_reference);
        self.linkage
            .position(self.angles)
            .unwrap_or_else(Vec3::zeros)
    }
}
