//! `[[packings]]`: random packings of grains from one or more bundles, with a size distribution,
//! random orientations, in a region, without overlap, from a seed (docs/experiments.md
//! section 1).
//!
//! ```toml
//! [[packings]]
//! seed = 7                 # same seed, same packing (on any machine, any thread count)
//! count = 500              # grains in all
//! by = "count"             # the fractions below are of the count (default) or of the "mass"
//! region = { kind = "box", min = [0, 0, 0], max = [10, 10, 10] }
//! # region = { kind = "cylinder", point = [0, 0, 0], axis = [0, 0, 1], radius = 5, length = 20 }
//! # region = { kind = "cell" }   # the scene's periodic cell (periodic on its three axes)
//! bundles = [              # each as a [[grains]] entry's bundle, modes, nodes and hold
//!   { bundle = "sphere.grain", fraction = 0.7 },
//!   { bundle = "ellipsoid.grain", fraction = 0.3, modes = { levelset = "precomputed" } },
//! ]
//! sizes = [[0.8, 0.25], [1.0, 0.5], [1.25, 0.25]]  # discrete classes: [scale, fraction]
//! # or a grading curve (cumulative fraction passing against scale, piecewise linear) cut
//! # into `classes` classes of equal fraction:
//! # sieve = [[0.8, 0.0], [1.0, 0.4], [1.25, 1.0]]
//! # classes = 8
//! velocity = [0, 0, 0]     # every grain's initial velocity
//! attempts = 1000          # random places tried per grain before the packing gives up
//!                          # (at most MAX_ATTEMPTS, 1e6)
//! ```
//!
//! The scales multiply the bundle's lengths ([`grain::GrainBundle::scaled`]: the same grain, of
//! the same material, `s` times larger). Sizes are discrete classes, one shape (one level-set
//! grid) per bundle and class: a continuous distribution would cost one grid per grain; a
//! grading curve is cut into `classes` classes, each of an equal share, represented by the
//! scale at the middle of its share, so that the packing's distribution differs from the curve
//! by at most `1 / (2 classes)` (the Kolmogorov-Smirnov distance) plus the rounding of counts.
//!
//! Counts: class `c` (bundle `b`, size `j`) has the share `f_c = f_b f_j` (each list
//! normalized to 1) of the count, or of the mass; then `n_c` is proportional to `f_c`, or to
//! `f_c / m_c` (`m_c` its grain's mass), and the `count` is split by largest remainders
//! (Hamilton's method: every class within one grain of its exact share, ties to the first
//! class).
//!
//! Placement is random sequential addition, largest grains first (the way YADE's makeCloud
//! fills a distribution): a uniform centre in the region, a uniform orientation (Shoemake's
//! quaternion), accepted if the grain touches nothing, as the solver's contact detection judges
//! it: no surface node of either grain inside the other's level set, no node beyond the
//! region's faces or the scene's walls, and for spheres no overlap of the spheres themselves.
//! In a periodic cell, a grain's images count (any region): a grain near a face is judged
//! against the grains near the opposite face, displaced by the cell vector, and every free
//! grain where the solver will see it, brought into the cell ([`Cell::into_cell`]; the region's
//! faces judge it where the region puts it). The packing therefore starts with no contact.
//! Grains already in the scene (single grains, lattices, earlier packings) are obstacles.
//! Random sequential addition jams near a solid fraction of 0.38 for equal spheres: denser
//! samples are made by compressing a loose one. Deformable grains are placed in their reference
//! shape, at rest: a packing's `modes` take no amplitudes or rates.
//!
//! Fractions of any size are normalized by the largest first: fractions of 1e308 do not
//! overflow.
//! `attempts` is at most [`MAX_ATTEMPTS`], and a packing that runs for more than a second
//! shows its grains placed, tries and solid fraction on standard error (on a terminal).
//! A region reaching farther from the origin than 1e8 of its smallest grain's radius (every
//! grain's rule, crate::build), or longer than one period of the scene's cell along a periodic
//! cell vector (its grains would overlap their own images, and its volume would not be the
//! sample's), is refused with its key.

use std::path::PathBuf;
use std::sync::Arc;

use nalgebra::{Point3, UnitQuaternion, Vector3};
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use dem_core::body::{Body, Dof, Drive, FARTHEST, NodeRole, Shape, held};
use dem_core::broad::CellList;
use dem_core::cell::Cell;
use dem_core::error::KeyError;
use dem_core::law::surface::{Scratch, Surface};
use dem_core::modal::ModesSpec;
use dem_core::view::View;
use dem_core::wall::cylinder::CylinderSpec;
use dem_core::wall::plane::PlaneSpec;
use dem_core::wall::{Wall, WallSpec};

