//! Visual stream: axum server with the web viewer and the 30 Hz WebSocket frames.
//!
//! Data flow: the model thread publishes a [`VisualSnapshot`] into a wait-free
//! latest-value slot ([`snapshot_slot`]); the 30 Hz publisher encodes the newest one once
//! into a frame ([`palpa_protocol`]) and replaces the shared latest frame; each client's
//! writer sends whatever is newest when its socket is ready, so a slow client loses
//! frames and never delays anyone. Authorised viewers' control messages go to the sim
//! device through a bounded [`control_channel`].

mod connection;
mod publisher;
mod scene;
mod server;
mod snapshot;

pub use publisher::FrameEncoder;
pub use scene::{fill_frame, unix_now_us, MeshSurface, StreamScene, SurfaceModalBasis};
pub use server::{StreamConfig, StreamServer};
pub use snapshot::{
    control_channel, snapshot_slot, ControlReceiver, ControlSender, ProbeControl,
    SnapshotDeformation, SnapshotReader, SnapshotWriter, VisualSnapshot,
};
