//! `palpa recording check DIR`: what a recording directory holds — its manifest, the
//! scene copy and each copied file against its hash, each device and its ticks (rows,
//! time span, a torn last row), the visual stream (records, frames, a torn tail).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use crate::recording::check;

/// Arguments of `palpa recording`.
#[derive(Args, Debug)]
pub struct RecordingArgs {
    /// What to do with a recording.
    #[command(subcommand)]
    pub command: RecordingCommand,
}

/// `palpa recording` subcommands.
#[derive(Subcommand, Debug)]
pub enum RecordingCommand {
    /// Say what a recording directory holds; exit 1 if it would not replay as recorded
    /// (a missing or changed file). A torn tail (after a crash) is reported, not an error.
    Check {
        /// The recording directory (`palpa serve --record DIR`).
        dir: PathBuf,
    },
}

/// Runs `palpa recording`.
pub fn run(args: &RecordingArgs) -> ExitCode {
    match &args.command {
        RecordingCommand::Check { dir } => {
            let lines = check(dir);
            for l in &lines {
                let mark = if l.problem { "PROBLEM" } else { "ok" };
                println!("{mark:>7}  {}: {}", l.file, l.text);
            }
            let problems = lines.iter().filter(|l| l.problem).count();
            let torn = lines.iter().filter(|l| l.text.contains("torn")).count();
            if problems == 0 && torn > 0 {
                println!(
                    "{}: replays as recorded up to where it was cut off ({torn} torn tail(s) \
                     ignored)",
                    dir.display()
                );
                ExitCode::SUCCESS
            } else if problems == 0 {
                println!("{}: a complete recording", dir.display());
                ExitCode::SUCCESS
            } else {
                println!("{}: {problems} problem(s)", dir.display());
                ExitCode::FAILURE
            }
        }
    }
}
