//! Rust client of the palpa visual stream.
