//! Errors of levelset-bake: each names the file (and line, face or field) and what was expected.

use std::path::PathBuf;

/// Why a surface mesh was refused (see [`crate::TriangleMesh::check`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MeshError {
    /// No triangles.
    #[error("the mesh has no triangles")]
    Empty,
    /// A vertex coordinate is NaN or infinite.
    #[error("vertex {vertex} has a non-finite coordinate")]
    NonFinite {
        /// 0-based vertex index.
        vertex: usize,
    },
    /// A triangle index is past the vertex count.
    #[error("triangle {face} refers to vertex {vertex}, but there are only {count} vertices")]
    BadIndex {
        /// 0-based face index.
        face: usize,
        /// The index.
        vertex: usize,
        /// Vertex count.
        count: usize,
    },
    /// A vertex belongs to no triangle.
    #[error(
        "vertex {vertex} belongs to no triangle ({unused} such vertices): it would be a surface node off the surface and stretch the grid to it; remove the unused vertices"
    )]
    UnusedVertex {
        /// 0-based index of the first one.
        vertex: usize,
        /// How many there are.
        unused: usize,
    },
    /// A triangle repeats a vertex or has (numerically) zero area.
    #[error("triangle {face} is degenerate (repeated vertex or zero area)")]
    Degenerate {
        /// 0-based face index.
        face: usize,
    },
    /// An edge is shared by more than two triangles.
    #[error("edge ({a}, {b}) is shared by {count} triangles (non-manifold)")]
    NonManifoldEdge {
        /// Vertex indices.
        a: usize,
        /// Vertex indices.
        b: usize,
        /// How many triangles use it.
        count: usize,
    },
    /// Two triangles sharing an edge traverse it in the same direction.
    #[error("triangles {face_a} and {face_b} have inconsistent orientation across edge ({a}, {b})")]
    Orientation {
        /// First triangle.
        face_a: usize,
        /// Second triangle.
        face_b: usize,
        /// Vertex indices of the shared edge.
        a: usize,
        /// Vertex indices of the shared edge.
        b: usize,
    },
    /// Some edges belong to one triangle only: the surface does not enclose a volume.
    #[error(
        "the mesh is open: {count} boundary edges, e.g. ({a}, {b}); close it, or sign it by the generalized winding number (--open winding)"
    )]
    Open {
        /// Number of boundary edges.
        count: usize,
        /// One boundary edge.
        a: usize,
        /// One boundary edge.
        b: usize,
    },
    /// The triangles enclose a negative volume: they are oriented inward.
    #[error(
        "the mesh encloses a negative volume ({volume:e}): its triangles face inward; flip them"
    )]
    InsideOut {
        /// The signed volume.
        volume: f64,
    },
}

/// An error of levelset-bake.
#[derive(Debug, thiserror::Error)]
pub enum BakeError {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A text input is malformed at a line.
    #[error("{}: line {line}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What was expected.
        message: String,
    },
    /// An input is malformed as a whole (a binary file of the wrong size, an unknown extension).
    #[error("{}: {message}", path.display())]
    Input {
        /// The file.
        path: PathBuf,
        /// What was expected.
        message: String,
    },
    /// A mesh failed a check.
    #[error("{}: {error}", path.display())]
    Mesh {
        /// The mesh file (or the primitive's name).
        path: PathBuf,
        /// The failed check.
        error: MeshError,
    },
    /// A parameter is out of range.
    #[error("{field}: {message}")]
    Parameter {
        /// The parameter (as named on the command line).
        field: String,
        /// What was expected.
        message: String,
    },
    /// A level-set grid does not hold the shape it was computed from.
    #[error("{what}: {resolution}; --allow-unresolved-grid bakes it anyway")]
    Unresolved {
        /// The grain, or the mode and amplitude of a precomputed level set.
        what: String,
        /// The measurement.
        resolution: crate::resolution::Resolution,
    },
    /// Reading or writing a bundle failed.
    #[error(transparent)]
    Format(#[from] grain::FormatError),
    /// A FEM deck or volume mesh could not be read.
    #[error(transparent)]
    Fem(#[from] fem::InputError),
}

impl BakeError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        BakeError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn parse(path: impl Into<PathBuf>, line: usize, message: impl Into<String>) -> Self {
        BakeError::Parse {
            path: path.into(),
            line,
            message: message.into(),
        }
    }

    pub(crate) fn input(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        BakeError::Input {
            path: path.into(),
            message: message.into(),
        }
    }

    pub(crate) fn parameter(field: impl Into<String>, message: impl Into<String>) -> Self {
        BakeError::Parameter {
            field: field.into(),
            message: message.into(),
        }
    }
}
