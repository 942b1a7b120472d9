//! Runs the JavaScript decoder's tests (`clients/web/protocol.test.mjs`) with Node's
//! built-in test runner, so `cargo test --workspace` checks the JS side against the same
//! vectors. Node ≥ 18 is required: a missing `node` fails this test.

use std::path::Path;
use std::process::Command;

#[test]
fn javascript_decoder_passes_the_vectors() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let test_file = root.join("clients/web/protocol.test.mjs");
    let output = Command::new("node")
        .arg("--test")
        .arg(&test_file)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run `node` (Node.js ≥ 18 is needed for the JS decoder tests): {e}")
        });
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "node --test failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("# fail 0"),
        "unexpected node output:\n{stdout}"
    );
    assert!(
        !stdout.contains("# pass 0\n"),
        "node ran no test:\n{stdout}"
    );
}
