//! palpa wire protocol: the messages of the visual stream and their one encoding.
//!
//! Every WebSocket binary message is exactly one [`ServerMessage`] (server → client) or one
//! [`ClientMessage`] (client → server), encoded with bincode 2.0.1 in the fixed
//! configuration [`Config`]: fixed-width little-endian integers, `u32` enum tags, `u64`
//! lengths. `SPEC.md` beside this crate gives the layout byte by byte; the vectors in
//! `vectors/` pin it.
//!
//! Units are SI: positions in m, forces in N, times in s.

use serde::{Deserialize, Serialize};

pub mod text;

/// Version of the wire format; a client refuses a [`ServerHello`] with another version.
pub const PROTOCOL_VERSION: u32 = 6;

/// Largest server → client message a decoder accepts (bytes). A scene init for a
/// 100k-vertex surface with 40 modes is about 50 MB; anything larger is refused.
pub const MAX_SERVER_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// Largest client → server message the server accepts (bytes). Control messages are a
/// few dozen bytes; the limit leaves room for a long token only.
pub const MAX_CLIENT_MESSAGE_BYTES: usize = 4096;

/// The one bincode configuration of the protocol, with a decode limit in bytes.
pub type Config<const LIMIT: usize> = bincode::config::Configuration<
    bincode::config::LittleEndian,
    bincode::config::Fixint,
    bincode::config::Limit<LIMIT>,
>;

/// The configuration for server → client messages.
pub const SERVER_CONFIG: Config<MAX_SERVER_MESSAGE_BYTES> = bincode::config::standard()
    .with_little_endian()
    .with_fixed_int_encoding()
    .with_limit::<MAX_SERVER_MESSAGE_BYTES>();

/// The configuration for client → server messages.
pub const CLIENT_CONFIG: Config<MAX_CLIENT_MESSAGE_BYTES> = bincode::config::standard()
    .with_little_endian()
    .with_fixed_int_encoding()
    .with_limit::<MAX_CLIENT_MESSAGE_BYTES>();

/// A message from the server to a viewer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ServerMessage {
    /// Tag 0. First message on every connection.
    Hello(ServerHello),
    /// Tag 1. Second message: the surface and, for modal scenes, the modal basis.
    SceneInit(SceneInit),
    /// Tag 2. The tissue state, 30 times a second.
    Frame(Frame),
    /// Tag 3. Timing statistics of the 1 kHz haptic loop, about once a second.
    HapticStats(HapticStats),
    /// Tag 4. The server is closing this connection, and why.
    Error(ErrorMessage),
    /// Tag 5. The answer to a [`Control`] whose token was refused (the connection stays
    /// open, read-only) or to a [`ControlCommand::CheckToken`].
    ControlStatus(ControlStatus),
    /// Tag 6. One node's compliance column over the surface, sent once before the first
    /// frame whose loads name that node; the client keeps it until told to forget it.
    ResidualColumn(ResidualColumn),
    /// Tag 7. Columns the client may drop: no later frame names these nodes until their
    /// column is sent again.
    ForgetColumns(ForgetColumns),
    /// Tag 8. What the safety filter does to each device's force: its state now, its
    /// counts since start, and its latest fade with the reason; within 50 ms of a change.
    Safety(SafetyReport),
    /// Tag 9. Something the user should know that is not a frame (a recording ended).
    Notice(Notice),
}

/// A message from a viewer to the server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ClientMessage {
    /// Tag 0. Drive the virtual probe; needs the server's control token.
    Control(Control),
}

/// What a client needs to know before the scene arrives.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerHello {
    /// [`PROTOCOL_VERSION`] of the server.
    pub protocol_version: u32,
    /// Human-readable scene name (e.g. `"bunny"`).
    pub scene_name: String,
    /// Rate of [`Frame`]s (Hz).
    pub frame_rate_hz: f32,
    /// Rate of the model thread (Hz).
    pub model_rate_hz: f32,
    /// Rate of the haptic loop (Hz).
    pub haptic_rate_hz: f32,
    /// Units of every quantity on the wire.
    pub units: Units,
    /// Whether the server accepts [`Control`] messages (with the token) at all.
    pub control_allowed: bool,
}

