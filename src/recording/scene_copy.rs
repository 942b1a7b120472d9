//! The scene of a recording, made self-contained: the scene file's text with every file
//! it names (mesh, render surface, lattice surface, device profile, trajectory) copied
//! beside it and the paths rewritten to the copies, so the directory replays anywhere.
//! A scene's fingerprint is the blake3 hash of its text with each named file replaced by
//! the hash of its contents: the original and the copy have the same fingerprint, and a
//! changed mesh changes it.

use std::path::{Path, PathBuf};

use toml_edit::DocumentMut;

use crate::scene::{Scene, DEFAULT_SCENE};

/// The keys of a scene file that name files (dotted paths).
pub const FILE_KEYS: [&str; 5] = [
    "mesh.file",
    "mesh.render_surface",
    "mesh.lattice.surface",
    "device.profile",
    "device.trajectory",
];

/// What the file under a [`FILE_KEYS`] key is read as (its size limit).
pub fn file_kind(key: &str) -> crate::files::FileKind {
    use crate::files::FileKind;
    match key {
        "mesh.file" => FileKind::Mesh,
        "device.profile" => FileKind::Profile,
        "device.trajectory" => FileKind::Trajectory,
        _ => FileKind::Surface,
    }
}

/// A file the scene names, read.
#[derive(Clone, Debug)]
pub struct NamedFile {
    /// The scene key naming it.
    pub key: &'static str,
    /// The path as resolved from the scene.
    pub path: PathBuf,
    /// Its contents.
    pub bytes: Vec<u8>,
}

/// A scene's text and the files it names, read.
#[derive(Clone, Debug)]
pub struct SceneInputs {
    /// Where the scene came from (a path, or the embedded default).
    pub source: String,
    /// The scene file's text.
    pub text: String,
    /// The files it names.
    pub files: Vec<NamedFile>,
}

fn item_mut<'a>(doc: &'a mut DocumentMut, key: &str) -> Option<&'a mut toml_edit::Item> {
    let mut item = doc.as_item_mut();
    for part in key.split('.') {
        item = item.get_mut(part)?;
    }
    Some(item)
}

fn item<'a>(doc: &'a DocumentMut, key: &str) -> Option<&'a toml_edit::Item> {
    let mut item = doc.as_item();
    for part in key.split('.') {
        item = item.get(part)?;
    }
    Some(item)
}

impl SceneInputs {
    /// Reads and checks the scene file at `path` (the embedded default without one), and
    /// the files it names: the scene and the exact inputs a recording copies.
    pub fn load(path: Option<&Path>) -> Result<(Scene, Self), String> {
        let (scene, text) = match path {
            Some(path) => {
                let text = crate::files::read_text(path, crate::files::FileKind::Scene)
                    .map_err(|e| e.to_string())?;
                let base = path.parent().unwrap_or(Path::new("."));
                let base = if base.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    base
                };
                let scene = Scene::parse(&text, &path.display().to_string(), base)
                    .map_err(|e| e.to_string())?;
                (scene, text)
            }
            None => (Scene::embedded_default(), DEFAULT_SCENE.to_string()),
        };
        let inputs = Self::read(&scene, &text)?;
        Ok((scene, inputs))
    }

    /// Reads the files `scene` (parsed from `text`) names.
    pub fn read(scene: &Scene, text: &str) -> Result<Self, String> {
        let doc: DocumentMut = text.parse().map_err(|e| format!("{}: {e}", scene.source))?;
        let mut files = Vec::new();
        for key in FILE_KEYS {
            let Some(value) = item(&doc, key).and_then(|i| i.as_str()) else {
                continue;
            };
            let path = scene.resolve(Path::new(value));
            let bytes = crate::files::read_bytes(&path, file_kind(key))
                .map_err(|e| format!("{}: {key}: {e}", scene.source))?;
            files.push(NamedFile { key, path, bytes });
        }
        Ok(Self {
            source: scene.source.clone(),
            text: text.to_string(),
            files,
        })
    }

    /// The text with each named file's path replaced by `name(file)`.
    fn rewritten(&self, mut name: impl FnMut(&NamedFile) -> String) -> String {
        let mut doc: DocumentMut = self.text.parse().expect("parsed when read");
        for f in &self.files {
            if let Some(item) = item_mut(&mut doc, f.key) {
                *item = toml_edit::value(name(f));
            }
        }
        doc.to_string()
    }

    /// The scene's fingerprint (hex): its text with each named file's path replaced by
    /// the hash of the file's contents, hashed.
    pub fn fingerprint(&self) -> String {
        let text = self.rewritten(|f| format!("blake3:{}", blake3::hash(&f.bytes).to_hex()));
        blake3::hash(text.as_bytes()).to_hex().to_string()
    }

    /// The self-contained copy: the scene text pointing at the copies, and each copy's
    /// name (unique, and none of `reserved`) with its contents.
    pub fn copy(&self, reserved: &[&str]) -> (String, Vec<(String, &NamedFile)>) {
        let mut taken: Vec<String> = reserved.iter().map(|s| s.to_string()).collect();
        let mut names = Vec::new();
        for f in &self.files {
            let base = f
                .path
                .file_name()
                .and_then(|n| n.to_str())
                .filter(|n| !n.starts_with('.'))
                .unwrap_or("file")
                .to_string();
            let mut name = base.clone();
            let mut k = 2;
            while taken.contains(&name) {
                name = format!("{k}-{base}");
                k += 1;
            }
            taken.push(name.clone());
            names.push((name, f));
        }
        let mut next = names.iter();
        let text = self.rewritten(|_| next.next().expect("one name per file").0.clone());
        (text, names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_names_its_files_beside_it_and_keeps_the_fingerprint() {
        let tmp = tempfile::tempdir().unwrap();
        let mesh = tmp.path().join("sub/block.msh");
        std::fs::create_dir_all(mesh.parent().unwrap()).unwrap();
        std::fs::write(&mesh, "mesh bytes").unwrap();
        let text = "# a comment\n[mesh]\nfile = \"sub/block.msh\"\n";
        let scene = Scene {
            base_dir: tmp.path().to_path_buf(),
            source: "s.toml".into(),
            ..Scene::default()
        };
        let inputs = SceneInputs::read(&scene, text).unwrap();
        let (copy, names) = inputs.copy(&["scene.toml"]);
        assert_eq!(names[0].0, "block.msh");
        assert!(copy.contains("file = \"block.msh\"") && copy.contains("# a comment"));
        let copied = SceneInputs {
            source: "copy".into(),
            text: copy,
            files: inputs.files.clone(),
        };
        assert_eq!(copied.fingerprint(), inputs.fingerprint());
        let mut changed = inputs.clone();
        changed.files[0].bytes.push(b'!');
        assert_ne!(changed.fingerprint(), inputs.fingerprint());
        let (_, names) = inputs.copy(&["block.msh"]);
        assert_eq!(names[0].0, "2-block.msh");
    }
}
