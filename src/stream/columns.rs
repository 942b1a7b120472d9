//! Residual columns: how the surface moves per unit force at a mesh node. The model
//! thread exports a node's column once it is known ([`ColumnExporter`]); the publisher
//! keeps a bounded store of them, encoded once ([`ColumnStore`]); each connection sends
//! a client the columns its frames need and tracks what that client holds
//! ([`ClientColumns`]).

use std::collections::HashMap;

use bytes::Bytes;
use crossbeam::channel::{Receiver, Sender};
use palpa_protocol as wire;

use super::scene::SurfaceModalBasis;
use crate::{Mat3, Vec3};

/// One mesh node's static compliance K⁻¹ over the surface (m/N): `(vertex, block)` for
/// every surface vertex that moves, block = displacement of the vertex per unit force
/// at the node; for a modal scene also the node's static modal response.
#[derive(Clone, Debug, PartialEq)]
pub struct SurfaceColumn {
    /// Mesh node id.
    pub node: u32,
    /// Surface vertex index and its 3×3 block of K⁻¹ (m/N).
    pub entries: Vec<(u32, Mat3)>,
    /// Per mode j, φ_j(node) / λ_j: the modal coordinate j per unit force along x, y, z
    /// at the node (1/N in the basis' units); empty without a modal basis. The stream
    /// sends K⁻¹ − Φ Λ⁻¹ Φᵀ (what the modes miss, local to the node) and moves the
    /// modal part into the frame's coordinates.
    pub static_modes: Vec<Vec3>,
}

/// Creates the link between the model thread (exporter) and the stream (feed).
pub fn column_link() -> (ColumnExporter, ColumnFeed) {
    let (columns_tx, columns_rx) = crossbeam::channel::unbounded();
    let (forgot_tx, forgot_rx) = crossbeam::channel::unbounded();
    (
        ColumnExporter {
            columns: columns_tx,
            forgotten: forgot_rx,
        },
        ColumnFeed {
            columns: columns_rx,
            forgotten: forgot_tx,
        },
    )
}

/// Model-thread end: sends columns, hears which ones the stream dropped (so they are
/// exported again when needed). Never blocks.
pub struct ColumnExporter {
    columns: Sender<SurfaceColumn>,
    forgotten: Receiver<u32>,
}

impl ColumnExporter {
    /// Hands `column` to the stream; false when the stream is gone.
    pub fn export(&self, column: SurfaceColumn) -> bool {
        self.columns.send(column).is_ok()
    }

    /// Nodes whose columns the stream dropped since the last call.
    pub fn forgotten(&self) -> impl Iterator<Item = u32> + '_ {
        self.forgotten.try_iter()
    }
}

/// Stream end of the column link.
pub struct ColumnFeed {
    columns: Receiver<SurfaceColumn>,
    forgotten: Sender<u32>,
}

/// Columns the publisher keeps by default (each ≈ 40 bytes per moving surface vertex).
pub const STORE_CAPACITY: usize = 512;

/// Residual compliance blocks smaller than this are not sent (m/N, Frobenius norm): at
/// the scenes' 10 N force cap a dropped block moves its vertex by at most 0.1 µm, and
/// the frame's corrections cover whatever the dropped blocks add up to beyond the
/// correction tolerance. (On the 5 mm block it drops only the fixed vertices' zero
/// blocks: every other residual block there exceeds 10⁻⁵ m/N.)
pub const COLUMN_FLOOR: f64 = 1e-8;

/// A column ready to send: the encoded `ResidualColumn`, the compliance a client
/// reconstructs with (its `i16` counts times its unit, m/N), and the node's static modal
/// response.
pub(crate) struct StoredColumn {
    pub message: Bytes,
    pub entries: Vec<(u32, [f32; 9])>,
    /// The column's unit (m/N per count): a client's block is within half of it of
    /// the server's, entry by entry.
    pub unit: f64,
    pub static_modes: Vec<Vec3>,
    /// Whether blocks other than zero ones were dropped ([`COLUMN_FLOOR`], or all
    /// counts zero).
    pub truncated: bool,
    last_used: u64,
}

/// The publisher's columns, keyed by mesh node, least recently used evicted beyond
/// its capacity (the model thread hears of it and exports the column again if a load
/// needs it).
pub(crate) struct ColumnStore {
    feed: Option<ColumnFeed>,
    columns: HashMap<u32, StoredColumn>,
    capacity: usize,
    clock: u64,
}

impl ColumnStore {
    /// A store fed by `feed` (none: no columns, every residual goes as corrections).
    pub fn new(feed: Option<ColumnFeed>, capacity: usize) -> Self {
        Self {
            feed,
            columns: HashMap::new(),
            capacity: capacity.max(1),
            clock: 0,
        }
    }

