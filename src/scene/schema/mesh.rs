//! `[mesh]`: where the tetrahedral mesh comes from (a file, a generated box, or a
//! lattice fill of a closed surface) and the render surface.

use std::path::PathBuf;

use serde::Deserialize;

use super::check::{Check, MAX_COORDINATE};
use super::SceneError;
use crate::fem::Pressure;
use crate::files::FileKind;
use crate::mesh::generate::{graded_axis, MAX_GENERATED_CELLS, MAX_GENERATED_TETS};

/// Where the mesh comes from: exactly one of `file`, `box`, `lattice` (none: the
/// default box).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MeshSpec {
    /// Tetrahedral mesh file (.msh, .node/.ele, .vtk), relative to the scene file.
    pub file: Option<PathBuf>,
    /// Generated box.
    #[serde(rename = "box")]
    pub box_: Option<BoxSpec>,
    /// Lattice fill of a closed surface.
    pub lattice: Option<LatticeSpec>,
    /// Factor applied to the file's (or surface's) coordinates, e.g. 0.01 for cm.
    pub scale: f64,
    /// Optional detailed render surface (.obj/.stl, same units as the mesh before
    /// `scale`), embedded in the tetrahedral mesh and moved with it.
    pub render_surface: Option<PathBuf>,
    /// Where the tetrahedra's volumetric strain is evaluated: per element, or averaged
    /// over each node's tetrahedra (no volumetric locking; linear law only).
    pub pressure: Pressure,
}

impl Default for MeshSpec {
    fn default() -> Self {
        Self {
            file: None,
            box_: None,
            lattice: None,
            scale: 1.0,
            render_surface: None,
            pressure: Pressure::Element,
        }
    }
}

/// How a lattice cube is split into tetrahedra.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Split {
    /// Six congruent tetrahedra around the main diagonal.
    #[default]
    Six,
    /// Five tetrahedra, orientation alternating between neighbours.
    Five,
}

impl From<Split> for crate::mesh::generate::CubeSplit {
    fn from(s: Split) -> Self {
        match s {
            Split::Six => Self::Six,
            Split::Five => Self::Five,
        }
    }
}

/// A generated box of hexahedral cells split into tetrahedra.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BoxSpec {
    /// Lowest corner (m, before `mesh.scale`).
    pub origin: [f64; 3],
    /// Edge lengths (m, before `mesh.scale`).
    pub size: [f64; 3],
    /// Cells along x, y, z, uniform ([`DEFAULT_BOX_CELLS`] when absent); not with
    /// `graded`.
    pub cells: Option<[usize; 3]>,
    /// Cells graded away from a focus instead of uniform ones.
    pub graded: Option<Grading>,
    /// Cell split.
    pub split: Split,
}

/// Cells per axis of a `[mesh.box]` that gives neither `cells` nor `graded`: 5 mm cells.
pub const DEFAULT_BOX_CELLS: [usize; 3] = [20, 20, 8];

/// Cells graded away from a point: `fine` at the focus, each next cell `growth` times
/// the last along each axis (a mesh fine where a probe presses, coarse far from it).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grading {
    /// The point the cells are finest at (m, before `mesh.scale`; clamped into the
    /// box, and always a node).
    pub focus: [f64; 3],
    /// Cell size at the focus (m, before `mesh.scale`).
    pub fine: f64,
    /// Ratio of each cell to the one before it, away from the focus (dimensionless).
    pub growth: Growth,
}

/// A grading's growth: one ratio for every axis, or one per axis (`[1, 1, 1.3]`: uniform
/// across, graded in depth).
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(untagged)]
pub enum Growth {
    /// The same ratio on x, y and z.
    Uniform(f64),
    /// The ratio on x, y and z.
    PerAxis([f64; 3]),
}

impl Growth {
    /// The ratio along axis `a` (0 = x, 1 = y, 2 = z).
    pub fn along(&self, a: usize) -> f64 {
        match self {
            Self::Uniform(g) => *g,
            Self::PerAxis(g) => g[a],
        }
    }
}

/// The largest `mesh.box.graded.growth` accepted: a cell twice its neighbour already
/// makes badly shaped tetrahedra.
pub const MAX_GROWTH: f64 = 2.0;

impl Grading {
    /// The node coordinates along each axis of a box at `origin` of `size` (m, before
    /// `mesh.scale`, measured from `origin`).
    pub fn axes(&self, origin: &[f64; 3], size: &[f64; 3]) -> [Vec<f64>; 3] {
        std::array::from_fn(|a| {
            graded_axis(
                0.0,
                size[a],
                self.focus[a] - origin[a],
                self.fine,
                self.growth.along(a),
            )
        })
    }
}

impl Default for BoxSpec {
    /// The default scene's block, x, y ∈ [−5, 5] cm, z ∈ [−4, 0] cm, in uniform 5 mm cells.
    fn default() -> Self {
        Self {
            origin: [-0.05, -0.05, -0.04],
            size: [0.10, 0.10, 0.04],
            cells: None,
            graded: None,
            split: Split::Six,
        }
    }
}

