//! Every fade the hand feels reaches the viewers: the server's safety report and its
//! notices arrive at a WebSocket client as they are published, headless Chromium shows a
//! fade on the panel with its reason and marks the force plot within 100 ms, and a real
//! `palpa serve --record` reports its devices' safety state and tells the viewers when
//! the recording ends.

use std::time::{Duration, Instant};

use palpa::stream::{StreamConfig, StreamServer};
use palpa_client::{Client, Event};
use palpa_protocol as wire;
use serde_json::json;

use crate::browser::{chromium_or_skip, Browser, Page};
use crate::support::serve::Served;
use crate::support::stream::{running_tissue, AnalyticTissue, Producer};

fn report(faded: u64, reason: wire::SafetyReason, start_s: f64) -> wire::SafetyReport {
    let fade = wire::Fade {
        reason,
        start_s,
        ticks: faded,
        force_removed: 1.25,
    };
    wire::SafetyReport {
        devices: vec![wire::DeviceSafety {
            device: 1,
            time_s: start_s,
            state: reason,
            counts: wire::SafetyCounts {
                stalled_model: faded,
                ramping: 500,
                ..wire::SafetyCounts::default()
            },
            last_fade: Some(fade),
            largest_fade: Some(fade),
        }],
    }
}

async fn server() -> (StreamServer, Producer) {
    let (tissue, producer, reader, control) = running_tissue(AnalyticTissue::modal([8, 8, 2], 6));
    let scene = tissue.scene.clone();
    let config = StreamConfig {
        bind: "127.0.0.1:0".parse().unwrap(),
        ..StreamConfig::default()
    };
    let server = StreamServer::start(config, scene, reader, Some(control))
        .await
        .unwrap();
    (server, producer)
}

