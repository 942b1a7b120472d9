//! Deep presses (hardening finding "deep presses lose contact"): the default block
//! pressed 39 mm deep and 60 mm deep (below its fixed bottom at −40 mm), and a 1 m box
//! held 9 cm inside, keep contact, and the force on the hand stays at the device's
//! safety clamp on every tick while the probe is held, on both backends, whether the
//! probe jumps there as a viewer's MoveProbe moves the virtual stylus in `serve` (the
//! real `ServeStep`, control channel and visual frames) or moves there continuously as
//! in `replay` (the real `cli::replay::replay`). Lifting out still releases.

use palpa::app::config::attach_device;
use palpa::app::replay::{replay, ReplayRow};
use palpa::app::scene::{build, BuiltScene};
use palpa::app::serve::{ControlRouter, ServeStep, Stylus, ViewerLink};
use palpa::device::force_log::ForceLog;
use palpa::device::mapped::{MappedDevice, Workspace};
use palpa::device::replay::{Trajectory, TrajectorySample};
use palpa::device::sim::SimDevice;
use palpa::device::HapticDevice;
use palpa::haptic::{LockStep, TickRecord};
use palpa::scene::{BackendKind, Scene};
use palpa::stream::SceneVisual;
use palpa::stream::{snapshot_slot, ProbeControl};
use palpa::Vec3;
use std::path::Path;

/// The default scene, exactly as `palpa serve` runs it without `--scene`.
const DEFAULT: &str = include_str!("../../scenes/default.toml");

/// A 1 m cube of the default tissue, top face at z = 0, bottom fixed.
const BOX: &str = r#"
[mesh.box]
origin = [-0.5, -0.5, -1.0]
size = [1.0, 1.0, 1.0]
"#;

/// The virtual stylus's force clamp (N): `SimDevice`'s rating, which the scene's
/// safety limits take as `max_force`.
const CLAMP: f64 = 8.0;

/// Time the force may take to reach the clamp after the probe arrives (s): the rate
/// limit (500 N/s) needs 16 ms for 8 N, plus a model step.
const SETTLE: f64 = 0.03;

/// Time until the model has stepped with a jumped probe (s): the viewer's command moves
/// the stylus at once, the haptic thread senses it on its next tick and the model steps
/// with it at the next 5 ms model step; before that the haptic thread has no contact to
/// render.
const MODEL_LAG: f64 = 0.006;

fn scene(text: &str, backend: BackendKind, cache: &Path) -> BuiltScene {
    let mut scene = Scene::parse(text, "deep press scene", Path::new(".")).unwrap();
    scene.backend.kind = backend;
    // Columns as the contact needs them, not the whole surface's at start (the same
    // columns; the start-up precompute took most of this file's time).
    scene.backend.condensed.precompute_cap = 0;
    build(scene, cache, &mut |_| {}).unwrap()
}

/// One haptic tick as `serve` runs it, with what the viewers saw last.
struct ServeTick {
    record: TickRecord,
    /// Scene time (s) and contact of the newest visual frame.
    frame: (f64, bool),
}

/// `serve` in lock-step: the virtual stylus rests 1 cm above the middle for 1 s (the
/// force ramps in), a viewer's MoveProbe jumps it to `target` (m) for `hold` s, then
/// the viewer releases it for 0.2 s. Returns the ticks from the jump on.
fn serve_jump(mut built: BuiltScene, target: Vec3, hold: f64) -> Vec<ServeTick> {
    let idle = built.above_the_middle(0.01);
    let (stylus, input) = SimDevice::external(idle);
    let mut device = ForceLog::new(MappedDevice::new(stylus, Workspace::IDENTITY));
    let config = attach_device(&mut built, device.rating());
    assert_eq!(config.limits.max_force, CLAMP);
    let (_, visual) = SceneVisual::new(&built.name(), &built.mesh.mesh, &built.model);
    let (frames_in, mut frames) = snapshot_slot(visual.at_rest(idle));
    // What the control thread does with each viewer command, here between ticks.
    let (mut control, resets) = ControlRouter::new(Some(Stylus::new(input, idle)));
    let link = ViewerLink {
        snapshots: frames_in,
        resets,
        commanded: device.commanded(),
        samples: None,
    };
    let step = ServeStep::new(built.model, visual, link, built.scene.rates.visual, idle);
    let mut lock = LockStep::new(device, step, config);
    let ticks = |s: f64| (s / config.tick_period).round() as usize;
    lock.run(ticks(1.0));
    control.route(ProbeControl::MoveTo(target));
    let mut out = Vec::new();
    for k in 0..ticks(hold + 0.2) {
        if k == ticks(hold) {
            control.route(ProbeControl::Release);
        }
        let record = lock.step();
        out.push(ServeTick {
            record,
            frame: {
                let f = frames.latest().0;
                (f.time, f.in_contact)
            },
        });
    }
    out
}

