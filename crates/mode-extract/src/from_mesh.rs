//! Modes from the grain's mesh and material alone (`mode-extract --free N`): its lowest
//! free-free elastic modes ([`crate::free`]) and, when asked, the residual flexibility between
//! its surface nodes ([`crate::flexibility`]), as a modes bundle. No FEM run is needed; the
//! bundle records no snapshots and no reconstruction error, its modes are mass-normalized
//! (`M = I`, `K = diag(omega^2)`) and its internal force is linear (`F = K eps`).

use std::path::PathBuf;

use grain::{
    Material, ModeConstruction, ModesBundle, ModesInfo, Normalization, SurfaceFlexibility,
};
use ndarray::{Array2, Array3};

use crate::extract::{ExtractError, MaterialOptions, checksum, material, modal_in_range};
use crate::flexibility::{FlexibilityError, residual_flexibility};
use crate::free::FreeBody;
use crate::modal::modal_matrices;

/// What `mode-extract --free` is given.
#[derive(Debug, Clone)]
pub struct FreeOptions {
    /// The Abaqus/CalculiX deck with the grain's mesh.
    pub mesh: PathBuf,
    /// The grain's element set in the deck (all solid elements if `None`).
    pub element_set: Option<String>,
    /// What a node or element label the deck defines twice gets.
    pub redefinition: fem::Redefinition,
    /// How many modes.
    pub modes: usize,
    /// Whether to compute the residual flexibility, and its patch radius (`None`: four times the
    /// median boundary edge).
    pub flexibility: Option<Option<f64>>,
    /// The material, overriding the deck's.
    pub material: MaterialOptions,
    /// Free-text units.
    pub units: String,
}

/// The free modes (and residual flexibility) of the deck's grain, as a modes bundle (module
/// docs).
pub fn free_bundle(o: &FreeOptions) -> Result<ModesBundle, ExtractError> {
    let deck = fem::Deck::read_with(&o.mesh, o.redefinition)?;
    let mesh = deck.part(o.element_set.as_deref())?.mesh;
    let (elastic, e_source, rho_source) = material(&o.material, Some(&deck))?;
    let failed = |error: FlexibilityError| ExtractError::Free {
        mesh: o.mesh.clone(),
        error,
    };
    let body = FreeBody::new(&mesh, &elastic).map_err(|e| failed(e.into()))?;
    let modes = body.modes(o.modes).map_err(|e| failed(e.into()))?;
    let n = mesh.nodes.nrows();
    let phi = Array3::from_shape_fn((o.modes, n, 3), |(a, k, c)| modes.shapes[(3 * k + c, a)]);
    let (mass, stiffness) =
        modal_matrices(&mesh, &phi, &elastic).map_err(|error| ExtractError::Modal {
            mesh: o.mesh.clone(),
            error,
        })?;
    modal_in_range(&mass, "modal mass", elastic.density, &rho_source)?;
    modal_in_range(
        &stiffness,
        "modal stiffness",
        elastic.youngs_modulus,
        &e_source,
    )?;
    let flexibility = match o.flexibility {
        None => None,
        Some(radius) => {
            let f = residual_flexibility(&body, &modes, radius).map_err(failed)?;
            Some(SurfaceFlexibility {
                nodes: f.surface.nodes.iter().map(|&k| k as u64).collect(),
                patch_radius: f.patch_radius,
                matrix: Array2::from_shape_fn(f.residual.shape(), |(i, j)| f.residual[(i, j)]),
            })
        }
    };
    Ok(ModesBundle {
        info: ModesInfo {
            units: o.units.clone(),
            material: Material {
                youngs_modulus: elastic.youngs_modulus,
                poisson_ratio: elastic.poisson_ratio,
                density: elastic.density,
            },
            sources: vec![checksum(&o.mesh)?],
            construction: ModeConstruction::Free {
                eigenvalues: modes.eigenvalues.clone(),
            },
            normalization: Normalization::Mass,
            energy_orthogonalized: true,
            snapshots: Vec::new(),
            reconstruction: None,
            fit: None,
            mirror_planes: String::new(),
        },
        mesh,
        phi,
        mass,
        stiffness,
        coords: Array2::zeros((0, o.modes)),
        internal_force: grain::InternalForce::Linear,
        path: None,
        flexibility,
    })
}
