//! The residual flexibility of a grain between points of its surface: what its free modes leave
//! out of its static response to a contact load (docs/physics.md section 2, "Contacts anywhere").
//!
//! A contact at a surface point `x_s` pushes the grain inward along the surface normal `n_s`. The
//! grain's static response to a unit such load, with inertia relief
//! ([`FreeBody::static_response`]), is `u_s = K^+ w_s`; its `p` lowest free modes carry the part
//! `Phi Lambda^-1 Phi^T w_s` (the modal truncation), and the rest
//!
//! `G_ts = w_t^T K^+ w_s - sum_a (n_t . phi_a(x_t)) (n_s . phi_a(x_s)) / omega_a^2`
//!
//! is the residual flexibility (the mode-acceleration method: Craig and Kurdila, *Fundamentals of
//! Structural Dynamics*, 2nd ed., 2006, section 14.3; Dickens, Nakagawa and Wittbrodt, *A critique
//! of mode acceleration and modal truncation augmentation methods for modal response analysis*,
//! Computers & Structures 62, 1997). `G_ts` is the inward displacement at `x_t` (its patch-weighted
//! normal component) per unit inward force at `x_s` that the modes miss. The modes' part converges
//! slowly with `p` (a load at a point excites every mode; on the ball of the tests the
//! antipode's response is off by +31 % with 40 modes and -46 % with 80, the equator's by -28 % and
//! -50 %), while the modes plus `G` are the mesh's exact static response between the samples
//! for any `p`. `G` is symmetric (reciprocity); with the modes' part taken at the points
//! (below) it is not quite positive semi-definite (on the ball, its lowest eigenvalue is -6e-4
//! of its largest).
//!
//! Each load `w_s` is spread over a patch of radius `rho` about its node (weights
//! `A_j sqrt(1 - d^2 / rho^2)` on the surface nodes within `rho`, `A_j` the node's tributary
//! area, all along `-n_s`, total 1): a nodal point load's response grows without bound as the
//! mesh is refined, a patch load's converges. The modes' part is taken at the points
//! themselves, as a solver's modes move the surface under a contact much smaller than their
//! wavelengths; with the modes' part patch-weighted too, a contact's own compliance in the
//! solver moved by 5 % between `rho` = 3 and 5 on the ball. The response at points farther than
//! a few `rho` does not depend on `rho` (Saint-Venant; on the ball, 3 % from `rho` = 1.5 to 4 mm
//! at the antipode); the diagonal `G_ss` does, by the half space's patch compliance, which the
//! solver takes out (the contact law carries it: docs/physics.md section 2). The patch must be
//! resolved by the mesh: on the ball, the squeeze's force moved by 2 to 5 % with `rho` = 2
//! median boundary edges, by under 0.2 % from 3.3 to 5 (so the default is 4).
//!
//! Cost: one static response per surface node (`S` solves with the free body's factor, by
//! blocks of columns) and `O(S^2)` storage; meant for a mesh of the grain made for it (the
//! response between contacts is smooth: a few hundred to a few thousand surface nodes).

use faer::{Mat, MatRef};
use fem::boundary;
use grain::FemMesh;
use nalgebra::Vector3;

use crate::free::{FreeBody, FreeError, FreeModes};

/// The grain's surface nodes with their outward normals and tributary areas.
#[derive(Debug, Clone, PartialEq)]
pub struct SurfacePoints {
    /// Mesh node index of each surface point.
    pub nodes: Vec<usize>,
    /// Outward unit normal (area-weighted mean of the adjacent boundary triangles').
    pub normals: Vec<[f64; 3]>,
    /// Tributary area (a third of each adjacent boundary triangle's).
    pub areas: Vec<f64>,
    /// The boundary triangles over the surface points (indices into `nodes`), outward.
    pub triangles: Vec<[u32; 3]>,
}

/// Node `k`'s reference position.
fn position(mesh: &FemMesh, k: usize) -> Vector3<f64> {
    Vector3::new(mesh.nodes[[k, 0]], mesh.nodes[[k, 1]], mesh.nodes[[k, 2]])
}

/// The surface points of a mesh: the nodes of its boundary triangulation ([`fem::boundary`],
/// quadratic faces split through their mid-side nodes).
pub fn surface_points(mesh: &FemMesh) -> SurfacePoints {
    let surface = boundary(mesh);
    let n = mesh.nodes.nrows();
    let mut index = vec![u32::MAX; n];
    let mut nodes = Vec::new();
    for t in &surface.triangles {
        for &k in t {
            if index[k as usize] == u32::MAX {
                index[k as usize] = nodes.len() as u32;
                nodes.push(k as usize);
            }
        }
    }
    let point = |k: u32| position(mesh, k as usize);
    let mut normals = vec![Vector3::zeros(); nodes.len()];
    let mut areas = vec![0.0; nodes.len()];
    let mut triangles = Vec::with_capacity(surface.triangles.len());
    for t in &surface.triangles {
        let scaled = (point(t[1]) - point(t[0])).cross(&(point(t[2]) - point(t[0])));
        let local = t.map(|k| index[k as usize]);
        for &i in &local {
            normals[i as usize] += scaled;
            areas[i as usize] += scaled.norm() / 6.0;
        }
        triangles.push(local);
    }
    SurfacePoints {
        nodes,
        normals: normals
            .iter()
            .map(|v| {
                let u = v.normalize();
                [u.x, u.y, u.z]
            })
            .collect(),
        areas,
        triangles,
    }
}

