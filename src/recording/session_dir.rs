//! A recording directory being written: `recording.toml` (what is here and how it was
//! recorded), `scene.toml` with copies of the files it names, one `device.toml` and one
//! `ticks.csv` per device (`device-2.toml`, `ticks-2.csv`, … for further devices), and
//! the visual stream `stream.palparec`. Every file is created new in the directory
//! handle ([`OutputDir`]); the inputs are written whole (temporary, sync, rename) before
//! the first tick, so a recording killed at any moment replays.

use std::fs::File;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::device::DeviceRecord;
use super::scene_copy::SceneInputs;
use super::ticks::{RowFormat, TickWriter};
use crate::files::OutputDir;

/// The manifest's name.
pub const MANIFEST: &str = "recording.toml";
/// The scene copy's name.
pub const SCENE: &str = "scene.toml";
/// The visual stream's name.
pub const STREAM: &str = "stream.palparec";
/// What `palpa replay DIR` writes by default.
pub const REPLAY: &str = "replay.csv";
/// Version of the directory's layout.
pub const FORMAT: u32 = 1;

/// The name of device `index`'s ticks (0: `ticks.csv`; then `ticks-2.csv`, …).
pub fn ticks_name(index: usize) -> String {
    match index {
        0 => "ticks.csv".into(),
        i => format!("ticks-{}.csv", i + 1),
    }
}

/// The name of device `index`'s description (`device.toml`, `device-2.toml`, …).
pub fn device_name(index: usize) -> String {
    match index {
        0 => "device.toml".into(),
        i => format!("device-{}.toml", i + 1),
    }
}

/// `recording.toml`: what the directory holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Layout version ([`FORMAT`]).
    pub format: u32,
    /// The palpa that recorded it.
    pub palpa_version: String,
    /// What recorded it: `palpa serve` (real time) or `palpa replay` (lock-step).
    pub recorded_by: String,
    /// Whether the session ran in deterministic lock-step (a replay gives the same
    /// forces bit for bit) rather than in real time.
    pub lockstep: bool,
    /// The frame of `ticks.csv`'s positions and forces.
    pub frame: String,
    /// Wall-clock time the recording started (s since the Unix epoch).
    pub started_unix_s: f64,
    /// The scene.
    pub scene: SceneRecord,
    /// One entry per device.
    pub devices: Vec<DeviceFiles>,
    /// The visual stream's file, if the stream was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
    /// The copies of the files the scene names.
    #[serde(default)]
    pub files: Vec<FileRecord>,
}

/// The recorded scene.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SceneRecord {
    /// The copy in the directory.
    pub file: String,
    /// Where the session read it from.
    pub source: String,
    /// Its fingerprint (`SceneInputs::fingerprint`).
    pub fingerprint: String,
}

/// One device's files.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceFiles {
    /// Its per-tick CSV.
    pub ticks: String,
    /// Its description.
    pub device: String,
}

/// A copied input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileRecord {
    /// Its name in the directory.
    pub name: String,
    /// The scene key that names it.
    pub key: String,
    /// Where it was copied from.
    pub source: String,
    /// Its size (bytes).
    pub bytes: u64,
    /// The blake3 hash of its contents (hex).
    pub blake3: String,
}

/// How a session is recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordedBy {
    /// `palpa serve --record`: real time.
    Serve,
    /// `palpa replay --record`: deterministic lock-step.
    Replay,
}

/// What to do with a recording already in the directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Existing {
    /// Refuse (the default: nothing recorded is lost by mistake).
    #[default]
    Refuse,
    /// Remove it first (`--force`).
    Replace,
}

/// A recording directory being written.
pub struct RecordingDir {
    dir: OutputDir,
    manifest: Manifest,
}

/// The frame of `ticks.csv`, as the manifest says it.
pub const SCENE_FRAME: &str = "scene: ticks.csv positions (m) and forces (N) are in the \
    scene's frame, after the device's workspace mapping (device.toml); replay uses them \
    as they are";