use crate::grains::{Frame, GrainSpec};

/// `[[packings]]` (module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Packing {
    /// The random generator's seed.
    pub seed: u64,
    /// Grains in all.
    pub count: usize,
    /// What the fractions are of.
    #[serde(default)]
    pub by: Basis,
    /// Where the grains go.
    pub region: Region,
    /// The bundles and their fractions.
    pub bundles: Vec<Ingredient>,
    /// Discrete size classes `[scale, fraction]` (default: one class, scale 1).
    pub sizes: Option<Vec<[f64; 2]>>,
    /// A grading curve `[scale, cumulative fraction]`, instead of `sizes`.
    pub sieve: Option<Vec<[f64; 2]>>,
    /// How many classes the grading curve is cut into.
    pub classes: Option<usize>,
    /// Every grain's initial velocity.
    #[serde(default)]
    pub velocity: [f64; 3],
    /// Random places tried per grain.
    #[serde(default = "default_attempts")]
    pub attempts: u64,
}

fn default_attempts() -> u64 {
    1000
}

/// The most classes a grading curve is cut into (each is a level-set grid per bundle).
pub const MAX_CLASSES: usize = 64;

/// The most random places a packing tries per grain. A try costs about 80 us for a grain of
/// 700 nodes among its neighbours (a brick packed to a solid fraction of 0.25, release build):
/// a grain that finds no place takes a minute and a half to give up; more tries are a typo or a
/// region that cannot hold the count.
pub const MAX_ATTEMPTS: u64 = 1_000_000;

/// What the fractions of a packing are of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Basis {
    /// Of the number of grains.
    #[default]
    Count,
    /// Of the solid mass.
    Mass,
}

/// One bundle of a packing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ingredient {
    /// The grain bundle directory (relative to the scene file).
    pub bundle: PathBuf,
    /// Its share (normalized over the bundles; default 1).
    #[serde(default = "one")]
    pub fraction: f64,
    /// Its grains' modes (as `[[grains]]`, without amplitudes or rates).
    pub modes: Option<ModesSpec>,
    /// Its grains' node role (as `[[grains]]`).
    pub nodes: Option<NodeRole>,
    /// Degrees of freedom its grains hold (as `[[grains]]`).
    #[serde(default)]
    pub hold: Vec<Dof>,
}

fn one() -> f64 {
    1.0
}

/// Where a packing puts its grains: every surface node inside.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "lowercase")]
pub enum Region {
    /// The box `min <= x <= max`.
    Box {
        /// Lower corner.
        min: [f64; 3],
        /// Upper corner.
        max: [f64; 3],
    },
    /// A circular cylinder: its base's centre, axis, radius and length along the axis.
    Cylinder {
        /// Centre of the base.
        point: [f64; 3],
        /// Axis, from the base into the cylinder.
        axis: [f64; 3],
        /// Radius.
        radius: f64,
        /// Length.
        length: f64,
    },
    /// The scene's periodic cell (`[cell]`, periodic on its three axes).
    Cell,
}

/// One size class of one bundle: grains of `ingredient` at `scale`, `share` of the count or
/// mass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Class {
    /// Index into [`Packing::bundles`].
    pub ingredient: usize,
    /// The scale factor.
    pub scale: f64,
    /// Its share of the count or mass (the shares sum to 1).
    pub share: f64,
}

impl Packing {
    /// The size classes `[scale, share]`: `sizes` normalized, or the grading curve cut into
    /// `classes` equal shares, each at the scale where the curve passes its share's middle.
    pub fn sizes(&self) -> Vec<[f64; 2]> {
        match (&self.sizes, &self.sieve) {
            (_, Some(curve)) => {
                let k = self.classes.unwrap_or(1);
                (0..k)
                    .map(|j| [inverse(curve, (j as f64 + 0.5) / k as f64), 1.0 / k as f64])
                    .collect()
            }
            (Some(sizes), None) => {
                let shares = normalized(sizes.iter().map(|s| s[1]));
                sizes.iter().zip(shares).map(|(s, f)| [s[0], f]).collect()
            }
            (None, None) => vec![[1.0, 1.0]],
        }
    }

    /// Every class, bundle-major.
    pub fn classes(&self) -> Vec<Class> {
        let fractions = normalized(self.bundles.iter().map(|b| b.fraction));
        let sizes = self.sizes();
        (fractions.into_iter().enumerate())
            .flat_map(|(ingredient, f)| {
                sizes.iter().map(move |&[scale, share]| Class {
                    ingredient,
                    scale,
                    share: f * share,
                })
            })
            .collect()
    }

