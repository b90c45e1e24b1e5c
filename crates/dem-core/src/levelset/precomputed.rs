//! The `precomputed` level-set update (paper Eqs. 49-50; docs/physics.md section 5): level sets
//! baked at sampled amplitudes of each mode (levelset-bake `--samples`), blended at run time.
//!
//! Per mode, the hat-function blend `phi^(a)(eps_a)` of the two samples that bracket `eps_a`
//! (beyond the outermost samples, the straight line through the last two), combined as
//! `phi = phi_0 + sum_a (phi^(a)(eps_a) - phi^(a)(0))`: the reference is counted once (the
//! completion of Eq. 50 for several modes) and the increments come from samples computed alike:
//! `phi^(a)(0)` is the bundle's sample of the undeformed surface (levelset-bake adds it), which
//! differs from an exact reference `phi_0` (a primitive's) by the facets' chord error; without
//! it, `phi_0` serves. The blend of node values is interpolated at `y` as every level set is
//! ([`LevelSetGrid::sample`]: trilinear, corrected by second differences): the samples carry
//! their increments' second differences node by node ([`Sample::lanes`], built when a grain
//! first uses this update), blended with them,
//! and added to the reference's stored ones ([`LevelSetGrid::sample_offset`]; linear, so the
//! same interpolant as the second differences of the blend, to rounding).
//!
//! - derivative at fixed `y`: the difference quotient of the bracketing samples,
//!   `I[phi^(a)_hi - phi^(a)_lo] / (eps_hi - eps_lo)` with `I` that interpolant, exact for the
//!   blend;
//! - bound: the interpolant of node values bounded by `M` is bounded by `5/2 M` (the trilinear
//!   part by `M`, the correction by `3/8` of the largest second difference, `4 M`), with `M =
//!   sum_a max_n |phi^(a)(eps_a) - phi^(a)(0)|` over the grid, or over the band of nodes with
//!   `phi_0 <= 5 h` for points whose stencil (within `4 h`) lies in it; plus the grid's
//!   interpolation gap, the early-out deciding on the trilinear `phi_0`.
//!
//! Cost: the reference's query ([`LevelSetGrid::sample`], 8 records of four lanes) and 16
//! records per mode; 16 more per mode for the derivative. Memory: four numbers per grid node
//! and sample, beside the sample's values.

use grain::{Cell, Lanes, LevelSetGrid};
use nalgebra::Point3;

use super::{DeformedLevelSet, EarlyOut, Entry, Evaluation, LevelSetFault, Slope};
use crate::body::Shape;
use crate::lanes::{InLanes, Quad, Wide, in_unit};
use crate::modal::{ModalShape, Sample};
use crate::path::{Bound, PerMode};

/// The precomputed level set of a grain at its amplitudes.
pub struct Precomputed<'a> {
    grid: &'a LevelSetGrid,
    /// Per mode (inline for up to four: built per grain and step).
    brackets: PerMode<Bracket<'a>>,
    early: EarlyOut,
}

/// The increment of one mode's blend of its two bracketing samples: `lo + t (hi - lo)` with
/// `lo` and `hi` the samples' increments from the sample at 0 ([`Sample::lanes`]), derivative
/// `(hi - lo) / (eps_hi - eps_lo)`.
struct Bracket<'a> {
    lo: &'a [Lanes],
    hi: &'a [Lanes],
    t: f64,
    per_amplitude: f64,
}

/// Its registry entry: `levelset = "precomputed"`.
pub const ENTRY: Entry = Entry {
    name: "precomputed",
    samples: true,
    build: |shape, modal, config| Box::new(Precomputed::new(shape, modal, config.eps)),
};

