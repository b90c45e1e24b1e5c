//! The periodic cell (`[cell]`, docs/experiments.md section 4): a parallelepiped of cell vectors
//! `a_1, a_2, a_3` (the columns of `H`) from `origin`, periodic along the vectors chosen.
//!
//! ```toml
//! [cell]
//! origin = [0, 0, 0]
//! size = [10, 10, 10]                # an orthorhombic cell, or its three vectors:
//! # vectors = [[10, 0, 0], [2, 10, 0], [0, 0, 10]]   # a_1, a_2, a_3 (rows here)
//! periodic = [true, true, true]      # along a_1, a_2, a_3 (default: all)
//! ```
//!
//! A grain's images are the grain displaced by `H n` for integer `n` (zero along the axes that
//! are not periodic). A pair of grains meets across the cell's faces as grain `a` and the image
//! `H s` of grain `b` ([`crate::law::PairKey::shift`]); its contact history stays with the pair
//! (the key's shift follows the grains as they are wrapped). Grains are kept in the cell: a free
//! grain whose centre leaves it through a periodic face comes back through the opposite face
//! (`X -> X - H m`), its pairs' shifts corrected, and its image count (`Body::image`, LAMMPS's
//! image flags) updated, so that its unwrapped position `X + H image` is continuous.
//!
//! Along each periodic axis the cell must be at least twice the largest grain's diameter across
//! (the distance between its faces `V / |a_j x a_k|` at least `4 r_max`, YADE's rule): then a
//! pair meets through one image at most, and no grain meets its own. A deforming cell that gets
//! narrower stops the run (there is no re-choice of skewed cell vectors, YADE's `flipCell`);
//! if it has a servo, the message gives the servo's targets and the stresses the grains carry
//! (a target they cannot carry compresses the cell until it is too narrow). Like every grain,
//! the cell's corners must lie within 1e8 of the smallest grain's radius from the origin
//! ([`crate::body::FARTHEST`]: beyond, floating point does not resolve a grain or its images).
//!
//! # A deforming cell
//!
//! ```toml
//! [cell]
//! size = [10, 10, 10]
//! velocity_gradient = [[0, 0.1, 0], [0, 0, 0], [0, 0, 0]]   # L (rows): simple shear dv_x/dy
//! servo = { pressure = [1e5, 1e5, 1e5], axes = [true, true, true], max_rate = 0.1, gain = 0.5 }
//! ```
//!
//! The cell vectors move at the rate `H' = L H` (docs/experiments.md section 4): `L` the
//! `velocity_gradient`, its diagonal entries on the servo's axes set each step by the servo
//! ([`CellServo`]). Over a step `dt` the rate is constant and `H += H' dt`. The images move with
//! the cell: image `n` of a grain is at `X + H n` with the velocity `v + H' n`. Grain
//! velocities are absolute: when the rate changes by `dH'`, each free grain's velocity changes
//! by `dH' H^-1 (X - origin)`, the change of the affine velocity field at its place (YADE's
//! `homoDeform`), so that grains on the affine field stay on it exactly; a grain wrapped by
//! `m` keeps its fluctuation about the field (`v -= H' m`, LAMMPS's `remap v`).
//!
//! Refused: a servo's target in tension on one of its axes (`pressure[k] < 0`: cohesionless
//! grains carry none, the servo wall's rule, crate::wall::check_pressure); an `L` that moves two
//! grains in contact by more than 0.1 of the smallest grain's radius per step relative to each
//! other, `|L| 2 r_max dt`, `|L|` the largest singular value over the `L` the servo may set (a
//! wall's rule: [`crate::timestep::check_wall_steps`]), which also keeps the cell from going
//! flat or inside out within a step (`det(I + s L dt) > 0`).

use std::sync::Arc;

use nalgebra::{Matrix3, Vector3};
use serde::{Deserialize, Serialize};

use crate::body::{Body, Drive, Shape};
use crate::broad;
use crate::error::KeyError;
use crate::law::{Histories, Partner};

/// `[cell]` in a scene.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellSpec {
    /// The corner the cell vectors start from.
    #[serde(default)]
    pub origin: [f64; 3],
    /// An orthorhombic cell's edges along x, y, z (exclusive with `vectors`).
    pub size: Option<[f64; 3]>,
    /// The cell vectors `a_1, a_2, a_3` (exclusive with `size`).
    pub vectors: Option<[[f64; 3]; 3]>,
    /// Which cell vectors are periodic.
    #[serde(default = "all_periodic")]
    pub periodic: [bool; 3],
    /// The velocity gradient `L` (rows: `L_ij = dv_i / dx_j`), constant.
    pub velocity_gradient: Option<[[f64; 3]; 3]>,
    /// A servo of the normal stresses.
    pub servo: Option<CellServo>,
}

