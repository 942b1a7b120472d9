//! VTK legacy ASCII unstructured grids: a reader (tetrahedra, cell type 10, with regions
//! from a cell-data scalar named `region`, `gmsh:physical`, `CellEntityIds` or `material`)
//! and a writer of meshes with point vector fields (displacements, mode shapes) that
//! ParaView opens directly. Both the classic `CELLS` layout and the 5.1
//! `OFFSETS`/`CONNECTIVITY` layout are read.
//!
//! Cell policy: tetrahedra (type 10) are read, quadratic tetrahedra (type 24) by their 4
//! corners with a note; vertices, lines and surface cells are ignored silently; other
//! volume cells (voxels, hexahedra, wedges, pyramids, …) are an error, since dropping
//! them would remove material from the body; type codes this reader does not know
//! (including 0, the empty cell) are ignored with a warning in [`TetMesh::notes`] giving
//! their count and first line. A cell whose point count does not fit its type is an error.
//!
//! Hand-written: the `vtkio` crate is unmaintained and does not report line numbers.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use super::text::{locate, read_to_string, Tokens};
use super::{drop_midside_nodes, ElementShape, MeshError, TetMesh};
use crate::Vec3;

/// VTK cell type of the linear tetrahedron.
const VTK_TETRA: usize = 10;

/// Name, point count (`None` when variable) and shape of VTK cell type `code` (from
/// `vtkCellType.h`), `None` for codes this reader does not know.
fn cell_type(code: usize) -> Option<(&'static str, Option<usize>, ElementShape)> {
    use ElementShape::*;
    Some(match code {
        1 => ("vertex", Some(1), Point),
        2 => ("poly-vertex", None, Point),
        3 => ("line", Some(2), Line),
        4 => ("poly-line", None, Line),
        5 => ("triangle", Some(3), Surface),
        6 => ("triangle strip", None, Surface),
        7 => ("polygon", None, Surface),
        8 => ("pixel", Some(4), Surface),
        9 => ("quad", Some(4), Surface),
        10 => ("tetrahedron", Some(4), Tetrahedron),
        11 => ("voxel", Some(8), OtherVolume),
        12 => ("hexahedron", Some(8), OtherVolume),
        13 => ("wedge", Some(6), OtherVolume),
        14 => ("pyramid", Some(5), OtherVolume),
        15 => ("pentagonal prism", Some(10), OtherVolume),
        16 => ("hexagonal prism", Some(12), OtherVolume),
        21 => ("quadratic edge", Some(3), Line),
        22 => ("quadratic triangle", Some(6), Surface),
        23 => ("quadratic quad", Some(8), Surface),
        24 => ("quadratic tetrahedron", Some(10), Tetrahedron),
        25 => ("quadratic hexahedron", Some(20), OtherVolume),
        26 => ("quadratic wedge", Some(15), OtherVolume),
        27 => ("quadratic pyramid", Some(13), OtherVolume),
        28 => ("biquadratic quad", Some(9), Surface),
        29 => ("triquadratic hexahedron", Some(27), OtherVolume),
        30 => ("quadratic-linear quad", Some(6), Surface),
        31 => ("quadratic-linear wedge", Some(12), OtherVolume),
        32 => ("biquadratic-quadratic wedge", Some(18), OtherVolume),
        33 => ("biquadratic-quadratic hexahedron", Some(24), OtherVolume),
        34 => ("biquadratic triangle", Some(7), Surface),
        35 => ("cubic line", Some(4), Line),
        36 => ("quadratic polygon", None, Surface),
        37 => ("triquadratic pyramid", Some(19), OtherVolume),
        42 => ("polyhedron", None, OtherVolume),
        _ => return None,
    })
}

/// Cell-data scalar names read as region ids (compared ASCII case-insensitively).
const REGION_NAMES: [&str; 5] = [
    "region",
    "regions",
    "gmsh:physical",
    "cellentityids",
    "material",
];

/// Reads a VTK legacy ASCII unstructured grid.
pub fn read_vtk(path: &Path) -> Result<TetMesh, MeshError> {
    let text = read_to_string(path)?;
    parse_vtk(&path.display().to_string(), &text)
}

