//! Fuzzing every parser: each target in `targets.rs` is driven from its seeds through the
//! deterministic mutation engine in `mutate.rs`, and must never panic, hang or make a huge
//! allocation, whatever the bytes.
//!
//! `cargo test --test fuzz` runs 5 000–10 000 cases per target (seconds). The long run,
//! with the numbers recorded in `docs/reliability.md`:
//!
//! ```text
//! PALPA_FUZZ_CASES=1000000 cargo test --test fuzz -- --nocapture --test-threads 2
//! ```
//!
//! Environment: `PALPA_FUZZ_CASES` (cases per target), `PALPA_FUZZ_SEED` (the stream;
//! change it to explore further), `PALPA_FUZZ_CASE_SECONDS` (a case running longer is a
//! hang, default 10). A failing input is written to
//! `target/tmp/fuzz-crashes/TARGET-CASE.bin` and printed in hex with the panic message;
//! a refused allocation prints its target and input before the process aborts.

mod mutate;
mod targets;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, RefCell};
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, Once};
use std::time::{Duration, Instant};

use mutate::{mutate, Rng};

/// Largest single allocation a target may make (bytes). Parsers allocate in proportion to
/// their input (at most 1 MiB here); anything this large was sized from a number in it.
const MAX_ALLOCATION: usize = 256 << 20;

thread_local! {
    /// The target running on this thread and its input (valid while it runs).
    static RUNNING: Cell<Option<(&'static str, *const u8, usize)>> = const { Cell::new(None) };
    /// The message of the last panic inside a target on this thread.
    static LAST_PANIC: RefCell<String> = const { RefCell::new(String::new()) };
}

/// The system allocator, refusing oversized allocations while a target runs.
struct Guard;

unsafe impl GlobalAlloc for Guard {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOCATION {
            if let Some((target, ptr, len)) = RUNNING.with(|r| r.take()) {
                // SAFETY: the input outlives the target call that set RUNNING.
                let input = unsafe { std::slice::from_raw_parts(ptr, len) };
                let path = save_input(target, "allocation", input);
                // Straight to stderr: the test harness's capture of `eprintln!` is lost
                // when the process aborts.
                let _ = writeln!(
                    std::io::stderr(),
                    "fuzz {target}: allocation of {} bytes (limit {MAX_ALLOCATION}) for the \
                     input in {}:\n{}",
                    layout.size(),
                    path.display(),
                    hex(input)
                );
                return std::ptr::null_mut();
            }
        }
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > MAX_ALLOCATION && RUNNING.with(|r| r.get()).is_some() {
            // SAFETY: same layout rules as `alloc`; the caller then sees a failed realloc.
            return unsafe {
                self.alloc(Layout::from_size_align_unchecked(new_size, layout.align()))
            };
        }
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GUARD: Guard = Guard;

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v} is not a number")),
        Err(_) => default,
    }
}

fn hex(bytes: &[u8]) -> String {
    const SHOWN: usize = 4096;
    let mut s: String = bytes[..bytes.len().min(SHOWN)]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if bytes.len() > SHOWN {
        s.push_str(&format!("… ({} bytes in all)", bytes.len()));
    }
    s
}

/// Writes a failing input to `target/tmp/fuzz-crashes/` and returns the path.
fn save_input(target: &str, case: &str, input: &[u8]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fuzz-crashes");
    let path = dir.join(format!("{target}-{case}.bin"));
    if let Err(e) = std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(&path, input)) {
        eprintln!("fuzz: could not write {}: {e}", path.display());
    }
    path
}

/// Panics inside a target are recorded quietly; others (the test's own assertions) are
/// reported as usual.
fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if RUNNING.with(|r| r.get()).is_some() {
                let at = info
                    .location()
                    .map(|l| format!(" at {}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                let msg = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                LAST_PANIC.with(|p| *p.borrow_mut() = format!("{msg}{at}"));
            } else {
                default(info);
            }
        }));
    });
}

/// Runs `input` through `target`: whether it was accepted, or the panic message.
fn run_case(name: &'static str, target: fn(&[u8]) -> bool, input: &[u8]) -> Result<bool, String> {
    RUNNING.with(|r| r.set(Some((name, input.as_ptr(), input.len()))));
    let result = catch_unwind(AssertUnwindSafe(|| target(input)));
    RUNNING.with(|r| r.set(None));
    result.map_err(|_| LAST_PANIC.with(|p| std::mem::take(&mut *p.borrow_mut())))
}

/// What a worker reports when it is done.
struct Summary {
    cases: u64,
    accepted: u64,
    crashes: Vec<String>,
    slowest: Duration,
    largest: usize,
}

