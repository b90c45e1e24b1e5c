//! The `semi-lagrangian` level-set update (paper Eqs. 47-48 with the exact inverse map, and
//! normalised to a distance; docs/physics.md section 5): the deformed grain's level set at a
//! local point `y` is the reference level set at the material point `X` that the deformation
//! brings to `y`, times the surface's normal stretch there,
//!
//! `psi(y) = c(X) phi_0(X)`, `c = 1 + sum_j k_j s_j(X)`, `X + u(X) = y`, `J = I + grad u(X)`,
//! `u = sum_j k_j v_j` (the grid's mode fields, trilinear),
//!
//! with `phi_0(X)` the reference's corrected interpolant ([`grain::LevelSetGrid::sample`]) with
//! the field's own interpolation error taken out: the trilinear `u` errs by `1/2 sum_b t_b (1 -
//! t_b) T[Delta_b u]`, which moves `phi_0(X)` by `g0` dotted with it, so the reference's second
//! differences are shifted by `K_b = sum_j k_j grad phi_0 . Delta_b v_j` at the corners
//! ([`grain::LevelSetGrid::sample_shifted`], [`crate::path::gradient_second_differences`]):
//! exact to third order in the spacing and first order in the strain (where a mode flattens a
//! curved surface the two errors cancel, and correcting `phi_0` alone would break that), and
//! `X` from Newton's method ([`grain::LevelSetGrid::pull_back_from`], to `1e-9` of the grid
//! spacing, started at the caller's guess: the narrow phase gives `y` less the displacement its
//! previous query found, [`crate::law::surface::Scratch`]), `v_j` the field columns of [`crate::path::Paths`] (each linear mode's `Phi_a`, a
//! path's points `u_p`) with coefficients `k_j` (the amplitudes; a path's weights `c_p(eps)`),
//! and `s_j` their normal strains `n^T (grad v_j) n` at the grid nodes
//! ([`crate::path::normal_strain`]), interpolated trilinearly. The paper pulls back with
//! `y - u(y)`, the mode taken at the current point instead of the material point: exact only
//! to first order in `grad u`, it put the pole of a contact-flattened ellipsoid 51 um behind on
//! a 0.5 mm grid and its contact force 50 % high.
//! The normalisation: `phi_0(X)` is a distance measured in the reference configuration, and a
//! strain `e` normal to the surface makes it `1 / (1 + e)` times the deformed distance; `c` is
//! `1 + e`, to first order in the strain the stretch `|g0| / |J^-T g0|` of the gradient `g0 =
//! grad phi_0(X)` (exact for a dilation). That stretch taken from the interpolants themselves
//! jumps across the cell faces with their gradients, and so did `psi` (5.3e-4 on the flattening
//! mode of dem-run's tests, within 0.03 of its surface): the nodal strains interpolated make
//! `psi` continuous in `y` and in the amplitudes.
//!
//! - value: `psi`; zero set and sign those of `phi_0(X)` (`c > 0`; `c <= 0`, a normal strain
//!   of -100 %, is refused: [`LevelSetFault::Crushed`]); outside the grid box the strain
//!   continues by its value at the box, as the fields do;
//! - gradient, exact for the interpolants: `grad psi = J^-T (c g0 + phi_0 grad c)`;
//! - derivative at fixed `y`: `dX/d eps_a = -J^-1 Phi_a(X)` (differentiate `X + u(X) = y`) and
//!   `dc/d eps_a = s_a(X)` (the strain of mode `a`'s current tangent `Phi_a = du/d eps_a`,
//!   [`crate::path`]) and the shift's `K_a` give `d psi / d eps_a = -grad psi . Phi_a(X) +
//!   phi_0(X) s_a(X) + c/2 sum_b t_b (1 - t_b) T[K_a,b](X)`: the contact energy `k_n psi^2 / 2`
//!   and its forces are exactly consistent (the ledger);
//! - bound (the early-out decides the sign, on the trilinear `T[phi_0]`): `|phi_0(X) -
//!   T[phi_0](y)| <= g + L |u(X)|_1 <= g + L max_n |u(c_n)|_1` (`L` the reference's edge
//!   Lipschitz constant, `g` the grid's interpolation gap between `phi_0` and `T[phi_0]` plus
//!   `3/8` of a bound of the shift's components, [`crate::path::Configuration::curvature_bound`]),
//!   and the band's maximum where the cell of `X` lies in the band: for `T[phi_0](y)` up to the
//!   band's limit less `L max_n |u(c_n)|_1`; against a margin `m > 0`, `psi >= m` needs
//!   `phi_0(X) >= m / c`, and `c >= 1 - max |s|` (the strains' bound,
//!   [`crate::path::Configuration::strain_bound`]) raises the margin ([`EarlyOut`]'s `stretch`);
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
//! Cost: two evaluations of the mode field, rarely more (8 node reads for the first; iterates in
//! the same cell reuse them; from the narrow phase's guess on the 20-mode pair of
//! `cargo bench -p dem-run --bench modes` 2.007 on average in its timed steps, docs/performance.md,
//! "The pull-back's tolerance"), the normal strain carried in the field's fourth lane (the same
//! reads and the same interpolation, [`grain::LevelSetGrid::pull_back_from`]), one of `phi_0`
//! (8 values, 8 stored triples of second differences and 8 shifts, each a combination of the
//! columns as a displacement is, interpolated together in four lanes; twice that per tied axis),
//! and inside the grain (or within the margin a law loads, [`DeformedLevelSet::evaluate`]) one
//! more pass over the cell's corners (each mode's tangent, strain and shift).
//!
//! The query is compiled twice and chosen at run time: for AVX2 (x86-64-v3) where the
//! processor has it, else for the baseline, with the same bits (the lanes are the same
//! operations, [`crate::lanes`]; docs/performance.md, "The semi-Lagrangian query in AVX2");
//! a cell's four-lane interpolations (the pull-back's field, the shifted sample) run in the
//! unit's registers ([`crate::lanes::InLanes`]; "The cell's interpolations in the vector unit").

