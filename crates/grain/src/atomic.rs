//! Atomic writes: a reader (or a crash) sees the old content or the new, never a mix.
//!
//! Files are written to a temporary sibling, flushed to disk, then renamed over the target.
//! Bundles (directories) are built whole in a temporary sibling directory, then moved into place.
//! POSIX `rename` cannot replace a non-empty directory, so replacing an existing bundle takes two
//! renames: the old bundle is first moved aside to a hidden sibling, then the new one takes its
//! name, then the old one is deleted. Between those two renames (microseconds) the final name is
//! briefly absent, but it never names a partial bundle; if the second rename fails the old bundle
//! is moved back.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::{FormatError, Result};

/// The directory that holds `path`, created if missing (`.` for a bare file name).
fn parent_dir(path: &Path) -> Result<PathBuf> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent).map_err(|e| FormatError::io(&parent, e))?;
    Ok(parent)
}

fn hidden_prefix(path: &Path, tag: &str) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(".{name}.{tag}-")
}

/// Writes the file at `path` atomically: `fill` writes into a buffered temporary sibling, which is
/// synced and renamed over `path` only if `fill` succeeds.
pub fn write_file_atomically(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> Result<()> {
    let parent = parent_dir(path)?;
    let tmp = tempfile::Builder::new()
        .prefix(&hidden_prefix(path, "partial"))
        .tempfile_in(&parent)
        .map_err(|e| FormatError::io(&parent, e))?;
    let (file, tmp_path) = tmp.into_parts();
    let mut writer = BufWriter::new(file);
    let written = fill(&mut writer).and_then(|()| writer.flush());
    let synced = written.and_then(|()| writer.get_ref().sync_all());
    synced.map_err(|e| FormatError::io(path, e))?;
    tmp_path
        .persist(path)
        .map_err(|e| FormatError::io(path, e.error))?;
    Ok(())
}

/// Writes the bundle directory at `path` atomically: `fill` receives an empty temporary sibling
/// directory and writes the bundle's files into it. On success the directory replaces `path`
/// (an existing directory there is replaced whole); on failure it is deleted and `path` is left
/// as it was.
///
/// An existing *file* at `path` is refused rather than deleted: a bundle path that names a file is
/// almost certainly a typo on the command line.
pub fn write_dir_atomically(path: &Path, fill: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    if path.is_file() {
        return Err(FormatError::invalid(
            path,
            "output",
            "exists and is a file; a bundle is a directory",
        ));
    }
    let parent = parent_dir(path)?;
    let staging = tempfile::Builder::new()
        .prefix(&hidden_prefix(path, "partial"))
        .tempdir_in(&parent)
        .map_err(|e| FormatError::io(&parent, e))?;
    fill(staging.path())?; // on error `staging` is dropped, which deletes it
    sync_dir(staging.path())?;

    if path.exists() {
        let aside = tempfile::Builder::new()
            .prefix(&hidden_prefix(path, "old"))
            .tempdir_in(&parent)
            .map_err(|e| FormatError::io(&parent, e))?;
        // `aside` is an empty placeholder: renaming a directory onto an empty one is allowed.
        fs::rename(path, aside.path()).map_err(|e| FormatError::io(path, e))?;
        if let Err(e) = fs::rename(staging.path(), path) {
            let _ = fs::rename(aside.path(), path);
            return Err(FormatError::io(path, e));
        }
        // `staging`'s path no longer exists and `aside` holds the old bundle: both drops clean up.
        drop(aside);
        drop(staging);
    } else {
        let staged = staging.keep();
        fs::rename(&staged, path).map_err(|e| {
            let _ = fs::remove_dir_all(&staged);
            FormatError::io(path, e)
        })?;
    }
    sync_dir(&parent)
}

/// Flushes a directory's entries to disk (so that a rename that follows survives a power cut).
fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| FormatError::io(dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leftovers(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect()
    }

    #[test]
    fn file_write_replaces_content_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        write_file_atomically(&path, |w| w.write_all(b"one")).unwrap();
        write_file_atomically(&path, |w| w.write_all(b"two")).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "two");
        assert!(leftovers(dir.path()).is_empty());
    }

    #[test]
    fn failed_file_write_keeps_previous_content() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        write_file_atomically(&path, |w| w.write_all(b"old")).unwrap();
        let err = write_file_atomically(&path, |w| {
            w.write_all(b"half")?;
            Err(std::io::Error::other("disk full"))
        })
        .unwrap_err();
        assert!(err.to_string().contains("a.txt"), "{err}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "old");
        assert!(leftovers(dir.path()).is_empty());
    }

    #[test]
    fn dir_write_that_fails_halfway_keeps_previous_bundle_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let bundle = dir.path().join("x.grain");
        write_dir_atomically(&bundle, |d| {
            fs::write(d.join("a"), "old a").unwrap();
            fs::write(d.join("b"), "old b").unwrap();
            Ok(())
        })
        .unwrap();
        let err = write_dir_atomically(&bundle, |d| {
            fs::write(d.join("a"), "new a").unwrap();
            Err(FormatError::invalid(d, "b", "simulated failure"))
        })
        .unwrap_err();
        assert!(err.to_string().contains("simulated failure"));
        assert_eq!(fs::read_to_string(bundle.join("a")).unwrap(), "old a");
        assert_eq!(fs::read_to_string(bundle.join("b")).unwrap(), "old b");
        assert!(
            leftovers(dir.path()).is_empty(),
            "{:?}",
            leftovers(dir.path())
        );
        // A first write that fails leaves no directory at all.
        let fresh = dir.path().join("y.grain");
        write_dir_atomically(&fresh, |d| Err(FormatError::invalid(d, "a", "fail"))).unwrap_err();
        assert!(!fresh.exists());
        assert!(leftovers(dir.path()).is_empty());
    }

    #[test]
    fn dir_write_replaces_whole_bundle() {
        let dir = tempfile::tempdir().unwrap();
        let bundle = dir.path().join("x.grain");
        write_dir_atomically(&bundle, |d| {
            fs::write(d.join("stale"), "s").map_err(|e| FormatError::io(d, e))
        })
        .unwrap();
        write_dir_atomically(&bundle, |d| {
            fs::write(d.join("fresh"), "f").map_err(|e| FormatError::io(d, e))
        })
        .unwrap();
        assert!(!bundle.join("stale").exists());
        assert!(bundle.join("fresh").exists());
        assert!(leftovers(dir.path()).is_empty());
    }

    #[test]
    fn dir_write_refuses_to_replace_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("typo");
        fs::write(&path, "precious").unwrap();
        let err = write_dir_atomically(&path, |_| Ok(())).unwrap_err();
        assert!(err.to_string().contains("is a file"), "{err}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "precious");
    }
}
