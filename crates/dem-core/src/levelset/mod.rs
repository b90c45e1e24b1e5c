//! The level set of a deformable grain at its current amplitudes (docs/physics.md section 5):
//! one module per update, each with its query, its derivative with respect to the amplitudes
//! and its bound for the exact early-out, behind one interface ([`DeformedLevelSet`]). The
//! scene chooses the update per grain ([`crate::modal::LevelSetUpdate`]); [`registry::update`] builds it.
//!
//! - [`rigid`]: the reference level set `phi_0`, unchanged;
//! - [`semi_lagrangian`]: `phi_0` at the material point pulled back exactly (Eqs. 47-48 with
//!   the exact inverse map), normalised to the deformed distance;
//! - [`precomputed`]: the blend of level sets baked at sampled amplitudes (Eqs. 49-50).
//!
//! Every update is evaluated at a local point `y` (the grain's frame, current configuration)
//! and gives `phi(y)`, `grad phi(y)` (local frame) and, inside or within the margin the law
//! loads, `d phi / d eps_a` at fixed `y` ([`Slope`]): the contact energy's derivative that
//! drives the grain whose level set is penetrated (docs/physics.md section 3).

pub mod precomputed;
pub mod registry;
pub mod rigid;
pub mod semi_lagrangian;

use grain::{Cell, PullBackFailure};
use nalgebra::{Point3, Vector3};

use crate::body::Shape;
use crate::modal::ModalShape;
use crate::path::{BAND_CELLS, Configuration, GRID_ROWS, PerMode};

/// One grain's deformed level set at its current amplitudes.
pub trait DeformedLevelSet: Send + Sync {
    /// Where its values may differ from the reference's (the exact early-out).
    fn early_out(&self) -> EarlyOut;

    /// The value and gradient (local frame) at `y`, which lies in the grid's `cell` (an update
    /// that interpolates at `y` locates it, [`grain::LevelSetGrid::located`]; one that pulls
    /// back locates its material point instead, and pays for nothing here); when the
    /// value is below `below`, `slope` is `d phi / d eps_a` at fixed `y`, exact for the
    /// update's interpolant (a contact law that loads nodes within a margin outside the
    /// surface asks with that margin; `f64::NEG_INFINITY` asks for none). `start` is a guess of
    /// the material point under `y` (`y` itself when none is known), where an update that
    /// pulls back starts ([`Evaluation::material`]).
    fn evaluate(
        &self,
        y: &Point3<f64>,
        start: &Point3<f64>,
        cell: &Cell,
        below: f64,
        slope: &mut Slope,
    ) -> Result<Evaluation, LevelSetFault>;
}

/// A query's amplitude derivative `d phi / d eps_a` at fixed `y`, in the form its update gives
/// it ([`DeformedLevelSet::evaluate`]).
// One lives in each side's scratch and is written by every query: boxed, the corners would
// allocate per query.
#[allow(clippy::large_enum_variant)]
#[derive(Default)]
pub enum Slope {
    /// Zero: the rigid update, or a value not below the threshold asked with.
    #[default]
    Zero,
    /// One value per mode.
    Dense(PerMode<f64>),
    /// The grid rows' weights at the 8 corners of a cell, whose map
    /// ([`Configuration::grid_rows_map`]) is the derivative: linear, so that a side's queries
    /// can be added up per grid node before it is taken ([`crate::path::RowWeights`], where
    /// [`Configuration::defers_rows`]).
    Corners {
        /// The cell's corners (grid node indices).
        corners: [usize; 8],
        /// Their rows' weights.
        weights: [[f64; GRID_ROWS]; 8],
    },
}

impl Slope {
    /// The derivative per mode into `out` (one entry per mode of `config`).
    pub fn values(&self, config: &Configuration, out: &mut [f64]) {
        out.fill(0.0);
        match self {
            Slope::Zero => {}
            Slope::Dense(d) => out.copy_from_slice(d),
            Slope::Corners { corners, weights } => {
                config.grid_rows_map(corners.iter().copied().zip(weights), 1.0, out)
            }
        }
    }
}

/// A deformed level set's value at a point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Evaluation {
    /// `phi(y)`.
    pub phi: f64,
    /// `grad phi(y)`, local frame.
    pub grad: Vector3<f64>,
    /// The material point `X` under `y` (`X + u(X) = y`), if the update pulled it back (the
    /// view's material velocity and virtual work reuse it). The point alone, not where it falls
    /// on the grid: every query returns an evaluation, and a [`grain::Located`] in it was copied with
    /// each (1.3 to 1.5 % of the modes bench's pair step in instructions, docs/performance.md,
    /// "A tree over the clusters, and nodes filtered four at a time").
    pub material: Option<Point3<f64>>,
}