/// A closed triangle surface filled with a lattice of tetrahedra.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatticeSpec {
    /// Closed surface (.obj/.stl), relative to the scene file.
    pub surface: PathBuf,
    /// Lattice cube edge (m, after `mesh.scale`).
    pub cell_size: f64,
    /// Move boundary nodes onto the surface.
    #[serde(default = "yes")]
    pub snap: bool,
    /// Cell split.
    #[serde(default)]
    pub split: Split,
}

fn yes() -> bool {
    true
}

/// Cells a graded axis of `length` (m) gets with cells of `fine` (m) at `focus` (m
/// from its start) growing by `growth`, counted without building it (a geometric
/// series each side).
fn graded_cells(length: f64, focus: f64, fine: f64, growth: f64) -> usize {
    let focus = focus.clamp(0.0, length);
    let side = |l: f64| -> f64 {
        if l <= 0.0 {
            0.0
        } else if growth <= 1.0 + 1e-12 {
            (l / fine).ceil()
        } else {
            // fine (gⁿ − 1)/(g − 1) ≥ l
            ((l * (growth - 1.0) / fine + 1.0).ln() / growth.ln()).ceil()
        }
    };
    (side(focus) + side(length - focus)).min(usize::MAX as f64 / 4.0) as usize
}

impl MeshSpec {
    pub(super) fn validate(&self, c: &Check) -> Result<(), SceneError> {
        let sources = [
            self.file.is_some(),
            self.box_.is_some(),
            self.lattice.is_some(),
        ];
        if sources.iter().filter(|&&s| s).count() > 1 {
            return Err(c.invalid(
                "mesh",
                "give exactly one of `file`, `box` and `lattice`".to_string(),
            ));
        }
        c.positive_at_most("mesh.scale", self.scale, MAX_COORDINATE)?;
        if let Some(f) = &self.file {
            c.file_exists("mesh.file", f, FileKind::Mesh)?;
        }
        if let Some(b) = &self.box_ {
            c.bounded3("mesh.box.origin", &b.origin, MAX_COORDINATE)?;
            for i in 0..3 {
                c.positive_at_most(&format!("mesh.box.size[{i}]"), b.size[i], MAX_COORDINATE)?;
            }
            match (&b.cells, &b.graded) {
                (Some(_), Some(_)) => {
                    return Err(
                        c.invalid("mesh.box", "give `cells` (uniform) or `graded`, not both")
                    )
                }
                (Some(cells), None) => {
                    for (i, &n) in cells.iter().enumerate() {
                        c.count(&format!("mesh.box.cells[{i}]"), n, 1, MAX_GENERATED_CELLS)?;
                    }
                }
                (None, Some(g)) => {
                    c.bounded3("mesh.box.graded.focus", &g.focus, MAX_COORDINATE)?;
                    let smallest = b.size.iter().copied().fold(f64::INFINITY, f64::min);
                    c.positive_at_most("mesh.box.graded.fine", g.fine, smallest)?;
                    match g.growth {
                        Growth::Uniform(r) => {
                            c.within("mesh.box.graded.growth", r, 1.0, MAX_GROWTH)?
                        }
                        Growth::PerAxis(r) => {
                            for (a, r) in r.into_iter().enumerate() {
                                let key = format!("mesh.box.graded.growth[{a}]");
                                c.within(&key, r, 1.0, MAX_GROWTH)?;
                            }
                        }
                    }
                }
                (None, None) => {}
            }
            // Graded axes are counted before they are built: a fine cell on a large box
            // with no growth would be as many cells as uniform ones of that size.
            let per_axis: [usize; 3] = match (&b.cells, &b.graded) {
                (Some(cells), _) => *cells,
                (None, Some(g)) => std::array::from_fn(|a| {
                    graded_cells(
                        b.size[a],
                        g.focus[a] - b.origin[a],
                        g.fine,
                        g.growth.along(a),
                    )
                }),
                (None, None) => DEFAULT_BOX_CELLS,
            };
            let cells = per_axis.iter().try_fold(1usize, |n, &c| n.checked_mul(c));
            if cells.is_none_or(|n| n > MAX_GENERATED_CELLS) {
                let key = match b.graded {
                    Some(_) => "mesh.box.graded",
                    None => "mesh.box.cells",
                };
                return Err(c.invalid(
                    key,
                    format!(
                        "{per_axis:?} is more than {MAX_GENERATED_CELLS} cells ({} tetrahedra): a \
                         mesh this fine needs more memory than a workstation has",
                        MAX_GENERATED_TETS
                    ),
                ));
            }
        }
        if let Some(l) = &self.lattice {
            c.file_exists("mesh.lattice.surface", &l.surface, FileKind::Surface)?;
            c.positive_at_most("mesh.lattice.cell_size", l.cell_size, MAX_COORDINATE)?;
        }
        if let Some(r) = &self.render_surface {
            c.file_exists("mesh.render_surface", r, FileKind::Surface)?;
        }
        Ok(())
    }
}
