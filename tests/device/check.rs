//! `palpa devices check` against the stand-in WoodenHaptics arm, in virtual time, through
//! the same device code `serve` drives (the shipped profile, the HID device, its codec):
//! a correct arm passes; an arm with motor b or c wired the other way fails with that
//! joint and the profile line that fixes it; an arm the hand lets go of is aborted with
//! zero force within 2 ms; no check commands more than 0.5 N at the tip (computed from
//! the currents the stand-in received, with the stand-in's own kinematics). And the
//! haptikfabriken v2 board, which counts from 0 at power-on and waits for command 1, gets
//! it and decodes the calibration pose to within 1e-9 m.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use palpa::device::check::{self, CheckLoop, Finding, Outcome, Pacing, Plan};
use palpa::device::hid::HidDevice;
use palpa::device::profile::{DeviceProfile, SHIPPED_PROFILES};
use palpa::device::HapticDevice;
use palpa::Vec3;

use super::standin_arm::{
    jacobian, tip, ArmState, Layout, ScriptedHand, SyncTransport, BODY_OVER_CAPSTAN,
    CALIBRATION_ANGLES, TORQUE_CONSTANT,
};

fn shipped(name: &str) -> DeviceProfile {
    DeviceProfile::shipped()
        .into_iter()
        .find(|p| p.name == name)
        .unwrap()
}

/// Runs a whole check of `profile` on a stand-in arm set up by `setup`.
fn check_arm(
    profile: &str,
    layout: Layout,
    setup: impl FnOnce(&mut ArmState),
) -> (Outcome, String, Arc<Mutex<ArmState>>) {
    let mut arm = ArmState::new(layout);
    setup(&mut arm);
    let arm = Arc::new(Mutex::new(arm));
    let profile = shipped(profile);
    let mut device = HidDevice::new(SyncTransport(arm.clone()), profile.clone());
    let plan = Plan::new(
        device.rating().workspace,
        Some(&profile),
        Some(format!("profiles/{}.toml", profile.name)),
    );
    let mut check = CheckLoop::new(plan, device.calibration_request());
    let mut hand = ScriptedHand(arm.clone());
    let outcome = check::run(
        &mut check,
        &mut device,
        &mut hand,
        Pacing::Virtual {
            dt: 1e-3,
            limit: 120.0,
        },
        &AtomicBool::new(false),
    );
    let report = outcome.report(check.plan());
    (outcome, report, arm)
}

/// The largest tip force (N) the host commanded over the whole run: each exchange's
/// currents as motor torques, through the capstans, as a tip force at the pose the host
/// was told (the reported angles), by the stand-in's kinematics.
fn largest_commanded_force(arm: &ArmState) -> f64 {
    arm.log
        .iter()
        .map(|e| {
            let torque = Vec3::from(std::array::from_fn::<f64, 3, _>(|k| {
                e.currents[k] * TORQUE_CONSTANT * BODY_OVER_CAPSTAN[k]
            }));
            let force = jacobian(e.reported)
                .transpose()
                .try_inverse()
                .expect("a regular pose")
                * torque;
            force.norm()
        })
        .fold(0.0, f64::max)
}

#[test]
fn a_correct_arm_passes_every_step_and_never_gets_more_than_half_a_newton() {
    let (outcome, report, arm) = check_arm("woodenhaptics", Layout::WoodenHaptics, |_| {});
    assert!(outcome.passed(), "{report}");
    let steps = |f: &dyn Fn(&Finding) -> bool| outcome.findings.iter().filter(|x| f(x)).count();
    assert_eq!(
        steps(&|f| matches!(f, Finding::Moved { .. })),
        6,
        "{report}"
    );
    assert_eq!(
        steps(&|f| matches!(f, Finding::Pushed { .. })),
        12,
        "{report}"
    );
    assert!(outcome.reversed_motors().is_empty());
    let arm = arm.lock().unwrap();
    let largest = largest_commanded_force(&arm);
    eprintln!("correct arm: largest tip force commanded {largest:.4} N\n{report}");
    // The currents are whole milliamperes: 1 mA is about 1.6 mN at the tip.
    assert!(largest <= 0.5, "{largest} N");
    assert!(largest > 0.45, "the pushes reach their 0.5 N: {largest} N");
    assert!(outcome.max_force <= 0.5 + 1e-12);
    let last = arm.log.last().unwrap();
    assert_eq!(last.currents, [0.0; 3], "the check ends at zero force");
}

