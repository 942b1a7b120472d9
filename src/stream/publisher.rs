//! The 30 Hz publisher: takes the newest snapshot, encodes it once, and replaces the
//! shared latest frame that every client's writer picks up.

use std::time::Duration;

use bytes::Bytes;
use palpa_protocol as wire;
use tokio::sync::watch;

use super::scene::{fill_frame, StreamScene};
use super::snapshot::SnapshotReader;

/// Encodes snapshots into frame bytes, reusing its buffers (one per stream).
pub struct FrameEncoder {
    message: wire::ServerMessage,
    buffer: Vec<u8>,
    sequence: u64,
}

impl Default for FrameEncoder {
    fn default() -> Self {
        Self::new()
    }
}

impl FrameEncoder {
    /// An encoder whose first frame has sequence 0.
    pub fn new() -> Self {
        Self {
            message: wire::ServerMessage::Frame(wire::Frame {
                sequence: 0,
                scene_time: 0.0,
                sent_unix_us: 0,
                probe: [0.0; 3],
                proxy: [0.0; 3],
                force: [0.0; 3],
                in_contact: false,
                depth: 0.0,
                normal: [0.0; 3],
                deformation: wire::Deformation::Modal {
                    coordinates: Vec::new(),
                    corrections: Vec::new(),
                },
            }),
            buffer: Vec::new(),
            sequence: 0,
        }
    }

    /// Encodes the newest snapshot of `reader` as the next frame, or explains why the
    /// snapshot does not fit `scene`.
    pub fn encode_next(
        &mut self,
        scene: &StreamScene,
        reader: &mut SnapshotReader,
    ) -> Result<Bytes, String> {
        let (snapshot, _) = reader.latest();
        scene.check(snapshot)?;
        let wire::ServerMessage::Frame(frame) = &mut self.message else {
            unreachable!("the encoder's message is always a frame")
        };
        fill_frame(frame, self.sequence, snapshot);
        self.sequence += 1;
        wire::encode_server_into(&self.message, &mut self.buffer);
        Ok(Bytes::copy_from_slice(&self.buffer))
    }
}

/// Runs the publisher until `shutdown` turns true: every `period` it encodes the newest
/// snapshot and replaces `frames`' value. `send_replace` never waits for a receiver, so
/// no client can slow it down. On shutdown it encodes the newest snapshot once more, so
/// the last thing published before shutdown becomes the final frame.
pub async fn run(
    scene: std::sync::Arc<StreamScene>,
    mut reader: SnapshotReader,
    mut encoder: FrameEncoder,
    frames: watch::Sender<Bytes>,
    period: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut ticker = tokio::time::interval(period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut reported_mismatch = false;
    loop {
        let stopping = tokio::select! {
            _ = ticker.tick() => false,
            _ = shutdown.wait_for(|stop| *stop) => true,
        };
        match encoder.encode_next(&scene, &mut reader) {
            Ok(bytes) => {
                frames.send_replace(bytes);
                reported_mismatch = false;
            }
            Err(why) if !reported_mismatch => {
                tracing::error!("visual snapshot does not fit the streamed scene: {why}");
                reported_mismatch = true;
            }
            Err(_) => {}
        }
        if stopping {
            return;
        }
    }
}
