//! VTK XML unstructured grids (`.vtu`) and their time-series collections (`.pvd`), the
//! files ParaView, VisIt and meshio open as a deformed-mesh animation. Arrays are written
//! inline as base64 `binary` with a 64-bit byte-count header: exact to the bit, and
//! about half the size of 17-digit ASCII.
//!
//! Hand-written: the format needed is a fixed template of a few lines, and the `vtkio`
//! crate (the one Rust writer) is unmaintained and pulls in nom 3; the test suite reads
//! these files back with it as an independent reader.

use std::fmt::Write as _;

use base64::Engine as _;

use crate::Vec3;

/// VTK cell type of the linear triangle.
pub const VTK_TRIANGLE: u8 = 5;
/// VTK cell type of the linear tetrahedron.
pub const VTK_TETRA: u8 = 10;

/// Cells of one type: triangles (3 nodes) or tetrahedra (4 nodes).
#[derive(Clone, Copy, Debug)]
pub enum VtuCells<'a> {
    /// Surface triangles, as indices into the points.
    Triangles(&'a [[usize; 3]]),
    /// Tetrahedra, as indices into the points.
    Tetrahedra(&'a [[usize; 4]]),
}

impl VtuCells<'_> {
    fn len(&self) -> usize {
        match self {
            VtuCells::Triangles(c) => c.len(),
            VtuCells::Tetrahedra(c) => c.len(),
        }
    }

    /// (connectivity, offsets, types) as VTK stores them.
    fn arrays(&self) -> (Vec<i64>, Vec<i64>, Vec<u8>) {
        let (flat, per, kind): (Vec<i64>, usize, u8) = match self {
            VtuCells::Triangles(c) => (
                c.iter().flatten().map(|&i| i as i64).collect(),
                3,
                VTK_TRIANGLE,
            ),
            VtuCells::Tetrahedra(c) => (
                c.iter().flatten().map(|&i| i as i64).collect(),
                4,
                VTK_TETRA,
            ),
        };
        let n = self.len();
        let offsets = (1..=n).map(|k| (k * per) as i64).collect();
        (flat, offsets, vec![kind; n])
    }
}

/// A named data array attached to points or cells.
#[derive(Clone, Copy, Debug)]
pub enum VtuField<'a> {
    /// One scalar per entity.
    Scalar(&'a str, &'a [f64]),
    /// One 3-vector per entity (e.g. displacement, m).
    Vector(&'a str, &'a [Vec3]),
    /// One 3×3 tensor per entity, row-major (e.g. stress, Pa).
    Tensor(&'a str, &'a [[f64; 9]]),
    /// One integer per entity (e.g. a region id).
    Integer(&'a str, &'a [i32]),
}

impl VtuField<'_> {
    fn name(&self) -> &str {
        match self {
            VtuField::Scalar(n, _)
            | VtuField::Vector(n, _)
            | VtuField::Tensor(n, _)
            | VtuField::Integer(n, _) => n,
        }
    }

    fn len(&self) -> usize {
        match self {
            VtuField::Scalar(_, v) => v.len(),
            VtuField::Vector(_, v) => v.len(),
            VtuField::Tensor(_, v) => v.len(),
            VtuField::Integer(_, v) => v.len(),
        }
    }

    fn write(&self, out: &mut String) {
        let name = self.name();
        match self {
            VtuField::Scalar(_, v) => data_array(out, "Float64", Some(name), 1, &le(v)),
            VtuField::Vector(_, v) => {
                let flat: Vec<f64> = v.iter().flat_map(|p| [p.x, p.y, p.z]).collect();
                data_array(out, "Float64", Some(name), 3, &le(&flat));
            }
            VtuField::Tensor(_, v) => {
                let flat: Vec<f64> = v.iter().flatten().copied().collect();
                data_array(out, "Float64", Some(name), 9, &le(&flat));
            }
            VtuField::Integer(_, v) => data_array(out, "Int32", Some(name), 1, &le(v)),
        }
    }
}

