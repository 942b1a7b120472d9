//! A small SVG line plot: stacked panels over a shared time axis.
//!
//! Written by hand rather than with `plotters`: a few polylines, axes and labels are all
//! `replay --plot` needs, and plotters' text rendering pulls in font-handling crates
//! (or falls back to system fonts) — here the output is plain, deterministic SVG text
//! that any browser renders, with no dependency at all.

use std::fmt::Write;

/// One curve of a panel.
pub struct Series {
    /// Legend text.
    pub label: &'static str,
    /// One value per time sample.
    pub values: Vec<f64>,
}

const WIDTH: f64 = 900.0;
const PANEL_HEIGHT: f64 = 240.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const GAP: f64 = 50.0;
const BOTTOM: f64 = 45.0;
const COLORS: [&str; 4] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];

/// Tick positions covering [lo, hi] at a 1-2-5 step giving about `n` ticks.
fn ticks(lo: f64, hi: f64, n: f64) -> Vec<f64> {
    let raw = (hi - lo) / n;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn label(v: f64) -> String {
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.into()
    }
}

/// An SVG document: `title` on top, one panel per (y-axis label, series) over the
/// samples `t` (s). Non-finite values are left out of the range and the lines.
pub fn svg(title: &str, t: &[f64], panels: &[(&str, &[Series])]) -> String {
    let height = TOP + panels.len() as f64 * (PANEL_HEIGHT + GAP) - GAP + BOTTOM;
    let plot_w = WIDTH - LEFT - RIGHT;
    let (t0, t1) = match (t.first(), t.last()) {
        (Some(&a), Some(&b)) if b > a => (a, b),
        (Some(&a), _) => (a, a + 1.0),
        _ => (0.0, 1.0),
    };
    let x_of = |v: f64| LEFT + (v - t0) / (t1 - t0) * plot_w;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="14">{}</text>"#,
        WIDTH / 2.0,
        escape(title)
    );
    for (p, (ylabel, series)) in panels.iter().enumerate() {
        let top = TOP + p as f64 * (PANEL_HEIGHT + GAP);
        let bottom = top + PANEL_HEIGHT;
        let (mut lo, mut hi) = (0.0f64, 0.0f64);
        for v in series
            .iter()
            .flat_map(|s| &s.values)
            .filter(|v| v.is_finite())
        {
            lo = lo.min(*v);
            hi = hi.max(*v);
        }
        if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
            hi = lo + 1.0;
        }
        let pad = 0.05 * (hi - lo);
        let (lo, hi) = (lo - pad, hi + pad);
        let y_of = |v: f64| bottom - (v - lo) / (hi - lo) * PANEL_HEIGHT;
        let _ = writeln!(
            s,
            r##"<rect x="{LEFT}" y="{top}" width="{plot_w}" height="{PANEL_HEIGHT}" fill="none" stroke="#444"/>"##
        );
        for v in ticks(lo, hi, 5.0) {
            let y = y_of(v);
            let _ = writeln!(
                s,
                r##"<line x1="{LEFT}" y1="{y:.2}" x2="{}" y2="{y:.2}" stroke="#ddd"/><text x="{}" y="{:.2}" text-anchor="end">{}</text>"##,
                LEFT + plot_w,
                LEFT - 6.0,
                y + 4.0,
                label(v)
            );
        }
        for v in ticks(t0, t1, 8.0) {
            let x = x_of(v);
            let _ = writeln!(
                s,
                r##"<line x1="{x:.2}" y1="{top}" x2="{x:.2}" y2="{bottom}" stroke="#eee"/><text x="{x:.2}" y="{}" text-anchor="middle">{}</text>"##,
                bottom + 16.0,
                label(v)
            );
        }
        let _ = writeln!(
            s,
            r#"<text transform="translate(18 {:.2}) rotate(-90)" text-anchor="middle">{}</text>"#,
            top + PANEL_HEIGHT / 2.0,
            escape(ylabel)
        );
        for (i, series) in series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let mut points = String::new();
            for (tv, v) in t.iter().zip(&series.values) {
                if v.is_finite() {
                    let _ = write!(points, "{:.2},{:.2} ", x_of(*tv), y_of(*v));
                }
            }
            let _ = writeln!(
                s,
                r#"<polyline fill="none" stroke="{color}" stroke-width="1.2" points="{}"/>"#,
                points.trim_end()
            );
            let _ = writeln!(
                s,
                r#"<text x="{:.2}" y="{:.2}" text-anchor="end" fill="{color}">{}</text>"#,
                LEFT + plot_w - 8.0,
                top + 16.0 + 14.0 * i as f64,
                escape(series.label)
            );
        }
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.2}" y="{:.2}" text-anchor="middle">time (s)</text>"#,
        LEFT + plot_w / 2.0,
        height - 8.0
    );
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(
            ticks(0.0, 1.0, 5.0),
            vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
        );
        let t = ticks(-0.3, 7.2, 8.0);
        assert_eq!(t.first(), Some(&0.0));
        assert_eq!(t.last(), Some(&7.0));
    }

    #[test]
    fn polyline_maps_the_extremes_to_the_panel_edges() {
        let t = [0.0, 1.0, 2.0];
        let series = [Series {
            label: "f",
            values: vec![0.0, 2.0, 1.0],
        }];
        let s = svg("a < b", &t, &[("f (N)", &series[..])]);
        assert!(s.contains("a &lt; b"));
        let pts = s
            .split("points=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        let xy: Vec<(f64, f64)> = pts
            .split(' ')
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect();
        assert_eq!(xy[0].0, LEFT);
        assert_eq!(xy[2].0, WIDTH - RIGHT);
        // Value 0 and 2 sit 5 % inside the panel's bottom and top.
        let (top, bottom) = (TOP, TOP + PANEL_HEIGHT);
        assert!((xy[0].1 - (bottom - 0.05 / 1.1 * PANEL_HEIGHT)).abs() < 0.01);
        assert!((xy[1].1 - (top + 0.05 / 1.1 * PANEL_HEIGHT)).abs() < 0.01);
    }
}
