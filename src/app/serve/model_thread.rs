//! What `palpa serve` steps on the model thread: reset the tissue when a viewer asks,
//! step the scene model, and publish what viewers see at the visual rate.

use crate::device::DeviceSample;
use crate::rt::SlotReader;
use crate::stream::{SnapshotStylus, SnapshotWriter, VisualSnapshot};
use crate::tissue::{LocalForceModel, ModelStep};
use crate::Vec3;

use super::control::ResetReceiver;
use super::ProbeSlots;
use crate::pipeline::SceneModel;
use crate::stream::SceneVisual;

/// The model thread's links to the viewers: snapshots out, tissue resets in, and the
/// force the haptic thread last commanded to the device (what the frames show).
pub struct ViewerLink {
    /// Where visual snapshots go.
    pub snapshots: SnapshotWriter,
    /// Viewers' tissue resets ([`super::ControlRouter`]).
    pub resets: ResetReceiver,
    /// The force commanded to the device (N, scene frame, after every safety limit).
    pub commanded: SlotReader<Vec3>,
    /// The device's newest sample (scene frame): the stylus's orientation, buttons and
    /// gripper the frames show; `None` shows none.
    pub samples: Option<SlotReader<DeviceSample>>,
}

/// The model thread's step: reset the tissue when asked, step it, publish what viewers
/// see at the visual rate.
pub struct ServeStep {
    model: SceneModel,
    visual: SceneVisual,
    snapshot: VisualSnapshot,
    link: ViewerLink,
    visual_period: f64,
    next_visual: f64,
    /// The other devices' probes on this tissue.
    probes: ProbeSlots,
}

impl ServeStep {
    /// Steps `model`, publishing through `visual` over `link` at `visual_rate_hz` (Hz)
    /// and resetting it when viewers ask. The first snapshot shows the tissue at rest
    /// with the probe at `probe` (m).
    pub fn new(
        model: SceneModel,
        visual: SceneVisual,
        link: ViewerLink,
        visual_rate_hz: f64,
        probe: Vec3,
    ) -> Self {
        Self {
            snapshot: visual.at_rest(probe),
            model,
            visual,
            link,
            visual_period: 1.0 / visual_rate_hz,
            next_visual: 0.0,
            probes: ProbeSlots::new(1),
        }
    }

    /// Steps the tissue with the other devices' probes too (`probes`, whose followers
    /// the other devices' model threads run): all contacts in one constraint system.
    pub fn with_probes(mut self, probes: ProbeSlots) -> Self {
        self.probes = probes;
        self
    }

    /// The tissue model it steps.
    pub fn scene_model(&self) -> &SceneModel {
        &self.model
    }

    /// Publishes the last state once more with `force` (N) as the force on the hand:
    /// the final frame, after the haptic thread stopped.
    pub fn publish_final(&mut self, force: Vec3) {
        let (t, probe) = (self.snapshot.time, self.snapshot.probe);
        self.publish(t, probe, force);
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
        if self.link.resets.try_iter().count() > 0 {
            self.model.reset();
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
