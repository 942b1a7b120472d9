//! The viewer draws the stylus: a stream whose frames carry a device's orientation (a
//! stylus leaning 45° towards +x, a button down, the gripper open) is drawn by headless
//! Chromium with the shaft along that direction from the tip, and the panel shows the
//! buttons and the gripper; the screenshot is kept (`viewer-stylus.png` in the test
//! binary's temporary directory).

use serde_json::{json, Value};

use super::browser::{chromium_or_skip, Browser, Page, HEIGHT, ONE_AT_A_TIME, WIDTH};
use crate::support::stream::{running_tissue, AnalyticTissue};
use palpa::stream::{StreamConfig, StreamServer};

/// Stylus colour while a button is down (0.98, 0.8, 0.35): red and green over blue.
fn is_stylus_pressed(p: &[u8; 3]) -> bool {
    p[0] > 120 && p[1] > 90 && p[0] as i32 > p[2] as i32 + 60 && p[1] as i32 > p[2] as i32 + 40
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_draws_the_stylus_along_the_devices_orientation() {
    let Some(binary) = chromium_or_skip() else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    // A stylus leaning 45° from the tip towards +x and up (the tool's x turned about −y),
    // its first button down, the gripper open 0.25 rad.
    let mut tissue = AnalyticTissue::modal([16, 16, 4], 20);
    let lean = nalgebra::UnitQuaternion::from_axis_angle(
        &palpa::Vec3::y_axis(),
        -std::f64::consts::FRAC_PI_4,
    );
    tissue.stylus = palpa::stream::SnapshotStylus {
        orientation: Some(lean),
        buttons: 1,
        gripper: Some(0.25),
    };
    let (tissue, _producer, reader, control) = running_tissue(tissue);
    let config = StreamConfig {
        bind: "127.0.0.1:0".parse().unwrap(),
        ..StreamConfig::default()
    };
    let server = StreamServer::start(config, tissue.scene.clone(), reader, Some(control))
        .await
        .unwrap();
    let browser = Browser::launch(&binary);
    let mut page = Page::open(&browser, &server.viewer_url()).await;
    page.wait_for(
        "window.palpaViewer?.renderedFrames > 10 && !!window.palpaViewer.stylusEnd",
        "the stylus drawn",
    )
    .await;
    // The decoded orientation turns the tool's x to (cos 45°, 0, sin 45°).
    let axis = page
        .evaluate(
            "JSON.stringify(palpaViewer.stylusAxis(palpaViewer.drawnFrame.stylus.orientation))",
        )
        .await;
    let axis: Vec<f64> = serde_json::from_str(axis.as_str().unwrap()).unwrap();
    let h = std::f64::consts::FRAC_1_SQRT_2;
    for (got, want) in axis.iter().zip([h, 0.0, h]) {
        assert!((got - want).abs() < 1e-6, "{axis:?}");
    }
    let panel = page
        .evaluate("document.getElementById('buttons').textContent + ' | ' + document.getElementById('gripper').textContent")
        .await;
    assert_eq!(panel, json!("0b1 | 14.3°"));
    // On the screenshot, the shaft's middle (the tip plus half the axis) is the stylus's
    // colour, and the tip's side away from it is not.
    let at = |expr: &str| format!("JSON.stringify(palpaViewer.project({expr}))");
    let middle = page
        .evaluate(&at(
            "palpaViewer.drawnFrame.probe.map((p, i) => (p + palpaViewer.stylusEnd[i]) / 2)",
        ))
        .await;
    let opposite = page
        .evaluate(&at(
            "palpaViewer.drawnFrame.probe.map((p, i) => 1.5 * p - 0.5 * palpaViewer.stylusEnd[i])",
        ))
        .await;
    let pixels = page.screenshot("viewer-stylus.png").await;
    let near = |xy: &Value, f: &dyn Fn(&[u8; 3]) -> bool| {
        let xy: Vec<f64> = serde_json::from_str(xy.as_str().unwrap()).unwrap();
        let (cx, cy) = (xy[0].round() as i64, xy[1].round() as i64);
        (-3..=3)
            .flat_map(|dy| (-3..=3).map(move |dx| (cx + dx, cy + dy)))
            .filter(|&(x, y)| x >= 0 && y >= 0 && x < i64::from(WIDTH) && y < i64::from(HEIGHT))
            .filter(|&(x, y)| f(&pixels[(y as u32 * WIDTH + x as u32) as usize]))
            .count()
    };
    let on_shaft = near(&middle, &is_stylus_pressed);
    let off_shaft = near(&opposite, &is_stylus_pressed);
    eprintln!(
        "stylus: {on_shaft} stylus-coloured pixels around the shaft's middle, {off_shaft} on the \
         other side of the tip (screenshot {}/viewer-stylus.png)",
        env!("CARGO_TARGET_TMPDIR")
    );
    assert!(
        on_shaft >= 10,
        "{on_shaft} stylus pixels at the shaft's middle"
    );
    assert_eq!(off_shaft, 0, "no stylus on the tip's other side");
    drop(server);
}
