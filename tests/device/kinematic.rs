//! Kinematic device profiles end to end: the shipped WoodenHaptics 1.5 HID profile decodes
//! synthesized reports to the positions of the public configuration's equations (written
//! out here independently of palpa's kinematics), encodes forces as motor currents that do
//! the force's virtual work and clamp at the profile's limit, and fades the force when the
//! firmware's counter stops; a delta profile does the same virtual work; the `devices`
//! tools print what the profile says; a WoodenHaptics configuration imports.

use palpa::device::hid::{HidDevice, MemoryPeer, MemoryTransport, MAX_REPORT_LEN};
use palpa::device::mapped::{MappedDevice, Workspace};
use palpa::device::profile::DeviceProfile;
use palpa::device::HapticDevice;
use palpa::haptic::analytic::HertzHalfSpace;
use palpa::haptic::{HapticConfig, LockStep, SafetyLimits, SafetyState};
use palpa::Vec3;
use std::f64::consts::{PI, TAU};
use std::process::Command;

fn woodenhaptics() -> DeviceProfile {
    DeviceProfile::shipped()
        .into_iter()
        .find(|p| p.name == "woodenhaptics")
        .unwrap()
}

/// A WoodenHaptics 1.5 input report: three i16 encoder values and the u16 counter.
fn wh_report(encoders: [i16; 3], counter: u16) -> [u8; 8] {
    let mut r = [0u8; 8];
    for (i, e) in encoders.iter().enumerate() {
        r[2 * i..2 * i + 2].copy_from_slice(&e.to_le_bytes());
    }
    r[6..8].copy_from_slice(&counter.to_le_bytes());
    r
}

/// The public configuration's tip position for the driver's counts (which are the
/// negated firmware encoders; counters zero at the calibration pose, calibration
/// counts (0, 0, 6000)).
fn public_position(encoders: [i16; 3]) -> Vec3 {
    let capstan = 0.010;
    let body = [0.160, 0.120, 0.120];
    let (la, lb, lc) = (0.080, 0.205, 0.245);
    let calibration = [0.0, 0.0, 6000.0];
    let theta: Vec<f64> = (0..3)
        .map(|i| {
            let count = -f64::from(encoders[i]) + calibration[i];
            TAU * count / 2000.0 * capstan / body[i]
        })
        .collect();
    let s = lb * theta[1].sin() + lc * theta[2].sin();
    Vec3::new(
        theta[0].cos() * s,
        theta[0].sin() * s,
        la + lb * theta[1].cos() - lc * theta[2].cos(),
    ) - Vec3::new(0.220, 0.0, 0.080)
}

const POSES: [[i16; 3]; 6] = [
    [0, 0, 0],
    [-1000, 500, 2000],
    [1500, -800, 1200],
    [300, 1600, -900],
    [-2500, -400, 3000],
    [800, 2400, 2400],
];

#[test]
fn woodenhaptics_reports_decode_to_the_public_configurations_positions() {
    let (transport, peer) = MemoryTransport::pair(16);
    let mut device = HidDevice::new(transport, woodenhaptics());
    for (k, pose) in POSES.iter().enumerate() {
        peer.send(&wh_report(*pose, k as u16));
        let sample = device.read(0.0).unwrap();
        let expected = public_position(*pose);
        assert!(
            (sample.position - expected).norm() < 1e-12,
            "{pose:?}: {:?} vs {expected:?}",
            sample.position
        );
    }
    // The calibration pose: link b upright, link c horizontal.
    assert!((public_position([0; 3]) - Vec3::new(0.025, 0.0, 0.205)).norm() < 1e-12);
}

/// Currents (A) in the WoodenHaptics output report the device was sent last.
fn sent_currents(peer: &MemoryPeer) -> [f64; 3] {
    let mut buf = [0u8; MAX_REPORT_LEN];
    let n = peer.receive_newest(&mut buf).expect("a report was written");
    assert_eq!(n, 9, "00 + 8 bytes");
    assert_eq!(buf[0], 0, "no report id");
    [1, 3, 5].map(|o| f64::from(i16::from_le_bytes([buf[o], buf[o + 1]])) * 1e-3)
}

