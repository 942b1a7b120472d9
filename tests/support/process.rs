//! Tests that measure or change the whole process (open files, resident memory, CPU
//! time, the global log subscriber) run alone in a child process of their test binary,
//! so the other tests of the binary, running beside them, neither disturb nor see them.

use std::process::Command;

/// Set in the child to the name of the one test it runs.
const CHILD: &str = "PALPA_TEST_ALONE";

/// Whether to run the body of test `path` (its `module_path!()` and name) here: in the
/// child, yes; in the parent, the child runs it and this returns `false` once it passed.
pub fn run_here(path: &str) -> bool {
    // `module_path!()` starts with the test binary's crate name; the harness omits it.
    let name = path.split_once("::").map_or(path, |(_, rest)| rest);
    if std::env::var(CHILD).as_deref() == Ok(name) {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = Command::new(exe)
        .args([name, "--exact", "--nocapture", "--test-threads", "1"])
        .env(CHILD, name)
        .output()
        .expect("the test binary runs again");
    print!("{}", String::from_utf8_lossy(&out.stdout));
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    let ran = String::from_utf8_lossy(&out.stdout).contains("1 passed");
    assert!(
        out.status.success() && ran,
        "{name} failed in its own process"
    );
    false
}

/// Runs the enclosing test `$name` alone in a child process ([`run_here`]).
#[allow(unused_macros)]
macro_rules! alone {
    ($name:ident) => {
        if !$crate::support::process::run_here(concat!(module_path!(), "::", stringify!($name))) {
            return;
        }
    };
}
#[allow(unused_imports)]
pub(crate) use alone;
