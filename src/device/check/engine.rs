//! The check's 1 kHz tick: read the device, run the step at hand, command at most
//! [`MAX_CHECK_FORCE`], zero it in the same tick when the handle runs away. No
//! allocation, lock or blocking in the tick (the findings' vector is reserved up front);
//! the operator is told of each step through [`Operator::show`], which must not block.

use super::findings::{Finding, Outcome};
use super::plan::{
    push_envelope, Plan, Prompt, PushPhase, Step, ABORT_DISPLACEMENT, ABORT_SPEED,
    CALIBRATION_SETTLE, CALIBRATION_TOLERANCE, DIRECTION_COSINE, MAX_CHECK_FORCE, MIN_JOINT_MOTION,
    MIN_PUSH_MOTION, MOVE_DETECT, MOVE_RETURN, PUSH_FORCE, SETTLE_TIME, SPEED_WINDOW,
    STALE_DURING_PUSH, STILL_RADIUS, STILL_TIME, USER_TIMEOUT, WORKSPACE_COVERAGE,
};
use crate::device::profile::Calibration;
use crate::device::{CalibrationRequest, DeviceError, DeviceSample, HapticDevice};
use crate::Vec3;

/// The person at the device, as the check talks to them.
pub trait Operator: Send {
    /// A new instruction; called from the check's loop once per step: must not block.
    fn show(&mut self, prompt: Prompt);
    /// Whether the person confirmed (pressed Enter) since the last call.
    fn confirmed(&mut self) -> bool;
}

/// Most findings one check records (the vector never grows in the tick).
const MAX_FINDINGS: usize = 64;

/// Where the step at hand is.
#[derive(Clone, Copy, Debug)]
enum StepState {
    /// Just begun.
    Fresh,
    /// Waiting for the person's Enter.
    Waiting,
    /// A calibration was asked for; judged by `deadline`.
    Calibrating { deadline: f64, before: f64 },
    /// A move: where the handle rests (since when, and whether long enough to start
    /// judging from there), its joint angles there, and whether the motion was seen.
    Moving {
        start: Vec3,
        since: f64,
        settled: bool,
        angles: Option<[f64; 3]>,
        seen: bool,
    },
    /// A push along `direction` (device frame, unit) from `start`.
    Pushing {
        began: f64,
        start: Vec3,
        direction: Vec3,
        baseline: Sums,
        measured: Sums,
    },
}

/// Running sums of positions and joint angles over a window.
#[derive(Clone, Copy, Debug, Default)]
struct Sums {
    position: Vec3,
    angles: [f64; 3],
    n: u32,
}

impl Sums {
    fn add(&mut self, position: Vec3, angles: Option<[f64; 3]>) {
        self.position += position;
        if let Some(a) = angles {
            (0..3).for_each(|i| self.angles[i] += a[i]);
        }
        self.n += 1;
    }

    fn mean(&self) -> (Vec3, [f64; 3]) {
        let n = f64::from(self.n.max(1));
        (self.position / n, self.angles.map(|a| a / n))
    }
}

/// The check's state between ticks.
pub struct CheckLoop {
    plan: Plan,
    step: usize,
    step_start: f64,
    state: StepState,
    findings: Vec<Finding>,
    sample: DeviceSample,
    last_sequence: Option<u64>,
    last_fresh: f64,
    fresh: u64,
    /// Positions and times of the last ticks, for the speed.
    history: [(f64, Vec3); SPEED_WINDOW],
    ticks: usize,
    reach: Option<(Vec3, Vec3)>,
    positions_ok: bool,
    max_force: f64,
    calibration: Option<CalibrationRequest>,
    done: bool,
}

impl CheckLoop {
    /// The check of `plan`; `calibration` is the device's calibration request.
    pub fn new(plan: Plan, calibration: Option<CalibrationRequest>) -> Self {
        Self {
            plan,
            step: 0,
            step_start: 0.0,
            state: StepState::Fresh,
            findings: Vec::with_capacity(MAX_FINDINGS),
            sample: DeviceSample::ORIGIN,
            last_sequence: None,
            last_fresh: 0.0,
            fresh: 0,
            history: [(0.0, Vec3::zeros()); SPEED_WINDOW],
            ticks: 0,
            reach: None,
            positions_ok: true,
            max_force: 0.0,
            calibration,
            done: false,
        }
    }

    /// The plan checked.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Whether every step ran (passed or not).
    pub fn finished(&self) -> bool {
        self.step >= self.plan.steps.len()
    }

    /// What the check found (call once the loop has ended).
    pub fn outcome(&self) -> Outcome {
        Outcome {
            findings: self.findings.clone(),
            max_force: self.max_force,
        }
    }

