//! A haptic thread and a model thread per device: the first device's model thread steps
//! the tissue with every probe and feeds the viewers, the others hand their probe in.

use std::sync::Arc;

use crate::haptic::review::TickReview;
use crate::haptic::runtime::{HapticRuntime, RuntimeShared};
use crate::haptic::tick::HapticLoop;
use crate::haptic::tick_ring::{tick_ring, TickSink};
use crate::pipeline::SceneModel;
use crate::scene::Rates;
use crate::stream::{SceneVisual, SnapshotWriter};
use crate::Vec3;

use super::control::ResetReceiver;
use super::devices::{ConfiguredDevice, ServeDevice};
use super::{ProbeFollower, ProbeSlots, ServeStep, ViewerLink};
use crate::recording::session_dir::unix_now;
use crate::recording::{RecordingDir, RecordingHealth, TickFile};

/// Seconds of haptic ticks a recording's ring holds while its writer catches up.
const RECORDING_RING_SECONDS: f64 = 4.0;

/// One device's haptic loop and model thread: the first steps the tissue with every
/// probe, the others hand their probe to it.
pub(super) enum Runtime {
    Tissue(HapticRuntime<ServeDevice, ServeStep>),
    Follower(HapticRuntime<ServeDevice, ProbeFollower>),
}

impl Runtime {
    pub(super) fn shared(&self) -> &Arc<RuntimeShared> {
        match self {
            Runtime::Tissue(r) => r.shared(),
            Runtime::Follower(r) => r.shared(),
        }
    }

    /// Stops the threads (zero force first); the first device's step comes back for
    /// the final frame.
    pub(super) fn stop(self) -> (HapticLoop<ServeDevice>, Option<ServeStep>) {
        match self {
            Runtime::Tissue(r) => {
                let (haptic, step) = r.stop();
                (haptic, Some(step))
            }
            Runtime::Follower(r) => (r.stop().0, None),
        }
    }
}

/// One device with its threads.
pub(super) struct Hand {
    pub runtime: Runtime,
    /// How messages name it.
    pub label: String,
    /// The review of its ticks (from the telemetry queue).
    pub review: TickReview,
    /// Its recorded ticks, when recording.
    pub ticks: Option<TickFile>,
}

/// What the hands start from.
pub(super) struct HandsSetup<'a> {
    pub devices: Vec<ConfiguredDevice>,
    pub model: SceneModel,
    pub rates: Rates,
    pub visual: SceneVisual,
    pub snapshots: SnapshotWriter,
    /// Viewers' tissue resets.
    pub resets: ResetReceiver,
    /// Where the probe rests in the first frame (m, scene frame).
    pub idle: Vec3,
    /// The recording and its health, when recording.
    pub session: Option<(&'a RecordingDir, &'a Arc<RecordingHealth>)>,
}

/// Starts every device's threads; an error stops those already started (zero force).
pub(super) fn start_hands(setup: HandsSetup) -> Result<Vec<Hand>, String> {
    let HandsSetup {
        devices,
        model,
        rates,
        visual,
        snapshots,
        resets,
        idle,
        session,
    } = setup;
    let probes = ProbeSlots::new(devices.len());
    let mut tissue = Some((model, visual, snapshots, resets));
    let mut hands = Vec::with_capacity(devices.len());
    for (i, mut d) in devices.into_iter().enumerate() {
        let (sink, ticks) = match session {
            Some((dir, health)) => {
                // The haptic clock starts as the runtime does, just below.
                d.record.clock_start_unix_s = Some(unix_now());
                dir.write_device(i, &d.record, d.profile_toml.as_deref())?;
                let (sink, file) = record_ticks(dir, i, &rates, health)?;
                (Some(sink), Some(file))
            }
            None => (None, None),
        };
        let config = d.runtime;
        let runtime = match tissue.take() {
            Some((model, visual, snapshots, resets)) => {
                let link = ViewerLink {
                    snapshots,
                    resets,
                    commanded: d.device.commanded(),
                    samples: Some(d.device.samples()),
                };
                let step = ServeStep::new(model, visual, link, rates.visual, idle)
                    .with_probes(probes.clone());
                HapticRuntime::start_recording(d.device, step, config, sink).map(Runtime::Tissue)
            }
            None => HapticRuntime::start_recording(d.device, probes.follower(i), config, sink)
                .map(Runtime::Follower),
        }
        .map_err(|e| format!("cannot start the haptic and model threads: {e}"))?;
        hands.push(Hand {
            runtime,
            label: d.summary.label,
            review: TickReview::new(&config.haptic.limits),
            ticks,
        });
    }
    Ok(hands)
}

/// The ring device `index`'s haptic thread records into, and the `ticks.csv` writer
/// draining it (a failed write is reported to `health`).
fn record_ticks(
    dir: &RecordingDir,
    index: usize,
    rates: &Rates,
    health: &Arc<RecordingHealth>,
) -> Result<(TickSink, TickFile), String> {
    let (sink, source) = tick_ring((RECORDING_RING_SECONDS * rates.haptic).ceil() as usize);
    let writer = dir.ticks(index)?;
    let file = TickFile::start(writer, source, health.clone())
        .map_err(|e| format!("cannot start the recording's writer: {e}"))?;
    Ok((sink, file))
}
