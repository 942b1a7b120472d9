//! Range checks for scene values; every error names the scene file, the key and the
//! value found.

use std::path::Path;

use super::{Scene, SceneError};

/// Checks values of one scene, naming its file and the key in every error.
pub(crate) struct Check<'a> {
    scene: &'a Scene,
}

impl<'a> Check<'a> {
    /// Checks for `scene`.
    pub fn new(scene: &'a Scene) -> Self {
        Self { scene }
    }

    /// The error for `key`.
    pub fn invalid(&self, key: impl Into<String>, message: impl Into<String>) -> SceneError {
        self.scene.invalid(key, message)
    }

    /// `v` is finite and > 0.
    pub fn positive(&self, key: &str, v: f64) -> Result<(), SceneError> {
        if v.is_finite() && v > 0.0 {
            Ok(())
        } else {
            Err(self.invalid(key, format!("must be > 0, got {v}")))
        }
    }

    /// `v` is finite and ≥ 0.
    pub fn non_negative(&self, key: &str, v: f64) -> Result<(), SceneError> {
        if v.is_finite() && v >= 0.0 {
            Ok(())
        } else {
            Err(self.invalid(key, format!("must be >= 0, got {v}")))
        }
    }

    /// Every component of `v` is finite.
    pub fn finite3(&self, key: &str, v: &[f64; 3]) -> Result<(), SceneError> {
        if v.iter().all(|c| c.is_finite()) {
            Ok(())
        } else {
            Err(self.invalid(key, format!("must be finite, got {v:?}")))
        }
    }

    /// A box: finite corners, `min` ≤ `max` componentwise.
    pub fn ordered(&self, key: &str, min: &[f64; 3], max: &[f64; 3]) -> Result<(), SceneError> {
        self.finite3(&format!("{key}.min"), min)?;
        self.finite3(&format!("{key}.max"), max)?;
        if (0..3).all(|i| min[i] <= max[i]) {
            Ok(())
        } else {
            Err(self.invalid(
                key,
                format!("min must not exceed max, got min {min:?} and max {max:?}"),
            ))
        }
    }

    /// The path (relative to the scene file) names an existing file.
    pub fn file_exists(&self, key: &str, p: &Path) -> Result<(), SceneError> {
        let full = self.scene.resolve(p);
        if full.is_file() {
            Ok(())
        } else {
            Err(self.invalid(key, format!("no such file: {}", full.display())))
        }
    }
}
