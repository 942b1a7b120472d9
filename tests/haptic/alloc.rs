//! The haptic tick allocates nothing: a counting global allocator over 10,000 ticks of
//! the real-time tick body (HID device over the in-memory transport, probe and model
//! slots, local-stiffness extrapolation, safety, force write, telemetry queue, stats),
//! and over the real haptic thread of `HapticRuntime` with real-time set-up and a
//! recording's tick ring (its prologue locks memory and may allocate; from the first
//! device read on, nothing).
//! The model thread's tissue step allocates nothing either once the K⁻¹ columns it
//! needs are complete: both backends under a contact patch and changing point loads.

use crossbeam::queue::ArrayQueue;
use palpa::device::hid::{HidDevice, MemoryTransport, MAX_REPORT_LEN};
use palpa::device::profile::DeviceProfile;
use palpa::device::sim::{Script, SimDevice};
use palpa::device::{DeviceError, DeviceRating, DeviceSample, HapticDevice};
use palpa::haptic::analytic::HertzHalfSpace;
use palpa::haptic::runtime::{HapticRuntime, RuntimeConfig};
use palpa::haptic::stats::TickStats;
use palpa::haptic::tick::ProbeSample;
use palpa::haptic::tick_ring::tick_ring;
use palpa::haptic::{HapticConfig, HapticLoop, SafetyLimits, TickRecord};
use palpa::rt::{slot, RealtimePolicy};
use palpa::tissue::{LocalForceModel, ModelStep};
use palpa::Vec3;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
/// Allocations on the runtime's haptic thread once its loop runs.
static HAPTIC_THREAD_ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
/// Allocations in tissue-model steps.
static MODEL_ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static COUNTING_HAPTIC_THREAD: Cell<bool> = const { Cell::new(false) };
    static COUNTING_MODEL: Cell<bool> = const { Cell::new(false) };
}

