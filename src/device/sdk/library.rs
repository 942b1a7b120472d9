//! Finding and loading a vendor SDK's shared library at run time, so palpa builds and
//! runs where the SDK is absent and says in one line where it looked when it is needed.
//!
//! Order: the override environment variable alone when it is set; else the system
//! loader by the library's plain name (`LD_LIBRARY_PATH`, `ld.so.cache`, `/lib`,
//! `/usr/lib`); else every `NAME` and `NAME.MAJOR[.MINOR…]` in the SDK's usual
//! directories, unversioned first, then the highest version.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use libloading::Library;

/// Where to look for one vendor library.
#[derive(Clone, Copy, Debug)]
pub struct LibrarySearch {
    /// The SDK, for messages (e.g. `OpenHaptics HDAPI`).
    pub sdk: &'static str,
    /// The library's unversioned file name (e.g. `libHD.so`).
    pub file: &'static str,
    /// The environment variable that names the library file and replaces the search.
    pub env: &'static str,
    /// Directories searched after the system loader, in order.
    pub dirs: &'static [&'static str],
}

/// A loaded vendor library and the file or name it was loaded from.
pub struct LoadedLibrary {
    /// The library; symbols taken from it are valid while it lives.
    pub library: Library,
    /// Where it came from (a path, or the plain name the system loader resolved).
    pub origin: String,
}

impl LibrarySearch {
    /// Loads the library, or says in one line what was looked for and where.
    pub fn load(&self) -> Result<LoadedLibrary, String> {
        let dirs: Vec<PathBuf> = self.dirs.iter().map(PathBuf::from).collect();
        self.load_from(std::env::var_os(self.env), true, &dirs)
    }

    /// The search with its inputs explicit: the override's value, whether to ask the
    /// system loader by plain name, and the directories to scan.
    fn load_from(
        &self,
        override_path: Option<OsString>,
        system_loader: bool,
        dirs: &[PathBuf],
    ) -> Result<LoadedLibrary, String> {
        if let Some(path) = override_path.filter(|p| !p.is_empty()) {
            let shown = Path::new(&path).display().to_string();
            return open(Path::new(&path))
                .map(|library| LoadedLibrary {
                    library,
                    origin: shown.clone(),
                })
                .map_err(|e| format!("{} library from {}={shown}: {e}", self.sdk, self.env));
        }
        if system_loader {
            if let Ok(library) = open(Path::new(self.file)) {
                return Ok(LoadedLibrary {
                    library,
                    origin: format!("{} (system loader)", self.file),
                });
            }
        }
        let mut unusable = Vec::new();
        for dir in dirs {
            for path in self.candidates(dir) {
                match open(&path) {
                    Ok(library) => {
                        return Ok(LoadedLibrary {
                            library,
                            origin: path.display().to_string(),
                        })
                    }
                    Err(e) => unusable.push(format!("{}: {e}", path.display())),
                }
            }
        }
        let mut places = vec![format!("${} (unset)", self.env)];
        if system_loader {
            places.push("the system loader's path (LD_LIBRARY_PATH, ld.so.cache)".into());
        }
        places.extend(dirs.iter().map(|d| d.display().to_string()));
        let mut line = format!(
            "{} library {} not found (looked in {}; set {} to its path)",
            self.sdk,
            self.file,
            places.join(", "),
            self.env
        );
        if !unusable.is_empty() {
            line.push_str(&format!("; found but unusable: {}", unusable.join("; ")));
        }
        Err(line)
    }

    /// `dir/NAME` and `dir/NAME.N[.N…]` files, unversioned first, then the highest
    /// version first.
    fn candidates(&self, dir: &Path) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut found: Vec<(Vec<u64>, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                let version = version_of(&name, self.file)?;
                Some((version, entry.path()))
            })
            .collect();
        // Unversioned (an empty version) sorts before any version; then highest first.
        found.sort_by(|(a, _), (b, _)| match (a.is_empty(), b.is_empty()) {
            (true, false) => std::cmp::Ordering::Less,
            (false, true) => std::cmp::Ordering::Greater,
            _ => b.cmp(a),
        });
        found.into_iter().map(|(_, p)| p).collect()
    }
}

/// The version numbers of `name` if it is `file` or `file.N[.N…]`; empty for `file`.
fn version_of(name: &str, file: &str) -> Option<Vec<u64>> {
    let rest = name.strip_prefix(file)?;
    if rest.is_empty() {
        return Some(Vec::new());
    }
    rest.strip_prefix('.')?
        .split('.')
        .map(|part| part.parse().ok())
        .collect()
}

fn open(path: &Path) -> Result<Library, String> {
    // SAFETY: loading a library runs its initialisers. These are the vendor SDK the user
    // installed or named; palpa calls no symbol whose signature it has not declared from
    // the SDK's published header.
    unsafe { Library::new(path) }.map_err(|e| e.to_string().replace('\n', " "))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEARCH: LibrarySearch = LibrarySearch {
        sdk: "Test SDK",
        file: "libpalpa-absent-sdk.so",
        env: "PALPA_TEST_SDK_LIB",
        dirs: &[],
    };

    #[test]
    fn versions_sort_unversioned_first_then_highest() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "libpalpa-absent-sdk.so.3.9.0",
            "libpalpa-absent-sdk.so.3.10.1",
            "libpalpa-absent-sdk.so",
            "libpalpa-absent-sdk.so.3",
            "libpalpa-absent-sdk.so.old",
            "libpalpa-absent-sdk.sox",
            "other.so",
        ] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let names: Vec<String> = SEARCH
            .candidates(dir.path())
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "libpalpa-absent-sdk.so",
                "libpalpa-absent-sdk.so.3.10.1",
                "libpalpa-absent-sdk.so.3.9.0",
                "libpalpa-absent-sdk.so.3",
            ]
        );
    }

    #[test]
    fn a_missing_library_is_one_line_naming_the_file_and_every_place() {
        let a = tempfile::tempdir().unwrap();
        let b = a.path().join("no-such-dir");
        let dirs = [a.path().to_path_buf(), b.clone()];
        let e = SEARCH.load_from(None, true, &dirs).err().unwrap();
        assert!(!e.contains('\n'), "{e}");
        for needle in [
            "Test SDK",
            "libpalpa-absent-sdk.so",
            "$PALPA_TEST_SDK_LIB (unset)",
            "LD_LIBRARY_PATH",
            &a.path().display().to_string(),
            &b.display().to_string(),
        ] {
            assert!(e.contains(needle), "`{needle}` missing in: {e}");
        }
    }

    #[test]
    fn an_unloadable_file_and_a_bad_override_are_named_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("libpalpa-absent-sdk.so.1");
        std::fs::write(&junk, b"not a shared object").unwrap();
        let e = SEARCH
            .load_from(None, false, &[dir.path().to_path_buf()])
            .err()
            .unwrap();
        assert!(!e.contains('\n'), "{e}");
        assert!(
            e.contains("found but unusable") && e.contains(&junk.display().to_string()),
            "{e}"
        );
        let e = SEARCH
            .load_from(Some("/no/such/libx.so".into()), true, &[])
            .err()
            .unwrap();
        assert!(
            e.contains("PALPA_TEST_SDK_LIB=/no/such/libx.so") && !e.contains('\n'),
            "{e}"
        );
    }
}
