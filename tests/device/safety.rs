//! Force safety of device profiles at every pose, each finding of the review with its
//! exact input (issue 42): a delta arm near a singular pose (dp/dθ ≈ 43 m/rad) fades its
//! force instead of saturating every motor in the wrong direction; over a scan of poses
//! up to the singularity no encoded force turns more than 90° from the request or grows
//! past it; a force of 1e308 N is clamped to the rated force in its own direction;
//! `rating.max_force = 1e308` and other unbounded profile values are refused.

use palpa::device::hid::MAX_REPORT_LEN;
use palpa::device::kinematics::DeltaArm;
use palpa::device::profile::DeviceProfile;
use palpa::{Mat3, Vec3};
use std::f64::consts::TAU;
use std::process::Command;

const BINARY: &str = env!("CARGO_BIN_EXE_palpa");

/// A Falcon-sized delta arm on a hypothetical open board (as in
/// `tests/device_kinematic.rs`): i32 counts, currents in 0.1 mA.
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

const ARM: DeltaArm = DeltaArm {
    base_radius: 0.06,
    effector_radius: 0.03,
    upper_arm: 0.10,
    forearm: 0.14,
};

fn delta_report(counts: [i32; 3]) -> Vec<u8> {
    let mut r = vec![0u8; 15];
    r[0] = 1;
    for (i, c) in counts.iter().enumerate() {
        r[1 + 4 * i..5 + 4 * i].copy_from_slice(&c.to_le_bytes());
    }
    r
}

/// Motor angles (rad) of the profile at `counts`.
fn angles(counts: [i32; 3]) -> [f64; 3] {
    counts.map(|c| 30f64.to_radians() + TAU * f64::from(c) / 4096.0 / 10.0)
}

/// `∂p/∂θ` (m/rad) by central differences of the forward kinematics.
fn numeric_jacobian(at: [f64; 3]) -> Option<Mat3> {
    let h = 1e-7;
    let mut j = Mat3::zeros();
    for k in 0..3 {
        let (mut plus, mut minus) = (at, at);
        plus[k] += h;
        minus[k] -= h;
        j.set_column(k, &((ARM.forward(plus)? - ARM.forward(minus)?) / (2.0 * h)));
    }
    Some(j)
}

/// The force (N) the motors make at the tip with `currents` (A): `Jᵀ f = τ`, `τ` the
/// arm torques of the currents through the 10:1 drive (0.02 N·m/A motors).
fn resulting_force(at: [f64; 3], currents: [f64; 3]) -> Option<Vec3> {
    let torque = Vec3::from(currents.map(|i| i * 0.02 * 10.0));
    numeric_jacobian(at)?.transpose().lu().solve(&torque)
}

/// Encodes `force` (N) at `counts` through the profile, as `palpa devices encode` and the
/// HID device do (rated force first), and returns the currents the report carries (A).
fn encoded_currents(profile: &DeviceProfile, counts: [i32; 3], force: Vec3) -> [f64; 3] {
    let mut codec = profile.codec();
    codec.decode_input(&delta_report(counts));
    let mut out = [0u8; MAX_REPORT_LEN];
    codec.encode_output(&mut out, profile.rated_force(force), 0);
    codec.decode_output(&out).0
}

/// The pose of the finding: counts where the largest entry of dp/dθ is 43.0 m/rad.
const NEAR_SINGULAR: [i32; 3] = [8700, 8870, 0];