/// Unit names of the quantities on the wire (always SI: `"m"`, `"N"`, `"s"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Units {
    /// Unit of positions and displacements.
    pub length: String,
    /// Unit of forces.
    pub force: String,
    /// Unit of times.
    pub time: String,
}

impl Units {
    /// SI units: m, N, s.
    pub fn si() -> Self {
        Self {
            length: "m".into(),
            force: "N".into(),
            time: "s".into(),
        }
    }
}

/// The tissue surface, sent once per connection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SceneInit {
    /// Surface triangles as indices into `rest_positions`, counter-clockwise seen from
    /// outside (outward normals).
    pub triangles: Vec<[u32; 3]>,
    /// Rest position of every surface vertex (m).
    pub rest_positions: Vec<[f32; 3]>,
    /// Modal basis restricted to the surface, for scenes whose frames carry modal
    /// coordinates; `None` when frames carry vertex positions.
    pub modal_basis: Option<ModalBasis>,
    /// Unit vector pointing up in the scene (the viewer's vertical; the scene's
    /// `[view] up`).
    pub up: [f32; 3],
    /// Regions of materials other than the default one, as closed surfaces at rest
    /// (m), for an x-ray view; empty for a uniform scene.
    pub regions: Vec<MaterialRegion>,
    /// Most [`ResidualColumn`]s the server asks this client to hold at once.
    pub column_capacity: u32,
}

/// The region of one material inside the tissue, drawn at rest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MaterialRegion {
    /// The material's name in the scene (e.g. `"inclusion"`).
    pub name: String,
    /// The material's Young's modulus (Pa).
    pub young_pa: f32,
    /// Boundary triangles as indices into `rest_positions`, counter-clockwise seen from
    /// outside the region.
    pub triangles: Vec<[u32; 3]>,
    /// Vertices of the region's boundary at rest (m).
    pub rest_positions: Vec<[f32; 3]>,
}

/// Per-vertex modal displacement vectors: vertex `v` moves by
/// `Σ_k q_k · vectors[v · mode_count + k]` for modal coordinates `q`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModalBasis {
    /// Number of modes k.
    pub mode_count: u32,
    /// `vertex_count · mode_count` displacement vectors (m per unit modal coordinate),
    /// vertex-major.
    pub vectors: Vec<[f32; 3]>,
}

/// One visual frame of the tissue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Frame {
    /// Frame number, +1 per published frame; gaps tell a client how many it lost.
    pub sequence: u64,
    /// Scene time of the model state shown (s).
    pub scene_time: f64,
    /// Server wall clock when the frame was encoded (µs since the Unix epoch), for
    /// latency estimates on clients with a synchronised clock.
    pub sent_unix_us: u64,
    /// Probe tip (m).
    pub probe: [f64; 3],
    /// Proxy (god-object) on the deformed surface (m).
    pub proxy: [f64; 3],
    /// Force on the user's hand (N).
    pub force: [f64; 3],
    /// Whether the probe touches the tissue.
    pub in_contact: bool,
    /// Indentation of the probe (m): how far the tip lies below where the rest-surface
    /// proxy holds it, along the contact normal; 0 without contact.
    pub depth: f64,
    /// Unit direction of the normal contact force on the probe (out of the tissue); zero
    /// without contact.
    pub normal: [f64; 3],
    /// The stylus as the device reports it: orientation, buttons, gripper.
    pub stylus: Stylus,
    /// The deformed surface.
    pub deformation: Deformation,
}

/// The stylus beyond its tip: what devices with a gimbal, buttons or a gripper report.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stylus {
    /// The stylus's orientation, a unit quaternion `(x, y, z, w)` turning the tool frame
    /// into the scene frame; the stylus runs along the tool's +x axis from the tip towards
    /// the hand (CHAI3D's convention). `None` for devices that sense no orientation.
    pub orientation: Option<[f32; 4]>,
    /// Button bit mask (bit 0 the primary button).
    pub buttons: u32,
    /// The gripper's opening (rad, 0 closed); `None` without a gripper.
    pub gripper: Option<f32>,
}

impl Stylus {
    /// No orientation, no button pressed, no gripper.
    pub const NONE: Self = Self {
        orientation: None,
        buttons: 0,
        gripper: None,
    };
}