    /// The checks serde cannot make, `key` being this packing's (`packings[2]`).
    pub fn check(&self, key: &str) -> Result<(), KeyError> {
        let fail = |k: &str, message: String| Err(KeyError::new(format!("{key}.{k}"), message));
        let positive = |x: f64| x.is_finite() && x > 0.0;
        if self.count == 0 {
            return fail("count", "at least one grain".into());
        }
        if !(1..=MAX_ATTEMPTS).contains(&self.attempts) {
            return fail(
                "attempts",
                format!(
                    "between 1 and {MAX_ATTEMPTS} (more is a typo, or a region that cannot hold the count: a grain that finds no place would search for hours), got {}",
                    self.attempts
                ),
            );
        }
        if !self.velocity.iter().all(|v| v.is_finite()) {
            return fail(
                "velocity",
                format!("finite numbers expected, got {:?}", self.velocity),
            );
        }
        match &self.region {
            Region::Box { min, max } => {
                if !(min.iter().chain(max).all(|x| x.is_finite())
                    && (0..3).all(|d| min[d] < max[d]))
                {
                    return fail(
                        "region",
                        format!(
                            "finite corners with min < max on every axis, got {min:?} and {max:?}"
                        ),
                    );
                }
            }
            Region::Cylinder {
                point,
                axis,
                radius,
                length,
            } => {
                let norm = Vector3::from(*axis).norm();
                if !(point.iter().all(|x| x.is_finite()) && positive(norm)) {
                    return fail(
                        "region",
                        format!("a finite point and a non-zero axis, got {point:?} and {axis:?}"),
                    );
                }
                if !(positive(*radius) && positive(*length)) {
                    return fail(
                        "region",
                        format!("a radius and a length > 0, got {radius} and {length}"),
                    );
                }
            }
            // Checked with the scene's cell (crate::scene).
            Region::Cell => {}
        }
        if self.bundles.is_empty() {
            return fail("bundles", "at least one bundle".into());
        }
        for (b, ingredient) in self.bundles.iter().enumerate() {
            if !(ingredient.fraction.is_finite() && ingredient.fraction >= 0.0) {
                return fail(
                    &format!("bundles[{b}].fraction"),
                    format!("a fraction >= 0, got {}", ingredient.fraction),
                );
            }
            let (translation, _) = held(&ingredient.hold);
            if (0..3).any(|k| translation[k] && self.velocity[k] != 0.0) {
                return fail(
                    &format!("bundles[{b}].hold"),
                    format!(
                        "the packing's velocity {:?} moves the held axes {:?}",
                        self.velocity, ingredient.hold
                    ),
                );
            }
            if let Some(m) = &ingredient.modes
                && (m.amplitudes.is_some() || m.rates.is_some())
            {
                return fail(
                    &format!("bundles[{b}].modes"),
                    "a packing places its grains at rest in their reference shape: no amplitudes or rates".into(),
                );
            }
        }
        if self.bundles.iter().map(|b| b.fraction).sum::<f64>() <= 0.0 {
            return fail("bundles", "fractions that sum to more than 0".into());
        }
        match (&self.sizes, &self.sieve, self.classes) {
            (Some(_), Some(_), _) => fail("sieve", "give `sizes` or `sieve`, not both".into()),
            (_, None, Some(_)) => fail("classes", "`classes` cuts a `sieve` curve".into()),
            (_, Some(_), None) => fail(
                "classes",
                "missing: how many classes the `sieve` curve is cut into".into(),
            ),
            (_, Some(_), Some(k)) if !(1..=MAX_CLASSES).contains(&k) => fail(
                "classes",
                format!(
                    "between 1 and {MAX_CLASSES} (each class is a level-set grid per bundle), got {k}"
                ),
            ),
            (_, Some(curve), Some(_)) => {
                check_sieve(curve).map_err(|m| KeyError::new(format!("{key}.sieve"), m))
            }
            (Some(sizes), None, None) => {
                if sizes.is_empty() || sizes.len() > MAX_CLASSES {
                    return fail(
                        "sizes",
                        format!("between 1 and {MAX_CLASSES} classes, got {}", sizes.len()),
                    );
                }
                if let Some((j, s)) = sizes
                    .iter()
                    .enumerate()
                    .find(|(_, s)| !(positive(s[0]) && s[1].is_finite() && s[1] >= 0.0))
                {
                    return fail(
                        &format!("sizes[{j}]"),
                        format!("[scale > 0, fraction >= 0], got {s:?}"),
                    );
                }
                if sizes.iter().map(|s| s[1]).sum::<f64>() <= 0.0 {
                    return fail("sizes", "fractions that sum to more than 0".into());
                }
                Ok(())
            }
            (None, None, None) => Ok(()),
        }
    }

