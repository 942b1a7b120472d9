//! The configurations haptikfabrikenapi names in code (`Kinematics::configuration::NAME()`
//! in `haptikfabrikenapi.h`, forsslund/haptikfabrikenapi, 2021 head), as the JSON its
//! `toJSON` writes, for `palpa devices import-woodenhaptics --builtin NAME`. Numbers only;
//! the keys are the configuration's (`fromJSON`'s). Polhem v2 and v3 (variant 3) are left
//! out: their kinematics are not in the public sources.

/// `(name, JSON)` of every importable named configuration.
pub const BUILTIN: [(&str, &str); 6] = [
    ("default_woody", DEFAULT_WOODY),
    ("woodenhaptics_v2015", WOODENHAPTICS_V2015),
    ("woodenhaptics_v2019", WOODENHAPTICS_V2019),
    ("polhem_v1", POLHEM_V1),
    ("aluhaptics_v2", ALUHAPTICS_V2),
    ("vintage", VINTAGE),
];

/// The configurations named in code that palpa cannot import, and why.
pub const REFUSED: [(&str, &str); 2] = [
    (
        "polhem_v2",
        "Polhem v2 (variant 3) has kinematics that are not public",
    ),
    (
        "polhem_v3",
        "Polhem v3 (variant 3) has kinematics that are not public",
    ),
];

const DEFAULT_WOODY: &str = r#"{"name": "default_woody", "variant": 0,
 "diameter_capstan_a": 0.010, "diameter_capstan_b": 0.010, "diameter_capstan_c": 0.010,
 "length_body_a": 0.080, "length_body_b": 0.205, "length_body_c": 0.245,
 "diameter_body_a": 0.160, "diameter_body_b": 0.120, "diameter_body_c": 0.120,
 "workspace_origin_x": 0.220, "workspace_origin_y": 0.000, "workspace_origin_z": 0.080,
 "workspace_radius": 0.100,
 "torque_constant_motor_a": 0.0259, "torque_constant_motor_b": 0.0259, "torque_constant_motor_c": 0.0259,
 "current_for_10_v_signal": 3.0, "cpr_encoder_a": 2000, "cpr_encoder_b": 2000, "cpr_encoder_c": 2000,
 "max_linear_force": 5.0, "max_linear_stiffness": 1000.0, "max_linear_damping": 8.0,
 "mass_body_b": 0.170, "mass_body_c": 0.110, "length_cm_body_b": 0.051, "length_cm_body_c": 0.091,
 "g_constant": 0, "calibrate_enc_a": 0, "calibrate_enc_b": 0, "calibrate_enc_c": 0,
 "motor_and_body_aligned_a": 0, "motor_and_body_aligned_b": 1, "motor_and_body_aligned_c": 0}"#;

const WOODENHAPTICS_V2015: &str = r#"{"name": "woodenhaptics_v2015", "variant": 0,
 "diameter_capstan_a": 0.010, "diameter_capstan_b": 0.010, "diameter_capstan_c": 0.010,
 "length_body_a": 0.080, "length_body_b": 0.205, "length_body_c": 0.245,
 "diameter_body_a": 0.160, "diameter_body_b": 0.120, "diameter_body_c": 0.120,
 "workspace_origin_x": 0.220, "workspace_origin_y": 0.000, "workspace_origin_z": 0.080,
 "workspace_radius": 0.100,
 "torque_constant_motor_a": 0.0259, "torque_constant_motor_b": 0.0259, "torque_constant_motor_c": 0.0259,
 "current_for_10_v_signal": 6.0, "cpr_encoder_a": 2000, "cpr_encoder_b": 2000, "cpr_encoder_c": 2000,
 "max_linear_force": 5.0, "max_linear_stiffness": 1000.0, "max_linear_damping": 8.0,
 "mass_body_b": 0.170, "mass_body_c": 0.110, "length_cm_body_b": 0.051, "length_cm_body_c": 0.091,
 "g_constant": 0, "calibrate_enc_a": 0, "calibrate_enc_b": 0, "calibrate_enc_c": 6000,
 "motor_and_body_aligned_a": 0, "motor_and_body_aligned_b": 0, "motor_and_body_aligned_c": 0}"#;

const WOODENHAPTICS_V2019: &str = r#"{"name": "woodenhaptics_v2019", "variant": 0,
 "diameter_capstan_a": 0.010, "diameter_capstan_b": 0.010, "diameter_capstan_c": 0.010,
 "length_body_a": 0.080, "length_body_b": 0.205, "length_body_c": 0.245,
 "diameter_body_a": 0.160, "diameter_body_b": 0.120, "diameter_body_c": 0.120,
 "workspace_origin_x": 0.220, "workspace_origin_y": 0.000, "workspace_origin_z": 0.080,
 "workspace_radius": 0.100,
 "torque_constant_motor_a": 0.321, "torque_constant_motor_b": 0.0603, "torque_constant_motor_c": 0.0603,
 "current_for_10_v_signal": 3.0, "cpr_encoder_a": 2000, "cpr_encoder_b": 2000, "cpr_encoder_c": 2000,
 "max_linear_force": 5.0, "max_linear_stiffness": 1000.0, "max_linear_damping": 8.0,
 "mass_body_b": 0.170, "mass_body_c": 0.110, "length_cm_body_b": 0.051, "length_cm_body_c": 0.091,
 "g_constant": 0, "calibrate_enc_a": 0, "calibrate_enc_b": 0, "calibrate_enc_c": 6000,
 "motor_and_body_aligned_a": 0, "motor_and_body_aligned_b": 0, "motor_and_body_aligned_c": 0}"#;

