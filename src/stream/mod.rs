//! Visual stream: axum server with the web viewer and the 30 Hz WebSocket frames.
//!
//! Data flow: the model thread publishes a [`VisualSnapshot`] into a wait-free
//! latest-value slot ([`snapshot_slot`]); the 30 Hz publisher encodes the newest one once
//! into a frame ([`palpa_protocol`]), replaces the shared latest frame and writes it to
//! every client whose socket takes it at once; a busy client's own task sends it the
//! newest frame when its socket is ready, so a slow client loses frames and never
//! delays anyone. Frames carry the residual displacement near the
//! contact as a few nodal forces; the model thread exports each loaded node's
//! compliance column once ([`column_link`]) and every connection sends a client the
//! columns it lacks before the frame that needs them. Authorised viewers' control messages go to the sim
//! device through a bounded [`control_channel`].

mod access;
mod columns;
mod config;
mod connection;
mod control;
mod fan_out;
mod frame_model;
mod listener;
mod log_filter;
pub(crate) mod log_limit;
mod publisher;
mod scene;
mod seats;
mod server;
mod snapshot;
mod state;
mod token;
mod visual;

pub use columns::{column_link, ColumnExporter, ColumnFeed, SurfaceColumn, STORE_CAPACITY};
pub use config::{
    ProbeWorkspace, StreamConfig, CLIENT_CAPACITY, DEFAULT_LOG_LINES_PER_SECOND,
    FRAME_RATE_RANGE_HZ, MAX_CLIENTS, MAX_CONNECTIONS, MAX_MESSAGE_BYTES, MAX_TIMEOUT, MIN_TIMEOUT,
};
pub use connection::TOKEN_GRACE;
pub use fan_out::PublishedFrame;
pub use frame_model::FrameModel;
pub use listener::raise_open_file_limit;
pub use log_filter::without_payloads;
pub use publisher::{FrameEncoder, CORRECTION_TOLERANCE};
pub use scene::{unix_now_us, MeshSurface, StreamRegion, StreamScene, SurfaceModalBasis};
pub use server::StreamServer;
pub use snapshot::{
    control_channel, snapshot_slot, ControlReceiver, ControlSender, ProbeControl,
    SnapshotDeformation, SnapshotReader, SnapshotStylus, SnapshotWriter, VisualSnapshot,
};
pub use token::{
    token_bits, weak_token, FIRST_BACKOFF, MAX_BACKOFF, MIN_TOKEN_BITS, MIN_TOKEN_DISTINCT,
    REFUSALS_PER_CONNECTION,
};
pub use visual::SceneVisual;
