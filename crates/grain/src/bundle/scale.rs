//! Geometrically similar grains (docs/physics.md section 10): a bundle scaled by `s` is the same
//! grain `s` times larger, of the same material, deformed in the same way at the same amplitude.
//!
//! The scaled grain occupies `x_s = s x`. Its mode vectors are `Phi_s(x_s) = s Phi(x)`, so that
//! one amplitude `eps` gives the same strain field on both grains (`grad_s Phi_s = grad Phi`):
//! amplitudes, their sampled values, path points and ranges are unchanged. Then, with `rho`, the
//! elastic tensor and the viscosity unchanged:
//!
//! | quantity | law | why |
//! |---|---|---|
//! | volume, mass | `s^3` | `dV_s = s^3 dV` |
//! | principal moments | `s^5` | `int rho |x_s|^2 dV_s` |
//! | level set values, grid origin and spacing, nodes | `s` | a signed distance is a length |
//! | node areas | `s^2` | |
//! | mode vectors (nodes, grid, path displacements) | `s` | `Phi_s(x_s) = s Phi(x)` |
//! | modal mass `M = int rho Phi . Phi dV` | `s^5` | |
//! | modal stiffness `K = int eps(Phi) : C : eps(Phi) dV` | `s^3` | the same strains over `s^3` the volume |
//! | internal force table (`F`, `U`), energy polynomial | `s^3` | `U_s(eps) = int W(eps) dV_s` |
//! | modal damping | `s^3` | a Kelvin-Voigt material, `sigma = C : eps + eta : d eps/dt`: like `K` |
//! | residual flexibility: points, patch radius | `s` | lengths |
//! | residual flexibility `G` | `1 / s` | a displacement per force, `~ 1 / (E L)` |
//!
//! Consequences: modal frequencies `sqrt(K / M)` go as `1 / s`, and under the material damping
//! the damping ratio `C / (2 sqrt(K M))` goes as `1 / s` too (a larger grain of the same
//! viscous material rings longer).

use super::grain::GrainBundle;
use crate::InternalForce;
use crate::derived::{Derived, OutOfRange, check, times_power};
use crate::grid::{GridError, LevelSetGrid};

/// Why a bundle cannot be scaled.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScaleError {
    /// The scale is not a finite number > 0.
    #[error("a finite scale factor > 0, got {0}")]
    NotPositive(f64),
    /// The scale takes a quantity of the grain out of the normal `f64`s.
    #[error("the scale {0}")]
    OutOfRange(#[from] OutOfRange),
    /// The scaled grid is not one (a level set value no `f64` holds).
    #[error(transparent)]
    Grid(#[from] GridError),
}

impl GrainBundle {
    /// The bundle of the same grain `s` times larger (module docs). Refuses `s` not finite and
    /// positive, or one that takes the grain's volume, mass, principal moments, grid spacing,
    /// modal mass or stiffness out of the normal `f64`s (issue #33: at 1e-65 the moments, `s^5`,
    /// underflowed to zero and the run diverged), naming the quantity and the usable range.
    pub fn scaled(&self, s: f64) -> Result<GrainBundle, ScaleError> {
        if !(s.is_finite() && s > 0.0) {
            return Err(ScaleError::NotPositive(s));
        }
        let p = &self.properties;
        let diagonal = |m: &ndarray::Array2<f64>| m.diag().to_vec();
        let (modal_mass, modal_stiffness) = self.deformation.as_ref().map_or_else(
            || (Vec::new(), Vec::new()),
            |d| (diagonal(&d.modal_mass), diagonal(&d.modal_stiffness)),
        );
        let quantity = |name, power, values| Derived {
            name,
            power,
            values,
        };
        check(
            s,
            &[
                quantity("volume", 3, &[p.volume]),
                quantity("mass", 3, &[p.mass]),
                quantity("principal moments of inertia", 5, &p.principal_moments),
                quantity("grid spacing", 1, &[self.levelset.spec().spacing]),
                quantity("modal mass", 5, &modal_mass),
                quantity("modal stiffness", 3, &modal_stiffness),
            ],
        )?;
        let mut b = self.clone();
        let p = &mut b.properties;
        p.volume = times_power(p.volume, s, 3);
        p.mass = times_power(p.mass, s, 3);
        p.principal_moments = p.principal_moments.map(|m| times_power(m, s, 5));
        p.input_frame.translation = p.input_frame.translation.map(|t| t * s);
        let grid = &self.levelset;
        let mut spec = grid.spec().clone();
        spec.origin = spec.origin.map(|o| o * s);
        spec.spacing *= s;
        b.levelset = LevelSetGrid::new(spec, grid.values().iter().map(|v| v * s).collect())?;
        b.nodes.mapv_inplace(|x| x * s);
        b.node_areas.mapv_inplace(|a| times_power(a, s, 2));
        if let Some(d) = &mut b.deformation {
            d.modal_mass.mapv_inplace(|m| times_power(m, s, 5));
            d.modal_stiffness.mapv_inplace(|k| times_power(k, s, 3));
            d.modal_damping.mapv_inplace(|c| times_power(c, s, 3));
            match &mut d.internal_force {
                InternalForce::Linear => {}
                InternalForce::Table { table, .. } => {
                    for v in table.force.iter_mut().chain(table.energy.iter_mut()) {
                        *v = times_power(*v, s, 3);
                    }
                }
                InternalForce::Polynomial(p) => {
                    for t in &mut p.terms {
                        t.coefficient = times_power(t.coefficient, s, 3);
                    }
                }
            }
            d.node_modes.mapv_inplace(|x| x * s);
            d.grid_modes.mapv_inplace(|x| x * s);
            for sample in d.precomputed.iter_mut().flatten() {
                sample.values.mapv_inplace(|v| v * s);
            }
            if let Some(path) = &mut d.path {
                path.nodes.mapv_inplace(|x| x * s);
                path.grid.mapv_inplace(|x| x * s);
            }
            if let Some(f) = &mut d.flexibility {
                f.points.mapv_inplace(|x| x * s);
                f.patch_radius *= s;
                f.matrix.mapv_inplace(|g| g / s);
            }
        }
        Ok(b)
    }
}
