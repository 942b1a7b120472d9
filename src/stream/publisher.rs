//! The 30 Hz publisher: takes the newest snapshot, encodes it once, and replaces the
//! shared latest frame that every client's writer picks up, together with the residual
//! columns that frame's loads need.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use palpa_protocol as wire;
use tokio::sync::watch;

use super::columns::{add_response, ColumnFeed, ColumnStore, STORE_CAPACITY};
use super::config::CLIENT_CAPACITY;
use super::fan_out::{Audience, PublishedFrame};
use super::scene::{f32x3, f64x3, unix_now_us, StreamScene, SurfaceModalBasis};
use super::snapshot::{SnapshotDeformation, SnapshotReader, VisualSnapshot};
use crate::Vec3;

/// Residual displacement a frame may leave to its loads' columns without a correction
/// (m): the columns travel in f32, so what they miss is far below this, and clients
/// rebuild the server's surface to within it.
pub const CORRECTION_TOLERANCE: f64 = 1e-6;

/// Encodes snapshots into frames, reusing its buffers (one per stream), and keeps the
/// residual columns the model thread exported.
pub struct FrameEncoder {
    message: wire::ServerMessage,
    buffer: Vec<u8>,
    sequence: u64,
    store: ColumnStore,
    /// Scratch per surface vertex (m): what the frame's loads reproduce of the field.
    predicted: Vec<Vec3>,
    /// Scratch per mode: the loads' static modal coordinates moved into the frame.
    shift: Vec<f64>,
}

impl Default for FrameEncoder {
    fn default() -> Self {
        Self::new(None)
    }
}

impl FrameEncoder {
    /// An encoder whose first frame has sequence 0, with the columns of `columns` (none:
    /// every residual displacement goes as corrections).
    pub fn new(columns: Option<ColumnFeed>) -> Self {
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
                stylus: wire::Stylus::NONE,
                deformation: wire::Deformation::Positions {
                    positions: Vec::new(),
                },
            }),
            buffer: Vec::new(),
            sequence: 0,
            store: ColumnStore::new(columns, STORE_CAPACITY),
            predicted: Vec::new(),
            shift: Vec::new(),
        }
    }

    /// Encodes the newest snapshot of `reader` as the next frame, or explains why the
    /// snapshot does not fit `scene`.
    pub fn encode_next(
        &mut self,
        scene: &StreamScene,
        reader: &mut SnapshotReader,
    ) -> Result<PublishedFrame, String> {
        let (snapshot, _) = reader.latest();
        scene.check(snapshot)?;
        // After the snapshot: the model thread exports a column before it publishes a
        // snapshot whose loads need it.
        self.store.absorb(scene.modal_basis.as_ref());
        self.store.begin_frame();
        let wire::ServerMessage::Frame(frame) = &mut self.message else {
            unreachable!("the encoder's message is always a frame")
        };
        fill_header(frame, self.sequence, snapshot);
        let mut columns = Vec::new();
        match &snapshot.deformation {
            SnapshotDeformation::Positions(p) => {
                if !matches!(frame.deformation, wire::Deformation::Positions { .. }) {
                    frame.deformation = wire::Deformation::Positions {
                        positions: Vec::new(),
                    };
                }
                let wire::Deformation::Positions { positions } = &mut frame.deformation else {
                    unreachable!("set to positions above")
                };
                positions.clear();
                positions.extend(p.iter().map(f32x3));
            }
            SnapshotDeformation::Superposed {
                coordinates,
                loads,
                field,
                field_from_loads,
            } => {
                if !matches!(frame.deformation, wire::Deformation::Superposed { .. }) {
                    frame.deformation = wire::Deformation::Superposed {
                        coordinates: Vec::new(),
                        loads: Vec::new(),
                        correction_unit: 1.0,
                        corrections: Vec::new(),
                    };
                }
                let wire::Deformation::Superposed {
                    coordinates: q,
                    loads: wire_loads,
                    correction_unit,
                    corrections,
                } = &mut frame.deformation
                else {
                    unreachable!("set to superposed above")
                };
                wire_loads.clear();
                self.predicted.clear();
                self.predicted.resize(field.len(), Vec3::zeros());
                // The static modal part of the loads sent: it goes into the coordinates,
                // their columns carry the rest.
                self.shift.clear();
                self.shift.resize(coordinates.len(), 0.0);
                let mut truncated = false;
                // What the columns' quantisation may move a vertex by, at most (m).
                let mut quantisation = 0.0;
                for (node, force) in loads {
                    if columns.len() == CLIENT_CAPACITY {
                        break;
                    }
                    let Some(column) = self.store.use_column(*node) else {
                        continue;
                    };
                    truncated |= column.truncated;
                    let force = f32x3(force);
                    let f = Vec3::new(force[0] as f64, force[1] as f64, force[2] as f64);
                    quantisation += 0.5 * column.unit * f.abs().sum();
                    for (dq, s) in self.shift.iter_mut().zip(&column.static_modes) {
                        *dq += s.dot(&f);
                    }
                    wire_loads.push(wire::NodalLoad { node: *node, force });
                    columns.push((*node, column.message.clone()));
                }
                corrections.clear();
                *correction_unit = 1.0;
                // When the field is exactly the loads' K⁻¹ response, every load went
                // with its column and the columns' quantisation cannot add up to half
                // the tolerance, the columns and the shifted coordinates rebuild it
                // within it: nothing to check. Otherwise rebuild it as a client will and
                // correct where that misses.
                let exact = *field_from_loads
                    && wire_loads.len() == loads.len()
                    && !truncated
                    && quantisation < 0.5 * CORRECTION_TOLERANCE;
                if !exact {
                    for load in wire_loads.iter() {
                        if let Some(column) = self.store.use_column(load.node) {
                            add_response(&column.entries, load.force, &mut self.predicted);
                        }
                    }
                    if let Some(basis) = scene.modal_basis.as_ref() {
                        add_modal(basis, &self.shift, &mut self.predicted);
                    }
                    for (p, f) in self.predicted.iter_mut().zip(field.iter()) {
                        *p = f - *p;
                    }
                    let missed = |d: &Vec3| d.norm() > CORRECTION_TOLERANCE;
                    let largest = self.predicted.iter().filter(|d| missed(d)).map(Vec3::amax);
                    let unit = wire::quantum_for(largest.fold(0.0, f64::max));
                    *correction_unit = unit;
                    corrections.extend((0..).zip(&self.predicted).filter(|(_, d)| missed(d)).map(
                        |(vertex, d)| wire::VertexCorrection {
                            vertex,
                            displacement: [d.x, d.y, d.z].map(|x| wire::quantise(x, unit)),
                        },
                    ));
                }
                q.clear();
                q.extend(
                    coordinates
                        .iter()
                        .zip(&self.shift)
                        .map(|(&x, dq)| (x + dq) as f32),
                );
            }
        }
        self.store.evict();
        self.sequence += 1;
        wire::encode_server_into(&self.message, &mut self.buffer);
        Ok(PublishedFrame {
            frame: Bytes::copy_from_slice(&self.buffer),
            columns: columns.into(),
        })
    }
}

