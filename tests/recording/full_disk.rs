//! A full disk while recording: on a 3 MB tmpfs (mounted here when the test runs as root
//! and may mount; else the kernel's `/dev/full`, whose writes fail with ENOSPC, through
//! the same writer), the first failed write is reported within a second, serve exits
//! non-zero, a watching viewer is told why, nothing is claimed recorded that was not, and
//! what was written reads back.
//! A full cache directory leaves no temporary behind.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use palpa::recording::{RowFormat, TickWriter};
use palpa_client::{Client, Event};
use palpa_protocol as wire;

use super::{coarse_scene, palpa_ok, serve_recording};

/// A small tmpfs, unmounted when dropped.
struct Tmpfs {
    path: PathBuf,
}

impl Tmpfs {
    fn mount(path: &Path, size: &str) -> Option<Self> {
        std::fs::create_dir_all(path).unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(path)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Self {
            path: path.to_path_buf(),
        })
    }

    /// Bytes free.
    fn free(&self) -> u64 {
        let s = rustix::fs::statvfs(&self.path).unwrap();
        s.f_bavail * s.f_frsize
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(&self.path)
            .status();
    }
}

#[test]
fn a_write_to_a_full_device_is_an_error_with_its_cause() {
    // /dev/full: every write fails with ENOSPC, as a full disk's does.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let e = TickWriter::start(file, Path::new("/dev/full"), RowFormat::Session, &[])
        .err()
        .expect("the header's write fails");
    assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
}

/// Free space left on the tmpfs before serve starts (bytes): the recording's inputs fit,
/// and ticks and stream fill the rest within seconds.
const HEADROOM: u64 = 160 * 1024;

#[test]
fn a_full_disk_ends_the_recording_within_a_second_and_serve_exits_non_zero() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(fs) = Tmpfs::mount(&tmp.path().join("small"), "3m") else {
        eprintln!("SKIPPED the tmpfs part: cannot mount a tmpfs here (not root?)");
        return;
    };
    let scene = coarse_scene(tmp.path());
    palpa_ok(&["precompute", "--scene", scene.to_str().unwrap()]);
    // Full to HEADROOM with a filler file.
    let filler = vec![0u8; (fs.free() - HEADROOM) as usize];
    std::fs::write(fs.path.join("filler"), filler).unwrap();
    let dir = fs.path.join("rec");
    let mut served = serve_recording(&scene, &dir);
    let ready = served.ready(Duration::from_secs(120));
    let viewer = watch_for_a_notice(ready.websocket);
    let deadline = Instant::now() + Duration::from_secs(60);
    let full_at = loop {
        // Nearly full (a page or two left): the next drains fill it, so the delay
        // measured from here is an upper bound of the delay from the first failed write.
        if fs.free() < 16 * 1024 {
            break Instant::now();
        }
        assert!(
            Instant::now() < deadline,
            "the disk never filled ({} bytes free)",
            fs.free()
        );
        std::thread::sleep(Duration::from_millis(2));
    };
    // The writers write every 10 ms (ticks) and every frame (stream): the first write
    // after the disk filled fails within that, and is logged at once. Serve goes on for a
    // second (the session is not stopped by a recording's failure), then stops.
    std::thread::sleep(Duration::from_millis(1500));
    let stopped_at = Instant::now();
    let (status, stdout, stderr) = served.interrupt(Duration::from_secs(60));
    let stdout = stdout.join("\n");
    assert_eq!(status.code(), Some(1), "{status}\n{stdout}\n{stderr}");
    let logged = stderr
        .lines()
        .find(|l| l.contains("recording ended") && l.contains("No space left on device"))
        .unwrap_or_else(|| panic!("no error for the full disk:\n{stderr}"));
    // The log line's time (UTC, RFC 3339) against the moment the disk filled.
    let logged_at = log_time(logged);
    let full_unix = unix_of(full_at);
    let delay = logged_at - full_unix;
    eprintln!(
        "disk full at {full_unix:.3}, error logged at {logged_at:.3}: {:.0} ms later ({:.1} s \
         before the stop)",
        delay * 1e3,
        unix_of(stopped_at) - logged_at
    );
    assert!(
        delay < 1.0,
        "the error came {delay:.3} s after the disk filled:\n{logged}"
    );
    assert!(
        !stdout.contains("recorded: "),
        "nothing is claimed recorded:\n{stdout}"
    );
    assert!(stderr.contains("ended early"), "{stderr}");
    // A viewer watching was told, with the cause.
    let notice = viewer
        .join()
        .unwrap()
        .expect("the viewer got no notice before the goodbye");
    assert_eq!(notice.kind, wire::NoticeKind::RecordingFailed, "{notice:?}");
    assert!(
        notice.message.contains("No space left on device"),
        "{}",
        notice.message
    );
    // What is there reads back.
    for line in palpa::recording::check(&dir) {
        assert!(!line.problem, "{}: {}", line.file, line.text);
    }
    drop(fs);
}

/// A viewer connected to `websocket` (on a thread of its own) until the first notice the
/// server sends, or the goodbye.
fn watch_for_a_notice(websocket: String) -> std::thread::JoinHandle<Option<wire::Notice>> {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut client = Client::connect(&websocket).await.ok()?;
            loop {
                match client.next_event().await {
                    Ok(Event::Notice(n)) => return Some(n),
                    Ok(_) => {}
                    Err(_) => return None,
                }
            }
        })
    })
}

/// The Unix time (s) of `instant`.
fn unix_of(instant: Instant) -> f64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    now - instant.elapsed().as_secs_f64()
}

/// The time of a tracing log line (`2026-11-28T23:53:36.843372Z …`, possibly behind
/// colour codes), in Unix seconds.
fn log_time(line: &str) -> f64 {
    let start = line.find("20").expect("a timestamp");
    let stamp = &line[start..start + 27];
    let (date, time) = stamp.split_once('T').unwrap();
    let d: Vec<i64> = date.split('-').map(|x| x.parse().unwrap()).collect();
    let (hms, _) = time.split_once('Z').unwrap();
    let t: Vec<f64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
    // Days since the epoch (civil from days, proleptic Gregorian).
    let (y, m) = if d[1] <= 2 {
        (d[0] - 1, d[1] + 9)
    } else {
        (d[0], d[1] - 3)
    };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d[2] - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    days as f64 * 86_400.0 + t[0] * 3600.0 + t[1] * 60.0 + t[2]
}
