//! `palpa devices import-woodenhaptics`: a WoodenHaptics / haptikfabriken configuration
//! (the public JSON, e.g. `~/wooden_haptics.json`) as a palpa device profile.

use crate::device::profile::{DeviceProfile, SHIPPED_PROFILES};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Which report layout the imported profile speaks.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportLayout {
    /// WoodenHaptics 1.5 USB HID: 8-byte reports.
    Woodenhaptics,
    /// The haptikfabriken USB protocol v2: 14-byte reports.
    HaptikfabrikenV2,
}

/// Arguments of `palpa devices import-woodenhaptics`.
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// The configuration JSON.
    #[arg(value_name = "FILE.json")]
    pub config: PathBuf,
    /// The report layout of the device's firmware.
    #[arg(long, value_enum, default_value = "woodenhaptics")]
    pub report: ReportLayout,
    /// Where to write the profile (default: print it).
    #[arg(long, short, value_name = "FILE.toml")]
    pub output: Option<PathBuf>,
}

/// Reads one number, naming the key and the file when it is missing or not a number.
fn number(config: &Value, key: &str, file: &Path) -> Result<f64, String> {
    match config.get(key) {
        Some(Value::Number(n)) => n
            .as_f64()
            .filter(|v| v.is_finite())
            .ok_or_else(|| format!("{}: `{key}` is not a finite number", file.display())),
        Some(Value::Bool(b)) => Ok(f64::from(u8::from(*b))),
        Some(other) => Err(format!(
            "{}: `{key}` is {other}, not a number",
            file.display()
        )),
        None => Err(format!("{}: `{key}` is missing", file.display())),
    }
}

/// One value per joint a, b, c of `prefix_a`, `prefix_b`, `prefix_c`.
fn per_joint(config: &Value, prefix: &str, file: &Path) -> Result<[f64; 3], String> {
    Ok([
        number(config, &format!("{prefix}_a"), file)?,
        number(config, &format!("{prefix}_b"), file)?,
        number(config, &format!("{prefix}_c"), file)?,
    ])
}

fn list(values: &[f64]) -> String {
    let items: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("[{}]", items.join(", "))
}

/// The profile text for the configuration in `text` (read from `file`).
pub fn profile_from_config(
    text: &str,
    file: &Path,
    layout: ReportLayout,
) -> Result<String, String> {
    let config: Value =
        serde_json::from_str(text).map_err(|e| format!("{}: not JSON: {e}", file.display()))?;
    if !config.is_object() {
        return Err(format!(
            "{}: expected a JSON object of configuration keys",
            file.display()
        ));
    }
    let n = |key: &str| number(&config, key, file);
    let j = |prefix: &str| per_joint(&config, prefix, file);
    let aligned = j("motor_and_body_aligned")?;
    let radius = n("workspace_radius")?;
    let name = config
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("imported");
    let (template_file, template_name) = match layout {
        ReportLayout::Woodenhaptics => ("woodenhaptics.toml", "WoodenHaptics 1.5 USB HID"),
        ReportLayout::HaptikfabrikenV2 => {
            ("haptikfabriken-v2.toml", "haptikfabriken USB protocol v2")
        }
    };
    let template = SHIPPED_PROFILES
        .iter()
        .find(|(f, _)| *f == template_file)
        .map(|(_, t)| *t)
        .expect("shipped layout templates exist");
    // The report layout ([match], [input…], [output…]) is the shipped profile's.
    let start = template.find("[match]").expect("template has [match]");
    let end = template.find("[rating]").expect("template has [rating]");
    let layout_match = &template[start..end];
    let start = template.find("[input]").expect("template has [input]");
    let end = template
        .find("[kinematics]")
        .expect("template has [kinematics]");
    let layout_reports = &template[start..end];
    let calibration = match layout {
        ReportLayout::Woodenhaptics => "power-on",
        ReportLayout::HaptikfabrikenV2 => "absolute",
    };
    let half = radius / 3f64.sqrt();
    let profile = format!(
        r#"# Imported by `palpa devices import-woodenhaptics` from {file}
# ({template_name} reports; the configuration's own values below).
name = "{profile_name}"
description = "{name} ({template_name}), imported from {file_name}"

{layout_match}[rating]
max_force = {max_force:?}
max_stiffness = {max_stiffness:?}

# The cube inside the configuration's workspace radius ({radius} m).
[workspace]
centre = [0.0, 0.0, 0.0]
half_extent = {half_extent}

{layout_reports}[kinematics]
kind = "capstan"
capstan_diameter = {capstan}
link_length = {links}
body_diameter = {bodies}
workspace_origin = {origin}
counts_per_revolution = {cpr}
motor_aligned = [{a0}, {a1}, {a2}]
calibration_counts = {calibration_counts}
torque_constant = {kt}
max_current = {max_current:?}
link_mass = {masses}
centre_of_mass = {centres}
gravity = {gravity:?}
calibration = "{calibration}"
"#,
        file = file.display(),
        file_name = file
            .file_name()
            .map_or_else(String::new, |f| f.to_string_lossy().into_owned()),
        profile_name = name.replace(['"', '\\', '\n'], "_"),
        name = name.replace(['"', '\\', '\n'], "_"),
        max_force = n("max_linear_force")?,
        max_stiffness = n("max_linear_stiffness")?,
        half_extent = list(&[half; 3]),
        capstan = list(&j("diameter_capstan")?),
        links = list(&j("length_body")?),
        bodies = list(&j("diameter_body")?),
        origin = list(&[
            n("workspace_origin_x")?,
            n("workspace_origin_y")?,
            n("workspace_origin_z")?
        ]),
        cpr = list(&j("cpr_encoder")?),
        a0 = aligned[0] != 0.0,
        a1 = aligned[1] != 0.0,
        a2 = aligned[2] != 0.0,
        calibration_counts = list(&j("calibrate_enc")?),
        kt = list(&j("torque_constant_motor")?),
        max_current = n("current_for_10_v_signal")?,
        masses = list(&[n("mass_body_b")?, n("mass_body_c")?]),
        centres = list(&[n("length_cm_body_b")?, n("length_cm_body_c")?]),
        gravity = n("g_constant")?,
    );
    // The result must load: a bad value is reported against the configuration's file.
    DeviceProfile::from_toml(&profile, &file.display().to_string()).map_err(|e| e.to_string())?;
    Ok(profile)
}

/// `palpa devices import-woodenhaptics`: writes (or prints) the profile.
pub fn run(args: &ImportArgs) -> Result<Option<String>, String> {
    let text = crate::files::read_text(&args.config, crate::files::FileKind::DeviceConfig)
        .map_err(|e| e.to_string())?;
    let profile = profile_from_config(&text, &args.config, args.report)?;
    match &args.output {
        Some(path) => {
            std::fs::write(path, &profile).map_err(|e| format!("{}: {e}", path.display()))?;
            eprintln!("wrote {}", path.display());
            Ok(None)
        }
        None => Ok(Some(profile)),
    }
}