const POLHEM_V1: &str = r#"{"name": "polhem_v1", "variant": 2,
 "diameter_capstan_a": 0.010, "diameter_capstan_b": 0.010, "diameter_capstan_c": 0.010,
 "length_body_a": 0.058, "length_body_b": 0.174, "length_body_c": 0.133,
 "diameter_body_a": 0.180, "diameter_body_b": 0.100, "diameter_body_c": 0.100,
 "workspace_origin_x": 0.140, "workspace_origin_y": 0.000, "workspace_origin_z": 0.100,
 "workspace_radius": 0.100,
 "torque_constant_motor_a": 0.0538, "torque_constant_motor_b": 0.0538, "torque_constant_motor_c": 0.0538,
 "current_for_10_v_signal": 3.0, "cpr_encoder_a": 2000, "cpr_encoder_b": 2000, "cpr_encoder_c": 2000,
 "max_linear_force": 5.0, "max_linear_stiffness": 800.0, "max_linear_damping": 8.0,
 "mass_body_b": 0.080, "mass_body_c": 0.080, "length_cm_body_b": 0.040, "length_cm_body_c": 0.070,
 "g_constant": 0, "calibrate_enc_a": 0, "calibrate_enc_b": 0, "calibrate_enc_c": -5000,
 "motor_and_body_aligned_a": 1, "motor_and_body_aligned_b": 1, "motor_and_body_aligned_c": 1}"#;

const ALUHAPTICS_V2: &str = r#"{"name": "aluhaptics_v2", "variant": 1,
 "diameter_capstan_a": 0.0138, "diameter_capstan_b": 0.0098, "diameter_capstan_c": 0.0098,
 "length_body_a": 0.111, "length_body_b": 0.140, "length_body_c": 0.111,
 "diameter_body_a": 0.116, "diameter_body_b": 0.076, "diameter_body_c": 0.076,
 "workspace_origin_x": 0.140, "workspace_origin_y": 0.000, "workspace_origin_z": 0.000,
 "workspace_radius": 0.100,
 "torque_constant_motor_a": 0.0259, "torque_constant_motor_b": 0.0259, "torque_constant_motor_c": 0.0259,
 "current_for_10_v_signal": 3.0, "cpr_encoder_a": 2000, "cpr_encoder_b": 2000, "cpr_encoder_c": 2000,
 "max_linear_force": 5.0, "max_linear_stiffness": 1000.0, "max_linear_damping": 8.0,
 "mass_body_b": 0.170, "mass_body_c": 0.110, "length_cm_body_b": 0.051, "length_cm_body_c": 0.091,
 "g_constant": 0, "calibrate_enc_a": 0, "calibrate_enc_b": 0, "calibrate_enc_c": 0,
 "motor_and_body_aligned_a": 0, "motor_and_body_aligned_b": 0, "motor_and_body_aligned_c": 0}"#;

const VINTAGE: &str = r#"{"name": "vintage", "variant": 1,
 "diameter_capstan_a": 0.013, "diameter_capstan_b": 0.010, "diameter_capstan_c": 0.010,
 "length_body_a": 0.056, "length_body_b": 0.138, "length_body_c": 0.112,
 "diameter_body_a": 0.117, "diameter_body_b": 0.077, "diameter_body_c": 0.077,
 "workspace_origin_x": 0.140, "workspace_origin_y": 0.000, "workspace_origin_z": 0.000,
 "workspace_radius": 0.100,
 "torque_constant_motor_a": 0.0163, "torque_constant_motor_b": 0.0163, "torque_constant_motor_c": 0.0163,
 "current_for_10_v_signal": 3.0, "cpr_encoder_a": 4000, "cpr_encoder_b": 4000, "cpr_encoder_c": 4000,
 "max_linear_force": 5.0, "max_linear_stiffness": 800.0, "max_linear_damping": 8.0,
 "mass_body_b": 0.170, "mass_body_c": 0.110, "length_cm_body_b": 0.051, "length_cm_body_c": 0.091,
 "g_constant": 0, "calibrate_enc_a": 0, "calibrate_enc_b": 0, "calibrate_enc_c": 0,
 "motor_and_body_aligned_a": 0, "motor_and_body_aligned_b": 0, "motor_and_body_aligned_c": 0}"#;
