//! From a symmetric part to the whole grain: FEM models of symmetric loadings are often solved
//! on a half, a quarter or an octant (the sphere of case (a) is an octant). Mirroring a modes
//! bundle across the symmetry planes `x = 0`, `y = 0`, `z = 0` (docs/physics.md section 9: symmetry
//! bookkeeping) gives the full grain:
//! - nodes reflected (those on the plane kept once; nodes no element uses, such as a rigid
//!   plate's, dropped), elements reflected and renumbered so their volume stays positive;
//! - mode vectors and a path's displacements reflected (the component normal to the plane
//!   changes sign): symmetric modes;
//! - modal mass, stiffness and the tabulated internal force and energy doubled per plane (the
//!   amplitudes `eps` are unchanged);
//! - except for mass-normalized modes, which stay mass-normalized: per plane the modes are
//!   divided by `s = sqrt(2)`, so `M` and `K` keep their values, the amplitudes `eps` and the
//!   snapshot coordinates are multiplied by `s`, the energy `U(eps)` doubles and the force
//!   `dU/deps` is multiplied by `2 / s`.

use grain::{
    ElementBlock, ElementType, EnergyPolynomial, FemMesh, ForceTable, InternalForce, ModesBundle,
    Monomial, Normalization,
};
use ndarray::{Array2, Array3};

const AXES: [char; 3] = ['x', 'y', 'z'];

/// Node order of a reflected element that keeps its volume positive.
fn reflected_order(t: ElementType) -> &'static [usize] {
    match t {
        // Swap corners 2 and 3 (1-based): edges 1-2 <-> 1-3 and 2-4 <-> 3-4 swap their nodes.
        ElementType::Tet4 => &[0, 2, 1, 3],
        ElementType::Tet10 => &[0, 2, 1, 3, 6, 5, 4, 7, 9, 8],
        // Reverse both face loops: 1-2-3-4 -> 1-4-3-2, and the edge nodes with them.
        ElementType::Hex8 | ElementType::Hex8Reduced => &[0, 3, 2, 1, 4, 7, 6, 5],
        ElementType::Hex20 | ElementType::Hex20Reduced => &[
            0, 3, 2, 1, 4, 7, 6, 5, 11, 10, 9, 8, 15, 14, 13, 12, 16, 19, 18, 17,
        ],
    }
}

/// Why a bundle cannot be mirrored.
#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    /// The mesh does not lie on one side of a symmetry plane, so its image would overlap it.
    #[error(
        "cannot mirror across {axis} = 0: the mesh has nodes on both sides ({axis} from {min:e} to {max:e}); \
         a symmetric part must lie on one side of its symmetry plane"
    )]
    Sides {
        /// `x`, `y` or `z`.
        axis: char,
        /// Smallest coordinate along the axis.
        min: f64,
        /// Largest coordinate along the axis.
        max: f64,
    },
    /// A residual flexibility is the whole grain's (made from its whole mesh): a part's has no
    /// mirror image.
    #[error(
        "cannot mirror a bundle with a residual flexibility: make it from the whole grain's mesh"
    )]
    Flexibility,
}

/// Mirrors a bundle across the planes normal to `axes` (0, 1, 2 for x, y, z), in that order.
/// Nodes within `1e-9` of the mesh size of a plane are taken as on it.
pub fn mirror(bundle: &ModesBundle, axes: &[usize]) -> Result<ModesBundle, MirrorError> {
    let mut b = bundle.clone();
    for &axis in axes {
        b = mirror_once(&b, axis)?;
    }
    Ok(b)
}

