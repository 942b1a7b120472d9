//! `palpa serve`: parses the arguments, starts [`Serve`], prints what started, runs
//! until Ctrl-C (SIGINT, SIGTERM, SIGHUP) or a failure, stops with zero force first and
//! prints the report.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

use super::progress::progress_bar;
pub use super::serve_args::{bind_address, ServeArgs};
use crate::app::serve::{Serve, ServeReport, Started, STOPPED_WHILE_PREPARING};
use crate::recording::{Existing, SceneInputs};
use crate::rt;

/// Runs `palpa serve` until Ctrl-C; errors are messages for the user (the force is zero
/// by then).
pub fn run(args: &ServeArgs) -> Result<(), String> {
    let (scene, inputs) = match &args.record {
        Some(_) => {
            let (scene, inputs) = SceneInputs::load(args.scene.scene.as_deref())?;
            (scene, Some(inputs))
        }
        None => (args.scene.load()?, None),
    };
    let name = scene.name.clone().unwrap_or_else(|| scene.source.clone());
    println!("palpa serve: scene \"{name}\" ({})", scene.source);
    let mut serve = Serve::builder(scene)
        .cache_dir(&args.scene.cache_dir())
        .devices(args.devices.clone())
        .stream(args.bind)
        .realtime(args.realtime);
    if let (Some(dir), Some(inputs)) = (&args.record, inputs) {
        let existing = match args.force {
            true => Existing::Replace,
            false => Existing::Refuse,
        };
        serve = serve.record(dir.clone(), inputs, existing);
    }
    let (bar, on_progress) = progress_bar("building the scene");
    let viewer_at = Rc::new(Cell::new(None));
    let shown = (bar.clone(), viewer_at.clone());
    let on_viewer = move |started: &Started| {
        shown.0.finish_and_clear();
        // The handlers go in before the viewer's address is printed: a Ctrl-C as soon
        // as it shows must stop cleanly (zero force first), not kill the process.
        rt::stop_flag();
        print!("{started}");
        shown.1.set(Some(Instant::now()));
    };
    let started = serve
        .progress(on_progress)
        .on_viewer(on_viewer)
        .stop_when(rt::stop_flag)
        .start();
    bar.finish_and_clear();
    let mut handle = match started {
        Err(e) if e == STOPPED_WHILE_PREPARING => {
            println!("stopped before the tissue was ready: no force was commanded");
            return Ok(());
        }
        started => started?,
    };
    let stop = rt::stop_flag();
    // Scripts and tests press once this line shows: the haptic loops run on a ready
    // tissue from here.
    let after = viewer_at.get().map_or(0.0, |at| at.elapsed().as_secs_f64());
    println!("model: ready ({after:.2} s after the viewer line)");
    for request in handle.calibration_requests() {
        super::calibrate::listen_for_calibration(request);
    }
    println!("press Ctrl-C to stop (the force goes to zero first)");
    handle.run_until(stop);
    let report = handle.stop();
    eprintln!("stopping: haptic and model threads stopped, force on the device zeroed");
    print_report(report)
}

fn print_report(report: ServeReport) -> Result<(), String> {
    for line in report.recording_lines() {
        match line {
            Ok(line) => println!("recorded: {line}"),
            Err(e) => eprintln!("error: {e}"),
        }
    }
    if let Some(failure) = report.failure {
        return Err(format!(
            "{failure}; palpa stopped with zero force on the device"
        ));
    }
    let several = report.devices.len() > 1;
    for d in report.devices {
        if several {
            println!(
                "{}: largest force commanded {:.3} N",
                d.label, d.peak_commanded
            );
        }
        for note in &d.notes {
            println!("{}: {note}", d.label);
        }
        let f = d.last_force;
        println!(
            "stopped: last force commanded to {}: {} {} {} N",
            d.label, f.x, f.y, f.z
        );
    }
    match report.recording {
        Some((dir, Some(failure))) => Err(format!(
            "the recording in {} ended early: {failure}",
            dir.display()
        )),
        _ => Ok(()),
    }
}
