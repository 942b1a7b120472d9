//! Gmsh MSH reader, ASCII versions 4.1 and 2.2: nodes, linear tetrahedra (element type 4),
//! physical groups as regions and `$PhysicalNames` as region names. Other element types
//! (surface triangles, lines, points, higher-order elements) are skipped.
//!
//! Hand-written: the Rust MSH crates either lack 2.2 or do not report line numbers.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use super::text::{locate, read_to_string, Tokens};
use super::{MeshError, TetMesh};
use crate::Vec3;

/// Gmsh element type of the 4-node tetrahedron.
const TET4: i64 = 4;

/// Reads a Gmsh `.msh` file (ASCII 4.1 or 2.2).
pub fn read_msh(path: &Path) -> Result<TetMesh, MeshError> {
    let text = read_to_string(path)?;
    parse_msh(&path.display().to_string(), &text)
}

/// A tetrahedron as read: node tags, region and the line it was on.
struct RawTet {
    tags: [usize; 4],
    region: i32,
    line: usize,
}

/// Everything collected from the sections of an MSH file.
#[derive(Default)]
struct Raw {
    version: Option<Version>,
    nodes: Vec<Vec3>,
    node_lines: Vec<usize>,
    node_index: HashMap<usize, usize>,
    tets: Vec<RawTet>,
    names: BTreeMap<i32, String>,
    /// 4.1 only: physical tags of each volume entity.
    volume_physicals: HashMap<i64, Vec<i32>>,
    skipped_types: BTreeMap<i64, usize>,
    notes: Vec<String>,
}

#[derive(Clone, Copy, PartialEq)]
enum Version {
    V2,
    V4,
}

/// Parses the text of an MSH file; `file` names it in errors.
pub fn parse_msh(file: &str, text: &str) -> Result<TetMesh, MeshError> {
    let mut t = Tokens::new(file, text, None);
    let mut raw = Raw::default();
    while let Some((section, line)) = t.next() {
        match section {
            "$MeshFormat" => raw.version = Some(mesh_format(&mut t)?),
            "$PhysicalNames" => physical_names(&mut t, &mut raw)?,
            "$Entities" => entities(&mut t, &mut raw)?,
            "$Nodes" => match need_version(&t, &raw, line)? {
                Version::V4 => nodes_v4(&mut t, &mut raw)?,
                Version::V2 => nodes_v2(&mut t, &mut raw)?,
            },
            "$Elements" => match need_version(&t, &raw, line)? {
                Version::V4 => elements_v4(&mut t, &mut raw)?,
                Version::V2 => elements_v2(&mut t, &mut raw)?,
            },
            s if s.starts_with('$') && !s.starts_with("$End") => {
                let end = format!("$End{}", &s[1..]);
                loop {
                    match t.next() {
                        Some((tok, _)) if tok == end => break,
                        Some(_) => {}
                        None => {
                            return Err(t.error_at(line, format!("section {s} has no {end}")));
                        }
                    }
                }
            }
            s => return Err(t.error_at(line, format!("expected a `$Section` header, found `{s}`"))),
        }
    }
    finish(file, raw)
}

fn need_version(t: &Tokens, raw: &Raw, line: usize) -> Result<Version, MeshError> {
    raw.version
        .ok_or_else(|| t.error_at(line, "section before $MeshFormat"))
}

fn mesh_format(t: &mut Tokens) -> Result<Version, MeshError> {
    let (version, line) = t.expect_token("format version")?;
    let v = match version {
        "4.1" => Version::V4,
        v if v.starts_with("2.") => Version::V2,
        v => {
            return Err(t.error_at(
                line,
                format!(
                    "MSH version {v} is not supported (use 4.1 or 2.2, e.g. gmsh -format msh41)"
                ),
            ))
        }
    };
    let (file_type, line) = t.usize("file type")?;
    if file_type != 0 {
        return Err(t.error_at(
            line,
            "binary MSH is not supported; save as ASCII (gmsh option -bin 0 / Mesh.Binary=0)",
        ));
    }
    t.usize("data size")?;
    end(t, "$EndMeshFormat", "$MeshFormat has three fields")?;
    Ok(v)
}

/// Expects the section end keyword; `why` explains a mismatch (usually a count).
fn end(t: &mut Tokens, keyword: &str, why: &str) -> Result<(), MeshError> {
    let (tok, line) = t.expect_token(keyword)?;
    if tok == keyword {
        Ok(())
    } else {
        Err(t.error_at(line, format!("expected {keyword}, found `{tok}` ({why})")))
    }
}

