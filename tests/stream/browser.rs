//! A real browser watches the stream: headless Chromium loads the viewer from the
//! server, draws the tissue (checked on a screenshot), and a mouse drag on the surface
//! pushes the virtual probe into the tissue, which changes the image. Against the real
//! `palpa serve`: a drag presses along the normal where it began, the strip chart
//! follows, the x-ray shows the lump, a wrong token is read-only while frames keep
//! arriving, the narrow layout leaves the tissue free, and a restarted server is
//! reconnected to.
//!
//! Chromium is driven over the DevTools protocol by a small client on tokio-tungstenite
//! (already a dependency of the stream tests): a test needs four commands (open a tab,
//! evaluate, screenshot, mouse input), which does not justify chromedriver plus a WebDriver
//! crate or a crate that downloads its own browser build. Without Chromium the test skips
//! with a message, unless `PALPA_REQUIRE_BROWSER=1` (CI), where it fails.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::serve::Served;
use crate::support::stream::{running_tissue, AnalyticTissue};
use base64::Engine;
use futures_util::{SinkExt, StreamExt};
use palpa::stream::{StreamConfig, StreamServer};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

pub(crate) const WIDTH: u32 = 800;
pub(crate) const HEIGHT: u32 = 600;

/// The Chromium binary to use: `PALPA_CHROMIUM` or the first of the usual names on PATH.
fn find_chromium() -> Option<String> {
    if let Ok(path) = std::env::var("PALPA_CHROMIUM") {
        return Some(path);
    }
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find_map(|name| {
            let found = Command::new(name)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            found.is_ok_and(|s| s.success()).then(|| name.to_owned())
        })
}

/// A headless Chromium we started, killed on drop.
pub(crate) struct Browser {
    child: Child,
    _profile: tempfile::TempDir,
    devtools_url: String,
}

