//! A recording directory read back: its manifest, devices and copied scene checked
//! against their hashes, and `palpa recording check`'s report of what is there.

use std::path::{Path, PathBuf};

use super::device::DeviceRecord;
use super::session_dir::{Manifest, FORMAT, MANIFEST};
use crate::device::replay::Trajectory;

/// A recording directory, opened.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The directory.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
    /// Its devices, in order.
    pub devices: Vec<DeviceRecord>,
}

fn read_text(path: &Path) -> Result<String, String> {
    crate::files::read_text(path, crate::files::FileKind::Record).map_err(|e| e.to_string())
}

impl Recorded {
    /// The recording `path` belongs to: `path` itself if it is a recording directory, or
    /// the directory of a per-tick CSV inside one (with that device's index); `None` for
    /// anything else (a plain trajectory file).
    pub fn find(path: &Path) -> Result<Option<(Self, usize)>, String> {
        if path.is_dir() {
            return Ok(Some((Self::open(path)?, 0)));
        }
        let Some(dir) = path.parent().filter(|d| d.join(MANIFEST).is_file()) else {
            return Ok(None);
        };
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let recorded = Self::open(dir)?;
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        Ok(recorded
            .manifest
            .devices
            .iter()
            .position(|d| d.ticks == name)
            .map(|i| (recorded, i)))
    }

    /// Opens the recording directory `dir`: its manifest and device descriptions.
    pub fn open(dir: &Path) -> Result<Self, String> {
        let path = dir.join(MANIFEST);
        let text = read_text(&path).map_err(|e| {
            format!("{e} (not a palpa recording directory: `palpa serve --record DIR` makes one)")
        })?;
        let manifest: Manifest = toml::from_str(&text)
            .map_err(|e| format!("{}: {}", path.display(), e.to_string().trim_end()))?;
        if manifest.format != FORMAT {
            return Err(format!(
                "{}: recording format {}, this palpa reads format {FORMAT}",
                path.display(),
                manifest.format
            ));
        }
        let devices = manifest
            .devices
            .iter()
            .map(|d| {
                let path = dir.join(&d.device);
                DeviceRecord::parse(&read_text(&path)?, &path.display().to_string())
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            dir: dir.to_path_buf(),
            manifest,
            devices,
        })
    }

    /// The copied scene file.
    pub fn scene_path(&self) -> PathBuf {
        self.dir.join(&self.manifest.scene.file)
    }

    /// Device `index`'s per-tick CSV.
    pub fn ticks_path(&self, index: usize) -> PathBuf {
        self.dir.join(&self.manifest.devices[index].ticks)
    }

    /// Checks every copied input against its recorded hash: an error names the first
    /// file that is missing or changed.
    pub fn verify_inputs(&self) -> Result<(), String> {
        for f in &self.manifest.files {
            let path = self.dir.join(&f.name);
            let kind = super::scene_copy::file_kind(&f.key);
            let bytes = crate::files::read_bytes(&path, kind).map_err(|e| e.to_string())?;
            let hash = blake3::hash(&bytes).to_hex().to_string();
            if hash != f.blake3 {
                return Err(format!(
                    "{}: changed since it was recorded (blake3 {}…, recorded {}…; {} bytes, \
                     recorded {})",
                    path.display(),
                    &hash[..12],
                    &f.blake3[..12.min(f.blake3.len())],
                    bytes.len(),
                    f.bytes
                ));
            }
        }
        Ok(())
    }
}

/// One line of a check: a file and what was found, and whether it is a problem.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckLine {
    /// The file (name in the directory).
    pub file: String,
    /// What it holds, or what is wrong.
    pub text: String,
    /// Whether this is a problem (the recording does not replay as recorded).
    pub problem: bool,
}