fn mirror_once(b: &ModesBundle, axis: usize) -> Result<ModesBundle, MirrorError> {
    if b.flexibility.is_some() {
        return Err(MirrorError::Flexibility);
    }
    let nodes = &b.mesh.nodes;
    let mut used = vec![false; nodes.nrows()];
    for block in &b.mesh.blocks {
        for &i in &block.connectivity {
            used[i as usize] = true;
        }
    }
    let used: Vec<usize> = (0..used.len()).filter(|&i| used[i]).collect();
    let extent = nodes.iter().map(|x| x.abs()).fold(0.0, f64::max);
    let tol = 1e-9 * extent;
    let along = || used.iter().map(|&i| nodes[[i, axis]]);
    let min = along().fold(f64::INFINITY, f64::min);
    let max = along().fold(f64::NEG_INFINITY, f64::max);
    if min < -tol && max > tol {
        return Err(MirrorError::Sides {
            axis: AXES[axis],
            min,
            max,
        });
    }
    // The new nodes: the used ones, then a reflected copy of each used node off the plane.
    // `(old node, reflected)` per new node.
    let mut source: Vec<(usize, bool)> = used.iter().map(|&i| (i, false)).collect();
    let mut index = vec![usize::MAX; nodes.nrows()];
    let mut image = vec![usize::MAX; nodes.nrows()];
    for (new, &i) in used.iter().enumerate() {
        index[i] = new;
        image[i] = new;
        if nodes[[i, axis]].abs() > tol {
            image[i] = source.len();
            source.push((i, true));
        }
    }
    let blocks = b
        .mesh
        .blocks
        .iter()
        .map(|block| {
            let order = reflected_order(block.element_type);
            let (m, k) = block.connectivity.dim();
            let mut rows: Vec<u64> = block
                .connectivity
                .iter()
                .map(|&i| index[i as usize] as u64)
                .collect();
            for row in block.connectivity.rows() {
                rows.extend(order.iter().map(|&c| image[row[c] as usize] as u64));
            }
            ElementBlock {
                element_type: block.element_type,
                connectivity: Array2::from_shape_vec((2 * m, k), rows).expect("2m x k rows"),
            }
        })
        .collect();
    // Mode scale: 1, or sqrt(2) to keep mass-normalized modes so (module docs).
    let scale = match b.info.normalization {
        Normalization::Mass => std::f64::consts::SQRT_2,
        _ => 1.0,
    };
    let flip = |reflected: bool, c: usize| if reflected && c == axis { -1.0 } else { 1.0 };
    let node_coords = Array2::from_shape_fn((source.len(), 3), |(new, c)| {
        let (i, reflected) = source[new];
        flip(reflected, c) * nodes[[i, c]]
    });
    let phi = Array3::from_shape_fn((b.phi.shape()[0], source.len(), 3), |(mode, new, c)| {
        let (i, reflected) = source[new];
        flip(reflected, c) * b.phi[[mode, i, c]] / scale
    });
    let internal_force = match &b.internal_force {
        InternalForce::Linear => InternalForce::Linear,
        InternalForce::Table {
            interpolation,
            table,
        } => InternalForce::Table {
            interpolation: *interpolation,
            table: ForceTable {
                eps: table.eps.iter().map(|e| scale * e).collect(),
                force: table.force.iter().map(|f| 2.0 * f / scale).collect(),
                energy: table.energy.iter().map(|e| 2.0 * e).collect(),
            },
        },
        // U'(eps') = 2 U(eps' / scale): each term's coefficient times 2 / scale^degree.
        InternalForce::Polynomial(p) => InternalForce::Polynomial(EnergyPolynomial {
            terms: p
                .terms
                .iter()
                .map(|t| Monomial {
                    powers: t.powers.clone(),
                    coefficient: 2.0 * t.coefficient / scale.powi(t.degree() as i32),
                })
                .collect(),
        }),
    };
    // A path's displacements are the grain's own (reflected); its amplitudes scale like eps.
    let path = b.path.as_ref().map(|p| grain::SnapshotPath {
        amplitudes: p.amplitudes.iter().map(|e| scale * e).collect(),
        displacement: Array3::from_shape_fn(
            (p.amplitudes.len(), source.len(), 3),
            |(point, new, c)| {
                let (i, reflected) = source[new];
                flip(reflected, c) * p.displacement[[point, i, c]]
            },
        ),
    });
    let mut info = b.info.clone();
    info.mirror_planes.push(AXES[axis]);
    Ok(ModesBundle {
        info,
        mesh: FemMesh {
            nodes: node_coords,
            blocks,
        },
        phi,
        mass: &b.mass * (2.0 / (scale * scale)),
        stiffness: &b.stiffness * (2.0 / (scale * scale)),
        coords: &b.coords * scale,
        internal_force,
        path,
        flexibility: None,
    })
}