impl Browser {
    pub(crate) fn launch(binary: &str) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let mut child = Command::new(binary)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                // WebGL2 without a GPU: ANGLE on SwiftShader (software Vulkan).
                "--use-angle=swiftshader",
                "--enable-unsafe-swiftshader",
                "--remote-debugging-port=0",
                "--remote-allow-origins=*",
            ])
            .arg(format!("--window-size={WIDTH},{HEIGHT}"))
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {binary}: {e}"));
        // Chromium prints "DevTools listening on ws://…" on stderr once it is ready.
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("DevTools listening on ") {
                    let _ = tx.send(url.trim().to_owned());
                }
            }
        });
        let devtools_url = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(url) => url,
            Err(_) => {
                let _ = child.kill();
                panic!("{binary} did not report a DevTools URL within 60 s");
            }
        };
        Browser {
            child,
            _profile: profile,
            devtools_url,
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A DevTools protocol session attached to one page.
pub(crate) struct Page {
    socket: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
    session: Option<String>,
    next_id: u64,
    size: (u32, u32),
}

impl Page {
    pub(crate) async fn open(browser: &Browser, url: &str) -> Page {
        Self::open_sized(browser, url, WIDTH, HEIGHT).await
    }

    /// Opens `url` in a new tab of `width × height` CSS pixels.
    async fn open_sized(browser: &Browser, url: &str, width: u32, height: u32) -> Page {
        let (socket, _) = tokio_tungstenite::connect_async(browser.devtools_url.as_str())
            .await
            .unwrap();
        let mut page = Page {
            socket,
            session: None,
            next_id: 0,
            size: (width, height),
        };
        let target = page
            .call("Target.createTarget", json!({ "url": url }))
            .await;
        let target_id = target["targetId"].as_str().unwrap().to_owned();
        let attached = page
            .call(
                "Target.attachToTarget",
                json!({ "targetId": target_id, "flatten": true }),
            )
            .await;
        page.session = Some(attached["sessionId"].as_str().unwrap().to_owned());
        let metrics =
            json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false });
        page.call("Emulation.setDeviceMetricsOverride", metrics)
            .await;
        page
    }

    /// Sends one command and waits for its result (events in between are ignored).
    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut request = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = &self.session {
            request["sessionId"] = json!(s);
        }
        self.socket
            .send(Message::Text(request.to_string().into()))
            .await
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = tokio::time::timeout(left, self.socket.next())
                .await
                .unwrap_or_else(|_| panic!("{method}: no answer within 60 s"))
                .expect("DevTools connection closed")
                .unwrap();
            let Message::Text(text) = message else {
                continue;
            };
            let reply: Value = serde_json::from_str(&text).unwrap();
            if reply["id"] == json!(id) {
                assert!(
                    reply.get("error").is_none(),
                    "{method} failed: {}",
                    reply["error"]
                );
                return reply["result"].clone();
            }
        }
    }

    pub(crate) async fn evaluate(&mut self, expression: &str) -> Value {
        let r = self
            .call(
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": true }),
            )
            .await;
        r["result"]["value"].clone()
    }

    /// The page as RGB pixels, row-major, of the page's size.
    pub(crate) async fn screenshot(&mut self, save_as: &str) -> Vec<[u8; 3]> {
        let shot = self
            .call("Page.captureScreenshot", json!({ "format": "png" }))
            .await;
        let png_bytes = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap();
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
        std::fs::write(dir.join(save_as), &png_bytes).unwrap();
        let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), self.size, "screenshot size");
        let channels = info.color_type.samples();
        buf[..info.buffer_size()]
            .chunks(channels)
            .map(|p| [p[0], p[1], p[2]])
            .collect()
    }

    async fn mouse(&mut self, kind: &str, x: f64, y: f64) {
        let params = json!({ "type": kind, "x": x, "y": y, "button": "left", "buttons": 1, "clickCount": 1 });
        self.call("Input.dispatchMouseEvent", params).await;
    }

    /// `pixels` (a screenshot) with the viewer's panels, plots, legends and buttons
    /// painted black, leaving what the 3D view draws.
    async fn scene_only(&mut self, mut pixels: Vec<[u8; 3]>) -> Vec<[u8; 3]> {
        let rects = self
            .evaluate("JSON.stringify(['panel', 'plots', 'overlay', 'help', 'xray-button'].map((id) => { const r = document.getElementById(id).getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; }))")
            .await;
        let rects: Vec<[f64; 4]> = serde_json::from_str(rects.as_str().unwrap()).unwrap();
        let (w, h) = self.size;
        for [left, top, right, bottom] in rects {
            for y in (top.max(0.0) as u32)..(bottom.ceil() as u32).min(h) {
                for x in (left.max(0.0) as u32)..(right.ceil() as u32).min(w) {
                    pixels[(y * w + x) as usize] = [0, 0, 0];
                }
            }
        }
        pixels
    }

    /// Presses and releases the key `key` (e.g. `"x"`).
    async fn key(&mut self, key: &str) {
        for kind in ["keyDown", "keyUp"] {
            let mut params = json!({ "type": kind, "key": key });
            if key.chars().count() == 1 {
                params["text"] = json!(key);
            }
            self.call("Input.dispatchKeyEvent", params).await;
        }
    }

    /// A number the page computes from `expression`.
    async fn number(&mut self, expression: &str) -> f64 {
        let v = self.evaluate(expression).await;
        v.as_f64()
            .unwrap_or_else(|| panic!("{expression} is not a number: {v}"))
    }

    /// Polls `expression` until it is true.
    pub(crate) async fn wait_for(&mut self, expression: &str, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.evaluate(expression).await != json!(true) {
            let state = self.evaluate("JSON.stringify({frames: window.palpaViewer?.frames, error: window.palpaViewer?.error, rendered: window.palpaViewer?.renderedFrames})").await;
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; viewer state {state}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Tissue colour: the viewer shades the surface (0.86, 0.45, 0.45) — red-dominant.
fn is_tissue(p: &[u8; 3]) -> bool {
    p[0] > 60 && p[0] as i32 > p[1] as i32 + 30 && p[0] as i32 > p[2] as i32 + 30
}

/// Force-arrow colour (0.4, 0.95, 0.5) — green-dominant.
fn is_arrow(p: &[u8; 3]) -> bool {
    p[1] > 80 && p[1] as i32 > p[0] as i32 + 40 && p[1] as i32 > p[2] as i32 + 40
}

fn count(pixels: &[[u8; 3]], f: impl Fn(&[u8; 3]) -> bool) -> usize {
    pixels.iter().filter(|p| f(p)).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_draws_the_tissue_and_a_drag_pushes_the_probe_in() {
    let Some(binary) = find_chromium() else {
        if std::env::var("PALPA_REQUIRE_BROWSER").is_ok_and(|v| v == "1") {
            panic!("PALPA_REQUIRE_BROWSER=1 but no Chromium found (apt-get install chromium chromium-driver)");
        }
        println!("SKIPPED: no Chromium on this machine (apt-get install chromium); set PALPA_REQUIRE_BROWSER=1 to fail instead");
        return;
    };
    let (tissue, _producer, reader, control, scene) = {
        let (tissue, producer, reader, control) =
            running_tissue(AnalyticTissue::modal([16, 16, 4], 20));
        let scene = tissue.scene.clone();
        (tissue, producer, reader, control, scene)
    };
    let config = StreamConfig {
        bind: "127.0.0.1:0".parse().unwrap(),
        ..StreamConfig::default()
    };
    let server = StreamServer::start(config, scene, reader, Some(control))
        .await
        .unwrap();
    let browser = Browser::launch(&binary);
    let mut page = Page::open(&browser, &server.viewer_url()).await;

    page.wait_for("window.palpaViewer?.frames > 10 && window.palpaViewer.drawnSequence >= 0 && window.palpaViewer.renderedFrames > 10", "frames drawn").await;
    let webgl2 = page
        .evaluate("!!document.createElement('canvas').getContext('webgl2')")
        .await;
    assert_eq!(webgl2, json!(true), "WebGL2 in headless Chromium");

    // The viewer's own reconstruction from modal coordinates (f32, JavaScript) equals the
    // analytic surface recomputed in f64 for the frame it drew.
    let drawn = page
        .evaluate("JSON.stringify({t: palpaViewer.drawnFrame.scene_time, probe: palpaViewer.drawnFrame.probe, p: Array.from(palpaViewer.positions)})")
        .await;
    let drawn: Value = serde_json::from_str(drawn.as_str().unwrap()).unwrap();
    let probe: Vec<f64> = serde_json::from_value(drawn["probe"].clone()).unwrap();
    let expected = tissue.scene.positions(&tissue.snapshot_at(
        drawn["t"].as_f64().unwrap(),
        palpa::Vec3::new(probe[0], probe[1], probe[2]),
    ));
    let got: Vec<f64> = serde_json::from_value(drawn["p"].clone()).unwrap();
    assert_eq!(got.len(), 3 * expected.len());
    let max_error = expected
        .iter()
        .enumerate()
        .map(|(v, e)| (palpa::Vec3::new(got[3 * v], got[3 * v + 1], got[3 * v + 2]) - e).norm())
        .fold(0.0, f64::max);
    assert!(
        max_error <= 1e-5,
        "browser reconstruction off by {max_error} m"
    );

    let before = page.screenshot("viewer_at_rest.png").await;
    let before = page.scene_only(before).await;
    let at = |x: u32, y: u32| before[(y * WIDTH + x) as usize];
    // The camera looks at the tissue's centre: the middle of the image is tissue, the
    // corners are background, and the tissue covers a good part of the view.
    assert!(
        is_tissue(&at(WIDTH / 2, HEIGHT / 2)),
        "centre pixel {:?} is not tissue",
        at(WIDTH / 2, HEIGHT / 2)
    );
    assert!(
        !is_tissue(&at(WIDTH - 5, 5)) && !is_tissue(&at(WIDTH - 5, HEIGHT - 5)),
        "corners are background"
    );
    let tissue_pixels = count(&before, is_tissue);
    assert!(
        tissue_pixels > (WIDTH * HEIGHT / 20) as usize,
        "only {tissue_pixels} tissue pixels"
    );
    assert_eq!(count(&before, is_arrow), 0, "no force arrow at rest");

    // Press on the surface slightly above the centre and drag down: the viewer sends
    // MoveProbe with the token from the URL; the producer pushes the tissue in.
    let (x, y) = (WIDTH as f64 / 2.0, HEIGHT as f64 / 2.0 - 40.0);
    page.mouse("mousePressed", x, y).await;
    for step in 1..=10 {
        page.mouse("mouseMoved", x, y + 8.0 * step as f64).await;
    }
    page.wait_for("window.palpaViewer.frame.in_contact === true && window.palpaViewer.drawnSequence === window.palpaViewer.frame.sequence", "contact frame drawn").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pressed = page.screenshot("viewer_probe_pressed.png").await;
    let pressed = page.scene_only(pressed).await;
    let arrow_pixels = count(&pressed, is_arrow);
    let changed = before.iter().zip(&pressed).filter(|(a, b)| a != b).count();
    println!("browser reconstruction error {max_error:.2e} m");
    println!("tissue pixels {tissue_pixels}, arrow pixels when pressed {arrow_pixels}, changed pixels {changed}");
    assert!(
        arrow_pixels > 30,
        "the force arrow is visible ({arrow_pixels} pixels)"
    );
    assert!(
        changed > 500,
        "pressing the probe changed only {changed} pixels"
    );

    page.mouse("mouseReleased", x, y + 80.0).await;
    page.wait_for("window.palpaViewer.frame.in_contact === false", "release")
        .await;
    drop(browser);
    server.shutdown().await;
}

/// The default scene's modal model pressed, slid across the lump and released: every
/// 0.1 s of scene time the script holds until the viewer has drawn that frame, and the
/// surface its JavaScript rebuilt (modal coordinates, nodal loads times the residual
/// columns it was sent, corrections) equals the model's own surface at that time to
/// 1e-5 m; the panel shows the bandwidth with the one-off columns apart. The holds make
/// the check independent of how fast a software-rendering browser draws on a loaded
/// machine: every frame in contact is met.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_rebuilds_the_models_surface_from_loads_and_columns() {
    let Some(binary) = chromium_or_skip() else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let cache = tempfile::tempdir().unwrap();
    let mut run = crate::support::model_stream::ModelStream::start(
        palpa::scene::BackendKind::Modal,
        cache.path(),
    )
    .await;
    let browser = Browser::launch(&binary);
    let mut page = Page::open(&browser, &run.server.viewer_url()).await;
    page.wait_for(
        "window.palpaViewer?.drawnSequence >= 0",
        "first frame drawn",
    )
    .await;
    let hold_every = (0.1 / crate::support::model_stream::DT).round() as usize;
    let (model, mut holds, resume) = run.run_script_with_holds(hold_every);
    let (mut checked, mut in_contact, mut with_loads, mut max_error) = (0, 0, 0, 0.0f64);
    let mut one_off_seen = 0.0f64;
    while let Some(held_at) = holds.recv().await {
        // The publisher keeps sending the held snapshot, so the viewer draws it.
        let deadline = Instant::now() + Duration::from_secs(60);
        let drawn = loop {
            let drawn = page
                .evaluate(
                    "JSON.stringify({t: palpaViewer.drawnFrame.scene_time, \
                     loads: palpaViewer.drawnFrame.deformation.Superposed.loads.length, \
                     contact: palpaViewer.drawnFrame.in_contact, columns: palpaViewer.columns.size, oneOff: palpaViewer.bandwidth.oneOff, \
                     p: Array.from(palpaViewer.positions)})",
                )
                .await;
            let drawn: Value = serde_json::from_str(drawn.as_str().unwrap()).unwrap();
            let t = drawn["t"].as_f64().unwrap();
            if crate::support::model_stream::time_key(t)
                == crate::support::model_stream::time_key(held_at)
            {
                break drawn;
            }
            assert!(
                Instant::now() < deadline,
                "the viewer did not draw the frame at t = {held_at} s within 60 s (drawn: {t} s)"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let expected =
            run.truth.lock().unwrap()[&crate::support::model_stream::time_key(held_at)].clone();
        let got: Vec<f64> = serde_json::from_value(drawn["p"].clone()).unwrap();
        assert_eq!(got.len(), 3 * expected.len());
        let error = expected
            .iter()
            .enumerate()
            .map(|(v, e)| (palpa::Vec3::new(got[3 * v], got[3 * v + 1], got[3 * v + 2]) - e).norm())
            .fold(0.0, f64::max);
        max_error = max_error.max(error);
        checked += 1;
        in_contact += usize::from(drawn["contact"].as_bool().unwrap());
        with_loads += usize::from(drawn["loads"].as_u64().unwrap() > 0);
        one_off_seen = one_off_seen.max(drawn["oneOff"].as_f64().unwrap());
        resume.send(()).unwrap();
    }
    tokio::task::spawn_blocking(move || model.join().unwrap())
        .await
        .unwrap();
    let panel = page
        .evaluate("document.getElementById('bandwidth').textContent + ' | ' + document.getElementById('bandwidth-detail').textContent")
        .await;
    println!(
        "browser: {checked} drawn frames checked ({in_contact} in contact, {with_loads} with \
         loads), max error \
         {max_error:.2e} m, one-off columns up to {one_off_seen:.0} B/s; panel: {panel}"
    );
    // Holds every 0.1 s over 3.2 s; the probe touches from 0.2 s to 2.68 s. A frame in
    // contact carries its loads once the columns of their nodes are complete (before,
    // the surface's field itself), which on a loaded machine is later.
    assert_eq!(checked, 32, "frames checked");
    assert_eq!(in_contact, 24, "frames checked in contact");
    assert!(
        with_loads >= 5,
        "only {with_loads} drawn frames carried loads"
    );
    assert!(
        max_error <= 1e-5,
        "the viewer's surface is off by {max_error} m"
    );
    assert!(one_off_seen > 0.0, "the viewer counted the columns' bytes");
    let panel = panel.as_str().unwrap();
    assert!(
        panel.contains("kB/s") && panel.contains("columns"),
        "the panel shows the bandwidth: {panel}"
    );
    drop(browser);
    run.server.shutdown().await;
}

const BINARY: &str = env!("CARGO_BIN_EXE_palpa");
/// How long a `palpa serve` may take to start (a first start precomputes the modes).
const SERVE_START: Duration = Duration::from_secs(300);

/// One Chromium and one `palpa serve` at a time: the machine may have two cores.
pub(crate) static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The Chromium to use, or `None` to skip (the message printed), failing instead under
/// `PALPA_REQUIRE_BROWSER=1`.
pub(crate) fn chromium_or_skip() -> Option<String> {
    let found = find_chromium();
    if found.is_none() {
        if std::env::var("PALPA_REQUIRE_BROWSER").is_ok_and(|v| v == "1") {
            panic!("PALPA_REQUIRE_BROWSER=1 but no Chromium found (apt-get install chromium chromium-driver)");
        }
        println!("SKIPPED: no Chromium on this machine (apt-get install chromium); set PALPA_REQUIRE_BROWSER=1 to fail instead");
    }
    found
}

/// The modal cache shared by the serve-based browser tests (the default scene's modes
/// are computed once).
fn serve_cache() -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser-cache");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// JavaScript: the height of the highest |f| pixel in the strip chart's plot area, as a
/// fraction of the chart's height from its bottom (0: the trace lies on the zero line).
const STRIP_FORCE_HEIGHT: &str = r#"(() => {
  const c = document.getElementById('strip'), g = c.getContext('2d');
  const d = g.getImageData(0, 0, c.width, c.height).data;
  const top = Math.ceil(17 * devicePixelRatio), bottom = c.height - Math.ceil(16 * devicePixelRatio);
  for (let y = top; y <= bottom; y++) {
    for (let x = 0; x < c.width; x++) {
      const i = 4 * (y * c.width + x);
      if (d[i + 1] > 150 && d[i + 1] > d[i] + 60 && d[i + 1] > d[i + 2] + 50) return (bottom - y) / (bottom - top);
    }
  }
  return -1;
})()"#;

/// The x-ray colour of other materials (0.6, 0.4, 1.0), shaded and seen through the
/// translucent tissue: blue-dominant.
fn is_region(p: &[u8; 3]) -> bool {
    p[2] > 100 && p[2] as i32 > p[0] as i32 + 25 && p[2] as i32 > p[1] as i32 + 60
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_a_drag_presses_along_the_normal_where_it_began_the_plots_follow_xray_shows_the_lump()
{
    let Some(binary) = chromium_or_skip() else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let args = ["--device", "sim", "--bind", "127.0.0.1:0"];
    let mut served = Served::start(BINARY, &args, &serve_cache());
    let ready = served.ready(SERVE_START);
    let browser = Browser::launch(&binary);
    let (width, height) = (1280, 720);
    let mut page = Page::open_sized(&browser, &ready.viewer, width, height).await;
    page.wait_for("window.palpaViewer?.frames > 10 && palpaViewer.control === true && palpaViewer.renderedFrames > 10", "frames and control granted").await;
    let help = page
        .evaluate("document.getElementById('help').textContent")
        .await;
    assert!(
        help.as_str().unwrap().contains("press"),
        "help offers pressing: {help}"
    );
    // In control and running: no read-only badge, no "preparing the tissue".
    let status = page
        .evaluate("document.getElementById('status').textContent + '|' + document.getElementById('badge').hidden")
        .await;
    assert_eq!(
        status.as_str(),
        Some("connected, in control|true"),
        "{status}"
    );
    let at_rest = page.number(STRIP_FORCE_HEIGHT).await;

    // Press where the viewer draws the middle of the top face (over the lump) and drag
    // 60 px down: 0.1 mm per pixel, 6 mm deep along the top face's normal.
    let at: Vec<f64> =
        serde_json::from_value(page.evaluate("palpaViewer.project([0, 0, 0])").await).unwrap();
    let (x, y) = (at[0], at[1]);
    page.mouse("mousePressed", x, y).await;
    for step in 1..=12 {
        page.mouse("mouseMoved", x, y + 5.0 * step as f64).await;
    }
    page.wait_for("palpaViewer.frame.in_contact && palpaViewer.press && Math.abs(palpaViewer.frame.probe[2] - palpaViewer.press.target[2]) < 1e-9", "the probe at its target").await;
    // The force ramps in after the contact; a loaded machine may fade it meanwhile or
    // later (a stalled model thread, said in the frame), so the frame checked is one the
    // viewer drew with the tissue pushing back, taken when it arrives.
    page.wait_for(
        "(() => { const f = palpaViewer.frame; if (!(f.in_contact && Math.hypot(...f.force) > 0.05)) return false; window.pressedFrame = JSON.stringify({grab: palpaViewer.press.grab, normal: palpaViewer.press.normal, probe: f.probe, force: f.force, depth: f.depth, contact_normal: f.normal}); return true; })()",
        "the tissue pushing back",
    )
    .await;
    let pressed: Value =
        serde_json::from_str(page.evaluate("window.pressedFrame").await.as_str().unwrap()).unwrap();
    let v = |key: &str| -> [f64; 3] { serde_json::from_value(pressed[key].clone()).unwrap() };
    let (grab, normal, probe, force) = (v("grab"), v("normal"), v("probe"), v("force"));
    let (model_depth, contact_normal) = (pressed["depth"].as_f64().unwrap(), v("contact_normal"));
    // The default block's top face is z = 0 with the outward normal +z.
    assert!(grab[2].abs() < 1e-6, "grabbed the top face: {grab:?}");
    assert!((normal[2] - 1.0).abs() < 1e-9, "normal {normal:?}");
    let lateral = (probe[0] - grab[0]).hypot(probe[1] - grab[1]);
    let depth = grab[2] - probe[2];
    let newtons = force.iter().map(|f| f * f).sum::<f64>().sqrt();
    println!(
        "grab ({:.2}, {:.2}) mm, probe ({:.2}, {:.2}, {:.2}) mm: lateral {:.3} mm, depth {:.2} mm, |f| {newtons:.2} N",
        grab[0] * 1e3, grab[1] * 1e3, probe[0] * 1e3, probe[1] * 1e3, probe[2] * 1e3, lateral * 1e3, depth * 1e3
    );
    assert!(
        grab[0].hypot(grab[1]) < 1e-3,
        "the press began at the top face's middle: {grab:?}"
    );
    assert!(lateral < 1e-3, "probe {lateral} m beside the grab point");
    assert!(
        (depth - 0.006).abs() < 2e-4,
        "depth {depth} m, dragged 6 mm"
    );
    // The model's own indentation and normal, streamed in the frame, agree.
    assert!(
        (model_depth - 0.006).abs() < 2e-4,
        "model indentation {model_depth} m"
    );
    assert!(
        (contact_normal[2] - 1.0).abs() < 1e-3,
        "contact normal {contact_normal:?}"
    );
    assert!(newtons > 0.05, "pressing 6 mm pushes back: {newtons} N");
    // The strip chart draws the force as frames arrive: wait for the trace to rise.
    page.wait_for(
        &format!("({STRIP_FORCE_HEIGHT}) > 0.5"),
        "the |f| trace rising while pressing",
    )
    .await;
    let pressing = page.number(STRIP_FORCE_HEIGHT).await;
    println!(
        "strip chart |f| trace: {at_rest:.2} of its height at rest, {pressing:.2} while pressing"
    );
    assert!(
        (0.0..0.05).contains(&at_rest),
        "|f| trace on the zero line at rest ({at_rest})"
    );
    assert!(pressing > 0.5, "|f| trace rose while pressing ({pressing})");
    let curve_points = page.number("palpaViewer.curvePoints").await;
    assert!(
        curve_points > 5.0,
        "force–depth points of this press: {curve_points}"
    );

    // X-ray: the lump under the press shows through the translucent tissue.
    let before = page.screenshot("serve_pressed.png").await;
    let before = page.scene_only(before).await;
    page.key("x").await;
    page.wait_for("palpaViewer.xray === true", "x-ray on").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let xray = page.screenshot("serve_pressed_xray.png").await;
    let xray = page.scene_only(xray).await;
    let (lump_before, lump_xray) = (count(&before, is_region), count(&xray, is_region));
    println!("lump pixels: {lump_before} without x-ray, {lump_xray} with");
    assert!(
        lump_before < 20,
        "the lump is hidden without x-ray ({lump_before} pixels)"
    );
    assert!(lump_xray > 500, "x-ray shows the lump ({lump_xray} pixels)");
    let legend = page
        .evaluate("document.getElementById('regions').textContent")
        .await;
    assert!(
        legend.as_str().unwrap().contains("inclusion (E = 240 kPa)"),
        "{legend}"
    );

    // Two depth steps of 0.5 mm with the arrow key, straight down the same normal.
    page.key("ArrowDown").await;
    page.key("ArrowDown").await;
    page.wait_for(
        "Math.abs(palpaViewer.frame.probe[2] + 0.007) < 1e-9",
        "the probe 7 mm deep",
    )
    .await;
    let probe: Vec<f64> =
        serde_json::from_value(page.evaluate("palpaViewer.frame.probe").await).unwrap();
    let lateral = (probe[0] - grab[0]).hypot(probe[1] - grab[1]);
    assert!(
        lateral < 1e-9,
        "key steps moved the probe {lateral} m sideways"
    );

    page.mouse("mouseReleased", x, y + 60.0).await;
    page.wait_for("palpaViewer.frame.in_contact === false", "release")
        .await;
    drop(browser);
    let (status, _, _) = served.interrupt(Duration::from_secs(30));
    assert!(status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_a_wrong_token_is_read_only_frames_keep_arriving_and_420_px_leaves_the_tissue_free() {
    let Some(binary) = chromium_or_skip() else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let args = ["--device", "sim", "--bind", "127.0.0.1:0"];
    let mut served = Served::start(BINARY, &args, &serve_cache());
    let ready = served.ready(SERVE_START);
    let browser = Browser::launch(&binary);
    let stale = ready.viewer.replace(&ready.token, "0123456789abcdef");
    assert_ne!(stale, ready.viewer);
    let (width, height) = (420, 720);
    let mut page = Page::open_sized(&browser, &stale, width, height).await;
    page.wait_for(
        "window.palpaViewer?.control === false && palpaViewer.renderedFrames > 5",
        "control refused",
    )
    .await;
    let status = page
        .evaluate("document.getElementById('status').textContent")
        .await;
    let help = page
        .evaluate("document.getElementById('help').textContent")
        .await;
    println!("status: {status}; help: {help}");
    assert!(status.as_str().unwrap().contains("read-only"), "{status}");
    assert!(!help.as_str().unwrap().contains("press"), "{help}");
    let badge = page
        .evaluate("[document.getElementById('badge').hidden, document.getElementById('badge').textContent, document.getElementById('badge').title].join('|')")
        .await;
    assert_eq!(
        badge.as_str(),
        Some("false|read-only|the server refused this token (a restarted server prints a new one)"),
        "{badge}"
    );

    // A drag now orbits (nothing is sent); the stream goes on over the same connection.
    let frames = page.number("palpaViewer.frames").await;
    page.mouse("mousePressed", 210.0, 360.0).await;
    page.mouse("mouseMoved", 240.0, 380.0).await;
    page.mouse("mouseReleased", 240.0, 380.0).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let later = page.number("palpaViewer.frames").await;
    let connections = page.number("palpaViewer.connections").await;
    println!("frames in 2 s read-only: {}", later - frames);
    assert!(later - frames >= 20.0, "{} frames in 2 s", later - frames);
    assert_eq!(connections, 1.0, "the stream was never closed");
    assert_eq!(page.evaluate("palpaViewer.error").await, Value::Null);

    // 420 px: the panel and the plots lie outside the tissue's canvas, which shows the
    // tissue in its middle.
    let rects: Value = serde_json::from_str(
        page.evaluate("JSON.stringify(['view', 'panel', 'plots'].map((id) => { const r = document.getElementById(id).getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; }))")
            .await
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let r: Vec<[f64; 4]> = serde_json::from_value(rects).unwrap();
    let overlap =
        |a: [f64; 4], b: [f64; 4]| a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3];
    println!(
        "at {width} px: canvas {:?}, panel {:?}, plots {:?}",
        r[0], r[1], r[2]
    );
    assert!(!overlap(r[0], r[1]), "panel over the canvas");
    assert!(!overlap(r[0], r[2]), "plots over the canvas");
    assert!(
        r[0][3] - r[0][1] > 300.0,
        "canvas height {}",
        r[0][3] - r[0][1]
    );
    let shot = page.screenshot("serve_420px.png").await;
    let centre = (((r[0][1] + r[0][3]) / 2.0) as u32 * width + width / 2) as usize;
    assert!(is_tissue(&shot[centre]), "canvas middle {:?}", shot[centre]);
    drop(browser);
    served.interrupt(Duration::from_secs(30));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_the_viewer_reconnects_within_5_s_after_a_server_restart() {
    let Some(binary) = chromium_or_skip() else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let bind = format!("127.0.0.1:{port}");
    let args = ["--device", "sim", "--bind", bind.as_str()];
    let mut first = Served::start(BINARY, &args, &serve_cache());
    let ready = first.ready(SERVE_START);
    let browser = Browser::launch(&binary);
    let mut page = Page::open(&browser, &ready.viewer).await;
    page.wait_for(
        "window.palpaViewer?.frames > 10 && palpaViewer.control === true",
        "frames",
    )
    .await;
    let (status, _, _) = first.interrupt(Duration::from_secs(30));
    assert!(status.success());
    page.wait_for(
        "document.getElementById('status').textContent.includes('reconnecting')",
        "the viewer noticing the stop",
    )
    .await;
    let frames = page.number("palpaViewer.frames").await;

    // The same port again; a new start prints a new token, so the old one is stale.
    let mut second = Served::start(BINARY, &args, &serve_cache());
    let again = second.ready(SERVE_START);
    let restarted = Instant::now();
    assert_ne!(again.token, ready.token);
    while page.number("palpaViewer.frames").await < frames + 5.0 {
        assert!(
            restarted.elapsed() < Duration::from_secs(5),
            "no frames from the restarted server within 5 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let took = restarted.elapsed();
    println!(
        "frames again {:.2} s after the restarted server was ready",
        took.as_secs_f64()
    );
    assert_eq!(page.number("palpaViewer.connections").await, 2.0);
    page.wait_for("palpaViewer.control === false", "the stale token refused")
        .await;
    let status = page
        .evaluate("document.getElementById('status').textContent")
        .await;
    assert!(status.as_str().unwrap().contains("read-only"), "{status}");
    drop(browser);
    second.interrupt(Duration::from_secs(30));
}