#[test]
fn an_arm_with_motor_b_or_c_wired_the_other_way_is_named_with_the_line_that_fixes_it() {
    for (joint, name, offset) in [(1, "b", 3), (2, "c", 5)] {
        let (outcome, report, arm) = check_arm("woodenhaptics", Layout::WoodenHaptics, |arm| {
            arm.wiring[joint] = -1.0;
        });
        eprintln!("motor {name} reversed:\n{report}");
        assert!(!outcome.passed(), "{report}");
        assert_eq!(outcome.reversed_motors(), vec![joint], "{report}");
        let fix = format!(
            "joint {name}'s motor is wired the other way: in profiles/woodenhaptics.toml, under \
             [output.currents], write `{name} = {{ offset = {offset}, type = \"i16\", scale = -0.001 }}`"
        );
        assert!(report.contains(&fix), "{fix}\nnot in:\n{report}");
        // The positions were right: only the motor is named, no encoder.
        assert!(!report.contains("encoder"), "{report}");
        let largest = largest_commanded_force(&arm.lock().unwrap());
        assert!(largest <= 0.5, "{largest} N");
    }
}

#[test]
fn an_arm_the_hand_lets_go_of_is_stopped_with_zero_force_within_two_milliseconds() {
    let (outcome, report, arm) = check_arm("woodenhaptics", Layout::WoodenHaptics, |arm| {
        arm.lets_go = true;
    });
    eprintln!("runaway:\n{report}");
    assert!(!outcome.passed());
    let aborted = outcome
        .findings
        .iter()
        .find(|f| matches!(f, Finding::Aborted { .. }))
        .unwrap_or_else(|| panic!("no abort:\n{report}"));
    let Finding::Aborted {
        displacement,
        speed,
        ..
    } = *aborted
    else {
        unreachable!()
    };
    assert!(
        displacement > 0.015 || speed > 0.25,
        "{displacement} m, {speed} m/s"
    );
    let arm = arm.lock().unwrap();
    let (released_at, released_t) = arm.let_go.expect("the hand let go");
    // The first report that shows the handle running away by the check's limits: beyond
    // 15 mm of where the hand let go, or faster than 0.25 m/s over the last 8 reports …
    let tips: Vec<Vec3> = arm.log.iter().map(|e| tip(e.reported)).collect();
    let released = arm.log.iter().position(|e| e.t >= released_t).unwrap();
    let beyond = (released.max(7)..tips.len())
        .find(|&i| {
            let fast = (tips[i] - tips[i - 7]).norm() / (arm.log[i].t - arm.log[i - 7].t);
            (tips[i] - released_at).norm() > 0.015 || fast > 0.25
        })
        .expect("the arm ran away");
    // … and from when on every current command is zero (a small force can round to
    // 0 mA now and then before it).
    let zero_from = (0..arm.log.len())
        .rev()
        .find(|&i| arm.log[i].currents != [0.0; 3])
        .map_or(0, |i| i + 1);
    assert!(zero_from < arm.log.len(), "the force ends at zero");
    let latency = (arm.log[zero_from].t - arm.log[beyond].t).max(0.0);
    eprintln!(
        "runaway: every command zero from {:.1} ms (device time) after the first report of \
         the handle running away ({} exchanges after it; 0: the command answering that \
         report)",
        latency * 1e3,
        zero_from.saturating_sub(beyond)
    );
    assert!(latency <= 2e-3 + 1e-9, "{} ms", latency * 1e3);
    assert!(largest_commanded_force(&arm) <= 0.5);
}

