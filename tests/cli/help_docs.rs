//! Help and docs cannot drift from the binary: every subcommand's `--help` runs, every
//! subcommand is in the README, every flag the README's command table gives exists in
//! that command's `--help`, and the device kinds and model backends the binary accepts
//! (from its own refusals of a bad one) are in `serve --help`, docs/devices.md,
//! docs/scenes.md and the top-level help.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

const BINARY: &str = env!("CARGO_BIN_EXE_palpa");

/// `palpa ARGS`: the exit success and stdout + stderr.
fn palpa(args: &[&str]) -> (bool, String) {
    let out = Command::new(BINARY)
        .args(args)
        .env("RUST_LOG", "error")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

fn help(path: &[&str]) -> String {
    let (ok, text) = palpa(&[path, &["--help"]].concat());
    assert!(ok, "palpa {path:?} --help failed:\n{text}");
    text
}

fn doc(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(name)).unwrap()
}

/// The names under `Commands:` in a help text, without `help`.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// The `--flags` in `text`.
fn flags(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_subcommand_and_documented_flag_exists_and_the_readme_names_every_subcommand() {
    let top = help(&[]);
    let commands = subcommands(&top);
    assert!(commands.len() >= 10, "{top}");
    let readme = doc("README.md");
    for command in &commands {
        let text = help(&[command]);
        for nested in subcommands(&text) {
            help(&[command, &nested]);
        }
        assert!(
            readme.contains(&format!("`palpa {command}")),
            "README.md does not show `palpa {command}`"
        );
    }
    // Each row of the README's command table: its command (the lowercase words after
    // `palpa`) and the flags its first cell gives.
    let rows = readme.lines().filter_map(|l| l.strip_prefix("| `palpa "));
    let mut checked = 0;
    for row in rows {
        let cell = row.split(" | ").next().unwrap();
        let path: Vec<&str> = cell
            .split_whitespace()
            .take_while(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
            .filter(|w| !w.starts_with('-'))
            .collect();
        let text = help(&path);
        for flag in flags(cell) {
            assert!(
                flags(&text).contains(&flag),
                "README.md gives `palpa {} {flag}`, which its --help does not know:\n{text}",
                path.join(" ")
            );
            checked += 1;
        }
    }
    assert!(checked > 20, "{checked} flags checked");
}

#[test]
fn every_device_kind_the_binary_accepts_is_in_serve_help_and_the_device_docs() {
    // The binary's own list: its refusal of an unknown device.
    let (ok, refusal) = palpa(&["serve", "--device", "bogus"]);
    assert!(!ok);
    let list = refusal
        .split("use ")
        .nth(1)
        .unwrap_or_else(|| panic!("{refusal}"));
    let list = list.lines().next().unwrap();
    let specs: Vec<&str> = list
        .split(", ")
        .flat_map(|s| s.split(" or "))
        .map(str::trim)
        .collect();
    let kinds: BTreeSet<&str> = specs.iter().map(|s| s.split(':').next().unwrap()).collect();
    assert!(kinds.len() >= 7, "{kinds:?} from {list}");
    for spec in &specs {
        // Accepted: parsing passes, and the missing scene is what fails.
        let concrete = spec
            .replace("PROFILE.toml", "p.toml")
            .replace("X,Y", "0.01,0")
            .replace("FILE.csv", "f.csv")
            .replace("HOST:PORT", "127.0.0.1:1")
            .replace("NAME", "Default")
            .replace("INDEX", "0");
        let (ok, text) = palpa(&[
            "serve",
            "--device",
            &concrete,
            "--scene",
            "/no/such/scene.toml",
        ]);
        assert!(
            !ok && text.contains("/no/such/scene.toml"),
            "--device {concrete}: {text}"
        );
    }
    let serve = help(&["serve"]);
    let devices_md = doc("docs/devices.md");
    for kind in &kinds {
        assert!(
            serve.contains(&format!("`{kind}")),
            "serve --help does not name the device `{kind}`:\n{serve}"
        );
        let in_table = devices_md
            .lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .any(|row| {
                format!("`{}", row.split(" | ").next().unwrap()).contains(&format!("`{kind}"))
            });
        assert!(
            in_table,
            "docs/devices.md's device table has no row for `{kind}`"
        );
    }
}

#[test]
fn every_model_backend_the_binary_accepts_is_in_the_scene_docs_and_the_help() {
    let dir = tempfile::tempdir().unwrap();
    let scene = dir.path().join("bogus.toml");
    std::fs::write(&scene, "[backend]\nkind = \"bogus\"\n").unwrap();
    let (ok, refusal) = palpa(&["precompute", "--scene", scene.to_str().unwrap()]);
    assert!(!ok);
    let list = refusal
        .split("expected one of ")
        .nth(1)
        .unwrap_or_else(|| panic!("{refusal}"));
    let backends: Vec<&str> = list
        .lines()
        .next()
        .unwrap()
        .split('`')
        .filter(|w| w.chars().all(|c| c.is_ascii_lowercase()) && !w.is_empty())
        .collect();
    assert_eq!(backends.len(), 3, "{list}");
    let kind_row = doc("docs/scenes.md")
        .lines()
        .find(|l| l.starts_with("| `kind` | `\"modal\""))
        .expect("docs/scenes.md has the [backend] kind row")
        .to_owned();
    let top = help(&[]);
    let about = top.lines().next().unwrap();
    for backend in backends {
        assert!(
            kind_row.contains(&format!("`\"{backend}\"`")),
            "{backend}: {kind_row}"
        );
        // The top-level help names each: the nonlinear backend as large-strain.
        let word = match backend {
            "nonlinear" => "large-strain",
            b => b,
        };
        assert!(about.contains(word), "`palpa --help` omits {word}: {about}");
    }
}
