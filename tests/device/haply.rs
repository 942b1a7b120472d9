//! The Haply backend against a stand-in Inverse Service: a real WebSocket server on
//! 127.0.0.1 speaking the documented simulation-channel messages (an inventory on
//! connect, one state update per command), simulating an Inverse3 whose cursor the test
//! moves, and recording every force command it receives. First the device alone, then a
//! session through the real `palpa serve --device haply:ws://…` binary: positions in,
//! forces out, the service dropping and coming back, a malformed message, Ctrl-C.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::serve::Served;
use palpa::device::haply::{HaplyDevice, INVERSE3_RATING};
use palpa::device::{DeviceError, HapticDevice};
use palpa::Vec3;
use serde_json::{json, Value};
use tungstenite::Message;

const BINARY: &str = env!("CARGO_BIN_EXE_palpa");

/// Counts allocations made by the thread that sets `COUNTING` (the test's stand-in for
/// the haptic thread); other threads (the link, the stand-in) are not counted.
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
const START: Duration = Duration::from_secs(600);
const WAIT: Duration = Duration::from_secs(60);
const DEVICE_ID: &str = "049D";

/// One force command as the stand-in received it.
#[derive(Clone, Copy, Debug)]
struct Command {
    /// The force the service applied: the command's, when its key is the one this
    /// service reads, else none (a service ignores a key it does not know).
    force: [f64; 3],
    /// The key the force came under: `vector` or `values`.
    key: &'static str,
    /// It carried `session.configure` with the identity basis.
    handshake: bool,
}

/// Which service the stand-in is: the key of `set_cursor_force` it reads, the version it
/// answers `GET /version` with (none: 404), and whether its states report the force
/// applied (`current_cursor_force`, 3.5).
#[derive(Clone, Copy, Debug)]
struct Dialect {
    key: &'static str,
    version: Option<&'static str>,
    reports_force: bool,
}

impl Default for Dialect {
    /// The documented service 3.5.
    fn default() -> Self {
        Self {
            key: "vector",
            version: Some("3.5.0"),
            reports_force: true,
        }
    }
}

#[derive(Default)]
struct Shared {
    /// The service this stand-in is.
    dialect: Mutex<Dialect>,
    /// The force the service applies now (N).
    applied: Mutex<[f64; 3]>,
    /// Every command received, per accepted connection.
    connections: Mutex<Vec<Vec<Command>>>,
    /// Cursor position reported (m, Haply frame).
    cursor: Mutex<[f64; 3]>,
    /// The service is away: new connections are closed at once.
    away: AtomicBool,
    /// Drop the current connection now (no close handshake).
    drop_now: AtomicBool,
    /// Answer the next command with a message that is not JSON.
    malformed: AtomicBool,
    /// Receive commands but answer none.
    silent: AtomicBool,
}

