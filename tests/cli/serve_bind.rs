//! `palpa serve --bind` as a user gives it: a host name (`localhost`) resolves, and on
//! 0.0.0.0 the printed URLs are this machine's addresses, each of which opens the viewer;
//! a scene's `stream.bind` resolves host names too.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::time::Duration;

use crate::support::serve::Served;

const BINARY: &str = env!("CARGO_BIN_EXE_palpa");
const SCENE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/scenes/coarse_block.toml"
);
const START: Duration = Duration::from_secs(300);
const WAIT: Duration = Duration::from_secs(60);

/// The HTTP status line of `GET url` (`http://HOST:PORT/…`), over a plain socket.
fn status_line(url: &str) -> String {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let address: SocketAddr = host.parse().unwrap();
    let mut socket = TcpStream::connect_timeout(&address, Duration::from_secs(10)).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        socket,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    let _ = socket.read_to_string(&mut reply);
    reply.lines().next().unwrap_or("").to_owned()
}

/// The address this machine sends from towards the outside, as the kernel's routing
/// picks it (no packet is sent), if it has a route: an independent witness of one of its
/// interface addresses.
fn routed_address() -> Option<IpAddr> {
    let socket = UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("198.51.100.1:9").ok()?;
    Some(socket.local_addr().ok()?.ip()).filter(|ip| !ip.is_loopback())
}

#[test]
fn a_host_name_resolves_and_every_interface_prints_urls_that_open_the_viewer() {
    let cache = tempfile::tempdir().unwrap();
    let base = ["--scene", SCENE, "--device", "sim", "--bind"];

    let mut served = Served::start(
        BINARY,
        &[&base[..], &["localhost:0"]].concat(),
        cache.path(),
    );
    let ready = served.ready(START);
    assert!(
        ready.viewer.starts_with("http://127.0.0.1:"),
        "{}",
        ready.viewer
    );
    assert_eq!(status_line(&ready.viewer), "HTTP/1.1 200 OK");
    let (status, stdout, stderr) = served.interrupt(WAIT);
    assert!(status.success(), "{stderr}");
    assert!(
        !stdout.iter().any(|l| l.contains("other machines")),
        "loopback is for this machine only: {stdout:?}"
    );

    let mut served = Served::start(BINARY, &[&base[..], &["0.0.0.0:0"]].concat(), cache.path());
    let ready = served.ready(START);
    let printed = served.stdout.join("\n");
    assert!(!printed.contains("0.0.0.0"), "{printed}");
    assert!(ready.viewer.starts_with("http://127.0.0.1:"), "{printed}");
    let remote: Vec<&str> = served
        .stdout
        .iter()
        .filter_map(|l| l.strip_prefix("viewer from other machines: "))
        .collect();
    for url in remote.iter().chain([&ready.viewer.as_str()]) {
        assert!(url.ends_with(&format!("?token={}", ready.token)), "{url}");
        assert_eq!(status_line(url), "HTTP/1.1 200 OK", "{url}");
    }
    if let Some(ip) = routed_address() {
        let host = format!("http://{}:", SocketAddr::new(ip, 0).ip());
        assert!(
            remote.iter().any(|u| u.starts_with(&host)),
            "{ip} (this machine's routed address) is not among {remote:?}"
        );
    }
    let (status, _, stderr) = served.interrupt(WAIT);
    assert!(status.success(), "{stderr}");

    // A scene's `stream.bind` resolves host names as `--bind` does.
    let scene = cache.path().join("block.toml");
    let text = std::fs::read_to_string(SCENE).unwrap();
    std::fs::write(
        &scene,
        format!("{text}\n[stream]\nbind = \"localhost:0\"\n"),
    )
    .unwrap();
    let args = ["--scene", scene.to_str().unwrap(), "--device", "sim"];
    let mut served = Served::start(BINARY, &args, cache.path());
    let viewer = served.viewer(START).viewer;
    assert!(viewer.starts_with("http://127.0.0.1:"), "{viewer}");
    assert_eq!(status_line(&viewer), "HTTP/1.1 200 OK");
    let (status, _, stderr) = served.interrupt(WAIT);
    assert!(status.success(), "{stderr}");
}