/// Checks a serve press: once the model has seen the jump the force pushes out (+z)
/// on every tick, from `SETTLE` on every tick is in contact at the clamp, and so is
/// every visual frame, until the release; after it the probe is free.
fn check_serve(label: &str, ticks: &[ServeTick], target: Vec3, hold: f64) {
    let t_jump = ticks[0].record.t;
    let (mut held, mut frames) = (0, 0);
    for tick in ticks {
        let r = &tick.record;
        let since = r.t - t_jump;
        if (MODEL_LAG..hold).contains(&since) {
            assert!(r.force.z > 0.0, "{label} t={:.3}: force {:?}", r.t, r.force);
        }
        if (SETTLE..hold).contains(&since) {
            assert_eq!(r.probe, target, "{label} t={:.3}", r.t);
            let (frame_t, frame_contact) = tick.frame;
            assert!(
                r.model_in_contact && (frame_t < t_jump + MODEL_LAG || frame_contact),
                "{label} t={:.3}: contact lost (model {}, frame at {frame_t:.3} {frame_contact})",
                r.t,
                r.model_in_contact,
            );
            frames += usize::from(frame_t >= t_jump + MODEL_LAG);
            assert!(
                (r.force.norm() - CLAMP).abs() <= 1e-9 && r.force.z > 0.99 * CLAMP,
                "{label} t={:.3}: force {:?}, not the {CLAMP} N clamp",
                r.t,
                r.force
            );
            held += 1;
        }
        if since >= hold + 0.1 {
            assert_eq!(
                r.force,
                Vec3::zeros(),
                "{label} t={:.3}: after release",
                r.t
            );
            assert!(!r.model_in_contact, "{label} t={:.3}: after release", r.t);
        }
    }
    let expected = ((hold - SETTLE) / 1e-3) as usize;
    assert!(held + 1 >= expected, "{label}: {held} held ticks");
    assert!(
        frames + 40 >= expected,
        "{label}: {frames} ticks saw a contact frame"
    );
}

/// Minimum-jerk blend from 0 to 1.
fn min_jerk(s: f64) -> f64 {
    let s = s.clamp(0.0, 1.0);
    s * s * s * (10.0 - 15.0 * s + 6.0 * s * s)
}

/// A replay trajectory at 1 kHz: 0.6 s resting at `top` (the force ramps in), a 1 s
/// press to `bottom`, `hold` s there, a 1 s lift back to `top`, 0.2 s there.
fn press_trajectory(top: Vec3, bottom: Vec3, hold: f64) -> Trajectory {
    let legs = [
        (0.6, top, top),
        (1.0, top, bottom),
        (hold, bottom, bottom),
        (1.0, bottom, top),
        (0.2, top, top),
    ];
    let mut samples = Vec::new();
    let mut t0 = 0.0;
    for (duration, from, to) in legs {
        let n = (duration / 1e-3).round() as usize;
        for k in 0..n {
            let s = k as f64 / n as f64;
            samples.push(TrajectorySample {
                t: t0 + k as f64 * 1e-3,
                position: from + (to - from) * min_jerk(s),
                buttons: 0,
                force: None,
            });
        }
        t0 += n as f64 * 1e-3;
    }
    samples.push(TrajectorySample {
        t: t0,
        position: top,
        buttons: 0,
        force: None,
    });
    Trajectory::new(samples, "deep press").unwrap()
}

