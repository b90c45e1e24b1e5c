//! `kind = "cylinder"`: the inside of the infinite circular cylinder of radius `R` about the
//! line through `p` along the unit axis `a` holds the grains. Its level set is the signed
//! distance `phi(x) = R - |r - (r . a) a|`, `r = x - p - u` for a wall displaced by `u`
//! (docs/physics.md section 4), its gradient the inward radial direction. Curved, so the
//! sphere laws do not meet it; with two planes across its axis it encloses the sample's
//! volume `pi R^2 h` (crate::measure).

use nalgebra::Vector3;
use serde::{Deserialize, Serialize};

use super::{Bound, Geometry, Kind, KindSpec};
use crate::error::{KeyError, check_direction, check_finite};
use crate::motion::Motion;

/// A cylinder wall at its initial position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cylinder {
    /// A point of the axis, `p`.
    pub point: Vector3<f64>,
    /// Unit axis, `a`.
    pub axis: Vector3<f64>,
    /// Radius, `R`.
    pub radius: f64,
}

/// `[[walls]]` with `kind = "cylinder"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CylinderSpec {
    /// A point of the axis.
    pub point: [f64; 3],
    /// Axis direction (any length > 0).
    pub axis: [f64; 3],
    /// Radius (length, > 0).
    pub radius: f64,
    /// Prescribed motion.
    pub motion: Option<Motion>,
}

impl Kind for Cylinder {
    #[inline]
    fn distance(&self, x: &Vector3<f64>, displacement: &Vector3<f64>) -> (f64, Vector3<f64>) {
        let r = x - self.point - displacement;
        let radial = r - self.axis * r.dot(&self.axis);
        let rho = radial.norm();
        // On the axis every direction is outward; any unit normal will do there.
        let outward = if rho > 0.0 {
            radial / rho
        } else {
            (self.axis.cross(&Vector3::x()))
                .try_normalize(0.0)
                .unwrap_or(Vector3::y())
        };
        (self.radius - rho, -outward)
    }

    fn flat(&self) -> bool {
        false
    }

    fn bound(&self, _displacement: &Vector3<f64>) -> Bound {
        Bound::Cylinder {
            radius: self.radius,
            axis: self.axis,
        }
    }
}

impl KindSpec for CylinderSpec {
    fn check(&self, key: &str) -> Result<(), KeyError> {
        check_finite(&format!("{key}.point"), &self.point)?;
        if !(self.radius.is_finite() && self.radius > 0.0) {
            return Err(KeyError::new(
                format!("{key}.radius"),
                format!("a radius > 0, got {}", self.radius),
            ));
        }
        check_direction(&format!("{key}.axis"), &self.axis)
    }

    fn geometry(&self) -> Geometry {
        Cylinder {
            point: Vector3::from(self.point),
            axis: Vector3::from(self.axis).normalize(),
            radius: self.radius,
        }
        .into()
    }

    fn motion(&self) -> Option<&Motion> {
        self.motion.as_ref()
    }
}
