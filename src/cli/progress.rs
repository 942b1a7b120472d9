//! The one progress display of the commands that precompute (`serve`, `replay`,
//! `precompute`, `modes`).

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::modal::Progress;

/// A progress display on stderr (a spinner with the elapsed time) and the callback that
/// names the precompute's stage in it.
pub fn progress_bar(what: &str) -> (ProgressBar, impl FnMut(Progress)) {
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} {elapsed}").expect("valid template"),
    );
    bar.set_message(what.to_string());
    bar.enable_steady_tick(Duration::from_millis(120));
    let b = bar.clone();
    let on_progress = move |p: Progress| match p {
        Progress::Assembling => b.set_message("precompute: assembling K and M"),
        Progress::SolvingModes => b.set_message("precompute: factorising and solving for modes"),
    };
    (bar, on_progress)
}
