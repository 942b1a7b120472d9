//! Contact: the god-object proxy, the contact patch and friction, the sphere probe
//! against Hertz and direct solves, sphere replays against goldens, and deep presses.

#[path = "../support/mod.rs"]
mod support;

mod deep_press;
mod patch;
mod proxy;
mod sphere;
mod sphere_replay;