/// Adds Φ·`shift` at every surface vertex of `basis` to `out` (m); nothing when the
/// shift is all zero.
fn add_modal(basis: &SurfaceModalBasis, shift: &[f64], out: &mut [Vec3]) {
    let k = basis.mode_count;
    if k == 0 || shift.len() != k || shift.iter().all(|&s| s == 0.0) {
        return;
    }
    for (o, row) in out.iter_mut().zip(basis.vectors.chunks_exact(k)) {
        for (phi, s) in row.iter().zip(shift) {
            *o += phi * *s;
        }
    }
}

/// Writes everything of `snapshot` but the deformation into `frame`.
fn fill_header(frame: &mut wire::Frame, sequence: u64, snapshot: &VisualSnapshot) {
    frame.sequence = sequence;
    frame.scene_time = snapshot.time;
    frame.sent_unix_us = unix_now_us();
    frame.probe = f64x3(&snapshot.probe);
    frame.proxy = f64x3(&snapshot.proxy);
    frame.force = f64x3(&snapshot.force);
    frame.in_contact = snapshot.in_contact;
    frame.depth = snapshot.depth;
    frame.normal = f64x3(&snapshot.normal);
    let stylus = &snapshot.stylus;
    frame.stylus = wire::Stylus {
        orientation: stylus.orientation.map(|q| {
            let c = q.coords;
            [c.x as f32, c.y as f32, c.z as f32, c.w as f32]
        }),
        buttons: stylus.buttons,
        gripper: stylus.gripper.map(|g| g as f32),
    };
}

/// Runs the publisher until `shutdown` turns true: every `period` it encodes the newest
/// snapshot, replaces `frames`' value and offers the frame to `audience`. Neither waits
/// for a client, so no client can slow it down. On shutdown it encodes the newest
/// snapshot once more, so the last thing published before shutdown becomes the final
/// frame.
pub async fn run(
    scene: std::sync::Arc<StreamScene>,
    mut reader: SnapshotReader,
    mut encoder: FrameEncoder,
    frames: watch::Sender<PublishedFrame>,
    audience: Arc<Audience>,
    period: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut members = Vec::new();
    let mut ticker = tokio::time::interval(period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut reported_mismatch = false;
    loop {
        let stopping = tokio::select! {
            _ = ticker.tick() => false,
            _ = shutdown.wait_for(|stop| *stop) => true,
        };
        match encoder.encode_next(&scene, &mut reader) {
            Ok(published) => {
                frames.send_replace(published.clone());
                // The writes are non-blocking; more than tokio's cooperative budget of
                // them must not read as sockets that would block.
                tokio::task::unconstrained(async {
                    audience.deliver(&published, &mut members);
                })
                .await;
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
