//! `palpa plot` (and `replay --plot`): the force and indentation of a replay or a
//! recorded session, drawn with `plotters` into SVG or PNG.
//!
//! Panels: force over time (|f| as a wide light band with fz drawn inside it, so
//! neither hides the other), indentation depth over time, force against indentation
//! while in contact (the loading and unloading curves), and, when the probe slides
//! further than it presses, force against position along the slide.

use std::path::{Path, PathBuf};
use std::sync::Once;

use clap::Args;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::Vec3;

/// Columns a force CSV must have (more are allowed, in any order).
pub const COLUMNS: [&str; 9] = ["t", "x", "y", "z", "fx", "fy", "fz", "depth", "contact"];

/// A comment line `# scene: NAME` anywhere before the header names the scene for the
/// plot's title.
pub const SCENE_COMMENT: &str = "# scene:";

/// Width of a plot (px; SVG user units).
pub const WIDTH: u32 = 1000;
/// Height of one panel (px).
pub const PANEL_HEIGHT: u32 = 300;
/// Height of the title band (px).
pub const TITLE_HEIGHT: u32 = 40;

/// Arguments of `palpa plot`.
#[derive(Args, Debug, Clone)]
pub struct PlotArgs {
    /// Force CSV: `palpa replay`'s output or a recorded session's `ticks.csv` (header
    /// with at least t,x,y,z,fx,fy,fz,depth,contact; s, m, N, m, 0/1).
    pub csv: PathBuf,
    /// Output: FILE.svg or FILE.png; default: the CSV's name with `.svg`.
    #[arg(long, value_name = "FILE.svg|FILE.png", value_parser = plot_path)]
    pub out: Option<PathBuf>,
    /// Title; default: the scene named by a `# scene: NAME` line in the CSV, else the
    /// CSV's file name.
    #[arg(long)]
    pub title: Option<String>,
}

/// The image formats a plot can be written in, from the output's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Scalable vector graphics (text).
    Svg,
    /// A PNG image, RGB, 8 bits per channel.
    Png,
}

impl Format {
    /// The format of `path` by its extension (case-insensitive); anything but `.svg`
    /// and `.png` is an error naming the extension.
    pub fn of(path: &Path) -> Result<Self, String> {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        match ext.to_ascii_lowercase().as_str() {
            "svg" => Ok(Format::Svg),
            "png" => Ok(Format::Png),
            "" => Err(format!(
                "{}: no file extension; a plot is written as .svg or .png",
                path.display()
            )),
            _ => Err(format!(
                "{}: cannot write a plot as \".{ext}\"; use .svg or .png",
                path.display()
            )),
        }
    }
}

/// Clap value parser for a plot output path: checks the format before any work.
pub fn plot_path(s: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(s);
    Format::of(&path)?;
    Ok(path)
}

/// A force trace: the rows of a replay's or a recorded session's CSV, as columns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ForceTrace {
    /// Time of each row (s).
    pub t: Vec<f64>,
    /// Probe tip (m, scene frame).
    pub probe: Vec<Vec3>,
    /// Force on the user's hand (N, scene frame).
    pub force: Vec<Vec3>,
    /// Indentation depth (m).
    pub depth: Vec<f64>,
    /// Whether the probe touched the tissue.
    pub contact: Vec<bool>,
    /// The scene's name from a `# scene: NAME` line, if the file has one.
    pub scene: Option<String>,
}

