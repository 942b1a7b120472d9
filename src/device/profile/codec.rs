//! Decoding input reports and encoding force reports for one profile, allocation-free
//! (it runs in the haptic tick). A kinematic profile's codec keeps the arm's pose from
//! the newest input report: forces become motor currents at that pose. A board that
//! calibrates its counters on the host's command gets that command in place of one
//! force report, and the codec counts from the zero angles once the board's counts
//! show it took it.

use super::linkage::{Calibration, Linkage};
use super::{Axes, CalibrationCommand, DeviceProfile, Field, InputReport, OutputReport};
use crate::Vec3;

/// Reports a board may take to show the new counts after a calibration command, before
/// the command is sent again.
const CALIBRATION_RESEND_REPORTS: u32 = 50;

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
    /// The board's own calibration (`calibration = "firmware"`).
    firmware: Option<FirmwareCalibration>,
}

/// Where a board that calibrates on command is.
#[derive(Clone, Copy, Debug)]
struct FirmwareCalibration {
    /// The counts (after the field scales) the command sets: the calibration counts.
    target: [f64; 3],
    /// Send the command with the next output report.
    pending: bool,
    /// Sent, with the counts the board reported just before, and the reports since.
    sent: Option<([f64; 3], u32)>,
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
                Calibration::PowerOn | Calibration::Firmware => [0.0; 3],
                Calibration::Absolute => k.calibration_counts(),
            };
            Arm {
                linkage: k.linkage(),
                reference,
                counts: reference,
                angles: k.linkage().joint_angles([0.0; 3]),
                calibrate_button: k.calibrate_button(),
                button_held: false,
                firmware: (k.calibration() == Calibration::Firmware).then(|| FirmwareCalibration {
                    target: k.calibration_counts(),
                    pending: false,
                    sent: None,
                }),
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
    /// device frame). `None` for a Cartesian profile (no effect), and for a board that
    /// calibrates itself: it gets its calibration command with the next output report,
    /// and the position follows once its counts show it took it.
    pub fn calibrate(&mut self) -> Option<Vec3> {
        let arm = self.arm.as_mut()?;
        if let Some(firmware) = arm.firmware.as_mut() {
            firmware.pending = true;
            return None;
        }
        arm.reference = arm.counts;
        let tip = arm.pose();
        Some(self.axes.to_device([tip.x, tip.y, tip.z]))
    }

    /// The arm's joint angles at the newest report (rad); `None` for a Cartesian
    /// profile.
    pub fn joint_angles(&self) -> Option<[f64; 3]> {
        self.arm.as_ref().map(|a| a.angles)
    }

    /// Whether a board that calibrates itself has a calibration command pending or
    /// unconfirmed.
    pub fn calibrating(&self) -> bool {
        self.arm
            .as_ref()
            .and_then(|a| a.firmware)
            .is_some_and(|f| f.pending || f.sent.is_some())
    }

    /// Decodes an input report buffer (its length already checked against the profile);
    /// for a kinematic profile the report becomes the pose forces are encoded at.
    pub fn decode_input(&mut self, buf: &[u8]) -> DecodedInput {
        let counter = |f: &Option<Field>| f.map(|f| f.read_counter(buf));
        let buttons = counter(&self.input.buttons).unwrap_or(0) as u32;
        let asks = counter(&self.input.calibration_request).is_some_and(|v| v != 0);
        let position = match (&mut self.arm, &self.input.position, &self.input.joints) {
            (Some(arm), _, Some(joints)) => {
                arm.counts = joints.fields().map(|f| f.read(buf));
                arm.follow_firmware(asks);
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
    /// Returns the report length and whether any value saturated its field. A pending
    /// calibration command goes out in place of the force (no current flows).
    pub fn encode_output(&mut self, buf: &mut [u8], force: Vec3, heartbeat: u64) -> (usize, bool) {
        let len = self.output.length;
        buf[..len].fill(0);
        buf[0] = self.output.report_id;
        if let (Some(command), Some(arm)) = (&self.output.calibration, &mut self.arm) {
            if arm.firmware.is_some_and(|f| f.pending) {
                let saturated = arm.encode_calibration(command, &self.input, buf);
                if let Some(h) = &self.output.heartbeat {
                    h.write_counter(buf, heartbeat);
                }
                return (len, saturated);
            }
        }
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
    /// A board that calibrates itself: asks for its command (`asks`), and takes it once
    /// its counts are nearer the calibration counts than to where they were (then they
    /// count from the zero angles); a command not taken within
    /// [`CALIBRATION_RESEND_REPORTS`] reports is sent again.
    fn follow_firmware(&mut self, asks: bool) {
        let Some(f) = self.firmware.as_mut() else {
            return;
        };
        match f.sent {
            Some((before, reports)) => {
                let distance = |a: &[f64; 3], b: &[f64; 3]| -> f64 {
                    a.iter().zip(b).map(|(a, b)| (a - b).abs()).sum()
                };
                if distance(&self.counts, &f.target) <= distance(&self.counts, &before) {
                    self.reference = f.target;
                    f.sent = None;
                } else if reports + 1 >= CALIBRATION_RESEND_REPORTS {
                    f.sent = None;
                    f.pending = true;
                } else {
                    f.sent = Some((before, reports + 1));
                }
            }
            None => f.pending |= asks,
        }
    }

    /// Writes the calibration command into `buf` and marks it sent; returns whether a
    /// count saturated its field.
    fn encode_calibration(
        &mut self,
        command: &CalibrationCommand,
        input: &InputReport,
        buf: &mut [u8],
    ) -> bool {
        let Some(f) = self.firmware.as_mut() else {
            return false;
        };
        command.command.write_counter(buf, command.code);
        let mut saturated = false;
        // The board's raw counts: palpa's counts undo the input fields' scales.
        let input_scales = input
            .joints
            .map_or([1.0; 3], |j| j.fields().map(|f| f.scale));
        for ((field, target), scale) in command
            .counts
            .fields()
            .into_iter()
            .zip(f.target)
            .zip(input_scales)
        {
            saturated |= field.write(buf, target / scale);
        }
        f.pending = false;
        f.sent = Some((self.counts, 0));
        saturated
    }

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
