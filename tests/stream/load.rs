//! The stream under connection floods on loopback: idle and slow-header (slowloris)
//! connections, connection caps, and a failing `accept`. Every loop here is bounded in
//! count and time; all traffic stays on 127.0.0.0/8.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::stream::{running_tissue, AnalyticTissue};
use palpa::stream::{raise_open_file_limit, snapshot_slot, StreamConfig, StreamServer};
use palpa_client::Client;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// These tests change and count the process's file descriptors: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Idle attackers and slowloris attackers each.
const ATTACKERS: usize = 500;
/// How long the attackers keep reconnecting.
const ATTACK: Duration = Duration::from_secs(9);
/// The closure promise of docs/reliability.md.
const CLOSED_WITHIN: Duration = Duration::from_secs(30);
/// The test's header deadline (short, so the test is quick; the promise is still 30 s).
const HEADER_TIMEOUT: Duration = Duration::from_secs(2);

/// This process's resident memory (bytes), from /proc/self/status.
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// Number of file descriptors this process holds.
fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn loopback(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, last))
}

/// Connects to `server` from the loopback address `from`.
async fn connect_from(from: IpAddr, server: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(from, 0))?;
    socket.connect(server).await
}

/// Waits until the server closes `tcp` (end of stream or reset), at most `limit`;
/// `trickle` sends one more header line every half second meanwhile (slowloris).
async fn until_closed(tcp: &mut TcpStream, trickle: bool, limit: Duration) -> Option<Duration> {
    let start = Instant::now();
    let mut buf = [0u8; 1024];
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    tick.tick().await;
    while start.elapsed() < limit {
        tokio::select! {
            read = tcp.read(&mut buf) => match read {
                Ok(0) | Err(_) => return Some(start.elapsed()),
                Ok(_) => {}
            },
            _ = tick.tick(), if trickle => {
                if tcp.write_all(b"X-Slow: 1\r\n").await.is_err() {
                    return Some(start.elapsed());
                }
            }
            _ = tokio::time::sleep_until((start + limit).into()) => {}
        }
    }
    None
}

/// One attacker: until the attack ends, opens a connection (idle, or slowloris when
/// `trickle`) and holds it until the server closes it. Returns how long each lasted;
/// `None` for one still open after [`CLOSED_WITHIN`].
async fn attacker(
    server: SocketAddr,
    trickle: bool,
    start: Duration,
    end: Instant,
) -> Vec<Option<Duration>> {
    tokio::time::sleep(start).await;
    let mut lifetimes = Vec::new();
    while Instant::now() < end {
        let Ok(mut tcp) = connect_from(loopback(1), server).await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        if trickle
            && tcp
                .write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                .await
                .is_err()
        {
            continue;
        }
        lifetimes.push(until_closed(&mut tcp, trickle, CLOSED_WITHIN).await);
    }
    lifetimes
}

