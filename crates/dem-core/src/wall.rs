//! Analytic boundaries with closed-form level sets (docs/physics.md section 4), positive on the side
//! that holds the grains, with prescribed motion (translation only), or servo-controlled to a
//! normal stress ([`Servo`], plane walls).

use nalgebra::Vector3;
use serde::{Deserialize, Serialize};

use crate::body::Body;
use crate::error::KeyError;
use crate::motion::Motion;

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
    /// Its servo (instead of a motion).
    #[serde(default)]
    pub servo: Option<Servo>,
    /// The summed normal stiffness of its contacts in the last evaluation (force per length).
    #[serde(default)]
    pub stiffness: f64,
}

/// `servo = { pressure = 1e5, max_speed = 0.01, gain = 0.5 }` on a plane wall: the wall moves
/// along its normal so that the grains press on it with `pressure` (compression positive, force
/// per area) over its face's area `A` (`area`, or the sample's volume over the gap to the
/// facing plane, docs/experiments.md section 3). Each step, from the last evaluation's force `F`
/// (the grains' push `F_n = -F . n`) and the summed normal stiffness `K` of the wall's
/// contacts, the wall moves along `n` by
///
/// `du = g (pressure A - F_n) / K`, capped at `max_speed dt` either way,
///
/// and at `max_speed` towards the grains while it touches none (YADE's TriaxialStressController,
/// without its velocity memory). With a stiffness measured each step, `g < 1` closes the error
/// by the factor `1 - g` per step in quasi-static loading; the cap keeps the wall's speed below
/// what the grains can follow.
///
/// A target the grains cannot carry stops the run ([`ServoFault`]): the wall is then driven
/// through the grains (past a grain's centre) or onto its facing wall (the walls enclose no
/// volume, and its face has no area).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Servo {
    /// Target normal stress on the wall, `>= 0` (compression positive).
    pub pressure: f64,
    /// The wall's largest speed (length per time), `> 0`.
    pub max_speed: f64,
    /// The gain `g`, in `(0, 1]`.
    #[serde(default = "half")]
    pub gain: f64,
    /// The face's area; default: the sample's volume over the gap to the facing wall.
    pub area: Option<f64>,
}

fn half() -> f64 {
    0.5
}

/// Refuses a servo's target stress (a wall's, or a periodic cell's on one axis; `key` names
/// it) that is not a finite compression or zero: the contact laws only push (a node inside the
/// other grain's level set is pushed out, docs/physics.md section 4), so a sample of
/// cohesionless grains carries no tension, and a servo that asks for one opens its wall or its
/// cell without end.
pub fn check_pressure(pressure: f64, key: String) -> Result<(), KeyError> {
    if pressure.is_finite() && pressure >= 0.0 {
        return Ok(());
    }
    Err(KeyError::new(
        key,
        format!(
            "a stress >= 0 (compression positive): the contacts are cohesionless and carry no tension, got {pressure}"
        ),
    ))
}

/// A servo wall that cannot reach its target (docs/experiments.md section 3): the run stops.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ServoFault {
    /// The wall was driven past a grain's centre: the grains cannot carry the target (an
    /// overlap as deep as a grain is no contact).
    #[error(
        "walls[{wall}].servo: its target pressure {pressure:e} is out of reach: the wall was driven through the grains, {depth:e} past the centre of grain {grain}, and they still do not carry it; a lower pressure, or stiffer contacts"
    )]
    ThroughGrains {
        /// The wall (its index in the scene).
        wall: usize,
        /// Its target.
        pressure: f64,
        /// The grain (its index in the scene's order).
        grain: usize,
        /// How far behind the wall the grain's centre is.
        depth: f64,
    },
    /// The walls no longer enclose a volume whose face the wall is (it, or another wall, met
    /// its facing wall), and the servo has no `area` of its own.
    #[error(
        "walls[{wall}].servo: its target pressure {pressure:e} is out of reach: the walls no longer enclose a volume whose face this wall is (a wall met the wall facing it), so its face has no area"
    )]
    NoFace {
        /// The wall (its index in the scene).
        wall: usize,
        /// Its target.
        pressure: f64,
    },
}

