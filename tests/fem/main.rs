//! Mesh and FEM: readers and generators, assembly and the sparse factor, the modal
//! precompute and its cache.

#[path = "../support/mod.rs"]
mod support;

mod assembly;
mod mesh;
mod modal_cache;
mod modal_precompute;
