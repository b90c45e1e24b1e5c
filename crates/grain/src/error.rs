//! The one error type of the on-disk formats: every variant names the file it is about.

use std::path::PathBuf;

/// An error reading or writing a bundle, a grid or a VTK file.
///
/// Each variant carries the path of the file (or bundle directory) concerned, and, where it
/// applies, the field or array and what was expected, so that a CLI can print it as one line.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// The operating system refused a read, a write or a rename.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A text file (JSON manifest, CSV table) cannot be parsed or lacks a field of its schema.
    #[error("{}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the parser said, with line (and column) where it knows them.
        message: String,
    },
    /// A manifest was written by a schema version this build does not read.
    #[error(
        "{}: schema version {found} is not supported (this build reads {})",
        path.display(),
        if oldest < expected { format!("versions {oldest} to {expected}") } else { format!("version {expected}") }
    )]
    SchemaVersion {
        /// The manifest file.
        path: PathBuf,
        /// The version in the file.
        found: u64,
        /// The oldest version this build reads.
        oldest: u64,
        /// The version this build writes (the newest it reads).
        expected: u64,
    },
    /// A `.npy` file cannot be parsed (truncated, wrong element type, not an array).
    #[error("{}: cannot read array: {message}", path.display())]
    Npy {
        /// The `.npy` file.
        path: PathBuf,
        /// What the reader said.
        message: String,
    },
    /// An array's shape disagrees with the manifest.
    #[error("{}: array `{array}` has shape {found:?}, expected {expected:?}", path.display())]
    Shape {
        /// The `.npy` file.
        path: PathBuf,
        /// The array's name in the bundle.
        array: String,
        /// The shape the manifest implies.
        expected: Vec<usize>,
        /// The shape found in the file.
        found: Vec<usize>,
    },
    /// A value is out of its allowed range (a non-finite number, a non-symmetric matrix, an index
    /// past the node count, a non-positive spacing, ...).
    #[error("{}: `{field}`: {message}", path.display())]
    Invalid {
        /// The file (or bundle) concerned.
        path: PathBuf,
        /// The field or array.
        field: String,
        /// What was expected.
        message: String,
    },
    /// vtkio could not encode or decode a VTK file.
    #[error("{}: VTK: {message}", path.display())]
    Vtk {
        /// The VTK file.
        path: PathBuf,
        /// vtkio's message.
        message: String,
    },
}

impl FormatError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        FormatError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn invalid(
        path: impl Into<PathBuf>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        FormatError::Invalid {
            path: path.into(),
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = FormatError> = std::result::Result<T, E>;