/// `servo` in `[cell]`: the diagonal entries `L_kk` of the velocity gradient on its axes, set
/// each step so that the sample's normal stress `-sigma_kk` (compression positive, the
/// Love-Weber stress of crate::measure) reaches `pressure[k]`.
///
/// The strain increment that would close the stress error if the grains followed the cell
/// affinely, `(sigma_target - sigma_kk) / C_kk`, with `C_kk = (1 / V) sum k_n (n_k l_k)^2` over
/// the grain contacts (`k_n` the contact's normal stiffness, `n` its unit normal, `l` its branch
/// vector: the affine stiffness of the contact springs, Voigt's bound of the sample's), times
/// `gain`, over the step: `L_kk = gain (sigma_target - sigma_kk) / (C_kk dt)`, capped at
/// `max_rate` in magnitude (at the cap while no contact carries load). The affine stiffness
/// bounds the real one from above, so a sample that followed the cell quasi-statically would
/// close its error without overshoot for `gain <= 1`; the grains' inertia can still overshoot
/// (YADE's PeriTriaxController, with its mean stiffness replaced by the affine one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellServo {
    /// The target normal stress on each axis, compression positive (only the servo's axes are
    /// read).
    pub pressure: [f64; 3],
    /// The axes whose `L_kk` the servo sets (default all three).
    #[serde(default = "all_periodic")]
    pub axes: [bool; 3],
    /// The largest `|L_kk|` (1/time).
    pub max_rate: f64,
    /// The fraction of the stress error closed per step, `(0, 1]`.
    #[serde(default = "half")]
    pub gain: f64,
}

fn half() -> f64 {
    0.5
}

/// The lengths `|a_k|` of the columns of `h` and the volume of their unit vectors,
/// `D = det H / (|a_1| |a_2| |a_3|)` in `[-1, 1]` (0 for dependent vectors), apart: neither a
/// cell 1e300 long nor one 1e-300 thin leaves floating point.
fn proportions(h: &Matrix3<f64>) -> (Vector3<f64>, f64) {
    let lengths = Vector3::from_fn(|k, _| {
        let c = h.column(k);
        let largest = c.amax();
        largest * (c / largest).norm()
    });
    let units = Matrix3::from_fn(|i, k| h[(i, k)] / lengths[k]);
    (lengths, units.determinant())
}

fn all_periodic() -> [bool; 3] {
    [true; 3]
}

/// The cell of a simulation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// The corner.
    pub origin: Vector3<f64>,
    /// `H`: the cell vectors as columns.
    pub vectors: Matrix3<f64>,
    /// Which cell vectors are periodic.
    pub periodic: [bool; 3],
    /// `H'`: the cell vectors' rate over the last step.
    #[serde(default)]
    pub rate: Matrix3<f64>,
    /// Its loading (the scene's: a restart takes it from its scene).
    #[serde(default)]
    pub loading: Loading,
    /// What the last force evaluation measured for the next step: the sample's Love-Weber
    /// stress (tension positive), the affine stiffness `C_kk` of its contacts
    /// ([`CellServo`]) and `sum F_b s^T` over the pairs across the faces (the cell's power,
    /// crate::measure::ContactSums::images).
    #[serde(default)]
    pub measured: Measured,
}

/// See [`Cell::measured`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Measured {
    /// `sigma`.
    pub stress: Matrix3<f64>,
    /// `C_kk`.
    pub stiffness: Vector3<f64>,
    /// `sum F_b s^T`.
    pub images: Matrix3<f64>,
}

/// How a cell deforms: its velocity gradient, and the servo of some of its diagonal entries.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Loading {
    /// `L`.
    pub velocity_gradient: Matrix3<f64>,
    /// The servo.
    pub servo: Option<CellServo>,
}

