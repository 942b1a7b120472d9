//! `palpa plot` and `replay --plot` as a user runs them (the built binary): a shipped
//! trajectory replayed through a small scene and drawn as PNG (checked by decoding it)
//! and SVG (checked against the CSV the replay wrote); other extensions are refused
//! before any work, naming the extension.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The default block, coarse (10 × 10 × 4 cells) so it precomputes in about a second.
const SCENE: &str = include_str!("../data/scenes/coarse_block.toml");

/// Plot width and heights (px) as documented in `palpa plot`'s source (src/cli/plot.rs).
const WIDTH: u32 = 1000;
const TITLE: u32 = 40;
const PANEL: u32 = 300;

fn trajectory(name: &str) -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/trajectories/").to_string() + name
}

fn palpa(args: &[&str], cache: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_palpa"))
        .args(args)
        .env("PALPA_CACHE_DIR", cache)
        .env("RUST_LOG", "error")
        .output()
        .unwrap()
}

fn ok(out: Output) -> String {
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    text
}

/// Replays `traj` through the coarse block into DIR/NAME.csv and plots it to `plot`.
fn replay(dir: &Path, traj: &str, plot: &Path) -> PathBuf {
    let scene = dir.join("coarse.toml");
    std::fs::write(&scene, SCENE).unwrap();
    let csv = dir.join(traj).with_extension("csv");
    ok(palpa(
        &[
            "replay",
            &trajectory(traj),
            "--scene",
            scene.to_str().unwrap(),
            "--out",
            csv.to_str().unwrap(),
            "--plot",
            plot.to_str().unwrap(),
        ],
        &dir.join("cache"),
    ));
    csv
}

/// `palpa plot CSV --out DIR/again.svg EXTRA…`, the SVG it wrote.
fn plot_again(dir: &Path, csv: &Path, extra: &[&str]) -> String {
    let again = dir.join("again.svg");
    let mut args = vec![
        "plot",
        csv.to_str().unwrap(),
        "--out",
        again.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    ok(palpa(&args, dir));
    std::fs::read_to_string(&again).unwrap()
}

/// Columns of the replay CSV by name (after its `#` comment lines).
fn column(csv: &str, name: &str) -> Vec<f64> {
    let mut lines = csv.lines().filter(|l| !l.starts_with('#'));
    let i = lines
        .next()
        .unwrap()
        .split(',')
        .position(|h| h == name)
        .unwrap();
    lines
        .map(|l| l.split(',').nth(i).unwrap().parse().unwrap())
        .collect()
}

/// The `points` of every polyline whose opening tag contains `marker`.
fn polylines(svg: &str, marker: &str) -> Vec<Vec<(f64, f64)>> {
    svg.split("<polyline")
        .skip(1)
        .filter(|tag| tag.split('>').next().unwrap().contains(marker))
        .map(|tag| {
            let points = tag.split("points=\"").nth(1).unwrap().split('"').next();
            points
                .unwrap()
                .split_whitespace()
                .map(|p| {
                    let (x, y) = p.split_once(',').unwrap();
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect()
        })
        .collect()
}

fn text_elements(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .map(|t| {
            let body = t.split_once('>').unwrap().1;
            body.split("</text>").next().unwrap().trim().to_string()
        })
        .collect()
}

#[test]
fn a_slide_plots_to_svg_with_the_scene_title_and_a_visible_magnitude_curve() {
    let dir = tempfile::tempdir().unwrap();
    let svg_path = dir.path().join("slide.svg");
    let csv_path = replay(dir.path(), "slide_over_inclusion.csv", &svg_path);
    let csv = std::fs::read_to_string(&csv_path).unwrap();
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg.starts_with("<svg "), "{}", &svg[..80]);
    assert!(svg.trim_end().ends_with("</svg>"));
    let texts = text_elements(&svg);
    assert!(
        texts.iter().any(|t| t == "coarse block"),
        "no title in {texts:?}"
    );
    for label in ["|f|", "fz", "depth", "indentation (mm)", "|f| in contact"] {
        assert!(
            texts.iter().any(|t| t == label),
            "no {label:?} in {texts:?}"
        );
    }
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("probe position along the slide +x")),
        "a slide along x gets a force-against-position panel: {texts:?}"
    );

    // |f| is the wide translucent band (6 px, under the 1 px fz line): its first curve
    // has one point per CSV row, in time order, and its heights are an affine image of
    // |f| from the CSV (to the pixel: plotters rounds to whole pixels).
    let magnitude: Vec<f64> = {
        let (fx, fy, fz) = (column(&csv, "fx"), column(&csv, "fy"), column(&csv, "fz"));
        (0..fx.len())
            .map(|i| (fx[i] * fx[i] + fy[i] * fy[i] + fz[i] * fz[i]).sqrt())
            .collect()
    };
    let bands = polylines(&svg, "stroke-width=\"6\"");
    let band = bands.iter().find(|b| b.len() == magnitude.len()).unwrap();
    assert!(band.windows(2).all(|w| w[1].0 >= w[0].0), "time runs right");
    let (lo, hi) = (
        0,
        (0..magnitude.len())
            .max_by(|&a, &b| magnitude[a].total_cmp(&magnitude[b]))
            .unwrap(),
    );
    let scale = (band[hi].1 - band[lo].1) / (magnitude[hi] - magnitude[lo]);
    assert!(scale < -10.0, "larger |f| is higher up: {scale} px/N");
    for (i, (p, f)) in band.iter().zip(&magnitude).enumerate() {
        let expected = band[lo].1 + scale * (f - magnitude[lo]);
        assert!(
            (p.1 - expected).abs() <= 1.0,
            "row {i}: y {} for |f| {f}, expected {expected}",
            p.1
        );
    }
    assert!(
        magnitude[hi] > 1.0,
        "the slide presses: peak |f| {}",
        magnitude[hi]
    );

    // `palpa plot` on the replay's CSV draws the same picture as `replay --plot`.
    assert_eq!(
        plot_again(dir.path(), &csv_path, &["--title", "coarse block"]),
        svg
    );
}

