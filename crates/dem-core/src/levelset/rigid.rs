//! The `rigid` level-set update: the reference level set `phi_0`, whatever the amplitudes.
//! Exact when the grain's level set is never penetrated (it only meets walls, or gives the
//! nodes of its pairs); its derivative is zero and its early-out is `phi_0 >= 0`.

use grain::{LevelSetGrid, Located};
use nalgebra::Point3;

use super::{DeformedLevelSet, EarlyOut, Entry, Evaluation, LevelSetFault};

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
        EarlyOut::default()
    }

    fn evaluate(
        &self,
        _y: &Point3<f64>,
        at: &Located,
        derivative: &mut [f64],
    ) -> Result<Evaluation, LevelSetFault> {
        derivative.iter_mut().for_each(|d| *d = 0.0);
        let phi0 = self.grid.values();
        let (phi, grad) = self.grid.sample(at, |n| phi0[n]);
        Ok(Evaluation {
            phi,
            grad,
            material: None,
        })
    }
}
