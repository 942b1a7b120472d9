//! What `palpa serve` steps on the model thread: obey viewers' commands (move the
//! virtual stylus, reset the tissue), step the scene model, and publish what viewers
//! see at the visual rate.

use crate::device::mapped::Workspace;
use crate::device::DeviceSample;
use crate::model::{LocalForceModel, ModelStep};
use crate::rt::{SlotReader, SlotWriter};
use crate::stream::{
    ControlReceiver, ProbeControl, SnapshotStylus, SnapshotWriter, VisualSnapshot,
};
use crate::Vec3;

use super::ProbeSlots;
use crate::pipeline::SceneModel;
use crate::stream::SceneVisual;

/// The virtual stylus's input: positions a viewer picked (scene frame) go to the device
/// frame through the workspace mapping.
pub struct Stylus {
    input: SlotWriter<(Vec3, u32)>,
    map: Workspace,
    /// Where it rests when released (m, scene frame).
    idle: Vec3,
}

impl Stylus {
    /// Stylus `input` (device frame), the workspace `map` into the scene, and where it
    /// rests when released (`idle`, m, scene frame); it starts there.
    pub fn new(input: SlotWriter<(Vec3, u32)>, map: Workspace, idle: Vec3) -> Self {
        let mut stylus = Self { input, map, idle };
        stylus.move_to(&idle);
        stylus
    }

    /// Moves the stylus to `scene_position` (m, scene frame).
    pub fn move_to(&mut self, scene_position: &Vec3) {
        self.input.write((self.map.to_device(scene_position), 0));
    }
}

/// The model thread's links to the viewers: snapshots out, commands in, and the force
/// the haptic thread last commanded to the device (what the frames show).
pub struct ViewerLink {
    /// Where visual snapshots go.
    pub snapshots: SnapshotWriter,
    /// Viewers' commands.
    pub control: ControlReceiver,
    /// The force commanded to the device (N, scene frame, after every safety limit).
    pub commanded: SlotReader<Vec3>,
    /// The device's newest sample (scene frame): the stylus's orientation, buttons and
    /// gripper the frames show; `None` shows none.
    pub samples: Option<SlotReader<DeviceSample>>,
}

/// The model thread's step: obey viewers' commands, step the tissue, publish what
/// viewers see at the visual rate.
pub struct ServeStep {
    model: SceneModel,
    visual: SceneVisual,
    snapshot: VisualSnapshot,
    link: ViewerLink,
    stylus: Option<Stylus>,
    visual_period: f64,
    next_visual: f64,
    warned_no_stylus: bool,
    /// The other devices' probes on this tissue.
    probes: ProbeSlots,
}

impl ServeStep {
    /// Steps `model`, publishing through `visual` over `link` at `visual_rate_hz` (Hz)
    /// and obeying viewers' commands; `stylus` is the virtual stylus viewers move, if
    /// that is the device. The first snapshot shows the tissue at rest with the probe at
    /// `probe` (m).
    pub fn new(
        model: SceneModel,
        visual: SceneVisual,
        link: ViewerLink,
        stylus: Option<Stylus>,
        visual_rate_hz: f64,
        probe: Vec3,
    ) -> Self {
        Self {
            snapshot: visual.at_rest(probe),
            model,
            visual,
            link,
            stylus,
            visual_period: 1.0 / visual_rate_hz,
            next_visual: 0.0,
            warned_no_stylus: false,
            probes: ProbeSlots::new(1),
        }
    }

    /// Steps the tissue with the other devices' probes too (`probes`, whose followers
    /// the other devices' model threads run): all contacts in one constraint system.
    pub fn with_probes(mut self, probes: ProbeSlots) -> Self {
        self.probes = probes;
        self
    }

    /// Publishes the last state once more with `force` (N) as the force on the hand:
    /// the final frame, after the haptic thread stopped.
    pub fn publish_final(&mut self, force: Vec3) {
        let (t, probe) = (self.snapshot.time, self.snapshot.probe);
        self.publish(t, probe, force);
    }

    fn obey(&mut self, command: ProbeControl) {
        match (command, self.stylus.as_mut()) {
            (ProbeControl::MoveTo(p), Some(stylus)) => stylus.move_to(&p),
            (ProbeControl::Release, Some(stylus)) => {
                let idle = stylus.idle;
                stylus.move_to(&idle);
            }
            (ProbeControl::ResetTissue, _) => self.model.reset(),
            (ProbeControl::MoveTo(_) | ProbeControl::Release, None) => {
                if !self.warned_no_stylus {
                    self.warned_no_stylus = true;
                    tracing::warn!("a viewer moves the probe, but the device is not the virtual stylus; ignored");
                }
            }
        }
    }

    /// Publishes the state of the last step with `force` (N) as the force on the hand.
    fn publish(&mut self, t: f64, probe: Vec3, force: Vec3) {
        self.visual
            .fill(&mut self.model, t, probe, force, &mut self.snapshot);
        if let Some(samples) = self.link.samples.as_mut() {
            let s = samples.read().0;
            self.snapshot.stylus = SnapshotStylus {
                orientation: s.orientation,
                buttons: s.buttons,
                gripper: s.gripper,
            };
        }
        self.link.snapshots.publish(&self.snapshot);
    }
}

impl ModelStep for ServeStep {
    fn step(&mut self, t: f64, dt: f64, probe: Vec3) -> LocalForceModel {
        while let Ok(command) = self.link.control.try_recv() {
            self.obey(command);
        }
        let out = self.probes.step_all(&mut self.model, t, dt, probe);
        if t >= self.next_visual {
            self.next_visual = (self.next_visual + self.visual_period).max(t);
            let force = self.link.commanded.read().0;
            self.publish(t, probe, force);
        }
        out
    }
}