/// Parses the text of a VTK legacy file; `file` names it in errors.
pub fn parse_vtk(file: &str, text: &str) -> Result<TetMesh, MeshError> {
    let err = |line: usize, msg: String| MeshError::Parse {
        file: file.to_string(),
        line,
        msg,
    };
    // The first two lines (version and title) are free text; the title may be empty.
    let mut lines = text.splitn(3, '\n');
    let header = lines.next().unwrap_or("");
    if !header.trim_start().starts_with("# vtk DataFile") {
        return Err(err(
            1,
            format!("not a VTK legacy file (first line `{}`)", header.trim()),
        ));
    }
    lines.next();
    let body = lines.next().unwrap_or("");
    let mut t = Tokens::starting_at_line(file, body, 3);
    let (format, line) = t.expect_token("ASCII or BINARY")?;
    if !format.eq_ignore_ascii_case("ASCII") {
        return Err(err(
            line,
            format!("`{format}` VTK is not supported; only ASCII"),
        ));
    }
    t.keyword("DATASET")?;
    let (kind, line) = t.expect_token("dataset type")?;
    if !kind.eq_ignore_ascii_case("UNSTRUCTURED_GRID") {
        return Err(err(
            line,
            format!("dataset {kind}; expected UNSTRUCTURED_GRID"),
        ));
    }

    let sections = read_sections(file, &mut t)?;
    to_mesh(file, sections)
}

/// The sections of a VTK unstructured grid this reader uses.
struct Sections {
    nodes: Vec<Vec3>,
    /// Line of each point.
    node_lines: Vec<usize>,
    /// Each cell's point ids and its line.
    cells: Vec<(Vec<usize>, usize)>,
    cell_types: Vec<usize>,
    /// The region id of each cell (a `SCALARS` of cell data named as in
    /// [`REGION_NAMES`]).
    cell_regions: Option<Vec<i32>>,
}

/// Reads the sections after the header, skipping those this reader does not use.
fn read_sections(file: &str, t: &mut Tokens) -> Result<Sections, MeshError> {
    let err = |line: usize, msg: String| MeshError::Parse {
        file: file.to_string(),
        line,
        msg,
    };
    let mut nodes = Vec::new();
    let mut node_lines = Vec::new();
    let mut cells: Vec<(Vec<usize>, usize)> = Vec::new();
    let mut cell_types: Vec<usize> = Vec::new();
    let mut cell_regions: Option<Vec<i32>> = None;
    let mut in_cell_data = false;
    // Inside a section this reader skips (its values are not counted).
    let mut skipping = false;
    while let Some((tok, line)) = t.next() {
        let known = ["POINTS", "CELLS", "CELL_TYPES", "CELL_DATA", "POINT_DATA"];
        if known.iter().any(|k| tok.eq_ignore_ascii_case(k)) {
            skipping = false;
        }
        match tok.to_ascii_uppercase().as_str() {
            "POINTS" => {
                let (n, _) = t.usize("number of points")?;
                t.expect_token("point data type")?;
                nodes.reserve(n.min(1 << 16));
                for _ in 0..n {
                    let (p, l) = t.point()?;
                    nodes.push(p);
                    node_lines.push(l);
                }
            }
            "CELLS" => cells = read_cells(t)?,
            "CELL_TYPES" => {
                let (n, n_line) = t.usize("number of cell types")?;
                if n != cells.len() {
                    return Err(err(
                        n_line,
                        format!("{n} cell types for {} cells", cells.len()),
                    ));
                }
                cell_types = (0..n)
                    .map(|_| t.usize("cell type").map(|v| v.0))
                    .collect::<Result<_, _>>()?;
            }
            "CELL_DATA" => {
                let (n, n_line) = t.usize("number of cells")?;
                if n != cells.len() {
                    return Err(err(
                        n_line,
                        format!("CELL_DATA for {n} cells, but there are {}", cells.len()),
                    ));
                }
                in_cell_data = true;
            }
            "POINT_DATA" => {
                let (n, n_line) = t.usize("number of points")?;
                if n != nodes.len() {
                    return Err(err(
                        n_line,
                        format!("POINT_DATA for {n} points, but there are {}", nodes.len()),
                    ));
                }
                in_cell_data = false;
            }
            "SCALARS" if in_cell_data => {
                let (name, _) = t.expect_token("scalar name")?;
                t.expect_token("scalar type")?;
                if let Some((n_comp, l)) = t.peek() {
                    if let Ok(n_comp) = n_comp.parse::<usize>() {
                        if n_comp != 1 && REGION_NAMES.iter().any(|r| r.eq_ignore_ascii_case(name))
                        {
                            return Err(err(
                                l,
                                format!(
                                    "region scalar `{name}` has {n_comp} components; expected 1"
                                ),
                            ));
                        }
                        t.next();
                    }
                }
                if t.peek()
                    .is_some_and(|(k, _)| k.eq_ignore_ascii_case("LOOKUP_TABLE"))
                {
                    t.next();
                    t.expect_token("lookup table name")?;
                }
                if cell_regions.is_none()
                    && REGION_NAMES.iter().any(|r| r.eq_ignore_ascii_case(name))
                {
                    let mut regions = Vec::with_capacity(cells.len());
                    for _ in 0..cells.len() {
                        let (v, l) = t.f64("region id")?;
                        if v.fract() != 0.0 || v.abs() > i32::MAX as f64 {
                            return Err(err(l, format!("region id {v} is not an integer")));
                        }
                        regions.push(v as i32);
                    }
                    cell_regions = Some(regions);
                } else {
                    skipping = true;
                }
            }
            // Other sections (FIELD, VECTORS, point data, …) are skipped token by token.
            // A number outside them is data beyond a section's count.
            _ if tok.parse::<f64>().is_ok() && !skipping => {
                return Err(err(
                    line,
                    format!("unexpected number `{tok}`: more data than the section's count says"),
                ));
            }
            _ => skipping = true,
        }
    }
    Ok(Sections {
        nodes,
        node_lines,
        cells,
        cell_types,
        cell_regions,
    })
}