/// The next safety report or notice within 5 s, skipping frames.
async fn next_non_frame(client: &mut Client) -> Event {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, client.next_event()).await {
            Ok(Ok(Event::Frame(_) | Event::HapticStats(_))) => {}
            Ok(Ok(event)) => return event,
            other => panic!("no safety report or notice: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_safety_report_and_a_notice_reach_clients_and_a_late_joiner_gets_the_newest_report() {
    let (server, _producer) = server().await;
    let url = format!("ws://{}/ws", server.local_addr());
    let mut early = Client::connect(&url).await.unwrap();
    let sent = report(3, wire::SafetyReason::StalledModel, 1.5);
    server.publish_safety(&sent);
    assert_eq!(
        next_non_frame(&mut early).await,
        Event::Safety(sent.clone())
    );
    let notice = wire::Notice {
        kind: wire::NoticeKind::RecordingEnded,
        message: "the recording in rec ended".into(),
    };
    server.publish_notice(&notice);
    assert_eq!(
        next_non_frame(&mut early).await,
        Event::Notice(notice.clone())
    );
    // A viewer that joins later learns the state at once (the report is cumulative).
    let mut late = Client::connect(&url).await.unwrap();
    let mut got = Vec::new();
    for _ in 0..2 {
        got.push(next_non_frame(&mut late).await);
    }
    assert!(got.contains(&Event::Safety(sent)), "{got:?}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_shows_a_fade_and_its_reason_within_100_ms_and_marks_the_force_plot() {
    let Some(binary) = chromium_or_skip() else {
        return;
    };
    let (server, _producer) = server().await;
    let browser = Browser::launch(&binary);
    let mut page = Page::open(&browser, &server.viewer_url()).await;
    page.wait_for("window.palpaViewer?.frames > 5", "frames")
        .await;
    assert_eq!(page.evaluate("palpaViewer.fades").await, json!(0));
    assert_eq!(
        page.evaluate("document.getElementById('fade').hidden")
            .await,
        json!(true),
        "no fade shown before one happens"
    );
    // The fade starts at the newest frame's time, so its mark lies on the plot.
    let t = page
        .evaluate("palpaViewer.frame.scene_time")
        .await
        .as_f64()
        .unwrap();
    let published = Instant::now();
    let published_unix_ms = unix_ms();
    server.publish_safety(&report(7, wire::SafetyReason::StalledModel, t));
    let mut polled = None;
    while published.elapsed() < Duration::from_secs(5) {
        if page.evaluate("palpaViewer.fades").await == json!(1) {
            polled = Some(published.elapsed());
            break;
        }
    }
    let polled = polled.expect("the viewer never showed the fade");
    // The page stamps the moment it showed the fade; on one machine its clock is ours.
    // (Polling adds DevTools round trips, which a busy machine stretches to 100s of ms.)
    let shown_unix_ms = page
        .evaluate("performance.timeOrigin + palpaViewer.lastFade.shownAt")
        .await
        .as_f64()
        .unwrap();
    let shown_ms = shown_unix_ms - published_unix_ms;
    println!("the fade shown {shown_ms:.1} ms after it was published");
    assert!(
        (-5.0..100.0).contains(&shown_ms),
        "shown {shown_ms:.1} ms after it was published (seen by polling after {polled:?})"
    );
    let banner = page
        .evaluate("document.getElementById('fade').textContent")
        .await;
    let banner = banner.as_str().unwrap();
    assert!(
        banner.contains("force faded") && banner.contains("stalled model thread"),
        "{banner}"
    );
    let panel = page
        .evaluate("document.getElementById('safety').textContent")
        .await;
    assert!(
        panel.as_str().unwrap().contains("7 faded"),
        "the panel counts the faded ticks: {panel}"
    );
    assert_eq!(page.evaluate("palpaViewer.plotMarks").await, json!(1));
    // The same fade reported again (more ticks of it) is not a new one.
    server.publish_safety(&report(9, wire::SafetyReason::StalledModel, t));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(page.evaluate("palpaViewer.fades").await, json!(1));
    server.shutdown().await;
}

/// Milliseconds since the Unix epoch, the clock a page's `performance.timeOrigin` uses.
fn unix_ms() -> f64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.unwrap().as_secs_f64() * 1e3
}

const BINARY: &str = env!("CARGO_BIN_EXE_palpa");

/// `palpa watch` against a served stream with two known fades: one published before it
/// connects (a late joiner learns it at once), one while it watches. It prints each
/// fade once, with its reason, time, ticks and force, and counts them at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn palpa_watch_prints_each_fade_once_and_counts_them() {
    use std::io::{BufRead, BufReader};
    let (server, _producer) = server().await;
    let url = format!("ws://{}/ws", server.local_addr());
    server.publish_safety(&report(3, wire::SafetyReason::StalledModel, 1.5));
    let mut watch = std::process::Command::new(BINARY)
        .args(["watch", url.as_str(), "--seconds", "6"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (lines_tx, lines_rx) = std::sync::mpsc::channel();
    let stdout = watch.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    let first =
        "fade: device 1 at t = 1.500 s: stalled model thread (3 ticks so far, 1.250 N taken off)";
    let mut seen = Vec::new();
    while !seen.iter().any(|l| l == first) {
        let line = lines_rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no first fade line: {seen:?}"));
        seen.push(line);
    }
    // A second fade (a new one, 7 ticks in all); the same report again is no new fade.
    let second = report(7, wire::SafetyReason::StaleSample, 4.25);
    server.publish_safety(&second);
    server.publish_safety(&second);
    let status = tokio::task::spawn_blocking(move || watch.wait())
        .await
        .unwrap()
        .unwrap();
    reader.join().unwrap();
    seen.extend(lines_rx.try_iter());
    assert!(status.success(), "{seen:#?}");
    let fades: Vec<&String> = seen.iter().filter(|l| l.starts_with("fade:")).collect();
    assert_eq!(
        fades,
        [
            first,
            "fade: device 1 at t = 4.250 s: stale device sample (7 ticks so far, 1.250 N taken off)"
        ],
        "{seen:#?}"
    );
    let summary = seen
        .iter()
        .find(|l| l.starts_with("safety: device 1:"))
        .unwrap_or_else(|| panic!("no safety summary: {seen:#?}"));
    assert!(
        summary.starts_with("safety: device 1: 7 ticks faded (stalled model 7,")
            && summary.ends_with(
                "largest fade: stale device sample at t = 4.250 s, 7 ticks, 1.250 N taken off"
            ),
        "{summary}"
    );
    server.shutdown().await;
}

#[test]
fn serve_reports_its_devices_safety_and_tells_viewers_when_the_recording_ends() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("rec");
    let cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("safety-cache");
    std::fs::create_dir_all(&cache).unwrap();
    let record_arg = record.to_str().unwrap();
    let args = [
        "--bind",
        "127.0.0.1:0",
        "--device",
        "sim:press",
        "--device",
        "sim:still",
        "--record",
        record_arg,
    ];
    let mut served = Served::start(BINARY, &args, &cache);
    let ready = served.ready(Duration::from_secs(600));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (reports, watcher) = runtime.block_on(async {
        let mut client = Client::connect(&ready.websocket).await.unwrap();
        let mut reports = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while reports.len() < 3 && Instant::now() < deadline {
            if let Event::Safety(r) = next_non_frame(&mut client).await {
                reports.push(r);
            }
        }
        (reports, client)
    });
    assert!(reports.len() >= 3, "{reports:?}");
    let last = reports.last().unwrap();
    assert_eq!(
        last.devices.iter().map(|d| d.device).collect::<Vec<_>>(),
        [1, 2],
        "one entry per device"
    );
    assert!(
        last.devices.iter().all(|d| d.counts.ramping > 0),
        "both ramped in at start: {last:?}"
    );
    // Stop the server while a viewer watches: the notice comes before the goodbye.
    let notice = std::thread::spawn(move || {
        runtime.block_on(async {
            let mut client = watcher;
            loop {
                match client.next_event().await {
                    Ok(Event::Notice(n)) => return Some(n),
                    Ok(_) => {}
                    Err(_) => return None,
                }
            }
        })
    });
    std::thread::sleep(Duration::from_millis(300));
    let (status, stdout, stderr) = served.interrupt(Duration::from_secs(60));
    assert!(status.success(), "{stdout:?}\n{stderr}");
    let notice = notice
        .join()
        .unwrap()
        .expect("no notice before the goodbye");
    assert_eq!(notice.kind, wire::NoticeKind::RecordingEnded);
    assert!(notice.message.contains("rec"), "{}", notice.message);
}

/// One shell spinning per core beside the test, killed when dropped.
struct BusyLoops(Vec<std::process::Child>);

impl BusyLoops {
    fn one_per_core() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let spin = || {
            std::process::Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .unwrap()
        };
        Self((0..cores).map(|_| spin()).collect())
    }
}