impl CellSpec {
    /// The checks serde cannot make.
    pub fn check(&self) -> Result<(), KeyError> {
        let fail = |k: &str, m: String| Err(KeyError::new(format!("cell.{k}"), m));
        if !self.origin.iter().all(|x| x.is_finite()) {
            return fail(
                "origin",
                format!("finite numbers expected, got {:?}", self.origin),
            );
        }
        // The sizes are judged against the grains' in dem-run's `build`.
        match (self.size, self.vectors) {
            (Some(_), Some(_)) | (None, None) => {
                return fail("size", "give `size` or `vectors`, one of the two".into());
            }
            (Some(size), None) => {
                if !size.iter().all(|x| x.is_finite() && *x > 0.0) {
                    return fail("size", format!("three edges > 0, got {size:?}"));
                }
            }
            (None, Some(v)) => {
                if !v.iter().flatten().all(|x| x.is_finite()) {
                    return fail("vectors", "finite numbers expected".into());
                }
                let h = Matrix3::from_columns(&v.map(Vector3::from));
                let (_, d) = proportions(&h);
                if d.is_nan() || d <= 0.0 {
                    return fail(
                        "vectors",
                        format!(
                            "three independent vectors, right-handed (a_1 . (a_2 x a_3) > 0), got {v:?}"
                        ),
                    );
                }
            }
        }
        if let Some(l) = self.velocity_gradient {
            if !l.iter().flatten().all(|x| x.is_finite()) {
                return fail("velocity_gradient", "finite numbers expected".into());
            }
            // Along an axis that is not periodic the sample is bounded by walls, which do not
            // follow the cell.
            let fixed = |k: usize| !self.periodic[k];
            if let Some((i, j)) = (0..9)
                .map(|n| (n / 3, n % 3))
                .find(|&(i, j)| (fixed(i) || fixed(j)) && l[i][j] != 0.0)
            {
                return fail(
                    "velocity_gradient",
                    format!(
                        "L_{i}{j} = {} moves the sample along or across an axis that is not periodic, where walls bound it: 0 expected in the rows and columns of axes that are not periodic",
                        l[i][j]
                    ),
                );
            }
        }
        if let Some(servo) = &self.servo {
            if self.periodic != [true; 3] {
                return fail(
                    "servo",
                    "a cell periodic on its three axes (the stress is the cell's)".into(),
                );
            }
            if !servo.axes.iter().any(|a| *a) {
                return fail("servo.axes", "at least one axis".into());
            }
            if !servo.pressure.iter().all(|p| p.is_finite()) {
                return fail("servo.pressure", "finite numbers expected".into());
            }
            for (k, &p) in servo.pressure.iter().enumerate() {
                if servo.axes[k] {
                    crate::wall::check_pressure(p, format!("cell.servo.pressure[{k}]"))?;
                }
            }
            if !(servo.max_rate.is_finite() && servo.max_rate > 0.0) {
                return fail(
                    "servo.max_rate",
                    format!("a rate > 0 expected, got {}", servo.max_rate),
                );
            }
            if !(servo.gain > 0.0 && servo.gain <= 1.0) {
                return fail(
                    "servo.gain",
                    format!("a fraction in (0, 1] expected, got {}", servo.gain),
                );
            }
            let l = self.velocity_gradient.unwrap_or_default();
            if let Some(k) = (0..3).find(|&k| servo.axes[k] && l[k][k] != 0.0) {
                return fail(
                    "velocity_gradient",
                    format!(
                        "L_{k}{k} is set by the servo on axis {k}: 0 expected there, got {}",
                        l[k][k]
                    ),
                );
            }
        }
        Ok(())
    }

    /// The cell (the spec checked).
    pub fn cell(&self) -> Cell {
        let vectors = match (self.size, self.vectors) {
            (Some(size), _) => Matrix3::from_diagonal(&Vector3::from(size)),
            (None, Some(v)) => Matrix3::from_columns(&v.map(Vector3::from)),
            (None, None) => unreachable!("checked: size or vectors"),
        };
        let rows = self.velocity_gradient.unwrap_or_default();
        Cell {
            origin: Vector3::from(self.origin),
            vectors,
            periodic: self.periodic,
            rate: Matrix3::zeros(),
            loading: Loading {
                velocity_gradient: Matrix3::from_fn(|i, j| rows[i][j]),
                servo: self.servo.clone(),
            },
            measured: Measured::default(),
        }
    }
}

impl Cell {
    /// Whether its loading deforms it.
    pub fn deforms(&self) -> bool {
        self.loading.servo.is_some() || self.loading.velocity_gradient != Matrix3::zeros()
    }

    /// Whether it deforms or still moves (a restart into a scene whose cell is at rest stops
    /// the checkpoint's rate at the next step).
    pub fn moving(&self) -> bool {
        self.deforms() || self.rate != Matrix3::zeros()
    }

