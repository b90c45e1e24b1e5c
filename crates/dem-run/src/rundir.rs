//! The run directory: what a run may write in it, and what it may remove (docs/formats.md,
//! "The run directory").
//!
//! A run lists every file it writes in `<out>/manifest.jsonl` before it writes it, with the
//! folders it created and the scene it ran. The manifest is JSON Lines: a first line
//! `{"schema": 1, "writer": ..., "scene": ...}`, then one line per folder (`{"dir": "vtk"}`) or
//! file (`{"file": "vtk/nodes_0000000100.vtp"}`), appended as the run claims them (a long run's
//! ten thousand node clouds cost a line each, not a rewrite each); a last line cut short by a
//! crash names a file that was never written, and is ignored. That list is the whole contract:
//! - `--overwrite` removes what an earlier run's manifest lists (its files, then its folders if
//!   they are left empty), never a file the run did not write and never the scene;
//! - a run never writes over a file its manifest does not list: a directory holding files at
//!   the names a run writes (`history.csv`, `summary.json`, `run.pvd`, `cell.pvd`,
//!   `grains.toml`, `vtk/nodes_*`, `vtk/cell_*`, `checkpoint/step_*.json`) that no manifest
//!   lists is refused before the run starts, whatever the options; other files (a user's FEM
//!   snapshots in `vtk/`, notes) are left alone;
//! - `--restart RUN_DIR` takes the latest checkpoint the manifest lists (a checkpoint file the
//!   run did not write is not its state), and a checkpoint continues its directory's files only
//!   when that directory's manifest lists it.
//!
//! Every way a run writes into a directory (a fresh run, a restart, a stage, a packing's
//! `grains.toml`) takes it through [`RunDir::take`] and each file through [`RunDir::claim`].
//! `.lock` is the directory's lock (held while a run writes, released by the system when the
//! process ends); it is not listed and stays.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{RunError, file_error};

/// The manifest's file name.
pub const MANIFEST: &str = "manifest.jsonl";

/// The manifest's format version.
const SCHEMA: u64 = 1;

/// The files a run writes at fixed names.
const RUN_FILES: [&str; 5] = [
    "history.csv",
    "summary.json",
    "run.pvd",
    "cell.pvd",
    "grains.toml",
];

/// Whether `rel` (a path relative to the run directory, `/`-separated) is a name a run writes.
fn is_run_name(rel: &str) -> bool {
    let (dir, name) = rel.rsplit_once('/').unwrap_or(("", rel));
    match dir {
        "" => RUN_FILES.contains(&name),
        "vtk" => {
            (name.starts_with("nodes_") || name.starts_with("cell_"))
                && (name.ends_with(".vtp") || name.ends_with(".pvtp"))
        }
        "checkpoint" => name.starts_with("step_") && name.ends_with(".json"),
        _ => false,
    }
}

/// The step in a run file's name (`step_<step>.json`, `nodes_<step>[_<piece>].vtp`,
/// `cell_<step>.vtp`), if it has one.
fn step_of(rel: &str) -> Option<u64> {
    let name = rel.rsplit_once('/')?.1;
    let rest = ["step_", "nodes_", "cell_"]
        .iter()
        .find_map(|p| name.strip_prefix(p))?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The manifest's first line.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Head {
    schema: u64,
    /// The program that wrote the run.
    writer: String,
    /// The scene the run ran (its absolute path).
    scene: PathBuf,
}

/// A manifest's later lines.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
enum Entry {
    /// A folder the run created (relative).
    Dir(String),
    /// A file the run wrote, or was about to (relative, `/`-separated).
    File(String),
}

#[derive(Debug, Default)]
struct Manifest {
    head: Head,
    dirs: BTreeSet<String>,
    files: BTreeSet<String>,
}

