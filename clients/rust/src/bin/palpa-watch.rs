//! `palpa-watch`: watch a palpa visual stream from a terminal or a script (the same
//! command as `palpa watch`; see `palpa_client::watch`).
//!
//! Prints frame rate, latency, bandwidth and lost frames once a second; optionally
//! records the stream; exits 0 when the run met its targets, 1 when the frame rate was
//! below `--min-rate`, 2 when the connection failed.

use std::process::ExitCode;

use clap::Parser;
use palpa_client::watch::{run_blocking, WatchArgs};

/// Watch a palpa visual stream: rate, latency, bandwidth; record it to a file.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(flatten)]
    args: WatchArgs,
}

fn main() -> ExitCode {
    run_blocking(&Cli::parse().args, "palpa-watch")
}