/// The stand-in Inverse Service.
struct StandIn {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

fn state_message(cursor: [f64; 3], with_config: bool, applied: Option<[f64; 3]>) -> String {
    let [x, y, z] = cursor;
    let mut device = json!({
        "device_id": DEVICE_ID,
        "state": {
            "cursor_position": { "x": x, "y": y, "z": z },
            "cursor_velocity": { "x": 0.0, "y": 0.0, "z": 0.0 },
            "control_mode": "cartesian"
        }
    });
    if let Some([fx, fy, fz]) = applied {
        device["state"]["current_cursor_force"] = json!({ "x": fx, "y": fy, "z": fz });
    }
    if with_config {
        device["config"] = json!({ "type": "inverse3", "handedness": "right",
                                   "basis": { "permutation": "XYZ" } });
        device["status"] = json!({ "ready": true, "started": true });
    }
    json!({ "session_id": 1, "inverse3": [device] }).to_string()
}

/// The key and the force of a `set_cursor_force` for our device, under `vector` (the 3.5
/// documentation) or `values` (the 3.1 samples).
fn force_of(command: &Value) -> Option<(&'static str, [f64; 3])> {
    let device = &command["inverse3"][0];
    if device["device_id"] != DEVICE_ID {
        return None;
    }
    let set = &device["commands"]["set_cursor_force"];
    let key = ["vector", "values"]
        .into_iter()
        .find(|k| set.get(k).is_some())?;
    let v = &set[key];
    Some((key, [v["x"].as_f64()?, v["y"].as_f64()?, v["z"].as_f64()?]))
}

/// Answers `GET /version` on the WebSocket's port as the 3.x service does (or 404);
/// returns `true` when the connection was that request.
fn answered_version(stream: &mut TcpStream, s: &Shared) -> bool {
    use std::io::{Read, Write};
    let mut head = [0u8; 12];
    stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let Ok(n) = stream.peek(&mut head) else {
        return false;
    };
    if &head[..n.min(12)] != b"GET /version" {
        return false;
    }
    let mut request = [0u8; 1024];
    let _ = stream.read(&mut request);
    let answer = match s.dialect.lock().unwrap().version {
        Some(v) => {
            let body = format!(r#"{{"git_tag":"{v}","project_name":"haply-inverse-service"}}"#);
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
        }
        None => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_owned(),
    };
    let _ = stream.write_all(answer.as_bytes());
    true
}

impl StandIn {
    fn start(cursor: [f64; 3]) -> Self {
        Self::start_as(cursor, Dialect::default())
    }

    fn start_as(cursor: [f64; 3], dialect: Dialect) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared::default());
        *shared.dialect.lock().unwrap() = dialect;
        *shared.cursor.lock().unwrap() = cursor;
        let s = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                if s.away.load(Ordering::SeqCst) {
                    drop(stream);
                    continue;
                }
                let s = s.clone();
                std::thread::spawn(move || serve_connection(stream, &s));
            }
        });
        Self { addr, shared }
    }

    fn url(&self) -> String {
        format!("ws://{}", self.addr)
    }

    fn move_cursor(&self, to: [f64; 3]) {
        *self.shared.cursor.lock().unwrap() = to;
    }

    fn connections(&self) -> Vec<Vec<Command>> {
        self.shared.connections.lock().unwrap().clone()
    }

    /// Waits until `accept` holds for the recorded connections; panics after `WAIT`.
    fn wait_for(&self, what: &str, accept: impl Fn(&[Vec<Command>]) -> bool) -> Vec<Vec<Command>> {
        let deadline = Instant::now() + WAIT;
        loop {
            let c = self.connections();
            if accept(&c) {
                return c;
            }
            assert!(
                Instant::now() < deadline,
                "stand-in: no {what} within {WAIT:?}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

fn serve_connection(mut stream: TcpStream, s: &Shared) {
    stream.set_nodelay(true).unwrap();
    if answered_version(&mut stream, s) {
        return;
    }
    stream.set_read_timeout(None).unwrap();
    let Ok(mut ws) = tungstenite::accept(stream) else {
        return;
    };
    let index = {
        let mut c = s.connections.lock().unwrap();
        c.push(Vec::new());
        c.len() - 1
    };
    s.drop_now.store(false, Ordering::SeqCst);
    let cursor = *s.cursor.lock().unwrap();
    let dialect = *s.dialect.lock().unwrap();
    let applied = |s: &Shared| dialect.reports_force.then(|| *s.applied.lock().unwrap());
    if ws
        .send(Message::text(state_message(cursor, true, applied(s))))
        .is_err()
    {
        return;
    }
    ws.get_ref()
        .set_read_timeout(Some(Duration::from_millis(10)))
        .unwrap();
    loop {
        if s.drop_now.swap(false, Ordering::SeqCst) {
            return;
        }
        let text = match ws.read() {
            Ok(Message::Text(t)) => t,
            Ok(Message::Close(_)) => {
                let _ = ws.flush();
                return;
            }
            Ok(_) => continue,
            Err(tungstenite::Error::Io(e)) if e.kind() == std::io::ErrorKind::WouldBlock => {
                continue
            }
            Err(_) => return,
        };
        let command: Value = serde_json::from_str(&text).expect("palpa sends JSON");
        let (key, sent) = force_of(&command).expect("a set_cursor_force");
        // A key the service does not read leaves the device without force.
        let force = if key == dialect.key { sent } else { [0.0; 3] };
        *s.applied.lock().unwrap() = force;
        let handshake = command["session"]["configure"]["basis"]["permutation"] == "XYZ";
        s.connections.lock().unwrap()[index].push(Command {
            force,
            key,
            handshake,
        });
        if s.silent.load(Ordering::SeqCst) {
            continue;
        }
        let reply = if s.malformed.swap(false, Ordering::SeqCst) {
            r#"{"inverse3": [{"device_id": "049D", "state": {"cursor_position": "#.to_owned()
        } else {
            state_message(*s.cursor.lock().unwrap(), false, applied(s))
        };
        if ws.send(Message::text(reply)).is_err() {
            return;
        }
    }
}

fn norm(f: [f64; 3]) -> f64 {
    f.iter().map(|c| c * c).sum::<f64>().sqrt()
}

/// Reads until the device reports `position` (m); returns that sample's sequence.
fn read_until(device: &mut HaplyDevice, position: Vec3) -> u64 {
    let deadline = Instant::now() + WAIT;
    loop {
        let s = device.read(0.0).unwrap();
        if s.position == position {
            return s.sequence;
        }
        assert!(
            Instant::now() < deadline,
            "the device never reported {position:?}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn positions_come_in_and_every_force_reaches_the_service_zero_last() {
    let service = StandIn::start([0.0, -0.12, 0.15]);
    let mut device = HaplyDevice::open(&service.url(), Duration::from_secs(5)).unwrap();
    assert_eq!(device.rating(), INVERSE3_RATING);
    let first = read_until(&mut device, Vec3::new(0.0, -0.12, 0.15));

    service.move_cursor([0.01, -0.1, 0.14]);
    let later = read_until(&mut device, Vec3::new(0.01, -0.1, 0.14));
    assert!(
        later > first,
        "new states advance the sequence: {first} → {later}"
    );

    device.write_force(Vec3::new(0.5, -0.25, 1.5)).unwrap();
    let c = service.wait_for("force of 1.5 N up", |c| {
        c.len() == 1 && c[0].last().is_some_and(|k| k.force == [0.5, -0.25, 1.5])
    });
    let commands = &c[0];
    assert!(
        commands[0].handshake,
        "the first command configures the session"
    );
    assert_eq!(commands[0].force, [0.0; 3], "and commands no force");
    assert!(commands[1..].iter().all(|k| !k.handshake));

    drop(device);
    let c = service.connections();
    assert_eq!(c.len(), 1);
    assert_eq!(
        c[0].last().unwrap().force,
        [0.0; 3],
        "the last command before palpa closes is zero force"
    );
}

#[test]
fn reading_and_commanding_while_connected_allocate_nothing() {
    let service = StandIn::start([0.0, -0.12, 0.15]);
    let mut device = HaplyDevice::open(&service.url(), Duration::from_secs(5)).unwrap();
    let mut sequences = 0;
    let mut last = 0;
    COUNTING.with(|c| c.set(true));
    // Two seconds of ticks at about 1 kHz, as the haptic thread would make them.
    for i in 0..2000 {
        let s = device.read(0.0).unwrap();
        sequences += u64::from(s.sequence != last);
        last = s.sequence;
        device
            .write_force(Vec3::new(0.0, 0.0, i as f64 * 1e-3))
            .unwrap();
        std::thread::sleep(Duration::from_micros(500));
    }
    COUNTING.with(|c| c.set(false));
    assert_eq!(ALLOCATIONS.load(Ordering::Relaxed), 0);
    assert!(sequences > 1, "states kept arriving while counting");
}

#[test]
fn a_silent_service_goes_stale_then_disconnected_and_a_reconnect_starts_from_zero() {
    let service = StandIn::start([0.0, -0.12, 0.15]);
    let mut device = HaplyDevice::open(&service.url(), Duration::from_secs(5)).unwrap();
    device.write_force(Vec3::new(0.0, 0.0, 2.0)).unwrap();
    service.wait_for("force of 2 N", |c| {
        c[0].last().is_some_and(|k| k.force == [0.0, 0.0, 2.0])
    });

    // Silent: the sequence stops advancing (the haptic loop fades a stale sample long
    // before the link gives up), then the link reports the disconnect.
    service.shared.silent.store(true, Ordering::SeqCst);
    service.shared.away.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(5));
    let deadline = Instant::now() + WAIT;
    let stale = loop {
        let a = device.read(0.0);
        std::thread::sleep(Duration::from_millis(3));
        let b = device.read(0.0);
        match (a, b) {
            (Ok(a), Ok(b)) if a.sequence == b.sequence => break a.sequence,
            _ => assert!(Instant::now() < deadline, "the sequence kept advancing"),
        }
    };
    let deadline = Instant::now() + WAIT;
    loop {
        match device.read(0.0) {
            Err(DeviceError::Disconnected(why)) => {
                assert!(why.contains(&service.url()), "{why}");
                break;
            }
            Ok(s) => assert_eq!(s.sequence, stale, "no new state from a silent service"),
            Err(e) => panic!("{e}"),
        }
        assert!(
            Instant::now() < deadline,
            "no disconnect from a silent service"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(device.write_force(Vec3::new(0.0, 0.0, 1.0)).is_err());

    // Away: reconnecting fails quietly; back: it succeeds and starts from zero force.
    let try_for = |device: &mut HaplyDevice, d: Duration| {
        let until = Instant::now() + d;
        while Instant::now() < until {
            if device.reconnect().unwrap() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    };
    assert!(!try_for(&mut device, Duration::from_millis(500)));
    assert_eq!(service.connections().len(), 1, "no session while away");
    service.shared.silent.store(false, Ordering::SeqCst);
    service.shared.away.store(false, Ordering::SeqCst);
    assert!(
        try_for(&mut device, WAIT),
        "reconnects once the service is back"
    );
    let back = device.read(0.0).unwrap();
    assert!(back.sequence > stale, "{} after {stale}", back.sequence);
    let c = service.wait_for("commands on the new connection", |c| {
        c.len() == 2 && c[1].len() >= 5
    });
    assert!(c[1][0].handshake);
    assert!(
        c[1].iter().all(|k| k.force == [0.0; 3]),
        "the 2 N from before the disconnect is never sent again"
    );
}

#[test]
fn no_service_and_a_malformed_inventory_are_clear_open_errors() {
    let nothing = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}", nothing.local_addr().unwrap());
    drop(nothing);
    let e = HaplyDevice::open(&url, Duration::from_millis(500))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains(&url) && e.contains("running?"), "{e}");

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        // The version request first (answered 404), then the WebSocket.
        let no_version = Shared::default();
        no_version.dialect.lock().unwrap().version = None;
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            if answered_version(&mut stream, &no_version) {
                continue;
            }
            stream.set_read_timeout(None).unwrap();
            let mut ws = tungstenite::accept(stream).unwrap();
            ws.send(Message::text("{\"inverse3\": 7}")).unwrap();
            std::thread::sleep(Duration::from_secs(1));
            return;
        }
    });
    let e = HaplyDevice::open(&url, Duration::from_secs(5))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("Inverse Service's JSON"), "{e}");
}

/// Commands `force` (N) every millisecond until the service applies it (or panics after
/// `WAIT`); returns the commands received by then.
fn command_until_applied(
    service: &StandIn,
    device: &mut HaplyDevice,
    force: [f64; 3],
) -> Vec<Command> {
    let deadline = Instant::now() + WAIT;
    loop {
        device.read(0.0).unwrap();
        device.write_force(Vec3::from(force)).unwrap();
        let c = service.connections();
        if c[0].last().is_some_and(|k| k.force == force) {
            return c[0].clone();
        }
        assert!(
            Instant::now() < deadline,
            "the service never applied {force:?}; keys sent: {:?}",
            c[0].iter().rev().take(3).map(|k| k.key).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn services_that_read_only_vector_or_only_values_both_get_the_force() {
    let cases = [
        // The documented 3.5 service: `vector`, by its version.
        (Dialect::default(), "vector", "service 3.5.0"),
        // A 3.1 service: `values`, by its version.
        (
            Dialect {
                key: "values",
                version: Some("3.1.1"),
                reports_force: false,
            },
            "values",
            "service 3.1.1",
        ),
        // No version, `values` only, the applied force in its states: learned.
        (
            Dialect {
                key: "values",
                version: None,
                reports_force: true,
            },
            "values",
            "no version",
        ),
    ];
    for (dialect, key, how) in cases {
        let service = StandIn::start_as([0.0, -0.12, 0.15], dialect);
        let mut device = HaplyDevice::open(&service.url(), Duration::from_secs(5)).unwrap();
        assert!(device.setup().contains(how), "{how}: {}", device.setup());
        let commands = command_until_applied(&service, &mut device, [0.0, 0.0, 1.5]);
        let first_applied = commands
            .iter()
            .position(|k| k.force == [0.0, 0.0, 1.5])
            .unwrap();
        eprintln!(
            "{how}: force applied from command {first_applied} on, sent as `{}`",
            commands[first_applied].key
        );
        assert_eq!(commands[first_applied].key, key);
        assert_eq!(device.format().key(), key);
        if dialect.version.is_some() {
            assert!(
                commands[1..].iter().all(|k| k.key == key),
                "{how}: every force as `{key}`"
            );
        }
    }
}

/// Device frame → scene: the cursor at (0, −0.12, 0.15) m lands on the top face centre.
const SCENE: &str = r#"
name = "haply block"
[mesh.box]
origin = [-0.02, -0.02, -0.02]
size = [0.04, 0.04, 0.02]
cells = [4, 4, 2]
[backend]
kind = "condensed"
[device.workspace]
offset = [0.0, 0.12, -0.15]
"#;
/// Cursor 5 mm above the tissue and 4 mm into it (m, Haply frame).
const ABOVE: [f64; 3] = [0.0, -0.12, 0.155];
const PRESSED: [f64; 3] = [0.0, -0.12, 0.146];

/// Pushing the hand back out of the tissue (+z) by more than 0.05 N, mostly along z.
fn opposes_the_press(f: [f64; 3]) -> bool {
    f[2] > 0.05 && f[2] > 3.0 * f[0].abs().max(f[1].abs())
}

#[test]
fn a_serve_session_presses_survives_a_disconnect_and_a_bad_message_and_stops_at_zero() {
    let dir = tempfile::tempdir().unwrap();
    let scene = dir.path().join("haply.toml");
    std::fs::write(&scene, SCENE).unwrap();
    let service = StandIn::start(ABOVE);
    let device = format!("haply:{}", service.url());
    let args = [
        "--scene",
        scene.to_str().unwrap(),
        "--device",
        &device,
        "--bind",
        "127.0.0.1:0",
    ];
    let mut served = Served::start(BINARY, &args, dir.path());
    served.ready(START);
    assert!(
        served.stdout.iter().any(|l| l.contains("Haply Inverse3")),
        "{:?}",
        served.stdout
    );

    // Above the tissue: zero force; pressed 4 mm in: the tissue pushes the hand out.
    std::thread::sleep(Duration::from_millis(500));
    let c = service.connections();
    assert!(
        c[0].iter().all(|k| k.force == [0.0; 3]),
        "no force in free air"
    );
    service.move_cursor(PRESSED);
    let c = service.wait_for("force opposing the press", |c| {
        c[0].iter().any(|k| opposes_the_press(k.force))
    });
    let pressed_force = c[0].iter().map(|k| norm(k.force)).fold(0.0, f64::max);

    // The service goes away in mid-press and comes back a second later.
    service.shared.away.store(true, Ordering::SeqCst);
    service.shared.drop_now.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(service.connections().len(), 1, "no session while away");
    service.shared.away.store(false, Ordering::SeqCst);
    let c = service.wait_for("a reconnect pressing again", |c| {
        c.len() == 2 && c[1].iter().any(|k| opposes_the_press(k.force))
    });
    let again = &c[1];
    assert_eq!(
        again[0].force, [0.0; 3],
        "the new session starts at zero force"
    );
    assert!(again[0].handshake);
    let first_push = again
        .iter()
        .map(|k| norm(k.force))
        .find(|&f| f > 0.0)
        .unwrap();
    assert!(
        first_push < 0.1 * pressed_force,
        "the force ramps in: first {first_push} N, {pressed_force} N pressed"
    );

    // A message palpa cannot read: logged, the connection dropped, a new one made.
    service.shared.malformed.store(true, Ordering::SeqCst);
    service.wait_for("a reconnect after the malformed message", |c| {
        c.len() == 3 && c[2].iter().any(|k| opposes_the_press(k.force))
    });

    // Ctrl-C while pressing: the last command the service receives is zero force.
    let (status, stdout, stderr) = served.interrupt(WAIT);
    assert!(status.success(), "{status}\n{stderr}");
    assert!(
        stdout
            .iter()
            .any(|l| l == "stopped: last force commanded to the device: 0 0 0 N"),
        "{stdout:?}"
    );
    let c = service.connections();
    assert_eq!(c.len(), 3, "{stderr}");
    assert!(c[2].len() > 1);
    assert_eq!(c[2].last().unwrap().force, [0.0; 3], "zero force last");
    assert!(
        stderr.contains("sent a message palpa cannot use"),
        "the malformed message is logged:\n{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
