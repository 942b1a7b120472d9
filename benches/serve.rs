//! Time from starting `palpa serve` to the first frame a client receives: cold (empty
//! cache: the modal precompute runs and writes the cache) and warm (the cache is
//! loaded), for the embedded default scene and `scenes/bunny.toml`. Each iteration runs
//! the real binary with the virtual stylus on an ephemeral port, connects a real
//! WebSocket client (hello, scene init, first frame), then stops the server with SIGINT
//! outside the timed part. See docs/benchmarks.md, "Serve start".

#[path = "../tests/support/serve.rs"]
mod serve_support;

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode};
use serve_support::Served;

const BINARY: &str = env!("CARGO_BIN_EXE_palpa");
const BUNNY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/bunny.toml");

/// One start: spawn, wait for the printed URL, connect, receive the first frame (the
/// tissue at rest, while K may still be factorised for the model, before
/// `model: ready`). Returns the time to that frame; the server is stopped afterwards.
fn start_to_first_frame(
    scene: Option<&str>,
    cache: &Path,
    runtime: &tokio::runtime::Runtime,
) -> Duration {
    let mut args = vec!["--device", "sim", "--bind", "127.0.0.1:0"];
    if let Some(s) = scene {
        args.extend(["--scene", s]);
    }
    let start = Instant::now();
    let mut served = Served::start(BINARY, &args, cache);
    let ready = served.viewer(Duration::from_secs(600));
    runtime.block_on(async {
        let mut client = palpa_client::Client::connect(&ready.websocket)
            .await
            .expect("connect");
        client.next_frame().await.expect("first frame");
    });
    let elapsed = start.elapsed();
    let (status, _, stderr) = served.interrupt(Duration::from_secs(60));
    assert!(status.success(), "palpa serve failed: {stderr}");
    elapsed
}

fn serve_start(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("serve_start");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_secs(1));
    for (name, scene) in [("default", None), ("bunny", Some(BUNNY))] {
        group.bench_function(format!("{name}_cold"), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        let cache = tempfile::tempdir().unwrap();
                        start_to_first_frame(scene, cache.path(), &runtime)
                    })
                    .sum()
            })
        });
        let cache = tempfile::tempdir().unwrap();
        start_to_first_frame(scene, cache.path(), &runtime);
        group.bench_function(format!("{name}_warm"), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| start_to_first_frame(scene, cache.path(), &runtime))
                    .sum()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, serve_start);
criterion_main!(benches);