/// How a frame carries the deformed surface.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Deformation {
    /// Tag 0. Vertex `v` is at rest + Σ_j `coordinates[j]` · basis(v, j) + Σ over
    /// `loads` of column(load.node)[v] · load.force + the corrections at `v`.
    Superposed {
        /// Modal coordinates q, one per mode of the scene's basis (none without one).
        coordinates: Vec<f32>,
        /// Nodal forces whose response the client adds from its residual columns.
        loads: Vec<NodalLoad>,
        /// What one count of a correction's displacement is (m).
        correction_unit: f32,
        /// Displacements added last, where the columns and modes miss the surface by
        /// more than the server's tolerance.
        corrections: Vec<VertexCorrection>,
    },
    /// Tag 1. The position of every surface vertex (m).
    Positions {
        /// One position per vertex of the scene init.
        positions: Vec<[f32; 3]>,
    },
}

/// A force on one mesh node, whose surface response is its [`ResidualColumn`] times the
/// force.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodalLoad {
    /// Mesh node id (the key of a column the client holds).
    pub node: u32,
    /// Force (N).
    pub force: [f32; 3],
}

/// A displacement added to one surface vertex on top of its modal reconstruction.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct VertexCorrection {
    /// Surface vertex index.
    pub vertex: u32,
    /// Displacement in counts of the frame's `correction_unit` (m per count).
    pub displacement: [i16; 3],
}

impl VertexCorrection {
    /// The displacement (m) with the frame's `unit` (m per count).
    pub fn metres(&self, unit: f32) -> [f32; 3] {
        self.displacement.map(|d| d as f32 * unit)
    }
}

/// How every surface vertex moves per unit force at one mesh node; vertices not listed
/// do not move.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResidualColumn {
    /// Mesh node id the column belongs to.
    pub node: u32,
    /// What one count of a compliance entry is (m/N).
    pub unit: f32,
    /// The vertices that move, each with its 3×3 compliance block.
    pub entries: Vec<ColumnEntry>,
}

/// One surface vertex's row of a [`ResidualColumn`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ColumnEntry {
    /// Surface vertex index.
    pub vertex: u32,
    /// Row-major 3×3 block in counts of the column's `unit` (m/N per count):
    /// `compliance[3a + b]` is the vertex's displacement along axis a per unit force
    /// along axis b at the column's node.
    pub compliance: [i16; 9],
}

impl ColumnEntry {
    /// The block (m/N, row-major) with the column's `unit` (m/N per count).
    pub fn block(&self, unit: f32) -> [f32; 9] {
        self.compliance.map(|c| c as f32 * unit)
    }
}

/// Largest count of a quantised value (`i16`, symmetric).
pub const MAX_COUNT: f64 = 32_767.0;

/// The unit (per count) that quantises values up to `max_abs` in magnitude into
/// `i16` counts with the finest step: `max_abs / 32767` (1 for zero or non-finite
/// `max_abs`, whose values are all zero counts).
pub fn quantum_for(max_abs: f64) -> f32 {
    let unit = (max_abs / MAX_COUNT) as f32;
    if unit.is_finite() && unit > 0.0 {
        // Rounded up so that max_abs / unit never exceeds the largest count.
        unit * (1.0 + f32::EPSILON)
    } else {
        1.0
    }
}

/// `value` in counts of `unit`, rounded to the nearest and held within ±32767.
pub fn quantise(value: f64, unit: f32) -> i16 {
    (value / unit as f64).round().clamp(-MAX_COUNT, MAX_COUNT) as i16
}

/// Columns a client may drop.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ForgetColumns {
    /// Mesh node ids of the columns to drop.
    pub nodes: Vec<u32>,
}

/// Timing statistics of the haptic loop over the last reporting window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HapticStats {
    /// Ticks in the window.
    pub ticks: u64,
    /// Median tick period (s).
    pub period_p50_s: f64,
    /// 99th-percentile tick period (s).
    pub period_p99_s: f64,
    /// Longest tick period (s).
    pub period_max_s: f64,
    /// 99th-percentile compute time of one tick (s).
    pub compute_p99_s: f64,
    /// Ticks that started after their deadline.
    pub missed_deadlines: u64,
    /// Ticks whose force the safety layer clamped.
    pub clamped_forces: u64,
}

