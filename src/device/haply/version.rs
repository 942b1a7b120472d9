//! The Inverse Service's version (`GET /version` on the simulation channel's port, the
//! "HTTP" page of the 3.x documentation: `{"git_tag": "3.5.0", "project_version":
//! "3.5.0.0", …}`), and the force format it documents.
//!
//! One GET with a short budget, written on `std::net` with `httparse` for the status
//! line and headers: an HTTP client crate would bring a second async stack or TLS for
//! one request on loopback.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use tungstenite::client::IntoClientRequest;

use super::message::ForceFormat;

/// Largest version answer read (bytes); the documented one is about 200.
const MAX_ANSWER: usize = 16 * 1024;

/// The version the service at WebSocket address `url` reports, e.g. `3.5.0`, or why
/// there is none.
pub fn query(url: &str, timeout: Duration) -> Result<String, String> {
    let request = url
        .into_client_request()
        .map_err(|e| format!("`{url}` is not a WebSocket address: {e}"))?;
    let uri = request.uri();
    let host = uri.host().unwrap_or("localhost").trim_matches(['[', ']']);
    let port = uri.port_u16().unwrap_or(80);
    let address = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}:{port}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host}:{port} resolves to no address"))?;
    let started = Instant::now();
    let mut stream = TcpStream::connect_timeout(&address, timeout)
        .map_err(|e| format!("no HTTP answer at {address}: {e}"))?;
    stream
        .set_read_timeout(Some(timeout))
        .and(stream.set_write_timeout(Some(timeout)))
        .map_err(|e| e.to_string())?;
    write!(
        stream,
        "GET /version HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| format!("cannot ask {address} for its version: {e}"))?;
    let mut answer = Vec::new();
    let mut chunk = [0u8; 1024];
    while answer.len() < MAX_ANSWER && started.elapsed() < timeout {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&chunk[..n]),
            Err(e) if answer.is_empty() => return Err(format!("no version from {address}: {e}")),
            Err(_) => break,
        }
        if body_complete(&answer) {
            break;
        }
    }
    parse_answer(&answer)
}

/// Whether `answer` holds the headers and a body of the length they announce.
fn body_complete(answer: &[u8]) -> bool {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut response = httparse::Response::new(&mut headers);
    let Ok(httparse::Status::Complete(start)) = response.parse(answer) else {
        return false;
    };
    response
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("content-length"))
        .and_then(|h| {
            std::str::from_utf8(h.value)
                .ok()?
                .trim()
                .parse::<usize>()
                .ok()
        })
        .is_some_and(|len| answer.len() >= start + len)
}

/// The version in an HTTP answer to `GET /version`.
fn parse_answer(answer: &[u8]) -> Result<String, String> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut response = httparse::Response::new(&mut headers);
    let start = match response.parse(answer) {
        Ok(httparse::Status::Complete(start)) => start,
        _ => return Err("the version answer is not HTTP".into()),
    };
    if response.code != Some(200) {
        return Err(format!("GET /version answered {:?}", response.code));
    }
    let chunked = response.headers.iter().any(|h| {
        h.name.eq_ignore_ascii_case("transfer-encoding")
            && String::from_utf8_lossy(h.value).contains("chunked")
    });
    let body = &answer[start..];
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_vec()
    };
    let json: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|e| format!("GET /version did not answer JSON: {e}"))?;
    ["git_tag", "project_version"]
        .iter()
        .find_map(|k| json[k].as_str().map(str::to_owned))
        .ok_or_else(|| "GET /version gave no git_tag or project_version".into())
}

/// A chunked body's data, up to the last whole chunk.
fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut data = Vec::new();
    while let Ok(httparse::Status::Complete((used, len))) = httparse::parse_chunk_size(body) {
        let len = len as usize;
        if len == 0 || body.len() < used + len {
            break;
        }
        data.extend_from_slice(&body[used..used + len]);
        body = body[used + len..].strip_prefix(b"\r\n").unwrap_or(&[]);
    }
    data
}

/// `major.minor` of a version like `3.5.0`, `v3.1.1` or `3.5.0.0`.
pub fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.trim().trim_start_matches('v').split(['.', '-']);
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// The force format a service of this version documents: `vector` from 3.5 (the pages
/// palpa follows), `values` before (the 3.1 samples).
pub fn format_for(version: &str) -> Option<ForceFormat> {
    major_minor(version).map(|v| {
        if v >= (3, 5) {
            ForceFormat::Vector
        } else {
            ForceFormat::Values
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_version_answer_gives_the_format() {
        let body = r#"{"build_time":"2024-08-07T16:01:53Z","git_branch":"main","git_describe":"3.5.0-2-gce34c39e","git_hash":"ce34c39e","git_tag":"3.5.0","project_name":"haply-inverse-service","project_version":"3.5.0.0"}"#;
        let answer = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        assert!(body_complete(answer.as_bytes()));
        assert_eq!(parse_answer(answer.as_bytes()).unwrap(), "3.5.0");
        assert_eq!(format_for("3.5.0"), Some(ForceFormat::Vector));
        assert_eq!(format_for("3.1.1.0"), Some(ForceFormat::Values));
        assert_eq!(format_for("v4.0"), Some(ForceFormat::Vector));
        assert_eq!(format_for("unknown"), None);
        let chunked = format!(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
            body.len()
        );
        assert_eq!(parse_answer(chunked.as_bytes()).unwrap(), "3.5.0");
        assert!(parse_answer(b"HTTP/1.1 404 Not Found\r\n\r\n").is_err());
    }
}