#[test]
fn a_near_singular_delta_pose_fades_the_force_instead_of_saturating_every_motor() {
    let at = angles(NEAR_SINGULAR);
    let jacobian = numeric_jacobian(at).expect("reachable");
    let largest = jacobian.amax();
    assert!((largest - 43.0).abs() < 0.5, "dp/dθ up to {largest} m/rad");
    let dir = tempfile::tempdir().unwrap();
    let profile_path = dir.path().join("delta.toml");
    std::fs::write(&profile_path, DELTA_PROFILE).unwrap();
    let hex: String = delta_report(NEAR_SINGULAR)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let out = Command::new(BINARY)
        .args(["devices", "encode", "--profile"])
        .arg(&profile_path)
        .args(["--force", "0,0,0.1", "--at", &hex])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = String::from_utf8(out.stdout).unwrap();
    let bytes: Vec<u8> = (0..report.trim().len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&report.trim()[i..i + 2], 16).unwrap())
        .collect();
    let profile = DeviceProfile::from_toml(DELTA_PROFILE, "delta.toml").unwrap();
    let currents = profile.codec().decode_output(&bytes).0;
    println!("encode --force 0,0,0.1 at dp/dθ = {largest:.1} m/rad: {currents:?} A");
    assert!(
        currents.iter().all(|i| i.abs() < 3.0),
        "no motor saturates: {currents:?} A (was ±3.0 A on all three)"
    );
    let force = resulting_force(at, currents).unwrap();
    let request = Vec3::new(0.0, 0.0, 0.1);
    assert!(
        force.norm() <= request.norm() + 1e-6 && (force.norm() < 1e-9 || force.dot(&request) > 0.0),
        "the motors push {force:?} N for a request of {request:?} N (was (−0.37, 0.14, 0.02))"
    );
}

#[test]
fn over_a_scan_up_to_the_singularity_no_encoded_force_turns_or_grows() {
    let profile = DeviceProfile::from_toml(DELTA_PROFILE, "delta.toml").unwrap();
    let requests = [
        Vec3::new(0.0, 0.0, 0.1),
        Vec3::new(0.0, 0.0, -3.0),
        Vec3::new(2.0, -1.0, 0.5),
        Vec3::new(-8.0, 5.0, 4.0),
        Vec3::new(1e308, -2e307, 5e307),
    ];
    let (mut poses, mut faded, mut worst_angle, mut worst_ratio) = (0, 0, 0.0f64, 0.0f64);
    // From the calibration pose out to the singular ridge (the upper arms at 106° and
    // beyond), arm 2 held.
    for c0 in (-6000..=10_000).step_by(400) {
        for c1 in (-6000..=10_000).step_by(400) {
            let counts = [c0, c1, 0];
            let at = angles(counts);
            let Some(jacobian) = numeric_jacobian(at) else {
                continue;
            };
            poses += 1;
            // One count (0.1 mA) on each motor moves the tip force by at most this.
            let quantum = jacobian
                .transpose()
                .try_inverse()
                .map_or(f64::INFINITY, |inverse| {
                    inverse.norm() * (3f64).sqrt() * 0.5e-4 * 0.02 * 10.0
                });
            for &request in &requests {
                let wanted = profile.rated_force(request);
                let currents = encoded_currents(&profile, counts, request);
                if currents == [0.0; 3] {
                    faded += 1;
                    continue;
                }
                let force = resulting_force(at, currents).unwrap();
                let angle = force.angle(&wanted).to_degrees();
                let ratio = force.norm() / wanted.norm();
                assert!(
                    angle <= 90.0,
                    "{counts:?} {request:?}: the motors push {force:?}, {angle:.1}° from {wanted:?}"
                );
                assert!(
                    force.norm() <= wanted.norm() + quantum,
                    "{counts:?} {request:?}: {force:?} N is more than the {:.3} N asked",
                    wanted.norm()
                );
                // Where one count is under 0.1 % of the force rendered, the rounding of
                // the currents cannot explain a turn or a growth.
                if quantum < 1e-3 * force.norm() {
                    worst_angle = worst_angle.max(angle);
                    worst_ratio = worst_ratio.max(ratio);
                }
            }
        }
    }
    println!(
        "{poses} poses × {} forces: {faded} faded to zero; away from the quantisation: \
         largest turn {worst_angle:.3}°, largest |f|/|request| {worst_ratio:.4}",
        requests.len()
    );
    assert!(poses > 1000 && faded > 0, "{poses} poses, {faded} faded");
    assert!(
        worst_angle < 0.2 && worst_ratio < 1.002,
        "{worst_angle}° {worst_ratio}"
    );
}

