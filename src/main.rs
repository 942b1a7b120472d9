//! The `palpa` command line: one subcommand per user task.

use clap::{Parser, Subcommand};

/// palpa: haptic force-feedback server for soft tissue.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve a scene: haptic device, tissue model and the browser viewer.
    Serve(palpa::cli::serve::ServeArgs),
    /// List HID devices and which device profile matches each.
    Devices(palpa::cli::devices::DevicesArgs),
    /// Record a device's trajectory to CSV (Ctrl-C leaves a complete file).
    Record(palpa::cli::record::RecordArgs),
    /// Check a recording directory: what it holds, and whether it replays as recorded.
    Recording(palpa::cli::recording::RecordingArgs),
    /// Compute, select and print the vibration modes of a tetrahedral mesh.
    Modes(palpa::cli::modes::ModesArgs),
    /// Precompute a scene's modes and write them to the cache.
    Precompute(palpa::cli::precompute::PrecomputeArgs),
    /// Replay a recording (DIR) or a trajectory through a scene in lock-step; write
    /// forces (and a plot); print the largest difference from the recorded forces.
    Replay(palpa::cli::replay::ReplayArgs),
    /// Press the scene's probe into the tissue to given depths; print force vs depth.
    Indent(palpa::cli::indent::IndentArgs),
    /// Plot a force CSV (replay output or recorded ticks) to SVG or PNG.
    Plot(palpa::cli::plot::PlotArgs),
    /// Watch a running server's visual stream: rate, latency, bandwidth; record it.
    Watch(palpa_client::watch::WatchArgs),
}

/// The system allocator, noting a refused allocation so the abort that follows becomes
/// an error message and exit status 1 (`palpa::rt::out_of_memory`).
#[global_allocator]
static ALLOCATOR: palpa::rt::out_of_memory::ReportingAllocator =
    palpa::rt::out_of_memory::ReportingAllocator;

fn main() -> std::process::ExitCode {
    palpa::rt::out_of_memory::report_on_abort();
    palpa::cli::logging::init();
    let cli = Cli::parse();
    match &cli.command {
        Command::Serve(args) => exit_code(palpa::cli::serve::run(args)),
        Command::Devices(args) => palpa::cli::devices::run(args),
        Command::Record(args) => palpa::cli::record::run(args),
        Command::Recording(args) => palpa::cli::recording::run(args),
        Command::Modes(args) => exit_code(palpa::cli::modes::run(args)),
        Command::Precompute(args) => exit_code(palpa::cli::precompute::run(args)),
        Command::Replay(args) => exit_code(palpa::cli::replay::run(args)),
        Command::Indent(args) => exit_code(palpa::cli::indent::run(args)),
        Command::Plot(args) => exit_code(palpa::cli::plot::run(args)),
        Command::Watch(args) => palpa_client::watch::run_blocking(args, "palpa watch"),
    }
}

/// Prints a command's error and turns its result into the process exit status.
fn exit_code(result: Result<(), String>) -> std::process::ExitCode {
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("error: {msg}");
            std::process::ExitCode::FAILURE
        }
    }
}
