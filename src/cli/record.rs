//! `palpa record`: a device's motion to CSV; Ctrl-C leaves a complete file. No tissue
//! runs, so the device gets zero force and the file's `fx,fy,fz` are zero: it records
//! motion only, and says so (`palpa serve --record DIR` records a session with forces).
//! The rows go through the same writer as a session's `ticks.csv`
//! ([`crate::recording::TickFile`]): a ring the polling loop never waits on, whole rows,
//! synced every 50 ms, a failed write reported at once.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::device::choice::DeviceChoice;
use crate::device::{DeviceError, HapticDevice};
use crate::files::{write, OutputDir};
use crate::haptic::tick_ring::{tick_ring, TickSink};
use crate::haptic::{SafetyState, TickRecord};
use crate::recording::{RecordingHealth, RowFormat, TickFile, TickWriter};
use crate::rt;
use crate::Vec3;

/// Rows the ring holds while the writer catches up (4 s at 1 kHz).
const RING_ROWS: usize = 4096;

/// Arguments of `palpa record`.
#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    /// Device to record: `sim:still`, `sim:circle`, `sim:press`, `replay:FILE.csv`,
    /// `hid` (reference profile), `hid:PROFILE.toml` or `auto` (a connected HID device).
    #[arg(long, default_value = "sim:circle", value_parser = DeviceChoice::parse)]
    pub device: DeviceChoice,
    /// Trajectory CSV to write (`t,x,y,z,buttons,fx,fy,fz`, device frame; motion only: no
    /// tissue runs, the forces are zero; `palpa serve --record DIR` records forces). An
    /// existing file is refused unless `--force`.
    #[arg(long, short)]
    pub out: PathBuf,
    /// Replace an existing file at `--out`.
    #[arg(long)]
    pub force: bool,
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

/// Creates the output file new (an existing one only replaced with `force`: the entry is
/// removed, never written through) and starts its writer.
fn create_output(args: &RecordArgs, device: &str) -> Result<(TickFile, TickSink), String> {
    let (dir, name) = write::split(&args.out).map_err(|e| e.to_string())?;
    let dir = OutputDir::open(dir).map_err(|e| e.to_string())?;
    if dir.entry(name).map_err(|e| e.to_string())?.is_some() {
        if !args.force {
            return Err(format!(
                "{}: exists; give another file, or --force to replace it",
                args.out.display()
            ));
        }
        dir.remove(name).map_err(|e| e.to_string())?;
    }
    let file = dir.create_new(name).map_err(|e| e.to_string())?;
    let preamble = [format!(
        "palpa record: the motion of {device}; positions in the device's frame (m), t since \
         the first poll (s), forces zero (motion only)"
    )];
    let writer = TickWriter::start(file, &args.out, RowFormat::Motion, &preamble)
        .map_err(|e| format!("{}: {e}", args.out.display()))?;
    let (sink, source) = tick_ring(RING_ROWS);
    let health = Arc::new(RecordingHealth::default());
    let file = TickFile::start(writer, source, health)
        .map_err(|e| format!("cannot start the recording's writer: {e}"))?;
    Ok((file, sink))
}

fn motion_row(t: f64, position: Vec3, buttons: u32) -> TickRecord {
    TickRecord {
        t,
        probe: position,
        buttons,
        orientation: None,
        gripper: None,
        desired: Vec3::zeros(),
        force: Vec3::zeros(),
        state: SafetyState::Normal,
        model_in_contact: false,
        depth: 0.0,
        sample_age: 0.0,
        model_age: f64::INFINITY,
    }
}

fn run_record(args: &RecordArgs) -> Result<(), String> {
    let interrupted = rt::stop_flag();
    if args.device.scene_shift().is_some() {
        return Err(format!(
            "device `{}` moves the press within a scene, and `palpa record` records the \
             device frame without one: record sim:press",
            args.device.spec()
        ));
    }
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
    let (file, mut sink) = create_output(args, device.name())?;
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
        if let Some(failure) = file.health().failure() {
            break Err(format!("recording ended: {failure}"));
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
        let sample = device
            .read(t)
            .and_then(|s| device.write_force(Vec3::zeros()).map(|()| s));
        match sample {
            Ok(s) if s.position.iter().all(|c| c.is_finite()) => {
                sink.push(motion_row(t, s.position, s.buttons));
            }
            Ok(_) => {}
            Err(DeviceError::Disconnected(e)) => {
                eprintln!("device disconnected ({e}); retrying every 0.5 s");
                connected = false;
            }
            Err(e) => break Err(e.to_string()),
        }
    };
    let _ = device.zero_force();
    drop(device);
    drop(sink);
    let summary = file.finish();
    eprintln!(
        "wrote {} rows to {} ({} dropped)",
        summary.rows,
        args.out.display(),
        summary.dropped
    );
    if let Some(failure) = summary.failure {
        return Err(format!(
            "recording ended early: {failure}; the file holds the {} rows before it",
            summary.rows
        ));
    }
    result
}
