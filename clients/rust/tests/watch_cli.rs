//! `palpa-watch` against a real server: exit status, summary, and a recording that
//! decodes back to the stream.

#[path = "../../../tests/support/stream.rs"]
mod stream_support;

use std::process::Command;

use palpa::stream::{StreamConfig, StreamServer};
use palpa_client::palpa_protocol::ServerMessage;
use stream_support::{running_tissue, AnalyticTissue};

fn watch(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_palpa-watch"))
        .args(args)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn palpa_watch_reports_records_and_exits_with_a_status() {
    let (tissue, _producer, reader, _control) = running_tissue(AnalyticTissue::modal([6, 6, 2], 8));
    let config = StreamConfig {
        bind: "127.0.0.1:0".parse().unwrap(),
        ..StreamConfig::default()
    };
    let server = StreamServer::start(config, tissue.scene.clone(), reader, None)
        .await
        .unwrap();
    let url = format!("ws://{}/ws", server.local_addr());
    let dir = tempfile::tempdir().unwrap();
    let recording = dir.path().join("stream.palparec");

    let (code, text) = tokio::task::spawn_blocking({
        let (url, rec) = (url.clone(), recording.to_str().unwrap().to_owned());
        move || {
            watch(&[
                &url,
                "--frames",
                "30",
                "--min-rate",
                "20",
                "--record",
                &rec,
                "--quiet",
            ])
        }
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("summary: 30 frames"), "{text}");
    assert!(text.contains("\"analytic box\""), "{text}");
    let (total, parts, initial) = bandwidth(&text);
    assert!(
        (total - parts.iter().sum::<f64>()).abs() <= 0.03,
        "the parts {parts:?} add up to the total {total} kB/s: {text}"
    );

    let records = palpa_client::read_recording(&std::fs::read(&recording).unwrap()).unwrap();
    assert!(matches!(records[0].1, ServerMessage::Hello(_)));
    let hello_and_scene: usize = records[..2]
        .iter()
        .map(|(_, m)| palpa_client::palpa_protocol::encode_server(m).len())
        .sum();
    assert_eq!(initial, hello_and_scene as u64, "{text}");
    let ServerMessage::SceneInit(scene) = &records[1].1 else {
        panic!("second record is not the scene")
    };
    assert_eq!(scene.triangles, tissue.scene.triangles);
    let sequences: Vec<u64> = records
        .iter()
        .filter_map(|(_, m)| {
            if let ServerMessage::Frame(f) = m {
                Some(f.sequence)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(sequences.len(), 30);
    assert!(sequences.windows(2).all(|w| w[1] > w[0]), "frames in order");
    assert!(
        records.windows(2).all(|w| w[1].0 >= w[0].0),
        "receive times in order"
    );

    // A bare HOST:PORT is the stream's address.
    let bare = server.local_addr().to_string();
    let (code, text) = tokio::task::spawn_blocking({
        let bare = bare.clone();
        move || watch(&[&bare, "--frames", "10", "--min-rate", "1000", "--quiet"])
    })
    .await
    .unwrap();
    assert_eq!(code, 1, "a 30 Hz stream misses --min-rate 1000: {text}");
    assert!(text.contains("below --min-rate"), "{text}");

    server.shutdown().await;
    let (code, text) = tokio::task::spawn_blocking(move || watch(&[&bare, "--frames", "1"]))
        .await
        .unwrap();
    assert_eq!(code, 2, "connecting to a stopped server fails: {text}");
    assert!(
        text.contains(&format!("cannot connect to {url}: ")),
        "the error names the address: {text}"
    );
}

/// The `bandwidth:` line of a summary: the total (kB/s), its parts (kB/s) and the
/// hello and scene's size (B).
fn bandwidth(text: &str) -> (f64, Vec<f64>, u64) {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("bandwidth: "))
        .unwrap_or_else(|| panic!("no bandwidth line in {text}"));
    let numbers: Vec<f64> = line
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|w| w.parse().ok())
        .collect();
    // total, seconds, frames, columns, telemetry, hello and scene, its bytes.
    assert_eq!(numbers.len(), 7, "{line}");
    (
        numbers[0],
        vec![numbers[2], numbers[3], numbers[4], numbers[5]],
        numbers[6] as u64,
    )
}