impl Drop for BusyLoops {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One device's recorded ticks: how many, the faded ones after the force first reached
/// full gain (the start-up, before any model and any contact, is the ramp-in), the
/// non-finite commands and the largest force commanded (N).
#[derive(Debug)]
struct DeviceTicks {
    ticks: usize,
    faded: usize,
    non_finite: usize,
    peak: f64,
}

fn device_ticks(path: &std::path::Path) -> DeviceTicks {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header = reader.headers().unwrap().clone();
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (fx, safety) = (column("fx"), column("safety"));
    let mut d = DeviceTicks {
        ticks: 0,
        faded: 0,
        non_finite: 0,
        peak: 0.0,
    };
    let mut at_full_gain = false;
    for row in reader.records() {
        let row = row.unwrap();
        let f: Vec<f64> = (fx..fx + 3).map(|i| row[i].parse().unwrap()).collect();
        let state = &row[safety];
        d.ticks += 1;
        at_full_gain |= state == "normal";
        if f.iter().all(|c| c.is_finite()) {
            d.peak = d.peak.max(f.iter().map(|c| c * c).sum::<f64>().sqrt());
        } else {
            d.non_finite += 1;
        }
        let fault = [
            "stalled-model",
            "stale-sample",
            "device-fault",
            "not-finite",
        ];
        if at_full_gain && fault.contains(&state) {
            d.faded += 1;
        }
    }
    d
}

/// Must-have 1 of issue 39 through the real `serve`: two devices pressing far apart on
/// one tissue, one busy loop per core beside the server, two presses each. Neither
/// device ever commands a non-finite force; where the haptic threads get SCHED_FIFO (as
/// root, as `serve --realtime auto` runs; the server says so) both peak alike, within
/// 2 % (the scene is symmetric about the pressed points), and each fades at most 2 %
/// of its ticks after the ramp-in. The product's 0.1 % is measured on the release
/// build over 12 s (docs/benchmarks.md, "Several devices on one tissue"): this test's
/// build, with debug assertions, beside the binary's other tests, fades more. The
/// server holds the browser tests' one-server lock: its SCHED_FIFO threads and the busy
/// loops do not run beside another `palpa serve` of this binary.
#[test]
fn two_devices_pressing_apart_beside_a_busy_loop_per_core_each_keep_their_force() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("rec");
    let cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("safety-cache");
    std::fs::create_dir_all(&cache).unwrap();
    let args = [
        "--bind",
        "127.0.0.1:0",
        "--realtime",
        "auto",
        "--device",
        "sim:press@-0.025,0",
        "--device",
        "sim:press@0.025,0",
        "--record",
        record.to_str().unwrap(),
    ];
    let _alone = crate::browser::ONE_AT_A_TIME.blocking_lock();
    let mut served = Served::start(BINARY, &args, &cache);
    served.ready(Duration::from_secs(600));
    let busy = BusyLoops::one_per_core();
    // Two presses of the 2 s script: the deepest at t = 1 s and 3 s.
    std::thread::sleep(Duration::from_millis(4_500));
    let (status, stdout, stderr) = served.interrupt(Duration::from_secs(60));
    drop(busy);
    assert!(status.success(), "{stdout:?}\n{stderr}");
    let devices = [
        device_ticks(&record.join("ticks.csv")),
        device_ticks(&record.join("ticks-2.csv")),
    ];
    for d in &devices {
        assert!(d.ticks >= 3_000, "{devices:?}");
        assert_eq!(d.non_finite, 0, "{devices:?}");
    }
    let fifo = stderr.matches("haptic thread: SCHED_FIFO").count() == 2;
    if !fifo {
        eprintln!("haptic threads without SCHED_FIFO: peaks and fades not asserted: {devices:?}");
        return;
    }
    eprintln!("two devices beside busy loops: {devices:?}");
    let (a, b) = (devices[0].peak, devices[1].peak);
    assert!(a > 2.0 && (a - b).abs() <= 0.02 * a.max(b), "{devices:?}");
    for d in &devices {
        assert!(d.faded * 50 <= d.ticks, "over 2 % faded: {devices:?}");
    }
}