impl RecordingDir {
    /// Creates the recording in `path` (created with its parents, or an existing empty
    /// directory; one holding a recording is refused unless `existing` says replace),
    /// with `devices` devices, and the copy of `scene`. Returns it and one line per
    /// copied file for the console.
    pub fn create(
        path: &Path,
        scene: &SceneInputs,
        devices: usize,
        stream: bool,
        by: RecordedBy,
        existing: Existing,
    ) -> Result<Self, String> {
        let (dir, created) = OutputDir::create(path).map_err(|e| e.to_string())?;
        if !created {
            clear(&dir, existing)?;
        }
        let mut reserved: Vec<String> = vec![MANIFEST.into(), SCENE.into(), STREAM.into()];
        reserved.push(REPLAY.into());
        for i in 0..devices.max(1) {
            reserved.push(ticks_name(i));
            reserved.push(device_name(i));
            reserved.push(format!(
                "{}-profile.toml",
                device_name(i).trim_end_matches(".toml")
            ));
        }
        let reserved: Vec<&str> = reserved.iter().map(String::as_str).collect();
        let (text, copies) = scene.copy(&reserved);
        let mut files = Vec::with_capacity(copies.len());
        for (name, f) in copies {
            dir.write_atomic(&name, &f.bytes)
                .map_err(|e| e.to_string())?;
            files.push(FileRecord {
                name,
                key: f.key.into(),
                source: f.path.display().to_string(),
                bytes: f.bytes.len() as u64,
                blake3: blake3::hash(&f.bytes).to_hex().to_string(),
            });
        }
        dir.write_atomic(SCENE, text.as_bytes())
            .map_err(|e| e.to_string())?;
        let manifest = Manifest {
            format: FORMAT,
            palpa_version: env!("CARGO_PKG_VERSION").into(),
            recorded_by: match by {
                RecordedBy::Serve => "palpa serve (real time)".into(),
                RecordedBy::Replay => "palpa replay (deterministic lock-step)".into(),
            },
            lockstep: by == RecordedBy::Replay,
            frame: SCENE_FRAME.into(),
            started_unix_s: unix_now(),
            scene: SceneRecord {
                file: SCENE.into(),
                source: scene.source.clone(),
                fingerprint: scene.fingerprint(),
            },
            devices: (0..devices)
                .map(|i| DeviceFiles {
                    ticks: ticks_name(i),
                    device: device_name(i),
                })
                .collect(),
            stream: stream.then(|| STREAM.into()),
            files,
        };
        let text = toml::to_string(&manifest).expect("a manifest is plain data");
        dir.write_atomic(
            MANIFEST,
            format!("# A palpa recording: `palpa replay DIR` replays it, `palpa recording check DIR` checks it.\n\n{text}").as_bytes(),
        )
        .map_err(|e| e.to_string())?;
        Ok(Self { dir, manifest })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The manifest written.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The path of `name` in the directory.
    pub fn join(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Writes device `index`'s description, and its HID profile's copy if it has one.
    pub fn write_device(
        &self,
        index: usize,
        record: &DeviceRecord,
        profile_toml: Option<&str>,
    ) -> Result<PathBuf, String> {
        let mut record = record.clone();
        let name = device_name(index);
        if let Some(toml) = profile_toml {
            let profile = format!("{}-profile.toml", name.trim_end_matches(".toml"));
            self.dir
                .write_atomic(&profile, toml.as_bytes())
                .map_err(|e| e.to_string())?;
            record.profile = Some(profile);
        }
        self.dir
            .write_atomic(&name, record.to_toml().as_bytes())
            .map_err(|e| e.to_string())?;
        Ok(self.join(&name))
    }

    /// Creates device `index`'s `ticks.csv` and writes its header.
    pub fn ticks(&self, index: usize) -> Result<TickWriter, String> {
        let name = ticks_name(index);
        let file = self.dir.create_new(&name).map_err(|e| e.to_string())?;
        let path = self.join(&name);
        let writer = TickWriter::start(file, &path, RowFormat::Session, &[])
            .map_err(|e| format!("{}: {e}", path.display()))?;
        self.dir.sync().map_err(|e| e.to_string())?;
        Ok(writer)
    }

    /// Creates the stream's file.
    pub fn stream_file(&self) -> Result<(File, PathBuf), String> {
        let file = self.dir.create_new(STREAM).map_err(|e| e.to_string())?;
        self.dir.sync().map_err(|e| e.to_string())?;
        Ok((file, self.join(STREAM)))
    }
}

/// Makes an existing directory ready for a recording: empty is fine; a recording is
/// refused or removed as `existing` says; anything else is refused.
fn clear(dir: &OutputDir, existing: Existing) -> Result<(), String> {
    let entries: Vec<String> = std::fs::read_dir(dir.path())
        .map_err(|e| format!("{}: {e}", dir.path().display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if entries.is_empty() {
        return Ok(());
    }
    let ours = recording_files(dir, &entries);
    if ours.is_empty() {
        return Err(format!(
            "{}: the directory holds other files and no recording; give a new or empty \
             directory",
            dir.path().display()
        ));
    }
    if existing == Existing::Refuse {
        return Err(format!(
            "{}: a recording is already there; give another directory, or --force to \
             replace it",
            dir.path().display()
        ));
    }
    for name in &ours {
        dir.remove(name).map_err(|e| e.to_string())?;
    }
    dir.sync().map_err(|e| e.to_string())
}

/// The entries of a recording among `entries`: the known names, and the copies the old
/// manifest lists.
fn recording_files(dir: &OutputDir, entries: &[String]) -> Vec<String> {
    let mut listed: Vec<String> =
        crate::files::read_text(&dir.join(MANIFEST), crate::files::FileKind::Record)
            .ok()
            .and_then(|t| toml::from_str::<Manifest>(&t).ok())
            .map(|m| m.files.into_iter().map(|f| f.name).collect())
            .unwrap_or_default();
    listed.extend([MANIFEST, SCENE, STREAM, REPLAY].map(String::from));
    entries
        .iter()
        .filter(|e| {
            listed.contains(e)
                || (e.starts_with("ticks") && e.ends_with(".csv"))
                || (e.starts_with("device") && (e.ends_with(".toml") || e.ends_with(".txt")))
        })
        .cloned()
        .collect()
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