impl ForceTrace {
    /// Reads a force CSV; errors name the file, the line and the column.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = crate::files::read_text(path, crate::files::FileKind::ForceCsv)
            .map_err(|e| e.to_string())?;
        Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses CSV text with a header naming at least [`COLUMNS`]; `#` lines are
    /// comments. Errors name the line (1-based) and the column.
    pub fn parse(text: &str) -> Result<Self, String> {
        let scene = text
            .lines()
            .take_while(|l| l.trim().is_empty() || l.starts_with('#'))
            .find_map(|l| l.strip_prefix(SCENE_COMMENT))
            .map(|name| name.trim().to_string())
            .filter(|name| !name.is_empty());
        let mut reader = csv::ReaderBuilder::new()
            .comment(Some(b'#'))
            .trim(csv::Trim::All)
            .from_reader(text.as_bytes());
        let header = reader
            .headers()
            .map_err(|e| format!("header: {e}"))?
            .clone();
        let index: Vec<usize> = COLUMNS
            .iter()
            .map(|name| {
                header.iter().position(|h| h == *name).ok_or_else(|| {
                    format!(
                        "the header has no column `{name}` (needs {})",
                        COLUMNS.join(",")
                    )
                })
            })
            .collect::<Result<_, _>>()?;
        let mut trace = ForceTrace {
            scene,
            ..Self::default()
        };
        for record in reader.records() {
            let record = record.map_err(|e| e.to_string())?;
            let line = record.position().map_or(0, |p| p.line());
            let mut v = [0.0; 9];
            for (k, (&i, name)) in index.iter().zip(COLUMNS).enumerate() {
                let field = record.get(i).unwrap_or("");
                v[k] = field
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| {
                        format!("line {line}: column `{name}`: {field:?} is not a finite number")
                    })?;
            }
            trace.t.push(v[0]);
            trace.probe.push(Vec3::new(v[1], v[2], v[3]));
            trace.force.push(Vec3::new(v[4], v[5], v[6]));
            trace.depth.push(v[7]);
            trace.contact.push(v[8] != 0.0);
        }
        if trace.t.is_empty() {
            return Err("no rows after the header".into());
        }
        Ok(trace)
    }

    /// The slide, if the probe moved along the surface further than it pressed while
    /// in contact: the unit direction of travel and the lateral distance covered (m).
    /// "Along the surface" is across the mean force direction of the contact rows.
    pub fn slide(&self) -> Option<(Vec3, f64)> {
        let touching: Vec<usize> = (0..self.t.len()).filter(|&i| self.contact[i]).collect();
        let first = *touching.first()?;
        let normal = touching
            .iter()
            .map(|&i| self.force[i])
            .sum::<Vec3>()
            .try_normalize(1e-12)?;
        let lateral = |i: usize| {
            let d = self.probe[i] - self.probe[first];
            d - normal * normal.dot(&d)
        };
        let far = touching
            .iter()
            .map(|&i| lateral(i))
            .max_by(|a, b| a.norm().total_cmp(&b.norm()))?;
        let deepest = touching.iter().map(|&i| self.depth[i]).fold(0.0, f64::max);
        (far.norm() > deepest).then(|| (far / far.norm(), far.norm()))
    }
}

/// One curve of a panel.
struct Curve {
    label: String,
    points: Vec<(f64, f64)>,
    style: ShapeStyle,
}

/// One chart: axis descriptions and its curves.
struct Panel {
    x_desc: String,
    y_desc: String,
    curves: Vec<Curve>,
}

/// The colour of |f|: a wide light band.
const MAGNITUDE: RGBColor = RGBColor(31, 119, 180);
/// The colour of fz and of depth: a thin dark line.
const COMPONENT: RGBColor = RGBColor(214, 39, 40);

fn magnitude_style() -> ShapeStyle {
    MAGNITUDE.mix(0.45).stroke_width(6)
}

fn component_style() -> ShapeStyle {
    COMPONENT.stroke_width(1)
}

/// The panels of a trace: force and depth over time, force against depth, and force
/// along a slide.
fn panels(trace: &ForceTrace) -> Vec<Panel> {
    let over_time = |values: Vec<f64>| trace.t.iter().copied().zip(values).collect();
    let magnitude: Vec<f64> = trace.force.iter().map(|f| f.norm()).collect();
    let mut panels = vec![
        Panel {
            x_desc: "time (s)".into(),
            y_desc: "force on the hand (N)".into(),
            curves: vec![
                Curve {
                    label: "|f|".into(),
                    points: over_time(magnitude.clone()),
                    style: magnitude_style(),
                },
                Curve {
                    label: "fz".into(),
                    points: over_time(trace.force.iter().map(|f| f.z).collect()),
                    style: component_style(),
                },
            ],
        },
        Panel {
            x_desc: "time (s)".into(),
            y_desc: "indentation (mm)".into(),
            curves: vec![Curve {
                label: "depth".into(),
                points: over_time(trace.depth.iter().map(|d| d * 1e3).collect()),
                style: component_style(),
            }],
        },
    ];
    let touching: Vec<usize> = (0..trace.t.len()).filter(|&i| trace.contact[i]).collect();
    if !touching.is_empty() {
        let against_depth = |value: &dyn Fn(usize) -> f64| {
            let at = |i: usize| (trace.depth[i] * 1e3, value(i));
            touching.iter().map(|&i| at(i)).collect()
        };
        panels.push(Panel {
            x_desc: "indentation depth in contact (mm)".into(),
            y_desc: "force on the hand (N)".into(),
            curves: vec![
                Curve {
                    label: "|f| against depth".into(),
                    points: against_depth(&|i| magnitude[i]),
                    style: magnitude_style(),
                },
                Curve {
                    label: "fz against depth".into(),
                    points: against_depth(&|i| trace.force[i].z),
                    style: component_style(),
                },
            ],
        });
    }
    if let Some((dir, _)) = trace.slide() {
        let along: Vec<(f64, f64)> = (0..trace.t.len())
            .filter(|&i| trace.contact[i])
            .map(|i| (dir.dot(&trace.probe[i]) * 1e3, magnitude[i]))
            .collect();
        let fz = (0..trace.t.len())
            .filter(|&i| trace.contact[i])
            .map(|i| (dir.dot(&trace.probe[i]) * 1e3, trace.force[i].z))
            .collect();
        panels.push(Panel {
            x_desc: format!(
                "probe position along the slide {} (mm)",
                direction_name(&dir)
            ),
            y_desc: "force on the hand (N)".into(),
            curves: vec![
                Curve {
                    label: "|f| in contact".into(),
                    points: along,
                    style: magnitude_style(),
                },
                Curve {
                    label: "fz in contact".into(),
                    points: fz,
                    style: component_style(),
                },
            ],
        });
    }
    panels
}

