//! Safe writes. Every file palpa writes is created new inside a directory handle that was
//! opened without following a final symlink: `O_CREAT | O_EXCL | O_NOFOLLOW`, so a
//! planted link (dangling or not), FIFO or device under the name is an error, never a
//! write through it. Whole files are replaced through a temporary with an unpredictable
//! name (128 random bits), synced, renamed over the target and the directory synced; the
//! temporary is removed on every error path (and on a panic, by its guard).
//!
//! Hand-written over `rustix`'s `*at` calls: `tempfile` names its temporaries safely but
//! works on paths, so a directory renamed or replaced by a link between two calls would
//! redirect the rename; a directory handle cannot be redirected.

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// A write that failed, naming the file.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct WriteError {
    /// The file (or directory) at fault.
    pub path: PathBuf,
    /// What failed.
    pub source: std::io::Error,
}

impl WriteError {
    fn new(path: impl Into<PathBuf>, source: impl Into<std::io::Error>) -> Self {
        Self {
            path: path.into(),
            source: source.into(),
        }
    }

    fn other(path: impl Into<PathBuf>, message: String) -> Self {
        Self::new(path, std::io::Error::other(message))
    }
}

/// Mode of the files palpa creates (before the umask).
const FILE_MODE: u32 = 0o644;
/// Mode of the directories palpa creates (before the umask).
const DIR_MODE: u32 = 0o755;

/// A directory palpa writes into, held open: every name is resolved inside it.
#[derive(Debug)]
pub struct OutputDir {
    fd: OwnedFd,
    path: PathBuf,
}

impl OutputDir {
    /// Opens the existing directory `path`; its last component must be a directory, not
    /// a link to one (the components before it may be links: they are the user's).
    pub fn open(path: &Path) -> Result<Self, WriteError> {
        let fd = rustix::fs::openat(
            rustix::fs::CWD,
            non_empty(path),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR => WriteError::other(
                path,
                "is a symbolic link or not a directory; give a directory".into(),
            ),
            e => WriteError::new(path, e),
        })?;
        Ok(Self {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// Creates the directory `path` (its parents too) and opens it; an existing
    /// directory is opened as by [`OutputDir::open`]. Returns whether it was created.
    pub fn create(path: &Path) -> Result<(Self, bool), WriteError> {
        let created = match std::fs::symlink_metadata(path) {
            Ok(_) => false,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent).map_err(|e| WriteError::new(parent, e))?;
                }
                match rustix::fs::mkdirat(rustix::fs::CWD, path, Mode::from_raw_mode(DIR_MODE)) {
                    Ok(()) => true,
                    Err(rustix::io::Errno::EXIST) => false,
                    Err(e) => return Err(WriteError::new(path, e)),
                }
            }
            Err(e) => return Err(WriteError::new(path, e)),
        };
        Ok((Self::open(path)?, created))
    }

    /// The directory's path as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of `name` in the directory (for messages).
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Creates the new file `name` for writing; an existing entry of any kind (a file, a
    /// link, a FIFO) is an error.
    pub fn create_new(&self, name: &str) -> Result<File, WriteError> {
        let fd = self
            .open_new(name)
            .map_err(|e| WriteError::new(self.join(name), e))?;
        Ok(File::from(fd))
    }

    fn open_new(&self, name: &str) -> rustix::io::Result<OwnedFd> {
        rustix::fs::openat(
            &self.fd,
            plain_name(name)?,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(FILE_MODE),
        )
    }

    /// What is at `name` (not following a link), if anything.
    pub fn entry(&self, name: &str) -> Result<Option<FileType>, WriteError> {
        let at = plain_name(name).map_err(|e| WriteError::new(self.join(name), e))?;
        match rustix::fs::statat(&self.fd, at, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(FileType::from_raw_mode(stat.st_mode))),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(WriteError::new(self.join(name), e)),
        }
    }

    /// Removes the entry `name` (a link itself, never what it points to); nothing there
    /// is not an error. A directory is refused.
    pub fn remove(&self, name: &str) -> Result<(), WriteError> {
        let at = plain_name(name).map_err(|e| WriteError::new(self.join(name), e))?;
        match rustix::fs::unlinkat(&self.fd, at, AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(WriteError::new(self.join(name), e)),
        }
    }

    /// Writes `bytes` as the file `name`, replacing what is there: a new temporary in
    /// this directory (unpredictable name), synced, renamed over `name`, the directory
    /// synced. On any error the temporary is removed and `name` is as it was.
    pub fn write_atomic(&self, name: &str, bytes: &[u8]) -> Result<(), WriteError> {
        plain_name(name).map_err(|e| WriteError::new(self.join(name), e))?;
        let temp = Temporary::create(self, name)?;
        let mut file = File::from(
            temp.fd
                .try_clone()
                .map_err(|e| WriteError::new(self.join(&temp.name), e))?,
        );
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .map_err(|e| WriteError::new(self.join(&temp.name), e))?;
        drop(file);
        temp.rename_to(name)?;
        self.sync()
    }

    /// Flushes the directory's entries to the disk (after creating or renaming files).
    pub fn sync(&self) -> Result<(), WriteError> {
        rustix::fs::fsync(&self.fd).map_err(|e| WriteError::new(&self.path, e))
    }
}

