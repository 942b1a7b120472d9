//! Haptic tick compute time: device read + force model + safety + force write, with the
//! reference HID profile over the in-memory transport (so report decoding and encoding
//! are included) and the Hertz tissue's local force model.
//!
//! Criterion measures the median; the tail (p99.9, max) of single ticks is measured
//! first with the loop's own clock over 200,000 ticks and printed, because criterion
//! reports batch statistics only.

use criterion::Criterion;
use palpa::device::hid::{HidDevice, MemoryPeer, MemoryTransport, MAX_REPORT_LEN};
use palpa::device::profile::{DeviceProfile, ReportCodec};
use palpa::haptic::analytic::HertzHalfSpace;
use palpa::haptic::{HapticConfig, HapticLoop, SafetyLimits};
use palpa::rt::now_ns;
use palpa::tissue::{LocalForceModel, ModelStep};
use palpa::Vec3;
use std::hint::black_box;

struct Bench {
    haptic: HapticLoop<HidDevice<MemoryTransport>>,
    peer: MemoryPeer,
    codec: ReportCodec,
    model: LocalForceModel,
    report: [u8; MAX_REPORT_LEN],
    out: [u8; MAX_REPORT_LEN],
    k: u64,
}

impl Bench {
    fn new() -> Self {
        let profile = DeviceProfile::reference();
        let (transport, peer) = MemoryTransport::pair(16);
        let config = HapticConfig::new(SafetyLimits::for_device(profile.device_rating()));
        let haptic = HapticLoop::new(HidDevice::new(transport, profile.clone()), config);
        let model = HertzHalfSpace::default_scene().step(0.0, 5e-3, Vec3::new(0.003, 0.0, -0.004));
        Self {
            haptic,
            peer,
            codec: profile.codec(),
            model,
            report: [0; MAX_REPORT_LEN],
            out: [0; MAX_REPORT_LEN],
            k: 0,
        }
    }

    /// The firmware sends a report; one haptic tick; the firmware takes the force.
    fn tick(&mut self) -> Vec3 {
        let k = self.k;
        self.k += 1;
        let t = k as f64 * 1e-3;
        let p = Vec3::new(0.003, 0.0, -0.004 - 1e-6 * (k % 7) as f64);
        let n = self
            .codec
            .encode_input(&mut self.report, p.into(), 0, k * 1000, k);
        self.peer.send(&self.report[..n]);
        self.haptic.sense(t);
        let r = self.haptic.actuate(t, &self.model, 1 + k / 5);
        self.peer.receive(&mut self.out);
        r.force
    }
}

fn tail_latency() {
    let mut b = Bench::new();
    for _ in 0..10_000 {
        b.tick();
    }
    let n = 200_000;
    let mut ns: Vec<u64> = (0..n)
        .map(|_| {
            let start = now_ns();
            black_box(b.tick());
            now_ns() - start
        })
        .collect();
    ns.sort_unstable();
    let q = |p: f64| ns[((p * n as f64) as usize).min(n - 1)] as f64 / 1e3;
    println!(
        "haptic tick (single ticks, {n}): p50 {:.2} µs, p99 {:.2} µs, p99.9 {:.2} µs, max {:.2} µs",
        q(0.5),
        q(0.99),
        q(0.999),
        ns[n - 1] as f64 / 1e3
    );
}

/// One tick's report work for a kinematic profile: decode the WoodenHaptics 1.5 input
/// report (encoders → joint angles → tip position) and encode a force at that pose
/// (Jacobian transpose → motor currents).
fn kinematic_codec(c: &mut Criterion) {
    let profile = DeviceProfile::shipped()
        .into_iter()
        .find(|p| p.name == "woodenhaptics")
        .expect("shipped");
    let mut codec = profile.codec();
    let mut input = [0u8; MAX_REPORT_LEN];
    let mut output = [0u8; MAX_REPORT_LEN];
    let mut k = 0u64;
    c.bench_function(
        "kinematic profile: decode + encode (WoodenHaptics)",
        |bench| {
            bench.iter(|| {
                k += 1;
                let counts = [(k % 97) as f64, -((k % 53) as f64), (k % 31) as f64];
                let n = codec.encode_input(&mut input, counts, 0, 0, k);
                let d = codec.decode_input(black_box(&input[..n]));
                let force = Vec3::new(0.5, -0.2, -1.0) + d.position;
                black_box(codec.encode_output(&mut output, force, k))
            })
        },
    );
}

fn main() {
    tail_latency();
    let mut c = Criterion::default().configure_from_args();
    let mut b = Bench::new();
    c.bench_function(
        "haptic tick (HID in-memory, local-stiffness, safety)",
        |bench| bench.iter(|| black_box(b.tick())),
    );
    kinematic_codec(&mut c);
    c.final_summary();
}