    /// Takes every column the model thread exported so far; `basis` is the scene's
    /// surface modal basis (what a column's static modal part is subtracted with).
    pub fn absorb(&mut self, basis: Option<&SurfaceModalBasis>) {
        let Some(feed) = &self.feed else { return };
        for column in feed.columns.try_iter() {
            let stored = quantised(&column, basis);
            self.columns.insert(
                column.node,
                StoredColumn {
                    last_used: self.clock,
                    ..stored
                },
            );
        }
    }

    /// Marks the start of a frame (what `use_column` stamps and eviction spares).
    pub fn begin_frame(&mut self) {
        self.clock += 1;
    }

    /// The column of `node` for this frame, if stored.
    pub fn use_column(&mut self, node: u32) -> Option<&StoredColumn> {
        let clock = self.clock;
        self.columns.get_mut(&node).map(|c| {
            c.last_used = clock;
            &*c
        })
    }

    /// Drops the least recently used columns beyond the capacity (never one used by
    /// this frame), telling the model thread.
    pub fn evict(&mut self) {
        while self.columns.len() > self.capacity {
            let Some((&node, _)) = self
                .columns
                .iter()
                .filter(|(_, c)| c.last_used < self.clock)
                .min_by_key(|(_, c)| c.last_used)
            else {
                return;
            };
            self.columns.remove(&node);
            if let Some(feed) = &self.feed {
                let _ = feed.forgotten.send(node);
            }
        }
    }
}

/// What one client holds: the nodes whose columns it was sent and not told to forget,
/// least recently used forgotten first beyond the capacity.
pub(crate) struct ClientColumns {
    held: Vec<(u32, u64)>,
    capacity: usize,
    clock: u64,
}

impl ClientColumns {
    /// A client that holds nothing and is asked to hold at most `capacity` columns.
    pub fn new(capacity: usize) -> Self {
        Self {
            held: Vec::with_capacity(capacity),
            capacity: capacity.max(1),
            clock: 0,
        }
    }

    /// Plans the one-off messages before a frame whose loads need `needed` (node,
    /// encoded column): the `ForgetColumns` to send first (if the client would hold too
    /// many) and the columns it lacks, in order. Records them as sent.
    pub fn plan(&mut self, needed: &[(u32, Bytes)]) -> (Option<Bytes>, Vec<Bytes>) {
        self.clock += 1;
        let clock = self.clock;
        let mut missing = Vec::new();
        for (node, message) in needed {
            match self.held.iter_mut().find(|(n, _)| n == node) {
                Some(held) => held.1 = clock,
                None => missing.push((*node, message.clone())),
            }
        }
        let mut forget = Vec::new();
        while self.held.len() + missing.len() > self.capacity {
            let Some(i) = (0..self.held.len())
                .filter(|&i| self.held[i].1 < clock)
                .min_by_key(|&i| self.held[i].1)
            else {
                break;
            };
            forget.push(self.held.swap_remove(i).0);
        }
        let forget = (!forget.is_empty()).then(|| {
            Bytes::from(wire::encode_server(&wire::ServerMessage::ForgetColumns(
                wire::ForgetColumns { nodes: forget },
            )))
        });
        self.held
            .extend(missing.iter().map(|(node, _)| (*node, clock)));
        (forget, missing.into_iter().map(|(_, m)| m).collect())
    }
}

/// The blocks of K⁻¹ − Φ Λ⁻¹ Φᵀ of `column` at every surface vertex of `basis` (m/N),
/// or its K⁻¹ blocks without a basis or static modal response.
fn residual_blocks(column: &SurfaceColumn, basis: Option<&SurfaceModalBasis>) -> Vec<(u32, Mat3)> {
    let Some(basis) =
        basis.filter(|b| b.mode_count == column.static_modes.len() && b.mode_count > 0)
    else {
        return column.entries.clone();
    };
    let k = basis.mode_count;
    let n = basis.vectors.len() / k;
    let mut blocks = vec![Mat3::zeros(); n];
    for (v, block) in &column.entries {
        if let Some(b) = blocks.get_mut(*v as usize) {
            *b = *block;
        }
    }
    for (v, b) in blocks.iter_mut().enumerate() {
        for (phi, s) in basis.vectors[v * k..(v + 1) * k]
            .iter()
            .zip(&column.static_modes)
        {
            *b -= phi * s.transpose();
        }
    }
    (0..).zip(blocks).collect()
}