#[test]
fn a_plot_to_png_is_a_real_png_with_a_panel_per_view() {
    let dir = tempfile::tempdir().unwrap();
    let press_png = dir.path().join("press.png");
    let press_csv = replay(dir.path(), "press_hold_release.csv", &press_png);
    let slide_csv = replay(
        dir.path(),
        "slide_over_inclusion.csv",
        &dir.path().join("s.svg"),
    );
    let slide_png = dir.path().join("slide.png");
    let said = ok(palpa(
        &[
            "plot",
            slide_csv.to_str().unwrap(),
            "--out",
            slide_png.to_str().unwrap(),
        ],
        dir.path(),
    ));
    assert!(said.contains("slide.png"), "{said}");
    assert!(press_csv.exists());
    // A press has force and depth over time and force against depth; a slide also force
    // against position.
    for (path, panels) in [(&press_png, 3), (&slide_png, 4)] {
        let bytes = std::fs::read(path).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{}", path.display());
        let mut reader = png::Decoder::new(std::io::Cursor::new(bytes))
            .read_info()
            .unwrap();
        let mut rgb = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut rgb).unwrap();
        assert_eq!(
            (info.width, info.height),
            (WIDTH, TITLE + panels * PANEL),
            "{}",
            path.display()
        );
        assert_eq!(info.color_type, png::ColorType::Rgb);
        // The |f| band's colour (#1F77B4 at 45 % on white) covers many pixels.
        let band = rgb
            .chunks(3)
            .filter(|p| {
                p[0].abs_diff(154) <= 3 && p[1].abs_diff(194) <= 3 && p[2].abs_diff(221) <= 3
            })
            .count();
        assert!(
            band > 2000,
            "{}: {band} pixels of the |f| band",
            path.display()
        );
    }
}