/// The tetrahedral mesh of `sections`: tetrahedra (quadratic ones by their corners),
/// lower-dimensional cells left out, other volume cells refused.
fn to_mesh(file: &str, sections: Sections) -> Result<TetMesh, MeshError> {
    let err = |line: usize, msg: String| MeshError::Parse {
        file: file.to_string(),
        line,
        msg,
    };
    let Sections {
        mut nodes,
        mut node_lines,
        cells,
        cell_types,
        cell_regions,
    } = sections;
    if cell_types.len() != cells.len() {
        return Err(MeshError::Invalid {
            file: file.to_string(),
            msg: format!(
                "{} cells but {} cell types (missing CELL_TYPES?)",
                cells.len(),
                cell_types.len()
            ),
        });
    }
    let mut tets = Vec::new();
    let mut regions = Vec::new();
    let mut tet_lines = Vec::new();
    // Per type code: count and line of the first cell.
    let mut by_corners: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
    let mut unknown: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
    let mut midside = vec![false; nodes.len()];
    for (c, ((ids, line), &code)) in cells.iter().zip(&cell_types).enumerate() {
        let Some((name, points, shape)) = cell_type(code) else {
            unknown.entry(code).or_insert((0, *line)).0 += 1;
            continue;
        };
        if points.is_some_and(|p| p != ids.len()) {
            return Err(err(
                *line,
                format!(
                    "cell {c} is a {name} (type {code}) with {} points; a {name} has {}",
                    ids.len(),
                    points.unwrap_or(0)
                ),
            ));
        }
        match shape {
            ElementShape::Tetrahedron => {
                if code != VTK_TETRA {
                    by_corners.entry(code).or_insert((0, *line)).0 += 1;
                    for &id in &ids[4..] {
                        if let Some(m) = midside.get_mut(id) {
                            *m = true;
                        }
                    }
                }
                tets.push([ids[0], ids[1], ids[2], ids[3]]);
                regions.push(cell_regions.as_ref().map_or(0, |r| r[c]));
                tet_lines.push(*line);
            }
            ElementShape::OtherVolume => {
                return Err(err(
                    *line,
                    format!(
                        "cell {c} is a {name} (type {code}): palpa reads tetrahedra only, and \
                         dropping it would remove material from the body"
                    ),
                ));
            }
            ElementShape::Point | ElementShape::Line | ElementShape::Surface => {}
        }
    }
    if tets.is_empty() && !cells.is_empty() {
        return Err(MeshError::Invalid {
            file: file.to_string(),
            msg: format!(
                "empty mesh: none of the {} cells is a tetrahedron (cell type 10)",
                cells.len()
            ),
        });
    }
    let dropped = drop_midside_nodes(&mut nodes, &mut node_lines, &mut tets, &midside);
    let mut mesh =
        TetMesh::new(file, nodes, tets, regions).map_err(|e| locate(e, &node_lines, &tet_lines))?;
    if dropped > 0 {
        mesh.notes.push(format!(
            "{file}: dropped the {dropped} mid-edge points of the quadratic tetrahedra (later \
             points are renumbered)"
        ));
    }
    for (code, (count, line)) in by_corners {
        mesh.notes.push(format!(
            "{file}: read {count} cells of type {code} (quadratic tetrahedron, first at line \
             {line}) by their 4 corner points"
        ));
    }
    for (code, (count, line)) in unknown {
        mesh.notes.push(format!(
            "{file}: warning: ignored {count} cells of unknown cell type {code} (first at line \
             {line})"
        ));
    }
    Ok(mesh)
}

