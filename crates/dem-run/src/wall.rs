//! Analytic boundaries with closed-form level sets (docs/physics.md section 4), positive on the side
//! that holds the grains, with prescribed motion (translation only).

use nalgebra::Vector3;
use serde::{Deserialize, Serialize};

use crate::scene::{Motion, WallSpec};

/// A wall's geometry, at its initial position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Geometry {
    /// Half-space `(x - point) . normal >= 0` (unit normal).
    Plane {
        /// A point of the plane.
        point: Vector3<f64>,
        /// Unit normal towards the grains.
        normal: Vector3<f64>,
    },
    /// Inside of the cylinder of `radius` about the line through `point` along unit `axis`.
    Cylinder {
        /// A point of the axis.
        point: Vector3<f64>,
        /// Unit axis.
        axis: Vector3<f64>,
        /// Radius.
        radius: f64,
    },
}

/// A wall: geometry, motion, and its current displacement and velocity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Wall {
    /// Where it started.
    pub geometry: Geometry,
    /// How it moves (none: fixed).
    pub motion: Option<Motion>,
    /// Displacement from its initial position.
    pub displacement: Vector3<f64>,
    /// Velocity over the current step.
    pub velocity: Vector3<f64>,
    /// Force the grains exert on it in the last evaluation (the reaction), global.
    pub force: Vector3<f64>,
}

impl Wall {
    /// A wall from its scene entry.
    pub fn from_spec(spec: &WallSpec) -> Wall {
        let unit = |v: &[f64; 3]| Vector3::from(*v).normalize();
        let (geometry, motion) = match spec {
            WallSpec::Plane {
                point,
                normal,
                motion,
            } => (
                Geometry::Plane {
                    point: Vector3::from(*point),
                    normal: unit(normal),
                },
                motion,
            ),
            WallSpec::Cylinder {
                point,
                axis,
                radius,
                motion,
            } => (
                Geometry::Cylinder {
                    point: Vector3::from(*point),
                    axis: unit(axis),
                    radius: *radius,
                },
                motion,
            ),
        };
        Wall {
            geometry,
            motion: motion.clone(),
            displacement: Vector3::zeros(),
            velocity: Vector3::zeros(),
            force: Vector3::zeros(),
        }
    }

    /// Signed distance of a global point (positive on the grains' side) and the unit normal
    /// pointing to that side (the gradient).
    #[inline]
    pub fn distance(&self, x: &Vector3<f64>) -> (f64, Vector3<f64>) {
        match &self.geometry {
            Geometry::Plane { point, normal } => {
                ((x - point - self.displacement).dot(normal), *normal)
            }
            Geometry::Cylinder {
                point,
                axis,
                radius,
            } => {
                let r = x - point - self.displacement;
                let radial = r - axis * r.dot(axis);
                let rho = radial.norm();
                // On the axis every direction is outward; any unit normal will do there.
                let outward = if rho > 0.0 {
                    radial / rho
                } else {
                    axis.cross(&Vector3::x())
                        .try_normalize(0.0)
                        .unwrap_or(Vector3::y())
                };
                (radius - rho, -outward)
            }
        }
    }

    /// Moves the wall to time `t` (from the start), with `dt` the step just taken.
    pub fn move_to(&mut self, t: f64, dt: f64) {
        if let Some(m) = &self.motion {
            let d = Vector3::from(m.displacement(t));
            self.velocity = (d - self.displacement) / dt;
            self.displacement = d;
        }
    }
}
