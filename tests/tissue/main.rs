//! The tissue models: the modal runtime, the condensed FEM, the large-strain statics,
//! reduced model and runtime, and the virtual indentation test.

#[path = "../support/mod.rs"]
mod support;

mod condensed;
mod indent;
mod modal_runtime;
mod nonlinear_brisk;
mod nonlinear_reduced;
mod nonlinear_runtime;
mod nonlinear_statics;