/// `x`, `-y`, … for an axis direction, else the unit vector's components.
fn direction_name(dir: &Vec3) -> String {
    for (i, axis) in ["x", "y", "z"].iter().enumerate() {
        if (dir[i].abs() - 1.0).abs() < 1e-6 {
            return format!("{}{axis}", if dir[i] < 0.0 { "-" } else { "+" });
        }
    }
    format!("({:.2}, {:.2}, {:.2})", dir.x, dir.y, dir.z)
}

/// Range of `values` with 5 % padding; a flat or empty range becomes one unit wide.
fn range(values: impl Iterator<Item = f64>, include_zero: bool) -> std::ops::Range<f64> {
    let start = if include_zero {
        (0.0, 0.0)
    } else {
        (f64::INFINITY, f64::NEG_INFINITY)
    };
    let (lo, hi) = values.fold(start, |(lo, hi), v| (lo.min(v), hi.max(v)));
    if !(lo.is_finite() && hi.is_finite()) {
        return 0.0..1.0;
    }
    if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        return lo - 0.5..hi + 0.5;
    }
    let pad = 0.05 * (hi - lo);
    lo - pad..hi + pad
}

/// The fonts plotters lays text out with: DejaVu Sans, embedded, so no system font
/// library is needed (plotters' `ttf` feature would look fonts up through fontconfig).
fn register_fonts() {
    static FONTS: Once = Once::new();
    FONTS.call_once(|| {
        // The bytes are a valid TrueType font shipped by the `dejavu` crate.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
    });
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    panels: &[Panel],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let body = root.titled(title, ("sans-serif", 20))?;
    for (area, panel) in body.split_evenly((panels.len(), 1)).iter().zip(panels) {
        let points = || panel.curves.iter().flat_map(|c| &c.points);
        let x = range(points().map(|p| p.0), false);
        let y = range(points().map(|p| p.1), true);
        let mut chart = ChartBuilder::on(area)
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(x, y)?;
        chart
            .configure_mesh()
            .x_desc(panel.x_desc.as_str())
            .y_desc(panel.y_desc.as_str())
            .light_line_style(RGBColor(242, 242, 242))
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 14))
            .draw()?;
        for curve in &panel.curves {
            let style = curve.style;
            chart
                .draw_series(LineSeries::new(curve.points.iter().copied(), style))?
                .label(curve.label.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], style));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font(("sans-serif", 13))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
    }
    root.present()
}

/// Draws `trace` under `title` into `out`, as SVG or PNG by its extension.
pub fn write(trace: &ForceTrace, title: &str, out: &Path) -> Result<(), String> {
    let panels = panels(trace);
    let size = (WIDTH, TITLE_HEIGHT + PANEL_HEIGHT * panels.len() as u32);
    render(
        out,
        size,
        |area| draw(area, title, &panels).map_err(|e| e.to_string()),
        |area| draw(area, title, &panels).map_err(|e| e.to_string()),
    )
}

/// Draws a picture of `size` (px) into `out`, as SVG (`svg` draws it) or PNG (`png`
/// draws it) by the extension, and writes the file safely.
pub fn render(
    out: &Path,
    size: (u32, u32),
    svg: impl FnOnce(DrawingArea<SVGBackend, Shift>) -> Result<(), String>,
    png: impl FnOnce(DrawingArea<BitMapBackend, Shift>) -> Result<(), String>,
) -> Result<(), String> {
    let format = Format::of(out)?;
    register_fonts();
    let failed = |e: &dyn std::fmt::Display| format!("{}: drawing the plot: {e}", out.display());
    let bytes = match format {
        Format::Svg => {
            let mut text = String::new();
            svg(SVGBackend::with_string(&mut text, size).into_drawing_area())
                .map_err(|e| failed(&e))?;
            text.into_bytes()
        }
        Format::Png => {
            let mut rgb = vec![0u8; size.0 as usize * size.1 as usize * 3];
            png(BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area())
                .map_err(|e| failed(&e))?;
            let mut bytes = Vec::new();
            let mut encoder = png::Encoder::new(&mut bytes, size.0, size.1);
            encoder.set_color(png::ColorType::Rgb);
            encoder.set_depth(png::BitDepth::Eight);
            encoder
                .write_header()
                .and_then(|mut w| w.write_image_data(&rgb))
                .map_err(|e| failed(&e))?;
            bytes
        }
    };
    crate::files::write_file_atomic(out, &bytes).map_err(|e| e.to_string())
}

