//! Gmsh MSH reader, ASCII versions 4.1 and 2.2: nodes, linear tetrahedra (element type 4),
//! physical groups as regions and `$PhysicalNames` as region names. Which other element
//! types are read, ignored or refused is described in the `gmsh` module.
//!
//! Binary MSH 4.1 (little-endian, 8-byte size_t, as Gmsh writes it) is read by
//! [`super::msh_binary`]; [`read_msh`] picks the reader from the `$MeshFormat` header.
//!
//! Hand-written: the Rust MSH crates either lack 2.2 or do not report line numbers.

use std::path::Path;

use super::gmsh::{
    element_type, end, finish, other_volume_message, physical_names, Raw, RawTet, Tally, Version,
};
use super::text::Tokens;
use super::{ElementShape as Shape, MeshError, TetMesh};
use crate::Vec3;

/// Reads a Gmsh `.msh` file (ASCII 4.1 or 2.2, binary 4.1).
pub fn read_msh(path: &Path) -> Result<TetMesh, MeshError> {
    let file = path.display().to_string();
    let bytes = crate::files::read_bytes(path, crate::files::FileKind::Mesh)?;
    if is_binary(&bytes) {
        return super::msh_binary::parse_msh_binary(&file, &bytes);
    }
    parse_msh(&file, &String::from_utf8_lossy(&bytes))
}

/// Whether the `$MeshFormat` header says file type 1 (binary).
fn is_binary(bytes: &[u8]) -> bool {
    const HEADER: &[u8] = b"$MeshFormat";
    let Some(start) = bytes.windows(HEADER.len()).position(|w| w == HEADER) else {
        return false;
    };
    let rest = &bytes[start + HEADER.len()..];
    let line: Vec<u8> = rest
        .iter()
        .skip_while(|b| b.is_ascii_whitespace())
        .take_while(|&&b| b != b'\n')
        .copied()
        .collect();
    String::from_utf8_lossy(&line).split_whitespace().nth(1) == Some("1")
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
        let mut tags = Vec::with_capacity(n.min(1 << 16));
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

/// Reads the node tags that end an element's line (after its tag, type and physical
/// tags) and files the element under `raw` by its type: a tetrahedron's corners are kept,
/// points, lines and surface elements are counted, unknown types are tallied. A known
/// type with the wrong number of node tags is an error naming the line.
fn element(
    t: &mut Tokens,
    raw: &mut Raw,
    code: i64,
    region: i32,
    line: usize,
) -> Result<(), MeshError> {
    let (rest, _) = t.rest_of_current_line();
    let Some(kind) = element_type(code) else {
        Tally::add(&mut raw.unknown, code, 1, format!("line {line}"));
        return Ok(());
    };
    let n_tags = rest.split_whitespace().count();
    if n_tags != kind.nodes {
        return Err(t.error_at(
            line,
            format!(
                "element type {code} ({}) needs {} node tags, found {n_tags}",
                kind.name, kind.nodes
            ),
        ));
    }
    match kind.shape {
        Shape::Tetrahedron => {
            let mut tags = [0; 4];
            for (k, tok) in rest.split_whitespace().enumerate() {
                let tag = tok.parse().map_err(|_| {
                    t.error_at(
                        line,
                        format!("expected node tag (a non-negative integer), found `{tok}`"),
                    )
                })?;
                match tags.get_mut(k) {
                    Some(corner) => *corner = tag,
                    None => raw.midside_tags.push(tag),
                }
            }
            if kind.nodes > 4 {
                Tally::add(&mut raw.by_corners, code, 1, format!("line {line}"));
            }
            raw.tets.push(RawTet { tags, region, line });
        }
        Shape::OtherVolume => {
            return Err(t.error_at(line, other_volume_message(code, kind)));
        }
        Shape::Point | Shape::Line | Shape::Surface => {
            *raw.ignored.entry(code).or_default() += 1;
        }
    }
    Ok(())
}

fn elements_v4(t: &mut Tokens, raw: &mut Raw) -> Result<(), MeshError> {
    let (blocks, _) = t.usize("number of element blocks")?;
    let (total, total_line) = t.usize("number of elements")?;
    t.usize("minimum element tag")?;
    t.usize("maximum element tag")?;
    let mut read = 0usize;
    for _ in 0..blocks {
        let (dim, _) = t.usize("entity dimension")?;
        let (entity, _) = t.i64("entity tag")?;
        let (code, _) = t.i64("element type")?;
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
            element(t, raw, code, region, line)?;
        }
        read = read.saturating_add(n);
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
        let (code, _) = t.i64("element type")?;
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
        element(t, raw, code, physical, line)?;
    }
    end(t, "$EndElements", "more elements than the count says")
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