    /// The rate `H' = L H` of the next step `dt`, `L` the loading's with the servo's entries
    /// from the last evaluation's stress and affine stiffness ([`Cell::measured`]).
    pub fn next_rate(&self, dt: f64) -> Matrix3<f64> {
        let (stress, stiffness) = (&self.measured.stress, &self.measured.stiffness);
        let mut l = self.loading.velocity_gradient;
        if let Some(servo) = &self.loading.servo {
            for k in (0..3).filter(|&k| servo.axes[k]) {
                let error = -servo.pressure[k] - stress[(k, k)];
                let cap = servo.max_rate;
                l[(k, k)] = if stiffness[k] > 0.0 {
                    (servo.gain * error / (stiffness[k] * dt)).clamp(-cap, cap)
                } else if error != 0.0 {
                    cap * error.signum()
                } else {
                    0.0
                };
            }
        }
        l * self.vectors
    }

    /// The displacement `H n` of image `n`.
    #[inline]
    pub fn shift(&self, n: [i32; 3]) -> Vector3<f64> {
        self.vectors * Vector3::new(n[0] as f64, n[1] as f64, n[2] as f64)
    }

    /// The corners `origin + H c`, `c` in `{0, 1}^3`, corner `c` at the bits of its index
    /// (bit `k`: along `a_k`).
    pub fn corners(&self) -> [Vector3<f64>; 8] {
        std::array::from_fn(|c| {
            self.origin + self.vectors * Vector3::from_fn(|k, _| f64::from((c >> k & 1) as u8))
        })
    }

    /// The volume `det H`.
    pub fn volume(&self) -> f64 {
        self.vectors.determinant()
    }

    /// The distance between the two faces across each cell vector, `V / |a_j x a_k|`, as
    /// `|a_i| D / |u_j x u_k|` with the unit vectors `u` and their volume `D`
    /// (the products of a cell 1e300 long would overflow).
    pub fn widths(&self) -> [f64; 3] {
        let (lengths, d) = proportions(&self.vectors);
        let u = |k: usize| self.vectors.column(k) / lengths[k];
        [0, 1, 2].map(|k| lengths[k] * d / u((k + 1) % 3).cross(&u((k + 2) % 3)).norm())
    }

    /// The velocity gradients its loading may apply over a step: `L` with each of the servo's
    /// entries at `-max_rate` or `max_rate` (the `L` it may set are their convex
    /// combinations), or `L` alone.
    pub fn extreme_gradients(&self) -> Vec<Matrix3<f64>> {
        let l = self.loading.velocity_gradient;
        let Some(servo) = &self.loading.servo else {
            return vec![l];
        };
        (0..8u32)
            .map(|corner| {
                let mut l = l;
                for k in (0..3).filter(|&k| servo.axes[k]) {
                    l[(k, k)] = if corner >> k & 1 == 1 {
                        servo.max_rate
                    } else {
                        -servo.max_rate
                    };
                }
                l
            })
            .collect()
    }

    /// The fractional coordinates `H^-1 (x - origin)`.
    pub fn fractional(&self, x: &Vector3<f64>) -> Vector3<f64> {
        self.vectors
            .try_inverse()
            .expect("a cell of positive volume")
            * (x - self.origin)
    }

    /// `x` brought into the cell along its periodic axes, `x - H m`, and the image `m`
    /// ([`Cell::wrap`]).
    pub fn into_cell(&self, x: &Vector3<f64>) -> (Vector3<f64>, [i32; 3]) {
        let m = self.wrap(x);
        (x - self.shift(m), m)
    }

    /// The image `m` that brings `x` into the cell along its periodic axes (`x - H m` inside).
    pub fn wrap(&self, x: &Vector3<f64>) -> [i32; 3] {
        let s = self.fractional(x);
        [0, 1, 2].map(|k| {
            if self.periodic[k] {
                s[k].floor() as i32
            } else {
                0
            }
        })
    }
}

