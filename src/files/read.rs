//! Bounded reads. Every file palpa reads from a user (scene, mesh, surface, trajectory,
//! device profile, device configuration, CSV to plot, modal cache, a recording's files)
//! is opened here: the
//! open does not block (`O_NONBLOCK`, so a FIFO cannot hang it), the opened file must be a
//! regular file (a FIFO, a device such as `/dev/zero`, a directory or a socket is refused
//! by name), and its size is bounded by a limit per kind of file, both before reading
//! and while reading (a file that grows under the reader is refused too). Every error
//! names the path.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// What a file is read as; each kind has its own size limit ([`FileKind::limit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// A scene file (TOML).
    Scene,
    /// A tetrahedral mesh (Gmsh `.msh`, TetGen `.node`/`.ele`, VTK).
    Mesh,
    /// A triangle surface (OBJ, STL): a lattice's outline or a render surface.
    Surface,
    /// A probe trajectory (CSV).
    Trajectory,
    /// A device profile (TOML).
    Profile,
    /// A device's configuration to import (JSON).
    DeviceConfig,
    /// A force CSV to plot (replay output or recorded ticks).
    ForceCsv,
    /// A stream recording (`.palparec`).
    StreamRecording,
    /// A modal precompute cache (`.palpa`).
    ModalCache,
    /// A recording's manifest or a device check's record (TOML palpa wrote).
    Record,
}

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

impl FileKind {
    /// Largest file of this kind palpa reads (bytes). Text the user writes by hand is
    /// bounded tightly; data files by what the parsers and the model can hold: a
    /// trajectory of `MAX_TRAJECTORY_TIME` (3600 s) at 1 kHz is about 0.4 GB of CSV.
    pub const fn limit(self) -> u64 {
        match self {
            FileKind::Scene | FileKind::Profile | FileKind::DeviceConfig => 4 * MIB,
            FileKind::Mesh => 2 * GIB,
            FileKind::Surface => GIB,
            FileKind::Trajectory => GIB,
            FileKind::ForceCsv => 2 * GIB,
            FileKind::StreamRecording => 8 * GIB,
            FileKind::ModalCache => 16 * GIB,
            FileKind::Record => 4 * MIB,
        }
    }

    /// The kind's name in messages.
    pub const fn name(self) -> &'static str {
        match self {
            FileKind::Scene => "scene file",
            FileKind::Mesh => "mesh file",
            FileKind::Surface => "surface file",
            FileKind::Trajectory => "trajectory",
            FileKind::Profile => "device profile",
            FileKind::DeviceConfig => "device configuration",
            FileKind::ForceCsv => "force CSV",
            FileKind::StreamRecording => "stream recording",
            FileKind::ModalCache => "modal cache",
            FileKind::Record => "record palpa wrote",
        }
    }
}

/// Why a file was not read; the message names the path (`PATH: reason`).
#[derive(Debug)]
pub enum ReadError {
    /// Opening or reading failed (no such file, permission …).
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// Not a regular file: a FIFO, a device, a directory or a socket.
    NotRegular {
        /// The file.
        path: PathBuf,
        /// What it is ("FIFO (named pipe)", "character device", ...).
        what: &'static str,
        /// What it was to be read as.
        kind: FileKind,
    },
    /// Larger than the kind's limit.
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size (bytes; at least this many when it grew while read).
        size: u64,
        /// The kind's limit (bytes).
        limit: u64,
        /// What it was to be read as.
        kind: FileKind,
    },
    /// Not UTF-8 text where text was expected.
    NotText {
        /// The file.
        path: PathBuf,
        /// Offset of the first invalid byte.
        offset: usize,
    },
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path().display(), self.reason())
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReadError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl ReadError {
    /// What is wrong, without the path (for errors that name the file themselves).
    pub fn reason(&self) -> String {
        match self {
            ReadError::Io { source, .. } => source.to_string(),
            ReadError::NotRegular { what, kind, .. } => format!(
                "is a {what}, not a regular file; a {} must be a regular file",
                kind.name()
            ),
            ReadError::TooLarge {
                size, limit, kind, ..
            } => format!(
                "{size} bytes or more, larger than the {limit} bytes a {} may have",
                kind.name()
            ),
            ReadError::NotText { offset, .. } => format!("not UTF-8 text (byte {offset})"),
        }
    }

    /// The file at fault.
    pub fn path(&self) -> &Path {
        match self {
            ReadError::Io { path, .. }
            | ReadError::NotRegular { path, .. }
            | ReadError::TooLarge { path, .. }
            | ReadError::NotText { path, .. } => path,
        }
    }

    /// The error as an `std::io::Error` (the message kept), for callers whose errors
    /// carry one.
    pub fn into_io(self) -> std::io::Error {
        let kind = match &self {
            ReadError::Io { source, .. } => source.kind(),
            ReadError::NotRegular { .. } | ReadError::TooLarge { .. } => {
                std::io::ErrorKind::InvalidInput
            }
            ReadError::NotText { .. } => std::io::ErrorKind::InvalidData,
        };
        std::io::Error::new(kind, self.to_string())
    }
}

