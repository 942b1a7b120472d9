//! Contact: the god-object proxy, the contact patch and friction, the sphere probe
//! against Hertz and direct solves, a held sphere's fixed point,
//! sphere replays against goldens, and deep presses.

#[path = "../support/mod.rs"]
mod support;

mod deep_press;
mod held;
mod patch;
mod proxy;
mod sphere;
mod sphere_replay;
mod teleport;

/// One precompute cache for every test of this binary: the default scene's modal basis
/// is computed once per machine, not once per test (each took tens of seconds).
fn cache_dir() -> std::path::PathBuf {
    std::env::temp_dir().join("palpa-contact-tests")
}