/// The first servo wall of `walls` driven past the centre of one of `bodies` (global ids
/// `ids`), if any ([`ServoFault::ThroughGrains`]). The scene places every centre on the walls'
/// insides ([`behind_wall`]).
pub fn driven_through(walls: &[Wall], bodies: &[Body], ids: &[u32]) -> Option<ServoFault> {
    walls.iter().enumerate().find_map(|(w, wall)| {
        let servo = wall.servo.as_ref()?;
        bodies.iter().zip(ids).find_map(|(b, &id)| {
            let (d, _) = wall.distance(&b.position);
            (d <= 0.0).then_some(ServoFault::ThroughGrains {
                wall: w,
                pressure: servo.pressure,
                grain: id as usize,
                depth: -d,
            })
        })
    })
}

impl Servo {
    /// The checks of its keys (`key` names it).
    pub fn check(&self, key: &str) -> Result<(), KeyError> {
        let fail = |k: &str, m: String| Err(KeyError::new(format!("{key}.{k}"), m));
        check_pressure(self.pressure, format!("{key}.pressure"))?;
        if !(self.max_speed.is_finite() && self.max_speed > 0.0) {
            return fail("max_speed", format!("a speed > 0, got {}", self.max_speed));
        }
        if !(self.gain > 0.0 && self.gain <= 1.0) {
            return fail("gain", format!("in (0, 1], got {}", self.gain));
        }
        match self.area {
            Some(a) if !(a.is_finite() && a > 0.0) => fail("area", format!("an area > 0, got {a}")),
            _ => Ok(()),
        }
    }
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
                ..
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
        let servo = match spec {
            WallSpec::Plane { servo, .. } => servo.clone(),
            WallSpec::Cylinder { .. } => None,
        };
        Wall {
            geometry,
            motion: motion.clone(),
            displacement: Vector3::zeros(),
            velocity: Vector3::zeros(),
            force: Vector3::zeros(),
            servo,
            stiffness: 0.0,
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

    /// Moves the wall to time `t` (from the start), with `dt` the step just taken: along its
    /// prescribed motion, or its servo's step (`area`: its face's area, the servo's own or the
    /// enclosure's; without one the wall stays, [`ServoFault::NoFace`]).
    pub fn move_to(&mut self, t: f64, dt: f64, area: Option<f64>) {
        if let Some(m) = &self.motion {
            let d = Vector3::from(m.displacement(t));
            self.velocity = (d - self.displacement) / dt;
            self.displacement = d;
        }
        if let (Some(servo), Geometry::Plane { normal, .. }) = (&self.servo, &self.geometry) {
            let Some(area) = area else {
                self.velocity = Vector3::zeros();
                return;
            };
            let cap = servo.max_speed * dt;
            let du = if self.stiffness > 0.0 {
                let push = -self.force.dot(normal);
                (servo.gain * (servo.pressure * area - push) / self.stiffness).clamp(-cap, cap)
            } else {
                cap
            };
            self.velocity = normal * (du / dt);
            self.displacement += normal * du;
        }
    }
}

/// `[[walls]]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "lowercase")]
pub enum WallSpec {
    /// The half-space `(x - point) . normal >= 0` holds the grains.
    Plane {
        /// A point of the plane.
        point: [f64; 3],
        /// Normal pointing to the grains' side.
        normal: [f64; 3],
        /// Prescribed motion.
        motion: Option<Motion>,
        /// Servo to a normal stress, instead of a motion.
        servo: Option<Servo>,
    },
    /// The inside of an infinite circular cylinder holds the grains.
    Cylinder {
        /// A point of the axis.
        point: [f64; 3],
        /// Axis direction.
        axis: [f64; 3],
        /// Radius.
        radius: f64,
        /// Prescribed motion.
        motion: Option<Motion>,
    },
}

/// Why `body`'s centre is behind one of `walls`, if it is: the wall would launch it.
pub fn behind_wall(body: &Body, walls: &[Wall]) -> Option<String> {
    walls.iter().enumerate().find_map(|(w, wall)| {
        let (d, _) = wall.distance(&body.position);
        (d < 0.0).then(|| {
            format!(
                "a grain's centre is {:e} behind walls[{w}] (a wall's inside is where its normal points): the wall would launch it",
                -d
            )
        })
    })
}
