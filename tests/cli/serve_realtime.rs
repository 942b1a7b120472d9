//! `palpa serve`'s real-time haptic thread as the kernel sees it: with permission the
//! `palpa-haptic` thread runs SCHED_FIFO at the allowed priority (and `palpa-model` at
//! priority 1, below it) and the process locks only what the haptic thread touches (the
//! kernel's VmLck equals the bytes palpa reports, a few hundred KiB instead of the GBs
//! `mlockall` locked); without permission `auto` warns on one line naming what is
//! missing and both threads run on the normal scheduler, and
//! `required` refuses to start with a message that says how to allow it.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support::serve::{run_to_end, Served};
use palpa::rt::thread::{FifoAllowance, HOW_TO_ALLOW, MODEL_FIFO_PRIORITY};

const BINARY: &str = env!("CARGO_BIN_EXE_palpa");
/// Generous: the first start precomputes the modes on a slow shared machine.
const START: Duration = Duration::from_secs(600);
const STOP: Duration = Duration::from_secs(60);
const SCHED_OTHER: u32 = 0;
const SCHED_FIFO: u32 = 1;

/// (policy, real-time priority) of the thread of `pid` named `name`, from
/// `/proc/PID/task/TID/stat` (fields 41 and 40, proc(5)). A new thread names itself
/// when it first runs, so on a loaded machine the name may appear a little after the
/// thread: this looks for up to 5 s.
fn thread_scheduling(pid: u32, name: &str) -> (u32, u32) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let mut names = Vec::new();
        for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
            let dir = task.unwrap().path();
            let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
            if comm.trim() != name {
                names.push(comm.trim().to_owned());
                continue;
            }
            let stat = std::fs::read_to_string(dir.join("stat")).unwrap();
            // Fields after the parenthesised name start with field 3 (state).
            let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 1..]
                .split_whitespace()
                .collect();
            return (fields[38].parse().unwrap(), fields[37].parse().unwrap());
        }
        if std::time::Instant::now() > deadline {
            panic!("no thread {name} in process {pid}: {names:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// VmLck of process `pid` (KiB).
fn vm_locked_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmLck:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmLck in /proc/PID/status")
}

/// The KiB locked that the haptic thread's INFO line reports.
fn reported_locked_kib(stderr: &str) -> u64 {
    let line = stderr
        .lines()
        .find(|l| l.contains("haptic thread: SCHED_FIFO priority"))
        .unwrap_or_else(|| panic!("no real-time line in:\n{stderr}"));
    let (_, rest) = line.split_once(", ").unwrap();
    rest.split_whitespace().next().unwrap().parse().unwrap()
}

/// The warning lines about the haptic thread.
fn haptic_warnings(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("haptic thread"))
        .collect()
}

fn serve_args(mode: &str) -> Vec<String> {
    [
        "--device",
        "sim",
        "--bind",
        "127.0.0.1:0",
        "--realtime",
        mode,
    ]
    .map(String::from)
    .to_vec()
}

/// `palpa serve ARGS` without CAP_SYS_NICE (dropped from the bounding and inheritable
/// sets by `setpriv`, which needs root), or `None` where that cannot be arranged.
fn without_cap_sys_nice(args: &[String], cache: &Path) -> Option<Command> {
    let allowance = FifoAllowance::of_current_thread();
    if allowance.rtprio_limit > 0 {
        return None; // RLIMIT_RTPRIO grants SCHED_FIFO without the capability
    }
    let mut command = if !allowance.cap_sys_nice {
        Command::new(BINARY)
    } else {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0
            || Command::new("setpriv").arg("--version").output().is_err()
        {
            return None;
        }
        let mut c = Command::new("setpriv");
        c.args(["--bounding-set=-sys_nice", "--inh-caps=-sys_nice", BINARY]);
        c
    };
    command
        .arg("serve")
        .args(args)
        .env("PALPA_CACHE_DIR", cache)
        .env_remove("PALPA_REALTIME");
    Some(command)
}

