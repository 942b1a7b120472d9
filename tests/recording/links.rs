//! Links and FIFOs where palpa writes: in a record directory, at `palpa record`'s
//! output, and in the cache directory. Nothing is ever written through them (the files
//! they point to keep their bytes, no file appears outside), and nothing hangs.

use std::path::Path;
use std::time::Duration;

use super::support::serve::{run_to_end, Served};
use super::{cache, coarse_scene, palpa, palpa_ok, BINARY};

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
}

fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// Every file under `dir` with its bytes (names relative), for before/after checks.
fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

/// A record directory of links and a FIFO named as a recording's files.
fn planted(dir: &Path, outside: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for name in [
        "stream.palparec",
        "scene.toml",
        "device.toml",
        "recording.toml",
    ] {
        let target = outside.join(format!("target-{name}"));
        std::fs::write(&target, "keep").unwrap();
        symlink(&target, &dir.join(name));
    }
    symlink(
        &outside.join("created-by-a-dangling-link"),
        &dir.join("ticks.csv"),
    );
    mkfifo(&dir.join("ticks-2.csv"));
}

#[test]
fn links_and_a_fifo_in_the_record_directory_are_refused_or_replaced_never_written_through() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let scene = coarse_scene(tmp.path());
    palpa_ok(&["precompute", "--scene", scene.to_str().unwrap()]);
    let dir = tmp.path().join("rec");
    planted(&dir, &outside);
    let before = contents(&outside);
    let args = |force: bool| {
        let mut a = vec![
            "--scene".to_string(),
            scene.to_str().unwrap().into(),
            "--device".into(),
            "sim:circle".into(),
            "--bind".into(),
            "127.0.0.1:0".into(),
            "--record".into(),
            dir.to_str().unwrap().into(),
        ];
        if force {
            a.push("--force".into());
        }
        a
    };
    // Without --force: refused, as any recording there would be.
    let refused: Vec<String> = std::iter::once("serve".to_string())
        .chain(args(false))
        .collect();
    let refused: Vec<&str> = refused.iter().map(String::as_str).collect();
    let (status, _, stderr) = palpa(&refused);
    assert!(!status.success());
    assert!(stderr.contains("a recording is already there"), "{stderr}");
    // With --force: the links and the FIFO are removed (not followed), the recording is
    // made new, and serve neither hangs nor writes outside.
    let forced = args(true);
    let forced: Vec<&str> = forced.iter().map(String::as_str).collect();
    let mut served = Served::start(BINARY, &forced, cache());
    served.ready(Duration::from_secs(120));
    std::thread::sleep(Duration::from_millis(500));
    let (status, stdout, stderr) = served.interrupt(Duration::from_secs(60));
    assert!(status.success(), "{status}\n{stdout:?}\n{stderr}");
    assert_eq!(contents(&outside), before, "nothing outside changed");
    assert!(!outside.join("created-by-a-dangling-link").exists());
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let t = entry.file_type().unwrap();
        assert!(t.is_file(), "{:?} is {t:?}", entry.file_name());
    }
    for line in palpa::recording::check(&dir) {
        assert!(!line.problem, "{}: {}", line.file, line.text);
    }
}

#[test]
fn record_refuses_an_existing_output_and_replaces_a_link_only_with_force() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("target.csv");
    std::fs::write(&target, "keep").unwrap();
    let out = tmp.path().join("out.csv");
    symlink(&target, &out);
    let args = |force: bool| {
        let mut a = vec![
            "record",
            "--device",
            "sim:press",
            "--duration",
            "0.2",
            "--out",
        ];
        a.push(out.to_str().unwrap());
        if force {
            a.push("--force");
        }
        run_to_end(BINARY, &a, cache())
    };
    let (status, _, stderr) = args(false);
    assert!(!status.success() && stderr.contains("exists"), "{stderr}");
    let (status, _, stderr) = args(true);
    assert!(status.success(), "{stderr}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    assert!(!std::fs::symlink_metadata(&out).unwrap().is_symlink());
    let t = palpa::device::replay::Trajectory::load(&out).unwrap();
    assert!(t.samples().len() > 50);
    // A FIFO at the output: refused without --force, replaced with it; no hang.
    std::fs::remove_file(&out).unwrap();
    mkfifo(&out);
    let (status, _, stderr) = args(false);
    assert!(!status.success() && stderr.contains("exists"), "{stderr}");
    let (status, _, stderr) = args(true);
    assert!(status.success(), "{stderr}");
}

#[test]
fn links_and_fifos_in_the_cache_directory_are_never_written_through() {
    let tmp = tempfile::tempdir().unwrap();
    let scene = coarse_scene(tmp.path());
    let cache = tmp.path().join("cache");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    // Learn the cache file's name, then plant links at it and at the old fixed
    // temporary name, and FIFOs beside.
    let run = || {
        run_to_end(
            BINARY,
            &["precompute", "--scene", scene.to_str().unwrap()],
            &cache,
        )
    };
    let (status, _, stderr) = run();
    assert!(status.success(), "{stderr}");
    let name = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.ends_with(".palpa"))
        .unwrap();
    std::fs::remove_file(cache.join(&name)).unwrap();
    let target = outside.join("target");
    std::fs::write(&target, "keep").unwrap();
    symlink(&target, &cache.join(&name));
    symlink(
        &outside.join("dangling"),
        &cache.join(name.replace(".palpa", ".tmp")),
    );
    mkfifo(&cache.join("modal-fifo.tmp"));
    let (status, _, stderr) = run();
    assert!(status.success(), "{stderr}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    assert!(!outside.join("dangling").exists());
    let meta = std::fs::symlink_metadata(cache.join(&name)).unwrap();
    assert!(meta.is_file(), "the link is replaced by the cache file");
    // A FIFO at the cache file's name: refused as a cache, replaced by the new one.
    std::fs::remove_file(cache.join(&name)).unwrap();
    mkfifo(&cache.join(&name));
    let (status, _, stderr) = run();
    assert!(status.success(), "{stderr}");
    assert!(std::fs::symlink_metadata(cache.join(&name))
        .unwrap()
        .is_file());
    let left: Vec<String> = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "temporaries left: {left:?}");
}