/// `GET /` on a new connection; returns the time to the complete response.
async fn get_index(server: SocketAddr, from: IpAddr) -> Duration {
    let start = Instant::now();
    let mut tcp = connect_from(from, server).await.expect("connect for GET /");
    let request = format!("GET / HTTP/1.1\r\nHost: {server}\r\nConnection: close\r\n\r\n");
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(CLOSED_WITHIN, tcp.read_to_end(&mut response))
        .await
        .expect("GET / answered within 30 s")
        .unwrap();
    assert!(
        response.starts_with(b"HTTP/1.1 200"),
        "GET / answered {:?}",
        String::from_utf8_lossy(&response[..response.len().min(40)])
    );
    start.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_is_served_through_500_idle_and_500_slowloris_connections() {
    crate::support::process::alone!(
        a_viewer_is_served_through_500_idle_and_500_slowloris_connections
    );
    let _serial = SERIAL.lock().await;
    let files = raise_open_file_limit();
    assert!(
        files >= 4 * ATTACKERS as u64 + 512,
        "the open-file limit {files} is too low for {} connections on both ends",
        2 * ATTACKERS
    );
    let (tissue, _producer, reader, control) = running_tissue(AnalyticTissue::modal([6, 6, 2], 8));
    let config = StreamConfig {
        bind: "127.0.0.1:0".parse().unwrap(),
        max_connections: 4 * ATTACKERS,
        max_connections_per_address: 4 * ATTACKERS,
        header_timeout: HEADER_TIMEOUT,
        http_connection_timeout: 2 * HEADER_TIMEOUT,
        ..StreamConfig::default()
    };
    let server = StreamServer::start(config, tissue.scene.clone(), reader, Some(control))
        .await
        .unwrap();
    let addr = server.local_addr();
    let baseline = resident_bytes();
    let peak = Arc::new(AtomicU64::new(baseline));
    let sampler = tokio::spawn({
        let peak = peak.clone();
        async move {
            loop {
                peak.fetch_max(resident_bytes(), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    });

    let end = Instant::now() + ATTACK;
    // The attackers start 1 ms apart, as connections from many machines would arrive.
    let idle: Vec<_> = (0..ATTACKERS)
        .map(|i| {
            let start = Duration::from_millis(2 * i as u64);
            tokio::spawn(attacker(addr, false, start, end))
        })
        .collect();
    let slowloris: Vec<_> = (0..ATTACKERS)
        .map(|i| {
            let start = Duration::from_millis(2 * i as u64 + 1);
            tokio::spawn(attacker(addr, true, start, end))
        })
        .collect();
    // Let the flood build up (each attacker reconnects as soon as it is closed).
    let ramp = Instant::now() + Duration::from_secs(5);
    while server.connection_count() < 2 * ATTACKERS * 8 / 10 {
        assert!(
            Instant::now() < ramp,
            "only {} attack connections open",
            server.connection_count()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A viewer under the flood: frames for 5 s, and GET / once a second meanwhile.
    let viewer = tokio::spawn(async move {
        let mut client = Client::connect(&format!("ws://{addr}/ws")).await.unwrap();
        let first = client.next_frame().await.unwrap().sequence;
        let start = Instant::now();
        let mut frames = 0u32;
        while start.elapsed() < Duration::from_secs(5) {
            client.next_frame().await.expect("frames under the flood");
            frames += 1;
        }
        let rate = f64::from(frames) / start.elapsed().as_secs_f64();
        (rate, first)
    });
    let mut get_latencies = Vec::new();
    let mut flood = 0;
    for _ in 0..5 {
        flood = flood.max(server.connection_count());
        get_latencies.push(get_index(addr, loopback(1)).await);
        tokio::time::sleep(Duration::from_millis(900)).await;
    }
    let (rate, _) = viewer.await.unwrap();

    let mut lifetimes = Vec::new();
    for task in idle.into_iter().chain(slowloris) {
        lifetimes.extend(task.await.unwrap());
    }
    sampler.abort();
    let peak = peak.load(Ordering::Relaxed);
    // The viewer's connection closes on its own once the server reads its close.
    let deadline = Instant::now() + Duration::from_secs(2);
    while server.connection_count() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let open_after = server.connection_count();
    server.shutdown().await;

    let closed: Vec<Duration> = lifetimes.iter().flatten().copied().collect();
    let longest = closed.iter().max().copied().unwrap_or_default();
    let shortest = closed.iter().min().copied().unwrap_or_default();
    let slowest_get = get_latencies.iter().max().unwrap();
    let growth = peak.saturating_sub(baseline);
    println!(
        "flood of {flood} connections: viewer {rate:.1} Hz; GET / slowest {slowest_get:?} of \
         {get_latencies:?}; {} attack connections closed after {shortest:?} ..= {longest:?}; \
         {} still open at the end; resident memory {baseline} B, peak {peak} B (+{growth} B)",
        closed.len(),
        lifetimes.len() - closed.len()
    );
    assert!(rate >= 25.0, "viewer got {rate:.1} Hz under the flood");
    assert!(
        *slowest_get < Duration::from_secs(1),
        "GET / took {slowest_get:?} under the flood"
    );
    assert!(
        lifetimes.iter().all(Option::is_some),
        "{} attack connections were still open after {CLOSED_WITHIN:?}",
        lifetimes.len() - closed.len()
    );
    assert!(
        shortest >= HEADER_TIMEOUT - Duration::from_millis(100),
        "an attack connection was closed after {shortest:?}, before the header deadline"
    );
    assert!(
        longest <= CLOSED_WITHIN,
        "an attack connection lasted {longest:?}"
    );
    assert_eq!(open_after, 0, "connections left once the attack ended");
    assert!(
        flood >= 2 * ATTACKERS * 8 / 10,
        "the flood held only {flood} connections"
    );
    assert!(
        growth < 64 << 20,
        "resident memory grew by {growth} B under the flood"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_caps_are_closed_or_wait_without_a_descriptor() {
    crate::support::process::alone!(
        connections_beyond_the_caps_are_closed_or_wait_without_a_descriptor
    );
    let _serial = SERIAL.lock().await;
    raise_open_file_limit();
    let tissue = AnalyticTissue::modal([2, 2, 1], 2);
    let (_writer, reader) = snapshot_slot(tissue.snapshot_at(0.0, AnalyticTissue::idle_probe()));
    let header_timeout = Duration::from_secs(3);
    let config = StreamConfig {
        bind: "127.0.0.1:0".parse().unwrap(),
        max_connections: 40,
        max_connections_per_address: 30,
        max_clients: 8,
        header_timeout,
        ..StreamConfig::default()
    };
    let server = StreamServer::start(config, tissue.scene.clone(), reader, None)
        .await
        .unwrap();
    let addr = server.local_addr();
    let wait_for_open = |n: usize| {
        let server = &server;
        async move {
            let deadline = Instant::now() + Duration::from_secs(2);
            while server.connection_count() != n {
                assert!(
                    Instant::now() < deadline,
                    "{} connections open, expected {n}",
                    server.connection_count()
                );
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    };

    // Per address: 30 idle connections from 127.0.0.2 are held; more from there are
    // closed at once, long before the header deadline.
    let mut held = Vec::new();
    for _ in 0..30 {
        held.push(connect_from(loopback(2), addr).await.unwrap());
    }
    wait_for_open(30).await;
    for _ in 0..10 {
        let mut extra = connect_from(loopback(2), addr).await.unwrap();
        let closed = until_closed(&mut extra, false, header_timeout).await;
        assert!(
            closed.is_some_and(|t| t < Duration::from_millis(500)),
            "a connection over the address cap lasted {closed:?}"
        );
    }
    // Another address is still served at once.
    let get = get_index(addr, loopback(1)).await;
    assert!(get < Duration::from_secs(1), "GET / took {get:?}");

    // Overall: 10 more from 127.0.0.3 fill the 40; the next 20 wait in the kernel's
    // accept queue and cost the server no descriptor until the idle ones are closed.
    for _ in 0..10 {
        held.push(connect_from(loopback(3), addr).await.unwrap());
    }
    wait_for_open(40).await;
    let before = open_descriptors();
    let mut queued = Vec::new();
    for _ in 0..20 {
        queued.push(connect_from(loopback(4), addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(server.connection_count(), 40, "the overall cap holds");
    assert_eq!(
        open_descriptors() - before,
        20,
        "only the 20 client ends are open: the server accepted none of them"
    );
    // Once the held connections miss their header deadline, the queue is served.
    let get = get_index(addr, loopback(1)).await;
    assert!(
        get < header_timeout + Duration::from_secs(2),
        "GET / waited {get:?} behind the full server"
    );
    for mut tcp in held.into_iter().chain(queued) {
        assert!(
            until_closed(&mut tcp, false, CLOSED_WITHIN).await.is_some(),
            "an idle connection outlived {CLOSED_WITHIN:?}"
        );
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_never_upgrade_are_closed_at_the_upgrade_deadline() {
    let _serial = SERIAL.lock().await;
    let tissue = AnalyticTissue::modal([2, 2, 1], 2);
    let (_writer, reader) = snapshot_slot(tissue.snapshot_at(0.0, AnalyticTissue::idle_probe()));
    let upgrade_deadline = Duration::from_secs(3);
    let config = StreamConfig {
        bind: "127.0.0.1:0".parse().unwrap(),
        header_timeout: Duration::from_secs(1),
        http_connection_timeout: upgrade_deadline,
        ..StreamConfig::default()
    };
    let server = StreamServer::start(config, tissue.scene.clone(), reader, None)
        .await
        .unwrap();
    let addr = server.local_addr();
    let request = format!("GET / HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    let start = Instant::now();

    // A chatty client: a complete keep-alive request every 300 ms, each well within the
    // header deadline, responses read.
    let chatty = tokio::spawn({
        let request = request.clone();
        async move {
            let mut tcp = TcpStream::connect(addr).await.unwrap();
            let start = Instant::now();
            let mut buf = vec![0u8; 1 << 16];
            while start.elapsed() < CLOSED_WITHIN {
                if tcp.write_all(request.as_bytes()).await.is_err() {
                    break;
                }
                let read = tokio::time::timeout(Duration::from_millis(300), async {
                    loop {
                        match tcp.read(&mut buf).await {
                            Ok(0) | Err(_) => return true,
                            Ok(_) => {}
                        }
                    }
                });
                if let Ok(true) = read.await {
                    break;
                }
            }
            start.elapsed()
        }
    });
    // A client that pipelines 2,000 requests and never reads a response: the server's
    // writes block once the socket buffers are full.
    let mut deaf = TcpStream::connect(addr).await.unwrap();
    deaf.write_all(request.repeat(2_000).as_bytes())
        .await
        .unwrap();

    let chatty_lasted = chatty.await.unwrap();
    let deadline = Instant::now() + CLOSED_WITHIN;
    while server.connection_count() > 0 {
        assert!(Instant::now() < deadline, "a connection outlived 30 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let all_closed = start.elapsed();
    println!("chatty client closed after {chatty_lasted:?}, both gone after {all_closed:?}");
    assert!(
        chatty_lasted >= upgrade_deadline - Duration::from_millis(100),
        "the chatty client was closed after {chatty_lasted:?}, before the deadline"
    );
    // The deadline, then at most one second to finish a response.
    let latest = upgrade_deadline + Duration::from_millis(1500);
    assert!(
        chatty_lasted <= latest,
        "chatty client lasted {chatty_lasted:?}"
    );
    assert!(all_closed <= latest, "connections lasted {all_closed:?}");
    drop(deaf);
    server.shutdown().await;
}
