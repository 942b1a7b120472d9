//! `palpa modes MESH`: compute, select and print the vibration modes of a mesh
//! ([`crate::app::modes`]).

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use serde::Serialize;

use super::progress::progress_bar;
use crate::app::modes::{
    default_scene_material, load_mesh, modes, parse_fix_below, shown_frequency, warn_implausible,
    ModesOptions,
};
use crate::fem::{Fix, Material, Ordering, Pressure};
use crate::modal::{self, ModeReport, PrecomputeParams, SelectionParams};

/// Arguments of `palpa modes`.
#[derive(Args, Debug, Clone)]
pub struct ModesArgs {
    /// Tetrahedral mesh: a file (.msh, .node/.ele, .vtk) or a generated box
    /// `box:NXxNYxNZ[:SXxSYxSZ]` (cells, size in m before --scale; default size 0.1 m).
    pub mesh: String,
    /// Multiply coordinates by this (e.g. 0.01 for a mesh in cm).
    #[arg(long, default_value_t = 1.0, value_parser = positive_number)]
    pub scale: f64,
    /// Young's modulus E (Pa); default: the default scene's `[materials.default]`.
    #[arg(long, default_value_t = default_scene_material().0)]
    pub young: f64,
    /// Poisson ratio ν; default: the default scene's `[materials.default]`.
    #[arg(long, default_value_t = default_scene_material().1)]
    pub poisson: f64,
    /// Density ρ (kg/m³); default: the default scene's `[materials.default]`.
    #[arg(long, default_value_t = default_scene_material().2)]
    pub density: f64,
    /// Fix nodes with AXIS ≤ min + DIST, e.g. `y=0.005` (m, after scaling).
    #[arg(long, value_name = "AXIS=DIST")]
    pub fix_below: Option<String>,
    /// Number of modes to compute (before selection).
    #[arg(long, default_value_t = 40)]
    pub modes: usize,
    /// Largest expected force (N) for mode selection.
    #[arg(long, default_value_t = SelectionParams::default().max_force, value_parser = positive_number)]
    pub max_force: f64,
    /// Smallest displacement that matters (m) for mode selection.
    #[arg(long, default_value_t = SelectionParams::default().min_displacement, value_parser = positive_number)]
    pub min_displacement: f64,
    /// Frequency cut-off (Hz).
    #[arg(long, default_value_t = SelectionParams::default().max_frequency_hz, value_parser = positive_number)]
    pub max_freq: f64,
    /// Rayleigh stiffness damping α₁ (s).
    #[arg(long, default_value_t = SelectionParams::default().alpha_stiffness, value_parser = non_negative_number)]
    pub alpha_k: f64,
    /// Rayleigh mass damping α₂ (1/s).
    #[arg(long, default_value_t = SelectionParams::default().alpha_mass, value_parser = non_negative_number)]
    pub alpha_m: f64,
    /// Fill-reducing ordering: `auto`, `nd` (geometric nested dissection) or `amd`.
    #[arg(long, default_value = "auto", value_parser = parse_ordering)]
    pub ordering: Ordering,
    /// Where the volumetric strain is evaluated: `element` or `nodal` (nodal-averaged
    /// pressure, which does not lock as ν → 0.5).
    #[arg(long, default_value = "element", value_parser = parse_pressure)]
    pub pressure: Pressure,
    /// Write `{"freq_hz": [...], ...}` here.
    #[arg(long, value_name = "OUT")]
    pub json: Option<PathBuf>,
    /// Write the modal cache file here.
    #[arg(long, value_name = "OUT")]
    pub cache: Option<PathBuf>,
}

/// A finite number > 0.
fn positive_number(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("expected a finite number > 0, got {s:?}")),
    }
}

/// A finite number ≥ 0.
fn non_negative_number(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("expected a finite number >= 0, got {s:?}")),
    }
}

fn parse_ordering(s: &str) -> Result<Ordering, String> {
    match s {
        "nd" | "nested-dissection" => Ok(Ordering::NestedDissection),
        "amd" => Ok(Ordering::Amd),
        "auto" => Ok(Ordering::Auto),
        _ => Err(format!("unknown ordering {s:?}; use auto, nd or amd")),
    }
}

fn parse_pressure(s: &str) -> Result<Pressure, String> {
    match s {
        "element" => Ok(Pressure::Element),
        "nodal" => Ok(Pressure::Nodal),
        _ => Err(format!("unknown pressure {s:?}; use element or nodal")),
    }
}