/// F·δx = Σ τ_motor δφ_motor, with τ_motor = I k_t and δφ_motor = 2π δcount / cpr, for
/// one count either way of every joint (central differences).
fn virtual_work_mismatch(
    profile: &DeviceProfile,
    report: impl Fn([i16; 3]) -> Vec<u8>,
    pose: [i16; 3],
    force: Vec3,
    count_sign: f64,
    torque_constant: f64,
    cpr: f64,
) -> f64 {
    let mut codec = profile.codec();
    let mut at = |counts: [i16; 3]| codec.decode_input(&report(counts)).position;
    let mut motor_work = 0.0;
    let mut tip_work = 0.0;
    let mut codec_at_pose = profile.codec();
    codec_at_pose.decode_input(&report(pose));
    let mut out = [0u8; MAX_REPORT_LEN];
    codec_at_pose.encode_output(&mut out, force, 0);
    let currents = codec_at_pose.decode_output(&out).0;
    for joint in 0..3 {
        let mut up = pose;
        up[joint] += 1;
        let mut down = pose;
        down[joint] -= 1;
        let dx = (at(up) - at(down)) / 2.0;
        tip_work += force.dot(&dx);
        let dphi = TAU * count_sign / cpr;
        motor_work += currents[joint] * torque_constant * dphi;
    }
    (tip_work - motor_work).abs() / tip_work.abs().max(motor_work.abs())
}

#[test]
fn encoded_currents_do_the_virtual_work_of_the_force() {
    let profile = woodenhaptics();
    let forces = [
        Vec3::new(0.0, 0.0, -2.0),
        Vec3::new(1.5, -1.0, 0.5),
        Vec3::new(-0.8, 2.2, 1.1),
    ];
    for pose in POSES {
        for force in forces {
            let mismatch = virtual_work_mismatch(
                &profile,
                |e| wh_report(e, 1).to_vec(),
                pose,
                force,
                -1.0,
                0.0259,
                2000.0,
            );
            assert!(mismatch < 1e-3, "{pose:?} {force:?}: {mismatch:e}");
        }
    }
}

#[test]
fn currents_clamp_to_the_profiles_limit_and_follow_the_rated_force() {
    let profile = woodenhaptics();
    let mut codec = profile.codec();
    codec.decode_input(&wh_report([300, 1600, -900], 1));
    let mut out = [0u8; MAX_REPORT_LEN];
    codec.encode_output(&mut out, Vec3::new(400.0, -300.0, 900.0), 0);
    let currents = codec.decode_output(&out).0;
    assert!(currents.iter().all(|c| c.abs() <= 3.0), "{currents:?}");
    assert!(
        currents.iter().any(|c| (c.abs() - 3.0).abs() < 1e-9),
        "one motor at the 3 A limit: {currents:?}"
    );
    // Through the device: a force above the rated 5 N is scaled to 5 N first.
    let (transport, peer) = MemoryTransport::pair(16);
    let mut device = HidDevice::new(transport, profile.clone());
    peer.send(&wh_report([0; 3], 1));
    device.read(0.0).unwrap();
    device.write_force(Vec3::new(0.0, 50.0, 0.0)).unwrap();
    let at_rating = sent_currents(&peer);
    device.write_force(Vec3::new(0.0, 5.0, 0.0)).unwrap();
    assert_eq!(sent_currents(&peer), at_rating);
    // At the calibration pose a sideways force loads the base joint only, through the
    // reach Lc: τa = Lc·f, below the current limit at 5 N.
    let expected = 0.245 * 5.0 * (0.010 / 0.160) / 0.0259;
    assert_eq!(at_rating[1..], [0.0, 0.0]);
    assert!((at_rating[0] - expected).abs() < 1e-3, "{at_rating:?}");
    // A vertical 5 N would need 3.94 A in motor c: it gets the 3 A limit.
    device.write_force(Vec3::new(0.0, 0.0, -5.0)).unwrap();
    assert_eq!(sent_currents(&peer), [0.0, 0.0, -3.0]);
}

