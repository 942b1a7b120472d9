//! The `palpa devices` and `palpa record` subcommands.

use super::hid::{HidDevice, HidapiTransport};
use super::profile::DeviceProfile;
use super::record::Recorder;
use super::replay::{ReplayDevice, Trajectory};
use super::sim::{Script, SimDevice};
use super::{DeviceError, HapticDevice};
use crate::rt;
use crate::Vec3;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;

/// Arguments of `palpa devices`.
#[derive(clap::Args, Debug)]
pub struct DevicesArgs {
    /// Extra device profiles (TOML files or directories of them) to match against, besides
    /// the built-in reference profile.
    #[arg(long = "profile", value_name = "PATH")]
    pub profiles: Vec<PathBuf>,
}

/// Arguments of `palpa record`.
#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    /// Device to record: `sim:still`, `sim:circle`, `sim:press`, `replay:FILE.csv`,
    /// `hid` (reference profile) or `hid:PROFILE.toml`.
    #[arg(long, default_value = "sim:circle")]
    pub device: String,
    /// Trajectory CSV to write (`t,x,y,z,buttons,fx,fy,fz`).
    #[arg(long, short)]
    pub out: PathBuf,
    /// Stop after this many seconds (default: until Ctrl-C, or the end of a replay).
    #[arg(long)]
    pub duration: Option<f64>,
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
pub fn devices(args: &DevicesArgs) -> ExitCode {
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

/// Opens a device from a `--device` spec (see [`RecordArgs::device`]); also returns the
/// natural end of its motion (s) for replays.
pub fn open_device(spec: &str) -> Result<(Box<dyn HapticDevice>, Option<f64>), String> {
    let (kind, arg) = spec.split_once(':').unwrap_or((spec, ""));
    let above = Vec3::new(0.0, 0.0, 0.01);
    let device: (Box<dyn HapticDevice>, Option<f64>) = match (kind, arg) {
        ("sim", "still") => (Box::new(SimDevice::new(Script::Still(above))), None),
        ("sim", "circle") => (
            Box::new(SimDevice::new(Script::Circle {
                center: Vec3::new(0.0, 0.0, -0.003),
                radius: 0.02,
                period: 4.0,
            })),
            None,
        ),
        ("sim", "press") => (
            Box::new(SimDevice::new(Script::Press {
                top: above,
                depth: 0.016,
                period: 2.0,
            })),
            None,
        ),
        ("replay", file) if !file.is_empty() => {
            let t = Trajectory::load(Path::new(file)).map_err(|e| e.to_string())?;
            let end = t.duration();
            (Box::new(ReplayDevice::new(t)), Some(end))
        }
        ("hid", profile) => {
            let profile = if profile.is_empty() {
                DeviceProfile::reference()
            } else {
                DeviceProfile::load(Path::new(profile)).map_err(|e| e.to_string())?
            };
            let transport = HidapiTransport::open(&profile).map_err(|e| e.to_string())?;
            (Box::new(HidDevice::new(transport, profile)), None)
        }
        _ => {
            return Err(format!(
                "unknown device `{spec}`: use sim:still, sim:circle, sim:press, \
                 replay:FILE.csv, hid or hid:PROFILE.toml"
            ))
        }
    };
    Ok(device)
}

/// `palpa record`: polls the device at 1 kHz with zero force and writes what it sees;
/// Ctrl-C stops it cleanly with the file complete.
pub fn record(args: &RecordArgs) -> ExitCode {
    match run_record(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run_record(args: &RecordArgs) -> Result<(), String> {
    let interrupted = rt::stop_flag();
    let (device, natural_end) = open_device(&args.device)?;
    let end = args.duration.or(natural_end).unwrap_or(f64::INFINITY);
    let recorder =
        Recorder::create(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let mut device = recorder.wrap(device);
    eprintln!(
        "recording {} to {} (Ctrl-C to stop)",
        device.name(),
        args.out.display()
    );
    let period = 1_000_000u64;
    let epoch = rt::now_ns();
    let mut deadline = epoch;
    let mut last_reconnect = f64::NEG_INFINITY;
    let mut connected = true;
    let result = loop {
        if interrupted.load(Ordering::SeqCst) {
            break Ok(());
        }
        rt::sleep_until(deadline, 0);
        let t = (deadline - epoch) as f64 * 1e-9;
        if t > end {
            break Ok(());
        }
        deadline += period;
        if !connected {
            if t - last_reconnect >= 0.5 {
                last_reconnect = t;
                connected = matches!(device.reconnect(), Ok(true));
            }
            continue;
        }
        match device
            .read(t)
            .and_then(|_| device.write_force(Vec3::zeros()))
        {
            Ok(()) => {}
            Err(DeviceError::Disconnected(e)) => {
                eprintln!("device disconnected ({e}); retrying every 0.5 s");
                connected = false;
            }
            Err(e) => break Err(e.to_string()),
        }
    };
    let _ = device.zero_force();
    drop(device);
    let summary = recorder
        .finish()
        .map_err(|e| format!("{}: {e}", args.out.display()))?;
    eprintln!(
        "wrote {} rows to {} ({} dropped)",
        summary.rows,
        args.out.display(),
        summary.dropped
    );
    result
}