/// The residual blocks of `column` quantised for the wire: one unit for the whole
/// column (its largest entry is 32767 counts), blocks below [`COLUMN_FLOOR`] or of zero
/// counts dropped.
fn quantised(column: &SurfaceColumn, basis: Option<&SurfaceModalBasis>) -> StoredColumn {
    let blocks = residual_blocks(column, basis);
    let nonzero = blocks.iter().filter(|(_, b)| *b != Mat3::zeros()).count();
    let largest = blocks.iter().map(|(_, b)| b.amax()).fold(0.0, f64::max);
    let unit = wire::quantum_for(largest);
    let wire_entries: Vec<wire::ColumnEntry> = blocks
        .iter()
        .filter(|(_, block)| block.norm() > COLUMN_FLOOR)
        .map(|(vertex, block)| wire::ColumnEntry {
            vertex: *vertex,
            compliance: std::array::from_fn(|i| wire::quantise(block[(i / 3, i % 3)], unit)),
        })
        .filter(|e| e.compliance != [0; 9])
        .collect();
    let entries = wire_entries
        .iter()
        .map(|e| (e.vertex, e.block(unit)))
        .collect::<Vec<_>>();
    let truncated = entries.len() < nonzero;
    let message = wire::encode_server(&wire::ServerMessage::ResidualColumn(wire::ResidualColumn {
        node: column.node,
        unit,
        entries: wire_entries,
    }));
    StoredColumn {
        message: Bytes::from(message),
        entries,
        unit: unit as f64,
        static_modes: column.static_modes.clone(),
        truncated,
        last_used: 0,
    }
}

/// The response of `entries` (f32 compliance, m/N) to `force` (f32, N), added to `out`
/// in f64 (m): what a client adds from that column.
pub(crate) fn add_response(entries: &[(u32, [f32; 9])], force: [f32; 3], out: &mut [Vec3]) {
    let f = Vec3::new(force[0] as f64, force[1] as f64, force[2] as f64);
    for (v, c) in entries {
        if let Some(o) = out.get_mut(*v as usize) {
            for a in 0..3 {
                o[a] +=
                    c[3 * a] as f64 * f.x + c[3 * a + 1] as f64 * f.y + c[3 * a + 2] as f64 * f.z;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 3×3 block in f32, row-major.
    fn f32_block(m: &Mat3) -> [f32; 9] {
        std::array::from_fn(|i| m[(i / 3, i % 3)] as f32)
    }

    fn needed(nodes: &[u32]) -> Vec<(u32, Bytes)> {
        nodes
            .iter()
            .map(|&n| (n, Bytes::from(n.to_le_bytes().to_vec())))
            .collect()
    }

    fn forgotten(message: Option<Bytes>) -> Vec<u32> {
        match message.map(|m| wire::decode_server(&m).unwrap()) {
            Some(wire::ServerMessage::ForgetColumns(f)) => f.nodes,
            None => Vec::new(),
            Some(other) => panic!("not a ForgetColumns: {other:?}"),
        }
    }

    #[test]
    fn a_client_gets_each_column_once_and_forgets_the_least_recently_used() {
        let mut client = ClientColumns::new(3);
        let (forget, sent) = client.plan(&needed(&[1, 2]));
        assert!(forget.is_none());
        assert_eq!(
            sent,
            vec![
                Bytes::from(1u32.to_le_bytes().to_vec()),
                Bytes::from(2u32.to_le_bytes().to_vec())
            ]
        );
        // Held columns are not sent again.
        let (forget, sent) = client.plan(&needed(&[2, 3]));
        assert!(forget.is_none() && sent.len() == 1, "only node 3 is new");
        // Node 1 was used least recently; 3 and 4 are needed now, so 1 and 2 go.
        let (forget, sent) = client.plan(&needed(&[3, 4, 5]));
        assert_eq!(forgotten(forget), vec![1, 2]);
        assert_eq!(sent.len(), 2);
        // A forgotten column is sent again when a frame needs it.
        let (forget, sent) = client.plan(&needed(&[1]));
        assert_eq!(forgotten(forget).len(), 1);
        assert_eq!(sent, vec![Bytes::from(1u32.to_le_bytes().to_vec())]);
    }

    #[test]
    fn the_store_evicts_unused_columns_and_tells_the_model_thread() {
        let (exporter, feed) = column_link();
        let mut store = ColumnStore::new(Some(feed), 2);
        for node in 0..3 {
            exporter.export(SurfaceColumn {
                node,
                entries: vec![(0, Mat3::identity() * 1e-3)],
                static_modes: Vec::new(),
            });
        }
        store.absorb(None);
        store.begin_frame();
        assert!(store.use_column(0).is_some() && store.use_column(2).is_some());
        store.evict();
        assert!(store.use_column(1).is_none(), "the unused column went");
        assert_eq!(exporter.forgotten().collect::<Vec<_>>(), vec![1]);
        let kept = store.use_column(0).unwrap();
        assert_eq!(kept.entries.len(), 1);
        let (vertex, block) = kept.entries[0];
        assert_eq!(vertex, 0);
        let want = f32_block(&(Mat3::identity() * 1e-3));
        for (got, want) in block.iter().zip(want) {
            assert!(
                (got - want).abs() as f64 <= 0.5 * kept.unit,
                "{got} vs {want}"
            );
        }
        assert!((kept.unit - 1e-3 / 32767.0).abs() < 1e-12, "{}", kept.unit);
        assert!(!kept.truncated);
    }
}
