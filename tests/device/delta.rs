//! The delta-arm fixture the kinematic and safety tests share: a Falcon-sized delta arm
//! on a hypothetical open board (i32 counts, currents in 0.1 mA) and its input report.

/// The profile (TOML).
pub const DELTA_PROFILE: &str = r#"
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

/// The profile's input report with the motors at `counts`.
pub fn delta_report<C: Into<i32>>(counts: [C; 3]) -> Vec<u8> {
    let mut r = vec![0u8; 15];
    r[0] = 1;
    for (i, c) in counts.into_iter().enumerate() {
        r[1 + 4 * i..5 + 4 * i].copy_from_slice(&c.into().to_le_bytes());
    }
    r
}
