//! Contact: the god-object proxy, the contact patch and friction, the sphere probe
//! against Hertz and direct solves, a held sphere's fixed point, the lump against a
//! converged reference, sphere replays against goldens, and deep presses.

#[path = "../support/mod.rs"]
mod support;

mod deep_press;
mod held;
mod lump;
mod patch;
mod proxy;
mod sphere;
mod sphere_replay;