    /// The region's volume: the cell's, or the volume its walls enclose (dem_core::measure).
    pub fn region_volume(&self, cell: Option<&Cell>) -> f64 {
        match (&self.region, cell) {
            (Region::Cell, Some(cell)) => cell.volume(),
            (Region::Cell, None) => unreachable!("checked: a cell region has a cell"),
            _ => dem_core::measure::sample_volume(&self.region.walls())
                .expect("a box or a closed cylinder encloses its volume"),
        }
    }
}

/// Why a grading curve is refused, if it is.
fn check_sieve(curve: &[[f64; 2]]) -> Result<(), String> {
    if curve.len() < 2 {
        return Err(format!(
            "at least two points [scale, passing], got {}",
            curve.len()
        ));
    }
    for (i, p) in curve.iter().enumerate() {
        if !(p[0].is_finite() && p[0] > 0.0 && (0.0..=1.0).contains(&p[1])) {
            return Err(format!(
                "[{i}]: a scale > 0 and a passing fraction in [0, 1], got {p:?}"
            ));
        }
        if i > 0 && !(p[0] > curve[i - 1][0] && p[1] >= curve[i - 1][1]) {
            return Err(format!(
                "[{i}]: scales increase and passing fractions do not decrease, got {p:?} after {:?}",
                curve[i - 1]
            ));
        }
    }
    let (first, last) = (curve[0][1], curve[curve.len() - 1][1]);
    if first != 0.0 || last != 1.0 {
        return Err(format!(
            "the curve starts at 0 passing and ends at 1 (all of the sample), got {first} and {last}"
        ));
    }
    Ok(())
}

/// The scale at which the piecewise linear grading curve passes `p` in (0, 1).
fn inverse(curve: &[[f64; 2]], p: f64) -> f64 {
    let i = curve
        .partition_point(|q| q[1] < p)
        .clamp(1, curve.len() - 1);
    let (a, b) = (curve[i - 1], curve[i]);
    a[0] + (b[0] - a[0]) * (p - a[1]) / (b[1] - a[1])
}

/// `values` (finite, `>= 0`, not all 0) over their sum, summed after dividing by the largest, so
/// that fractions of 1e308 do not sum to infinity.
fn normalized(values: impl Iterator<Item = f64> + Clone) -> Vec<f64> {
    let largest = values.clone().fold(0.0, f64::max);
    let sum: f64 = values.clone().map(|v| v / largest).sum();
    values.map(|v| v / largest / sum).collect()
}

/// Grains per class: `total` split in proportion to `weights` (finite, `>= 0`, not all 0) by
/// largest remainders (ties to the first class). The weights are the count shares, or the mass
/// shares over the grains' masses.
pub fn counts(weights: &[f64], total: usize) -> Vec<usize> {
    let exact: Vec<f64> = (normalized(weights.iter().copied()).iter())
        .map(|w| w * total as f64)
        .collect();
    let mut n: Vec<usize> = exact.iter().map(|x| x.floor() as usize).collect();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&i, &j| {
        (exact[j] - exact[j].floor())
            .total_cmp(&(exact[i] - exact[i].floor()))
            .then(i.cmp(&j))
    });
    let missing = total - n.iter().sum::<usize>();
    for &c in order.iter().take(missing) {
        n[c] += 1;
    }
    n
}

/// A generated packing: its grains, and how it went.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The grains, largest first.
    pub grains: Vec<Packed>,
    /// Random places tried in all.
    pub attempts: u64,
    /// The grains' volume over the region's.
    pub solid_fraction: f64,
}

/// One grain of a packing.
#[derive(Debug, Clone)]
pub struct Packed {
    /// As a `[[grains]]` entry.
    pub spec: GrainSpec,
    /// Its bundle's index in [`Packing::bundles`].
    pub ingredient: usize,
    /// Its shape's index.
    pub shape: usize,
}

