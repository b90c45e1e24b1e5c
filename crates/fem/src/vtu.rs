//! Volume meshes from VTK unstructured grids (`.vtu`, or legacy `.vtk`), through vtkio.

use std::path::Path;

use grain::{ElementBlock, ElementType, FemMesh};
use ndarray::Array2;
use vtkio::model::{Attribute, CellType, DataSet, UnstructuredGridPiece, Vtk};

use crate::abaqus::DeckError;

/// One 3-vector per mesh point.
type PointVectors = Vec<[f64; 3]>;

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
    read_vtu(path, None).map(|(mesh, _)| mesh)
}

/// Reads an unstructured grid and the point-data vector named `field` (3 components; a data
/// array, or an array of a legacy FIELD attribute). Raw appended binary data is refused with
/// advice: vtkio cannot read it.
pub fn read_vtu_field(path: &Path, field: &str) -> Result<(FemMesh, Vec<[f64; 3]>), DeckError> {
    let (mesh, values) = read_vtu(path, Some(field))?;
    Ok((mesh, values.expect("asked for")))
}

fn read_vtu(
    path: &Path,
    field: Option<&str>,
) -> Result<(FemMesh, Option<PointVectors>), DeckError> {
    let fail = |message: String| DeckError::file(path, message);
    // The first MiB tells raw appended data (vtkio would misread it); the rest is not read twice.
    let mut head = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(
            std::fs::File::open(path).map_err(|source| DeckError::Io {
                path: path.to_path_buf(),
                source,
            })?,
            1 << 20,
        ),
        &mut head,
    )
    .map_err(|source| DeckError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let head = String::from_utf8_lossy(&head);
    if head.contains("encoding=\"raw\"") {
        return Err(fail(
            "raw appended binary data cannot be read; save the file with \"Encode appended data\" (ParaView) or as ASCII/inline binary".into(),
        ));
    }
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
    let values = match field {
        None => None,
        Some(name) => Some(point_vectors(&piece.data.point, name, n).map_err(fail)?),
    };
    let mesh = FemMesh {
        nodes: Array2::from_shape_vec((n, 3), coords[..3 * n].to_vec()).expect("n x 3"),
        blocks: blocks
            .into_iter()
            .map(|(t, ids, count)| ElementBlock {
                element_type: t,
                connectivity: Array2::from_shape_vec((count, t.node_count()), ids).expect("rows"),
            })
            .collect(),
    };
    Ok((mesh, values))
}

/// The point vectors named `name`, from a data array or a FIELD attribute's arrays.
fn point_vectors(attributes: &[Attribute], name: &str, n: usize) -> Result<Vec<[f64; 3]>, String> {
    let mut names = Vec::new();
    let mut found: Option<(u32, &vtkio::model::IOBuffer)> = None;
    for a in attributes {
        match a {
            Attribute::DataArray(d) => {
                names.push(d.name.clone());
                if d.name == name {
                    found = Some((d.elem.num_comp(), &d.data));
                }
            }
            Attribute::Field { data_array, .. } => {
                for f in data_array {
                    names.push(f.name.clone());
                    if f.name == name {
                        found = Some((f.elem, &f.data));
                    }
                }
            }
        }
    }
    let (components, data) = found
        .ok_or_else(|| format!("no point data `{name}` (point data: {})", names.join(", ")))?;
    if components != 3 {
        return Err(format!(
            "point data `{name}` has {components} components, expected 3"
        ));
    }
    let values: Vec<f64> = data
        .cast_into()
        .ok_or_else(|| format!("point data `{name}` is not numeric"))?;
    if values.len() != 3 * n {
        return Err(format!(
            "point data `{name}` has {} values for {n} points",
            values.len()
        ));
    }
    Ok(values.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect())
}
