//! `[mesh]`: where the tetrahedral mesh comes from (a file, a generated box, or a
//! lattice fill of a closed surface) and the render surface.

use std::path::PathBuf;

use serde::Deserialize;

use super::check::{Check, MAX_COORDINATE};
use super::SceneError;
use crate::mesh::generate::{MAX_GENERATED_CELLS, MAX_GENERATED_TETS};

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
}

impl Default for MeshSpec {
    fn default() -> Self {
        Self {
            file: None,
            box_: None,
            lattice: None,
            scale: 1.0,
            render_surface: None,
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
    /// Cells along x, y, z.
    pub cells: [usize; 3],
    /// Cell split.
    pub split: Split,
}

impl Default for BoxSpec {
    /// The default block: x, y ∈ [−5, 5] cm, z ∈ [−4, 0] cm, 5 mm cells.
    fn default() -> Self {
        Self {
            origin: [-0.05, -0.05, -0.04],
            size: [0.10, 0.10, 0.04],
            cells: [20, 20, 8],
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
            c.file_exists("mesh.file", f)?;
        }
        if let Some(b) = &self.box_ {
            c.bounded3("mesh.box.origin", &b.origin, MAX_COORDINATE)?;
            for i in 0..3 {
                c.positive_at_most(&format!("mesh.box.size[{i}]"), b.size[i], MAX_COORDINATE)?;
                c.count(
                    &format!("mesh.box.cells[{i}]"),
                    b.cells[i],
                    1,
                    MAX_GENERATED_CELLS,
                )?;
            }
            let cells = b.cells.iter().try_fold(1usize, |n, &c| n.checked_mul(c));
            if cells.is_none_or(|n| n > MAX_GENERATED_CELLS) {
                return Err(c.invalid(
                    "mesh.box.cells",
                    format!(
                        "{:?} is more than {MAX_GENERATED_CELLS} cells ({} tetrahedra): a mesh \
                         this fine needs more memory than a workstation has",
                        b.cells, MAX_GENERATED_TETS
                    ),
                ));
            }
        }
        if let Some(l) = &self.lattice {
            c.file_exists("mesh.lattice.surface", &l.surface)?;
            c.positive_at_most("mesh.lattice.cell_size", l.cell_size, MAX_COORDINATE)?;
        }
        if let Some(r) = &self.render_surface {
            c.file_exists("mesh.render_surface", r)?;
        }
        Ok(())
    }
}