    fn find(&mut self, f: Finding) {
        if self.findings.len() < MAX_FINDINGS {
            self.findings.push(f);
        }
    }

    fn next_step(&mut self, t: f64) {
        self.step += 1;
        self.step_start = t;
        self.state = StepState::Fresh;
        if self.step >= self.plan.steps.len() {
            self.done = true;
        }
    }

    fn finish(&mut self, f: Finding) {
        self.find(f);
        self.done = true;
    }

    /// One tick at loop time `t` (s): returns whether the check goes on. Once it does
    /// not, the force written was zero.
    pub fn tick(
        &mut self,
        t: f64,
        device: &mut dyn HapticDevice,
        operator: &mut dyn Operator,
    ) -> bool {
        if self.done {
            let _ = device.zero_force();
            return false;
        }
        let step = self.plan.steps[self.step];
        match device.read(t) {
            Ok(s) if s.position.iter().all(|c| c.is_finite()) => self.take(t, s),
            _ => {
                let _ = device.zero_force();
                self.finish(Finding::DeviceLost { step });
                operator.show(Prompt::Done);
                return false;
            }
        }
        let force = self.run_step(t, step, device, operator);
        let force = limit(force);
        self.max_force = self.max_force.max(force.norm());
        match device.write_force(force) {
            Ok(()) | Err(DeviceError::Transient(_)) => {}
            Err(_) => self.finish(Finding::DeviceLost { step }),
        }
        if self.done {
            let _ = device.zero_force();
            operator.show(Prompt::Done);
        }
        !self.done
    }

    fn take(&mut self, t: f64, s: DeviceSample) {
        if self.last_sequence != Some(s.sequence) {
            if self.last_sequence.is_some() {
                self.fresh += 1;
            }
            self.last_sequence = Some(s.sequence);
            self.last_fresh = t;
        }
        self.sample = s;
        self.history[self.ticks % SPEED_WINDOW] = (t, s.position);
        self.ticks += 1;
    }

    /// Speed over the last ticks (m/s).
    fn speed(&self) -> f64 {
        if self.ticks < SPEED_WINDOW {
            return 0.0;
        }
        let newest = self.history[(self.ticks - 1) % SPEED_WINDOW];
        let oldest = self.history[self.ticks % SPEED_WINDOW];
        // Ticks that came late and then in a burst (a servo thread catching up) are
        // still a millisecond of the device's motion each.
        let dt = (newest.0 - oldest.0).max((SPEED_WINDOW - 1) as f64 * 1e-3);
        (newest.1 - oldest.1).norm() / dt
    }

    fn run_step(
        &mut self,
        t: f64,
        step: Step,
        device: &mut dyn HapticDevice,
        operator: &mut dyn Operator,
    ) -> Vec3 {
        let elapsed = t - self.step_start;
        match step {
            Step::Settle => {
                if elapsed >= SETTLE_TIME {
                    if self.fresh == 0 {
                        self.finish(Finding::NoSamples);
                    } else {
                        self.find(Finding::Samples { count: self.fresh });
                        self.next_step(t);
                    }
                }
            }
            Step::Calibrate => self.calibrate(t, elapsed, operator),
            Step::Move { axis, positive } => {
                self.follow_move(t, elapsed, step, axis, positive, device, operator)
            }
            Step::Workspace => {
                self.judge_workspace();
                self.next_step(t);
            }
            Step::Hold => {
                if !self.positions_ok {
                    self.finish(Finding::ForcesSkipped);
                } else if self.wait_for_enter(elapsed, Prompt::HoldForForces, operator) {
                    operator.show(Prompt::Pushing);
                    self.next_step(t);
                }
            }
            Step::PushAxis { .. } | Step::PushJoint { .. } => {
                return self.push(t, step, device);
            }
        }
        Vec3::zeros()
    }

    /// Shows `prompt` on entry and reports the Enter; a person who does not answer in
    /// time ends the check.
    fn wait_for_enter(
        &mut self,
        elapsed: f64,
        prompt: Prompt,
        operator: &mut dyn Operator,
    ) -> bool {
        if let StepState::Fresh = self.state {
            operator.show(prompt);
            operator.confirmed();
            self.state = StepState::Waiting;
            return false;
        }
        if operator.confirmed() {
            return true;
        }
        if elapsed > USER_TIMEOUT {
            let step = self.plan.steps[self.step];
            self.finish(Finding::NoAnswer { step });
        }
        false
    }

