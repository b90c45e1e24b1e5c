//! Analytic boundaries with closed-form level sets (docs/physics.md section 4), positive on the side
//! that holds the grains, with prescribed motion (translation only), or servo-controlled to a
//! normal stress ([`Servo`], plane walls).
//!
//! Each wall kind is one file of this directory: its scene entry (a type implementing
//! [`KindSpec`]) and its geometry (a type implementing [`Kind`]: signed distance and normal,
//! whether it is flat, what it bounds of the sample's enclosure). One line of `kinds!` below
//! registers it: that line makes the kind a variant of [`WallSpec`] (`[[walls]]` with
//! `kind = "<its name in lower case>"`) and of [`Geometry`] (in checkpoints as
//! `{"<Name>": {...}}`). The scene's checks, the laws' checks, the measures' enclosure and the
//! servo follow the traits (docs/layout.md).

use nalgebra::Vector3;
use serde::{Deserialize, Serialize};

use crate::body::Body;
use crate::error::KeyError;
use crate::motion::Motion;

pub mod cylinder;
pub mod plane;

/// A wall kind's geometry, at its initial position; the wall is displaced by a translation.
pub trait Kind {
    /// Signed distance of the global point `x` to the wall displaced by `displacement`
    /// (positive on the grains' side), and the unit normal pointing to that side (the
    /// gradient of the distance).
    fn distance(&self, x: &Vector3<f64>, displacement: &Vector3<f64>) -> (f64, Vector3<f64>);

    /// Whether the surface is flat: the sphere laws' closed forms (crate::law::sphere) take
    /// a wall as a sphere of infinite radius.
    fn flat(&self) -> bool;

    /// What the wall, displaced by `displacement`, bounds of the sample's enclosure
    /// (crate::measure::sample_volume) and, for a plane, the direction a servo moves it.
    fn bound(&self, displacement: &Vector3<f64>) -> Bound;
}

/// A wall kind's `[[walls]]` entry (its keys besides `kind`, `deny_unknown_fields`).
pub trait KindSpec {
    /// Refuses its keys out of range; `key` is the entry's path (`walls[2]`). The motion and
    /// the servo are checked by [`WallSpec::check`].
    fn check(&self, key: &str) -> Result<(), KeyError>;

    /// The geometry of a checked entry (directions normalized).
    fn geometry(&self) -> Geometry;

    /// Its prescribed motion, if any.
    fn motion(&self) -> Option<&Motion>;

    /// Its servo, if any (a kind without a `servo` key: none).
    fn servo(&self) -> Option<&Servo> {
        None
    }
}

/// What a wall bounds of the enclosure whose volume the measures take
/// (crate::measure::sample_volume): a plane face, the mantle of a cylinder, or nothing they
/// measure (a sample with such a wall has no enclosed volume).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    /// A plane face through `point`, with unit `normal` towards the grains.
    Plane {
        /// A point of the face, displaced.
        point: Vector3<f64>,
        /// Its unit normal towards the grains.
        normal: Vector3<f64>,
    },
    /// The mantle of a cylinder of `radius` about the unit `axis`.
    Cylinder {
        /// Its radius.
        radius: f64,
        /// Its unit axis.
        axis: Vector3<f64>,
    },
    /// Nothing the measures enclose a volume with (no kind gives it yet: a kind that bounds no
    /// box or cylinder, a sphere say, would).
    Other,
}

