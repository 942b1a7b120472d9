//! The tissue models: the modal runtime, the condensed FEM, the large-strain statics,
//! reduced model and runtime, and the virtual indentation test.

#[path = "../support/mod.rs"]
mod support;

mod condensed;
mod indent;
mod map;
mod modal_runtime;
mod nonlinear_brisk;
mod nonlinear_reduced;
mod nonlinear_runtime;
mod nonlinear_statics;
mod reduced_press;

/// The shipped default scene's TOML with 5 mm cells under the probe instead of 3.3 mm: the
/// comparisons that use it are of the reduction, not of the mesh (docs/benchmarks.md).
fn default_scene_with_5mm_cells() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/default.toml");
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.contains("fine = 0.0033333333"),
        "the default mesh changed"
    );
    text.replace("fine = 0.0033333333", "fine = 0.005")
}
