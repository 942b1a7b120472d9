//! `palpa map`: a stiffness map of the tissue's top surface ([`crate::app::map`]), drawn as
//! a heat map (PNG or SVG) with the inclusions outlined, or written as CSV.

use std::path::{Path, PathBuf};

use clap::Args;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::plot;
use super::precompute::SceneArgs;
use super::progress::count_bar;
use crate::app::map::{stiffness_map, MapOptions, Outline, StiffnessMap};

/// Arguments of `palpa map`.
#[derive(Args, Debug, Clone)]
pub struct MapArgs {
    /// Scene and cache.
    #[command(flatten)]
    pub scene: SceneArgs,
    /// Depth pressed at every point (m).
    #[arg(long, value_name = "M", default_value_t = 0.004)]
    pub depth: f64,
    /// Grid spacing (m).
    #[arg(long, value_name = "M", default_value_t = 0.005)]
    pub step: f64,
    /// Output: map.png, map.svg (a heat map) or map.csv (x,y,force).
    #[arg(
        long,
        value_name = "FILE.png|FILE.svg|FILE.csv",
        default_value = "map.png"
    )]
    pub out: PathBuf,
    /// Solve the full nonlinear static FEM at every point instead of the runtime model
    /// (slow: one solve per point).
    #[arg(long)]
    pub full: bool,
}

/// Size of the map picture (px).
const SIZE: (u32, u32) = (900, 760);

/// Runs `palpa map`; errors are messages for the user.
pub fn run(args: &MapArgs) -> Result<(), String> {
    let csv = args
        .out
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    if !csv {
        plot::Format::of(&args.out)?;
    }
    let built = args.scene.build()?;
    let options = MapOptions {
        depth: args.depth,
        step: args.step,
        full: args.full,
    };
    let bar = count_bar("pressing the grid", 0);
    let map = stiffness_map(built, &options, &mut |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    });
    bar.finish_and_clear();
    let map = map?;
    for ([x, y], why) in &map.failures {
        eprintln!("note: no force at ({x}, {y}) m: {why}");
    }
    let failed = map.force.iter().filter(|f| f.is_none()).count();
    if let (Some(([x, y], peak)), Some(median)) = (map.peak(), map.median()) {
        println!(
            "{} points, {failed} without a force; peak {peak:.4} N at ({:.1}, {:.1}) mm, \
             median {median:.4} N, peak/median {:.2}",
            map.force.len(),
            x * 1e3,
            y * 1e3,
            peak / median
        );
    }
    match csv {
        true => crate::files::write_file_atomic(&args.out, map.to_csv().as_bytes())
            .map_err(|e| e.to_string())?,
        false => write_picture(&map, &args.out)?,
    }
    println!("map written to {}", args.out.display());
    Ok(())
}

/// Draws `map` as a heat map into `out` (.png or .svg).
pub fn write_picture(map: &StiffnessMap, out: &Path) -> Result<(), String> {
    plot::render(
        out,
        SIZE,
        |area| draw(area, map).map_err(|e| e.to_string()),
        |area| draw(area, map).map_err(|e| e.to_string()),
    )
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    map: &StiffnessMap,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let title = format!(
        "{}: force at {} mm deep, {}",
        map.scene,
        map.depth * 1e3,
        map.method
    );
    let body = root.titled(&title, ("sans-serif", 20))?;
    let (chart_area, bar_area) = body.split_horizontally(SIZE.0 - 130);
    let mm = |v: f64| v * 1e3;
    let half = 0.5 * step(&map.xs).max(step(&map.ys));
    let (x0, x1) = (mm(map.xs[0] - half), mm(map.xs[map.xs.len() - 1] + half));
    let (y0, y1) = (mm(map.ys[0] - half), mm(map.ys[map.ys.len() - 1] + half));
    let mut chart = ChartBuilder::on(&chart_area)
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(format!("{} (mm)", map.axes[0]))
        .y_desc(format!("{} (mm)", map.axes[1]))
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 14))
        .draw()?;
    let (lo, hi) = force_range(map);
    chart.draw_series(map.points().map(|([x, y], f)| {
        let colour = match f {
            Some(f) => ViridisRGB.get_color_normalized(f, lo, hi).filled(),
            None => RGBColor(200, 200, 200).filled(),
        };
        Rectangle::new(
            [(mm(x - half), mm(y - half)), (mm(x + half), mm(y + half))],
            colour,
        )
    }))?;
    let outline = WHITE.stroke_width(2);
    for o in &map.outlines {
        let (name, points) = outline_points(o);
        let points: Vec<(f64, f64)> = points.iter().map(|p| (mm(p[0]), mm(p[1]))).collect();
        let top = points.iter().fold(f64::NEG_INFINITY, |m, p| m.max(p.1));
        let left = points.iter().fold(f64::INFINITY, |m, p| m.min(p.0));
        let label_at = (left, top + 0.04 * (y1 - y0));
        chart.draw_series(std::iter::once(PathElement::new(points, outline)))?;
        chart.draw_series(std::iter::once(Text::new(
            name.to_string(),
            label_at,
            ("sans-serif", 14).into_font().color(&WHITE),
        )))?;
    }
    colour_bar(&bar_area, lo, hi)
}

/// The grid spacing of `v` (m; 1 for a single point).
fn step(v: &[f64]) -> f64 {
    if v.len() > 1 {
        v[1] - v[0]
    } else {
        1e-3
    }
}

/// The force range the colours span (N).
fn force_range(map: &StiffnessMap) -> (f64, f64) {
    let (lo, hi) = map
        .force
        .iter()
        .flatten()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &f| {
            (l.min(f), h.max(f))
        });
    match lo.is_finite() && hi > lo {
        true => (lo, hi),
        false => (0.0, lo.abs().max(1e-9)),
    }
}

/// A material's footprint as a closed polyline (m) and its name.
fn outline_points(o: &Outline) -> (&str, Vec<[f64; 2]>) {
    match o {
        Outline::Circle {
            name,
            center,
            radius,
        } => (
            name,
            (0..=64)
                .map(|k| {
                    let a = k as f64 * std::f64::consts::TAU / 64.0;
                    [center[0] + radius * a.cos(), center[1] + radius * a.sin()]
                })
                .collect(),
        ),
        Outline::Rect { name, min, max } => (
            name,
            vec![
                [min[0], min[1]],
                [max[0], min[1]],
                [max[0], max[1]],
                [min[0], max[1]],
                [min[0], min[1]],
            ],
        ),
    }
}

fn colour_bar<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    lo: f64,
    hi: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let mut bar = ChartBuilder::on(area)
        .margin_top(15)
        .margin_bottom(55)
        .margin_right(10)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..1.0, lo..hi)?;
    bar.configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_desc("force (N)")
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 14))
        .draw()?;
    let n = 100;
    bar.draw_series((0..n).map(|k| {
        let a = lo + (hi - lo) * k as f64 / n as f64;
        let b = lo + (hi - lo) * (k + 1) as f64 / n as f64;
        Rectangle::new(
            [(0.0, a), (1.0, b)],
            ViridisRGB.get_color_normalized(a, lo, hi).filled(),
        )
    }))?;
    area.present()
}