#[test]
fn a_press_plots_force_against_depth_and_its_csv_names_the_scene() {
    let dir = tempfile::tempdir().unwrap();
    let svg_path = dir.path().join("press.svg");
    let csv_path = replay(dir.path(), "press_hold_release.csv", &svg_path);
    let csv = std::fs::read_to_string(&csv_path).unwrap();
    assert_eq!(csv.lines().next(), Some("# scene: coarse block"));
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let texts = text_elements(&svg);
    for label in ["indentation depth in contact (mm)", "|f| against depth"] {
        assert!(
            texts.iter().any(|t| t == label),
            "no {label:?} in {texts:?}"
        );
    }

    // The |f| band of the force-depth panel: one point per contact row, x an affine
    // image of the depth and y of |f| (to the pixel).
    let (depth, contact) = (column(&csv, "depth"), column(&csv, "contact"));
    let (fx, fy, fz) = (column(&csv, "fx"), column(&csv, "fy"), column(&csv, "fz"));
    let rows: Vec<usize> = (0..depth.len()).filter(|&i| contact[i] != 0.0).collect();
    assert!(
        rows.len() > 100 && rows.len() < depth.len(),
        "{} rows",
        rows.len()
    );
    let magnitude = |i: usize| (fx[i] * fx[i] + fy[i] * fy[i] + fz[i] * fz[i]).sqrt();
    let bands = polylines(&svg, "stroke-width=\"6\"");
    let band = bands.iter().find(|b| b.len() == rows.len()).unwrap();
    let deepest = (0..rows.len())
        .max_by(|&a, &b| depth[rows[a]].total_cmp(&depth[rows[b]]))
        .unwrap();
    let strongest = (0..rows.len())
        .max_by(|&a, &b| magnitude(rows[a]).total_cmp(&magnitude(rows[b])))
        .unwrap();
    let x_scale = (band[deepest].0 - band[0].0) / (depth[rows[deepest]] - depth[rows[0]]);
    let y_scale =
        (band[strongest].1 - band[0].1) / (magnitude(rows[strongest]) - magnitude(rows[0]));
    assert!(
        x_scale > 1e4 && y_scale < -10.0,
        "{x_scale} px/m, {y_scale} px/N"
    );
    for (k, &i) in rows.iter().enumerate() {
        let x = band[0].0 + x_scale * (depth[i] - depth[rows[0]]);
        let y = band[0].1 + y_scale * (magnitude(i) - magnitude(rows[0]));
        assert!(
            (band[k].0 - x).abs() <= 1.5 && (band[k].1 - y).abs() <= 1.5,
            "row {i}: ({}, {}) for depth {} m, |f| {} N; expected ({x}, {y})",
            band[k].0,
            band[k].1,
            depth[i],
            magnitude(i)
        );
    }

    // `palpa plot` titles it from the `# scene:` line: the same picture.
    assert_eq!(plot_again(dir.path(), &csv_path, &[]), svg);
}

#[test]
fn the_title_comes_from_a_scene_comment_else_the_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let body =
        "t,x,y,z,fx,fy,fz,depth,contact\n0,0,0,0,0,0,0,0,0\n0.001,0,0,-0.001,0,0,0.5,0.001,1\n";
    let named = dir.path().join("named.csv");
    std::fs::write(&named, format!("# scene: my liver <3\n{body}")).unwrap();
    let plain = dir.path().join("plain.csv");
    std::fs::write(&plain, body).unwrap();
    ok(palpa(&["plot", named.to_str().unwrap()], dir.path()));
    ok(palpa(&["plot", plain.to_str().unwrap()], dir.path()));
    let named_svg = std::fs::read_to_string(dir.path().join("named.svg")).unwrap();
    assert!(text_elements(&named_svg).contains(&"my liver &lt;3".to_string()));
    let plain_svg = std::fs::read_to_string(dir.path().join("plain.svg")).unwrap();
    assert!(text_elements(&plain_svg).contains(&"plain.csv".to_string()));
}

#[test]
fn unknown_formats_and_bad_csvs_are_messages_naming_the_culprit() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("f.csv");
    std::fs::write(
        &csv,
        "t,x,y,z,fx,fy,fz,depth,contact\n0,0,0,0,0,0,nope,0,0\n",
    )
    .unwrap();
    let out = palpa(
        &["plot", csv.to_str().unwrap(), "--out", "f.jpg"],
        dir.path(),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("\".jpg\"") && err.contains(".svg or .png"),
        "{err}"
    );
    // replay --plot refuses it before replaying anything.
    let out = palpa(
        &[
            "replay",
            &trajectory("fast_tap.csv"),
            "--out",
            "x.csv",
            "--plot",
            "x.pdf",
        ],
        dir.path(),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("\".pdf\""), "{err}");
    assert!(!Path::new("x.csv").exists());
    // A bad number names the line and the column; no panic.
    let out = palpa(&["plot", csv.to_str().unwrap()], dir.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("f.csv") && err.contains("line 2") && err.contains("`fz`"),
        "{err}"
    );
}
