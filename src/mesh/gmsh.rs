//! What the ASCII (`msh.rs`) and binary (`msh_binary.rs`) Gmsh readers share:
//! the element type table, the sections collected from a file ([`Raw`]), the
//! `$PhysicalNames` section (text in both encodings) and the final assembly into a
//! [`TetMesh`]. Both readers import this file; it imports neither.
//!
//! Element policy: linear tetrahedra (type 4) are read; tetrahedra of higher order
//! (types 11, 29, 30, 31) are read by their 4 corner nodes, with a note; points, lines and
//! surface elements are ignored silently (Gmsh writes them beside every volume mesh);
//! other volume elements (hexahedra, prisms, pyramids) are an error, because dropping
//! them would remove material from the body; type codes Gmsh does not define are ignored
//! with a warning in [`TetMesh::notes`] giving their count and first line.

use std::collections::{BTreeMap, HashMap};

use super::text::{locate, Tokens};
use super::{drop_midside_nodes, ElementShape as Shape, MeshError, TetMesh};
use crate::Vec3;

/// A Gmsh element type: its name, node count and shape.
#[derive(Clone, Copy, Debug)]
pub(super) struct ElementType {
    /// Gmsh's name, e.g. "4-node tetrahedron".
    pub(super) name: &'static str,
    /// Nodes per element.
    pub(super) nodes: usize,
    /// Shape.
    pub(super) shape: Shape,
}

/// Gmsh element type `code` (from Gmsh 4.15's `getElementProperties`), `None` for a code
/// Gmsh does not define.
pub(super) fn element_type(code: i64) -> Option<ElementType> {
    use Shape::*;
    let (name, nodes, shape) = match code {
        1 => ("2-node line", 2, Line),
        2 => ("3-node triangle", 3, Surface),
        3 => ("4-node quadrangle", 4, Surface),
        4 => ("4-node tetrahedron", 4, Tetrahedron),
        5 => ("8-node hexahedron", 8, OtherVolume),
        6 => ("6-node prism", 6, OtherVolume),
        7 => ("5-node pyramid", 5, OtherVolume),
        8 => ("3-node line", 3, Line),
        9 => ("6-node triangle", 6, Surface),
        10 => ("9-node quadrangle", 9, Surface),
        11 => ("10-node tetrahedron", 10, Tetrahedron),
        12 => ("27-node hexahedron", 27, OtherVolume),
        13 => ("18-node prism", 18, OtherVolume),
        14 => ("14-node pyramid", 14, OtherVolume),
        15 => ("point", 1, Point),
        16 => ("8-node quadrangle", 8, Surface),
        17 => ("20-node hexahedron", 20, OtherVolume),
        18 => ("15-node prism", 15, OtherVolume),
        19 => ("13-node pyramid", 13, OtherVolume),
        20 => ("9-node triangle", 9, Surface),
        21 => ("10-node triangle", 10, Surface),
        22 => ("12-node triangle", 12, Surface),
        23 | 24 => ("15-node triangle", 15, Surface),
        25 => ("21-node triangle", 21, Surface),
        26 => ("4-node line", 4, Line),
        27 => ("5-node line", 5, Line),
        28 => ("6-node line", 6, Line),
        29 => ("20-node tetrahedron", 20, Tetrahedron),
        30 => ("35-node tetrahedron", 35, Tetrahedron),
        31 => ("56-node tetrahedron", 56, Tetrahedron),
        92 => ("64-node hexahedron", 64, OtherVolume),
        93 => ("125-node hexahedron", 125, OtherVolume),
        _ => return None,
    };
    Some(ElementType { name, nodes, shape })
}

/// The error for a volume element palpa cannot use; `code` is its Gmsh type.
pub(super) fn other_volume_message(code: i64, kind: ElementType) -> String {
    format!(
        "element type {code} ({}): palpa reads tetrahedra only, and \
         dropping these would remove material from the body (mesh with tetrahedra, e.g. \
         gmsh -3 without recombination)",
        kind.name
    )
}

/// A tetrahedron as read: corner node tags, region and the line it was on (0 in binary
/// files).
pub(super) struct RawTet {
    pub(super) tags: [usize; 4],
    pub(super) region: i32,
    pub(super) line: usize,
}

/// Elements of one kind that were counted rather than read, and where the first was.
#[derive(Clone, Debug)]
pub(super) struct Tally {
    /// How many.
    pub(super) count: usize,
    /// Where the first one is ("line 12", or "byte 345" in a binary file).
    pub(super) first: String,
}

impl Tally {
    /// Adds `count` elements found at `at`.
    pub(super) fn add(tallies: &mut BTreeMap<i64, Tally>, code: i64, count: usize, at: String) {
        tallies
            .entry(code)
            .or_insert(Tally {
                count: 0,
                first: at,
            })
            .count += count;
    }
}

