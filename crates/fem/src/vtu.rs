//! Volume meshes from VTK unstructured grids (`.vtu`, or legacy `.vtk`), through vtkio.

use std::path::Path;

use grain::{ElementBlock, ElementType, FemMesh};
use ndarray::Array2;
use vtkio::model::{CellType, DataSet, UnstructuredGridPiece, Vtk};

use crate::abaqus::DeckError;

/// The element type of a VTK cell type (VTK and Abaqus share the node order of these).
fn element_type(cell: CellType) -> Option<ElementType> {
    match cell {
        CellType::Tetra => Some(ElementType::Tet4),
        CellType::QuadraticTetra => Some(ElementType::Tet10),
        CellType::Hexahedron => Some(ElementType::Hex8),
        CellType::QuadraticHexahedron => Some(ElementType::Hex20),
        _ => None,
    }
}

/// Reads the first piece of an unstructured grid. Cells of other types are refused, naming the
/// first one.
pub fn read_vtu_mesh(path: &Path) -> Result<FemMesh, DeckError> {
    let fail = |message: String| DeckError::Deck {
        path: path.to_path_buf(),
        message,
    };
    let vtk = Vtk::import(path).map_err(|e| fail(format!("cannot read VTK: {e}")))?;
    let piece: UnstructuredGridPiece = match vtk.data {
        DataSet::UnstructuredGrid { pieces, .. } => pieces
            .into_iter()
            .next()
            .ok_or_else(|| fail("unstructured grid without pieces".into()))?
            .into_loaded_piece_data(path.parent())
            .map_err(|e| fail(format!("cannot load piece: {e}")))?,
        _ => return Err(fail("expected an unstructured grid (a volume mesh)".into())),
    };
    let coords: Vec<f64> = piece
        .points
        .cast_into()
        .ok_or_else(|| fail("point coordinates are not numbers".into()))?;
    let n = coords.len() / 3;
    let (connectivity, offsets) = piece.cells.cell_verts.into_xml();
    let mut blocks: Vec<(ElementType, Vec<u64>, usize)> = Vec::new();
    let mut start = 0usize;
    for (cell, (&end, &kind)) in offsets.iter().zip(&piece.cells.types).enumerate() {
        let t = element_type(kind)
            .ok_or_else(|| fail(format!("cell {cell} has VTK type {kind:?}; supported: tetra, quadratic tetra, hexahedron, quadratic hexahedron")))?;
        let ids = &connectivity[start..end as usize];
        if ids.len() != t.node_count() || ids.iter().any(|&i| i as usize >= n) {
            return Err(fail(format!(
                "cell {cell} has bad connectivity {ids:?} for {} points",
                n
            )));
        }
        match blocks.iter_mut().find(|b| b.0 == t) {
            Some(b) => {
                b.1.extend_from_slice(ids);
                b.2 += 1;
            }
            None => blocks.push((t, ids.to_vec(), 1)),
        }
        start = end as usize;
    }
    if blocks.is_empty() {
        return Err(fail("no cells".into()));
    }
    Ok(FemMesh {
        nodes: Array2::from_shape_vec((n, 3), coords[..3 * n].to_vec()).expect("n x 3"),
        blocks: blocks
            .into_iter()
            .map(|(t, ids, count)| ElementBlock {
                element_type: t,
                connectivity: Array2::from_shape_vec((count, t.node_count()), ids).expect("rows"),
            })
            .collect(),
    })
}