#[test]
fn a_force_of_1e308_newtons_is_clamped_to_the_rated_force_in_its_own_direction() {
    let reference = DeviceProfile::reference();
    for request in [
        Vec3::new(1e308, 1e308, 0.0),
        Vec3::new(1e308, -2e307, 5e307),
        Vec3::new(0.0, 0.0, -1.3e154),
        Vec3::new(-f64::MAX, 0.0, 0.0),
    ] {
        let rated = reference.rated_force(request);
        let direction = request / request.amax();
        assert!(
            (rated.norm() - reference.rating.max_force).abs() < 1e-12
                && rated.angle(&direction) < 1e-12,
            "{request:?} → {rated:?} (was 0 N above 1.3e154 N)"
        );
    }
    // Through `palpa devices encode`, as the review ran it.
    let at = "01000000000000000000000000000000000000000000";
    let out = Command::new(BINARY)
        .args(["devices", "encode", "--profile", "palpa-reference"])
        .args([
            "--force",
            "1e308,1e308,0",
            "--at",
            &at[..2 * reference.input.length],
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hex = String::from_utf8(out.stdout).unwrap();
    let bytes: Vec<u8> = (0..hex.trim().len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex.trim()[i..i + 2], 16).unwrap())
        .collect();
    let force = Vec3::from(reference.codec().decode_output(&bytes).0);
    let expected = Vec3::new(1.0, 1.0, 0.0).normalize() * reference.rating.max_force;
    assert!((force - expected).norm() < 2e-3, "{force:?} N");
}

#[test]
fn unbounded_profile_values_are_refused_naming_the_key() {
    let reference = palpa::device::profile::REFERENCE_PROFILE_TOML;
    for (text, key) in [
        (
            reference.replace("max_force = 8.0", "max_force = 1e308"),
            "rating.max_force",
        ),
        (
            reference.replace("max_stiffness = 3000.0", "max_stiffness = 1e300"),
            "rating.max_stiffness",
        ),
        (
            DELTA_PROFILE.replace("max_current = 3.0", "max_current = 1e300"),
            "kinematics.max_current",
        ),
        (
            DELTA_PROFILE.replace(
                "torque_constant = [0.02, 0.02, 0.02]",
                "torque_constant = [1e300, 0.02, 0.02]",
            ),
            "kinematics.torque_constant",
        ),
        (
            DELTA_PROFILE.replace("forearm = 0.14", "forearm = 1e12"),
            "kinematics.base_radius, effector_radius, upper_arm, forearm",
        ),
        (
            DELTA_PROFILE.replace(
                "calibration = \"power-on\"",
                "calibration = \"power-on\"\nmax_condition = 1.0",
            ),
            "kinematics.max_condition",
        ),
        (
            DELTA_PROFILE.replace("max_current = 3.0", "max_current = 4.0"),
            "output.currents.a: kinematics.max_current = 4",
        ),
        (
            DELTA_PROFILE.replace("scale = 1e-4 }\nb", "scale = 1e300 }\nb"),
            "output.currents.a.scale",
        ),
    ] {
        let e = DeviceProfile::from_toml(&text, "bad.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains(key), "{key}: {e}");
    }
}

#[test]
fn a_capstan_arm_limits_its_currents_together_and_fades_at_its_singular_pose() {
    use palpa::device::kinematics::CapstanArm;
    let arm = CapstanArm::woodenhaptics_2015();
    // Link b upright, link c horizontal: 20 N asks for 13 A and −16 A; both scaled.
    let at = [0.0, 0.0, std::f64::consts::FRAC_PI_2];
    let currents = arm.motor_currents(at, Vec3::new(20.0, 0.0, -20.0));
    assert!((currents[2] + 3.0).abs() < 1e-12, "{currents:?}");
    assert!(
        (currents[1] / currents[2] + 0.205 / 0.245).abs() < 1e-12,
        "the ratio of the torques, and so the direction, is kept: {currents:?}"
    );
    // The tip on the base axis (reach 0): joint a cannot move it; no force.
    let reach_zero = [0.3, 0.5, -(0.205f64 * 0.5f64.sin() / 0.245).asin()];
    let currents = arm.motor_currents(reach_zero, Vec3::new(1.0, 1.0, -1.0));
    assert_eq!(currents, [0.0; 3], "faded at the singular pose");
}