use grain::{Cell, LevelSetGrid};
use nalgebra::Point3;

use super::{DeformedLevelSet, EarlyOut, Entry, Evaluation, LevelSetFault, Slope};
use crate::body::Shape;
use crate::lanes::{InLanes, Quad, in_unit};
use crate::path::{Configuration, GridNodes};

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
        // `|T[phi_0](X) - T[phi_0](y)| <= L |u|_1`, and the level set is within the gap of
        // `T[phi_0]` at `X`.
        let (all, band) = (l * bounds.grid.all, l * bounds.grid.band);
        // The correction's two parts: the reference's, and the displacement's, at most `3/8`
        // of its largest second difference.
        let gap = shape.levelset.interpolation_gap() + 0.375 * config.curvature_bound();
        SemiLagrangian {
            grid: &shape.levelset,
            early: EarlyOut {
                all: all + gap,
                band: band + gap,
                band_limit: EarlyOut::band_cells_limit(l, h, 3.0) - all,
                // `c >= 1 - max |s|`; at a bound of 100 % nothing is left out (a query with
                // `c <= 0` is refused).
                stretch: match 1.0 - config.strain_bound() {
                    c if c > 0.0 => 1.0 / c,
                    _ => f64::MAX,
                },
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
        start: &Point3<f64>,
        _cell: &Cell,
        below: f64,
        slope: &mut Slope,
    ) -> Result<Evaluation, LevelSetFault> {
        // The memo first: the thread-local's access is a function of the standard library,
        // compiled for the baseline, and the query inside it would be too.
        (self.config).with_grid_nodes(|nodes| {
            in_unit!(self.config.wide().unit(), |q| self
                .evaluate_with(q, nodes, y, start, below, slope))
        })
    }
}

impl SemiLagrangian<'_> {
    /// [`DeformedLevelSet::evaluate`] with the thread's memo of grid nodes at hand. Inlined
    /// into its one caller: a call returns the evaluation through memory (docs/performance.md,
    /// "The column sums in explicit lanes").
    #[inline(always)]
    fn evaluate_with<Q: Quad>(
        &self,
        q: Q,
        nodes: &GridNodes,
        y: &Point3<f64>,
        start: &Point3<f64>,
        below: f64,
        slope: &mut Slope,
    ) -> Result<Evaluation, LevelSetFault> {
        let grid = self.grid;
        // The displacement, and the normal strain carried along in its fourth lane.
        let back = grid.pull_back_from(y, start, |n| {
            InLanes::new(q, nodes.displacement_and_strain(n))
        })?;
        let at = &back.at;
        // Where the configuration's bound cannot vouch for the whole band, the cell the point
        // pulled back into is checked exactly.
        if self.fold >= 1.0 || self.fold.is_nan() {
            let gradient = grid.cell_gradient_norm(at, |n| nodes.displacement(n));
            if gradient >= 1.0 || gradient.is_nan() {
                return Err(LevelSetFault::Fold {
                    eps: self.config.eps.to_vec(),
                    gradient,
                });
            }
        }
        // phi_0(X) with the trilinear displacement's own error taken out (module docs).
        let unit = InLanes::new(q, grain::Lanes::default());
        let (p0, g0) = grid.sample_shifted(at, unit, |n| nodes.curvature(n));
        // psi = c phi_0(X), c = 1 + s(X): the normal strain, interpolated from the grid nodes
        // (module docs).
        // Outside the box the strain, like the fields, continues by its value at the box
        // (constant along the clamped axes).
        let (strain, strain_gradient) = (back.carried, back.carried_gradient);
        let c = 1.0 + strain;
        // A normal strain of -100 %: the surface has been crushed onto itself.
        if c.is_nan() || c <= 0.0 {
            return Err(LevelSetFault::Crushed {
                eps: self.config.eps.to_vec(),
                strain,
            });
        }
        let phi = c * p0;
        // Its exact gradient, `J^-T p` with `p = dpsi/dX` (module docs).
        let grad = back.inverse_jacobian.transpose() * (g0 * c + strain_gradient * p0);
        if phi < below {
            // `d_a = -grad . t_a(X) + phi_0(X) s_a(X) + c/2 sum_b t_b (1 - t_b) T[K_a,b](X)`:
            // one linear map of the corner values of each mode's tangent `t_a`, strain `s_a`
            // and shift `K_a`, given by its weights and taken where the slope is used.
            let q = at.t.map(|t| 0.5 * c * t * (1.0 - t));
            // A loop, not `map`: its closure was called, not inlined (docs/performance.md,
            // "The column sums in explicit lanes").
            let mut weights = [[0.0; 7]; 8];
            for (out, w) in weights.iter_mut().zip(at.weights()) {
                let v = -grad * w;
                *out = [v.x, v.y, v.z, p0 * w, q[0] * w, q[1] * w, q[2] * w];
            }
            *slope = Slope::Corners {
                corners: at.corners,
                weights,
            };
        } else {
            *slope = Slope::Zero;
        }
        Ok(Evaluation {
            phi,
            grad,
            material: Some(back.point),
        })
    }
}
