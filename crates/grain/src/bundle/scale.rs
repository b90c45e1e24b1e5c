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
//!
//! Consequences: modal frequencies `sqrt(K / M)` go as `1 / s`, and under the material damping
//! the damping ratio `C / (2 sqrt(K M))` goes as `1 / s` too (a larger grain of the same
//! viscous material rings longer).

use super::GrainBundle;
use crate::InternalForce;
use crate::grid::{GridError, LevelSetGrid};

impl GrainBundle {
    /// The bundle of the same grain `s` times larger (module docs). Refuses `s` not finite and
    /// positive, or a scaled grid no `f64` can hold.
    pub fn scaled(&self, s: f64) -> Result<GrainBundle, GridError> {
        if !(s.is_finite() && s > 0.0) {
            return Err(GridError::Spec {
                field: "scale",
                message: format!("a finite scale factor > 0, got {s}"),
            });
        }
        let (s2, s3, s5) = (s * s, s * s * s, s.powi(5));
        let mut b = self.clone();
        let p = &mut b.properties;
        p.volume *= s3;
        p.mass *= s3;
        p.principal_moments = p.principal_moments.map(|m| m * s5);
        p.input_frame.translation = p.input_frame.translation.map(|t| t * s);
        let grid = &self.levelset;
        let mut spec = grid.spec().clone();
        spec.origin = spec.origin.map(|o| o * s);
        spec.spacing *= s;
        b.levelset = LevelSetGrid::new(spec, grid.values().iter().map(|v| v * s).collect())?;
        b.nodes.mapv_inplace(|x| x * s);
        b.node_areas.mapv_inplace(|a| a * s2);
        if let Some(d) = &mut b.deformation {
            d.modal_mass.mapv_inplace(|m| m * s5);
            d.modal_stiffness.mapv_inplace(|k| k * s3);
            d.modal_damping.mapv_inplace(|c| c * s3);
            match &mut d.internal_force {
                InternalForce::Linear => {}
                InternalForce::Table { table, .. } => {
                    for v in table.force.iter_mut().chain(table.energy.iter_mut()) {
                        *v *= s3;
                    }
                }
                InternalForce::Polynomial(p) => {
                    for t in &mut p.terms {
                        t.coefficient *= s3;
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
        }
        Ok(b)
    }
}
