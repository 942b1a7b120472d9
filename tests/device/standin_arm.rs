//! A stand-in WoodenHaptics arm behind its USB HID firmware, written from the public
//! configuration and firmware (not from palpa's kinematics): a 3R capstan arm whose tip a
//! hand holds through a spring, driven by the currents the host writes, answering every
//! output report with one input report at once (as the mbed firmware's send-then-read
//! loop does), so a check in virtual time runs as it would at 1 kHz on a bench.
//!
//! Layouts: WoodenHaptics 1.5 (8 bytes, encoders negated by the driver, counters 0 at
//! power-on) and the haptikfabriken protocol v2 (14 bytes, counters 0 at power-on, command
//! 1 sets them, `info` asks for it). A motor can be wired the other way, the hand can let
//! go (the arm runs away), and every exchange is logged for the tests' measurements.

use std::collections::VecDeque;
use std::f64::consts::{FRAC_PI_2, TAU};
use std::sync::{Arc, Mutex};

use palpa::device::check::{Operator, Prompt};
use palpa::device::hid::{ReportTransport, TransportError};
use palpa::{Mat3, Vec3};

/// Link lengths La, Lb, Lc (m), body and capstan diameters (m), counts per motor
/// revolution, torque constant (N·m/A) and the workspace origin (m): the public
/// WoodenHaptics configuration.
const LINKS: [f64; 3] = [0.080, 0.205, 0.245];
const BODY: [f64; 3] = [0.160, 0.120, 0.120];
const CAPSTAN: f64 = 0.010;
/// Joint torque per motor torque: the capstan reductions.
pub const BODY_OVER_CAPSTAN: [f64; 3] = [16.0, 12.0, 12.0];
const CPR: f64 = 2000.0;
/// The motors' torque constant (N·m/A).
pub const TORQUE_CONSTANT: f64 = 0.0259;
const ORIGIN: Vec3 = Vec3::new(0.220, 0.0, 0.080);
/// The calibration pose's joint angles (rad).
pub const CALIBRATION_ANGLES: [f64; 3] = [0.0, 0.0, FRAC_PI_2];

/// One exchange: 1 ms of device time.
pub const DT: f64 = 1e-3;
/// Joint inertia (kg·m²) and viscous friction (N·m·s/rad).
const INERTIA: f64 = 0.002;
const FRICTION: f64 = 0.01;
/// The hand holding the tip lightly: stiffness (N/m) and damping (N·s/m).
const HAND_STIFFNESS: f64 = 300.0;
const HAND_DAMPING: f64 = 6.0;
/// How far the hand moves the handle along an axis when asked (m).
pub const MOVE_REACH: f64 = 0.045;

/// The firmware's report layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// WoodenHaptics 1.5 HID: 8 bytes; counts = −encoder.
    WoodenHaptics,
    /// haptikfabriken protocol v2: 14 bytes; counts = encoder; `info` and command 1.
    ProtocolV2,
}

/// The tip (m, the profile's frame: base frame less the workspace origin) at joint
/// angles θ: the public driver's equations.
pub fn tip(theta: [f64; 3]) -> Vec3 {
    let [la, lb, lc] = LINKS;
    let reach = lb * theta[1].sin() + lc * theta[2].sin();
    Vec3::new(
        theta[0].cos() * reach,
        theta[0].sin() * reach,
        la + lb * theta[1].cos() - lc * theta[2].cos(),
    ) - ORIGIN
}

/// ∂tip/∂θ by central differences.
pub fn jacobian(theta: [f64; 3]) -> Mat3 {
    let h = 1e-7;
    let mut j = Mat3::zeros();
    for k in 0..3 {
        let (mut a, mut b) = (theta, theta);
        a[k] += h;
        b[k] -= h;
        j.set_column(k, &((tip(a) - tip(b)) / (2.0 * h)));
    }
    j
}

/// Joint angle per driver count of joint k (rad).
fn per_count(k: usize) -> f64 {
    TAU / CPR * CAPSTAN / BODY[k]
}

/// What the hand does.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Hand {
    /// Holds the tip at a point.
    Hold(Vec3),
    /// From `from`, settles at the middle, then moves along `axis` and back, from `t0`.
    Move {
        from: Vec3,
        axis: usize,
        sign: f64,
        t0: f64,
    },
    /// Gone: the tip is free.
    LetGo,
}

