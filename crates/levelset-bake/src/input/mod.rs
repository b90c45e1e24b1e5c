//! Geometry inputs: surface meshes (STL, OBJ, VTK polydata), and the boundaries of FEM volume
//! meshes (Abaqus decks, VTK unstructured grids), read into a [`TriangleMesh`].
//!
//! STL and OBJ are parsed here rather than with `stl_io` or `tobj` because those crates report
//! errors without line numbers; a user with a broken file needs to know where it breaks.

mod fields;
mod obj;
mod stl;
mod vtk;

use std::path::Path;

use grain::FemMesh;
use nalgebra::Point3;

use crate::error::BakeError;
use crate::surface::TriangleMesh;

/// A FEM volume mesh and its boundary surface.
#[derive(Debug, Clone, PartialEq)]
pub struct VolumeMesh {
    /// The mesh as read.
    pub fem: FemMesh,
    /// Its boundary, triangulated through the mid-side nodes of quadratic faces.
    pub surface: TriangleMesh,
    /// For each surface vertex, the FEM node it is.
    pub fem_nodes: Vec<u32>,
}

/// Reads a grain's surface, choosing the reader by the file extension: `.stl`, `.obj`, `.vtp`
/// (surfaces), `.inp` (an Abaqus deck: the boundary of its solid elements, or of `element_set`),
/// `.vtu` (the boundary of a volume mesh), `.vtk` (legacy: polydata, or an unstructured grid).
///
/// Every vertex must be finite (a binary STL or a VTK file can hold NaN or infinity, and a text
/// `1e999` reads as infinity): the error names the vertex.
pub fn read_surface(path: &Path, element_set: Option<&str>) -> Result<TriangleMesh, BakeError> {
    read_surface_with(path, element_set, fem::Redefinition::Refuse)
}

/// [`read_surface`], with `redefinition` deciding what a node or element an Abaqus deck defines
/// twice gets ([`fem::Redefinition`]).
pub fn read_surface_with(
    path: &Path,
    element_set: Option<&str>,
    redefinition: fem::Redefinition,
) -> Result<TriangleMesh, BakeError> {
    let mesh = read_any_surface(path, element_set, redefinition)?;
    match mesh
        .vertices
        .iter()
        .position(|v| !v.iter().all(|x| x.is_finite()))
    {
        None => Ok(mesh),
        Some(i) => Err(BakeError::input(
            path,
            format!(
                "vertex {i} is ({}, {}, {}); expected finite coordinates",
                mesh.vertices[i].x, mesh.vertices[i].y, mesh.vertices[i].z
            ),
        )),
    }
}

fn read_any_surface(
    path: &Path,
    element_set: Option<&str>,
    redefinition: fem::Redefinition,
) -> Result<TriangleMesh, BakeError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("stl") => stl::read(path),
        Some("obj") => obj::read(path),
        Some("vtp") => vtk::read_polydata(path),
        Some("vtk") => vtk::read_polydata(path).or_else(|polydata_error| {
            // Not a surface: perhaps a volume mesh.
            read_volume(path, element_set, redefinition)
                .map(|v| v.surface)
                .map_err(|_| polydata_error)
        }),
        Some("inp") | Some("vtu") => {
            read_volume(path, element_set, redefinition).map(|v| v.surface)
        }
        _ => Err(BakeError::input(
            path,
            "unknown geometry format: expected .stl, .obj, .vtp, .vtk, .vtu or .inp",
        )),
    }
}

/// Reads a volume mesh (`.inp`, `.vtu`, `.vtk`) and extracts its boundary; `redefinition`: what
/// a label a deck defines twice gets.
pub fn read_volume(
    path: &Path,
    element_set: Option<&str>,
    redefinition: fem::Redefinition,
) -> Result<VolumeMesh, BakeError> {
    let is_inp = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("inp"));
    let fem = if is_inp {
        fem::Deck::read_with(path, redefinition)?
            .part(element_set)?
            .mesh
    } else {
        if element_set.is_some() {
            return Err(BakeError::parameter(
                "--elset",
                "element sets exist in Abaqus decks (.inp) only",
            ));
        }
        fem::read_vtu_mesh(path)?
    };
    let boundary = fem::boundary(&fem);
    // Keep only the nodes on the boundary, numbered in order of first use.
    let mut index = std::collections::HashMap::new();
    let mut fem_nodes = Vec::new();
    let triangles = boundary
        .triangles
        .iter()
        .map(|t| {
            t.map(|n| {
                *index.entry(n).or_insert_with(|| {
                    fem_nodes.push(n);
                    (fem_nodes.len() - 1) as u32
                })
            })
        })
        .collect();
    let vertices = fem_nodes
        .iter()
        .map(|&n| fem::node(&fem, n as usize))
        .collect::<Vec<Point3<f64>>>();
    Ok(VolumeMesh {
        surface: TriangleMesh {
            vertices,
            triangles,
        },
        fem,
        fem_nodes,
    })
}
