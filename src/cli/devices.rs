//! `palpa devices`: the device profiles palpa knows and the HID devices connected.

use crate::device::profile::DeviceProfile;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `palpa devices`.
#[derive(clap::Args, Debug)]
pub struct DevicesArgs {
    /// Extra device profiles (TOML files or directories of them) to match against, besides
    /// the built-in reference profile.
    #[arg(long = "profile", value_name = "PATH")]
    pub profiles: Vec<PathBuf>,
}

/// Loads every profile: the built-in one and those under `paths`.
pub fn load_profiles(paths: &[PathBuf]) -> Result<Vec<DeviceProfile>, String> {
    let mut profiles = vec![DeviceProfile::reference()];
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

/// `palpa devices`: lists HID devices and the profile each matches.
pub fn run(args: &DevicesArgs) -> ExitCode {
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
