//! Running the real `palpa serve` binary: start it, read what it prints, stop it with
//! SIGINT. Shared by the tests that run the binary and `benches/serve.rs`.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A running `palpa serve` and the lines it printed so far.
pub struct Served {
    child: Child,
    lines: mpsc::Receiver<String>,
    /// Every stdout line seen.
    pub stdout: Vec<String>,
    stderr: Option<JoinHandle<String>>,
}

/// The line `palpa serve` prints once its haptic loops run on a ready tissue.
pub const READY_LINE: &str = "model: ready";

/// What `palpa serve` printed when ready.
pub struct Ready {
    /// The viewer URL with the token.
    pub viewer: String,
    /// The WebSocket URL.
    pub websocket: String,
    /// The control token (from the viewer URL, the one place serve prints it).
    pub token: String,
}

impl Served {
    /// Starts `palpa serve ARGS` with `PALPA_CACHE_DIR=cache_dir` and
    /// `PALPA_REALTIME=off` (tests run many servers at once: as root each haptic thread
    /// would be a SCHED_FIFO spinner, and a few of them starve the rest of a 2-core
    /// machine; `--realtime MODE` in ARGS overrides it).
    pub fn start(binary: &str, args: &[&str], cache_dir: &Path) -> Self {
        Self::start_with_env(binary, args, cache_dir, &[])
    }

    /// Starts `palpa serve ARGS` as [`Served::start`] does, with the variables `env` too.
    pub fn start_with_env(
        binary: &str,
        args: &[&str],
        cache_dir: &Path,
        env: &[(&str, &OsStr)],
    ) -> Self {
        let mut command = Command::new(binary);
        command
            .arg("serve")
            .args(args)
            .env("PALPA_CACHE_DIR", cache_dir)
            .env("PALPA_REALTIME", "off")
            .envs(env.iter().copied());
        Self::spawn(command)
    }

    /// Starts `command` (a `palpa serve` with its arguments and environment, perhaps
    /// behind a wrapper such as `setpriv`) with `RUST_LOG=info` (unless the command sets
    /// it) and piped output.
    pub fn spawn(mut command: Command) -> Self {
        if !command.get_envs().any(|(name, _)| name == "RUST_LOG") {
            command.env("RUST_LOG", "info");
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start palpa serve");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // Drain stderr so the server never blocks on a full pipe; kept for diagnostics.
        let mut stderr = child.stderr.take().expect("piped stderr");
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        Self {
            child,
            lines,
            stdout: Vec::new(),
            stderr: Some(stderr),
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits (up to `timeout`) for the `model: ready` line, after which the haptic loops
    /// run on a ready tissue (a press before it gets no force); panics with everything
    /// printed if the server exits or stays silent.
    pub fn ready(&mut self, timeout: Duration) -> Ready {
        self.wait_for(READY_LINE, timeout)
    }

    /// Waits (up to `timeout`) for the viewer line (its URL has the token), which comes
    /// before the tissue is ready ([`Served::ready`]).
    pub fn viewer(&mut self, timeout: Duration) -> Ready {
        self.wait_for("viewer: ", timeout)
    }

    /// Waits (up to `timeout`) for a line starting with `prefix`; returns the viewer's
    /// addresses printed by then.
    fn wait_for(&mut self, prefix: &str, timeout: Duration) -> Ready {
        let deadline = Instant::now() + timeout;
        let seen = |stdout: &[String]| stdout.iter().any(|l| l.starts_with(prefix));
        while !seen(&self.stdout) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.stdout.push(line),
                Err(_) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    panic!(
                        "palpa serve printed no `{prefix}` line.\nstdout:\n{}\nstderr:\n{}",
                        self.stdout.join("\n"),
                        self.stderr
                            .take()
                            .map(|h| h.join().unwrap())
                            .unwrap_or_default()
                    );
                }
            }
        }
        let field = |prefix: &str| {
            self.stdout
                .iter()
                .find_map(|l| l.strip_prefix(prefix))
                .unwrap_or_else(|| panic!("no `{prefix}` line in {:?}", self.stdout))
                .trim()
                .to_owned()
        };
        let viewer = field("viewer: ");
        let token = viewer
            .split_once("?token=")
            .map(|(_, token)| token.to_owned())
            .unwrap_or_else(|| panic!("no token in the viewer URL {viewer}"));
        let host = viewer
            .strip_prefix("http://")
            .and_then(|r| r.split('/').next())
            .expect("viewer URL is http://HOST:PORT/…");
        Ready {
            websocket: format!("ws://{host}/ws"),
            viewer,
            token,
        }
    }