/// Why the force on the hand is not the tissue's force (or not at full gain).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SafetyReason {
    /// Tag 0. The tissue's force, unchanged.
    Normal,
    /// Tag 1. Gain ramping in (start, after a fault).
    Ramping,
    /// Tag 2. The device's sample is stale: fading to zero.
    StaleSample,
    /// Tag 3. The model thread's force model is too old: fading to zero.
    StalledModel,
    /// Tag 4. The device failed: force zero.
    DeviceFault,
    /// Tag 5. A non-finite value (probe, force model or force): force zero.
    NotFinite,
    /// Tag 6. The force magnitude was clamped to the device's limit.
    Clamped,
    /// Tag 7. The change of force per tick was limited (force-rate limit).
    RateLimited,
}

/// Ticks of one device by what its safety filter did, since the server started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SafetyCounts {
    /// Ticks ramping in.
    pub ramping: u64,
    /// Ticks faded for a stale device sample.
    pub stale_sample: u64,
    /// Ticks faded for a stalled model thread.
    pub stalled_model: u64,
    /// Ticks zeroed for a device fault.
    pub device_fault: u64,
    /// Ticks zeroed for a non-finite value.
    pub not_finite: u64,
    /// Ticks whose force was clamped in magnitude.
    pub clamped: u64,
    /// Ticks whose force change was rate-limited.
    pub rate_limited: u64,
}

impl SafetyCounts {
    /// Ticks the watchdog faded or zeroed (stale sample, stalled model, device fault,
    /// non-finite value).
    pub fn faded(&self) -> u64 {
        self.stale_sample + self.stalled_model + self.device_fault + self.not_finite
    }
}

/// One fade: consecutive ticks the watchdog faded or zeroed for one reason.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fade {
    /// Why.
    pub reason: SafetyReason,
    /// Haptic loop time of its first tick (s).
    pub start_s: f64,
    /// Ticks it lasted so far.
    pub ticks: u64,
    /// Largest force it took off the hand (N): |tissue force| − |commanded force|.
    pub force_removed: f64,
}

/// One device's safety state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceSafety {
    /// Device number, 1 for the first `--device`.
    pub device: u32,
    /// Haptic loop time of the newest tick reviewed (s).
    pub time_s: f64,
    /// The state at that tick.
    pub state: SafetyReason,
    /// Counts since start.
    pub counts: SafetyCounts,
    /// The latest fade, if any (still going on when `state` is its reason).
    pub last_fade: Option<Fade>,
    /// The fade that took the most force off the hand so far, if any.
    pub largest_fade: Option<Fade>,
}

/// The safety state of every device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SafetyReport {
    /// One entry per device, in `--device` order.
    pub devices: Vec<DeviceSafety>,
}

/// What a [`Notice`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NoticeKind {
    /// Tag 0. The session's recording ended (the server stops, or a write failed).
    RecordingEnded,
    /// Tag 1. The recording ended because a write failed; what is on disk is kept.
    RecordingFailed,
}

/// A message for the user.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Notice {
    /// What it is about.
    pub kind: NoticeKind,
    /// Human-readable detail.
    pub message: String,
}

/// Why the server closes a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ErrorCode {
    /// Tag 0. The message could not be decoded.
    Malformed,
    /// Tag 1. The message exceeded the size limit.
    TooLarge,
    /// Tag 2. Not sent since protocol version 2 (a refused token gets a
    /// [`ControlStatus`] and the connection stays open); kept so the tags stay stable.
    Unauthorized,
    /// Tag 3. The server already serves its maximum number of clients.
    ServerFull,
    /// Tag 4. Nothing (not even a pong) arrived within the idle timeout.
    IdleTimeout,
    /// Tag 5. A text message; the protocol is binary only.
    UnexpectedText,
    /// Tag 6. The server is shutting down.
    ShuttingDown,
}

/// The last message on a connection the server closes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorMessage {
    /// Machine-readable reason.
    pub code: ErrorCode,
    /// Human-readable detail.
    pub message: String,
}

/// Whether this connection may control the probe.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ControlStatus {
    /// `true`: the token is right; `false`: the connection is read-only.
    pub granted: bool,
    /// Human-readable detail (never the token).
    pub message: String,
}