impl Manifest {
    /// The manifest of `root`, if it has one.
    fn read(root: &Path) -> Result<Option<Manifest>, RunError> {
        let path = root.join(MANIFEST);
        if !path.exists() {
            return Ok(None);
        }
        let bytes = std::fs::read(&path).map_err(|e| file_error(&path, e))?;
        let text = grain::text::utf8_text(bytes).map_err(|e| file_error(&path, e))?;
        // A last line without its newline was cut short by a crash: its file was not written.
        let whole = match text.rfind('\n') {
            Some(end) => &text[..=end],
            None => "",
        };
        let mut lines = whole.lines().enumerate();
        let bad = |line: usize, e: &dyn std::fmt::Display| {
            file_error(
                &path,
                format!(
                    "line {}: {e}: not a manifest of dem-run's (a run directory's list of its files); move it, or give another --out",
                    line + 1
                ),
            )
        };
        let Some((_, first)) = lines.next() else {
            return Err(bad(0, &"no whole line"));
        };
        let head: Head = serde_json::from_str(first).map_err(|e| bad(0, &e))?;
        if head.schema != SCHEMA {
            return Err(file_error(
                &path,
                format!("manifest schema {}, this build reads {SCHEMA}", head.schema),
            ));
        }
        let mut m = Manifest {
            head,
            ..Manifest::default()
        };
        for (i, line) in lines {
            let (set, name) = match serde_json::from_str(line).map_err(|e| bad(i, &e))? {
                Entry::Dir(d) => (&mut m.dirs, d),
                Entry::File(f) => (&mut m.files, f),
            };
            // Only relative names below the directory: a manifest edited to list `../x` or an
            // absolute path must not make --overwrite remove it.
            let inside = Path::new(&name)
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
            if !inside {
                return Err(bad(
                    i,
                    &format!("`{name}` is not a path inside the run directory"),
                ));
            }
            set.insert(name);
        }
        Ok(Some(m))
    }

    /// The manifest's text, whole.
    fn text(&self) -> String {
        let mut t = line(&self.head);
        for d in &self.dirs {
            t += &line(&Entry::Dir(d.clone()));
        }
        for f in &self.files {
            t += &line(&Entry::File(f.clone()));
        }
        t
    }
}

/// One line of the manifest.
fn line(v: &impl Serialize) -> String {
    serde_json::to_string(v).expect("a manifest line serializes") + "\n"
}

/// How a run takes its directory.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Take {
    /// A fresh run (or a restart from another directory's checkpoint): the directory must hold
    /// no earlier run, or with `overwrite` the earlier run's files are removed.
    Fresh {
        /// Remove an earlier run's files.
        overwrite: bool,
    },
    /// A restart of this directory's own checkpoint: its run continues.
    Continue,
}

/// A run directory held by a run (its lock), with the manifest of what the run wrote.
pub struct RunDir {
    root: PathBuf,
    manifest: Manifest,
    /// The lock, held until the run ends.
    _lock: std::fs::File,
}