impl AsFd for OutputDir {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// A temporary file beside its target, removed when dropped unless renamed.
struct Temporary<'a> {
    dir: &'a OutputDir,
    name: String,
    fd: OwnedFd,
    renamed: bool,
}

impl<'a> Temporary<'a> {
    fn create(dir: &'a OutputDir, target: &str) -> Result<Self, WriteError> {
        // A name taken by chance (or planted) fails O_EXCL: try a few others.
        let mut last = None;
        for _ in 0..4 {
            let name = format!(".{target}.{:032x}.tmp", rand::random::<u128>());
            match dir.open_new(&name) {
                Ok(fd) => {
                    return Ok(Self {
                        dir,
                        name,
                        fd,
                        renamed: false,
                    })
                }
                Err(rustix::io::Errno::EXIST) => last = Some(name),
                Err(e) => return Err(WriteError::new(dir.join(&name), e)),
            }
        }
        Err(WriteError::other(
            dir.join(&last.unwrap_or_default()),
            "four random temporary names were all taken".into(),
        ))
    }

    fn rename_to(mut self, target: &str) -> Result<(), WriteError> {
        rustix::fs::renameat(&self.dir.fd, &self.name, &self.dir.fd, target)
            .map_err(|e| WriteError::new(self.dir.join(target), e))?;
        self.renamed = true;
        Ok(())
    }
}

impl Drop for Temporary<'_> {
    fn drop(&mut self) {
        if !self.renamed {
            let _ = rustix::fs::unlinkat(&self.dir.fd, &self.name, AtFlags::empty());
        }
    }
}

/// `name` as one path component: no separator, not empty, not `.` or `..`.
fn plain_name(name: &str) -> rustix::io::Result<&str> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0') {
        return Err(rustix::io::Errno::INVAL);
    }
    Ok(name)
}

fn non_empty(path: &Path) -> &Path {
    if path.as_os_str().is_empty() {
        Path::new(".")
    } else {
        path
    }
}

/// Writes `bytes` as the file `path`, replacing it atomically
/// ([`OutputDir::write_atomic`] in its directory, which must exist and not be a link).
pub fn write_file_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let (dir, name) = split(path)?;
    OutputDir::open(dir)?.write_atomic(name, bytes)
}

/// The directory and file name of `path`.
pub fn split(path: &Path) -> Result<(&Path, &str), WriteError> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| WriteError::other(path, "not a file name".into()))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    Ok((non_empty(dir), name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_new_refuses_links_fifos_and_existing_files() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        std::fs::write(&outside, "keep").unwrap();
        let dir = tmp.path().join("d");
        let (out, created) = OutputDir::create(&dir).unwrap();
        assert!(created);
        std::os::unix::fs::symlink(&outside, dir.join("link")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("nowhere"), dir.join("dangling")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            dir.join("fifo").as_path(),
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        for name in ["link", "dangling", "fifo"] {
            let e = out.create_new(name).unwrap_err();
            assert_eq!(e.source.kind(), std::io::ErrorKind::AlreadyExists, "{name}");
            assert!(e.to_string().contains(name), "{e}");
        }
        assert!(!tmp.path().join("nowhere").exists());
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep");
        let mut f = out.create_new("new").unwrap();
        f.write_all(b"x").unwrap();
        assert!(out.create_new("new").is_err());
        assert_eq!(out.entry("link").unwrap(), Some(FileType::Symlink));
        assert_eq!(out.entry("fifo").unwrap(), Some(FileType::Fifo));
        assert_eq!(out.entry("none").unwrap(), None);
    }

    #[test]
    fn write_atomic_replaces_a_link_not_its_target_and_leaves_no_temporary() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        std::fs::write(&outside, "keep").unwrap();
        let (out, _) = OutputDir::create(&tmp.path().join("d")).unwrap();
        std::os::unix::fs::symlink(&outside, out.join("f")).unwrap();
        out.write_atomic("f", b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep");
        assert_eq!(std::fs::read_to_string(out.join("f")).unwrap(), "new");
        assert!(!std::fs::symlink_metadata(out.join("f"))
            .unwrap()
            .is_symlink());
        let names: Vec<_> = std::fs::read_dir(out.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary left");
    }

    #[test]
    fn a_directory_given_as_a_link_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("real")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("real"), tmp.path().join("alias")).unwrap();
        let e = OutputDir::open(&tmp.path().join("alias")).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(OutputDir::create(&tmp.path().join("alias")).is_err());
    }
}