/// What a file that is not a regular file is, for messages.
fn describe(file_type: std::fs::FileType) -> Option<&'static str> {
    if file_type.is_file() {
        None
    } else if file_type.is_fifo() {
        Some("FIFO (named pipe)")
    } else if file_type.is_char_device() {
        Some("character device")
    } else if file_type.is_block_device() {
        Some("block device")
    } else if file_type.is_dir() {
        Some("directory")
    } else if file_type.is_socket() {
        Some("socket")
    } else {
        Some("special file")
    }
}

/// Checks without opening that `path` (links followed) is a regular file no larger than
/// `kind`'s limit: for paths named in a scene, checked when the scene is loaded.
pub fn check_regular(path: &Path, kind: FileKind) -> Result<u64, ReadError> {
    let meta = std::fs::metadata(path).map_err(|source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    within_kind(path, kind, meta)
}

fn within_kind(path: &Path, kind: FileKind, meta: std::fs::Metadata) -> Result<u64, ReadError> {
    if let Some(what) = describe(meta.file_type()) {
        return Err(ReadError::NotRegular {
            path: path.to_path_buf(),
            what,
            kind,
        });
    }
    if meta.len() > kind.limit() {
        return Err(ReadError::TooLarge {
            path: path.to_path_buf(),
            size: meta.len(),
            limit: kind.limit(),
            kind,
        });
    }
    Ok(meta.len())
}

/// Opens `path` for reading as a `kind` file: without blocking (a FIFO cannot hang the
/// open), refusing anything but a regular file within the kind's limit. Returns the file
/// and its size (bytes). The one open every reader goes through.
pub fn open_regular(path: &Path, kind: FileKind) -> Result<(File, u64), ReadError> {
    let io = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(io)?;
    let size = within_kind(path, kind, file.metadata().map_err(io)?)?;
    Ok((file, size))
}

/// The whole file at `path`, read as a `kind` file ([`open_regular`]); never more than
/// the kind's limit, even from a file that grows while it is read.
pub fn read_bytes(path: &Path, kind: FileKind) -> Result<Vec<u8>, ReadError> {
    let (file, size) = open_regular(path, kind)?;
    let limit = kind.limit();
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(usize::try_from(size).unwrap_or(usize::MAX))
        .map_err(|e| ReadError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::OutOfMemory, e.to_string()),
        })?;
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| ReadError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge {
            path: path.to_path_buf(),
            size: bytes.len() as u64,
            limit,
            kind,
        });
    }
    Ok(bytes)
}

/// The whole file at `path` as UTF-8 text, read as [`read_bytes`] does.
pub fn read_text(path: &Path, kind: FileKind) -> Result<String, ReadError> {
    String::from_utf8(read_bytes(path, kind)?).map_err(|e| ReadError::NotText {
        path: path.to_path_buf(),
        offset: e.utf8_error().valid_up_to(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_and_directories_are_refused_by_kind_with_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo reads the NUL-terminated path only.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for (path, what) in [
            (Path::new("/dev/zero"), "character device"),
            (Path::new("/dev/urandom"), "character device"),
            (fifo.as_path(), "FIFO (named pipe)"),
            (dir.path(), "directory"),
        ] {
            let e = read_text(path, FileKind::Scene).unwrap_err();
            let message = e.to_string();
            assert!(
                message.starts_with(&path.display().to_string()) && message.contains(what),
                "{message}"
            );
            assert!(check_regular(path, FileKind::Mesh).is_err());
        }
    }

    #[test]
    fn files_over_the_limit_are_refused_and_within_it_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scene.toml");
        std::fs::write(&path, "name = \"x\"\n").unwrap();
        assert_eq!(read_text(&path, FileKind::Scene).unwrap(), "name = \"x\"\n");
        let big = dir.path().join("big.toml");
        let file = File::create(&big).unwrap();
        file.set_len(FileKind::Scene.limit() + 1).unwrap();
        let e = read_bytes(&big, FileKind::Scene).unwrap_err();
        assert!(matches!(e, ReadError::TooLarge { .. }), "{e}");
        assert!(
            e.to_string()
                .contains("4194304 bytes a scene file may have"),
            "{e}"
        );
        let missing = read_text(&dir.path().join("none.toml"), FileKind::Scene).unwrap_err();
        assert!(missing.to_string().contains("none.toml"), "{missing}");
    }
}
