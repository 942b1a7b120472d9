//! `[view]`: how viewers show the scene (which way is up).

use serde::Deserialize;

use crate::Vec3;

/// A signed coordinate axis for the scene's vertical.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub enum UpAxis {
    /// +x
    #[serde(rename = "x", alias = "+x")]
    X,
    /// −x
    #[serde(rename = "-x")]
    NegX,
    /// +y
    #[serde(rename = "y", alias = "+y")]
    Y,
    /// −y
    #[serde(rename = "-y")]
    NegY,
    /// +z (the default: scene files' usual convention)
    #[default]
    #[serde(rename = "z", alias = "+z")]
    Z,
    /// −z
    #[serde(rename = "-z")]
    NegZ,
}

impl UpAxis {
    /// The unit vector pointing up.
    pub fn vector(self) -> Vec3 {
        match self {
            UpAxis::X => Vec3::x(),
            UpAxis::NegX => -Vec3::x(),
            UpAxis::Y => Vec3::y(),
            UpAxis::NegY => -Vec3::y(),
            UpAxis::Z => Vec3::z(),
            UpAxis::NegZ => -Vec3::z(),
        }
    }
}

/// How viewers show the scene. Every value is checked by its type (an unknown axis is
/// a parse error naming the key), so there is no `validate`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ViewSpec {
    /// The axis that points up in the viewer: `"x"`, `"y"`, `"z"` (default), or one of
    /// them negated (`"-y"`).
    pub up: UpAxis,
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::scene::Scene;
    use crate::Vec3;

    #[test]
    fn up_defaults_to_z_reads_signed_axes_and_names_the_key_when_wrong() {
        let parse = |text: &str| Scene::parse(text, "test.toml", Path::new("."));
        assert_eq!(parse("").unwrap().view.up.vector(), Vec3::z());
        assert_eq!(
            parse("[view]\nup = \"y\"").unwrap().view.up.vector(),
            Vec3::y()
        );
        assert_eq!(
            parse("[view]\nup = \"-x\"").unwrap().view.up.vector(),
            -Vec3::x()
        );
        let e = parse("[view]\nup = \"w\"").unwrap_err().to_string();
        assert!(
            e.contains("test.toml") && e.contains("up") && e.contains("line 2"),
            "{e}"
        );
        let e = parse("[view]\nvertical = \"y\"").unwrap_err().to_string();
        assert!(e.contains("vertical"), "{e}");
        let bunny = Scene::load(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scenes/bunny.toml"
        )))
        .unwrap();
        assert_eq!(bunny.view.up.vector(), Vec3::y(), "the bunny stands on +y");
    }
}