/// The grain pairs of a periodic cell that touch one of the first `owned` bodies: for each
/// body `i`, its partners `j > i` with the image `s` of `j` that meets it
/// (`|X_j + H s - X_i| < r_i + r_j`), sorted. Each body near a periodic face (within its reach
/// plus the largest, in the face's normal direction) gets image copies displaced by the cell
/// vectors across it; the cell list of [`broad::neighbours_of_first`] finds the partners of
/// the owned bodies and their copies among all (a pair meeting through an image meets a copy
/// of one of its grains by the other grain; the copies are listed owned first, so that the
/// owned side searches), and each pair found is keyed by its two bodies and the relative image
/// (a pair found from both grains is kept once).
pub fn periodic_neighbours(
    cell: &Cell,
    centres: &[Vector3<f64>],
    radii: &[f64],
    owned: usize,
) -> Vec<Vec<(u32, [i32; 3])>> {
    let n = centres.len();
    let largest = radii.iter().copied().fold(0.0, f64::max);
    let widths = cell.widths();
    let inverse = cell
        .vectors
        .try_inverse()
        .expect("a cell of positive volume");
    // Every copy: its body and image, its centre and reach; the owned bodies and their images
    // first, then the ghosts and theirs.
    let mut copies = Vec::with_capacity(n);
    let geometry = (&inverse, widths, largest);
    copy_part(cell, (centres, radii), 0..owned, geometry, &mut copies);
    let searching = copies.len();
    copy_part(cell, (centres, radii), owned..n, geometry, &mut copies);
    let (ghost_centres, ghost_radii): (Vec<Vector3<f64>>, Vec<f64>) = (copies.iter())
        .map(|&(i, image)| (centres[i as usize] + cell.shift(image), radii[i as usize]))
        .unzip();
    let found = broad::neighbours_of_first(&ghost_centres, &ghost_radii, searching);
    let mut pairs: Vec<Vec<(u32, [i32; 3])>> = vec![Vec::new(); n];
    for (p, qs) in found.iter().enumerate() {
        let (i, ni) = copies[p];
        for &q in qs {
            let (j, nj) = copies[q as usize];
            let relative = [0, 1, 2].map(|k| nj[k] - ni[k]);
            match i.cmp(&j) {
                std::cmp::Ordering::Less => pairs[i as usize].push((j, relative)),
                std::cmp::Ordering::Greater => {
                    pairs[j as usize].push((i, relative.map(|r| -r)));
                }
                // A grain meets no image of its own in a cell wide enough (checked).
                std::cmp::Ordering::Equal => {}
            }
        }
    }
    for p in &mut pairs {
        p.sort_unstable();
        p.dedup();
    }
    pairs
}

/// The copies of bodies `range` ([`periodic_neighbours`]): each body, then the images of those
/// near a periodic face (within its reach plus the `largest`), appended to `copies` as (body,
/// image); `(inverse, widths)`: the cell's `H^-1` and widths.
fn copy_part(
    cell: &Cell,
    (centres, radii): (&[Vector3<f64>], &[f64]),
    range: std::ops::Range<usize>,
    (inverse, widths, largest): (&nalgebra::Matrix3<f64>, [f64; 3], f64),
    copies: &mut Vec<(u32, [i32; 3])>,
) {
    copies.extend(range.clone().map(|i| (i as u32, [0; 3])));
    for i in range {
        let margin = radii[i] + largest;
        let s = inverse * (centres[i] - cell.origin);
        // Per axis, the images to make: none, or the one across the near face.
        let across = [0, 1, 2].map(|k| {
            if !cell.periodic[k] {
                0
            } else if s[k] * widths[k] < margin {
                1
            } else if (1.0 - s[k]) * widths[k] < margin {
                -1
            } else {
                0
            }
        });
        for m in 1..8u32 {
            let image = [0, 1, 2].map(|k| if m >> k & 1 == 1 { across[k] } else { 0 });
            if (0..3).any(|k| (m >> k & 1 == 1) && across[k] == 0) {
                continue;
            }
            copies.push((i as u32, image));
        }
    }
}

/// Stage 1a: the cell's rate for the step ([`Cell::next_rate`]), and the change of the affine velocity field added to the free grains
/// (`v += dH' H^-1 (X - origin)`, crate::cell); returns the kinetic energy this gives them (work
/// of the cell in the ledger).
pub fn deform_cell(cell: &mut Cell, bodies: &mut [Body], shapes: &[Arc<Shape>], dt: f64) -> f64 {
    if !cell.moving() {
        return 0.0;
    }
    let rate = cell.next_rate(dt);
    let change = rate - cell.rate;
    cell.rate = rate;
    if change == nalgebra::Matrix3::zeros() {
        return 0.0;
    }
    let field = change
        * cell
            .vectors
            .try_inverse()
            .expect("a cell of positive volume");
    let mut work = 0.0;
    for b in bodies.iter_mut().filter(|b| matches!(b.drive, Drive::Free)) {
        let before = b.velocity.norm_squared();
        b.velocity += field * (b.position - cell.origin);
        work += 0.5 * shapes[b.shape].mass * (b.velocity.norm_squared() - before);
    }
    work
}

