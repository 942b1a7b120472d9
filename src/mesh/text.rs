//! Whitespace-separated tokens with 1-based line numbers, shared by the text mesh readers
//! so that every parse error names the file and line. Hand-written because the formats
//! (MSH, TetGen, VTK) are simple token streams and no crate reports positions for all three.

use super::MeshError;
use crate::Vec3;

/// A cursor over the tokens of a text file.
pub(crate) struct Tokens<'a> {
    file: &'a str,
    text: &'a str,
    pos: usize,
    line: usize,
    comment: Option<char>,
}

impl<'a> Tokens<'a> {
    /// Tokens of `text`; `comment` starts a comment that runs to the end of the line.
    pub(crate) fn new(file: &'a str, text: &'a str, comment: Option<char>) -> Self {
        Self {
            file,
            text,
            pos: 0,
            line: 1,
            comment,
        }
    }

    /// Like [`Tokens::new`] for a text that starts at line `first_line` of its file.
    pub(crate) fn starting_at_line(file: &'a str, text: &'a str, first_line: usize) -> Self {
        Self {
            line: first_line,
            ..Self::new(file, text, None)
        }
    }

    /// The next token without consuming it.
    pub(crate) fn peek(&mut self) -> Option<(&'a str, usize)> {
        let (pos, line) = (self.pos, self.line);
        let next = self.next();
        (self.pos, self.line) = (pos, line);
        next
    }

    /// A parse error at line `line`.
    pub(crate) fn error_at(&self, line: usize, msg: impl Into<String>) -> MeshError {
        MeshError::Parse {
            file: self.file.to_string(),
            line,
            msg: msg.into(),
        }
    }

    fn skip_space(&mut self) {
        let bytes = self.text.as_bytes();
        while self.pos < bytes.len() {
            let c = bytes[self.pos];
            if c == b'\n' {
                self.line += 1;
                self.pos += 1;
            } else if c.is_ascii_whitespace() {
                self.pos += 1;
            } else if Some(c as char) == self.comment {
                while self.pos < bytes.len() && bytes[self.pos] != b'\n' {
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
    }

    /// The next token and its line, or `None` at the end of the file.
    pub(crate) fn next(&mut self) -> Option<(&'a str, usize)> {
        self.skip_space();
        let bytes = self.text.as_bytes();
        if self.pos >= bytes.len() {
            return None;
        }
        let start = self.pos;
        while self.pos < bytes.len()
            && !bytes[self.pos].is_ascii_whitespace()
            && Some(bytes[self.pos] as char) != self.comment
        {
            self.pos += 1;
        }
        Some((&self.text[start..self.pos], self.line))
    }

    /// The next token; end of file is an error saying what was expected.
    pub(crate) fn expect_token(&mut self, what: &str) -> Result<(&'a str, usize), MeshError> {
        match self.next() {
            Some(t) => Ok(t),
            None => Err(self.error_at(
                self.line,
                format!("unexpected end of file, expected {what}"),
            )),
        }
    }

    /// The rest of the current line after the next token's start (for names with spaces).
    pub(crate) fn rest_of_line(&mut self) -> (&'a str, usize) {
        self.skip_space();
        let start = self.pos;
        let bytes = self.text.as_bytes();
        while self.pos < bytes.len() && bytes[self.pos] != b'\n' {
            self.pos += 1;
        }
        (self.text[start..self.pos].trim_end(), self.line)
    }

    /// The rest of the current line from here, without crossing into the next line (a
    /// comment ends it), trimmed; empty when the line has nothing left.
    pub(crate) fn rest_of_current_line(&mut self) -> (&'a str, usize) {
        let start = self.pos;
        let bytes = self.text.as_bytes();
        while self.pos < bytes.len()
            && bytes[self.pos] != b'\n'
            && Some(bytes[self.pos] as char) != self.comment
        {
            self.pos += 1;
        }
        (self.text[start..self.pos].trim(), self.line)
    }

    /// The next token, which must equal `keyword` (ASCII case-insensitive).
    pub(crate) fn keyword(&mut self, keyword: &str) -> Result<usize, MeshError> {
        let (t, line) = self.expect_token(keyword)?;
        if t.eq_ignore_ascii_case(keyword) {
            Ok(line)
        } else {
            Err(self.error_at(line, format!("expected `{keyword}`, found `{t}`")))
        }
    }

    /// The next token as a non-negative integer.
    pub(crate) fn usize(&mut self, what: &str) -> Result<(usize, usize), MeshError> {
        let (t, line) = self.expect_token(what)?;
        t.parse::<usize>().map(|v| (v, line)).map_err(|_| {
            self.error_at(
                line,
                format!("expected {what} (a non-negative integer), found `{t}`"),
            )
        })
    }

    /// The next token as a signed integer.
    pub(crate) fn i64(&mut self, what: &str) -> Result<(i64, usize), MeshError> {
        let (t, line) = self.expect_token(what)?;
        t.parse::<i64>()
            .map(|v| (v, line))
            .map_err(|_| self.error_at(line, format!("expected {what} (an integer), found `{t}`")))
    }

    /// The next token as a finite floating-point number.
    pub(crate) fn f64(&mut self, what: &str) -> Result<(f64, usize), MeshError> {
        let (t, line) = self.expect_token(what)?;
        match t.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok((v, line)),
            Ok(v) => Err(self.error_at(line, format!("non-finite {what} `{v}`"))),
            Err(_) => Err(self.error_at(line, format!("expected {what} (a number), found `{t}`"))),
        }
    }

    /// Three finite coordinates.
    pub(crate) fn point(&mut self) -> Result<(Vec3, usize), MeshError> {
        let (x, line) = self.f64("x coordinate")?;
        let (y, _) = self.f64("y coordinate")?;
        let (z, _) = self.f64("z coordinate")?;
        Ok((Vec3::new(x, y, z), line))
    }
}

/// Rewrites a validation error from [`super::TetMesh::new`] so it also names the line where
/// the offending node or tetrahedron was read.
pub(crate) fn locate(err: MeshError, node_lines: &[usize], tet_lines: &[usize]) -> MeshError {
    match err {
        MeshError::Element { file, element, msg } => match tet_lines.get(element) {
            Some(&line) => MeshError::Parse {
                file,
                line,
                msg: format!("tetrahedron {element} (0-based, in file order): {msg}"),
            },
            None => MeshError::Element { file, element, msg },
        },
        MeshError::DuplicateElement {
            file,
            first,
            second,
            nodes,
        } => match (tet_lines.get(first), tet_lines.get(second)) {
            (Some(&first_line), Some(&line)) => MeshError::Parse {
                file,
                line,
                msg: format!(
                    "tetrahedron {second} (0-based, in file order) has the same nodes \
                     {nodes:?} as tetrahedron {first} on line {first_line}"
                ),
            },
            _ => MeshError::DuplicateElement {
                file,
                first,
                second,
                nodes,
            },
        },
        MeshError::Node { file, node, msg } => match node_lines.get(node) {
            Some(&line) => MeshError::Parse {
                file,
                line,
                msg: format!("node {node} (0-based, in file order): {msg}"),
            },
            None => MeshError::Node { file, node, msg },
        },
        other => other,
    }
}

/// Reads a whole text file, naming it in the error. Invalid UTF-8 (e.g. in a comment) is
/// replaced rather than rejected; the parsers then report any token it spoils.
pub(crate) fn read_to_string(path: &std::path::Path) -> Result<String, MeshError> {
    let bytes = crate::files::read_bytes(path, crate::files::FileKind::Mesh)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