impl RunDir {
    /// Takes `root` for a run of `scene` (created if missing), locked against a second run;
    /// refused when another run holds it, when it holds files at a run's names that no
    /// manifest lists, and for a fresh run when it holds an earlier run (removed with
    /// `overwrite`).
    pub fn take(root: &Path, scene: &Path, how: Take) -> Result<RunDir, RunError> {
        std::fs::create_dir_all(root).map_err(|e| file_error(root, e))?;
        let lock = lock(root)?;
        // The run's folders: a file of that name would stop the run at its first node cloud
        // or checkpoint, hours in.
        if let Some(f) = ["vtk", "checkpoint"]
            .map(|d| root.join(d))
            .into_iter()
            .find(|p| p.exists() && !p.is_dir())
        {
            return Err(file_error(
                &f,
                "is a file where a run keeps a folder of its outputs: move it, or give another --out",
            ));
        }
        let earlier = Manifest::read(root)?;
        let listed = earlier.as_ref().map(|m| &m.files);
        let strangers = strangers(root, listed)?;
        if !strangers.is_empty() {
            return Err(file_error(
                root,
                format!(
                    "holds {} that a run would write, not listed in a {MANIFEST} of dem-run's (a user's files, another program's, or a run of a dem-run before manifests): dem-run never replaces a file it did not write; move them, or give another --out",
                    strangers.join(", ")
                ),
            ));
        }
        let scene = scene.canonicalize().map_err(|e| file_error(scene, e))?;
        let manifest = match (how, earlier) {
            (Take::Continue, Some(m)) => m,
            (Take::Continue, None) => {
                return Err(file_error(
                    root,
                    format!("has no {MANIFEST}: it holds no run to continue"),
                ));
            }
            (Take::Fresh { .. }, None) => Manifest::default(),
            (Take::Fresh { overwrite: false }, Some(m)) => {
                let some: Vec<&str> = m.files.iter().take(4).map(String::as_str).collect();
                return Err(file_error(
                    root,
                    format!(
                        "holds an earlier run ({}{}, listed in its {MANIFEST}): a new run would mix with it; give another --out, --overwrite to replace it, or --restart to continue it",
                        some.join(", "),
                        if m.files.len() > some.len() {
                            ", ..."
                        } else {
                            ""
                        }
                    ),
                ));
            }
            (Take::Fresh { overwrite: true }, Some(m)) => {
                remove(root, &m, &scene)?;
                Manifest::default()
            }
        };
        let head = Head {
            schema: SCHEMA,
            writer: concat!("dem-run ", env!("CARGO_PKG_VERSION")).into(),
            // A continued run's scene stays the one it began with.
            scene: match how {
                Take::Continue => manifest.head.scene.clone(),
                Take::Fresh { .. } => scene,
            },
        };
        let dir = RunDir {
            root: root.to_path_buf(),
            manifest: Manifest { head, ..manifest },
            _lock: lock,
        };
        dir.save()?;
        Ok(dir)
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The path of `rel` (`/`-separated, relative to the directory), listed in the manifest
    /// before the caller writes it, its folders created. Refused: a file there that the
    /// manifest does not list.
    pub fn claim(&mut self, rel: &str) -> Result<PathBuf, RunError> {
        let path = self.root.join(rel);
        if self.manifest.files.contains(rel) {
            return Ok(path);
        }
        if path.exists() {
            return Err(file_error(
                &path,
                format!(
                    "exists and is not listed in this run directory's {MANIFEST}: dem-run never replaces a file it did not write; move it, or give another --out"
                ),
            ));
        }
        let parts: Vec<&str> = rel.split('/').collect();
        for depth in 1..parts.len() {
            let folder = parts[..depth].join("/");
            let f = self.root.join(&folder);
            if !f.is_dir() {
                self.append(&Entry::Dir(folder.clone()))?;
                std::fs::create_dir(&f).map_err(|e| file_error(&f, e))?;
                self.manifest.dirs.insert(folder);
            }
        }
        self.append(&Entry::File(rel.to_string()))?;
        self.manifest.files.insert(rel.to_string());
        Ok(path)
    }

    /// The step-numbered files (checkpoints, node clouds, cell outlines) the run wrote after
    /// `step`, removed and unlisted: a run continued from an earlier checkpoint in its own
    /// directory leaves one timeline (its history is cut back to the checkpoint too), and
    /// `--restart RUN_DIR` cannot pick up a checkpoint of the abandoned one.
    pub fn rewind(&mut self, step: u64) -> Result<(), RunError> {
        let later: Vec<String> = (self.manifest.files.iter())
            .filter(|f| step_of(f).is_some_and(|s| s > step))
            .cloned()
            .collect();
        for f in &later {
            remove_file(&self.root.join(f))?;
            self.manifest.files.remove(f);
        }
        self.save()
    }

    /// Writes the manifest whole, atomically (when the run takes the directory, and rewinds).
    fn save(&self) -> Result<(), RunError> {
        let path = self.root.join(MANIFEST);
        let text = self.manifest.text();
        grain::atomic::write_file_atomically(&path, |w| w.write_all(text.as_bytes()))
            .map_err(|e| file_error(&path, e))
    }

    /// Appends one line to the manifest (a claim).
    fn append(&self, entry: &Entry) -> Result<(), RunError> {
        let path = self.root.join(MANIFEST);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|e| file_error(&path, e))?;
        f.write_all(line(entry).as_bytes())
            .map_err(|e| file_error(&path, e))
    }
}