/// A grain's wrap: its global id and the cell vectors `m` it was moved back by.
pub type Wrapped = (u32, [i32; 3]);

/// Stage 2b: the free grains whose centres left the cell through a periodic face, back into
/// it (`X -> X - H m`, `v -> v - H' m`, their image count `+ m`); `ids`: their global ids.
/// Returns the velocity changes `(id, -H' m)` (none in a cell at rest), whose kinetic energy
/// is the cell's work in the ledger, and the wraps, sorted by id ([`reshift`] corrects the
/// pairs' shifts).
pub fn wrap(
    cell: &Cell,
    bodies: &mut [Body],
    ids: &[u32],
) -> (Vec<(u32, Vector3<f64>)>, Vec<Wrapped>) {
    let mut moved = Vec::new();
    let mut remapped = Vec::new();
    for (i, b) in bodies.iter_mut().enumerate() {
        if !b.is_free() {
            continue;
        }
        let (inside, m) = cell.into_cell(&b.position);
        if m != [0; 3] {
            let n = Vector3::from(m.map(f64::from));
            b.position = inside;
            if cell.rate != nalgebra::Matrix3::zeros() {
                let dv = -(cell.rate * n);
                b.velocity += dv;
                remapped.push((ids[i], dv));
            }
            b.image = [0, 1, 2].map(|k| b.image[k].saturating_add(m[k]));
            moved.push((ids[i], m));
        }
    }
    moved.sort_unstable();
    (remapped, moved)
}

/// The pairs' image shifts after the wraps `moved` (sorted by id), so that each pair keeps its
/// history: `s - m` where the grain is the pair's first, `s + m` where it is the partner.
pub fn reshift(histories: &mut Histories, moved: &[Wrapped]) {
    if moved.is_empty() {
        return;
    }
    for (key, _) in histories.iter_mut() {
        let partner = match key.b {
            Partner::Body(j) => wrap_of(moved, j),
            Partner::Wall(_) => [0; 3],
        };
        key.shift = reshifted(key.shift, wrap_of(moved, key.a), partner);
    }
    histories.sort_by_key(|h| h.0);
}

/// The cell vectors grain `id` was moved back by among the wraps `moved` (sorted by id; zero if
/// it did not wrap).
pub fn wrap_of(moved: &[Wrapped], id: u32) -> [i32; 3] {
    (moved.binary_search_by_key(&id, |e| e.0)).map_or([0; 3], |k| moved[k].1)
}

/// A pair's image shift `n` after its first grain wrapped by `m_a` and its partner by `m_b`:
/// `n - m_a + m_b`, so that `X_b + H n - X_a` is unchanged.
pub fn reshifted(n: [i32; 3], m_a: [i32; 3], m_b: [i32; 3]) -> [i32; 3] {
    [0, 1, 2].map(|k| n[k] - m_a[k] + m_b[k])
}

/// Refuses a cell narrower than twice the largest grain's diameter across a periodic axis, the
/// grains reaching `largest` from their centres (dem_core::cell): a pair could meet through two
/// images, or a grain its own. A deformed cell with a servo may have been compressed there
/// towards a stress its grains do not carry at any width they fit in: the message gives the
/// servo's targets and the stresses carried.
pub fn check_cell(cell: &Cell, largest: f64) -> Result<(), KeyError> {
    let widths = cell.widths();
    let Some(k) = (0..3).find(|&k| cell.periodic[k] && widths[k] < 4.0 * largest) else {
        return Ok(());
    };
    let servo = match &cell.loading.servo {
        Some(servo) if cell.rate != Matrix3::zeros() => {
            let carried = [0, 1, 2].map(|k| format!("{:e}", -cell.measured.stress[(k, k)]));
            let asked = servo.pressure.map(|p| format!("{p:e}"));
            format!(
                ", or a servo target the grains carry (its servo asks for the pressures [{}]; they carry [{}])",
                asked.join(", "),
                carried.join(", ")
            )
        }
        _ => String::new(),
    };
    Err(KeyError::new(
        "cell".into(),
        format!(
            "{:e} across periodic axis {} (a_{}), less than twice the largest grain's diameter {:e}: a larger cell{servo}",
            widths[k],
            k + 1,
            k + 1,
            4.0 * largest
        ),
    ))
}
