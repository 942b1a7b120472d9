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