/// The arm, its firmware and the hand, and what they logged.
pub struct ArmState {
    layout: Layout,
    theta: [f64; 3],
    omega: [f64; 3],
    /// Counter offsets: firmware counters read (driver counts − offset).
    offset: [f64; 3],
    info: bool,
    sequence: u16,
    time: f64,
    hand: Hand,
    hand_at: Vec3,
    /// Motor wiring: −1 turns a motor the other way.
    pub wiring: [f64; 3],
    /// Let go of the handle when the pushes begin.
    pub lets_go: bool,
    confirm_at: Option<f64>,
    /// Every exchange: device time, the joint angles reported (rad, quantized as the
    /// encoders count), the currents received (A).
    pub log: Vec<Exchange>,
    /// Where the hand let go (m), and when (s).
    pub let_go: Option<(Vec3, f64)>,
    /// Command-1 reports received.
    pub calibrations: u32,
    pending: VecDeque<Vec<u8>>,
}

/// One exchange with the host.
#[derive(Clone, Copy, Debug)]
pub struct Exchange {
    /// Device time (s).
    pub t: f64,
    /// The angles the report carried (quantized).
    pub reported: [f64; 3],
    /// The currents the host wrote after reading it (A).
    pub currents: [f64; 3],
}

impl ArmState {
    /// An arm powered on at the calibration pose, held there by the hand.
    pub fn new(layout: Layout) -> Self {
        Self::power_on_at(layout, CALIBRATION_ANGLES)
    }

    /// An arm powered on at joint angles `theta` (its counters read 0 there), held there.
    pub fn power_on_at(layout: Layout, theta: [f64; 3]) -> Self {
        let zero: [f64; 3] = std::array::from_fn(|k| (theta[k] / per_count(k)).round());
        let mut arm = Self {
            layout,
            theta,
            omega: [0.0; 3],
            offset: zero,
            info: false,
            sequence: 0,
            time: 0.0,
            hand: Hand::Hold(tip(theta)),
            hand_at: tip(theta),
            wiring: [1.0; 3],
            lets_go: false,
            confirm_at: None,
            log: Vec::new(),
            let_go: None,
            calibrations: 0,
            pending: VecDeque::new(),
        };
        let report = arm.report();
        arm.pending.push_back(report);
        arm
    }

    /// The person moves the arm to `theta` and holds it there.
    pub fn place(&mut self, theta: [f64; 3]) {
        self.theta = theta;
        self.omega = [0.0; 3];
        self.hand = Hand::Hold(tip(theta));
    }

    /// The person presses the board's calibration button (protocol v2: `info` = 1 until
    /// command 1 comes).
    pub fn press_calibration_button(&mut self) {
        self.info = true;
    }

    /// The input report the board sends now.
    pub fn report_bytes(&mut self) -> Vec<u8> {
        self.report()
    }

    /// Driver counts of the true angles (the encoders' resolution).
    fn counts(&self) -> [f64; 3] {
        std::array::from_fn(|k| (self.theta[k] / per_count(k)).round())
    }

    /// The angles the encoders report.
    pub fn reported_angles(&self) -> [f64; 3] {
        let c = self.counts();
        std::array::from_fn(|k| c[k] * per_count(k))
    }

    fn report(&mut self) -> Vec<u8> {
        self.sequence = self.sequence.wrapping_add(1);
        let counters = self.counts();
        let mut raw = [0i16; 3];
        for k in 0..3 {
            raw[k] = (counters[k] - self.offset[k]) as i16;
        }
        match self.layout {
            Layout::WoodenHaptics => {
                let mut r = vec![0u8; 8];
                for k in 0..3 {
                    r[2 * k..2 * k + 2].copy_from_slice(&(-raw[k]).to_le_bytes());
                }
                r[6..8].copy_from_slice(&self.sequence.to_le_bytes());
                r
            }
            Layout::ProtocolV2 => {
                let mut r = vec![0u8; 14];
                for k in 0..3 {
                    r[2 * k..2 * k + 2].copy_from_slice(&raw[k].to_le_bytes());
                }
                r[12..14].copy_from_slice(&i16::from(self.info).to_le_bytes());
                r
            }
        }
    }

    /// The hand's target at device time `t` (m).
    fn hand_target(&self, t: f64) -> Option<Vec3> {
        let smooth = |x: f64| 0.5 - 0.5 * (std::f64::consts::PI * x.clamp(0.0, 1.0)).cos();
        match self.hand {
            Hand::Hold(p) => Some(p),
            Hand::LetGo => None,
            Hand::Move {
                from,
                axis,
                sign,
                t0,
            } => {
                let s = t - t0;
                let mut out = Vec3::zeros();
                out[axis] = sign * MOVE_REACH;
                Some(if s < 1.0 {
                    from * (1.0 - smooth(s))
                } else if s < 1.8 {
                    Vec3::zeros()
                } else if s < 2.6 {
                    out * smooth((s - 1.8) / 0.8)
                } else {
                    out * (1.0 - smooth((s - 2.6) / 0.8))
                })
            }
        }
    }

