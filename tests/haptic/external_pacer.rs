//! A device whose SDK owns the servo loop (`HapticDevice::external_pacer`) drives the
//! real runtime's haptic tick from the SDK's thread: the ticks run there until the
//! runtime stops, the force is the same tick's force, and a pacer error stops the
//! runtime loudly with zero force on the device.

use palpa::device::sim::{Script, SimDevice};
use palpa::device::{DeviceError, DeviceRating, DeviceSample, ExternalPacer, HapticDevice};
use palpa::haptic::analytic::HertzHalfSpace;
use palpa::haptic::runtime::{HapticRuntime, RuntimeConfig};
use palpa::haptic::{HapticConfig, SafetyLimits, SafetyState, TickRecord};
use palpa::rt::RealtimePolicy;
use palpa::Vec3;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The probe rests 4 mm deep beside the lump: a steady force of a few tenths of a newton.
const PROBE: Vec3 = Vec3::new(0.02, 0.0, -0.004);
/// The stand-in SDK's servo thread.
const SERVO: &str = "sdk-servo";

/// Every force written: whether on the servo thread, and the force (N).
type Writes = Arc<Mutex<Vec<(bool, Vec3)>>>;

/// A still probe whose ticks a servo thread of its own drives.
struct ServoDevice {
    probe: SimDevice,
    writes: Writes,
    /// The servo fails (instead of calling the tick) at this tick.
    fail_at: Option<u64>,
}

impl HapticDevice for ServoDevice {
    fn read(&mut self, now: f64) -> Result<DeviceSample, DeviceError> {
        self.probe.read(now)
    }
    fn write_force(&mut self, force: Vec3) -> Result<(), DeviceError> {
        let on_servo = std::thread::current().name() == Some(SERVO);
        self.writes.lock().unwrap().push((on_servo, force));
        Ok(())
    }
    fn rating(&self) -> DeviceRating {
        DeviceRating {
            max_force: 8.0,
            max_stiffness: 3000.0,
            workspace: None,
        }
    }
    fn name(&self) -> &str {
        "servo-paced probe"
    }
    fn external_pacer(&mut self) -> Option<Box<dyn ExternalPacer>> {
        Some(Box::new(ServoThread {
            fail_at: self.fail_at,
        }))
    }
}

/// A 1 kHz servo thread, like an SDK's scheduler.
struct ServoThread {
    fail_at: Option<u64>,
}

impl ExternalPacer for ServoThread {
    fn run(&mut self, tick: &mut (dyn FnMut() -> bool + Send)) -> Result<(), DeviceError> {
        let fail_at = self.fail_at;
        std::thread::scope(|s| {
            std::thread::Builder::new()
                .name(SERVO.into())
                .spawn_scoped(s, move || {
                    for n in 1u64.. {
                        std::thread::sleep(Duration::from_millis(1));
                        if fail_at == Some(n) {
                            return Err(DeviceError::Disconnected("servo fault".into()));
                        }
                        if !tick() {
                            return Ok(());
                        }
                    }
                    unreachable!("the servo counts forever")
                })
                .unwrap()
                .join()
                .unwrap()
        })
    }
}

fn start(fail_at: Option<u64>) -> (HapticRuntime<ServoDevice, HertzHalfSpace>, Writes) {
    let writes = Writes::default();
    let device = ServoDevice {
        probe: SimDevice::new(Script::Still(PROBE)),
        writes: writes.clone(),
        fail_at,
    };
    let mut limits = SafetyLimits::for_device(device.rating());
    limits.ramp_time = 0.05;
    let config = RuntimeConfig {
        haptic: HapticConfig::new(limits),
        realtime: RealtimePolicy::NONE,
        telemetry_capacity: 20_000,
        log_stats: false,
    };
    let runtime = HapticRuntime::start(device, HertzHalfSpace::default_scene(), config).unwrap();
    (runtime, writes)
}

#[test]
fn an_external_pacer_runs_the_haptic_tick_on_its_thread_until_the_runtime_stops() {
    let (runtime, writes) = start(None);
    let shared = runtime.shared().clone();
    // Runs 0.6 s, and on until the force has ramped in to full gain: on a loaded machine
    // the unprivileged model thread can be late, and the watchdog rightly fades the force
    // and ramps it in again (the serve runs it at real-time priority).
    let mut records = Vec::new();
    let begun = Instant::now();
    while begun.elapsed() < Duration::from_millis(600)
        || (!records.iter().any(at_full_gain) && begun.elapsed() < Duration::from_secs(30))
    {
        std::thread::sleep(Duration::from_millis(5));
        records.extend(std::iter::from_fn(|| shared.telemetry.pop()));
    }
    let (haptic, _) = runtime.stop();
    drop(haptic);
    records.extend(std::iter::from_fn(|| shared.telemetry.pop()));
    let writes = writes.lock().unwrap().clone();
    let ticks = records.len();
    let on_servo = writes.iter().filter(|(servo, _)| *servo).count();
    // Every tick ran on the servo thread and wrote once; only the stop's zero did not.
    assert!(ticks > 200, "{ticks} ticks in 0.6 s or more");
    assert_eq!(shared.telemetry_dropped.get(), 0, "every tick recorded");
    assert_eq!(
        on_servo, ticks,
        "one write per tick, each on the servo thread"
    );
    let (last_on_servo, last) = *writes.last().unwrap();
    assert!(
        !last_on_servo && last == Vec3::zeros(),
        "zero force at stop"
    );
    assert!(writes[..writes.len() - 1].iter().all(|(servo, _)| *servo));
    // The ticks rendered the probe's steady force, pushing it out of the tissue (+z):
    // every tick at full gain wrote exactly that force, that tick, to the device.
    let full = HertzHalfSpace::default_scene().force_and_stiffness(PROBE).1;
    assert!(full.z > 0.1, "{full}");
    let normal: Vec<(usize, &TickRecord)> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| at_full_gain(r))
        .collect();
    assert!(!normal.is_empty(), "the force ramped in to full gain");
    for (i, r) in normal {
        assert!(
            (r.force - full).norm() < 1e-9 * full.norm(),
            "tick {i} at full gain commanded {} N, not the full force {full} N",
            r.force
        );
        assert_eq!(
            writes[i],
            (true, r.force),
            "tick {i}'s force reached the device"
        );
    }
    assert!(shared.failure().is_none());
}

fn at_full_gain(r: &TickRecord) -> bool {
    r.state == SafetyState::Normal
}

#[test]
fn a_failing_external_pacer_stops_the_runtime_with_its_error_and_zero_force() {
    let (runtime, writes) = start(Some(300));
    let shared = runtime.shared().clone();
    let begun = std::time::Instant::now();
    while shared.failure().is_none() && begun.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let failure = shared
        .failure()
        .expect("the failure is reported")
        .to_owned();
    assert_eq!(
        failure,
        "the haptic thread failed: device disconnected: servo fault"
    );
    let (haptic, _) = runtime.stop();
    drop(haptic);
    let writes = writes.lock().unwrap();
    assert!(
        writes.iter().any(|(_, f)| f.norm() > 0.1),
        "pressed before the fault"
    );
    assert_eq!(
        writes.last().unwrap().1,
        Vec3::zeros(),
        "zero force after the fault"
    );
}
