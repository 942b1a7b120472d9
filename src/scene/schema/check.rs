//! Range checks for scene values; every error names the scene file, the key and the
//! value found.

use std::path::Path;

use super::{Scene, SceneError};
use crate::files::FileKind;

/// Largest coordinate, length or scale factor a scene may give (m, or a ratio): well
/// past any organ, small enough that products of a few of them stay finite.
pub const MAX_COORDINATE: f64 = 1e6;

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

    /// `v` lies in [`min`, `max`].
    pub fn within(&self, key: &str, v: f64, min: f64, max: f64) -> Result<(), SceneError> {
        if (min..=max).contains(&v) {
            Ok(())
        } else {
            Err(self.invalid(
                key,
                format!("must lie in [{min}, {max}], got {}", number(v)),
            ))
        }
    }

    /// `v` lies in (0, `max`].
    pub fn positive_at_most(&self, key: &str, v: f64, max: f64) -> Result<(), SceneError> {
        if v > 0.0 && v <= max {
            Ok(())
        } else {
            Err(self.invalid(key, format!("must lie in (0, {max:e}], got {}", number(v))))
        }
    }

    /// `v` lies in [0, `max`].
    pub fn non_negative_at_most(&self, key: &str, v: f64, max: f64) -> Result<(), SceneError> {
        if (0.0..=max).contains(&v) {
            Ok(())
        } else {
            Err(self.invalid(key, format!("must lie in [0, {max:e}], got {}", number(v))))
        }
    }

    /// A count `n` in [`min`, `max`].
    pub fn count(&self, key: &str, n: usize, min: usize, max: usize) -> Result<(), SceneError> {
        if (min..=max).contains(&n) {
            Ok(())
        } else {
            Err(self.invalid(key, format!("must lie in [{min}, {max}], got {n}")))
        }
    }

    /// Every component of `v` is finite and at most `max` in magnitude.
    pub fn bounded3(&self, key: &str, v: &[f64; 3], max: f64) -> Result<(), SceneError> {
        if v.iter().all(|c| c.abs() <= max) {
            Ok(())
        } else {
            Err(self.invalid(
                key,
                format!("must be finite and within ±{max:e}, got {v:?}"),
            ))
        }
    }

    /// Text people are shown, of at most `max` characters: no control, bidirectional
    /// or invisible characters ([`palpa_protocol::text::check_name`]).
    pub fn text(&self, key: &str, v: &str, max: usize) -> Result<(), SceneError> {
        palpa_protocol::text::check_name(v, max).map_err(|why| self.invalid(key, why))
    }

    /// A box: finite corners, `min` ≤ `max` componentwise.
    pub fn ordered(&self, key: &str, min: &[f64; 3], max: &[f64; 3]) -> Result<(), SceneError> {
        self.bounded3(&format!("{key}.min"), min, MAX_COORDINATE)?;
        self.bounded3(&format!("{key}.max"), max, MAX_COORDINATE)?;
        if (0..3).all(|i| min[i] <= max[i]) {
            Ok(())
        } else {
            Err(self.invalid(
                key,
                format!("min must not exceed max, got min {min:?} and max {max:?}"),
            ))
        }
    }

    /// The path (relative to the scene file) names a regular file within `kind`'s size
    /// limit; otherwise the error says what it is (missing, a FIFO, a device …).
    pub fn file_exists(&self, key: &str, p: &Path, kind: FileKind) -> Result<(), SceneError> {
        let full = self.scene.resolve(p);
        crate::files::check_regular(&full, kind)
            .map(|_| ())
            .map_err(|e| self.invalid(key, e.to_string()))
    }
}

/// A value as a user would write it: plain for ordinary magnitudes, in exponent form for
/// tiny or huge ones (so 1e-300 is not printed with 300 zeros).
fn number(v: f64) -> String {
    if v == 0.0 || !v.is_finite() || (1e-4..1e15).contains(&v.abs()) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}
