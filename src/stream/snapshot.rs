//! What the model thread hands to the stream: the visual snapshot through a wait-free
//! latest-value slot, and the control commands a viewer sends back to the virtual probe.

use crate::Vec3;

/// The tissue as a viewer should see it after one model step (SI units).
#[derive(Clone, Debug, PartialEq)]
pub struct VisualSnapshot {
    /// Scene time of the model step (s).
    pub time: f64,
    /// Probe tip (m).
    pub probe: Vec3,
    /// Proxy (god-object) on the deformed surface (m).
    pub proxy: Vec3,
    /// Force on the user's hand (N).
    pub force: Vec3,
    /// Whether the probe touches the tissue.
    pub in_contact: bool,
    /// Indentation of the probe along `normal` (m); 0 without contact.
    pub depth: f64,
    /// Unit direction of the normal contact force on the probe; zero without contact.
    pub normal: Vec3,
    /// The stylus beyond its tip (scene frame).
    pub stylus: SnapshotStylus,
    /// The deformed surface.
    pub deformation: SnapshotDeformation,
}

/// The stylus as the device reports it, beyond its tip.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SnapshotStylus {
    /// The stylus's orientation: a unit quaternion turning the tool frame into the
    /// scene frame (the stylus along the tool's +x, from the tip towards the hand);
    /// `None` for devices that sense no orientation.
    pub orientation: Option<nalgebra::UnitQuaternion<f64>>,
    /// Button bit mask.
    pub buttons: u32,
    /// The gripper's opening (rad); `None` without a gripper.
    pub gripper: Option<f64>,
}

/// The deformed surface, in the form the scene streams it.
#[derive(Clone, Debug, PartialEq)]
pub enum SnapshotDeformation {
    /// Modal coordinates, the nodal loads that cause the rest of the displacement, and
    /// that rest itself at every surface vertex: vertex v is at rest + Σ_j q_j φ_j(v) +
    /// `field[v]`. The stream sends `field` as the loads' column responses where the
    /// client holds their columns, and as corrections elsewhere.
    Superposed {
        /// Modal coordinates q, one per mode of the scene's surface basis (none without
        /// one).
        coordinates: Vec<f64>,
        /// Forces on mesh nodes (node id, N), one per node, whose compliance columns
        /// reproduce `field`.
        loads: Vec<(u32, Vec3)>,
        /// Displacement beyond the modes at every surface vertex (m).
        field: Vec<Vec3>,
        /// Whether `field` is exactly the K⁻¹ response of `loads` (every load's column
        /// complete): then a frame whose loads all have columns needs no correction, and
        /// the publisher skips checking it.
        field_from_loads: bool,
    },
    /// Every surface vertex's position (m).
    Positions(Vec<Vec3>),
}

impl VisualSnapshot {
    /// The tissue at rest at time 0 with the probe at `probe`: `mode_count` zero modal
    /// coordinates (0 without a modal basis) and no displacement at any of
    /// `vertex_count` surface vertices.
    pub fn at_rest(probe: Vec3, mode_count: usize, vertex_count: usize) -> Self {
        Self {
            time: 0.0,
            probe,
            proxy: probe,
            force: Vec3::zeros(),
            in_contact: false,
            depth: 0.0,
            normal: Vec3::zeros(),
            stylus: SnapshotStylus::default(),
            deformation: SnapshotDeformation::Superposed {
                coordinates: vec![0.0; mode_count],
                loads: Vec::new(),
                field: vec![Vec3::zeros(); vertex_count],
                field_from_loads: true,
            },
        }
    }
}

/// Creates the latest-value slot between the model thread (writer) and the stream's
/// publisher (reader), holding `initial` until the first publish.
pub fn snapshot_slot(initial: VisualSnapshot) -> (SnapshotWriter, SnapshotReader) {
    let (input, output) = triple_buffer::triple_buffer(&initial);
    (SnapshotWriter { input }, SnapshotReader { output })
}

/// Model-thread end of the snapshot slot. Publishing never blocks and never waits for
/// the reader (a triple buffer); once the buffers' vectors have grown to size it does not
/// allocate either.
pub struct SnapshotWriter {
    input: triple_buffer::Input<VisualSnapshot>,
}

impl SnapshotWriter {
    /// Publishes a copy of `snapshot` as the newest state.
    pub fn publish(&mut self, snapshot: &VisualSnapshot) {
        self.input.input_buffer_mut().clone_from(snapshot);
        self.input.publish();
    }
}

/// Stream end of the snapshot slot.
pub struct SnapshotReader {
    output: triple_buffer::Output<VisualSnapshot>,
}

impl SnapshotReader {
    /// The newest published snapshot, and whether it is new since the last call.
    pub fn latest(&mut self) -> (&VisualSnapshot, bool) {
        let fresh = self.output.update();
        (self.output.peek_output_buffer(), fresh)
    }
}

/// What an authorised viewer asks of the virtual probe (the sim device consumes these).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ProbeControl {
    /// Move the virtual probe tip to a scene position (m).
    MoveTo(Vec3),
    /// Let go of the probe.
    Release,
    /// Put the tissue back to rest.
    ResetTissue,
}

/// Stream end of the control channel: the server only ever `try_send`s.
pub type ControlSender = crossbeam::channel::Sender<ProbeControl>;
/// Device end of the control channel: drain it with `try_recv` each tick.
pub type ControlReceiver = crossbeam::channel::Receiver<ProbeControl>;

/// A bounded channel for probe commands: a full channel drops new commands rather than
/// blocking the server, and the consumer never waits on it.
pub fn control_channel(capacity: usize) -> (ControlSender, ControlReceiver) {
    crossbeam::channel::bounded(capacity)
}
