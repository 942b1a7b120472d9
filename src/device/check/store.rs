//! Which devices passed `palpa devices check`: one small TOML file per device under the
//! state directory (`PALPA_STATE_DIR`, else `$XDG_STATE_HOME/palpa`, else
//! `~/.local/state/palpa`), named by a hash of the device's identity
//! ([`crate::device::HapticDevice::identity`]). `serve` reads it to warn about a device
//! never checked. Files are written safely ([`write_file_safely`]).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The variable that names the state directory (tests set it).
pub const STATE_DIR_ENV: &str = "PALPA_STATE_DIR";

/// A device that passed the check.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckRecord {
    /// The device's identity.
    pub identity: String,
    /// Its name when it was checked.
    pub name: String,
    /// When (s since the Unix epoch).
    pub checked_unix_s: u64,
    /// The palpa that checked it.
    pub palpa_version: String,
}

/// The state directory, or why there is none.
pub fn state_dir() -> Result<PathBuf, String> {
    let from = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = from(STATE_DIR_ENV) {
        return Ok(dir);
    }
    if let Some(dir) = from("XDG_STATE_HOME") {
        return Ok(dir.join("palpa"));
    }
    from("HOME")
        .map(|home| home.join(".local/state/palpa"))
        .ok_or_else(|| format!("no state directory: set {STATE_DIR_ENV} or HOME"))
}

/// The record file of `identity` under `dir`.
fn record_path(dir: &Path, identity: &str) -> PathBuf {
    let key = &blake3::hash(identity.as_bytes()).to_hex()[..20];
    dir.join("checked-devices").join(format!("{key}.toml"))
}

/// Writes the record of a device that passed, under `dir`.
pub fn record(dir: &Path, record: &CheckRecord) -> Result<PathBuf, String> {
    let path = record_path(dir, &record.identity);
    let parent = path.parent().expect("a record has a directory");
    std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    let quote = |s: &str| toml::Value::String(s.to_owned()).to_string();
    let text = format!(
        "# palpa devices check passed for this device\nidentity = {}\nname = {}\n\
         checked_unix_s = {}\npalpa_version = {}\n",
        quote(&record.identity),
        quote(&record.name),
        record.checked_unix_s,
        quote(&record.palpa_version)
    );
    write_file_safely(&path, text.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// The record of `identity` under `dir`, if the device passed a check.
pub fn lookup(dir: &Path, identity: &str) -> Result<Option<CheckRecord>, String> {
    let path = record_path(dir, identity);
    let text = match crate::files::read_text(&path, crate::files::FileKind::Record) {
        Ok(text) => text,
        Err(crate::files::ReadError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            return Ok(None)
        }
        Err(e) => return Err(e.to_string()),
    };
    let table: toml::Table = text
        .parse()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let string = |k: &str| {
        table
            .get(k)
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_owned()
    };
    let found = CheckRecord {
        identity: string("identity"),
        name: string("name"),
        checked_unix_s: table
            .get("checked_unix_s")
            .and_then(toml::Value::as_integer)
            .and_then(|v| u64::try_from(v).ok())
            .unwrap_or(0),
        palpa_version: string("palpa_version"),
    };
    // A hash collision or a hand-edited file is no record of this device.
    Ok((found.identity == identity).then_some(found))
}

/// Writes `bytes` to `path` so that a crash leaves the old file or the new one: a
/// temporary file with an unpredictable name beside it (created exclusively, never
/// through a symlink), synced, renamed over `path`, and the directory synced. Refuses a
/// `path` that is a symlink or not a regular file.
pub fn write_file_safely(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_file() {
            return Err(std::io::Error::other(
                "not a regular file (a symlink, a directory or a device): not written",
            ));
        }
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("no file name"))?
        .to_string_lossy()
        .into_owned();
    let tmp = dir.join(format!(".{name}.{:016x}.tmp", rand::random::<u64>()));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(&dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_for_its_device_only_and_files_are_written_safely() {
        let dir = tempfile::tempdir().unwrap();
        let rec = CheckRecord {
            identity: "hid:woodenhaptics:0123:no-serial".into(),
            name: "hid:woodenhaptics (\"in-memory\")".into(),
            checked_unix_s: 42,
            palpa_version: "0.1.0".into(),
        };
        assert_eq!(lookup(dir.path(), &rec.identity).unwrap(), None);
        let path = record(dir.path(), &rec).unwrap();
        assert_eq!(
            lookup(dir.path(), &rec.identity).unwrap(),
            Some(rec.clone())
        );
        assert_eq!(lookup(dir.path(), "hid:other").unwrap(), None);
        // No temporaries left behind.
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 1);
        // A symlink is not written through.
        let target = dir.path().join("target.txt");
        std::fs::write(&target, "keep").unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(write_file_safely(&link, b"changed").is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    }
}