#[test]
fn a_counter_that_stops_advancing_fades_the_force() {
    let profile = woodenhaptics();
    let (transport, peer) = MemoryTransport::pair(64);
    // Put the calibration pose 4 mm deep in the half-space model.
    let probe = Vec3::new(0.02, 0.0, -0.004);
    let map = Workspace::new(1.0, probe - Vec3::new(0.025, 0.0, 0.205), [0.0; 3]);
    let device = MappedDevice::new(HidDevice::new(transport, profile.clone()), map);
    let mut limits = SafetyLimits::for_device(profile.device_rating());
    limits.ramp_time = 0.02;
    let mut rig = LockStep::new(
        device,
        HertzHalfSpace::default_scene(),
        HapticConfig::new(limits),
    );
    for k in 0..200u16 {
        peer.send(&wh_report([0; 3], k));
        rig.step();
    }
    let pressing = sent_currents(&peer);
    assert!(pressing[2].abs() > 0.05, "pressing: {pressing:?}");
    let mut faded = Vec::new();
    for _ in 0..60 {
        peer.send(&wh_report([0; 3], 199));
        let r = rig.step();
        faded.push((r.force.norm(), r.state));
    }
    assert!(
        faded.iter().any(|(_, s)| *s == SafetyState::StaleSample),
        "the repeated counter is a stale sample"
    );
    let norms: Vec<f64> = faded.iter().map(|(f, _)| *f).collect();
    assert!(norms.windows(2).all(|w| w[1] <= w[0] + 1e-12), "{norms:?}");
    assert_eq!(*norms.last().unwrap(), 0.0);
    assert_eq!(sent_currents(&peer), [0.0; 3]);
    assert!(
        norms.iter().any(|f| *f > 0.0 && *f < norms[0]),
        "fades rather than jumps: {norms:?}"
    );
}

/// A Falcon-sized delta arm on a hypothetical open board: i32 counts, f32-free.
const DELTA_PROFILE: &str = r#"
name = "open-delta"
[match]
vendor_id = 0x1209
product_id = 0x0002
[rating]
max_force = 9.0
max_stiffness = 2000.0
[workspace]
centre = [0.0, 0.0, 0.0]
half_extent = [0.05, 0.05, 0.05]
[input]
report_id = 1
length = 15
sequence = { offset = 13, type = "u16" }
[input.joints]
a = { offset = 1, type = "i32" }
b = { offset = 5, type = "i32" }
c = { offset = 9, type = "i32" }
[output]
report_id = 2
length = 7
[output.currents]
a = { offset = 1, type = "i16", scale = 1e-4 }
b = { offset = 3, type = "i16", scale = 1e-4 }
c = { offset = 5, type = "i16", scale = 1e-4 }
[kinematics]
kind = "delta"
base_radius = 0.06
effector_radius = 0.03
upper_arm = 0.10
forearm = 0.14
counts_per_revolution = [4096.0, 4096.0, 4096.0]
gear_ratio = [10.0, 10.0, 10.0]
calibration_angle_deg = [30.0, 30.0, 30.0]
torque_constant = [0.02, 0.02, 0.02]
max_current = 3.0
calibration = "power-on"
"#;

fn delta_report(counts: [i16; 3]) -> Vec<u8> {
    let mut r = vec![0u8; 15];
    r[0] = 1;
    for (i, c) in counts.iter().enumerate() {
        r[1 + 4 * i..5 + 4 * i].copy_from_slice(&i32::from(*c).to_le_bytes());
    }
    r
}