/// Checks a replayed press (see [`press_trajectory`], 0.6 s + 1 s press): the force
/// pushes out on every tick the probe is more than 1 mm inside on the way in; during
/// the hold every tick is in contact at the clamp; back above the surface it is zero.
fn check_replay(label: &str, rows: &[ReplayRow], bottom: Vec3, hold: f64) {
    let (t_arrive, t_lift) = (1.6, 1.6 + hold);
    let mut held = 0;
    for r in rows {
        if r.t < t_arrive && r.probe.z < -1e-3 {
            assert!(
                r.force.z > 0.0,
                "{label} t={:.3} z={:.4}: force {:?}",
                r.t,
                r.probe.z,
                r.force
            );
        }
        if r.t >= t_arrive + SETTLE && r.t < t_lift {
            assert!((r.probe - bottom).norm() < 1e-12, "{label} t={:.3}", r.t);
            assert!(r.contact, "{label} t={:.3}: contact lost", r.t);
            assert!(
                (r.force.norm() - CLAMP).abs() <= 1e-9 && r.force.z > 0.99 * CLAMP,
                "{label} t={:.3}: force {:?}, not the {CLAMP} N clamp",
                r.t,
                r.force
            );
            held += 1;
        }
        if r.probe.z > 1e-3 && r.t > t_lift {
            assert_eq!(
                r.force,
                Vec3::zeros(),
                "{label} t={:.3}: force above the surface",
                r.t
            );
        }
    }
    assert!(
        held as f64 >= (hold - SETTLE) / 1e-3 - 1.0,
        "{label}: {held} held ticks"
    );
}

#[test]
fn default_block_pressed_39_and_60_mm_in_serve_stays_at_the_clamp() {
    let cache = crate::cache_dir();
    for backend in [BackendKind::Modal, BackendKind::Condensed] {
        for depth in [0.039, 0.06] {
            let built = scene(DEFAULT, backend, &cache);
            let target = Vec3::new(0.0, 0.0, -depth);
            let label = format!("serve, default block, {backend:?}, {} mm", depth * 1e3);
            check_serve(&label, &serve_jump(built, target, 1.0), target, 1.0);
        }
    }
}

#[test]
fn default_block_pressed_39_and_60_mm_in_replay_stays_at_the_clamp() {
    let cache = crate::cache_dir();
    for backend in [BackendKind::Modal, BackendKind::Condensed] {
        for depth in [0.039, 0.06] {
            let built = scene(DEFAULT, backend, &cache);
            let (top, bottom) = (Vec3::new(0.0, 0.0, 0.01), Vec3::new(0.0, 0.0, -depth));
            let label = format!("replay, default block, {backend:?}, {} mm", depth * 1e3);
            let rows = replay(built, press_trajectory(top, bottom, 1.0));
            check_replay(&label, &rows, bottom, 1.0);
        }
    }
}

#[test]
fn one_metre_box_held_9_cm_inside_stays_at_the_clamp_in_serve_and_replay() {
    let cache = crate::cache_dir();
    for backend in [BackendKind::Modal, BackendKind::Condensed] {
        let target = Vec3::new(0.0, 0.0, -0.09);
        let label = format!("serve, 1 m box, {backend:?}, 90 mm");
        let ticks = serve_jump(scene(BOX, backend, &cache), target, 3.0);
        check_serve(&label, &ticks, target, 3.0);
        let label = format!("replay, 1 m box, {backend:?}, 90 mm");
        let traj = press_trajectory(Vec3::new(0.0, 0.0, 0.01), target, 3.0);
        let rows = replay(scene(BOX, backend, &cache), traj);
        check_replay(&label, &rows, target, 3.0);
    }
}
