//! `palpa devices import-woodenhaptics`: a WoodenHaptics / haptikfabriken configuration
//! as a palpa device profile. It reads every public form of one: haptikfabrikenapi's JSON
//! (`toJSON`'s 44 keys), the CHAI3D WoodenHaptics driver's `~/woodenhaptics.json` and the
//! woody-experimental configurations (29 or 28 keys, a comma after the last value, no
//! calibration counts or motor directions), and the configurations haptikfabrikenapi names
//! in code (`--builtin NAME`, [`super::configurations`]).

use super::configurations::{BUILTIN, REFUSED};
use crate::device::check::store::write_file_safely;
use crate::device::profile::{DeviceProfile, SHIPPED_PROFILES};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Which report layout the imported profile speaks.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportLayout {
    /// WoodenHaptics 1.5 USB HID: 8-byte reports (mbed board, 0x1234:0x0006).
    Woodenhaptics,
    /// The haptikfabriken USB protocol v2: 14-byte reports (mbed board, 0x1234:0x0006).
    HaptikfabrikenV2,
    /// haptikfabrikenapi's current host: the protocol v2 in 64-byte raw HID reports of a
    /// Teensy board (0x16C0:0x0486).
    HaptikfabrikenTeensy,
}

impl ReportLayout {
    /// The shipped profile whose reports this layout uses, its name, the calibration
    /// mode, and the current limit the public firmware and host set (A).
    fn template(self) -> (&'static str, &'static str, &'static str, f64) {
        match self {
            ReportLayout::Woodenhaptics => (
                "woodenhaptics.toml",
                "WoodenHaptics 1.5 USB HID",
                "power-on",
                3.0,
            ),
            ReportLayout::HaptikfabrikenV2 => (
                "haptikfabriken-v2.toml",
                "haptikfabriken USB protocol v2",
                "firmware",
                3.0,
            ),
            ReportLayout::HaptikfabrikenTeensy => (
                "haptikfabriken-v2019.toml",
                "haptikfabriken Teensy board",
                "firmware",
                2.0,
            ),
        }
    }
}

/// Arguments of `palpa devices import-woodenhaptics`.
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// The configuration JSON (or give `--builtin`).
    #[arg(value_name = "FILE.json", required_unless_present = "builtin")]
    pub config: Option<PathBuf>,
    /// A configuration haptikfabrikenapi names in code: default_woody,
    /// woodenhaptics_v2015, woodenhaptics_v2019, polhem_v1, aluhaptics_v2, vintage.
    #[arg(long, value_name = "NAME", conflicts_with = "config")]
    pub builtin: Option<String>,
    /// The report layout of the device's firmware.
    #[arg(long, value_enum, default_value = "woodenhaptics")]
    pub report: ReportLayout,
    /// Where to write the profile (default: print it).
    #[arg(long, short, value_name = "FILE.toml")]
    pub output: Option<PathBuf>,
}

/// The JSON as the public writers produce it, made standard: the CHAI3D driver and
/// woody-experimental's files end every value with a comma, the last one too.
fn relaxed_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if in_string {
            in_string = c != '"' || escaped;
            escaped = c == '\\' && !escaped;
        } else if c == '"' {
            in_string = true;
        } else if c == ',' {
            let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
            if matches!(next, Some('}' | ']') | None) {
                continue;
            }
        }
        out.push(c);
    }
    out
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

/// An optional per-joint value (`prefix_a` …): `None` when the configuration gives
/// none of the three (one or two of them is an error naming the missing key).
fn optional_per_joint(
    config: &Value,
    prefix: &str,
    file: &Path,
) -> Result<Option<[f64; 3]>, String> {
    let keys = ["a", "b", "c"].map(|j| format!("{prefix}_{j}"));
    if keys.iter().all(|k| config.get(k).is_none()) {
        return Ok(None);
    }
    per_joint(config, prefix, file).map(Some)
}