#[test]
fn a_delta_profile_decodes_symmetrically_and_does_the_virtual_work() {
    let profile = DeviceProfile::from_toml(DELTA_PROFILE, "delta.toml").unwrap();
    let mut codec = profile.codec();
    // Equal angles put the effector on the axis, below the base.
    let centre = codec.decode_input(&delta_report([0; 3])).position;
    assert!(centre.x.abs() < 1e-12 && centre.y.abs() < 1e-12 && centre.z < 0.0);
    // θ = 30° + 2π·counts/4096/10: check against the arm's sphere constraint.
    let counts = [300i16, -200, 150];
    let p = codec.decode_input(&delta_report(counts)).position;
    for (arm, count) in counts.iter().enumerate() {
        let theta = PI / 6.0 + TAU * f64::from(*count) / 4096.0 / 10.0;
        let phi = TAU / 3.0 * arm as f64;
        let u = Vec3::new(phi.cos(), phi.sin(), 0.0);
        let elbow_to_sphere_centre =
            u * (0.06 - 0.03 + 0.10 * theta.cos()) - Vec3::z() * (0.10 * theta.sin());
        assert!(((p - elbow_to_sphere_centre).norm() - 0.14).abs() < 1e-12);
    }
    for pose in [[0, 0, 0], [300, -200, 150], [-400, 250, 100]] {
        for force in [Vec3::new(0.0, 0.0, 3.0), Vec3::new(1.0, -2.0, 0.5)] {
            let mismatch =
                virtual_work_mismatch(&profile, delta_report, pose, force, 1.0, 0.02, 4096.0);
            assert!(mismatch < 1e-3, "{pose:?} {force:?}: {mismatch:e}");
        }
    }
}