/// Reads the `CELLS` section after its keyword, in either layout: each cell's point ids and
/// the line where the cell starts.
fn read_cells(t: &mut Tokens) -> Result<Vec<(Vec<usize>, usize)>, MeshError> {
    let (n, n_line) = t.usize("number of cells")?;
    let (size, _) = t.usize("cell list size")?;
    if t.peek()
        .is_some_and(|(k, _)| k.eq_ignore_ascii_case("OFFSETS"))
    {
        // VTK 5.1: n offsets (one more than the number of cells), then the connectivity.
        t.next();
        t.expect_token("offset type")?;
        let offsets: Vec<(usize, usize)> = (0..n)
            .map(|_| t.usize("offset"))
            .collect::<Result<_, _>>()?;
        t.keyword("CONNECTIVITY")?;
        t.expect_token("connectivity type")?;
        let conn: Vec<(usize, usize)> = (0..size)
            .map(|_| t.usize("point id"))
            .collect::<Result<_, _>>()?;
        let mut cells = Vec::with_capacity(n.saturating_sub(1));
        for w in offsets.windows(2) {
            let (lo, hi) = (w[0].0, w[1].0);
            if lo > hi || hi > conn.len() {
                return Err(t.error_at(
                    w[1].1,
                    format!(
                        "offset {hi} out of order or beyond the {} connectivity entries",
                        conn.len()
                    ),
                ));
            }
            let line = conn.get(lo).map_or(w[0].1, |c| c.1);
            cells.push((conn[lo..hi].iter().map(|c| c.0).collect(), line));
        }
        return Ok(cells);
    }
    let mut cells = Vec::with_capacity(n.min(1 << 16));
    let mut read = 0;
    for _ in 0..n {
        let (count, line) = t.usize("number of points in cell")?;
        let ids = (0..count)
            .map(|_| t.usize("point id").map(|v| v.0))
            .collect::<Result<Vec<_>, _>>()?;
        read += 1 + count;
        cells.push((ids, line));
    }
    if read != size {
        return Err(t.error_at(
            n_line,
            format!("cell list size {size} but the {n} cells hold {read} numbers"),
        ));
    }
    Ok(cells)
}

/// A named vector per mesh node, written as VTK `POINT_DATA` `VECTORS` (e.g. a
/// displacement field in m, or a mode shape).
#[derive(Clone, Copy, Debug)]
pub struct PointVectors<'a> {
    /// Field name shown in ParaView (no whitespace).
    pub name: &'a str,
    /// One vector per mesh node.
    pub values: &'a [Vec3],
}