/// A command for the virtual probe, authorised by the control token.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Control {
    /// The token the server printed at start-up.
    pub token: String,
    /// What to do.
    pub command: ControlCommand,
}

/// What a [`Control`] message asks of the virtual probe.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ControlCommand {
    /// Tag 0. Move the virtual probe tip to a scene position (m).
    MoveProbe {
        /// Target position (m).
        position: [f64; 3],
    },
    /// Tag 1. Let go of the probe (it returns to its scripted or idle motion).
    ReleaseProbe,
    /// Tag 2. Put the tissue back to rest.
    ResetTissue,
    /// Tag 3. Changes nothing; the server answers with a [`ControlStatus`] saying
    /// whether the token grants control.
    CheckToken,
}

/// A message that could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The bytes are not a valid message (or exceed the size limit).
    #[error("malformed message: {0}")]
    Malformed(#[from] bincode::error::DecodeError),
    /// The message decoded but bytes were left over.
    #[error("malformed message: {extra} trailing bytes after a {used}-byte message")]
    TrailingBytes {
        /// Bytes the message used.
        used: usize,
        /// Bytes left over.
        extra: usize,
    },
    /// The message is longer than the limit for its direction.
    #[error("message of {len} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// Message length (bytes).
        len: usize,
        /// Limit (bytes).
        limit: usize,
    },
}

/// Encodes a server → client message.
pub fn encode_server(message: &ServerMessage) -> Vec<u8> {
    bincode::serde::encode_to_vec(message, SERVER_CONFIG).expect("encoding into a Vec cannot fail")
}

/// Encodes a server → client message into `out`, reusing its allocation (cleared first).
pub fn encode_server_into(message: &ServerMessage, out: &mut Vec<u8>) {
    out.clear();
    bincode::serde::encode_into_std_write(message, out, SERVER_CONFIG)
        .expect("encoding into a Vec cannot fail");
}

/// Decodes a server → client message; the whole slice must be one message.
pub fn decode_server(bytes: &[u8]) -> Result<ServerMessage, DecodeError> {
    decode_exact(bytes, SERVER_CONFIG, MAX_SERVER_MESSAGE_BYTES)
}

/// Encodes a client → server message.
pub fn encode_client(message: &ClientMessage) -> Vec<u8> {
    bincode::serde::encode_to_vec(message, CLIENT_CONFIG).expect("encoding into a Vec cannot fail")
}

/// Decodes a client → server message; the whole slice must be one message of at most
/// [`MAX_CLIENT_MESSAGE_BYTES`].
pub fn decode_client(bytes: &[u8]) -> Result<ClientMessage, DecodeError> {
    decode_exact(bytes, CLIENT_CONFIG, MAX_CLIENT_MESSAGE_BYTES)
}

fn decode_exact<T: serde::de::DeserializeOwned, const LIMIT: usize>(
    bytes: &[u8],
    config: Config<LIMIT>,
    limit: usize,
) -> Result<T, DecodeError> {
    if bytes.len() > limit {
        return Err(DecodeError::TooLarge {
            len: bytes.len(),
            limit,
        });
    }
    let (message, used) = bincode::serde::decode_from_slice(bytes, config)?;
    if used != bytes.len() {
        return Err(DecodeError::TrailingBytes {
            used,
            extra: bytes.len() - used,
        });
    }
    Ok(message)
}

/// The residual columns a client holds, keyed by mesh node id: what
/// [`ServerMessage::ResidualColumn`] adds and [`ServerMessage::ForgetColumns`] removes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ColumnCache {
    columns: std::collections::HashMap<u32, ResidualColumn>,
}

impl ColumnCache {
    /// Keeps `column` (replacing an older one of the same node).
    pub fn insert(&mut self, column: ResidualColumn) {
        self.columns.insert(column.node, column);
    }

    /// Drops the column of mesh node `node` and returns it, if held.
    pub fn remove(&mut self, node: u32) -> Option<ResidualColumn> {
        self.columns.remove(&node)
    }

    /// Drops the columns of `forget`.
    pub fn forget(&mut self, forget: &ForgetColumns) {
        for node in &forget.nodes {
            self.columns.remove(node);
        }
    }