/// Everything `palpa recording check DIR` finds: one line per file.
pub fn check(dir: &Path) -> Vec<CheckLine> {
    let line = |file: &str, text: String, problem: bool| CheckLine {
        file: file.into(),
        text,
        problem,
    };
    let recorded = match Recorded::open(dir) {
        Ok(r) => r,
        Err(e) => return vec![line(MANIFEST, e, true)],
    };
    let m = &recorded.manifest;
    let mut lines = vec![line(
        MANIFEST,
        format!(
            "format {}, recorded by {} (palpa {}), {} device{}{}",
            m.format,
            m.recorded_by,
            m.palpa_version,
            m.devices.len(),
            if m.devices.len() == 1 { "" } else { "s" },
            if m.stream.is_some() {
                ", the visual stream"
            } else {
                ""
            }
        ),
        false,
    )];
    let scene = match read_text(&recorded.scene_path()) {
        Ok(_) => line(
            &m.scene.file,
            format!(
                "recorded from {}, fingerprint {}…",
                m.scene.source,
                &m.scene.fingerprint[..12.min(m.scene.fingerprint.len())]
            ),
            false,
        ),
        Err(e) => line(&m.scene.file, e, true),
    };
    lines.push(scene);
    for f in &m.files {
        let single = Recorded {
            manifest: Manifest {
                files: vec![f.clone()],
                ..m.clone()
            },
            ..recorded.clone()
        };
        lines.push(match single.verify_inputs() {
            Ok(()) => line(
                &f.name,
                format!(
                    "{} ({} bytes, hash matches; from {})",
                    f.key, f.bytes, f.source
                ),
                false,
            ),
            Err(e) => line(&f.name, e, true),
        });
    }
    for (i, d) in recorded.devices.iter().enumerate() {
        lines.push(line(
            &m.devices[i].device,
            format!(
                "{}; rated {} N, {} N/m; workspace {}",
                d.description,
                d.rating.max_force_n,
                d.rating.max_stiffness_n_per_m,
                d.workspace.how
            ),
            false,
        ));
        lines.push(check_ticks(&recorded.ticks_path(i), &m.devices[i].ticks));
    }
    if let Some(stream) = &m.stream {
        lines.push(check_stream(&dir.join(stream), stream));
    }
    lines
}

fn check_ticks(path: &Path, name: &str) -> CheckLine {
    let rows = crate::files::read_text(path, crate::files::FileKind::Trajectory).map(|t| {
        t.lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .count()
    });
    if matches!(rows, Ok(0 | 1)) {
        return CheckLine {
            file: name.into(),
            text: "no rows: the session stopped before its first tick was written".into(),
            problem: false,
        };
    }
    let (text, problem) = match Trajectory::load_noting(path) {
        Ok((t, note)) => {
            let s = t.samples();
            let (a, b) = (s[0].t, s[s.len() - 1].t);
            let mut text = format!(
                "{} rows, t = {a:.3} to {b:.3} s ({:.0} rows/s)",
                s.len(),
                (s.len().max(2) - 1) as f64 / (b - a).max(1e-9)
            );
            if let Some(note) = note {
                text.push_str(&format!("; torn last row ignored ({note})"));
            }
            (text, false)
        }
        Err(e) => (e.to_string(), true),
    };
    CheckLine {
        file: name.into(),
        text,
        problem,
    }
}

fn check_stream(path: &Path, name: &str) -> CheckLine {
    let bytes = match crate::files::read_bytes(path, crate::files::FileKind::StreamRecording) {
        Ok(b) => b,
        Err(e) => {
            return CheckLine {
                file: name.into(),
                text: format!("{}: {e}", path.display()),
                problem: true,
            }
        }
    };
    let (text, problem) = match palpa_client::read_recording(&bytes) {
        Ok(r) => {
            let frames = r
                .iter()
                .filter(|(_, m)| matches!(m, palpa_protocol::ServerMessage::Frame(_)))
                .count();
            let span = match (r.first(), r.last()) {
                (Some(a), Some(b)) => (b.0 - a.0) as f64 * 1e-6,
                _ => 0.0,
            };
            let mut text = format!(
                "{} records ({frames} frames) over {span:.3} s, format {}",
                r.len(),
                r.version
            );
            if let Some(t) = &r.torn {
                text.push_str(&format!(
                    "; torn tail ignored: {} bytes from byte {} ({})",
                    t.bytes, t.offset, t.reason
                ));
            }
            (text, false)
        }
        Err(e) => (e, true),
    };
    CheckLine {
        file: name.into(),
        text,
        problem,
    }
}