fn physical_names(t: &mut Tokens, raw: &mut Raw) -> Result<(), MeshError> {
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

/// Reads the physical tags of an entity (count, then tags).
fn physical_tags(t: &mut Tokens) -> Result<Vec<i32>, MeshError> {
    let (n, _) = t.usize("number of physical tags")?;
    (0..n)
        .map(|_| {
            let (tag, line) = t.i64("physical tag")?;
            i32::try_from(tag)
                .map_err(|_| t.error_at(line, format!("physical tag {tag} out of range")))
        })
        .collect()
}

fn entities(t: &mut Tokens, raw: &mut Raw) -> Result<(), MeshError> {
    let mut counts = [0usize; 4];
    for (dim, c) in counts.iter_mut().enumerate() {
        *c = t
            .usize(
                [
                    "number of points",
                    "number of curves",
                    "number of surfaces",
                    "number of volumes",
                ][dim],
            )?
            .0;
    }
    for (dim, &count) in counts.iter().enumerate() {
        for _ in 0..count {
            let (tag, _) = t.i64("entity tag")?;
            let n_coords = if dim == 0 { 3 } else { 6 };
            for _ in 0..n_coords {
                t.f64("entity bounding box")?;
            }
            let physicals = physical_tags(t)?;
            if dim > 0 {
                let (n_bound, _) = t.usize("number of bounding entities")?;
                for _ in 0..n_bound {
                    t.i64("bounding entity tag")?;
                }
            }
            if dim == 3 {
                raw.volume_physicals.insert(tag, physicals);
            }
        }
    }
    end(
        t,
        "$EndEntities",
        "entity counts disagree with the entities listed",
    )
}

fn add_node(t: &Tokens, raw: &mut Raw, tag: usize, p: Vec3, line: usize) -> Result<(), MeshError> {
    if raw.node_index.insert(tag, raw.nodes.len()).is_some() {
        return Err(t.error_at(line, format!("node tag {tag} defined twice")));
    }
    raw.nodes.push(p);
    raw.node_lines.push(line);
    Ok(())
}

fn nodes_v4(t: &mut Tokens, raw: &mut Raw) -> Result<(), MeshError> {
    let (blocks, _) = t.usize("number of node blocks")?;
    let (total, total_line) = t.usize("number of nodes")?;
    t.usize("minimum node tag")?;
    t.usize("maximum node tag")?;
    let before = raw.nodes.len();
    for _ in 0..blocks {
        let (dim, _) = t.usize("entity dimension")?;
        t.i64("entity tag")?;
        let (parametric, _) = t.usize("parametric flag")?;
        let (n, _) = t.usize("number of nodes in block")?;
        let mut tags = Vec::with_capacity(n.min(1 << 20));
        for _ in 0..n {
            tags.push(t.usize("node tag")?);
        }
        for (tag, _) in tags {
            let (p, line) = t.point()?;
            if parametric == 1 {
                for _ in 0..dim {
                    t.f64("parametric coordinate")?;
                }
            }
            add_node(t, raw, tag, p, line)?;
        }
    }
    let read = raw.nodes.len() - before;
    if read != total {
        return Err(t.error_at(
            total_line,
            format!("header says {total} nodes but the blocks hold {read}"),
        ));
    }
    end(
        t,
        "$EndNodes",
        "node blocks hold more data than their counts say",
    )
}

fn nodes_v2(t: &mut Tokens, raw: &mut Raw) -> Result<(), MeshError> {
    let (n, _) = t.usize("number of nodes")?;
    for _ in 0..n {
        let (tag, _) = t.usize("node number")?;
        let (p, line) = t.point()?;
        add_node(t, raw, tag, p, line)?;
    }
    end(t, "$EndNodes", "more nodes than the count says")
}

/// Reads the four node tags of a tetrahedron.
fn tet_tags(t: &mut Tokens) -> Result<[usize; 4], MeshError> {
    let mut tags = [0; 4];
    for tag in &mut tags {
        *tag = t.usize("node tag")?.0;
    }
    Ok(tags)
}

fn elements_v4(t: &mut Tokens, raw: &mut Raw) -> Result<(), MeshError> {
    let (blocks, _) = t.usize("number of element blocks")?;
    let (total, total_line) = t.usize("number of elements")?;
    t.usize("minimum element tag")?;
    t.usize("maximum element tag")?;
    let mut read = 0;
    for _ in 0..blocks {
        let (dim, _) = t.usize("entity dimension")?;
        let (entity, _) = t.i64("entity tag")?;
        let (kind, _) = t.i64("element type")?;
        let (n, _) = t.usize("number of elements in block")?;
        let region = if dim == 3 {
            match raw.volume_physicals.get(&entity).map(Vec::as_slice) {
                Some([first, rest @ ..]) => {
                    if !rest.is_empty() {
                        raw.notes.push(format!(
                            "volume {entity} has physical tags {:?}; using {first} as its region",
                            raw.volume_physicals[&entity]
                        ));
                    }
                    *first
                }
                _ => 0,
            }
        } else {
            0
        };
        for _ in 0..n {
            let (_, line) = t.usize("element tag")?;
            if kind == TET4 {
                let tags = tet_tags(t)?;
                raw.tets.push(RawTet { tags, region, line });
            } else {
                t.skip_line();
            }
        }
        if kind != TET4 {
            *raw.skipped_types.entry(kind).or_default() += n;
        }
        read += n;
    }
    if read != total {
        return Err(t.error_at(
            total_line,
            format!("header says {total} elements but the blocks hold {read}"),
        ));
    }
    end(
        t,
        "$EndElements",
        "element blocks hold more data than their counts say",
    )
}

fn elements_v2(t: &mut Tokens, raw: &mut Raw) -> Result<(), MeshError> {
    let (n, _) = t.usize("number of elements")?;
    for _ in 0..n {
        let (_, line) = t.usize("element number")?;
        let (kind, _) = t.i64("element type")?;
        let (n_tags, _) = t.usize("number of tags")?;
        let mut physical = 0;
        for k in 0..n_tags {
            let (tag, tag_line) = t.i64("element tag")?;
            if k == 0 {
                physical = i32::try_from(tag).map_err(|_| {
                    t.error_at(tag_line, format!("physical tag {tag} out of range"))
                })?;
            }
        }
        if kind == TET4 {
            let tags = tet_tags(t)?;
            raw.tets.push(RawTet {
                tags,
                region: physical,
                line,
            });
        } else {
            *raw.skipped_types.entry(kind).or_default() += 1;
            t.skip_line();
        }
    }
    end(t, "$EndElements", "more elements than the count says")
}

fn finish(file: &str, raw: Raw) -> Result<TetMesh, MeshError> {
    if raw.version.is_none() {
        return Err(MeshError::Invalid {
            file: file.to_string(),
            msg: "no $MeshFormat section; not a Gmsh MSH file".into(),
        });
    }
    if raw.tets.is_empty() {
        let skipped = if raw.skipped_types.is_empty() {
            "no elements".to_string()
        } else {
            format!("only element types (type: count) {:?}", raw.skipped_types)
        };
        return Err(MeshError::Invalid {
            file: file.to_string(),
            msg: format!(
                "empty mesh: no linear tetrahedra (element type 4); {} nodes, {skipped}",
                raw.nodes.len()
            ),
        });
    }
    let mut tets = Vec::with_capacity(raw.tets.len());
    let mut regions = Vec::with_capacity(raw.tets.len());
    let mut tet_lines = Vec::with_capacity(raw.tets.len());
    for tet in &raw.tets {
        let mut ids = [0; 4];
        for (id, tag) in ids.iter_mut().zip(tet.tags) {
            *id = *raw.node_index.get(&tag).ok_or_else(|| MeshError::Parse {
                file: file.to_string(),
                line: tet.line,
                msg: format!("tetrahedron refers to unknown node tag {tag}"),
            })?;
        }
        tets.push(ids);
        regions.push(tet.region);
        tet_lines.push(tet.line);
    }
    let mut mesh = TetMesh::new(file, raw.nodes, tets, regions)
        .map_err(|e| locate(e, &raw.node_lines, &tet_lines))?;
    mesh.region_names = raw.names;
    mesh.notes
        .extend(raw.notes.into_iter().map(|n| format!("{file}: {n}")));
    Ok(mesh)
}

#[cfg(test)]
mod tests {
    use super::*;

    const V41: &str = "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n\
$PhysicalNames\n1\n3 7 \"liver tissue\"\n$EndPhysicalNames\n\
$Entities\n0 0 0 1\n1 0 0 0 1 1 1 1 7 0\n$EndEntities\n\
$Nodes\n1 5 1 5\n3 1 0 5\n1\n2\n3\n4\n5\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n1 1 1\n$EndNodes\n\
$Elements\n2 3 1 3\n2 1 2 1\n1 1 2 3\n3 1 4 2\n2 1 2 3 4\n3 2 3 4 5\n$EndElements\n";

    #[test]
    fn reads_v41_with_physical_names() {
        let m = parse_msh("t.msh", V41).unwrap();
        assert_eq!(m.nodes.len(), 5);
        assert_eq!(m.tets.len(), 2);
        assert_eq!(m.regions, vec![7, 7]);
        assert_eq!(m.region_names[&7], "liver tissue");
        assert!((m.volume() - (1.0 / 6.0 + 1.0 / 3.0)).abs() < 1e-14);
    }

    #[test]
    fn unknown_node_tag_names_the_line() {
        let bad = V41.replace("3 2 3 4 5", "3 2 3 4 9");
        let e = parse_msh("t.msh", &bad).unwrap_err().to_string();
        assert!(
            e.starts_with("t.msh:32:") && e.contains("unknown node tag 9"),
            "{e}"
        );
    }

    #[test]
    fn binary_is_refused_clearly() {
        let e = parse_msh("b.msh", "$MeshFormat\n4.1 1 8\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("b.msh:2:") && e.contains("binary"), "{e}");
    }
}