impl<'a> Precomputed<'a> {
    /// The blend of a grain of shape `shape` at amplitudes `eps`.
    pub fn new(shape: &'a Shape, modal: &'a ModalShape, eps: &[f64]) -> Self {
        let mut shift = Bound::default();
        let brackets = modal
            .samples
            .iter()
            .zip(eps)
            .map(|(samples, &e)| {
                let (b, bound) = bracket(samples, e, &shape.levelset);
                shift.all += bound.all;
                shift.band += bound.band;
                b
            })
            .collect();
        let h = shape.levelset.spec().spacing;
        let gap = shape.levelset.interpolation_gap();
        Precomputed {
            grid: &shape.levelset,
            brackets,
            early: EarlyOut {
                all: 2.5 * shift.all + gap,
                band: 2.5 * shift.band + gap,
                band_limit: EarlyOut::band_cells_limit(shape.lipschitz, h, 4.0),
                stretch: 1.0,
            },
        }
    }
}

impl DeformedLevelSet for Precomputed<'_> {
    fn early_out(&self) -> EarlyOut {
        self.early
    }

    fn evaluate(
        &self,
        _y: &Point3<f64>,
        _start: &Point3<f64>,
        cell: &Cell,
        below: f64,
        slope: &mut Slope,
    ) -> Result<Evaluation, LevelSetFault> {
        // In the processor's vector unit, as the semi-Lagrangian query: called through the
        // trait object, the query is compiled on its own, for the baseline otherwise.
        in_unit!(Wide::detect().unit(), |q| self
            .evaluate_in(q, cell, below, slope))
    }
}

impl Precomputed<'_> {
    /// [`DeformedLevelSet::evaluate`] with a cell's lanes in the register of `q` (the same
    /// bits in any unit, [`crate::lanes`]).
    #[inline(always)]
    fn evaluate_in<Q: Quad>(
        &self,
        q: Q,
        cell: &Cell,
        below: f64,
        slope: &mut Slope,
    ) -> Result<Evaluation, LevelSetFault> {
        let at = &self.grid.located(*cell);
        let (phi, grad) = self.grid.sample_offset(
            at,
            #[inline(always)]
            |n| {
                let mut offset = InLanes::new(q, Lanes([-0.0; 4]));
                for b in &self.brackets {
                    let lo = InLanes::new(q, b.lo[n]);
                    offset = offset + (lo + (InLanes::new(q, b.hi[n]) - lo) * b.t);
                }
                offset
            },
        );
        if phi < below {
            if !matches!(slope, Slope::Dense(_)) {
                *slope = Slope::Dense(PerMode::new());
            }
            let Slope::Dense(values) = slope else {
                unreachable!("the slope was made dense")
            };
            values.clear();
            // A loop, not an iterator collected: the collection, out of line, would be
            // compiled for the baseline and call the vector unit's operations one by one.
            for b in &self.brackets {
                let lanes = |n: usize| InLanes::new(q, b.hi[n]) - InLanes::new(q, b.lo[n]);
                values.push(b.per_amplitude * self.grid.interpolate_lanes(at, lanes));
            }
        } else {
            *slope = Slope::Zero;
        }
        Ok(Evaluation {
            phi,
            grad,
            material: None,
        })
    }
}

/// The blend of the samples bracketing `eps` and the bound of its increment.
fn bracket<'a>(samples: &'a [Sample], eps: f64, grid: &'a LevelSetGrid) -> (Bracket<'a>, Bound) {
    let n = samples.len();
    let i = samples
        .partition_point(|s| s.amplitude <= eps)
        .clamp(1, n - 1)
        - 1;
    let (lo, hi) = (&samples[i], &samples[i + 1]);
    let width = hi.amplitude - lo.amplitude;
    let t = (eps - lo.amplitude) / width;
    let bound = Bound {
        all: (1.0 - t).abs() * lo.shift.all + t.abs() * hi.shift.all,
        band: (1.0 - t).abs() * lo.shift.band + t.abs() * hi.shift.band,
    };
    (
        Bracket {
            lo: lo.lanes(grid),
            hi: hi.lanes(grid),
            t,
            per_amplitude: 1.0 / width,
        },
        bound,
    )
}