impl SurfacePoints {
    /// The median edge length of the boundary triangles.
    pub fn median_edge(&self, mesh: &FemMesh) -> f64 {
        let at = |i: u32| position(mesh, self.nodes[i as usize]);
        let mut edges: Vec<f64> = self
            .triangles
            .iter()
            .flat_map(|t| (0..3).map(move |e| (t[e], t[(e + 1) % 3])))
            .map(|(a, b)| (at(a) - at(b)).norm())
            .collect();
        edges.sort_by(f64::total_cmp);
        edges.get(edges.len() / 2).copied().unwrap_or(0.0)
    }
}

/// A grain's residual flexibility between its surface points (module docs).
#[derive(Debug, Clone)]
pub struct Flexibility {
    /// The points `x_s`, with their normals.
    pub surface: SurfacePoints,
    /// The load patches' radius `rho` (length).
    pub patch_radius: f64,
    /// `S x S` symmetric `G_ts` (length / force).
    pub residual: Mat<f64>,
}

/// Why a flexibility could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FlexibilityError {
    /// The free body's solve failed.
    #[error(transparent)]
    Free(#[from] FreeError),
    /// The patch radius is not a positive length.
    #[error("the load patch radius must be a positive length, got {0}")]
    Patch(f64),
    /// The modes are not the body's (their length differs).
    #[error("the modes have {found} degrees of freedom, the body {expected}")]
    Modes {
        /// The body's `3 n`.
        expected: usize,
        /// The modes'.
        found: usize,
    },
}

/// The surface points' patch loads `w_s` as `(node, weight)` lists, the direction `-n_s` implied.
fn patches(mesh: &FemMesh, surface: &SurfacePoints, radius: f64) -> Vec<Vec<(usize, f64)>> {
    let at = |k: usize| position(mesh, k);
    (0..surface.nodes.len())
        .map(|s| {
            let centre = at(surface.nodes[s]);
            let mut weights: Vec<(usize, f64)> = surface
                .nodes
                .iter()
                .zip(&surface.areas)
                .filter_map(|(&k, &area)| {
                    let d2 = (at(k) - centre).norm_squared() / (radius * radius);
                    (d2 < 1.0).then(|| (k, area * (1.0 - d2).sqrt()))
                })
                .collect();
            let total: f64 = weights.iter().map(|w| w.1).sum();
            for w in &mut weights {
                w.1 /= total;
            }
            weights
        })
        .collect()
}

/// The residual flexibility of `body` beyond `modes` between all its surface points, with load
/// patches of radius `patch_radius` (four median boundary edges if `None`; module docs).
/// Fails if a static solve fails.
pub fn residual_flexibility(
    body: &FreeBody,
    modes: &FreeModes,
    patch_radius: Option<f64>,
) -> Result<Flexibility, FlexibilityError> {
    let mesh = body.mesh();
    let surface = surface_points(mesh);
    let patch_radius = patch_radius.unwrap_or_else(|| 4.0 * surface.median_edge(mesh));
    if !(patch_radius > 0.0 && patch_radius.is_finite()) {
        return Err(FlexibilityError::Patch(patch_radius));
    }
    let dofs = 3 * mesh.nodes.nrows();
    if modes.shapes.nrows() != dofs {
        return Err(FlexibilityError::Modes {
            expected: dofs,
            found: modes.shapes.nrows(),
        });
    }
    let loads = patches(mesh, &surface, patch_radius);
    let count = loads.len();
    // w_t^T v for a nodal vector v (column `c` of `v`).
    let project = |t: usize, v: MatRef<'_, f64>, c: usize| -> f64 {
        let n = surface.normals[t];
        loads[t]
            .iter()
            .map(|&(k, w)| -w * (0..3).map(|d| n[d] * v[(3 * k + d, c)]).sum::<f64>())
            .sum()
    };
    // The modes' part `Phi Lambda^-1 Phi^T` between the points, as `B^T B` with
    // `B_as = -n_s . phi_a(x_s) / omega_a`: at the point itself, as the solver's modes move the
    // surface under a contact (module docs).
    let p = modes.eigenvalues.len();
    let modal = Mat::from_fn(p, count, |a, s| {
        let (k, n) = (surface.nodes[s], surface.normals[s]);
        let inward: f64 = (0..3).map(|d| -n[d] * modes.shapes[(3 * k + d, a)]).sum();
        inward / modes.eigenvalues[a].sqrt()
    });
    let mut residual = -(modal.transpose() * &modal);
    const BLOCK: usize = 64;
    for first in (0..count).step_by(BLOCK) {
        let width = BLOCK.min(count - first);
        let mut f = Mat::<f64>::zeros(dofs, width);
        for c in 0..width {
            let n = surface.normals[first + c];
            for &(k, w) in &loads[first + c] {
                for d in 0..3 {
                    f[(3 * k + d, c)] -= w * n[d];
                }
            }
        }
        let u = body.static_response(f.as_ref())?;
        for c in 0..width {
            for t in 0..count {
                residual[(t, first + c)] += project(t, u.as_ref(), c);
            }
        }
    }
    // Reciprocity holds to the solves' round-off: keep the symmetric part.
    let residual = Mat::from_fn(count, count, |i, j| {
        0.5 * (residual[(i, j)] + residual[(j, i)])
    });
    Ok(Flexibility {
        surface,
        patch_radius,
        residual,
    })
}
