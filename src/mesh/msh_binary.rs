//! Gmsh MSH 4.1 binary reader: the same sections as the ASCII reader, with section
//! headers and `$PhysicalNames` as text and the data of `$Entities`, `$Nodes` and
//! `$Elements` as little-endian `int` (4 bytes), `size_t` (8 bytes) and `double`.
//! Errors name the file, section and byte offset (there are no lines), or the element.

use super::gmsh::{
    element_type, finish, other_volume_message, physical_names, Raw, RawTet, Tally, Version,
};
use super::text::Tokens;
use super::{ElementShape as Shape, MeshError, TetMesh};
use crate::Vec3;

/// A cursor over the bytes of a binary MSH file.
struct Bytes<'a> {
    file: &'a str,
    data: &'a [u8],
    pos: usize,
    section: String,
}

impl<'a> Bytes<'a> {
    fn error(&self, msg: impl std::fmt::Display) -> MeshError {
        MeshError::Invalid {
            file: self.file.to_string(),
            msg: format!("byte {} (section {}): {msg}", self.pos, self.section),
        }
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], MeshError> {
        if self.data.len() - self.pos < n {
            return Err(self.error(format!("unexpected end of file, expected {what}")));
        }
        let bytes = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    fn int(&mut self, what: &str) -> Result<i32, MeshError> {
        let b = self.take(4, what)?;
        Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn size(&mut self, what: &str) -> Result<usize, MeshError> {
        let b = self.take(8, what)?;
        let v = u64::from_le_bytes(b.try_into().expect("8 bytes"));
        usize::try_from(v).map_err(|_| self.error(format!("{what} {v} too large")))
    }

    fn double(&mut self, what: &str) -> Result<f64, MeshError> {
        let b = self.take(8, what)?;
        Ok(f64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    /// The next non-empty text line, trimmed.
    fn line(&mut self) -> Option<&'a str> {
        while self.pos < self.data.len() {
            let rest = &self.data[self.pos..];
            let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            self.pos += (end + 1).min(rest.len());
            let line = std::str::from_utf8(&rest[..end]).unwrap_or("").trim();
            if !line.is_empty() {
                return Some(line);
            }
        }
        None
    }

    fn end(&mut self, keyword: &str) -> Result<(), MeshError> {
        match self.line() {
            Some(l) if l == keyword => Ok(()),
            other => Err(self.error(format!(
                "expected {keyword}, found {:?} (counts disagree with the data)",
                other.unwrap_or("end of file")
            ))),
        }
    }
}

/// Parses a binary MSH 4.1 file; `file` names it in errors.
pub fn parse_msh_binary(file: &str, data: &[u8]) -> Result<TetMesh, MeshError> {
    let mut b = Bytes {
        file,
        data,
        pos: 0,
        section: "header".into(),
    };
    let mut raw = Raw {
        binary: true,
        ..Raw::default()
    };
    while let Some(header) = b.line() {
        b.section = header.to_string();
        match header {
            "$MeshFormat" => {
                let format = b.line().unwrap_or("");
                if format.split_whitespace().collect::<Vec<_>>() != ["4.1", "1", "8"] {
                    return Err(b.error(format!(
                        "binary MSH `{format}` is not supported; expected `4.1 1 8`"
                    )));
                }
                if b.int("endianness marker")? != 1 {
                    return Err(b.error("big-endian binary MSH is not supported"));
                }
                b.end("$EndMeshFormat")?;
                raw.version = Some(Version::V4);
            }
            "$PhysicalNames" => {
                const END: &[u8] = b"$EndPhysicalNames";
                let rest = &data[b.pos..];
                let Some(len) = rest.windows(END.len()).position(|w| w == END) else {
                    return Err(b.error("no $EndPhysicalNames"));
                };
                let text = String::from_utf8_lossy(&rest[..len + END.len()]);
                let first_line = data[..b.pos].iter().filter(|&&c| c == b'\n').count() + 1;
                let mut t = Tokens::starting_at_line(file, &text, first_line);
                physical_names(&mut t, &mut raw)?;
                b.pos += len + END.len();
            }
            "$Entities" => entities(&mut b, &mut raw)?,
            "$Nodes" => nodes(&mut b, &mut raw)?,
            "$Elements" => elements(&mut b, &mut raw)?,
            s if s.starts_with('$') && !s.starts_with("$End") => {
                let end = format!("\n$End{}", &s[1..]);
                let rest = &data[b.pos..];
                let Some(at) = rest.windows(end.len()).position(|w| w == end.as_bytes()) else {
                    return Err(b.error(format!("section has no {}", &end[1..])));
                };
                b.pos += at + end.len();
            }
            s => {
                let s = s.chars().take(40).collect::<String>();
                return Err(b.error(format!("expected a `$Section` header, found `{s}`")));
            }
        }
    }
    finish(file, raw)
}

fn entities(b: &mut Bytes, raw: &mut Raw) -> Result<(), MeshError> {
    let mut counts = [0; 4];
    for c in &mut counts {
        *c = b.size("entity count")?;
    }
    for (dim, &count) in counts.iter().enumerate() {
        for _ in 0..count {
            let tag = b.int("entity tag")?;
            for _ in 0..if dim == 0 { 3 } else { 6 } {
                b.double("entity bounding box")?;
            }
            let n_physical = b.size("number of physical tags")?;
            let physicals = (0..n_physical)
                .map(|_| b.int("physical tag"))
                .collect::<Result<Vec<_>, _>>()?;
            if dim > 0 {
                let n_bound = b.size("number of bounding entities")?;
                for _ in 0..n_bound {
                    b.int("bounding entity tag")?;
                }
            }
            if dim == 3 {
                raw.volume_physicals.insert(tag.into(), physicals);
            }
        }
    }
    b.end("$EndEntities")
}

fn nodes(b: &mut Bytes, raw: &mut Raw) -> Result<(), MeshError> {
    let blocks = b.size("number of node blocks")?;
    let total = b.size("number of nodes")?;
    b.size("minimum node tag")?;
    b.size("maximum node tag")?;
    let before = raw.nodes.len();
    for _ in 0..blocks {
        let dim = b.int("entity dimension")?;
        b.int("entity tag")?;
        let parametric = b.int("parametric flag")? != 0;
        let n = b.size("number of nodes in block")?;
        let tags_at = b.pos;
        b.take(n.saturating_mul(8), "node tags")?;
        let extra = if parametric { dim.max(0) as usize } else { 0 };
        for i in 0..n {
            let at = tags_at + 8 * i;
            let tag = u64::from_le_bytes(b.data[at..at + 8].try_into().expect("8 bytes"));
            let tag =
                usize::try_from(tag).map_err(|_| b.error(format!("node tag {tag} too large")))?;
            let p = Vec3::new(b.double("x")?, b.double("y")?, b.double("z")?);
            for _ in 0..extra {
                b.double("parametric coordinate")?;
            }
            if raw.node_index.insert(tag, raw.nodes.len()).is_some() {
                return Err(b.error(format!("node tag {tag} defined twice")));
            }
            raw.nodes.push(p);
        }
    }
    let read = raw.nodes.len() - before;
    if read != total {
        return Err(b.error(format!(
            "header says {total} nodes but the blocks hold {read}"
        )));
    }
    b.end("$EndNodes")
}

fn elements(b: &mut Bytes, raw: &mut Raw) -> Result<(), MeshError> {
    let blocks = b.size("number of element blocks")?;
    let total = b.size("number of elements")?;
    b.size("minimum element tag")?;
    b.size("maximum element tag")?;
    let mut read = 0usize;
    for _ in 0..blocks {
        let dim = b.int("entity dimension")?;
        let entity = b.int("entity tag")?;
        let code = b.int("element type")?;
        let n = b.size("number of elements in block")?;
        let at = format!("byte {}", b.pos);
        let Some(kind) = element_type(code.into()) else {
            return Err(b.error(format!(
                "unknown element type {code} (its size is unknown, so the rest of the file \
                 cannot be read)"
            )));
        };
        match kind.shape {
            Shape::Tetrahedron => {
                let region = match raw.volume_physicals.get(&entity.into()).map(Vec::as_slice) {
                    Some([first, rest @ ..]) if dim == 3 => {
                        if !rest.is_empty() {
                            let all = &raw.volume_physicals[&entity.into()];
                            raw.notes.push(format!(
                                "volume {entity} has physical tags {all:?}; using {first} as its region"
                            ));
                        }
                        *first
                    }
                    _ => 0,
                };
                for _ in 0..n {
                    b.size("element tag")?;
                    let mut tags = [0; 4];
                    for t in &mut tags {
                        *t = b.size("node tag")?;
                    }
                    for _ in 4..kind.nodes {
                        let tag = b.size("higher-order node tag")?;
                        raw.midside_tags.push(tag);
                    }
                    raw.tets.push(RawTet {
                        tags,
                        region,
                        line: 0,
                    });
                }
                if kind.nodes > 4 && n > 0 {
                    Tally::add(&mut raw.by_corners, code.into(), n, at);
                }
            }
            Shape::OtherVolume if n > 0 => {
                return Err(b.error(other_volume_message(code.into(), kind)));
            }
            _ => {
                b.take(n.saturating_mul(8 * (1 + kind.nodes)), "elements")?;
                *raw.ignored.entry(code.into()).or_default() += n;
            }
        }
        read = read.saturating_add(n);
    }
    if read != total {
        return Err(b.error(format!(
            "header says {total} elements but the blocks hold {read}"
        )));
    }
    b.end("$EndElements")
}
