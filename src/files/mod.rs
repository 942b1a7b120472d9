//! Files palpa reads and writes: one place that opens every file a user names (refusing
//! special files and bounding sizes), and one that creates a file without following a
//! link or landing on a special file, and replaces one so a crash leaves the old or the
//! new file, never a half-written one.

pub mod read;
pub mod write;

pub use read::{check_regular, open_regular, read_bytes, read_text, FileKind, ReadError};
pub use write::{split, write_file_atomic, OutputDir, WriteError};
