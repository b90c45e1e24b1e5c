//! The error of every reader of this crate.

use std::path::{Path, PathBuf};

/// Why a FEM input file (a deck and its includes, a `.frd`, a VTK file, a report or CSV table)
/// could not be read or used: the file, and the line where there is one.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// A file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A line is malformed.
    #[error("{}: line {line}: {message}", path.display())]
    Line {
        /// The file (a deck or an included file, a results file, a table).
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What was expected.
        message: String,
    },
    /// The file as a whole is unusable (a deck without elements, an unknown set, unsupported
    /// elements, a table with the wrong rows).
    #[error("{}: {message}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl InputError {
    /// A malformed line of `path` (1-based `line`).
    pub fn line(path: &Path, line: usize, message: impl Into<String>) -> Self {
        InputError::Line {
            path: path.to_path_buf(),
            line,
            message: message.into(),
        }
    }

    /// `path` as a whole is unusable.
    pub fn file(path: &Path, message: impl Into<String>) -> Self {
        InputError::File {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }
}