    /// Sends SIGINT and waits (up to `timeout`) for the exit; returns the status, all
    /// of stdout and stderr.
    pub fn interrupt(self, timeout: Duration) -> (ExitStatus, Vec<String>, String) {
        self.signal(libc::SIGINT, timeout)
    }

    /// Sends `signal` and waits (up to `timeout`) for the exit; returns the status, all
    /// of stdout and stderr.
    pub fn signal(
        mut self,
        signal: libc::c_int,
        timeout: Duration,
    ) -> (ExitStatus, Vec<String>, String) {
        // SAFETY: plain kill(2) on our own child's pid.
        let r = unsafe { libc::kill(self.child.id() as libc::pid_t, signal) };
        assert_eq!(r, 0, "kill({signal}) failed");
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait for palpa serve") {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let stderr = self.stderr.take().map(|h| h.join().unwrap());
                let stderr = stderr.unwrap_or_default();
                let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
                panic!(
                    "palpa serve did not exit within {timeout:?} of signal {signal}; the \
                     last lines of its stderr, newest first:\n{}",
                    tail.join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.stdout.push(line);
        }
        let stderr = self
            .stderr
            .take()
            .map(|h| h.join().unwrap())
            .unwrap_or_default();
        (status, std::mem::take(&mut self.stdout), stderr)
    }
}

impl Drop for Served {
    /// Kills a server still running; when a test failed, first stops it with SIGINT
    /// (so it prints its stop summary) and prints what it said, so the failure's
    /// cause on the server's side is in the test's output.
    fn drop(&mut self) {
        let running = self.child.try_wait().ok().flatten().is_none();
        if running && std::thread::panicking() {
            // SAFETY: plain kill(2) on our own child's pid.
            unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGINT) };
            let deadline = Instant::now() + Duration::from_secs(10);
            while self.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if std::thread::panicking() {
            while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(2)) {
                self.stdout.push(line);
            }
            let stderr = self.stderr.take().map(|h| h.join().unwrap_or_default());
            let stderr = stderr.unwrap_or_default();
            let tail: Vec<&str> = stderr.lines().rev().take(80).collect();
            eprintln!(
                "palpa serve (pid {}) at the failure; stdout:\n{}\nlast lines of stderr, \
                 newest first:\n{}",
                self.child.id(),
                self.stdout.join("\n"),
                tail.join("\n")
            );
        }
    }
}

/// Runs `palpa ARGS` to completion (for commands that fail fast); returns the exit
/// status, stdout and stderr.
pub fn run_to_end(binary: &str, args: &[&str], cache_dir: &Path) -> (ExitStatus, String, String) {
    run_to_end_with_env(binary, args, cache_dir, &[], &[])
}

/// [`run_to_end`] with the variables `env` set and those named in `unset` removed.
pub fn run_to_end_with_env(
    binary: &str,
    args: &[&str],
    cache_dir: &Path,
    env: &[(&str, &OsStr)],
    unset: &[&str],
) -> (ExitStatus, String, String) {
    let mut command = Command::new(binary);
    for name in unset {
        command.env_remove(name);
    }
    let out = command
        .args(args)
        .env("PALPA_CACHE_DIR", cache_dir)
        .env("PALPA_REALTIME", "off")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("run palpa");
    (
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