fn count(counter: &'static std::thread::LocalKey<Cell<bool>>, into: &AtomicU64) {
    if counter.with(Cell::get) {
        into.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(&COUNTING, &ALLOCATIONS);
        count(&COUNTING_HAPTIC_THREAD, &HAPTIC_THREAD_ALLOCATIONS);
        count(&COUNTING_MODEL, &MODEL_ALLOCATIONS);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(&COUNTING, &ALLOCATIONS);
        count(&COUNTING_HAPTIC_THREAD, &HAPTIC_THREAD_ALLOCATIONS);
        count(&COUNTING_MODEL, &MODEL_ALLOCATIONS);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn ten_thousand_haptic_ticks_allocate_nothing() {
    let profile = DeviceProfile::reference();
    let (transport, peer) = MemoryTransport::pair(16);
    let device = HidDevice::new(transport, profile.clone());
    let codec = profile.codec();
    let mut config = HapticConfig::new(SafetyLimits::for_device(profile.device_rating()));
    config.limits.passivity_max_damping = Some(50.0);
    let mut haptic = HapticLoop::new(device, config);
    let mut tissue = HertzHalfSpace::default_scene();
    let (mut probe_w, mut probe_r) = slot(ProbeSample {
        t: 0.0,
        position: Vec3::zeros(),
        buttons: 0,
    });
    let (mut model_w, mut model_r) = slot(LocalForceModel::NONE);
    let telemetry = ArrayQueue::<TickRecord>::new(256);
    let stats = TickStats::new();
    let mut report = [0u8; MAX_REPORT_LEN];
    let mut out = [0u8; MAX_REPORT_LEN];
    let mut in_contact_ticks = 0;

    COUNTING.with(|c| c.set(true));
    for k in 0..10_000u64 {
        let t = k as f64 * 1e-3;
        // Firmware side: the stylus presses up and down over the lump.
        let z = 0.004 - 0.010 * (0.5 - 0.5 * (t * 3.0).cos());
        let n = codec.encode_input(&mut report, [0.001, 0.0, z], 0, k * 1000, k);
        peer.send(&report[..n]);
        // The haptic tick, as the real-time thread runs it.
        if let Some(p) = haptic.sense(t) {
            probe_w.write(p);
        }
        // The model thread's work every 5 ticks (the Hertz tissue allocates nothing either).
        if k % 5 == 0 {
            let (p, _) = probe_r.read();
            model_w.write(tissue.step(t, 5e-3, p.position));
        }
        let (model, version) = model_r.read();
        let record = haptic.actuate(t, &model, version);
        if telemetry.push(record).is_err() {
            telemetry.pop();
        }
        stats.record(1_000_000, 1_000, 500);
        if record.force.z > 0.0 {
            in_contact_ticks += 1;
        }
        peer.receive_newest(&mut out);
    }
    COUNTING.with(|c| c.set(false));

    assert_eq!(
        ALLOCATIONS.load(Ordering::Relaxed),
        0,
        "allocations in the haptic tick"
    );
    assert!(
        in_contact_ticks > 1000,
        "the run exercised contact: {in_contact_ticks}"
    );
    assert!(haptic.device().counters().reports == 10_000);

    // The counter itself works: one boxed value while counting reads one allocation.
    COUNTING.with(|c| c.set(true));
    let boxed = std::hint::black_box(Box::new(1u64));
    COUNTING.with(|c| c.set(false));
    drop(boxed);
    assert_eq!(ALLOCATIONS.load(Ordering::Relaxed), 1);
}

/// The virtual stylus pressing into the tissue, which turns allocation counting on for
/// the thread that reads it (the haptic thread, once its prologue is done) and counts
/// its reads and the writes that push back (non-zero force).
struct CountingStylus {
    inner: SimDevice,
    reads: Arc<AtomicU64>,
    pushed: Arc<AtomicU64>,
}

impl HapticDevice for CountingStylus {
    fn read(&mut self, now: f64) -> Result<DeviceSample, DeviceError> {
        COUNTING_HAPTIC_THREAD.with(|c| c.set(true));
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.inner.read(now)
    }
    fn write_force(&mut self, force: Vec3) -> Result<(), DeviceError> {
        if force != Vec3::zeros() {
            self.pushed.fetch_add(1, Ordering::Relaxed);
        }
        self.inner.write_force(force)
    }
    fn rating(&self) -> DeviceRating {
        self.inner.rating()
    }
    fn name(&self) -> &str {
        self.inner.name()
    }
}

#[test]
fn the_real_time_haptic_thread_allocates_nothing_once_its_loop_runs() {
    let reads = Arc::new(AtomicU64::new(0));
    let pushed = Arc::new(AtomicU64::new(0));
    let device = CountingStylus {
        inner: SimDevice::new(Script::Press {
            top: Vec3::new(0.0, 0.0, 0.002),
            depth: 0.006,
            period: 0.5,
        }),
        reads: reads.clone(),
        pushed: pushed.clone(),
    };
    let config = RuntimeConfig {
        haptic: HapticConfig::new(SafetyLimits::for_device(device.rating())),
        realtime: RealtimePolicy::AUTO,
        telemetry_capacity: 64,
        log_stats: false,
    };
    // Recording too: every tick's record into a ring of 300, read here for a while, then
    // not (the haptic thread drops records while it is full), then again before the stop.
    let (sink, mut source) = tick_ring(300);
    let runtime =
        HapticRuntime::start_recording(device, HertzHalfSpace::default_scene(), config, Some(sink))
            .expect("auto never refuses to start");
    let shared = runtime.shared().clone();
    let mut recorded = 0;
    for _ in 0..50 {
        std::thread::sleep(std::time::Duration::from_millis(10));
        while source.pop().is_some() {
            recorded += 1;
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(1000));
    // Room again for the last ticks and the stop's record.
    while source.pop().is_some() {
        recorded += 1;
    }
    let (haptic, _) = runtime.stop();
    let mut last = None;
    while let Some(r) = source.pop() {
        recorded += 1;
        last = Some(r);
    }
    assert!(recorded > 300, "{recorded} ticks recorded");
    assert!(source.dropped() > 0, "the full ring dropped records");
    assert!(source.writer_gone());
    assert_eq!(
        last.map(|r| r.force),
        Some(Vec3::zeros()),
        "the recording ends on the zero force of the stop"
    );
    assert_eq!(
        HAPTIC_THREAD_ALLOCATIONS.load(Ordering::Relaxed),
        0,
        "allocations on the haptic thread"
    );
    // The loop ran (at least half its ticks on a loaded machine), with contact, and
    // wrote zero force last.
    let ticks = reads.load(Ordering::Relaxed);
    assert!(ticks > 700, "{ticks} ticks");
    let pushed = pushed.load(Ordering::Relaxed);
    assert!(pushed > 100, "{pushed} ticks pushed back");
    assert!(
        shared.telemetry_dropped.get() > 0,
        "the full queue dropped records"
    );
    assert_eq!(haptic.device().inner.last_force(), Vec3::zeros());

    // The per-thread counter itself works: one boxed value on a counting thread.
    std::thread::spawn(|| {
        COUNTING_HAPTIC_THREAD.with(|c| c.set(true));
        drop(std::hint::black_box(Box::new(1u64)));
        COUNTING_HAPTIC_THREAD.with(|c| c.set(false));
    })
    .join()
    .unwrap();
    assert_eq!(HAPTIC_THREAD_ALLOCATIONS.load(Ordering::Relaxed), 1);
}

/// Steps of both tissue backends with a contact patch and point loads that change
/// every step: with the surface's K⁻¹ columns complete, from the first step on neither
/// `set_loads`, `advance`, the compliance, the bound nor the displaced surface
/// allocates.
#[test]
fn tissue_steps_with_point_loads_allocate_nothing() {
    use crate::support::block::{block, SIZE};
    use palpa::condensed::CondensedModel;
    use palpa::contact::{ContactPatch, SurfaceBvh};
    use palpa::fem::{Ordering as FemOrdering, Support};
    use palpa::modal::{compute_modes, ModalParams, ModalRuntime, Timings};
    use palpa::tissue::{PointConstraint, PointLoad, TissueModel};

    let b = block();
    let bvh = SurfaceBvh::build(b.triangles.clone(), &b.mesh.nodes);
    let c = bvh
        .closest_point(&Vec3::new(0.031, 0.027, SIZE.z), 1e-6, &b.mesh.nodes)
        .unwrap();
    let n = Vec3::z();
    // The widest supports a step may have: a patch contact and a patch load.
    let mut patch = ContactPatch::new(0.03, &bvh, &b.mesh.nodes);
    let support = patch.support(&bvh, &b.mesh.nodes, c.triangle, &c.bary, &n);
    let c2 = bvh
        .closest_point(&Vec3::new(0.02, 0.03, SIZE.z), 1e-6, &b.mesh.nodes)
        .unwrap();
    let load_patch = patch.support(&bvh, &b.mesh.nodes, c2.triangle, &c2.bary, &n);
    assert!(support.nodes().len() > 20 && load_patch.nodes().len() > 20);
    let loads = |i: usize| {
        let s = (i as f64 * 0.1).sin();
        [
            PointLoad {
                support: load_patch,
                force: Vec3::new(0.02 * s, 0.01, -0.005),
            },
            PointLoad {
                support: Support::triangle(b.triangles[c.triangle], c.bary),
                force: Vec3::new(0.0, 0.01 * s, 0.0),
            },
        ]
    };

    let columns = || {
        let mut c = b.columns(256);
        c.precompute(&b.surface_nodes).unwrap();
        c
    };
    let (basis, _, _) = compute_modes(
        &b.system,
        20,
        FemOrdering::default(),
        &mut Timings::default(),
    )
    .unwrap();
    let params = ModalParams {
        max_rows: 6,
        ..ModalParams::default()
    };
    let models: Vec<(&str, Box<dyn TissueModel>)> = vec![
        (
            "condensed",
            Box::new(CondensedModel::new(b.geometry(), columns(), 0, 6).unwrap()),
        ),
        (
            "modal",
            Box::new(
                ModalRuntime::new(
                    b.geometry(),
                    &basis.eigenvalues,
                    basis.shapes.as_ref(),
                    params,
                    Some(columns()),
                )
                .unwrap(),
            ),
        ),
    ];
    for (name, mut model) in models {
        let mut f = [Vec3::zeros()];
        let mut u = vec![Vec3::zeros(); b.surface_nodes.len()];
        let mut moved = 0.0f64;
        let step = |model: &mut Box<dyn TissueModel>, i: usize, f: &mut [Vec3; 1]| {
            let depth = 1e-3 * (1.0 + 0.2 * (i as f64 * 0.05).sin());
            let contact = PointConstraint::contact_on(support, n, c.point - n * depth);
            model.set_loads(&loads(i)).unwrap();
            model.advance(5e-3, &[contact], f).unwrap();
            model.point_compliance(&support).unwrap();
            model.displacement_bound()
        };
        COUNTING_MODEL.with(|c| c.set(true));
        for i in 0..500 {
            moved = moved.max(step(&mut model, i, &mut f));
            if i % 6 == 0 {
                model.displacements(&b.surface_nodes, &mut u);
            }
        }
        COUNTING_MODEL.with(|c| c.set(false));
        assert_eq!(
            MODEL_ALLOCATIONS.load(Ordering::Relaxed),
            0,
            "allocations in the {name} model step"
        );
        assert!(f[0].z < 0.0 && moved > 5e-4, "{name}: {f:?}, {moved:e}");
    }
    // The counter itself works.
    COUNTING_MODEL.with(|c| c.set(true));
    drop(std::hint::black_box(Box::new(1u64)));
    COUNTING_MODEL.with(|c| c.set(false));
    assert_eq!(MODEL_ALLOCATIONS.load(Ordering::Relaxed), 1);
}

/// A Cartesian device held by a scripted person (the stand-ins' person of `devices
/// check`, in Rust): still, then out to 40 mm and back along each axis, then held where a
/// force moves the handle 1 mm per 0.3 N. No allocation in `read` or `write_force`.
struct HeldDevice {
    force: Vec3,
    sequence: u64,
}

impl HeldDevice {
    fn position(&self, t: f64) -> Vec3 {
        let (still, leg) = (0.8, 0.5);
        let period = still + 2.0 * leg;
        let s = t - still;
        let mut p = Vec3::zeros();
        if (0.0..6.0 * period).contains(&s) {
            let k = (s / period) as usize;
            let u = s - k as f64 * period;
            let x = if u < leg {
                u / leg
            } else {
                (2.0 - u / leg).max(0.0)
            };
            let reach = 0.040 * (0.5 - 0.5 * (std::f64::consts::PI * x.min(1.0)).cos());
            p[k / 2] = if k % 2 == 0 { reach } else { -reach };
        }
        p + self.force / 300.0
    }
}

impl HapticDevice for HeldDevice {
    fn read(&mut self, now: f64) -> Result<DeviceSample, DeviceError> {
        self.sequence += 1;
        Ok(DeviceSample {
            position: self.position(now),
            device_time: now,
            sequence: self.sequence,
            ..DeviceSample::ORIGIN
        })
    }
    fn write_force(&mut self, force: Vec3) -> Result<(), DeviceError> {
        self.force = force;
        Ok(())
    }
    fn rating(&self) -> DeviceRating {
        DeviceRating {
            max_force: 12.0,
            max_stiffness: 5000.0,
            workspace: Some(palpa::device::DeviceWorkspace {
                centre: Vec3::zeros(),
                half_extent: Vec3::repeat(0.0433),
            }),
        }
    }
    fn name(&self) -> &str {
        "held"
    }
}

/// Presses Enter at once whenever asked.
struct Prompt;

impl palpa::device::check::Operator for Prompt {
    fn show(&mut self, _prompt: palpa::device::check::Prompt) {}
    fn confirmed(&mut self) -> bool {
        true
    }
}

#[test]
fn a_whole_device_check_allocates_nothing_in_its_ticks() {
    use palpa::device::check::{CheckLoop, Plan};
    let mut device = HeldDevice {
        force: Vec3::zeros(),
        sequence: 0,
    };
    let plan = Plan::new(device.rating().workspace, None, None);
    let mut check = CheckLoop::new(plan, None);
    let mut operator = Prompt;
    let mut ticks = 0u64;
    COUNTING.with(|c| c.set(true));
    while ticks < 60_000 && check.tick(ticks as f64 * 1e-3, &mut device, &mut operator) {
        ticks += 1;
    }
    COUNTING.with(|c| c.set(false));
    let allocations = ALLOCATIONS.swap(0, Ordering::Relaxed);
    let outcome = check.outcome();
    assert!(outcome.passed(), "{}", outcome.report(check.plan()));
    assert_eq!(
        allocations, 0,
        "{ticks} check ticks allocated {allocations} times"
    );
}