/// A uniform double in [0, 1) from 53 random bits (spelled out so that a seed's packing does not
/// change with the `rand` crate's version).
fn uniform(rng: &mut impl Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A uniformly distributed rotation (K. Shoemake, Uniform random rotations, Graphics Gems III,
/// 1992), as `(w, x, y, z)`.
fn orientation(rng: &mut impl Rng) -> [f64; 4] {
    let (u1, u2, u3) = (uniform(rng), uniform(rng), uniform(rng));
    let tau = std::f64::consts::TAU;
    let (a, b) = ((1.0 - u1).sqrt(), u1.sqrt());
    let q = UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(
        b * (tau * u3).cos(),
        a * (tau * u2).sin(),
        a * (tau * u2).cos(),
        b * (tau * u3).sin(),
    ));
    [q.w, q.i, q.j, q.k]
}

impl Region {
    /// The walls that bound the region (their insides are the region's).
    pub fn walls(&self) -> Vec<Wall> {
        let plane = |point: Vector3<f64>, normal: Vector3<f64>| {
            Wall::from_spec(&WallSpec::Plane(PlaneSpec {
                point: point.into(),
                normal: normal.into(),
                motion: None,
                servo: None,
            }))
        };
        match self {
            Region::Box { min, max } => (0..3)
                .flat_map(|d| {
                    let e = Vector3::ith(d, 1.0);
                    [
                        plane(Vector3::from(*min), e),
                        plane(Vector3::from(*max), -e),
                    ]
                })
                .collect(),
            Region::Cylinder {
                point,
                axis,
                radius,
                length,
            } => {
                let a = Vector3::from(*axis).normalize();
                let p = Vector3::from(*point);
                vec![
                    Wall::from_spec(&WallSpec::Cylinder(CylinderSpec {
                        point: *point,
                        axis: *axis,
                        radius: *radius,
                        motion: None,
                    })),
                    plane(p, a),
                    plane(p + a * *length, -a),
                ]
            }
            Region::Cell => Vec::new(),
        }
    }

    /// Why grains of bounding radius `smallest` and up cannot be placed in the region, if they
    /// cannot: it reaches farther from the origin than floating point resolves them
    /// (FARTHEST, every grain's rule), or it is longer than one period of
    /// `cell` along a periodic cell vector, where it would overlap its own images (and the
    /// solid fraction of its volume would be no sample's).
    fn check_reach(&self, cell: Option<&Cell>, smallest: f64) -> Result<(), String> {
        if *self == Region::Cell {
            // The cell's own reach is checked with the scene's (crate::build).
            return Ok(());
        }
        let (lo, hi) = self.bounds(cell);
        let far = lo.amax().max(hi.amax());
        let limit = FARTHEST * smallest;
        // Finite corners (checked) give no NaN.
        if far > limit {
            return Err(format!(
                "it reaches {far:e} from the origin, more than {:e} times its smallest grain's radius {smallest:e}, where floating point cannot resolve a grain: a region within [-{limit:e}, {limit:e}] on each axis",
                FARTHEST
            ));
        }
        let Some(cell) = cell else {
            return Ok(());
        };
        let inverse = cell
            .vectors
            .try_inverse()
            .expect("a cell of positive volume");
        for k in (0..3).filter(|&k| cell.periodic[k]) {
            // Along a_k the fractional coordinate is b . x, b the row k of H^-1 (its length
            // the inverse of the cell's width across a_k).
            let b = inverse.row(k).transpose();
            let periods = match self {
                Region::Box { min, max } => (0..3).map(|d| b[d].abs() * (max[d] - min[d])).sum(),
                Region::Cylinder {
                    axis,
                    radius,
                    length,
                    ..
                } => {
                    let a = Vector3::from(*axis).normalize();
                    let along = b.dot(&a);
                    along.abs() * length
                        + 2.0 * radius * (b.norm_squared() - along * along).max(0.0).sqrt()
                }
                Region::Cell => unreachable!("returned above"),
            };
            // A region of exactly one period (a box the size of an orthorhombic cell) within
            // the round-off of H^-1.
            if periods > 1.0 + 1e-12 {
                return Err(format!(
                    "it spans {periods:.6} periods of the cell along a_{}, which is periodic: its grains would overlap their own images; a region at most one period long along each periodic cell vector ({:e} across a_{})",
                    k + 1,
                    cell.widths()[k],
                    k + 1
                ));
            }
        }
        Ok(())
    }

    /// The region's bounding box (`cell`: the scene's).
    fn bounds(&self, cell: Option<&Cell>) -> (Vector3<f64>, Vector3<f64>) {
        match self {
            Region::Cell => {
                let cell = cell.expect("checked: a cell region has a cell");
                (cell.corners().iter()).fold((cell.origin, cell.origin), |(lo, hi), x| {
                    (lo.inf(x), hi.sup(x))
                })
            }
            Region::Box { min, max } => (Vector3::from(*min), Vector3::from(*max)),
            Region::Cylinder {
                point,
                axis,
                radius,
                length,
            } => {
                // Each end disc reaches `radius sqrt(1 - a_d^2)` from its centre along axis d.
                let a = Vector3::from(*axis).normalize();
                let reach = a.map(|c| radius * (1.0 - c * c).max(0.0).sqrt());
                let (p, q) = (Vector3::from(*point), Vector3::from(*point) + a * *length);
                (p.inf(&q) - reach, p.sup(&q) + reach)
            }
        }
    }

    /// A uniform point of the region shrunk by `inner` on every side (`None` if nothing is
    /// left of it); a periodic cell is not shrunk.
    fn sample(&self, inner: f64, cell: Option<&Cell>, rng: &mut impl Rng) -> Option<Vector3<f64>> {
        match self {
            Region::Cell => {
                let cell = cell.expect("checked: a cell region has a cell");
                let u = [uniform(rng), uniform(rng), uniform(rng)];
                Some(cell.origin + cell.vectors * Vector3::from(u))
            }
            Region::Box { min, max } => {
                if (0..3).any(|d| max[d] - min[d] < 2.0 * inner) {
                    return None;
                }
                let u = [uniform(rng), uniform(rng), uniform(rng)];
                Some(Vector3::from_fn(|d, _| {
                    min[d] + inner + u[d] * (max[d] - min[d] - 2.0 * inner)
                }))
            }
            Region::Cylinder {
                point,
                axis,
                radius,
                length,
            } => {
                if *radius < inner || *length < 2.0 * inner {
                    return None;
                }
                let a = Vector3::from(*axis).normalize();
                let e1 = a
                    .cross(&Vector3::x())
                    .try_normalize(1e-6)
                    .unwrap_or_else(|| a.cross(&Vector3::y()).normalize());
                let e2 = a.cross(&e1);
                let (u, v, w) = (uniform(rng), uniform(rng), uniform(rng));
                let r = (radius - inner) * u.sqrt();
                let theta = std::f64::consts::TAU * v;
                Some(
                    Vector3::from(*point)
                        + a * (inner + w * (length - 2.0 * inner))
                        + (e1 * theta.cos() + e2 * theta.sin()) * r,
                )
            }
        }
    }
}

/// Whether `giver` touches `surface` as the solver's contact detection judges it: one of its
/// surface nodes inside, or, for a sphere against a sphere or a wall, the spheres' overlap.
fn touches<S: Surface>(surface: &S, giver: &View) -> bool {
    if let Some(r) = giver.shape.sphere_radius
        && (surface.centre().is_none() || surface.sphere_radius().is_some())
        && surface.sphere_overlap(&giver.position, r).0 > 0.0
    {
        return true;
    }
    let frame = surface.frame(giver, 0.0);
    let mut scratch = Scratch::for_side();
    let mut near = (giver.shape.clusters).near(|c| surface.reaches(&frame, giver, c, 0.0));
    near.any(|leaf| {
        leaf.cluster.range.clone().any(|k| {
            surface
                .touch(
                    &frame,
                    giver,
                    &giver.shape.nodes[k],
                    0.0,
                    false,
                    &mut scratch,
                )
                .is_some()
        })
    })
}

/// Places packing `p` (its key `key`, its classes' shapes `class_shapes`, aligned with
/// [`Packing::classes`]) among `obstacles` (bodies already placed, with `shapes`) inside
/// `walls` (the scene's), in the scene's periodic `cell` if it has one (checked against the
/// grains: crate::build). The grains are returned largest first.
/// Refused with `key.region` when the region is out of floating point's reach or longer than
/// a period of the cell, with `key.count` when a grain finds no free place in `attempts` tries.
pub fn generate(
    p: &Packing,
    key: &str,
    shapes: &[Arc<Shape>],
    class_shapes: &[usize],
    obstacles: &[Body],
    walls: &[Wall],
    cell: Option<&Cell>,
) -> Result<Generated, KeyError> {
    let smallest = (class_shapes.iter())
        .map(|&s| shapes[s].bounding_radius)
        .fold(f64::INFINITY, f64::min);
    p.region
        .check_reach(cell, smallest)
        .map_err(|m| KeyError::new(format!("{key}.region"), m))?;
    let classes = p.classes();
    // By mass, the shares over the masses relative to the lightest class that has a share (at
    // most the shares, and that class's its own: no overflow for grains of any mass).
    let lightest = (classes.iter().zip(class_shapes))
        .filter(|(c, _)| c.share > 0.0)
        .map(|(_, &s)| shapes[s].mass)
        .fold(f64::INFINITY, f64::min);
    let weights: Vec<f64> = (classes.iter().zip(class_shapes))
        .map(|(c, &s)| match p.by {
            Basis::Count => c.share,
            Basis::Mass => c.share / (shapes[s].mass / lightest),
        })
        .collect();
    let n = counts(&weights, p.count);
    // Largest first; equal radii in class order.
    let mut order: Vec<usize> = (0..classes.len()).collect();
    order.sort_by(|&i, &j| {
        let r = |c: usize| shapes[class_shapes[c]].bounding_radius;
        r(j).total_cmp(&r(i)).then(i.cmp(&j))
    });
    let largest = (obstacles.iter().map(|b| shapes[b.shape].bounding_radius))
        .chain(class_shapes.iter().map(|&s| shapes[s].bounding_radius))
        .fold(0.0, f64::max);
    let region_walls = p.region.walls();
    let place = Place {
        shapes,
        walls,
        cell,
        largest,
    };
    // Places are judged where the solver will see the grains: free grains in the cell (the
    // build brings them in, dem_core::cell), the region's faces where the region puts them.
    let inside = |b: &Body| match cell {
        Some(c) if b.is_free() => c.into_cell(&b.position).0,
        _ => b.position,
    };
    let (mut lo, mut hi) = p.region.bounds(cell);
    if let Some(c) = cell {
        let (a, b) = Region::Cell.bounds(Some(c));
        (lo, hi) = (lo.inf(&a), hi.sup(&b));
    }
    let mut cells = CellList::new(lo, hi, 2.0 * largest, obstacles.len() + p.count);
    let mut bodies: Vec<Body> = obstacles.to_vec();
    for b in &mut bodies {
        b.position = inside(b);
        cells.insert(&b.position, shapes[b.shape].bounding_radius);
    }
    let mut rng = rand_xorshift::XorShiftRng::seed_from_u64(p.seed);
    let region_volume = p.region_volume(cell);
    let mut progress = Progress::new(key, p.count);
    let (mut grains, mut attempts, mut volume) = (Vec::with_capacity(p.count), 0, 0.0);
    for &c in &order {
        let shape_index = class_shapes[c];
        let shape = &shapes[shape_index];
        // No place nearer a face than the centre's depth inside the grain fits it.
        let grid = &shape.levelset;
        let (centre_phi, _) = grid.sample(&grid.locate(&Point3::origin()));
        let inner = (-centre_phi).max(0.0);
        let ingredient = &p.bundles[classes[c].ingredient];
        for _ in 0..n[c] {
            let mut tries = 0;
            let (body, x, q) = loop {
                if tries == p.attempts {
                    return Err(KeyError::new(
                        format!("{key}.count"),
                        format!(
                            "placed {} of {} grains; the next ({}, scale {:?}, bounding radius {:e}) found no free place in {} attempts, at a solid fraction of {:.3}: a larger region, fewer or smaller grains, or more attempts",
                            grains.len(),
                            p.count,
                            ingredient.bundle.display(),
                            classes[c].scale,
                            shape.bounding_radius,
                            p.attempts,
                            volume / region_volume
                        ),
                    ));
                }
                tries += 1;
                progress.tried(grains.len(), attempts + tries, volume / region_volume);
                let Some(x) = p.region.sample(inner, cell, &mut rng) else {
                    return Err(KeyError::new(
                        format!("{key}.region"),
                        format!(
                            "too small for {} at scale {:?}",
                            ingredient.bundle.display(),
                            classes[c].scale
                        ),
                    ));
                };
                let q = orientation(&mut rng);
                let mut body =
                    Body::new(shape_index, x.into(), q, p.velocity, [0.0; 3], Drive::Free);
                if region_walls
                    .iter()
                    .any(|w| touches(w, &View::new(&body, shape)))
                {
                    continue;
                }
                body.position = inside(&body);
                if place.free(&body, shape, &bodies, &cells) {
                    break (body, x, q);
                }
            };
            attempts += tries;
            volume += shape.volume;
            grains.push(Packed {
                ingredient: classes[c].ingredient,
                shape: shape_index,
                spec: GrainSpec {
                    bundle: ingredient.bundle.clone(),
                    scale: classes[c].scale,
                    frame: Frame::Local,
                    position: x.into(),
                    orientation: q,
                    velocity: p.velocity,
                    angular_velocity: [0.0; 3],
                    motion: None,
                    modes: ingredient.modes.clone(),
                    nodes: ingredient.nodes,
                    hold: ingredient.hold.clone(),
                },
            });
            cells.insert(&body.position, shape.bounding_radius);
            bodies.push(body);
        }
    }
    Ok(Generated {
        grains,
        attempts,
        solid_fraction: volume / region_volume,
    })
}

/// A packing's progress on standard error, shown (on a terminal) once it has taken
/// [`Progress::AFTER`]: the grains placed, the tries and the solid fraction reached.
struct Progress {
    key: String,
    count: usize,
    started: std::time::Instant,
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    /// How long a packing runs before it shows its progress.
    const AFTER: std::time::Duration = std::time::Duration::from_secs(1);

    fn new(key: &str, count: usize) -> Progress {
        Progress {
            key: key.to_string(),
            count,
            started: std::time::Instant::now(),
            bar: None,
        }
    }

    /// After each try (`attempts` in all), `placed` grains at `fraction`; the bar is redrawn
    /// every 1024 tries.
    fn tried(&mut self, placed: usize, attempts: u64, fraction: f64) {
        if !attempts.is_multiple_of(1024) {
            return;
        }
        let message = format!("{attempts} tries, solid fraction {fraction:.3}");
        match &self.bar {
            Some(bar) => {
                bar.set_message(message);
                bar.set_position(placed as u64);
            }
            None if self.started.elapsed() >= Self::AFTER => {
                let style = indicatif::ProgressStyle::with_template(
                    "{prefix}: {bar:40} {pos}/{len} grains, {msg}, {elapsed}",
                )
                .expect("valid template");
                self.bar = Some(
                    indicatif::ProgressBar::new(self.count as u64)
                        .with_style(style)
                        .with_prefix(self.key.clone())
                        .with_message(message)
                        .with_position(placed as u64)
                        .with_elapsed(self.started.elapsed()),
                );
            }
            None => {}
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// What a place is judged against besides the grains: their shapes, the scene's walls, the
/// periodic cell and the largest bounding radius.
struct Place<'a> {
    shapes: &'a [Arc<Shape>],
    walls: &'a [Wall],
    cell: Option<&'a Cell>,
    largest: f64,
}

impl Place<'_> {
    /// Whether `body` (of `shape`, in the cell if there is one) touches none of `bodies`
    /// (binned in `cells`), none of their periodic images and none of the walls.
    fn free(&self, body: &Body, shape: &Shape, bodies: &[Body], cells: &CellList) -> bool {
        let view = View::new(body, shape);
        if self.walls.iter().any(|w| touches(w, &view)) {
            return false;
        }
        // The body's images near the faces, each judged against the grains about it (the
        // grains' images about the body): the images across the near face on each axis.
        let across = self.cell.map_or([0; 3], |cell| {
            let s = cell.fractional(&body.position);
            let widths = cell.widths();
            let reach = shape.bounding_radius + self.largest;
            [0, 1, 2].map(|k| match cell.periodic[k] {
                false => 0,
                true if s[k] * widths[k] < reach => 1,
                true if (1.0 - s[k]) * widths[k] < reach => -1,
                true => 0,
            })
        });
        (0..8u32)
            .filter(|m| (0..3).all(|k| m >> k & 1 == 0 || across[k] != 0))
            .all(|m| {
                let image = [0, 1, 2].map(|k| if m >> k & 1 == 1 { across[k] } else { 0 });
                let shift = self.cell.map_or(Vector3::zeros(), |c| c.shift(image));
                let view = view.image(shift, Vector3::zeros());
                cells.near(&view.position, shape.bounding_radius).all(|j| {
                    let other = &bodies[j];
                    let other_view = View::new(other, &self.shapes[other.shape]);
                    !(touches(&other_view, &view) || touches(&view, &other_view))
                })
            })
    }
}

/// The grains of `packed` (the packings of the scene `scene`) as the text of `[[grains]]`
/// entries, one packing after the other. Numbers are written to round trip: the same grains
/// read back are the same bodies, bit for bit.
pub fn grains_toml(scene: &std::path::Path, packed: &[Generated]) -> String {
    #[derive(Serialize)]
    struct Grains<'a> {
        grains: Vec<&'a GrainSpec>,
    }
    let mut text = format!(
        "# The grains of the [[packings]] of {}, as dem-run placed them; bundle paths are\n# relative to that scene's directory. In place of its [[packings]], they start the same run.\n",
        scene.display()
    );
    for (i, g) in packed.iter().enumerate() {
        let grains = Grains {
            grains: g.grains.iter().map(|p| &p.spec).collect(),
        };
        text.push_str(&format!("\n# packings[{i}]: {} grains\n", g.grains.len()));
        text.push_str(&toml::to_string(&grains).expect("grains serialize to TOML"));
    }
    text
}
