//! Every reference in the code and the docs resolves inside the repository: relative Markdown
//! links point at files that exist, every `docs/<page>.md` the code cites exists, and nothing cites
//! the specification files that stay outside the repository.

use std::path::{Path, PathBuf};

use e2e::workspace_root;

/// The text files a user who clones the repository reads: sources, manifests, docs, scripts.
fn text_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            if !["target", "out", ".git"].contains(&name.as_str()) && !name.starts_with('.') {
                text_files(&path, out);
            }
        } else if [".rs", ".md", ".toml", ".py"]
            .iter()
            .any(|e| name.ends_with(e))
        {
            out.push(path);
        }
    }
}

#[test]
fn every_reference_resolves_inside_the_repository() {
    let root = workspace_root();
    let mut files = Vec::new();
    text_files(root, &mut files);
    assert!(files.len() > 50, "{} files", files.len());
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let shown = file.strip_prefix(root).unwrap().display().to_string();
        // Spelled in pieces, so that this file does not cite them itself.
        let outside = ["PHYSICS", "DESIGN", "JAEGER"]
            .map(|n| format!("{n}.md"))
            .into_iter()
            .chain([format!("../{}", "shared")]);
        for outside in outside {
            if text.contains(&outside) {
                broken.push(format!(
                    "{shown}: cites {outside}, which is not in the repository"
                ));
            }
        }
        // `docs/<page>.md` as the code cites it, from the workspace root.
        for (at, _) in text.match_indices("docs/") {
            let rest = &text[at..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || "/_-.".contains(c)))
                .unwrap_or(rest.len());
            let cited = rest[..end].trim_end_matches('.');
            if cited.ends_with(".md") && !root.join(cited).is_file() {
                broken.push(format!("{shown}: {cited} does not exist"));
            }
        }
        // Relative Markdown links, from the file's own directory.
        if shown.ends_with(".md") {
            for (at, _) in text.match_indices("](") {
                let rest = &text[at + 2..];
                let target = &rest[..rest.find(')').unwrap_or(0)];
                let target = target.split('#').next().unwrap();
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                if !file.parent().unwrap().join(target).exists() {
                    broken.push(format!("{shown}: link {target} does not resolve"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}