/// The registration of the wall kinds: `Variant(geometry type, spec type),` per kind, which
/// makes the variant of [`Geometry`] and [`WallSpec`] and dispatches [`Kind`] and
/// [`KindSpec`] to it.
macro_rules! kinds {
    ($($(#[$doc:meta])* $variant:ident($geometry:ty, $spec:ty),)+) => {
        /// A wall's geometry at its initial position, one variant per kind (serialized in
        /// checkpoints as `{"Plane": {"point": .., "normal": ..}}`).
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        pub enum Geometry {
            $($(#[$doc])* $variant($geometry),)+
        }

        /// `[[walls]]`: `kind = "<variant in lower case>"` and the kind's keys.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "kind", rename_all = "lowercase")]
        pub enum WallSpec {
            $($(#[$doc])* $variant($spec),)+
        }

        $(impl From<$geometry> for Geometry {
            fn from(g: $geometry) -> Geometry {
                Geometry::$variant(g)
            }
        })+

        impl Kind for Geometry {
            #[inline(always)]
            fn distance(&self, x: &Vector3<f64>, displacement: &Vector3<f64>) -> (f64, Vector3<f64>) {
                match self {
                    $(Geometry::$variant(g) => g.distance(x, displacement),)+
                }
            }

            fn flat(&self) -> bool {
                match self {
                    $(Geometry::$variant(g) => g.flat(),)+
                }
            }

            fn bound(&self, displacement: &Vector3<f64>) -> Bound {
                match self {
                    $(Geometry::$variant(g) => g.bound(displacement),)+
                }
            }
        }

        impl WallSpec {
            /// The entry's kind.
            pub fn kind(&self) -> &dyn KindSpec {
                match self {
                    $(WallSpec::$variant(s) => s,)+
                }
            }
        }
    };
}

// The registered kinds: one line each.
kinds! {
    /// `kind = "plane"`: a half-space holds the grains ([`plane`]).
    Plane(plane::Plane, plane::PlaneSpec),
    /// `kind = "cylinder"`: the inside of a circular cylinder holds the grains ([`cylinder`]).
    Cylinder(cylinder::Cylinder, cylinder::CylinderSpec),
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
    /// A wall from its checked scene entry ([`WallSpec::check`]).
    pub fn from_spec(spec: &WallSpec) -> Wall {
        let kind = spec.kind();
        Wall {
            geometry: kind.geometry(),
            motion: kind.motion().cloned(),
            displacement: Vector3::zeros(),
            velocity: Vector3::zeros(),
            force: Vector3::zeros(),
            servo: kind.servo().cloned(),
            stiffness: 0.0,
        }
    }

    /// Signed distance of a global point (positive on the grains' side) and the unit normal
    /// pointing to that side (the gradient).
    #[inline(always)]
    pub fn distance(&self, x: &Vector3<f64>) -> (f64, Vector3<f64>) {
        self.geometry.distance(x, &self.displacement)
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
        let bound = self.geometry.bound(&self.displacement);
        if let (Some(servo), Bound::Plane { normal, .. }) = (&self.servo, bound) {
            let Some(area) = area else {
                self.velocity = Vector3::zeros();
                return;
            };
            let cap = servo.max_speed * dt;
            let du = if self.stiffness > 0.0 {
                let push = -self.force.dot(&normal);
                (servo.gain * (servo.pressure * area - push) / self.stiffness).clamp(-cap, cap)
            } else {
                cap
            };
            self.velocity = normal * (du / dt);
            self.displacement += normal * du;
        }
    }
}

impl WallSpec {
    /// Refuses the entry's keys out of range (`key`: its path, `walls[2]`): the kind's own,
    /// then its motion, or its servo (on a plane, instead of a motion).
    pub fn check(&self, key: &str) -> Result<(), KeyError> {
        let kind = self.kind();
        kind.check(key)?;
        if let Some(servo) = kind.servo() {
            let key = format!("{key}.servo");
            if kind.motion().is_some() {
                return Err(KeyError::new(
                    key,
                    "a wall follows its motion or its servo, not both".into(),
                ));
            }
            if !matches!(
                kind.geometry().bound(&Vector3::zeros()),
                Bound::Plane { .. }
            ) {
                return Err(KeyError::new(key, "a servo moves plane walls only".into()));
            }
            servo.check(&key)?;
        }
        match kind.motion() {
            Some(m) => m.check(&format!("{key}.motion")),
            None => Ok(()),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `[[walls]]` entries as a scene gives them.
    fn parse(toml: &str) -> Result<Vec<WallSpec>, toml::de::Error> {
        #[derive(Deserialize)]
        struct Scene {
            walls: Vec<WallSpec>,
        }
        toml::from_str::<Scene>(toml).map(|s| s.walls)
    }

    fn entries(toml: &str) -> Vec<WallSpec> {
        parse(toml).unwrap()
    }

    #[test]
    fn each_kind_reads_its_entry_and_measures_its_closed_form_distance() {
        let specs = entries(
            r#"
            [[walls]]
            kind = "plane"
            point = [0, 0, 1]
            normal = [0, 0, 2]
            [[walls]]
            kind = "cylinder"
            point = [0, 0, 0]
            axis = [0, 0, 3]
            radius = 2
            "#,
        );
        for (i, s) in specs.iter().enumerate() {
            s.check(&format!("walls[{i}]")).unwrap();
        }
        let (plane, cylinder) = (Wall::from_spec(&specs[0]), Wall::from_spec(&specs[1]));
        let x = Vector3::new(1.0, 0.0, 3.0);
        // The plane z = 1 with its normal +z: 2 above it, the gradient +z.
        assert_eq!(plane.distance(&x), (2.0, Vector3::z()));
        // The cylinder of radius 2 about the z axis: 1 from its mantle, the gradient inwards.
        assert_eq!(cylinder.distance(&x), (1.0, -Vector3::x()));
        assert!(plane.geometry.flat() && !cylinder.geometry.flat());
    }

    #[test]
    fn an_entry_refuses_keys_its_kind_does_not_have_and_conflicting_drives() {
        let toml = |s: &str| format!("[[walls]]\n{s}");
        let servo = "servo = { pressure = 1e5, max_speed = 0.01 }";
        let err = parse(&toml(&format!(
            "kind = \"cylinder\"\npoint = [0, 0, 0]\naxis = [0, 0, 1]\nradius = 1\n{servo}"
        )))
        .expect_err("a cylinder has no servo key");
        assert!(err.to_string().contains("unknown field `servo`"), "{err}");
        let both = entries(&toml(&format!(
            "kind = \"plane\"\npoint = [0, 0, 0]\nnormal = [0, 0, 1]\nmotion = {{ velocity = [0, 0, 1] }}\n{servo}"
        )));
        let err = both[0].check("walls[0]").unwrap_err();
        assert_eq!(err.key, "walls[0].servo");
        let flat = entries(&toml(
            "kind = \"plane\"\npoint = [0, 0, 0]\nnormal = [0, 0, 0]",
        ));
        assert_eq!(
            flat[0].check("walls[0]").unwrap_err().key,
            "walls[0].normal"
        );
    }

    #[test]
    fn checkpoints_keep_the_geometry_of_each_kind_as_they_were_written() {
        // Written by the solver before the kinds had files of their own (one enum with struct
        // variants): restarts from them must read them, and write them the same.
        for json in [
            r#"{"Plane":{"point":[0.0,0.0,1.0],"normal":[0.0,0.0,-1.0]}}"#,
            r#"{"Cylinder":{"point":[1.0,2.0,0.0],"axis":[0.0,0.0,1.0],"radius":5.5}}"#,
        ] {
            let g: Geometry = serde_json::from_str(json).unwrap();
            assert_eq!(serde_json::to_string(&g).unwrap(), json);
        }
    }
}
