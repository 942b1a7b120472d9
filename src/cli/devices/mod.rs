//! `palpa devices`: the device profiles and backends palpa knows and the HID devices
//! connected; tools for profile and firmware authors as subcommands.

mod check;
mod configurations;
mod import;
mod reports;

use crate::device::profile::DeviceProfile;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `palpa devices`.
#[derive(clap::Args, Debug)]
pub struct DevicesArgs {
    /// Extra device profiles (TOML files or directories of them) to match against, besides
    /// the shipped profiles.
    #[arg(long = "profile", value_name = "PATH")]
    pub profiles: Vec<PathBuf>,
    /// A tool for profile and firmware authors (without one: list profiles, backends and
    /// connected devices).
    #[command(subcommand)]
    pub tool: Option<DevicesTool>,
}

/// `palpa devices` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum DevicesTool {
    /// Print `{"position":[x,y,z],"buttons":n}` (m, device frame) for one raw input report.
    Decode(reports::DecodeArgs),
    /// Print the output report (hex, as written with hidapi) for a force at a pose.
    Encode(reports::EncodeArgs),
    /// Write a profile from a WoodenHaptics / haptikfabriken configuration JSON.
    ImportWoodenhaptics(import::ImportArgs),
    /// The guided first-power-on test of a device: directions, workspace, calibration
    /// pose, small forces (at most 0.5 N); records a device that passes.
    Check(check::CheckArgs),
}

/// A profile named on the command line: a TOML file, else a shipped profile's name.
pub fn resolve_profile(arg: &Path) -> Result<DeviceProfile, String> {
    if arg.exists() {
        return DeviceProfile::load(arg).map_err(|e| e.to_string());
    }
    let name = arg.to_string_lossy();
    let shipped = DeviceProfile::shipped();
    let names: Vec<&str> = shipped.iter().map(|p| p.name.as_str()).collect();
    let wanted = names.iter().position(|n| *n == name);
    match wanted {
        Some(i) => Ok(shipped[i].clone()),
        None => Err(format!(
            "{name}: no such file, and no shipped profile of that name ({})",
            names.join(", ")
        )),
    }
}

/// Loads every profile: the shipped ones and those under `paths`.
pub fn load_profiles(paths: &[PathBuf]) -> Result<Vec<DeviceProfile>, String> {
    let mut profiles = DeviceProfile::shipped();
    for p in paths {
        if p.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| format!("{}: {e}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|x| x == "toml"))
                .collect();
            files.sort();
            for f in files {
                profiles.push(DeviceProfile::load(&f).map_err(|e| e.to_string())?);
            }
        } else {
            profiles.push(DeviceProfile::load(p).map_err(|e| e.to_string())?);
        }
    }
    Ok(profiles)
}

/// `palpa devices`: runs a tool, or lists profiles, backends and connected devices.
pub fn run(args: &DevicesArgs) -> ExitCode {
    let printed = match &args.tool {
        None => return list(args),
        Some(DevicesTool::Decode(a)) => reports::decode(a).map(Some),
        Some(DevicesTool::Encode(a)) => reports::encode(a).map(Some),
        Some(DevicesTool::ImportWoodenhaptics(a)) => import::run(a),
        Some(DevicesTool::Check(a)) => check::run(a),
    };
    match printed {
        Ok(text) => {
            if let Some(text) = text {
                println!("{}", text.trim_end());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Lists profiles, backends and the HID devices with the profiles each matches.
fn list(args: &DevicesArgs) -> ExitCode {
    let profiles = match load_profiles(&args.profiles) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("profiles:");
    for p in &profiles {
        println!("  {:<20} {}", p.name, p.description);
    }
    println!("backends:");
    for b in crate::device::backends::statuses() {
        let (mark, detail) = match &b.availability {
            Ok(found) => ("usable", found),
            Err(missing) => ("not usable", missing),
        };
        println!("  {:<26} {:<40} {mark}: {detail}", b.spec, b.drives);
    }
    let api = match hidapi::HidApi::new() {
        Ok(api) => api,
        Err(e) => {
            eprintln!("error: cannot enumerate HID devices: {e}");
            return ExitCode::FAILURE;
        }
    };
    let list: Vec<_> = api.device_list().collect();
    if list.is_empty() {
        println!("no HID devices found");
        return ExitCode::SUCCESS;
    }
    println!("HID devices:");
    for d in list {
        let path = d.path().to_string_lossy();
        let matched: Vec<&str> = profiles
            .iter()
            .filter(|p| p.matches(d.vendor_id(), d.product_id(), d.usage_page(), &path))
            .map(|p| p.name.as_str())
            .collect();
        println!(
            "  {:04x}:{:04x} usage page {:04x}  {}  {} {}  profile: {}",
            d.vendor_id(),
            d.product_id(),
            d.usage_page(),
            path,
            d.manufacturer_string().unwrap_or(""),
            d.product_string().unwrap_or(""),
            if matched.is_empty() {
                "none".to_string()
            } else {
                matched.join(", ")
            }
        );
    }
    ExitCode::SUCCESS
}
