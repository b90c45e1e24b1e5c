//! The `rigid` level-set update: the reference level set `phi_0`, whatever the amplitudes.
//! Exact when the grain's level set is never penetrated (it only meets walls, or gives the
//! nodes of its pairs); its derivative is zero and its early-out is the trilinear `phi_0` above the grid's
//! interpolation gap.

use grain::{Cell, LevelSetGrid};
use nalgebra::Point3;

use super::{DeformedLevelSet, EarlyOut, Entry, Evaluation, LevelSetFault, Slope};

/// Its registry entry: `levelset = "rigid"`.
pub const ENTRY: Entry = Entry {
    name: "rigid",
    samples: false,
    build: |shape, _, _| {
        Box::new(Rigid {
            grid: &shape.levelset,
        })
    },
};

/// The reference level set.
pub struct Rigid<'a> {
    /// `phi_0`.
    pub grid: &'a LevelSetGrid,
}

impl DeformedLevelSet for Rigid<'_> {
    fn early_out(&self) -> EarlyOut {
        // The level set is within the gap of its trilinear interpolant.
        let gap = self.grid.interpolation_gap();
        EarlyOut {
            all: gap,
            band: gap,
            band_limit: 0.0,
            stretch: 1.0,
        }
    }

    fn evaluate(
        &self,
        _y: &Point3<f64>,
        _start: &Point3<f64>,
        cell: &Cell,
        _below: f64,
        slope: &mut Slope,
    ) -> Result<Evaluation, LevelSetFault> {
        *slope = Slope::Zero;
        let (phi, grad) = self.grid.sample(&self.grid.located(*cell));
        Ok(Evaluation {
            phi,
            grad,
            material: None,
        })
    }
}
