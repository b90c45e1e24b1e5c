//! VTK polydata (`.vtp` XML or legacy `.vtk` POLYDATA) through vtkio: points and polygons
//! (split into triangle fans).

use std::path::Path;

use nalgebra::Point3;
use vtkio::model::{DataSet, PolyDataPiece};

use crate::error::BakeError;
use crate::surface::TriangleMesh;

pub(super) fn read_polydata(path: &Path) -> Result<TriangleMesh, BakeError> {
    let vtk = fem::import_vtk(path)?;
    let piece: PolyDataPiece = match vtk.data {
        DataSet::PolyData { pieces, .. } => pieces
            .into_iter()
            .next()
            .ok_or_else(|| BakeError::input(path, "polydata without pieces"))?
            .into_loaded_piece_data(path.parent())
            .map_err(|e| BakeError::input(path, format!("cannot load polydata piece: {e}")))?,
        _ => {
            return Err(BakeError::input(
                path,
                "expected POLYDATA (a surface), found another dataset type",
            ));
        }
    };
    if piece.strips.as_ref().is_some_and(|s| s.num_cells() > 0) {
        return Err(BakeError::input(
            path,
            "triangle strips are not supported; save the surface as polygons",
        ));
    }
    let coords: Vec<f64> = piece
        .points
        .cast_into()
        .ok_or_else(|| BakeError::input(path, "point coordinates are not numbers"))?;
    let vertices: Vec<Point3<f64>> = coords
        .chunks_exact(3)
        .map(|c| Point3::new(c[0], c[1], c[2]))
        .collect();
    let polys = piece
        .polys
        .ok_or_else(|| BakeError::input(path, "polydata has no polygons"))?;
    let polys = fem::vtk_cells(path, polys)?;
    let mut triangles = Vec::new();
    for (cell, ids) in polys.iter().enumerate() {
        if ids.len() < 3 {
            return Err(BakeError::input(
                path,
                format!(
                    "polygon {cell} has {} points, expected 3 or more",
                    ids.len()
                ),
            ));
        }
        if let Some(i) = ids.iter().find(|&&i| i as usize >= vertices.len()) {
            return Err(BakeError::input(
                path,
                format!(
                    "polygon {cell} uses point {i}, past the {} points",
                    vertices.len()
                ),
            ));
        }
        triangles
            .extend((1..ids.len() - 1).map(|k| [ids[0] as u32, ids[k] as u32, ids[k + 1] as u32]));
    }
    Ok(TriangleMesh {
        vertices,
        triangles,
    })
}