    /// One millisecond with motor currents `currents` (A, as written).
    fn step(&mut self, currents: [f64; 3]) {
        let p = tip(self.theta);
        let j = jacobian(self.theta);
        let velocity = j * Vec3::from(self.omega);
        let hand_force = match self.hand_target(self.time) {
            Some(target) => (target - p) * HAND_STIFFNESS - velocity * HAND_DAMPING,
            None => Vec3::zeros(),
        };
        let from_hand = j.transpose() * hand_force;
        for k in 0..3 {
            // Motor torque k_t·I, through the capstan: body/capstan more at the joint.
            let motor = self.wiring[k] * currents[k] * TORQUE_CONSTANT * BODY[k] / CAPSTAN;
            let torque = motor + from_hand[k] - FRICTION * self.omega[k];
            self.omega[k] += torque / INERTIA * DT;
            self.theta[k] += self.omega[k] * DT;
        }
        self.time += DT;
        self.hand_at = self.hand_target(self.time).unwrap_or(self.hand_at);
    }

    /// The host's output report: currents, or the v2 firmware's command 1.
    fn receive(&mut self, out: &[u8]) {
        let word = |o: usize| i16::from_le_bytes([out[o], out[o + 1]]);
        let currents = [word(1), word(3), word(5)].map(|m| f64::from(m) * 1e-3);
        let reported = self.reported_angles();
        if self.layout == Layout::ProtocolV2 && out.len() >= 15 && word(7) == 1 {
            // Command 1: the counters take the arguments; no current this report.
            let c = self.counts();
            self.offset = std::array::from_fn(|k| c[k] - f64::from(word(9 + 2 * k)));
            self.info = false;
            self.calibrations += 1;
            self.log.push(Exchange {
                t: self.time,
                reported,
                currents: [0.0; 3],
            });
            self.step([0.0; 3]);
        } else {
            self.log.push(Exchange {
                t: self.time,
                reported,
                currents,
            });
            self.step(currents);
        }
        let report = self.report();
        self.pending.push_back(report);
    }
}

/// The host end of the stand-in: every write steps the arm and queues its answer.
pub struct SyncTransport(pub Arc<Mutex<ArmState>>);

impl ReportTransport for SyncTransport {
    fn read_timeout(&mut self, buf: &mut [u8], _timeout_ms: i32) -> Result<usize, TransportError> {
        Ok(match self.0.lock().unwrap().pending.pop_front() {
            Some(r) => {
                buf[..r.len()].copy_from_slice(&r);
                r.len()
            }
            None => 0,
        })
    }

    fn write(&mut self, report: &[u8]) -> Result<usize, TransportError> {
        self.0.lock().unwrap().receive(report);
        Ok(report.len())
    }

    fn reopen(&mut self) -> Result<(), TransportError> {
        Ok(())
    }

    fn describe(&self) -> String {
        "stand-in arm".into()
    }

    fn serial(&self) -> Option<String> {
        Some("STANDIN-1".into())
    }
}

/// The person at the stand-in: does what each prompt asks, in the arm's time.
pub struct ScriptedHand(pub Arc<Mutex<ArmState>>);

impl Operator for ScriptedHand {
    fn show(&mut self, prompt: Prompt) {
        let mut arm = self.0.lock().unwrap();
        let (t, at) = (arm.time, arm.hand_at);
        match prompt {
            Prompt::CalibrationPose => {
                arm.hand = Hand::Hold(tip(CALIBRATION_ANGLES));
                arm.confirm_at = Some(t + 0.5);
            }
            Prompt::Move { axis, positive } => {
                arm.hand = Hand::Move {
                    from: at,
                    axis,
                    sign: if positive { 1.0 } else { -1.0 },
                    t0: t,
                };
            }
            Prompt::HoldForForces => {
                arm.hand = Hand::Hold(Vec3::zeros());
                arm.confirm_at = Some(t + 1.5);
            }
            Prompt::Pushing if arm.lets_go => {
                arm.hand = Hand::LetGo;
                let p = tip(arm.theta);
                arm.let_go = Some((p, t));
            }
            Prompt::Pushing | Prompt::Done => {}
        }
    }

    fn confirmed(&mut self) -> bool {
        let mut arm = self.0.lock().unwrap();
        match arm.confirm_at {
            Some(at) if arm.time >= at => {
                arm.confirm_at = None;
                true
            }
            _ => false,
        }
    }
}