/// The profile text for the configuration in `text` (read from `file`), and notes on
/// what the configuration left out or palpa capped.
pub fn profile_from_config(
    text: &str,
    file: &Path,
    layout: ReportLayout,
) -> Result<(String, Vec<String>), String> {
    let config: Value = serde_json::from_str(&relaxed_json(text))
        .map_err(|e| format!("{}: not JSON: {e}", file.display()))?;
    if !config.is_object() {
        return Err(format!(
            "{}: expected a JSON object of configuration keys",
            file.display()
        ));
    }
    let n = |key: &str| number(&config, key, file);
    let j = |prefix: &str| per_joint(&config, prefix, file);
    let mut notes = Vec::new();
    if config.get("variant").is_some() && n("variant")? == 3.0 {
        return Err(format!(
            "{}: variant 3 is Polhem v2/v3, whose kinematics are not in the public \
             sources; palpa imports the capstan arms (variants 0, 1 and 2)",
            file.display()
        ));
    }
    let aligned =
        optional_per_joint(&config, "motor_and_body_aligned", file)?.unwrap_or_else(|| {
            notes.push("no motor_and_body_aligned_*: every joint taken as not aligned".into());
            [0.0; 3]
        });
    let cpr = j("cpr_encoder")?;
    let (capstan, bodies) = (j("diameter_capstan")?, j("diameter_body")?);
    let calibration_counts = match optional_per_joint(&config, "calibrate_enc", file)? {
        Some(counts) => counts,
        None => {
            // WoodenHaptics' calibration pose: link b upright, link c horizontal.
            let c = 0.25 * cpr[2] * bodies[2] / capstan[2];
            notes.push(format!(
                "no calibrate_enc_*: the calibration pose is WoodenHaptics' (link b upright, \
                 link c horizontal), counts (0, 0, {c})"
            ));
            [0.0, 0.0, c]
        }
    };
    let radius = n("workspace_radius")?;
    let name = config
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("imported");
    let (template_file, template_name, calibration, layout_cap) = layout.template();
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
    let configured_current = n("current_for_10_v_signal")?;
    let max_current = configured_current.min(layout_cap);
    if max_current < configured_current {
        notes.push(format!(
            "max_current {max_current} A: the configuration's {configured_current} A is \
             above what the {template_name} firmware and host drive"
        ));
    }
    let gravity = n("g_constant")?;
    if gravity != 0.0 {
        notes.push(format!(
            "gravity {gravity} m/s²: compensation is on; run `palpa devices check` with the \
             arm held before a session"
        ));
    }
    let half = radius / 3f64.sqrt();
    let note_lines: String = notes.iter().map(|n| format!("# Note: {n}\n")).collect();
    let profile = format!(
        r#"# Imported by `palpa devices import-woodenhaptics` from {file}
# ({template_name} reports; the configuration's own values below).
{note_lines}name = "{profile_name}"
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
        capstan = list(&capstan),
        links = list(&j("length_body")?),
        bodies = list(&bodies),
        origin = list(&[
            n("workspace_origin_x")?,
            n("workspace_origin_y")?,
            n("workspace_origin_z")?
        ]),
        cpr = list(&cpr),
        a0 = aligned[0] != 0.0,
        a1 = aligned[1] != 0.0,
        a2 = aligned[2] != 0.0,
        calibration_counts = list(&calibration_counts),
        kt = list(&j("torque_constant_motor")?),
        masses = list(&[n("mass_body_b")?, n("mass_body_c")?]),
        centres = list(&[n("length_cm_body_b")?, n("length_cm_body_c")?]),
    );
    // The result must load: a bad value is reported against the configuration's file.
    DeviceProfile::from_toml(&profile, &file.display().to_string()).map_err(|e| e.to_string())?;
    Ok((profile, notes))
}

/// The configuration's text and the name it goes by: the file, or a named one.
fn source(args: &ImportArgs) -> Result<(String, PathBuf), String> {
    match (&args.config, &args.builtin) {
        (Some(path), _) => crate::files::read_text(path, crate::files::FileKind::DeviceConfig)
            .map(|text| (text, path.clone()))
            .map_err(|e| e.to_string()),
        (None, Some(name)) => {
            if let Some((_, why)) = REFUSED.iter().find(|(n, _)| n == name) {
                return Err(format!("--builtin {name}: {why}"));
            }
            BUILTIN
                .iter()
                .find(|(n, _)| n == name)
                .map(|(n, json)| {
                    (
                        json.to_string(),
                        PathBuf::from(format!("haptikfabrikenapi {n}()")),
                    )
                })
                .ok_or_else(|| {
                    let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
                    format!("--builtin {name}: not one of {}", names.join(", "))
                })
        }
        (None, None) => Err("give a configuration FILE.json or --builtin NAME".into()),
    }
}

/// `palpa devices import-woodenhaptics`: writes (or prints) the profile.
pub fn run(args: &ImportArgs) -> Result<Option<String>, String> {
    let (text, origin) = source(args)?;
    let (profile, notes) = profile_from_config(&text, &origin, args.report)?;
    for note in &notes {
        eprintln!("note: {note}");
    }
    match &args.output {
        Some(path) => {
            write_file_safely(path, profile.as_bytes())
                .map_err(|e| format!("{}: {e}", path.display()))?;
            eprintln!("wrote {}", path.display());
            Ok(None)
        }
        None => Ok(Some(profile)),
    }
}