#[test]
fn profiles_of_the_wrong_kind_or_with_bad_arms_name_the_key() {
    let wh = palpa::device::profile::SHIPPED_PROFILES[1].1;
    let cases = [
        (
            wh.replace("[input.joints]", "[input.position]")
                .replace("a = { offset = 0", "x = { offset = 0")
                .replace("b = { offset = 2", "y = { offset = 2")
                .replace("c = { offset = 4", "z = { offset = 4"),
            "`[input.joints]`",
        ),
        (
            wh.replace("link_length = [0.080", "link_length = [-0.080"),
            "kinematics.link_length",
        ),
        (
            wh.replace("kind = \"capstan\"", "kind = \"scara\""),
            "scara",
        ),
        (
            wh.replace("calibration = \"power-on\"", "calibration = \"sometimes\""),
            "sometimes",
        ),
        (
            wh.replace("heartbeat = { offset = 7", "heartbeat = { offset = 0"),
            "output.heartbeat.offset",
        ),
    ];
    for (text, needle) in cases {
        let e = DeviceProfile::from_toml(&text, "bad.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("bad.toml") && e.contains(needle),
            "{needle}: {e}"
        );
    }
    let unreachable = DELTA_PROFILE.replace("forearm = 0.14", "forearm = 0.01");
    let e = DeviceProfile::from_toml(&unreachable, "d.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("calibration_angle_deg"), "{e}");
}

fn palpa(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_palpa"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn devices_decode_and_encode_print_what_the_profile_says() {
    let pose = [-1000, 500, 2000];
    let (ok, out, err) = palpa(&[
        "devices",
        "decode",
        "--profile",
        "woodenhaptics",
        &hex(&wh_report(pose, 7)),
    ]);
    assert!(ok, "{err}");
    let json: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert!(out.starts_with("{\"position\":["), "{out}");
    let p: Vec<f64> = json["position"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert!((Vec3::new(p[0], p[1], p[2]) - public_position(pose)).norm() < 1e-12);
    assert_eq!(json["buttons"], 0);

    let (ok, out, err) = palpa(&[
        "devices",
        "encode",
        "--profile",
        "woodenhaptics",
        "--force",
        "0,0,-5",
        "--at",
        &hex(&wh_report([0; 3], 7)),
    ]);
    assert!(ok, "{err}");
    // τc = 0.245 m × −5 N; motor torque × 1/12; / 0.0259 N·m/A = −3.942 A → clamped −3 A.
    let expected = hex(&[0, 0, 0, 0, 0, 0x48, 0xf4, 0, 0]);
    assert_eq!(out.trim(), expected);

    for (args, needle) in [
        (
            vec!["devices", "decode", "--profile", "woodenhaptics", "0102"],
            "2 bytes",
        ),
        (
            vec!["devices", "decode", "--profile", "woodenhaptics", "0g"],
            "`g`",
        ),
        (
            vec!["devices", "decode", "--profile", "nonesuch", "00"],
            "nonesuch",
        ),
        (
            vec![
                "devices",
                "encode",
                "--profile",
                "woodenhaptics",
                "--force",
                "1,2",
                "--at",
                "0000000000000000",
            ],
            "--force",
        ),
    ] {
        let (ok, _, err) = palpa(&args);
        assert!(!ok && err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn a_woodenhaptics_configuration_imports_as_a_working_profile() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("wooden_haptics.json");
    // The public v2015 configuration, keys as the driver's JSON names them.
    std::fs::write(
        &config,
        r#"{ "variant": 0, "diameter_capstan_a": 0.010, "diameter_capstan_b": 0.010,
        "diameter_capstan_c": 0.010, "length_body_a": 0.080, "length_body_b": 0.205,
        "length_body_c": 0.245, "diameter_body_a": 0.160, "diameter_body_b": 0.120,
        "diameter_body_c": 0.120, "workspace_origin_x": 0.220, "workspace_origin_y": 0.000,
        "workspace_origin_z": 0.080, "workspace_radius": 0.100,
        "torque_constant_motor_a": 0.0259, "torque_constant_motor_b": 0.0259,
        "torque_constant_motor_c": 0.0259, "current_for_10_v_signal": 3.0,
        "cpr_encoder_a": 2000, "cpr_encoder_b": 2000, "cpr_encoder_c": 2000,
        "cpr_encoder_d": 0, "cpr_encoder_e": 0, "cpr_encoder_f": 0,
        "max_linear_force": 5.0, "max_linear_stiffness": 1000.0, "max_linear_damping": 8.0,
        "mass_body_b": 0.170, "mass_body_c": 0.110, "length_cm_body_b": 0.051,
        "length_cm_body_c": 0.091, "g_constant": 0, "calibrate_enc_a": 0,
        "calibrate_enc_b": 0, "calibrate_enc_c": 6000, "calibrate_enc_d": 0,
        "calibrate_enc_e": 0, "calibrate_enc_f": 0, "motor_and_body_aligned_a": false,
        "motor_and_body_aligned_b": false, "motor_and_body_aligned_c": false,
        "enc_and_body_aligned_d": false, "enc_and_body_aligned_e": false,
        "enc_and_body_aligned_f": false, "name": "my woody" }"#,
    )
    .unwrap();
    let out = dir.path().join("woody.toml");
    let (ok, _, err) = palpa(&[
        "devices",
        "import-woodenhaptics",
        config.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let imported = DeviceProfile::load(&out).unwrap();
    let shipped = woodenhaptics();
    assert_eq!(imported.kinematics, shipped.kinematics);
    assert_eq!(imported.input, shipped.input);
    assert_eq!(imported.output, shipped.output);
    assert_eq!(imported.rating, shipped.rating);
    assert_eq!(imported.name, "my woody");

    let good = std::fs::read_to_string(&config).unwrap();
    for (bad, needle) in [
        (
            good.replace(
                "\"diameter_capstan_a\": 0.010",
                "\"diameter_capstan_a\": \"wide\"",
            ),
            "`diameter_capstan_a` is \"wide\"",
        ),
        (
            good.replace("\"g_constant\": 0,", ""),
            "`g_constant` is missing",
        ),
        (
            good.replace("\"length_body_b\": 0.205", "\"length_body_b\": -0.205"),
            "link_length",
        ),
        ("[1, 2]".to_string(), "JSON object"),
    ] {
        std::fs::write(&config, bad).unwrap();
        let (ok, _, err) = palpa(&["devices", "import-woodenhaptics", config.to_str().unwrap()]);
        assert!(
            !ok && err.contains(needle) && err.contains("wooden_haptics.json"),
            "{needle}: {err}"
        );
    }
}

#[test]
fn devices_lists_the_shipped_profiles_and_the_backends() {
    let (ok, out, err) = palpa(&["devices"]);
    assert!(ok, "{err}");
    for name in [
        "palpa-reference",
        "woodenhaptics",
        "haptikfabriken-v2",
        "hid[:PROFILE.toml]",
        "sim",
        "replay",
    ] {
        assert!(out.contains(name), "{name} missing from:\n{out}");
    }
}

#[test]
fn the_calibration_step_makes_the_held_pose_the_calibration_pose() {
    let profile = woodenhaptics();
    let (transport, peer) = MemoryTransport::pair(16);
    let mut device = HidDevice::new(transport, profile);
    let request = device
        .calibration_request()
        .expect("an encoder device calibrates");
    // Powered on away from the calibration pose: the counters are off by `held`.
    let held = [400i16, -300, 250];
    peer.send(&wh_report(held, 1));
    let before = device.read(0.0).unwrap().position;
    assert!((before - public_position(held)).norm() < 1e-12);
    request.request();
    let at_calibration = device.read(0.001).unwrap().position;
    assert!((at_calibration - Vec3::new(0.025, 0.0, 0.205)).norm() < 1e-12);
    // Later reports count from the held pose.
    let moved = [-600i16, 900, 50];
    peer.send(&wh_report(moved, 2));
    let after = device.read(0.002).unwrap().position;
    let relative = [0, 1, 2].map(|i| moved[i] - held[i]);
    assert!((after - public_position(relative)).norm() < 1e-12);
    assert!(
        DeviceProfile::reference().codec().calibrate().is_none(),
        "a Cartesian profile has nothing to calibrate"
    );
}

#[test]
fn a_calibration_button_recalibrates_on_its_press() {
    let text = DELTA_PROFILE
        .replace(
            "sequence = { offset = 13, type = \"u16\" }",
            "sequence = { offset = 13, type = \"u16\" }\nbuttons = { offset = 14, type = \"u8\" }",
        )
        .replace(
            "calibration = \"power-on\"",
            "calibration = \"power-on\"\ncalibrate_button = 2",
        );
    let profile = DeviceProfile::from_toml(&text, "delta.toml").unwrap();
    let mut codec = profile.codec();
    let at_zero = codec.decode_input(&delta_report([0; 3])).position;
    let pressed = |counts: [i16; 3], buttons: u8| {
        let mut r = delta_report(counts);
        r[14] = buttons;
        r
    };
    let off = codec.decode_input(&pressed([120, -80, 40], 1)).position;
    assert!((off - at_zero).norm() > 1e-3, "button 1 does not calibrate");
    let on = codec.decode_input(&pressed([120, -80, 40], 3)).position;
    assert!(
        (on - at_zero).norm() < 1e-12,
        "button 2 down: this is the calibration pose"
    );
    let held = codec.decode_input(&pressed([140, -80, 40], 2)).position;
    assert!(
        (held - at_zero).norm() > 1e-6,
        "holding the button does not recalibrate again"
    );
}

#[test]
fn every_public_form_of_a_configuration_imports() {
    let dir = tempfile::tempdir().unwrap();
    // woody-experimental's woodenhaptics_2016ed.json as published: a comma after the last
    // value, no variant, calibration counts or motor directions, gravity on.
    let config = dir.path().join("woodenhaptics_2016ed.json");
    std::fs::write(
        &config,
        "{\n    \"diameter_capstan_a\":       0.01,\n    \"diameter_capstan_b\":       0.01,\n    \"diameter_capstan_c\":       0.01,\n    \"length_body_a\":            0.08,\n    \"length_body_b\":            0.205,\n    \"length_body_c\":            0.245,\n    \"diameter_body_a\":          0.16,\n    \"diameter_body_b\":          0.12,\n    \"diameter_body_c\":          0.12,\n    \"workspace_origin_x\":       0.22,\n    \"workspace_origin_y\":       0,\n    \"workspace_origin_z\":       0.08,\n    \"workspace_radius\":         0.1,\n    \"torque_constant_motor_a\":  0.0259,\n    \"torque_constant_motor_b\":  0.0259,\n    \"torque_constant_motor_c\":  0.0259,\n    \"current_for_10_v_signal\":  3,\n    \"cpr_encoder_a\":            2000,\n    \"cpr_encoder_b\":            2000,\n    \"cpr_encoder_c\":            2000,\n    \"max_linear_force\":         5,\n    \"max_linear_stiffness\":     1000,\n    \"max_linear_damping\":       8,\n    \"mass_body_b\":              0.17,\n    \"mass_body_c\":              0.11,\n    \"length_cm_body_b\":         0.051,\n    \"length_cm_body_c\":         0.091,\n    \"g_constant\":               9.82,\n}\n",
    )
    .unwrap();
    let out = dir.path().join("woody2016.toml");
    let (ok, _, err) = palpa(&[
        "devices",
        "import-woodenhaptics",
        config.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(
        err.contains("no calibrate_enc_*") && err.contains("gravity 9.82"),
        "{err}"
    );
    let imported = DeviceProfile::load(&out).unwrap();
    let Some(palpa::device::profile::KinematicsSpec::Capstan(arm)) = &imported.kinematics else {
        panic!("a capstan arm")
    };
    assert_eq!(
        arm.calibration_counts,
        [0.0, 0.0, 6000.0],
        "WoodenHaptics' pose"
    );
    assert_eq!(arm.gravity, 9.82);
    // The calibration pose decodes where the public configuration puts it.
    let tip = imported
        .codec()
        .decode_input(&wh_report([0; 3], 1))
        .position;
    assert!((tip - Vec3::new(0.025, 0.0, 0.205)).norm() < 1e-12, "{tip}");

    // haptikfabrikenapi's woodenhaptics_v2019(), on the Teensy board: its 3 A capped at
    // the 2 A the host's comment gives, its torque constants kept.
    let (ok, text, err) = palpa(&[
        "devices",
        "import-woodenhaptics",
        "--builtin",
        "woodenhaptics_v2019",
        "--report",
        "haptikfabriken-teensy",
    ]);
    assert!(ok, "{err}");
    let teensy = DeviceProfile::from_toml(&text, "v2019.toml").unwrap();
    let Some(palpa::device::profile::KinematicsSpec::Capstan(arm)) = &teensy.kinematics else {
        panic!("a capstan arm")
    };
    assert_eq!(arm.torque_constant, [0.321, 0.0603, 0.0603]);
    assert_eq!(arm.max_current, 2.0);
    assert_eq!(teensy.matcher.vendor_id, Some(0x16C0));
    assert_eq!(teensy.input.length, 64);
    // Every named configuration but Polhem v2/v3 imports; those are refused, as is a
    // variant-3 file.
    for name in [
        "default_woody",
        "woodenhaptics_v2015",
        "polhem_v1",
        "aluhaptics_v2",
        "vintage",
    ] {
        let (ok, _, err) = palpa(&["devices", "import-woodenhaptics", "--builtin", name]);
        assert!(ok, "{name}: {err}");
    }
    let (ok, _, err) = palpa(&["devices", "import-woodenhaptics", "--builtin", "polhem_v3"]);
    assert!(!ok && err.contains("not public"), "{err}");
    let polhem = std::fs::read_to_string(&config)
        .unwrap()
        .replace("{\n", "{\n    \"variant\": 3,\n");
    std::fs::write(&config, polhem).unwrap();
    let (ok, _, err) = palpa(&["devices", "import-woodenhaptics", config.to_str().unwrap()]);
    assert!(!ok && err.contains("variant 3"), "{err}");
}

#[test]
fn the_shipped_editions_load_with_their_limits_and_ids() {
    let teensy = DeviceProfile::shipped()
        .into_iter()
        .find(|p| p.name == "haptikfabriken-v2019")
        .unwrap();
    assert!(teensy.matches(0x16C0, 0x0486, 0xFFAB, "/dev/hidraw0"));
    assert!(
        !teensy.matches(0x16C0, 0x0486, 0xFFC9, "/dev/hidraw1"),
        "not the Teensy's serial-emulation interface"
    );
    let limits: Vec<(String, f64)> = DeviceProfile::shipped()
        .iter()
        .filter_map(|p| match &p.kinematics {
            Some(palpa::device::profile::KinematicsSpec::Capstan(c)) => {
                Some((p.name.clone(), c.max_current))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        limits,
        [
            ("woodenhaptics".to_owned(), 3.0),
            ("woodenhaptics-2017".to_owned(), 3.0),
            ("haptikfabriken-v2".to_owned(), 3.0),
            ("haptikfabriken-v2019".to_owned(), 2.0),
        ]
    );
}
