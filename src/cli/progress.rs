//! The one progress display of the commands that precompute (`serve`, `replay`,
//! `precompute`, `modes`).

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::modal::Progress;

/// A progress display on stderr and the callback that drives it from the precompute's
/// stages (a spinner while assembling and solving, a bar over the surface nodes for
/// residual flexibility).
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
        Progress::Residual { done, total } => {
            if b.length() != Some(total as u64) {
                b.set_style(
                    ProgressStyle::with_template("{bar:40} {pos}/{len} surface nodes {msg}")
                        .expect("valid template"),
                );
                b.set_length(total as u64);
                b.set_message("residual flexibility");
            }
            b.set_position(done as u64);
        }
    };
    (bar, on_progress)
}
