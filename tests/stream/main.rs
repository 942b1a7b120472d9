//! The visual stream: real servers and WebSocket clients on loopback, a real browser,
//! hostile input and floods, and the frames of a running tissue model.

#[path = "../support/mod.rs"]
mod support;

mod accept_errors;
mod browser;
mod e2e;
mod hardening;
mod load;
mod model_e2e;
mod safety;
mod security;
mod stylus;
mod visual;
