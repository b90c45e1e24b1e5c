//! Geometry inputs: surface meshes (STL, OBJ, VTK polydata) read into a [`TriangleMesh`].
//!
//! STL and OBJ are parsed here rather than with `stl_io` or `tobj` because those crates report
//! errors without line numbers; a user with a broken file needs to know where it breaks.

mod obj;
mod stl;
mod vtk;

use std::path::Path;

use crate::error::BakeError;
use crate::surface::TriangleMesh;

/// Reads a surface mesh, choosing the reader by the file extension (`.stl`, `.obj`, `.vtp`,
/// `.vtk`).
pub fn read_surface(path: &Path) -> Result<TriangleMesh, BakeError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("stl") => stl::read(path),
        Some("obj") => obj::read(path),
        Some("vtp") | Some("vtk") => vtk::read_polydata(path),
        _ => Err(BakeError::input(
            path,
            "unknown surface format: expected .stl, .obj, .vtp or .vtk",
        )),
    }
}

/// Parses `n` whitespace-separated numbers from `fields`, naming `what` in the error.
pub(crate) fn numbers<'a>(
    path: &Path,
    line: usize,
    what: &str,
    mut fields: impl Iterator<Item = &'a str>,
    n: usize,
) -> Result<Vec<f64>, BakeError> {
    (0..n)
        .map(|i| {
            let field = fields.next().ok_or_else(|| {
                BakeError::parse(
                    path,
                    line,
                    format!("{what}: expected {n} numbers, found {i}"),
                )
            })?;
            field.parse::<f64>().map_err(|_| {
                BakeError::parse(path, line, format!("{what}: `{field}` is not a number"))
            })
        })
        .collect()
}
