//! `palpa indent`: the virtual indentation test ([`crate::app::indent`]), printed as a
//! force–depth table and optionally written as JSON.

use std::path::{Path, PathBuf};

use clap::Args;

use super::precompute::SceneArgs;
use crate::app::indent::{check_depths, indent, IndentOptions, Indentation, Method};

/// Arguments of `palpa indent`.
#[derive(Args, Debug, Clone)]
pub struct IndentArgs {
    /// Scene and cache.
    #[command(flatten)]
    pub scene: SceneArgs,
    /// Where to press (m): the two scene coordinates across the scene's up axis
    /// (`[view] up`; x, y for the default +z), e.g. `--at 0.035,0`. The probe comes
    /// down the up axis there onto the first surface it meets.
    #[arg(long, value_name = "X,Y", value_parser = parse_at, allow_hyphen_values = true)]
    pub at: At,
    /// Depths to press to (m), in order, e.g. `--depths 0.001,0.002,0.004`; a sphere
    /// tip (`contact.probe_radius`) is pressed by its lowest point.
    #[arg(long, value_name = "D1,D2,...", value_parser = parse_depths)]
    pub depths: Depths,
    /// Solve the full nonlinear static FEM (each material's `model`) instead of running
    /// the scene's runtime model.
    #[arg(long)]
    pub full: bool,
    /// Also write `{"depth_m": [...], "force_n": [...]}` to this file.
    #[arg(long, value_name = "OUT.json")]
    pub json: Option<PathBuf>,
}

/// Where to press: two scene coordinates across the up axis (m).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct At(pub [f64; 2]);

/// The depths to press to (m), in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Depths(pub Vec<f64>);

fn numbers(s: &str) -> Result<Vec<f64>, String> {
    s.split(',')
        .map(|x| {
            let x = x.trim();
            x.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| format!("{x:?} is not a finite number (metres)"))
        })
        .collect()
}

fn parse_at(s: &str) -> Result<At, String> {
    match numbers(s)?[..] {
        [x, y] => Ok(At([x, y])),
        ref v => Err(format!(
            "give two coordinates X,Y (m), e.g. 0.035,0; got {}",
            v.len()
        )),
    }
}

fn parse_depths(s: &str) -> Result<Depths, String> {
    let depths = numbers(s)?;
    check_depths(&depths)?;
    Ok(Depths(depths))
}

/// Writes `{"depth_m": [...], "force_n": [...]}` to `path`.
pub fn write_json(path: &Path, result: &Indentation) -> Result<(), String> {
    let json = serde_json::json!({
        "depth_m": result.depth_m,
        "force_n": result.force_n,
    });
    std::fs::write(path, format!("{json}\n")).map_err(|e| format!("{}: {e}", path.display()))
}

/// Runs `palpa indent`; errors are messages for the user.
pub fn run(args: &IndentArgs) -> Result<(), String> {
    let built = args.scene.build()?;
    let [x, y] = args.at.0;
    println!(
        "indenting at ({x}, {y}) m{}",
        if args.full {
            ": full nonlinear FEM (Newton on the whole mesh)"
        } else {
            ": the scene's runtime model"
        }
    );
    println!("{:>12} {:>12}", "depth (mm)", "force (N)");
    let options = IndentOptions {
        at: args.at.0,
        depths: args.depths.0.clone(),
        full: args.full,
    };
    let result = indent(built, &options, &mut |d, f| {
        println!("{:>12.4} {:>12.6}", d * 1e3, f)
    })?;
    let p = result.surface_point;
    let n = result.normal;
    eprintln!(
        "pressed at ({:.2}, {:.2}, {:.2}) mm along ({:.3}, {:.3}, {:.3}); {}",
        p.x * 1e3,
        p.y * 1e3,
        p.z * 1e3,
        -n.x,
        -n.y,
        -n.z,
        match result.method {
            Method::Runtime { backend } => format!("{backend} backend, held until settled"),
            Method::Full { dofs, iterations } =>
                format!("{dofs} free DOFs, {iterations} Newton iterations"),
        }
    );
    if let Some(path) = &args.json {
        write_json(path, &result)?;
        eprintln!("written to {}", path.display());
    }
    Ok(())
}