/// Little-endian bytes of numbers.
trait LeBytes: Copy {
    fn extend(self, out: &mut Vec<u8>);
}
impl LeBytes for f64 {
    fn extend(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}
impl LeBytes for i64 {
    fn extend(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}
impl LeBytes for i32 {
    fn extend(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}
impl LeBytes for u8 {
    fn extend(self, out: &mut Vec<u8>) {
        out.push(self);
    }
}

fn le<T: LeBytes>(values: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(std::mem::size_of_val(values));
    values.iter().for_each(|v| v.extend(&mut out));
    out
}

/// One `<DataArray>` in VTK's inline binary encoding: base64 of (byte count as u64, the
/// bytes).
fn data_array(out: &mut String, kind: &str, name: Option<&str>, components: usize, bytes: &[u8]) {
    let mut block = Vec::with_capacity(8 + bytes.len());
    block.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    block.extend_from_slice(bytes);
    let name = name.map_or(String::new(), |n| format!(" Name=\"{}\"", escape(n)));
    let _ = writeln!(
        out,
        "        <DataArray type=\"{kind}\"{name} NumberOfComponents=\"{components}\" \
         format=\"binary\">{}</DataArray>",
        base64::engine::general_purpose::STANDARD.encode(&block)
    );
}

/// `text` safe inside an XML attribute.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The `.vtu` document of `points` (m) and `cells`, with `point_data` (one entry per
/// point each) and `cell_data` (one per cell each).
///
/// # Panics
/// If a field's length does not match its points or cells (a caller's bug).
pub fn unstructured_grid(
    points: &[Vec3],
    cells: VtuCells,
    point_data: &[VtuField],
    cell_data: &[VtuField],
) -> String {
    for f in point_data {
        assert_eq!(f.len(), points.len(), "point field {}", f.name());
    }
    for f in cell_data {
        assert_eq!(f.len(), cells.len(), "cell field {}", f.name());
    }
    let mut out = String::from(
        "<?xml version=\"1.0\"?>\n<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" \
         byte_order=\"LittleEndian\" header_type=\"UInt64\">\n  <UnstructuredGrid>\n",
    );
    let _ = writeln!(
        out,
        "    <Piece NumberOfPoints=\"{}\" NumberOfCells=\"{}\">",
        points.len(),
        cells.len()
    );
    out.push_str("      <PointData>\n");
    point_data.iter().for_each(|f| f.write(&mut out));
    out.push_str("      </PointData>\n      <CellData>\n");
    cell_data.iter().for_each(|f| f.write(&mut out));
    out.push_str("      </CellData>\n      <Points>\n");
    let flat: Vec<f64> = points.iter().flat_map(|p| [p.x, p.y, p.z]).collect();
    data_array(&mut out, "Float64", Some("Points"), 3, &le(&flat));
    out.push_str("      </Points>\n      <Cells>\n");
    let (connectivity, offsets, types) = cells.arrays();
    data_array(
        &mut out,
        "Int64",
        Some("connectivity"),
        1,
        &le(&connectivity),
    );
    data_array(&mut out, "Int64", Some("offsets"), 1, &le(&offsets));
    data_array(&mut out, "UInt8", Some("types"), 1, &le(&types));
    out.push_str("      </Cells>\n    </Piece>\n  </UnstructuredGrid>\n</VTKFile>\n");
    out
}

/// The `.pvd` collection of a time series: each `(time s, file name)` in order.
pub fn collection(frames: &[(f64, String)]) -> String {
    let mut out = String::from(
        "<?xml version=\"1.0\"?>\n<VTKFile type=\"Collection\" version=\"0.1\" \
         byte_order=\"LittleEndian\">\n  <Collection>\n",
    );
    for (t, file) in frames {
        let _ = writeln!(
            out,
            "    <DataSet timestep=\"{t}\" group=\"\" part=\"0\" file=\"{}\"/>",
            escape(file)
        );
    }
    out.push_str("  </Collection>\n</VTKFile>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(array: &str) -> Vec<u8> {
        let body = array.split('>').nth(1).unwrap().split('<').next().unwrap();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(body)
            .unwrap();
        let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        assert_eq!(n, bytes.len() - 8, "the header counts the data bytes");
        bytes[8..].to_vec()
    }

    #[test]
    fn a_tetrahedron_is_written_with_exact_points_and_its_offsets() {
        let points = [
            Vec3::new(0.1, 0.0, 0.0),
            Vec3::new(1.0, 1e-17, 0.0),
            Vec3::new(0.0, 1.0, 0.0),
            Vec3::new(0.0, 0.0, std::f64::consts::PI),
        ];
        let u = [Vec3::new(1e-9, 0.0, -3.0); 4];
        let text = unstructured_grid(
            &points,
            VtuCells::Tetrahedra(&[[0, 1, 2, 3]]),
            &[VtuField::Vector("displacement", &u)],
            &[VtuField::Integer("region", &[7])],
        );
        assert!(text.contains("NumberOfPoints=\"4\" NumberOfCells=\"1\""));
        let line = |name: &str| {
            text.lines()
                .find(|l| l.contains(&format!("Name=\"{name}\"")))
                .unwrap()
                .to_string()
        };
        let xyz: Vec<f64> = decode(&line("Points"))
            .chunks(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(xyz[4], 1e-17);
        assert_eq!(xyz[11], std::f64::consts::PI);
        let offsets = decode(&line("offsets"));
        assert_eq!(i64::from_le_bytes(offsets[..8].try_into().unwrap()), 4);
        assert_eq!(decode(&line("types")), vec![VTK_TETRA]);
        assert_eq!(decode(&line("region")), 7i32.to_le_bytes().to_vec());
    }

    #[test]
    fn a_collection_lists_its_frames_in_order_with_their_times() {
        let text = collection(&[(0.0, "a_0.vtu".into()), (0.5, "a\"1.vtu".into())]);
        let first = text.find("timestep=\"0\"").unwrap();
        let second = text.find("timestep=\"0.5\"").unwrap();
        assert!(first < second);
        assert!(text.contains("file=\"a&quot;1.vtu\""));
    }
}