/// Fuzzes `target` from its seeds for `PALPA_FUZZ_CASES` cases (default `ci_cases`),
/// then fails the test listing every crash, or the hanging input.
fn fuzz(name: &'static str, target: fn(&[u8]) -> bool, ci_cases: u64) {
    install_panic_hook();
    let cases = env_number("PALPA_FUZZ_CASES", ci_cases);
    let stream = env_number("PALPA_FUZZ_SEED", 0x5eed);
    let case_limit = Duration::from_secs(env_number("PALPA_FUZZ_CASE_SECONDS", 10));
    let seeds = targets::seeds(name);
    let progress = Arc::new(AtomicU64::new(0));
    let current = Arc::new(Mutex::new(Vec::new()));
    let (done_tx, done_rx) = mpsc::channel();
    let start = Instant::now();
    {
        let (progress, current) = (progress.clone(), current.clone());
        std::thread::Builder::new()
            .name(format!("fuzz-{name}"))
            .spawn(move || {
                let name_hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                    (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
                });
                let mut rng = Rng::new(stream ^ name_hash);
                let mut summary = Summary {
                    cases: 0,
                    accepted: 0,
                    crashes: Vec::new(),
                    slowest: Duration::ZERO,
                    largest: 0,
                };
                let mut input = Vec::new();
                for case in 0..cases {
                    // The seeds themselves first, then mutants; half of the mutants build
                    // on the previous one, so several mutations can stack up.
                    input = if (case as usize) < seeds.len() {
                        seeds[case as usize].clone()
                    } else if rng.below(2) == 0 && !input.is_empty() {
                        mutate(&input, &seeds, &mut rng)
                    } else {
                        let from = rng.below(seeds.len());
                        mutate(&seeds[from], &seeds, &mut rng)
                    };
                    current.lock().unwrap().clone_from(&input);
                    let t = Instant::now();
                    let outcome = run_case(name, target, &input);
                    summary.slowest = summary.slowest.max(t.elapsed());
                    summary.largest = summary.largest.max(input.len());
                    summary.cases += 1;
                    progress.store(case + 1, Ordering::Relaxed);
                    if outcome == Ok(true) {
                        summary.accepted += 1;
                    }
                    if let Err(msg) = outcome {
                        let path = save_input(name, &case.to_string(), &input);
                        summary.crashes.push(format!(
                            "case {case}: {msg}\n  input ({} bytes, {}): {}",
                            input.len(),
                            path.display(),
                            hex(&input)
                        ));
                        if summary.crashes.len() >= 10 {
                            break;
                        }
                    }
                }
                done_tx.send(summary).ok();
            })
            .unwrap();
    }
    let mut last = (0, Instant::now());
    let summary = loop {
        match done_rx.recv_timeout(Duration::from_millis(200)) {
            Ok(summary) => break summary,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let now = progress.load(Ordering::Relaxed);
                if now != last.0 {
                    last = (now, Instant::now());
                } else if last.1.elapsed() > case_limit {
                    let input = current.lock().unwrap().clone();
                    let path = save_input(name, &format!("{now}-hang"), &input);
                    panic!(
                        "fuzz {name}: case {now} ran over {case_limit:?} (hang); input ({} \
                         bytes, {}): {}",
                        input.len(),
                        path.display(),
                        hex(&input)
                    );
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => panic!("fuzz {name}: worker died"),
        }
    };
    println!(
        "fuzz {name}: {} cases ({} accepted) in {:.1} s, {} crashes, slowest case {:.1} ms, \
         largest input {} bytes",
        summary.cases,
        summary.accepted,
        start.elapsed().as_secs_f64(),
        summary.crashes.len(),
        summary.slowest.as_secs_f64() * 1e3,
        summary.largest
    );
    assert!(
        summary.crashes.is_empty(),
        "fuzz {name}: {} crashes\n{}",
        summary.crashes.len(),
        summary.crashes.join("\n")
    );
}

#[test]
fn fuzz_msh_ascii() {
    fuzz("msh_ascii", targets::msh_ascii, 5000);
}

#[test]
fn fuzz_msh_binary() {
    fuzz("msh_binary", targets::msh_binary, 5000);
}

#[test]
fn fuzz_vtk() {
    fuzz("vtk", targets::vtk, 5000);
}

#[test]
fn fuzz_tetgen() {
    fuzz("tetgen", targets::tetgen, 10000);
}

#[test]
fn fuzz_obj() {
    fuzz("obj", targets::obj, 10000);
}

#[test]
fn fuzz_stl() {
    fuzz("stl", targets::stl, 10000);
}

#[test]
fn fuzz_scene() {
    fuzz("scene", targets::scene, 10000);
}

#[test]
fn fuzz_profile() {
    fuzz("profile", targets::profile, 10000);
}

#[test]
fn fuzz_trajectory() {
    fuzz("trajectory", targets::trajectory, 10000);
}

#[test]
fn fuzz_cache() {
    fuzz("cache", targets::cache, 10000);
}

#[test]
fn fuzz_wire() {
    fuzz("wire", targets::wire, 10000);
}

/// The engine is deterministic: the same stream gives the same mutants.
#[test]
fn mutation_engine_is_reproducible() {
    let seeds = vec![b"1 2 3\n4.5 -6 7e8\n".to_vec(), b"$Nodes\n0\n".to_vec()];
    let run = || {
        let mut rng = Rng::new(42);
        (0..200)
            .map(|_| mutate(&seeds[0], &seeds, &mut rng))
            .collect::<Vec<_>>()
    };
    let (a, b) = (run(), run());
    assert_eq!(a, b);
    assert!(a.iter().filter(|m| **m != seeds[0]).count() > 150);
}
