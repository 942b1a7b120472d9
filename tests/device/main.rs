//! Devices: HID profiles over the in-memory transport, kinematic arms, the Haply link, the
//! vendor SDKs through stand-in libraries, trajectory files, and `palpa record`.

#[path = "../support/mod.rs"]
mod support;

mod check;
mod check_cli;
mod haply;
mod hid;
mod kinematic;
mod record;
mod safety;
mod standin_arm;
mod trajectory;
mod vendor_sdk;