/// Plots the force CSV `csv` into `out` under `title` (what `replay --plot` calls on
/// the CSV it has just written).
pub fn plot_csv(csv: &Path, out: &Path, title: &str) -> Result<(), String> {
    write(&ForceTrace::load(csv)?, title, out)
}

/// Runs `palpa plot`; errors are messages for the user.
pub fn run(args: &PlotArgs) -> Result<(), String> {
    let trace = ForceTrace::load(&args.csv)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| args.csv.with_extension("svg"));
    let title = args
        .title
        .clone()
        .or_else(|| trace.scene.clone())
        .unwrap_or_else(|| {
            args.csv.file_name().map_or_else(
                || args.csv.display().to_string(),
                |n| n.to_string_lossy().into(),
            )
        });
    write(&trace, &title, &out)?;
    println!("plot written to {}", out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRESS: &str = "# scene: a block\n\
        t,x,y,z,fx,fy,fz,depth,contact\n\
        0,0,0,0.001,0,0,0,0,0\n\
        0.001,0,0,-0.002,0,0,1.5,0.002,1\n\
        0.002,0.001,0,-0.004,0.1,0,3,0.004,1\n";

    #[test]
    fn a_csv_with_extra_columns_in_any_order_parses() {
        let text = "contact,depth,fz,fy,fx,z,y,x,t,extra\n1,0.002,3,2,1,-0.002,0.5,0.25,0.125,9\n";
        let t = ForceTrace::parse(text).unwrap();
        assert_eq!(t.t, [0.125]);
        assert_eq!(t.probe, [Vec3::new(0.25, 0.5, -0.002)]);
        assert_eq!(t.force, [Vec3::new(1.0, 2.0, 3.0)]);
        assert_eq!(t.depth, [0.002]);
        assert_eq!(t.contact, [true]);
        assert_eq!(t.scene, None);
        assert_eq!(
            ForceTrace::parse(PRESS).unwrap().scene.as_deref(),
            Some("a block")
        );
    }

    #[test]
    fn bad_csvs_name_the_column_and_line() {
        let err = ForceTrace::parse("t,x,y,z,fx,fy,depth,contact\n").unwrap_err();
        assert!(err.contains("`fz`"), "{err}");
        let bad = PRESS.replace("0.002,0.001,0,-0.004,0.1", "0.002,0.001,0,-0.004,oops");
        let err = ForceTrace::parse(&bad).unwrap_err();
        assert!(
            err.contains("line 5") && err.contains("`fx`") && err.contains("oops"),
            "{err}"
        );
    }

    #[test]
    fn a_press_is_not_a_slide_and_a_slide_is() {
        assert_eq!(ForceTrace::parse(PRESS).unwrap().slide(), None);
        let mut slide = String::from("t,x,y,z,fx,fy,fz,depth,contact\n");
        for k in 0..=10 {
            let x = -0.01 + 0.002 * f64::from(k);
            slide.push_str(&format!("{},{x},0,-0.003,0,0,2,0.003,1\n", f64::from(k)));
        }
        let (dir, dist) = ForceTrace::parse(&slide).unwrap().slide().unwrap();
        assert!((dir - Vec3::x()).norm() < 1e-12, "{dir}");
        assert!((dist - 0.02).abs() < 1e-12, "{dist}");
        assert_eq!(direction_name(&dir), "+x");
    }

    #[test]
    fn formats_come_from_the_extension() {
        assert_eq!(Format::of(Path::new("a/b.SVG")), Ok(Format::Svg));
        assert_eq!(Format::of(Path::new("b.png")), Ok(Format::Png));
        let err = Format::of(Path::new("b.jpg")).unwrap_err();
        assert!(err.contains("\".jpg\""), "{err}");
        assert!(Format::of(Path::new("plot"))
            .unwrap_err()
            .contains("no file extension"));
    }

    #[test]
    fn ranges_pad_and_include_zero() {
        assert_eq!(range([1.0, 3.0].into_iter(), false), 0.9..3.1);
        let r = range([1.0, 3.0].into_iter(), true);
        assert!(
            (r.start + 0.15).abs() < 1e-12 && (r.end - 3.15).abs() < 1e-12,
            "{r:?}"
        );
        assert_eq!(range([2.0].into_iter(), false), 1.5..2.5);
        assert_eq!(range(std::iter::empty(), false), 0.0..1.0);
    }
}
