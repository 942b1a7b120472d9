//! Scene files: every shipped scene builds; bad scenes and out-of-bounds values are
//! refused naming the file and key.

#[path = "../support/mod.rs"]
mod support;

mod files;
mod input_bounds;
mod paraview;
