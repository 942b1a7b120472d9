//! The one progress display of the commands that precompute (`serve`, `replay`,
//! `precompute`, `modes`), and the log writer that prints log lines above it instead of
//! into it.

use std::io::Write;
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use tracing_subscriber::fmt::MakeWriter;

use crate::modal::Progress;

/// Stages of a scene build the bar counts: reading the scene and its cache, assembling
/// K and M, factorising and solving for the modes.
pub const STAGES: u64 = 3;
/// Bar steps per stage: the eigen solve moves the bar within its stage.
pub const STEPS_PER_STAGE: u64 = 100;
/// Of the last stage's steps, those the Lanczos solve fills as its modes converge (the
/// rest are polishing sweeps).
const LANCZOS_STEPS: u64 = 90;

/// The bar on screen, if any; log lines are printed above it.
static ACTIVE: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// A progress bar on stderr over the [`STAGES`] of a build, naming the stage and the
/// elapsed time (hidden when stderr is not a terminal), and the callback that advances
/// it. Log lines written through [`LogWriter`] while it is shown appear above it.
pub fn progress_bar(what: &str) -> (ProgressBar, impl FnMut(Progress)) {
    let bar = shown_bar(what, STAGES * STEPS_PER_STAGE, "{msg} [{bar:20}] {elapsed}");
    let b = bar.clone();
    let stage = |n: u64| n * STEPS_PER_STAGE;
    let on_progress = move |p: Progress| match p {
        Progress::Assembling => {
            b.set_position(stage(1));
            b.set_message("stage 2/3, precompute: assembling K and M");
        }
        Progress::SolvingModes => {
            b.set_position(stage(2));
            b.set_message("stage 3/3, precompute: factorising K for the modes");
        }
        Progress::Lanczos {
            solves,
            converged,
            wanted,
        } => {
            let done = (LANCZOS_STEPS * converged as u64) / wanted.max(1) as u64;
            b.set_position(stage(2) + done);
            b.set_message(format!(
                "stage 3/3, precompute: solving for modes, {converged} of {wanted} \
                 converged after {solves} block solves"
            ));
        }
        Progress::Polishing { sweep, of } => {
            let rest = STEPS_PER_STAGE - LANCZOS_STEPS;
            b.set_position(stage(2) + LANCZOS_STEPS + rest * (sweep as u64 - 1) / of as u64);
            b.set_message(format!(
                "stage 3/3, precompute: polishing the modes, sweep {sweep} of at most {of}"
            ));
        }
    };
    (bar, on_progress)
}

/// A progress bar on stderr over `total` items of `what` (e.g. the points of a map), with
/// the count, the rate and the time left; log lines appear above it.
pub fn count_bar(what: &str, total: u64) -> ProgressBar {
    shown_bar(
        what,
        total,
        "{msg} [{bar:20}] {pos}/{len}, {elapsed}, ~{eta} left",
    )
}

/// A bar of `len` steps drawn with `template`, ticking, the one log lines print above.
fn shown_bar(what: &str, len: u64, template: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(template)
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_message(what.to_string());
    bar.enable_steady_tick(Duration::from_millis(200));
    *ACTIVE.lock().unwrap_or_else(|p| p.into_inner()) = Some(bar.clone());
    bar
}

/// `tracing_subscriber` writer to stderr that suspends the progress bar on screen while
/// it prints a line, so a warning during a build is not drawn into the bar.
/// (`tracing-indicatif` does this for bars tied to tracing spans; this bar is driven by
/// the precompute's callback instead, so the few lines here do it for one bar.)
#[derive(Clone, Copy, Debug, Default)]
pub struct LogWriter;

/// One log event, written to stderr when dropped.
pub struct LogLine(Vec<u8>);

impl<'a> MakeWriter<'a> for LogWriter {
    type Writer = LogLine;

    fn make_writer(&'a self) -> LogLine {
        LogLine(Vec::new())
    }
}

impl Write for LogLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LogLine {
    fn drop(&mut self) {
        let bar = ACTIVE
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .filter(|b| !b.is_finished());
        // Nothing to do with an error writing a log line to stderr.
        let write = || drop(std::io::stderr().lock().write_all(&self.0));
        match bar {
            Some(bar) => bar.suspend(write),
            None => write(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_has_a_known_length_and_advances_by_stage_and_within_the_eigen_solve() {
        let (bar, mut on_progress) = progress_bar("building");
        let stage = STEPS_PER_STAGE;
        assert_eq!(bar.length(), Some(STAGES * stage));
        assert_eq!(bar.position(), 0);
        on_progress(Progress::Assembling);
        assert_eq!(bar.position(), stage);
        on_progress(Progress::SolvingModes);
        assert_eq!(bar.position(), 2 * stage);
        assert!(bar.message().contains("stage 3/3"), "{}", bar.message());
        let lanczos = |solves, converged| Progress::Lanczos {
            solves,
            converged,
            wanted: 40,
        };
        on_progress(lanczos(3, 0));
        assert_eq!(bar.position(), 2 * stage);
        assert!(bar
            .message()
            .contains("0 of 40 converged after 3 block solves"));
        on_progress(lanczos(9, 20));
        let half = bar.position();
        assert!(2 * stage < half && half < 3 * stage, "{half}");
        on_progress(lanczos(12, 40));
        assert!(bar.position() > half && bar.position() < 3 * stage);
        on_progress(Progress::Polishing { sweep: 2, of: 4 });
        assert!(bar.position() > 2 * stage + LANCZOS_STEPS && bar.position() < 3 * stage);
        assert!(bar.message().contains("sweep 2 of at most 4"));
        bar.finish_and_clear();
    }
}
