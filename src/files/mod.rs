//! Files palpa reads (and, beside it, writes): one place that opens every file a user
//! names, refusing special files and bounding sizes.

pub mod read;

pub use read::{check_regular, open_regular, read_bytes, read_text, FileKind, ReadError};