#[test]
fn a_haptikfabriken_v2_board_counting_from_zero_gets_command_1_and_decodes_the_calibration_pose() {
    // What palpa decoded before: a board powered on at the calibration pose counts 0, and
    // those counts read as absolute put the tip at the zero angles, link c a quarter turn
    // away.
    let text = SHIPPED_PROFILES
        .iter()
        .find(|(f, _)| *f == "haptikfabriken-v2.toml")
        .unwrap()
        .1;
    let start = text.find("[output.calibration]").unwrap();
    let end = text.find("[kinematics]").unwrap();
    let old_text = format!("{}{}", &text[..start], &text[end..])
        .replace("calibration = \"firmware\"", "calibration = \"absolute\"")
        .replace(
            "calibration_request = { offset = 12, type = \"i16\" }\n",
            "",
        );
    let old = DeviceProfile::from_toml(&old_text, "old.toml").unwrap();
    let at_pose = ArmState::new(Layout::ProtocolV2).report_bytes();
    let wrong = old.codec().decode_input(&at_pose).position;
    assert!(
        (wrong - Vec3::new(-0.22, 0.0, -0.04)).norm() < 1e-12,
        "{wrong}"
    );

    // Powered on elsewhere, its counters start at 0 there; then the person holds the
    // calibration pose and presses the board's button: it asks (info = 1).
    let arm = Arc::new(Mutex::new(ArmState::power_on_at(
        Layout::ProtocolV2,
        [0.3, 0.2, 1.2],
    )));
    let mut device = HidDevice::new(SyncTransport(arm.clone()), shipped("haptikfabriken-v2"));
    let calibration_pose = tip(CALIBRATION_ANGLES);
    // No force: the hand holds the arm still, so the counts the command sets are the
    // pose's to the count.
    let mut exchange = |k: u32| {
        let p = device.read(f64::from(k) * 1e-3).unwrap().position;
        device.write_force(Vec3::zeros()).unwrap();
        p
    };
    exchange(0);
    arm.lock().unwrap().place(CALIBRATION_ANGLES);
    exchange(1);
    let before = exchange(2);
    assert!(
        (before - calibration_pose).norm() > 0.05,
        "counting from where it was powered on, the pose is off: {before}"
    );
    arm.lock().unwrap().press_calibration_button();
    let decoded: Vec<Vec3> = (3..8).map(&mut exchange).collect();
    let a = arm.lock().unwrap();
    assert_eq!(a.calibrations, 1, "one command 1, then currents again");
    let last = decoded[decoded.len() - 1];
    eprintln!(
        "haptikfabriken v2: decoded {last:?} after command 1, {:.3e} m from the calibration pose",
        (last - calibration_pose).norm()
    );
    assert!((last - calibration_pose).norm() < 1e-9, "{decoded:?}");
    assert!((calibration_pose - Vec3::new(0.025, 0.0, 0.205)).norm() < 1e-12);
}

#[test]
fn enter_sends_command_1_to_a_board_that_did_not_ask() {
    let arm = Arc::new(Mutex::new(ArmState::power_on_at(
        Layout::ProtocolV2,
        [-0.2, 0.1, 1.4],
    )));
    let mut device = HidDevice::new(SyncTransport(arm.clone()), shipped("haptikfabriken-v2"));
    device.read(0.0).unwrap();
    device.write_force(Vec3::zeros()).unwrap();
    arm.lock().unwrap().place(CALIBRATION_ANGLES);
    device.calibration_request().unwrap().request();
    for k in 1..4 {
        device.read(f64::from(k) * 1e-3).unwrap();
        device.write_force(Vec3::zeros()).unwrap();
    }
    let p = device.read(0.004).unwrap().position;
    assert_eq!(arm.lock().unwrap().calibrations, 1);
    assert!((p - tip(CALIBRATION_ANGLES)).norm() < 1e-9, "{p}");
}

#[test]
fn the_check_of_a_haptikfabriken_v2_board_calibrates_it_through_command_1_and_passes() {
    let (outcome, report, arm) = check_arm("haptikfabriken-v2", Layout::ProtocolV2, |_| {});
    assert!(outcome.passed(), "{report}");
    assert!(
        outcome
            .findings
            .iter()
            .any(|f| matches!(f, Finding::Calibration { fixed: true, .. })),
        "{report}"
    );
    assert!(arm.lock().unwrap().calibrations >= 1);
}
