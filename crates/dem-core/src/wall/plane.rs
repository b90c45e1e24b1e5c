//! `kind = "plane"`: the half-space `(x - p) . n >= 0` holds the grains, `p` a point of the
//! plane and `n` its unit normal towards them. Its level set is the signed distance
//! `phi(x) = (x - p - u) . n` for a wall displaced by `u` (docs/physics.md section 4), its
//! gradient `n` everywhere. A plane may be moved by a servo along `n` ([`Servo`]); it is a
//! face of the sample's enclosure when another plane faces it (crate::measure).

use nalgebra::Vector3;
use serde::{Deserialize, Serialize};

use super::{Bound, Geometry, Kind, KindSpec, Servo};
use crate::error::{KeyError, check_direction, check_finite};
use crate::motion::Motion;

/// A plane wall at its initial position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plane {
    /// A point of the plane, `p`.
    pub point: Vector3<f64>,
    /// Unit normal towards the grains, `n`.
    pub normal: Vector3<f64>,
}

/// `[[walls]]` with `kind = "plane"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlaneSpec {
    /// A point of the plane.
    pub point: [f64; 3],
    /// Normal pointing to the grains' side (any length > 0).
    pub normal: [f64; 3],
    /// Prescribed motion.
    pub motion: Option<Motion>,
    /// Servo to a normal stress, instead of a motion.
    pub servo: Option<Servo>,
}

impl Kind for Plane {
    #[inline(always)]
    fn distance(&self, x: &Vector3<f64>, displacement: &Vector3<f64>) -> (f64, Vector3<f64>) {
        (
            (x - self.point - displacement).dot(&self.normal),
            self.normal,
        )
    }

    fn flat(&self) -> bool {
        true
    }

    fn bound(&self, displacement: &Vector3<f64>) -> Bound {
        Bound::Plane {
            point: self.point + displacement,
            normal: self.normal,
        }
    }
}

impl KindSpec for PlaneSpec {
    fn check(&self, key: &str) -> Result<(), KeyError> {
        check_finite(&format!("{key}.point"), &self.point)?;
        check_direction(&format!("{key}.normal"), &self.normal)
    }

    fn geometry(&self) -> Geometry {
        Plane {
            point: Vector3::from(self.point),
            normal: Vector3::from(self.normal).normalize(),
        }
        .into()
    }

    fn motion(&self) -> Option<&Motion> {
        self.motion.as_ref()
    }

    fn servo(&self) -> Option<&Servo> {
        self.servo.as_ref()
    }
}
