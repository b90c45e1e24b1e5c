//! The `semi-lagrangian` level-set update (paper Eqs. 47-48 with the exact inverse map, and
//! normalised to a distance; docs/physics.md section 5): the deformed grain's level set at a
//! local point `y` is the reference level set at the material point `X` that the deformation
//! brings to `y`, divided by the stretch of its gradient,
//!
//! `psi(y) = c phi_0(X)`, `c = |g0| / |G|`, `g0 = grad phi_0(X)`, `G = J^-T g0`,
//! `X + u(X) = y`, `J = I + grad u(X)`, `u = eps_a Phi_a` (the grid's mode field, trilinear),
//!
//! with `X` from Newton's method ([`grain::LevelSetGrid::pull_back`], to `1e-12` of the grid
//! spacing). The paper pulls back with `y - u(y)`, the mode taken at the current point instead
//! of the material point: exact only to first order in `grad u`, it put the pole of a
//! contact-flattened ellipsoid 51 um behind on a 0.5 mm grid and its contact force 50 % high.
//! The normalisation: `phi_0(X)` is a distance measured in the reference configuration, and a
//! strain `e` normal to the surface makes it `1 / (1 + e)` times the deformed distance (the
//! contact force, `k_n` times depth times `|grad|`, then `1 / (1 + e)^2` times the FEM
//! penalty's: +3 % for a grain loader on an ellipsoid squeezed 10 %). `G` is normal to the
//! deformed surface and `phi_0(X) / |G|` is the deformed distance to first order, so `psi` is
//! exact to second order in the depth; `c = 1` where the grain is undeformed.
//!
//! - value: `psi`; zero set and sign those of `phi_0(X)` (`c > 0`);
//! - gradient, exact for the interpolants: `grad psi = J^-T p`, `dpsi = p . dX + (psi / |G|)
//!   G . (dJ w)` for `dJ` at fixed `X`, with `w = J^-1 G / |G|`,
//!   `p = c g0 + (phi_0 / |G|) (H0 g0 / |g0| - c H0 w + c q)`, `H0` the Hessian of `phi_0` and
//!   `q_k = G_i (d^2 u_i / dX_j dX_k) w_j` (the trilinear interpolants' mixed second
//!   derivatives in `X`'s cell, [`grain::GridSpec::mixed_derivatives`]);
//! - derivative at fixed `y`: `dX/d eps_a = -J^-1 Phi_a(X)` (differentiate `X + u(X) = y`) and
//!   `dJ/d eps_a = grad Phi_a(X)` give `d psi / d eps_a = -grad psi . Phi_a(X) + (psi / |G|) G .
//!   (grad Phi_a(X) w)`, `Phi_a` the tangent `du/d eps_a` of a path mode ([`crate::path`]):
//!   the contact energy `k_n psi^2 / 2` and its forces are exactly consistent (the ledger);
//! - bound (the early-out decides the sign): `|phi_0(X) - phi_0(y)| <= L |u(X)|_1 <= L max_n
//!   |u(c_n)|_1` (`L` the reference's edge Lipschitz constant), and the band's maximum where
//!   the cell of `X` lies in the band: for `phi_0(y)` up to the band's limit less that bound;
//! - convergence: the pull-back converges where the deformation does not fold,
//!   `|grad u|_2 < 1`, i.e. strains well below 100 %. A bound over the cells that reach the
//!   grain, from the mode fields ([`crate::path::FieldBounds::fold`]), vouches for every query
//!   when it is below 1; otherwise each query checks the cell its material point lies in,
//!   exactly (the largest spectral norm of the cell's 8 corner Jacobians,
//!   [`grain::LevelSetGrid::cell_gradient_norm`]). A cell that folds, or a pull-back that does
//!   not converge, fails the query and the run stops naming the grain ([`LevelSetFault`]).
//!   The cell check is local: it does not see a fold in another cell that would bring a second
//!   material point to the same `y` (the band's bound below 1 does).
//!
//! Cost: two to four evaluations of the mode field (8 node reads each), one of `phi_0` and the
//! second derivatives in one cell (8 more reads each of `phi_0` and the field), and inside the
//! grain one evaluation of each mode's tangent field.

use grain::{LevelSetGrid, Located};
use nalgebra::{Point3, Vector3};

