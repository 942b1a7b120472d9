//! `palpa record`: a device's motion to CSV; Ctrl-C leaves a complete file. No tissue
//! runs, so the device gets zero force and the file's `fx,fy,fz` are zero: it records
//! motion only, and says so (`palpa serve --record DIR` records a session with forces).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use crate::device::choice::DeviceChoice;
use crate::device::record::Recorder;
use crate::device::{DeviceError, HapticDevice};
use crate::rt;
use crate::Vec3;

/// Arguments of `palpa record`.
#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    /// Device to record: `sim:still`, `sim:circle`, `sim:press`, `replay:FILE.csv`,
    /// `hid` (reference profile), `hid:PROFILE.toml` or `auto` (a connected HID device).
    #[arg(long, default_value = "sim:circle", value_parser = DeviceChoice::parse)]
    pub device: DeviceChoice,
    /// Trajectory CSV to write (`t,x,y,z,buttons,fx,fy,fz`; motion only: no tissue runs,
    /// the forces are zero; `palpa serve --record DIR` records forces).
    #[arg(long, short)]
    pub out: PathBuf,
    /// Stop after this many seconds (default: until Ctrl-C, or the end of a replay).
    #[arg(long)]
    pub duration: Option<f64>,
}

/// `palpa record`: polls the device at 1 kHz with zero force and writes its motion;
/// Ctrl-C stops it cleanly with the file complete.
pub fn run(args: &RecordArgs) -> ExitCode {
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
    let opened = args.device.open(None)?;
    if opened.stylus.is_some() {
        return Err(format!(
            "{}: nothing moves it in `palpa record`; record a HID device, a replay or a \
             scripted stylus (sim:still, sim:circle, sim:press)",
            opened.description
        ));
    }
    let mut device = opened.device;
    if device.external_pacer().is_some() {
        return Err(format!(
            "{}: its SDK's scheduler paces it, and `palpa record` polls devices at its own \
             pace, so it cannot record this device",
            opened.description
        ));
    }
    let end = args.duration.or(opened.motion_end).unwrap_or(f64::INFINITY);
    let recorder =
        Recorder::create(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let mut device = recorder.wrap(device);
    eprintln!(
        "recording the motion of {} to {} (Ctrl-C to stop); motion only: no tissue runs, \
         so the device gets zero force and fx,fy,fz are zero (`palpa serve --record DIR` \
         records a session with the tissue's forces)",
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
