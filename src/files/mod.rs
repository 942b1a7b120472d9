//! Files palpa writes (and, beside it, reads): one place that knows how to create a file
//! without following a link or landing on a special file, and how to replace one so a
//! crash leaves the old or the new file, never a half-written one.

pub mod write;

pub use write::{split, write_file_atomic, OutputDir, WriteError};