    /// Number of columns held.
    pub fn len(&self) -> usize {
        self.columns.len()
    }

    /// Whether no column is held.
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// The column of mesh node `node`, if held.
    pub fn get(&self, node: u32) -> Option<&ResidualColumn> {
        self.columns.get(&node)
    }
}

/// Why a frame does not fit the scene and the columns a client holds.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ReconstructError {
    /// A positions frame with another vertex count than the scene's.
    #[error("frame has {got} positions, the scene has {expected} surface vertices")]
    VertexCount {
        /// Positions in the frame.
        got: usize,
        /// Surface vertices in the scene.
        expected: usize,
    },
    /// Modal coordinates that do not match the scene's basis.
    #[error("frame has {got} modal coordinates, the scene's basis has {expected} modes")]
    ModeCount {
        /// Coordinates in the frame.
        got: usize,
        /// Modes of the scene (0 without a basis).
        expected: usize,
    },
    /// A load on a node whose column the client does not hold.
    #[error("frame loads mesh node {0}, whose residual column was never sent or was forgotten")]
    MissingColumn(u32),
    /// A correction or column entry for a vertex the scene does not have.
    #[error("{what} names surface vertex {vertex}, the scene has {count}")]
    VertexOutOfRange {
        /// What named it ("a correction", "the column of node N").
        what: String,
        /// The vertex index.
        vertex: u32,
        /// Surface vertices in the scene.
        count: usize,
    },
}

/// Surface vertex positions (m) from a scene init, the columns the client holds and a
/// frame: rest + modal displacement + the loads' column responses + corrections, or the
/// frame's positions.
pub fn reconstruct_positions(
    scene: &SceneInit,
    columns: &ColumnCache,
    frame: &Frame,
) -> Result<Vec<[f32; 3]>, ReconstructError> {
    let n = scene.rest_positions.len();
    let (coordinates, loads, correction_unit, corrections) = match &frame.deformation {
        Deformation::Positions { positions } if positions.len() == n => {
            return Ok(positions.clone())
        }
        Deformation::Positions { positions } => {
            return Err(ReconstructError::VertexCount {
                got: positions.len(),
                expected: n,
            })
        }
        Deformation::Superposed {
            coordinates,
            loads,
            correction_unit,
            corrections,
        } => (coordinates, loads, *correction_unit, corrections),
    };
    let k = scene
        .modal_basis
        .as_ref()
        .map_or(0, |b| b.mode_count as usize);
    if coordinates.len() != k {
        return Err(ReconstructError::ModeCount {
            got: coordinates.len(),
            expected: k,
        });
    }
    let mut out = scene.rest_positions.clone();
    if let Some(basis) = scene.modal_basis.as_ref().filter(|_| k > 0) {
        if basis.vectors.len() != n * k {
            return Err(ReconstructError::ModeCount {
                got: basis.vectors.len() / n.max(1),
                expected: k,
            });
        }
        for (p, row) in out.iter_mut().zip(basis.vectors.chunks_exact(k)) {
            for (phi, &q) in row.iter().zip(coordinates) {
                for (x, d) in p.iter_mut().zip(phi) {
                    *x += q * d;
                }
            }
        }
    }
    for load in loads {
        let column = columns
            .get(load.node)
            .ok_or(ReconstructError::MissingColumn(load.node))?;
        for entry in &column.entries {
            let p = out.get_mut(entry.vertex as usize).ok_or_else(|| {
                ReconstructError::VertexOutOfRange {
                    what: format!("the column of node {}", load.node),
                    vertex: entry.vertex,
                    count: n,
                }
            })?;
            let c = entry.block(column.unit);
            for (a, x) in p.iter_mut().enumerate() {
                *x += c[3 * a] * load.force[0]
                    + c[3 * a + 1] * load.force[1]
                    + c[3 * a + 2] * load.force[2];
            }
        }
    }
    for corr in corrections {
        let p = out.get_mut(corr.vertex as usize).ok_or_else(|| {
            ReconstructError::VertexOutOfRange {
                what: "a correction".into(),
                vertex: corr.vertex,
                count: n,
            }
        })?;
        for (x, d) in p.iter_mut().zip(corr.metres(correction_unit)) {
            *x += d;
        }
    }
    Ok(out)
}