#[test]
fn with_permission_the_haptic_thread_is_fifo_and_only_its_memory_is_locked() {
    let Some(priority) = FifoAllowance::of_current_thread().priority() else {
        println!("SKIPPED: this process may not have SCHED_FIFO (see {HOW_TO_ALLOW})");
        return;
    };
    let cache = tempfile::tempdir().unwrap();
    let args = serve_args("required");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut served = Served::start(BINARY, &args, cache.path());
    served.ready(START);
    let pid = served.pid();
    assert_eq!(
        thread_scheduling(pid, "palpa-haptic"),
        (SCHED_FIFO, priority as u32)
    );
    // The model thread runs real-time below it, ahead of every normal thread (a browser
    // drawing the viewer would otherwise stall it past the watchdog); only where the
    // haptic thread itself sits at the lowest priority does it stay normal.
    let model = if priority > MODEL_FIFO_PRIORITY {
        (SCHED_FIFO, MODEL_FIFO_PRIORITY as u32)
    } else {
        (SCHED_OTHER, 0)
    };
    assert_eq!(thread_scheduling(pid, "palpa-model"), model);
    let locked = vm_locked_kib(pid);
    std::thread::sleep(Duration::from_millis(1500));
    let (status, _, stderr) = served.interrupt(STOP);
    assert!(status.success(), "{status:?}\n{stderr}");
    // The kernel counts exactly what palpa says it locked: the stack headroom
    // (128 KiB) and the frames above it, the statistics, slots and device state.
    assert_eq!(locked, reported_locked_kib(&stderr), "{stderr}");
    assert!((128..4096).contains(&locked), "{locked} KiB locked");
    assert_eq!(
        haptic_warnings(&stderr).len(),
        0,
        "no warning when granted:\n{stderr}"
    );
    assert_eq!(
        stderr.contains("model thread: SCHED_FIFO priority 1, below the haptic thread's"),
        priority > MODEL_FIFO_PRIORITY,
        "{stderr}"
    );
    assert!(
        !stderr.contains("WARN palpa::haptic::runtime: model thread"),
        "{stderr}"
    );
    assert!(
        stderr.contains("haptic loop, whole run:") && stderr.contains(" missed "),
        "{stderr}"
    );
}

#[test]
fn without_permission_auto_warns_once_and_runs_and_required_refuses() {
    let cache = tempfile::tempdir().unwrap();
    let Some(command) = without_cap_sys_nice(&serve_args("auto"), cache.path()) else {
        println!("SKIPPED: cannot run palpa without SCHED_FIFO permission here");
        return;
    };
    let mut served = Served::spawn(command);
    served.ready(START);
    for thread in ["palpa-haptic", "palpa-model"] {
        assert_eq!(thread_scheduling(served.pid(), thread), (SCHED_OTHER, 0));
    }
    let (status, _, stderr) = served.interrupt(STOP);
    assert!(status.success(), "{status:?}\n{stderr}");
    let warnings = haptic_warnings(&stderr);
    assert_eq!(warnings.len(), 1, "one warning line:\n{stderr}");
    for needle in [
        "SCHED_FIFO not permitted",
        "CAP_SYS_NICE",
        "RLIMIT_RTPRIO 0",
        "normal scheduler",
        HOW_TO_ALLOW,
    ] {
        assert!(warnings[0].contains(needle), "{needle}: {}", warnings[0]);
    }

    let mut command = without_cap_sys_nice(&serve_args("required"), cache.path()).unwrap();
    let out = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("real-time scheduling is required")
            && stderr.contains("CAP_SYS_NICE")
            && stderr.contains(HOW_TO_ALLOW),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_bad_mode_is_refused_naming_the_flag_and_the_old_flag_still_works() {
    let cache = tempfile::tempdir().unwrap();
    let (status, _, stderr) = run_to_end(BINARY, &["serve", "--realtime", "fast"], cache.path());
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--realtime")
            && stderr.contains("fast")
            && stderr.contains("off, auto or required"),
        "{stderr}"
    );
    let mut env = Command::new(BINARY);
    let out = env
        .args(["serve", "--device", "sim"])
        .env("PALPA_CACHE_DIR", cache.path())
        .env("PALPA_REALTIME", "sometimes")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("sometimes"), "{stderr}");
    // A bare `--realtime` (the old switch) still parses: the run gets as far as the
    // scene, which does not exist (exit 1, not clap's 2).
    let (status, _, stderr) = run_to_end(
        BINARY,
        &["serve", "--realtime", "--scene", "/no/such/scene.toml"],
        cache.path(),
    );
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("/no/such/scene.toml"), "{stderr}");
}