/// Everything collected from the sections of an MSH file.
#[derive(Default)]
pub(super) struct Raw {
    pub(super) version: Option<Version>,
    /// Binary file: there are no lines to name, errors name elements and nodes.
    pub(super) binary: bool,
    pub(super) nodes: Vec<Vec3>,
    pub(super) node_lines: Vec<usize>,
    pub(super) node_index: HashMap<usize, usize>,
    pub(super) tets: Vec<RawTet>,
    pub(super) names: BTreeMap<i32, String>,
    /// 4.1 only: physical tags of each volume entity.
    pub(super) volume_physicals: HashMap<i64, Vec<i32>>,
    /// Points, lines and surface elements, ignored: count per type.
    pub(super) ignored: BTreeMap<i64, usize>,
    /// Tags of the nodes of higher-order tetrahedra beyond their corners.
    pub(super) midside_tags: Vec<usize>,
    /// Higher-order tetrahedra read by their corners, per type.
    pub(super) by_corners: BTreeMap<i64, Tally>,
    /// Type codes Gmsh does not define, ignored with a warning.
    pub(super) unknown: BTreeMap<i64, Tally>,
    pub(super) notes: Vec<String>,
}

/// MSH format version of a file.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Version {
    V2,
    V4,
}

/// Expects the section end keyword; `why` explains a mismatch (usually a count).
pub(super) fn end(t: &mut Tokens, keyword: &str, why: &str) -> Result<(), MeshError> {
    let (tok, line) = t.expect_token(keyword)?;
    if tok == keyword {
        Ok(())
    } else {
        Err(t.error_at(line, format!("expected {keyword}, found `{tok}` ({why})")))
    }
}

/// Reads a `$PhysicalNames` section after its header; 3-D names become region names.
pub(super) fn physical_names(t: &mut Tokens, raw: &mut Raw) -> Result<(), MeshError> {
    let (n, _) = t.usize("number of physical names")?;
    for _ in 0..n {
        let (dim, _) = t.usize("physical dimension")?;
        let (tag, line) = t.i64("physical tag")?;
        let (name, _) = t.rest_of_line();
        let name = name.trim_matches('"').to_string();
        if dim == 3 {
            let tag = i32::try_from(tag)
                .map_err(|_| t.error_at(line, format!("physical tag {tag} out of range")))?;
            raw.names.insert(tag, name);
        }
    }
    end(t, "$EndPhysicalNames", "more names than the count says")
}

/// Resolves node tags and validates the mesh; `file` names it in errors.
pub(super) fn finish(file: &str, raw: Raw) -> Result<TetMesh, MeshError> {
    if raw.version.is_none() {
        return Err(MeshError::Invalid {
            file: file.to_string(),
            msg: "no $MeshFormat section; not a Gmsh MSH file".into(),
        });
    }
    if raw.tets.is_empty() {
        let mut skipped = raw.ignored.clone();
        for (&code, tally) in &raw.unknown {
            *skipped.entry(code).or_default() += tally.count;
        }
        let skipped = if skipped.is_empty() {
            "no elements".to_string()
        } else {
            format!("only element types (type: count) {skipped:?}")
        };
        return Err(MeshError::Invalid {
            file: file.to_string(),
            msg: format!(
                "empty mesh: no tetrahedra (element type 4); {} nodes, {skipped}",
                raw.nodes.len()
            ),
        });
    }
    let mut tets = Vec::with_capacity(raw.tets.len());
    let mut regions = Vec::with_capacity(raw.tets.len());
    let mut tet_lines = Vec::with_capacity(raw.tets.len());
    for (e, tet) in raw.tets.iter().enumerate() {
        let mut ids = [0; 4];
        for (id, tag) in ids.iter_mut().zip(tet.tags) {
            *id = *raw.node_index.get(&tag).ok_or_else(|| {
                let msg = format!("tetrahedron refers to unknown node tag {tag}");
                if raw.binary {
                    MeshError::Element {
                        file: file.to_string(),
                        element: e,
                        msg,
                    }
                } else {
                    MeshError::Parse {
                        file: file.to_string(),
                        line: tet.line,
                        msg,
                    }
                }
            })?;
        }
        tets.push(ids);
        regions.push(tet.region);
        if !raw.binary {
            tet_lines.push(tet.line);
        }
    }
    let mut midside = vec![false; raw.nodes.len()];
    for tag in &raw.midside_tags {
        if let Some(&id) = raw.node_index.get(tag) {
            midside[id] = true;
        }
    }
    let (mut nodes, mut node_lines) = (raw.nodes, raw.node_lines);
    let dropped = drop_midside_nodes(&mut nodes, &mut node_lines, &mut tets, &midside);
    let mut mesh =
        TetMesh::new(file, nodes, tets, regions).map_err(|e| locate(e, &node_lines, &tet_lines))?;
    mesh.region_names = raw.names;
    let mut notes = raw.notes;
    for (code, tally) in &raw.by_corners {
        let name = element_type(*code).map_or("tetrahedron", |k| k.name);
        notes.push(format!(
            "read {} elements of type {code} ({name}, first at {}) by their 4 corner nodes",
            tally.count, tally.first
        ));
    }
    if dropped > 0 {
        notes.push(format!(
            "dropped the {dropped} higher-order nodes of those elements (later nodes are \
             renumbered)"
        ));
    }
    for (code, tally) in &raw.unknown {
        notes.push(format!(
            "warning: ignored {} elements of unknown element type {code} (first at {})",
            tally.count, tally.first
        ));
    }
    mesh.notes
        .extend(notes.into_iter().map(|n| format!("{file}: {n}")));
    Ok(mesh)
}
