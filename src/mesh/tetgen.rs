//! TetGen `.node`/`.ele` reader. Numbering may start at 0 or 1 (the first point of the
//! `.node` file decides); the first tetrahedron attribute (TetGen's region attribute, `-A`)
//! becomes the region id. Quadratic (10-node) tetrahedra are read by their 4 corners.
//!
//! Hand-written: no maintained crate reads TetGen files.

use std::path::Path;

use super::text::{locate, read_to_string, Tokens};
use super::{drop_midside_nodes, MeshError, TetMesh};

/// Reads a TetGen mesh from `path`, which may name either the `.node` or the `.ele` file;
/// the other one is found by changing the extension.
pub fn read_tetgen(path: &Path) -> Result<TetMesh, MeshError> {
    let node_path = path.with_extension("node");
    let ele_path = path.with_extension("ele");
    let node_text = read_to_string(&node_path)?;
    let ele_text = read_to_string(&ele_path)?;
    parse_tetgen(
        &node_path.display().to_string(),
        &node_text,
        &ele_path.display().to_string(),
        &ele_text,
    )
}

/// Parses the texts of a `.node` and an `.ele` file; the names are used in errors.
pub fn parse_tetgen(
    node_file: &str,
    node_text: &str,
    ele_file: &str,
    ele_text: &str,
) -> Result<TetMesh, MeshError> {
    let mut t = Tokens::new(node_file, node_text, Some('#'));
    let (n_nodes, _) = t.usize("number of points")?;
    let (dim, dim_line) = t.usize("dimension")?;
    if dim != 3 {
        return Err(t.error_at(
            dim_line,
            format!("dimension {dim}; a tetrahedral mesh needs 3"),
        ));
    }
    let (n_attr, _) = t.usize("number of point attributes")?;
    let (n_markers, _) = t.usize("number of boundary markers (0 or 1)")?;
    let mut nodes = Vec::with_capacity(n_nodes.min(1 << 16));
    let mut node_lines = Vec::with_capacity(n_nodes.min(1 << 16));
    let mut base = 0;
    for i in 0..n_nodes {
        let (index, line) = t.usize("point number")?;
        if i == 0 {
            if index > 1 {
                return Err(t.error_at(
                    line,
                    format!("first point is numbered {index}; TetGen numbering starts at 0 or 1"),
                ));
            }
            base = index;
        } else if index != base + i {
            return Err(t.error_at(
                line,
                format!(
                    "point number {index}, expected {} (points must be numbered consecutively)",
                    base + i
                ),
            ));
        }
        let (p, _) = t.point()?;
        for _ in 0..n_attr {
            t.f64("point attribute")?;
        }
        for _ in 0..n_markers {
            t.i64("boundary marker")?;
        }
        nodes.push(p);
        node_lines.push(line);
    }
    if let Some((tok, line)) = t.next() {
        return Err(t.error_at(
            line,
            format!("unexpected `{tok}` after the {n_nodes} points the header announces"),
        ));
    }

    let mut t = Tokens::new(ele_file, ele_text, Some('#'));
    let (n_tets, _) = t.usize("number of tetrahedra")?;
    let (per_tet, per_line) = t.usize("nodes per tetrahedron")?;
    if per_tet != 4 && per_tet != 10 {
        return Err(t.error_at(
            per_line,
            format!("{per_tet} nodes per tetrahedron; expected 4 or 10"),
        ));
    }
    let (n_attr, _) = t.usize("number of tetrahedron attributes")?;
    let mut tets = Vec::with_capacity(n_tets.min(1 << 16));
    let mut regions = Vec::with_capacity(n_tets.min(1 << 16));
    let mut tet_lines = Vec::with_capacity(n_tets.min(1 << 16));
    let mut midside = vec![false; nodes.len()];
    for _ in 0..n_tets {
        let (_, line) = t.usize("tetrahedron number")?;
        let mut tet = [0; 4];
        for k in 0..per_tet {
            let (index, index_line) = t.usize("node number")?;
            let Some(id) = index.checked_sub(base) else {
                return Err(t.error_at(
                    index_line,
                    format!("node number {index} below the first point number {base}"),
                ));
            };
            match tet.get_mut(k) {
                Some(corner) => *corner = id,
                None => {
                    if let Some(m) = midside.get_mut(id) {
                        *m = true;
                    }
                }
            }
        }
        let mut region = 0;
        for k in 0..n_attr {
            let (a, a_line) = t.f64("tetrahedron attribute")?;
            if k == 0 {
                if a.fract() != 0.0 || a.abs() > i32::MAX as f64 {
                    return Err(
                        t.error_at(a_line, format!("region attribute {a} is not an integer"))
                    );
                }
                region = a as i32;
            }
        }
        tets.push(tet);
        regions.push(region);
        tet_lines.push(line);
    }
    if let Some((tok, line)) = t.next() {
        return Err(t.error_at(
            line,
            format!("unexpected `{tok}` after the {n_tets} tetrahedra the header announces"),
        ));
    }
    let dropped = drop_midside_nodes(&mut nodes, &mut node_lines, &mut tets, &midside);
    let mut mesh = TetMesh::new(ele_file, nodes, tets, regions).map_err(|e| match e {
        MeshError::Node { node, msg, .. } => locate(
            MeshError::Node {
                file: node_file.to_string(),
                node,
                msg,
            },
            &node_lines,
            &[],
        ),
        e => locate(e, &[], &tet_lines),
    })?;
    if dropped > 0 {
        mesh.notes.push(format!(
            "{ele_file}: read {n_tets} quadratic tetrahedra by their 4 corners and dropped the \
             {dropped} mid-edge nodes (later nodes are renumbered)"
        ));
    }
    Ok(mesh)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODE: &str =
        "# unit tet and one more\n5 3 0 0\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n5 1 1 1\n";
    const ELE: &str = "2 4 1\n1 1 2 3 4 3\n2 2 3 4 5 8\n";

    #[test]
    fn reads_one_based_with_region_attributes() {
        let m = parse_tetgen("a.node", NODE, "a.ele", ELE).unwrap();
        assert_eq!(m.tets, vec![[0, 1, 2, 3], [1, 2, 3, 4]]);
        assert_eq!(m.regions, vec![3, 8]);
    }

    #[test]
    fn quadratic_tets_are_read_by_their_corners() {
        let ele = "1 10 0\n1 1 2 3 4 5 5 5 5 5 5\n";
        let m = parse_tetgen("a.node", NODE, "a.ele", ele).unwrap();
        assert_eq!(m.tets, vec![[0, 1, 2, 3]]);
        assert_eq!(m.regions, vec![0]);
    }

    #[test]
    fn errors_name_file_and_line() {
        let e =
            parse_tetgen("a.node", NODE, "a.ele", "2 4 1\n1 1 2 3 4 3\n2 2 3 4 6 8\n").unwrap_err();
        assert!(
            e.to_string().starts_with("a.ele:3:") && e.to_string().contains("out of range"),
            "{e}"
        );
        let e =
            parse_tetgen("a.node", &NODE.replace("5 1 1 1", "5 1 x 1"), "a.ele", ELE).unwrap_err();
        assert!(e.to_string().starts_with("a.node:7:"), "{e}");
        let e =
            parse_tetgen("a.node", NODE, "a.ele", "3 4 1\n1 1 2 3 4 3\n2 2 3 4 5 8\n").unwrap_err();
        assert!(
            e.to_string().starts_with("a.ele:4:") && e.to_string().contains("end of file"),
            "{e}"
        );
    }
}
