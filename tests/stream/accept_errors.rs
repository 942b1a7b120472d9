//! A failing `accept` (EMFILE) on the stream's listener. It runs alone in a child
//! process (`support::process`): it lowers the open-file limit, which every thread of the
//! process shares, and measures the process's CPU time.

use std::time::{Duration, Instant};

use crate::support::stream::AnalyticTissue;
use palpa::stream::{snapshot_slot, StreamConfig, StreamServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Number of file descriptors this process holds.
fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Restores the soft open-file limit when dropped.
struct FileLimit(libc::rlimit);

impl FileLimit {
    /// Lowers the soft limit to `soft`, remembering the old one.
    fn lower_to(soft: u64) -> Self {
        let mut old = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: both calls only access the struct passed by pointer.
        unsafe {
            assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut old), 0);
            let lowered = libc::rlimit {
                rlim_cur: soft,
                rlim_max: old.rlim_max,
            };
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lowered), 0);
        }
        Self(old)
    }
}

impl Drop for FileLimit {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe {
            libc::setrlimit(libc::RLIMIT_NOFILE, &self.0);
        }
    }
}

/// CPU time this process used so far (user + system).
fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes the struct passed by pointer.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        assert_eq!(libc::getrusage(libc::RUSAGE_SELF, &mut usage), 0);
        usage
    };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_accept_backs_off_instead_of_spinning_and_recovers() {
    crate::support::process::alone!(a_failing_accept_backs_off_instead_of_spinning_and_recovers);
    let tissue = AnalyticTissue::modal([2, 2, 1], 2);
    let (_writer, reader) = snapshot_slot(tissue.snapshot_at(0.0, AnalyticTissue::idle_probe()));
    let config = StreamConfig {
        bind: "127.0.0.1:0".parse().unwrap(),
        ..StreamConfig::default()
    };
    let server = StreamServer::start(config, tissue.scene.clone(), reader, None)
        .await
        .unwrap();
    let addr = server.local_addr();

    // Run out of descriptors: a low soft limit, filled with /dev/null but for one, which
    // the client's socket takes. The server's `accept` then fails with EMFILE.
    let limit = FileLimit::lower_to(open_descriptors() as u64 + 64);
    let mut filler = Vec::new();
    for _ in 0..4096 {
        match std::fs::File::open("/dev/null") {
            Ok(file) => filler.push(file),
            Err(e) => {
                assert_eq!(e.raw_os_error(), Some(libc::EMFILE), "{e}");
                break;
            }
        }
    }
    assert!(filler.len() < 4096, "the lowered limit was never reached");
    filler.pop();
    let mut client = TcpStream::connect(addr).await.unwrap();
    let request = format!("GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    client.write_all(request.as_bytes()).await.unwrap();

    let cpu_before = cpu_time();
    let window = Instant::now();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let cpu = cpu_time() - cpu_before;
    let wall = window.elapsed();
    println!("while accept fails: {cpu:?} CPU in {wall:?}");
    assert!(
        cpu < Duration::from_millis(400),
        "{cpu:?} CPU in {wall:?} while accept failed: the accept loop spins"
    );

    // Descriptors back: the waiting request is served after at most one back-off pause.
    drop(filler);
    drop(limit);
    let freed = Instant::now();
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), client.read_to_end(&mut response))
        .await
        .expect("served once descriptors are free")
        .unwrap();
    let recovered = freed.elapsed();
    println!("served {recovered:?} after descriptors were freed");
    assert!(response.starts_with(b"HTTP/1.1 200"));
    assert!(recovered < Duration::from_millis(1500), "{recovered:?}");
    server.shutdown().await;
}