/// Writes `mesh` as a VTK legacy ASCII unstructured grid with its regions as the cell
/// scalar `region` and each of `fields` as point vectors. `name` is used in errors.
/// Numbers are written in shortest round-trip form, so reading the file back is exact.
pub fn write_vtk(
    out: &mut impl Write,
    name: &str,
    mesh: &TetMesh,
    fields: &[PointVectors],
) -> Result<(), MeshError> {
    for f in fields {
        if f.values.len() != mesh.nodes.len()
            || f.name.is_empty()
            || f.name.contains(char::is_whitespace)
        {
            return Err(MeshError::Invalid {
                file: name.to_string(),
                msg: format!(
                    "point field `{}` has {} values for {} nodes (names must be non-empty without spaces)",
                    f.name,
                    f.values.len(),
                    mesh.nodes.len()
                ),
            });
        }
    }
    let io = |source| MeshError::Io {
        file: name.to_string(),
        source,
    };
    let mut w = std::io::BufWriter::new(out);
    let n = mesh.nodes.len();
    let m = mesh.tets.len();
    write!(w, "# vtk DataFile Version 3.0\npalpa tetrahedral mesh\nASCII\nDATASET UNSTRUCTURED_GRID\nPOINTS {n} double\n").map_err(io)?;
    for p in &mesh.nodes {
        writeln!(w, "{:e} {:e} {:e}", p.x, p.y, p.z).map_err(io)?;
    }
    writeln!(w, "CELLS {m} {}", 5 * m).map_err(io)?;
    for t in &mesh.tets {
        writeln!(w, "4 {} {} {} {}", t[0], t[1], t[2], t[3]).map_err(io)?;
    }
    writeln!(w, "CELL_TYPES {m}").map_err(io)?;
    for _ in 0..m {
        writeln!(w, "{VTK_TETRA}").map_err(io)?;
    }
    writeln!(
        w,
        "CELL_DATA {m}\nSCALARS region int 1\nLOOKUP_TABLE default"
    )
    .map_err(io)?;
    for r in &mesh.regions {
        writeln!(w, "{r}").map_err(io)?;
    }
    if !fields.is_empty() {
        writeln!(w, "POINT_DATA {n}").map_err(io)?;
    }
    for f in fields {
        writeln!(w, "VECTORS {} double", f.name).map_err(io)?;
        for v in f.values {
            writeln!(w, "{:e} {:e} {:e}", v.x, v.y, v.z).map_err(io)?;
        }
    }
    w.flush().map_err(io)
}

/// Writes `mesh` and `fields` to a `.vtk` file at `path` (see [`write_vtk`]).
pub fn save_vtk(path: &Path, mesh: &TetMesh, fields: &[PointVectors]) -> Result<(), MeshError> {
    let name = path.display().to_string();
    let mut file = std::fs::File::create(path).map_err(|source| MeshError::Io {
        file: name.clone(),
        source,
    })?;
    write_vtk(&mut file, &name, mesh, fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_TETS: &str = "# vtk DataFile Version 2.0\n\nASCII\nDATASET UNSTRUCTURED_GRID\n\
POINTS 5 float\n0 0 0 1 0 0 0 1 0\n0 0 1 1 1 1\n\
CELLS 3 13\n4 0 1 2 3\n4 1 2 3 4\n2 0 4\nCELL_TYPES 3\n10 10 3\n\
CELL_DATA 3\nSCALARS temperature float\nLOOKUP_TABLE default\n1.5 2.5 3.5\n\
SCALARS region int 1\nLOOKUP_TABLE default\n4 5 6\n";

    #[test]
    fn reads_tets_and_region_scalar_skipping_other_cells() {
        let m = parse_vtk("g.vtk", TWO_TETS).unwrap();
        assert_eq!(m.tets, vec![[0, 1, 2, 3], [1, 2, 3, 4]]);
        assert_eq!(m.regions, vec![4, 5]);
    }

    #[test]
    fn reads_vtk51_offsets_layout() {
        let text = "# vtk DataFile Version 5.1\nt\nASCII\nDATASET UNSTRUCTURED_GRID\n\
POINTS 4 double\n0 0 0 1 0 0 0 1 0 0 0 1\nCELLS 2 4\nOFFSETS vtktypeint64\n0 4\n\
CONNECTIVITY vtktypeint64\n0 1 2 3\nCELL_TYPES 1\n10\n";
        let m = parse_vtk("n.vtk", text).unwrap();
        assert_eq!(m.tets, vec![[0, 1, 2, 3]]);
    }

    #[test]
    fn extra_points_are_an_error_not_skipped() {
        let e = parse_vtk("g.vtk", &TWO_TETS.replace("POINTS 5", "POINTS 4")).unwrap_err();
        assert!(
            e.to_string().starts_with("g.vtk:7:") && e.to_string().contains("more data"),
            "{e}"
        );
    }

    #[test]
    fn miscounted_cells_name_the_line() {
        let e = parse_vtk("g.vtk", &TWO_TETS.replace("CELLS 3 13", "CELLS 3 14")).unwrap_err();
        assert!(
            e.to_string().starts_with("g.vtk:8:") && e.to_string().contains("14"),
            "{e}"
        );
    }
}
