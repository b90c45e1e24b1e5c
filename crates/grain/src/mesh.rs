//! FEM meshes as the modes bundle stores them: reference node coordinates and blocks of elements
//! of one Abaqus type each.

use ndarray::Array2;
use serde::{Deserialize, Serialize};
use vtkio::model::CellType;

/// The solid element types of the pipeline, named in files by their Abaqus names.
///
/// Node ordering is Abaqus's, which is also VTK's for all of these (corners first, then the
/// mid-side nodes edge by edge), so connectivity is written to VTK unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ElementType {
    /// 4-node linear tetrahedron.
    #[serde(rename = "C3D4")]
    Tet4,
    /// 10-node quadratic tetrahedron.
    #[serde(rename = "C3D10")]
    Tet10,
    /// 8-node linear hexahedron, full integration.
    #[serde(rename = "C3D8")]
    Hex8,
    /// 8-node linear hexahedron, reduced integration in Abaqus (same geometry as `C3D8`).
    #[serde(rename = "C3D8R")]
    Hex8Reduced,
    /// 20-node quadratic hexahedron, full integration.
    #[serde(rename = "C3D20")]
    Hex20,
    /// 20-node quadratic hexahedron, reduced integration in Abaqus (same geometry as `C3D20`).
    #[serde(rename = "C3D20R")]
    Hex20Reduced,
}

impl ElementType {
    /// All supported types.
    pub const ALL: [ElementType; 6] = [
        ElementType::Tet4,
        ElementType::Tet10,
        ElementType::Hex8,
        ElementType::Hex8Reduced,
        ElementType::Hex20,
        ElementType::Hex20Reduced,
    ];

    /// Nodes per element.
    pub fn node_count(self) -> usize {
        match self {
            ElementType::Tet4 => 4,
            ElementType::Tet10 => 10,
            ElementType::Hex8 | ElementType::Hex8Reduced => 8,
            ElementType::Hex20 | ElementType::Hex20Reduced => 20,
        }
    }

    /// The corner pairs of the mid-side nodes of a quadratic element, in node order (Abaqus
    /// convention: node `corner_count + i` sits on edge `i`); empty for linear elements.
    pub fn mid_side_edges(self) -> &'static [(usize, usize)] {
        match self {
            ElementType::Tet10 => &[(0, 1), (1, 2), (2, 0), (0, 3), (1, 3), (2, 3)],
            ElementType::Hex20 | ElementType::Hex20Reduced => &[
                (0, 1),
                (1, 2),
                (2, 3),
                (3, 0),
                (4, 5),
                (5, 6),
                (6, 7),
                (7, 4),
                (0, 4),
                (1, 5),
                (2, 6),
                (3, 7),
            ],
            ElementType::Tet4 | ElementType::Hex8 | ElementType::Hex8Reduced => &[],
        }
    }

    /// The Abaqus name (`C3D10`, ...).
    pub fn abaqus_name(self) -> &'static str {
        match self {
            ElementType::Tet4 => "C3D4",
            ElementType::Tet10 => "C3D10",
            ElementType::Hex8 => "C3D8",
            ElementType::Hex8Reduced => "C3D8R",
            ElementType::Hex20 => "C3D20",
            ElementType::Hex20Reduced => "C3D20R",
        }
    }

    /// The type for an Abaqus name, case-insensitive (`c3d10` is `C3D10`).
    pub fn from_abaqus_name(name: &str) -> Option<ElementType> {
        Self::ALL
            .into_iter()
            .find(|t| t.abaqus_name().eq_ignore_ascii_case(name))
    }

    /// The VTK cell type with the same geometry and node order.
    pub fn vtk_cell_type(self) -> CellType {
        match self {
            ElementType::Tet4 => CellType::Tetra,
            ElementType::Tet10 => CellType::QuadraticTetra,
            ElementType::Hex8 | ElementType::Hex8Reduced => CellType::Hexahedron,
            ElementType::Hex20 | ElementType::Hex20Reduced => CellType::QuadraticHexahedron,
        }
    }
}

/// Elements of one type: connectivity rows of 0-based node indices.
#[derive(Clone, Debug, PartialEq)]
pub struct ElementBlock {
    /// The element type; `connectivity` has `element_type.node_count()` columns.
    pub element_type: ElementType,
    /// `(elements, nodes per element)`, 0-based indices into the mesh's nodes.
    pub connectivity: Array2<u64>,
}

/// A FEM mesh in its reference configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct FemMesh {
    /// `(n, 3)` reference node coordinates.
    pub nodes: Array2<f64>,
    /// Element blocks, one type each.
    pub blocks: Vec<ElementBlock>,
}
