//! palpa wire protocol.
