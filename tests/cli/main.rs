//! The `palpa` binary as a user runs it: its messages, `plot`, `replay` and `precompute`,
//! `serve` (smoke, real-time threads, recorded sessions).

#[path = "../support/mod.rs"]
mod support;

mod hardening;
mod help_docs;
mod messages;
mod plot;
mod replay;
mod serve;
mod serve_bind;
mod serve_realtime;
mod serve_record;
