//! The `rigid` level-set update: the reference level set `phi_0`, whatever the amplitudes.
//! Exact when the grain's level set is never penetrated (it only meets walls, or gives the
//! nodes of its pairs); its derivative is zero and its early-out is `phi_0 >= 0`.

use grain::Located;
use nalgebra::{Point3, Vector3};

use super::{DeformedLevelSet, EarlyOut, Evaluation, LevelSetFault};

/// The reference level set.
pub struct Rigid;

impl DeformedLevelSet for Rigid {
    fn early_out(&self) -> EarlyOut {
        EarlyOut::default()
    }

    fn evaluate(
        &self,
        _y: &Point3<f64>,
        _at: &Located,
        reference: (f64, Vector3<f64>),
        derivative: &mut [f64],
    ) -> Result<Evaluation, LevelSetFault> {
        derivative.iter_mut().for_each(|d| *d = 0.0);
        Ok(Evaluation {
            phi: reference.0,
            grad: reference.1,
            material: None,
        })
    }
}