/// The exact early-out (docs/physics.md section 5): a level set `phi` with the sign of the
/// deformed value (the value itself for the precomputed update, `phi_0(X)` for the
/// semi-Lagrangian one, whose value is that times a positive factor) differs from the trilinear
/// interpolant `T[phi_0]` of the reference's node values ([`grain::LevelSetGrid::trilinear_value`])
/// by at most `all` everywhere and by at most `band` where `T[phi_0] <= band_limit`. A point
/// with `T[phi_0]` above the bound that applies is outside and needs no query. The bounds
/// include the grid's [`grain::LevelSetGrid::interpolation_gap`]: the level set is the
/// corrected interpolant, `T[phi_0]` the cheap one. Where the value is `phi` times a factor
/// `c` (the semi-Lagrangian update's normal stretch), a value of at least a margin `m > 0`
/// needs `phi >= m / c`: the margin is raised by `stretch`, a bound of `1 / c` (1 where the
/// value is `phi` itself).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EarlyOut {
    /// Bound of `|phi - phi_0|` over the grid.
    pub all: f64,
    /// Bound of `|phi - phi_0|` at points with `phi_0 <= band_limit`.
    pub band: f64,
    /// See `band`.
    pub band_limit: f64,
    /// A bound of `1 / c`, the value's factor's inverse (at least 1 where `c` may fall below 1).
    pub stretch: f64,
}

impl EarlyOut {
    /// Whether a point where the reference's trilinear interpolant is `phi_0` surely has a
    /// level set of at least `margin` (`margin >= 0`, raised by `stretch`; the band's bound
    /// applies where `phi_0` itself is within the band's limit).
    #[inline]
    pub fn outside(&self, phi_0: f64, margin: f64) -> bool {
        let above = phi_0 - margin * self.stretch;
        above >= self.all || (above >= self.band && phi_0 <= self.band_limit)
    }

    /// The largest trilinear `phi_0` at a point whose nodes within `reach` grid spacings (in
    /// the 1-norm) all lie in the band of [`BAND_CELLS`] cells, for a level set with edge
    /// Lipschitz constant `lipschitz` and spacing `h`: the trilinear `phi_0` changes by at most
    /// `L |dx|_1`. A cell's corners are within `3 h` of a point in it, the corrected level
    /// set's stencil (the corners' neighbours) within `4 h`.
    pub fn band_cells_limit(lipschitz: f64, h: f64, reach: f64) -> f64 {
        (BAND_CELLS - reach * lipschitz) * h
    }
}

/// Why a deformed level set cannot be evaluated: the run stops rather than use a guess.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LevelSetFault {
    /// The deformation folds where a query pulled back to: the pull-back has no unique
    /// solution.
    #[error(
        "the semi-Lagrangian level set needs a deformation that does not fold near the surface (|grad u|_2 < 1), but at amplitudes {eps:?} the displacement gradient reaches {gradient:.3} in the grid cell of a query: lower the amplitudes or use levelset = \"precomputed\""
    )]
    Fold {
        /// The amplitudes.
        eps: Vec<f64>,
        /// The largest `|grad u|_2` in the cell.
        gradient: f64,
    },
    /// The deformation compresses the surface's normal by 100 % or more where a query pulled
    /// back to: the normalised level set has no sign there.
    #[error(
        "the semi-Lagrangian level set needs a normal strain above -100 % near the surface, but at amplitudes {eps:?} it reaches {strain:.3} where a query pulled back to: lower the amplitudes or use levelset = \"precomputed\""
    )]
    Crushed {
        /// The amplitudes.
        eps: Vec<f64>,
        /// The normal strain `s` there.
        strain: f64,
    },
    /// A pull-back did not converge.
    #[error("{0}")]
    PullBack(#[from] PullBackFailure),
}

/// The builder of an update: its deformed level set for a grain of shape `shape` (modes
/// `modal`) in configuration `config`.
pub type Build =
    for<'a> fn(&'a Shape, &'a ModalShape, Configuration<'a>) -> Box<dyn DeformedLevelSet + 'a>;

/// One level-set update.
#[derive(Debug)]
pub struct Entry {
    /// The name `modes.levelset` gives.
    pub name: &'static str,
    /// Whether it interpolates the level sets the bundle precomputed at sampled amplitudes
    /// (`levelset-bake --samples`): a bundle without them is refused, and an amplitude beyond
    /// them is an excursion ([`crate::modal::Limit::Samples`]).
    pub samples: bool,
    /// How it is built.
    pub build: Build,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value `c phi` with `c >= 0.9` (a normal strain down to -10 %) against a margin: a point
    /// the early-out passes over has `phi >= T[phi_0] - all`, and `0.9` times that is at least
    /// the margin; the margin alone (a stretch of 1) would pass over points whose value is below
    /// it.
    #[test]
    fn the_early_out_raises_a_margin_by_the_stretch() {
        let (all, margin, c) = (0.05, 0.12, 0.9);
        let early = EarlyOut {
            all,
            band: all,
            band_limit: 0.0,
            stretch: 1.0 / c,
        };
        let mut passed = 0;
        for i in 0..400 {
            let t = 0.1 + 1e-3 * i as f64;
            if early.outside(t, margin) {
                passed += 1;
                assert!(c * (t - all) >= margin * (1.0 - 1e-12), "{t}");
            }
        }
        assert!(passed > 100);
        let plain = EarlyOut {
            stretch: 1.0,
            ..early
        };
        let t = margin + all + 1e-3;
        assert!(plain.outside(t, margin) && c * (t - all) < margin);
        assert!(!early.outside(t, margin));
        // No margin, no raise: the sign is `phi`'s.
        assert!(early.outside(all, 0.0));
    }
}
