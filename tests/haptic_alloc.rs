//! The haptic tick allocates nothing: a counting global allocator over 10,000 ticks of
//! the real-time tick body (HID device over the in-memory transport, probe and model
//! slots, local-stiffness extrapolation, safety, force write, telemetry queue, stats).

use crossbeam::queue::ArrayQueue;
use palpa::device::hid::{HidDevice, MemoryTransport, MAX_REPORT_LEN};
use palpa::device::profile::DeviceProfile;
use palpa::haptic::analytic::HertzHalfSpace;
use palpa::haptic::stats::TickStats;
use palpa::haptic::tick::ProbeSample;
use palpa::haptic::{HapticConfig, HapticLoop, SafetyLimits, TickRecord};
use palpa::model::{LocalForceModel, ModelStep};
use palpa::rt::slot;
use palpa::Vec3;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
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