/// What `--json` writes.
#[derive(Serialize)]
struct JsonReport<'a> {
    mesh: &'a str,
    nodes: usize,
    tets: usize,
    free_dofs: usize,
    fixed_nodes: usize,
    freq_hz: Vec<f64>,
    kept: Vec<bool>,
    modes: &'a [ModeReport],
    timings_s: modal::Timings,
    eigen: &'a modal::EigenInfo,
}

/// Runs `palpa modes`; errors are messages for the user.
pub fn run(args: &ModesArgs) -> Result<(), String> {
    let start = Instant::now();
    let mut mesh = load_mesh(&args.mesh)?;
    if !(args.scale.is_finite() && args.scale > 0.0) {
        return Err(format!("--scale must be positive, got {}", args.scale));
    }
    mesh.scale(args.scale);
    let material =
        Material::new(args.young, args.poisson, args.density).map_err(|e| e.to_string())?;
    warn_implausible(&args.mesh, &mut mesh, args.scale, args.young);
    let fixes: Vec<Fix> = args
        .fix_below
        .as_deref()
        .map(parse_fix_below)
        .transpose()?
        .into_iter()
        .collect();
    let params = PrecomputeParams {
        n_modes: args.modes,
        selection: SelectionParams {
            max_force: args.max_force,
            min_displacement: args.min_displacement,
            max_frequency_hz: args.max_freq,
            alpha_stiffness: args.alpha_k,
            alpha_mass: args.alpha_m,
        },
        ordering: args.ordering,
    };
    println!(
        "mesh {}: {} nodes, {} tetrahedra, volume {:.4e} m³ (scale {})",
        args.mesh,
        mesh.nodes.len(),
        mesh.tets.len(),
        mesh.volume(),
        args.scale
    );
    println!(
        "material: E = {:.4e} Pa, ν = {}, ρ = {} kg/m³",
        material.young, material.poisson, material.density
    );
    let options = ModesOptions {
        mesh,
        material,
        fixes,
        pressure: args.pressure,
        params,
    };
    let (bar, mut on_progress) = progress_bar("computing the modes");
    let result = modes(options, &mut on_progress);
    bar.finish_and_clear();
    let result = result?;
    let (pre, mesh) = (&result.pre, &result.options.mesh);
    println!(
        "{} free DOFs, {} fixed nodes; {} ({} stored entries in L), largest residual {:.1e}",
        pre.n_free_dofs,
        pre.n_fixed_nodes,
        if pre.eigen.dense {
            "dense eigensolver".to_string()
        } else {
            format!("shift-invert Lanczos, shift {:.3e}", pre.eigen.shift)
        },
        pre.eigen.factor_nnz,
        pre.eigen.max_residual
    );
    println!(
        "response (m): the displacement this mode alone gives, linearly, at the node a {} N \
         point force on it moves most (--max-force);\n  modes below {:.1e} m are dropped \
         (--min-displacement). A bound per mode, not the body's deflection: a point load \
         on one node of a fine mesh is very compliant.",
        args.max_force, args.min_displacement
    );
    println!(
        "{:>5} {:>12} {:>10} {:>14}  fate",
        "mode", "freq (Hz)", "zeta", "response (m)"
    );
    for r in &pre.reports {
        println!(
            "{:>5} {:>12.5} {:>10} {:>14}  {}",
            r.index,
            shown_frequency(r),
            r.damping_ratio.map_or("-".into(), |z| format!("{z:.4}")),
            r.static_response
                .map_or("rigid".into(), |s| format!("{s:.3e}")),
            r.fate.reason()
        );
    }
    let t = pre.timings;
    println!(
        "kept {} of {} modes",
        pre.basis.n_modes(),
        pre.reports.len()
    );
    println!(
        "timings: assembly {:.3} s, factorisation {:.3} s, eigen solve {:.3} s (sum {:.3} s); total wall {:.3} s",
        t.assembly,
        t.factorisation,
        t.eigen,
        t.assembly + t.factorisation + t.eigen,
        start.elapsed().as_secs_f64()
    );
    if let Some(path) = &args.json {
        let report = JsonReport {
            mesh: &args.mesh,
            nodes: mesh.nodes.len(),
            tets: mesh.tets.len(),
            free_dofs: pre.n_free_dofs,
            fixed_nodes: pre.n_fixed_nodes,
            freq_hz: pre.reports.iter().map(shown_frequency).collect(),
            kept: pre.reports.iter().map(|r| r.fate.kept()).collect(),
            modes: &pre.reports,
            timings_s: pre.timings,
            eigen: &pre.eigen,
        };
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if let Some(path) = &args.cache {
        result.save_cache(path)?;
        println!("cache written to {}", path.display());
    }
    Ok(())
}
