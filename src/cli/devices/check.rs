//! `palpa devices check [DEVICE]`: the guided first-power-on test on the terminal
//! ([`crate::device::check`]): prompts on stdout, Enter on stdin, the report at the end,
//! and the record of a device that passed (so `serve` stops warning about it).

use crate::device::check::{self, store, CheckLoop, Pacing, Plan, TerminalOperator};
use crate::device::choice::DeviceChoice;
use crate::rt;

/// Arguments of `palpa devices check`.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// The device, as `serve --device` takes it: hid, hid:PROFILE.toml, openhaptics,
    /// dhd, haply, … (default: auto, the connected HID device a shipped profile matches).
    #[arg(value_name = "DEVICE", default_value = "auto", value_parser = DeviceChoice::parse)]
    pub device: DeviceChoice,
}

/// Runs the check; `Ok` with the report when the device passed (and is recorded),
/// `Err` with it when it did not.
pub fn run(args: &CheckArgs) -> Result<Option<String>, String> {
    let mut opened = args.device.open(None)?;
    let Some(identity) = opened.device.identity() else {
        return Err(format!(
            "{}: a virtual device has nothing to check; give the device to check (hid, \
             hid:PROFILE.toml, openhaptics, dhd, haply)",
            opened.description
        ));
    };
    opened
        .device
        .zero_force()
        .map_err(|e| format!("{}: {e}", opened.device.name()))?;
    println!("checking: {}", opened.description);
    println!(
        "check: forces stay at or below {} N and stop at once if the handle runs away; \
         Ctrl-C stops the check with zero force",
        check::MAX_CHECK_FORCE
    );
    let (profile, source) = match &opened.profile {
        Some((p, s)) => (Some(p), Some(s.clone())),
        None => (None, None),
    };
    let plan = Plan::new(opened.device.rating().workspace, profile, source);
    let mut loop_ = CheckLoop::new(plan, opened.device.calibration_request());
    let mut operator =
        TerminalOperator::start().map_err(|e| format!("cannot read the terminal: {e}"))?;
    let outcome = check::run(
        &mut loop_,
        &mut *opened.device,
        &mut operator,
        Pacing::RealTime,
        rt::stop_flag(),
    );
    operator.finish();
    let report = outcome.report(loop_.plan());
    if !outcome.passed() {
        return Err(format!(
            "the check of {} failed:\n{report}",
            opened.device.name()
        ));
    }
    let dir = store::state_dir()?;
    let record = store::CheckRecord {
        identity,
        name: opened.device.name().to_owned(),
        checked_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        palpa_version: env!("CARGO_PKG_VERSION").to_owned(),
    };
    let path = store::record(&dir, &record)?;
    Ok(Some(format!(
        "{report}\nrecorded as checked: {}",
        path.display()
    )))
}