    fn calibrate(&mut self, t: f64, elapsed: f64, operator: &mut dyn Operator) {
        let Some((tip, mode)) = self
            .plan
            .arm
            .as_ref()
            .map(|a| (a.calibration_tip, a.calibration))
        else {
            self.next_step(t);
            return;
        };
        let error = (self.sample.position - tip).norm();
        match self.state {
            StepState::Calibrating { deadline, before } => {
                if error < CALIBRATION_TOLERANCE.min(1e-3) {
                    self.find(Finding::Calibration {
                        error: before,
                        fixed: true,
                    });
                    self.next_step(t);
                } else if t >= deadline {
                    self.positions_ok = false;
                    self.find(Finding::CalibrationIgnored { error });
                    self.next_step(t);
                }
            }
            _ => {
                if !self.wait_for_enter(elapsed, Prompt::CalibrationPose, operator) {
                    if self.done {
                        self.positions_ok = false;
                    }
                    return;
                }
                let calibrate_here = match mode {
                    Calibration::Absolute => false,
                    Calibration::PowerOn => error >= CALIBRATION_TOLERANCE,
                    Calibration::Firmware => true,
                };
                if calibrate_here {
                    if let Some(request) = &self.calibration {
                        request.request();
                    }
                    self.state = StepState::Calibrating {
                        deadline: t + CALIBRATION_SETTLE,
                        before: error,
                    };
                } else {
                    if error >= CALIBRATION_TOLERANCE {
                        self.positions_ok = false;
                        self.find(Finding::CalibrationOff { error });
                    } else {
                        self.find(Finding::Calibration {
                            error,
                            fixed: false,
                        });
                    }
                    self.next_step(t);
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn follow_move(
        &mut self,
        t: f64,
        elapsed: f64,
        step: Step,
        axis: usize,
        positive: bool,
        device: &mut dyn HapticDevice,
        operator: &mut dyn Operator,
    ) {
        let p = self.sample.position;
        if matches!(self.state, StepState::Moving { settled: true, .. }) {
            // The reach the moves show, from where each began.
            self.reach = Some(match self.reach {
                Some((lo, hi)) => (lo.inf(&p), hi.sup(&p)),
                None => (p, p),
            });
        }
        let StepState::Moving {
            start,
            since,
            settled,
            angles,
            seen,
        } = self.state
        else {
            operator.show(Prompt::Move { axis, positive });
            self.state = StepState::Moving {
                start: p,
                since: t,
                settled: false,
                angles: None,
                seen: false,
            };
            return;
        };
        if elapsed > USER_TIMEOUT {
            if !seen {
                self.positions_ok = false;
                self.find(Finding::NoMotion { step });
            }
            self.next_step(t);
            return;
        }
        // The move is judged from where the handle rested still.
        if !settled {
            self.state = if (p - start).norm() > STILL_RADIUS {
                StepState::Moving {
                    start: p,
                    since: t,
                    settled,
                    angles,
                    seen,
                }
            } else if t - since >= STILL_TIME {
                StepState::Moving {
                    start,
                    since,
                    settled: true,
                    angles: device.joint_angles(),
                    seen,
                }
            } else {
                self.state
            };
            return;
        }
        let moved = p - start;
        if !seen && moved.norm() >= MOVE_DETECT {
            let target = unit_axis(axis, positive);
            let seen_dir = moved / moved.norm();
            let cosine = seen_dir.dot(&target);
            if cosine >= DIRECTION_COSINE {
                self.find(Finding::Moved { step, cosine });
            } else {
                self.positions_ok = false;
                let encoder = self.reversed_encoder(angles, device.joint_angles(), target);
                self.find(Finding::MovedWrongWay {
                    step,
                    seen: seen_dir,
                    encoder,
                });
            }
            self.state = StepState::Moving {
                start,
                since,
                settled,
                angles,
                seen: true,
            };
        } else if seen && moved.norm() <= MOVE_RETURN {
            self.next_step(t);
        }
    }

    /// The joint whose encoder, counted the other way, turns the motion palpa saw into
    /// one along `target`.
    fn reversed_encoder(
        &self,
        before: Option<[f64; 3]>,
        after: Option<[f64; 3]>,
        target: Vec3,
    ) -> Option<usize> {
        let arm = self.plan.arm.as_ref()?;
        let (before, after) = (before?, after?);
        let jacobian = arm.linkage.jacobian(before)?;
        (0..3).find(|&j| {
            let mut turned = Vec3::from(std::array::from_fn::<f64, 3, _>(|i| after[i] - before[i]));
            turned[j] = -turned[j];
            let raw = jacobian * turned;
            let motion = arm.axes.to_device([raw.x, raw.y, raw.z]);
            motion
                .try_normalize(1e-12)
                .is_some_and(|m| m.dot(&target) >= DIRECTION_COSINE)
        })
    }

    fn judge_workspace(&mut self) {
        let (Some(w), Some((lo, hi))) = (self.plan.workspace, self.reach) else {
            return;
        };
        for axis in 0..3 {
            let (b_lo, b_hi) = (
                w.centre[axis] - w.half_extent[axis],
                w.centre[axis] + w.half_extent[axis],
            );
            let covered = (hi[axis].min(b_hi) - lo[axis].max(b_lo)).max(0.0);
            let coverage = covered / (b_hi - b_lo);
            if coverage < WORKSPACE_COVERAGE {
                self.positions_ok = false;
            }
            self.find(Finding::Workspace {
                axis,
                reached: (lo[axis], hi[axis]),
                box_range: (b_lo, b_hi),
                coverage,
            });
        }
    }

    fn push(&mut self, t: f64, step: Step, device: &mut dyn HapticDevice) -> Vec3 {
        let p = self.sample.position;
        let angles = device.joint_angles();
        let StepState::Pushing {
            began,
            start,
            direction,
            mut baseline,
            mut measured,
        } = self.state
        else {
            match self.push_direction(step, angles) {
                Some(direction) => {
                    self.state = StepState::Pushing {
                        began: t,
                        start: p,
                        direction,
                        baseline: Sums::default(),
                        measured: Sums::default(),
                    };
                }
                None => {
                    self.find(Finding::PushTooSmall { step, total: 0.0 });
                    self.next_step(t);
                }
            }
            return Vec3::zeros();
        };
        let displacement = (p - start).norm();
        let speed = self.speed();
        if displacement > ABORT_DISPLACEMENT || speed > ABORT_SPEED {
            self.finish(Finding::Aborted {
                step,
                displacement,
                speed,
            });
            return Vec3::zeros();
        }
        if t - self.last_fresh > STALE_DURING_PUSH {
            self.finish(Finding::DeviceLost { step });
            return Vec3::zeros();
        }
        let (gain, phase) = push_envelope(t - began);
        match phase {
            PushPhase::Baseline => baseline.add(p, angles),
            PushPhase::Measure => measured.add(p, angles),
            PushPhase::Over => {
                self.judge_push(step, direction, &baseline, &measured);
                self.next_step(t);
                return Vec3::zeros();
            }
            PushPhase::Rest | PushPhase::Ramp => {}
        }
        self.state = StepState::Pushing {
            began,
            start,
            direction,
            baseline,
            measured,
        };
        direction * (PUSH_FORCE * gain)
    }

    /// The push's direction (device frame, unit): an axis, or the tip force that turns
    /// one joint alone (J⁻ᵀ eⱼ at the pose where the push begins).
    fn push_direction(&self, step: Step, angles: Option<[f64; 3]>) -> Option<Vec3> {
        match step {
            Step::PushAxis { axis, positive } => Some(unit_axis(axis, positive)),
            Step::PushJoint { joint, positive } => {
                let arm = self.plan.arm.as_ref()?;
                let inverse = arm.linkage.jacobian(angles?)?.transpose().try_inverse()?;
                let raw = inverse.column(joint).into_owned() * if positive { 1.0 } else { -1.0 };
                arm.axes
                    .to_device([raw.x, raw.y, raw.z])
                    .try_normalize(1e-12)
            }
            _ => None,
        }
    }

    fn judge_push(&mut self, step: Step, direction: Vec3, baseline: &Sums, measured: &Sums) {
        let (p0, a0) = baseline.mean();
        let (p1, a1) = measured.mean();
        let (along, total, least) = match step {
            Step::PushJoint { joint, positive } => {
                let turned: [f64; 3] = std::array::from_fn(|i| a1[i] - a0[i]);
                let sign = if positive { 1.0 } else { -1.0 };
                (
                    sign * turned[joint],
                    Vec3::from(turned).norm(),
                    MIN_JOINT_MOTION,
                )
            }
            _ => {
                let moved = p1 - p0;
                (moved.dot(&direction), moved.norm(), MIN_PUSH_MOTION)
            }
        };
        self.find(if total < least {
            Finding::PushTooSmall { step, total }
        } else if along < 0.0 {
            Finding::PushedBackwards { step, along }
        } else {
            Finding::Pushed { step, along, total }
        });
    }
}

/// A force no larger than [`MAX_CHECK_FORCE`]; zero when not finite.
fn limit(force: Vec3) -> Vec3 {
    let n = force.norm();
    if !n.is_finite() {
        Vec3::zeros()
    } else if n > MAX_CHECK_FORCE {
        force * (MAX_CHECK_FORCE / n)
    } else {
        force
    }
}

fn unit_axis(axis: usize, positive: bool) -> Vec3 {
    let mut v = Vec3::zeros();
    v[axis] = if positive { 1.0 } else { -1.0 };
    v
}