use super::{DeformedLevelSet, EarlyOut, Entry, Evaluation, LevelSetFault};
use crate::body::Shape;
use crate::path::Configuration;

/// The semi-Lagrangian level set of a grain in a configuration.
pub struct SemiLagrangian<'a> {
    grid: &'a LevelSetGrid,
    config: Configuration<'a>,
    early: EarlyOut,
    /// The bound of `|grad u|_2` near the grain.
    fold: f64,
}

/// Its registry entry: `levelset = "semi-lagrangian"`.
pub const ENTRY: Entry = Entry {
    name: "semi-lagrangian",
    samples: false,
    build: |shape, _, config| Box::new(SemiLagrangian::new(shape, config)),
};

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
        let grid = self.grid;
        let u = |n| self.config.grid_displacement(n);
        let back = grid.pull_back(y, u)?;
        let at = &back.at;
        // Where the configuration's bound cannot vouch for the whole band, the cell the point
        // pulled back into is checked exactly.
        if self.fold >= 1.0 || self.fold.is_nan() {
            let gradient = grid.cell_gradient_norm(at, u);
            if gradient >= 1.0 || gradient.is_nan() {
                return Err(LevelSetFault::Fold {
                    eps: self.config.eps.to_vec(),
                    gradient,
                });
            }
        }
        let phi0 = grid.values();
        let (p0, g0, [hxy, hxz, hyz]) = grid.sample_with_mixed(at, |n| phi0[n]);
        let j_inv = back.inverse_jacobian;
        // `G = J^-T g0`: the gradient of `phi_0(X(y))`, normal to the deformed surface.
        let big_g = j_inv.transpose() * g0;
        let (g0n, gn) = (g0.norm(), big_g.norm());
        if gn == 0.0 {
            // A flat spot of phi_0 (no normal): as the rigid update, no gradient.
            return Ok(Evaluation {
                phi: p0,
                grad: Vector3::zeros(),
                material: Some(back.at),
            });
        }
        // psi = c phi_0(X), c = |g0| / |G|: the deformed distance to first order.
        let c = g0n / gn;
        let phi = c * p0;
        // Its exact gradient, `J^-T p` with p = dpsi/dX (module docs): the second derivatives
        // of the trilinear phi_0 and u in X's cell enter through c.
        let w = j_inv * (big_g / gn);
        let hessian = |v: Vector3<f64>| {
            Vector3::new(
                hxy * v.y + hxz * v.z,
                hxy * v.x + hyz * v.z,
                hxz * v.x + hyz * v.y,
            )
        };
        let [mxy, mxz, myz] = back.mixed;
        let (axy, axz, ayz) = (big_g.dot(&mxy), big_g.dot(&mxz), big_g.dot(&myz));
        let q = Vector3::new(
            w.y * axy + w.z * axz,
            w.x * axy + w.z * ayz,
            w.x * axz + w.y * ayz,
        );
        let g0_unit = if g0n > 0.0 { g0 / g0n } else { g0 };
        let p = g0 * c + (hessian(g0_unit) - hessian(w) * c + q * c) * (p0 / gn);
        let grad = j_inv.transpose() * p;
        if phi < 0.0 {
            // `d_a = -grad . t_a + stretch G . (grad t_a) w`, `t_a = du/d eps_a` at X: linear
            // in t_a's corner values, `sum_c t_a(n_c) . v_c`.
            let stretch = p0 * c / gn;
            match grid.weight_gradients(at) {
                Some(dw) => {
                    let weights = at.weights();
                    let v = std::array::from_fn(|i| {
                        big_g * (stretch * dw[i].dot(&w)) - grad * weights[i]
                    });
                    self.config.grid_tangents_dot(&at.corners, &v, derivative);
                }
                // On a grid plane: the tie rule's gradient, mode by mode.
                None => {
                    for (a, d) in derivative.iter_mut().enumerate() {
                        let (tangent, tangent_grad) =
                            grid.displacement(at, |n| self.config.grid_tangent(a, n));
                        *d = -grad.dot(&tangent) + stretch * big_g.dot(&(tangent_grad * w));
                    }
                }
            }
        }
        Ok(Evaluation {
            phi,
            grad,
            material: Some(back.at),
        })
    }
}
