//! The `semi-lagrangian` level-set update (paper Eqs. 47-48 with the exact inverse map;
//! docs/physics.md section 5): the deformed grain's level set at a local point `y` is the
//! reference level set at the material point `X` that the deformation brings to `y`,
//!
//! `phi(y) = phi_0(X)`, `X + u(X) = y`, `u = eps_a Phi_a` (the grid's mode field, trilinear),
//!
//! solved by Newton's method ([`grain::LevelSetGrid::pull_back`], to `1e-12` of the grid
//! spacing). The paper pulls back with `y - u(y)`, the mode taken at the current point instead
//! of the material point: exact only to first order in `grad u`, it put the pole of a
//! contact-flattened ellipsoid 51 um behind on a 0.5 mm grid and its contact force 50 % high.
//!
//! - gradient: `grad phi(y) = J^-T grad phi_0(X)`, `J = I + grad u(X)`;
//! - derivative at fixed `y`: `d phi / d eps_a = -grad phi(y) . Phi_a(X)` (differentiate
//!   `X + u(X) = y`: `dX/d eps_a = -J^-1 Phi_a(X)`; `Phi_a` the tangent `du/d eps_a` of a
//!   path mode, [`crate::path`]). The contact energy's derivative is then the
//!   virtual work of the contact force at the material point: the exact and the virtual-work
//!   forms of docs/physics.md section 3 coincide;
//! - bound: `|phi(y) - phi_0(y)| = |phi_0(X) - phi_0(y)| <= L |u(X)|_1 <= L max_n |u(c_n)|_1`
//!   (`L` the reference's edge Lipschitz constant), and the band's maximum where the cell of `X`
//!   lies in the band: for `phi_0(y)` up to the band's limit less that bound;
//! - convergence: the pull-back converges where the deformation does not fold,
//!   `|grad u|_inf < 1` over the cells that reach the grain (bounded from the mode fields,
//!   [`crate::path::FieldBounds::fold`]), i.e. strains well below 100 %. Beyond it, or if a
//!   pull-back does not converge, the query fails and the run stops naming the grain
//!   ([`LevelSetFault`]).
//!
//! Cost: two to four evaluations of the mode field (8 node reads each) and one of `phi_0`.

use grain::{LevelSetGrid, Located};
use nalgebra::Point3;

use super::{DeformedLevelSet, EarlyOut, Evaluation, LevelSetFault};
use crate::body::Shape;
use crate::modal::PerMode;
use crate::path::Configuration;

/// The semi-Lagrangian level set of a grain in a configuration.
pub struct SemiLagrangian<'a> {
    grid: &'a LevelSetGrid,
    config: Configuration<'a>,
    early: EarlyOut,
    /// The bound of `|grad u|_inf` near the grain.
    fold: f64,
}

impl<'a> SemiLagrangian<'a> {
    /// The update of a grain of shape `shape` in configuration `config`.
    pub fn new(shape: &'a Shape, config: Configuration<'a>) -> Self {
        let l = shape.lipschitz;
        let h = shape.levelset.spec().spacing;
        let bounds = config.bounds();
        let (all, band) = (l * bounds.grid.all, l * bounds.grid.band);
        SemiLagrangian {
            grid: &shape.levelset,
            early: EarlyOut {
                all,
                band,
                band_limit: EarlyOut::band_cells_limit(l, h) - all,
            },
            fold: bounds.fold,
            config,
        }
    }
}

impl DeformedLevelSet for SemiLagrangian<'_> {
    fn early_out(&self) -> EarlyOut {
        self.early
    }

    fn evaluate(
        &self,
        y: &Point3<f64>,
        _at: &Located,
        derivative: &mut [f64],
    ) -> Result<Evaluation, LevelSetFault> {
        if self.fold >= 1.0 {
            return Err(LevelSetFault::Fold {
                eps: self.config.eps.to_vec(),
                gradient: self.fold,
            });
        }
        let back = self
            .grid
            .pull_back(y, |n| self.config.grid_displacement(n))?;
        let phi0 = self.grid.values();
        let (phi, g0) = self.grid.sample(&back.at, |n| phi0[n]);
        let grad = back.inverse_jacobian.transpose() * g0;
        if phi < 0.0 {
            let mut modes = PerMode::new();
            self.config.grid_tangents_at(&back.at, &mut modes);
            for (d, m) in derivative.iter_mut().zip(&modes) {
                *d = -grad.dot(m);
            }
        }
        Ok(Evaluation {
            phi,
            grad,
            material: Some(back.at),
        })
    }
}