/// The checkpoints `root`'s manifest lists, by step (none without a manifest).
pub fn checkpoints(root: &Path) -> Result<Vec<(u64, PathBuf)>, RunError> {
    let Some(m) = Manifest::read(root)? else {
        return Ok(Vec::new());
    };
    let mut found: Vec<(u64, PathBuf)> = (m.files.iter())
        .filter(|f| f.starts_with("checkpoint/"))
        .filter_map(|f| Some((step_of(f)?, root.join(f))))
        .filter(|(_, p)| p.is_file())
        .collect();
    found.sort();
    Ok(found)
}

/// The scene `root`'s run ran (its first, for a run continued by restarts), if it holds one.
pub fn scene_of(root: &Path) -> Result<Option<PathBuf>, RunError> {
    Ok(Manifest::read(root)?.map(|m| m.head.scene))
}

/// Whether `checkpoint` is one that `root`'s run wrote (listed in its manifest).
pub fn is_own(root: &Path, checkpoint: &Path) -> Result<bool, RunError> {
    let Ok(c) = checkpoint.canonicalize() else {
        return Ok(false);
    };
    Ok(checkpoints(root)?
        .iter()
        .any(|(_, p)| p.canonicalize().is_ok_and(|p| p == c)))
}

/// An exclusive lock on `root/.lock`, released by the system if the process dies.
fn lock(root: &Path) -> Result<std::fs::File, RunError> {
    let path = root.join(".lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| file_error(&path, e))?;
    match lock.try_lock() {
        Ok(()) => Ok(lock),
        Err(std::fs::TryLockError::WouldBlock) => Err(file_error(
            root,
            "another run is writing to this directory (it holds .lock in it): give this one another --out",
        )),
        Err(std::fs::TryLockError::Error(e)) => Err(file_error(&path, e)),
    }
}

/// The files in `root` at a run's names that `listed` does not list.
fn strangers(root: &Path, listed: Option<&BTreeSet<String>>) -> Result<Vec<String>, RunError> {
    let mut found = Vec::new();
    for dir in ["", "vtk", "checkpoint"] {
        let d = root.join(dir);
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries {
            let entry = entry.map_err(|e| file_error(&d, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if dir.is_empty() {
                name
            } else {
                format!("{dir}/{name}")
            };
            if is_run_name(&rel) && !listed.is_some_and(|l| l.contains(&rel)) {
                found.push(rel);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Removes an earlier run's files (those of `m`), then its folders left empty; never `scene`.
fn remove(root: &Path, m: &Manifest, scene: &Path) -> Result<(), RunError> {
    for f in &m.files {
        let path = root.join(f);
        if path.canonicalize().is_ok_and(|p| p == scene) {
            continue;
        }
        remove_file(&path)?;
    }
    // Deepest first; a folder holding anything the run did not write stays.
    for d in m.dirs.iter().rev() {
        let path = root.join(d);
        if std::fs::read_dir(&path).is_ok_and(|mut e| e.next().is_none()) {
            std::fs::remove_dir(&path).map_err(|e| file_error(&path, e))?;
        }
    }
    remove_file(&root.join(MANIFEST))
}

/// Removes a file; one already gone is fine (a run stopped between listing and writing it).
fn remove_file(path: &Path) -> Result<(), RunError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(file_error(path, e)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_names_and_their_steps() {
        for name in [
            "history.csv",
            "grains.toml",
            "vtk/nodes_0000000100.vtp",
            "vtk/nodes_0000000100_3.vtp",
            "vtk/nodes_0000000100.pvtp",
            "vtk/cell_0000000100.vtp",
            "checkpoint/step_0000000100.json",
        ] {
            assert!(is_run_name(name), "{name}");
        }
        for name in [
            "vtk/snapshot_1.vtu",
            "notes.txt",
            "checkpoint/README",
            "scene.toml",
        ] {
            assert!(!is_run_name(name), "{name}");
        }
        assert_eq!(step_of("vtk/nodes_0000000100_3.vtp"), Some(100));
        assert_eq!(step_of("checkpoint/step_0000000042.json"), Some(42));
        assert_eq!(step_of("history.csv"), None);
    }
}
