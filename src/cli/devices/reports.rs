//! `palpa devices decode` and `palpa devices encode`: one report through a profile, for
//! profile and firmware authors.

use super::resolve_profile;
use crate::device::hid::MAX_REPORT_LEN;
use crate::Vec3;
use std::path::PathBuf;

/// Arguments of `palpa devices decode`.
#[derive(clap::Args, Debug)]
pub struct DecodeArgs {
    /// The profile: a TOML file, or the name of a shipped profile.
    #[arg(long, value_name = "FILE|NAME")]
    pub profile: PathBuf,
    /// One raw input report as hidapi returns it, in hex (spaces allowed).
    #[arg(value_name = "HEX")]
    pub report: String,
}

/// Arguments of `palpa devices encode`.
#[derive(clap::Args, Debug)]
pub struct EncodeArgs {
    /// The profile: a TOML file, or the name of a shipped profile.
    #[arg(long, value_name = "FILE|NAME")]
    pub profile: PathBuf,
    /// The force on the hand (N, device frame).
    #[arg(long, value_name = "FX,FY,FZ", allow_hyphen_values = true)]
    pub force: String,
    /// The input report (hex, as hidapi returns it) giving the pose to encode at.
    #[arg(long, value_name = "HEX")]
    pub at: String,
}

/// Parses hex bytes (pairs of digits; spaces, `:` and `-` between bytes allowed).
pub fn parse_hex(text: &str) -> Result<Vec<u8>, String> {
    let digits: String = text
        .chars()
        .filter(|c| !c.is_whitespace() && *c != ':' && *c != '-')
        .collect();
    if let Some(bad) = digits.chars().find(|c| !c.is_ascii_hexdigit()) {
        return Err(format!("`{bad}` is not a hex digit in `{text}`"));
    }
    if digits.len() % 2 != 0 {
        return Err(format!(
            "{} hex digits in `{text}`: a byte is two digits",
            digits.len()
        ));
    }
    let bytes: Vec<u8> = (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).expect("checked hex digits"))
        .collect();
    if bytes.len() > MAX_REPORT_LEN {
        return Err(format!(
            "{} bytes: reports are at most {MAX_REPORT_LEN}",
            bytes.len()
        ));
    }
    Ok(bytes)
}

fn parse_force(text: &str) -> Result<Vec3, String> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    let values: Result<Vec<f64>, _> = parts.iter().map(|p| p.parse::<f64>()).collect();
    match values {
        Ok(v) if v.len() == 3 && v.iter().all(|x| x.is_finite()) => Ok(Vec3::new(v[0], v[1], v[2])),
        _ => Err(format!(
            "--force `{text}`: give three finite numbers in N, like 0,0,-1.5"
        )),
    }
}

/// The report padded to the profile's input length, or why it cannot be one.
fn input_report(hex: &str, length: usize, name: &str) -> Result<[u8; MAX_REPORT_LEN], String> {
    let bytes = parse_hex(hex)?;
    if bytes.len() < length {
        return Err(format!(
            "the report has {} bytes; profile `{name}` reads {length}",
            bytes.len()
        ));
    }
    let mut buf = [0u8; MAX_REPORT_LEN];
    buf[..bytes.len()].copy_from_slice(&bytes);
    Ok(buf)
}

/// `palpa devices decode`: the JSON line for one input report.
pub fn decode(args: &DecodeArgs) -> Result<String, String> {
    let profile = resolve_profile(&args.profile)?;
    let buf = input_report(&args.report, profile.input.length, &profile.name)?;
    let id = profile.input.report_id;
    if id != 0 && buf[0] != id {
        return Err(format!(
            "the report's id is {:#04x}; profile `{}` reads report {id:#04x}",
            buf[0], profile.name
        ));
    }
    let d = profile.codec().decode_input(&buf);
    // Written by hand to keep the documented key order (serde_json sorts keys); f64's
    // Display prints the shortest text that reads back to the same value.
    // A float field may hold NaN or infinity, which JSON has no number for.
    let number = |v: f64| {
        if v.is_finite() {
            v.to_string()
        } else {
            "null".into()
        }
    };
    let p = d.position;
    Ok(format!(
        "{{\"position\":[{},{},{}],\"buttons\":{}}}",
        number(p.x),
        number(p.y),
        number(p.z),
        d.buttons
    ))
}

/// `palpa devices encode`: the output report (hex) for a force at a pose.
pub fn encode(args: &EncodeArgs) -> Result<String, String> {
    let profile = resolve_profile(&args.profile)?;
    let force = parse_force(&args.force)?;
    let at = input_report(&args.at, profile.input.length, &profile.name)?;
    let mut codec = profile.codec();
    codec.decode_input(&at);
    let mut out = [0u8; MAX_REPORT_LEN];
    let (len, _) = codec.encode_output(&mut out, profile.rated_force(force), 0);
    Ok(out[..len].iter().map(|b| format!("{b:02x}")).collect())
}
