//! What the test binaries share: each area's `main.rs` includes this module, and uses
//! what it needs of it.
#![allow(dead_code)]

pub mod block;
pub mod golden;
pub mod model_stream;
pub mod newton;
pub mod process;
pub mod serve;
pub mod stream;
