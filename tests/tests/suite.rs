//! The default suite and the slow checks: a test left out of `cargo test --workspace` (marked
//! ignored) is one that `cargo xtask slow-tests` runs, and CI runs that command too.

use std::path::{Path, PathBuf};

use e2e::workspace_root;

/// The Rust sources of the workspace (and of `fuzz/`), outside build and output directories.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            if !["target", "out", ".git"].contains(&name.as_str()) && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// `cargo xtask slow-tests` runs `cargo test --workspace -- --ignored`: every ignored test says
/// that it is slow and run there, so that none is ignored and forgotten.
#[test]
fn every_ignored_test_is_a_slow_test() {
    let root = workspace_root();
    let mut files = Vec::new();
    rust_files(root, &mut files);
    // Spelled in pieces, so that this file does not match itself.
    let attribute = format!("#[{}", "ignore");
    let mut ignored = 0;
    let mut orphans = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let shown = file.strip_prefix(root).unwrap().display();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if !line.starts_with(&attribute) {
                continue;
            }
            ignored += 1;
            if !(line.starts_with(&format!("{attribute} = \"slow"))
                && line.contains("run by cargo xtask slow-tests\"]"))
            {
                orphans.push(format!("{shown}:{}: {line}", n + 1));
            }
        }
    }
    assert!(
        ignored > 0,
        "no ignored test found: is the attribute spelled otherwise?"
    );
    assert!(
        orphans.is_empty(),
        "ignored tests that do not say `slow...: run by cargo xtask slow-tests`:\n{}",
        orphans.join("\n")
    );
}

/// CI runs the slow checks, and the README names their command.
#[test]
fn ci_and_the_readme_run_the_slow_tests() {
    let root = workspace_root();
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    assert!(ci.contains("-- slow-tests"), "{ci}");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(readme.contains("cargo xtask slow-tests"));
}
