//! Sample measures (docs/experiments.md section 2): the stress tensor of the sample
//! (Love-Weber), its solid fraction, the mean and mechanical coordination numbers, the fabric
//! tensor and the unbalanced-force ratio, written to history.csv.
//!
//! Stress. Each grain `p` in equilibrium carries the mean stress
//! `V_p sigma_p = sum_k f_k (x_k - X_p)^T` over the forces `f_k` on it at their points `x_k`
//! (the divergence theorem with `div sigma = 0`; Love 1927, Weber 1966), and the sample's is
//! `sigma = (1 / V) sum_p sum_k f_k (x_k - X_p)^T`, taken symmetric. Tension is positive. A
//! grain pair's forces act at one point on both grains (a node, or the sphere contact point),
//! so its two terms sum to `F (X_a - X_b)^T` with `F` the force on `b`: the branch-vector form,
//! with the branch vector across a periodic face being the image's. Against a wall the lever is
//! the contact point's. Deformable grains: the same sum, at the current contact points and
//! centres of mass (the modes are mass-orthogonal to the rigid motions and keep the centre of
//! mass); the modes enter through the forces and where they act. The grain's own internal
//! forces are in equilibrium with its contact forces and add nothing. Dropped: the inertial
//! terms (`sum m v v^T` and the grains' accelerations), negligible in quasi-static loading
//! (their ratio to the contact stress is the inertial number squared).
//!
//! Sample volume `V`: the periodic cell's, or the volume the scene's walls enclose when they
//! are three pairs of parallel planes (a parallelepiped, at their current positions) or a
//! cylinder and two planes across its axis; otherwise the stress and solid fraction are not
//! written (the run says so).

use nalgebra::{Matrix3, Vector3};
use serde::{Deserialize, Serialize};

use crate::body::{Body, Drive, Shape};
use crate::cell::Cell;
use crate::error::KeyError;
use crate::law::{PairKey, PairOutcome, Partner};
use crate::modal::ModalShape;
use crate::path::Configuration;
use crate::wall::{Bound, Kind, Wall};

/// What the force reduction keeps of one evaluation for the sample measures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContactSums {
    /// `sum_p sum_k f_k (x_k - X_p)^T` over the contacts.
    pub dipole: Matrix3<f64>,
    /// `sum n n^T` over grain-grain contacts (`n` the unit contact normal).
    pub fabric: Matrix3<f64>,
    /// Grain-grain contacts `C`.
    pub grain_contacts: usize,
    /// Grains with no grain-grain contact `N_0`, and with one `N_1`.
    pub rattlers: (usize, usize),
    /// `sum |F|` over the pairs in contact (grains and walls), `F` the force on body `a`.
    pub contact_force: f64,
    /// Pairs in contact (grains and walls).
    pub contact_pairs: usize,
    /// `sum |F_p|` over the free grains of their net force (contacts and gravity).
    pub unbalanced_force: f64,
    /// Free grains.
    pub free_grains: usize,
    /// `sum k_n (n_k l_k)^2` over grain-grain contacts, per axis `k` (`k_n` the normal
    /// stiffness, `l` the branch vector): `V` times the affine stiffness `C_kk` of a periodic
    /// cell's servo (crate::cell::CellServo).
    pub stiffness: Vector3<f64>,
    /// Grains (owned by the process, in a decomposed run).
    pub grains: usize,
    /// `sum F_b s^T` over the pairs that meet across a periodic cell's faces (`F_b` the force
    /// on the partner's image `s`): their power is `-H' : (sum F_b s^T)` as the cell deforms
    /// (the work of the cell in the energy ledger).
    pub images: Matrix3<f64>,
}

/// Counts a grain pair in contact for its two grains (`ends`: their indices in `count`).
pub fn count_contact(key: &PairKey, o: &PairOutcome, ends: [usize; 2], count: &mut [u32]) {
    if o.nodes_in_contact > 0 && matches!(key.b, Partner::Body(_)) {
        count[ends[0]] += 1;
        count[ends[1]] += 1;
    }
}

/// The numbers of [`ContactSums::flat`].
const SUMS: usize = 38;

impl ContactSums {
    /// Adds a pair's outcome; `branch` is the branch vector `X_b + H s - X_a` of a grain pair.
    /// The grains' contact counts are [`count_contact`]'s.
    pub fn add(&mut self, key: &PairKey, o: &PairOutcome, branch: Option<Vector3<f64>>) {
        if o.nodes_in_contact == 0 {
            return;
        }
        self.dipole += o.dipole;
        self.contact_force += o.on_a.0.norm();
        self.contact_pairs += 1;
        if key.shift != [0; 3] {
            let s = Vector3::from(key.shift.map(f64::from));
            self.images += o.on_b.0 * s.transpose();
        }
        if let Partner::Body(_) = key.b {
            self.grain_contacts += 1;
            if let Some(n) = o.normal.try_normalize(0.0) {
                self.fabric += n * n.transpose();
                if let Some(l) = branch {
                    self.stiffness += o.stiffness * n.component_mul(&l).map(|x| x * x);
                }
            }
        }
    }

    /// The sums as numbers (counts exact below 2^53), for a sum over processes.
    pub fn flat(&self) -> Vec<f64> {
        let mut x = Vec::with_capacity(SUMS);
        x.extend(self.dipole.iter());
        x.extend(self.fabric.iter());
        x.extend(self.stiffness.iter());
        x.extend(self.images.iter());
        x.extend([
            self.grain_contacts as f64,
            self.rattlers.0 as f64,
            self.rattlers.1 as f64,
            self.contact_force,
            self.contact_pairs as f64,
            self.unbalanced_force,
            self.free_grains as f64,
            self.grains as f64,
        ]);
        x
    }

    /// The sums [`ContactSums::flat`] gave.
    pub fn from_flat(x: &[f64]) -> ContactSums {
        ContactSums {
            dipole: Matrix3::from_column_slice(&x[0..9]),
            fabric: Matrix3::from_column_slice(&x[9..18]),
            stiffness: Vector3::from_column_slice(&x[18..21]),
            images: Matrix3::from_column_slice(&x[21..30]),
            grain_contacts: x[30] as usize,
            rattlers: (x[31] as usize, x[32] as usize),
            contact_force: x[33],
            contact_pairs: x[34] as usize,
            unbalanced_force: x[35],
            free_grains: x[36] as usize,
            grains: x[37] as usize,
        }
    }

    /// Closes the sums with the grains' contact counts and `bodies` after the reduction
    /// (their forces the contacts' and gravity's).
    pub fn finish(&mut self, count: &[u32], bodies: &[Body]) {
        self.grains = bodies.len();
        self.rattlers = (
            count.iter().filter(|&&c| c == 0).count(),
            count.iter().filter(|&&c| c == 1).count(),
        );
        for b in bodies.iter().filter(|b| matches!(b.drive, Drive::Free)) {
            self.unbalanced_force += b.force.norm();
            self.free_grains += 1;
        }
    }
}

/// The sample measures of a state.
#[derive(Debug, Clone, PartialEq)]
pub struct Measures {
    /// Mean coordination number `Z = 2 C / N` (grain-grain contacts, all grains).
    pub coordination: f64,
    /// Mechanical coordination number `Z_m = (2 C - N_1) / (N - N_0 - N_1)`, rattlers (grains
    /// with fewer than two grain-grain contacts) excluded (Thornton 2000); 0 with no grain
    /// left.
    pub mechanical_coordination: f64,
    /// Rattlers `N_0 + N_1`.
    pub rattlers: usize,
    /// Fabric tensor `(1 / C) sum n n^T` (trace 1; zero without contacts).
    pub fabric: Matrix3<f64>,
    /// Mean net force on the free grains over the mean contact force; undefined (`None`)
    /// without contacts or free grains (history.csv writes 0 then, and `[stop] unbalanced` is
    /// never met: grains in free fall are not in equilibrium).
    pub unbalanced: Option<f64>,
    /// The sample's volume, stress and solid fraction, when it has a volume.
    pub sample: Option<SampleState>,
}

/// The measures that need the sample's volume.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleState {
    /// The volume `V`.
    pub volume: f64,
    /// Love-Weber stress (symmetric, tension positive).
    pub stress: Matrix3<f64>,
    /// The grains' volume (deformed) over `V`.
    pub solid_fraction: f64,
}

impl SampleState {
    /// Mean stress `p = -tr(sigma) / 3` (compression positive).
    pub fn pressure(&self) -> f64 {
        -self.stress.trace() / 3.0
    }

    /// Deviatoric stress `q = sqrt(3/2 s : s)`, `s = sigma + p I`.
    pub fn deviator(&self) -> f64 {
        let s = self.stress + Matrix3::identity() * self.pressure();
        (1.5 * s.component_mul(&s).sum()).sqrt()
    }
}

/// The measures of contact sums `s` (a force evaluation's, [`ContactSums`]) in a sample of
/// `volume` holding grains of total (deformed) volume `solid`, when it has a volume
/// ([`crate::sim::Simulation::measures`] gives a simulation's).
pub fn measures(s: &ContactSums, sample: Option<(f64, f64)>) -> Measures {
    let n = s.grains;
    let (n0, n1) = s.rattlers;
    let c = s.grain_contacts as f64;
    let kept = n - n0 - n1;
    let mean = |sum: f64, count: usize| if count > 0 { sum / count as f64 } else { 0.0 };
    let contact = mean(s.contact_force, s.contact_pairs);
    Measures {
        coordination: 2.0 * c / n as f64,
        mechanical_coordination: if kept > 0 {
            (2.0 * c - n1 as f64) / kept as f64
        } else {
            0.0
        },
        rattlers: n0 + n1,
        fabric: if s.grain_contacts > 0 {
            s.fabric / c
        } else {
            Matrix3::zeros()
        },
        unbalanced: (contact > 0.0 && s.free_grains > 0)
            .then(|| mean(s.unbalanced_force, s.free_grains) / contact),
        sample: sample.map(|(volume, solid)| SampleState {
            volume,
            stress: (s.dipole + s.dipole.transpose()) / (2.0 * volume),
            solid_fraction: solid / volume,
        }),
    }
}

/// The sample's volume: a cell's periodic along its three vectors, or what the walls enclose
/// ([`sample_volume`]).
pub fn volume(cell: Option<&Cell>, walls: &[Wall]) -> Option<f64> {
    match cell {
        Some(c) if c.periodic == [true; 3] => Some(c.volume()),
        _ => sample_volume(walls),
    }
}

/// The volume the walls enclose: three pairs of parallel planes facing each other (a
/// parallelepiped), or a cylinder and two planes across its axis; `None` for any other set.
pub fn sample_volume(walls: &[Wall]) -> Option<f64> {
    enclosure(walls).map(|e| e.volume)
}

/// The area of wall `w`'s face of the enclosure: the volume over the gap between `w` and the
/// plane facing it (`None` if the walls enclose nothing or `w` is not a plane of it).
pub fn face_area(walls: &[Wall], w: usize) -> Option<f64> {
    let e = enclosure(walls)?;
    let &(_, _, gap) = e.gaps.iter().find(|(i, j, _)| *i == w || *j == w)?;
    Some(e.volume / gap)
}

/// An enclosure of walls: its volume, and its pairs of facing planes with their gaps.
struct Enclosure {
    volume: f64,
    gaps: Vec<(usize, usize, f64)>,
}

fn enclosure(walls: &[Wall]) -> Option<Enclosure> {
    let bounds: Vec<Bound> = (walls.iter())
        .map(|w| w.geometry.bound(&w.displacement))
        .collect();
    if bounds.contains(&Bound::Other) {
        return None;
    }
    let planes: Vec<(usize, Vector3<f64>, Vector3<f64>)> = (bounds.iter().enumerate())
        .filter_map(|(i, b)| match *b {
            Bound::Plane { point, normal } => Some((i, point, normal)),
            _ => None,
        })
        .collect();
    let cylinders: Vec<(f64, Vector3<f64>)> = (bounds.iter())
        .filter_map(|b| match *b {
            Bound::Cylinder { radius, axis } => Some((radius, axis)),
            _ => None,
        })
        .collect();
    // The gaps between planes facing each other along each normal.
    let mut gaps: Vec<(usize, usize, f64)> = Vec::new();
    let mut normals: Vec<Vector3<f64>> = Vec::new();
    let mut used = vec![false; planes.len()];
    for a in 0..planes.len() {
        for b in a + 1..planes.len() {
            let ((i, p, n), (j, q, m)) = (planes[a], planes[b]);
            if used[a] || used[b] || n.dot(&m) > -1.0 + 1e-9 {
                continue;
            }
            let gap = (q - p).dot(&n);
            if gap > 0.0 {
                gaps.push((i, j, gap));
                normals.push(n);
                used[a] = true;
                used[b] = true;
            }
        }
    }
    if used.iter().any(|u| !u) {
        return None;
    }
    let volume = match (gaps.as_slice(), cylinders.as_slice()) {
        ([a, b, c], []) => {
            let det = normals[0].dot(&normals[1].cross(&normals[2])).abs();
            (det > 1e-9).then(|| a.2 * b.2 * c.2 / det)
        }
        ([(_, _, h)], [(r, axis)]) if normals[0].dot(axis).abs() > 1.0 - 1e-9 => {
            Some(std::f64::consts::PI * r * r * h)
        }
        _ => None,
    }?;
    Some(Enclosure { volume, gaps })
}

/// A grain's volume in its current shape: the reference volume, plus for a deformable grain
/// the change `int (det(I + grad u) - 1) dV` over the reference shape, `u` the displacement of
/// its amplitudes, integrated over the grid's cells weighted by the part of each inside
/// (`clamp(1/2 - phi_c / h, 0, 1)` from the level set at the cell's centre; exact for a
/// homogeneous deformation up to that weighting, which is second order in the amplitude over
/// the boundary cells).
pub fn grain_volume(shape: &Shape, body: &Body) -> f64 {
    match (&shape.modal, &body.modes) {
        (Some(modal), Some(modes)) => shape.volume + volume_change(shape, modal, &modes.eps),
        _ => shape.volume,
    }
}

fn volume_change(shape: &Shape, modal: &ModalShape, eps: &[f64]) -> f64 {
    let config = Configuration::new(&modal.paths, eps);
    let grid = &shape.levelset;
    let spec = grid.spec();
    let [nx, ny, nz] = spec.dims;
    let h = spec.spacing;
    let phi = grid.values();
    let mut change = 0.0;
    for i in 0..nx.saturating_sub(1) {
        for j in 0..ny.saturating_sub(1) {
            for k in 0..nz.saturating_sub(1) {
                let corner = |c: usize| spec.index(i + (c >> 2), j + ((c >> 1) & 1), k + (c & 1));
                let centre: f64 = (0..8).map(|c| phi[corner(c)]).sum::<f64>() / 8.0;
                let weight = (0.5 - centre / h).clamp(0.0, 1.0);
                if weight == 0.0 {
                    continue;
                }
                // The trilinear displacement's gradient at the cell's centre: along each axis,
                // the mean of the four edge differences.
                let mut g = Matrix3::zeros();
                for c in 0..8 {
                    let u = config.grid_displacement(corner(c));
                    let sign = |bit: usize| if c & bit != 0 { 1.0 } else { -1.0 };
                    let column = Vector3::new(sign(4), sign(2), sign(1)) / (4.0 * h);
                    g += u * column.transpose();
                }
                change += weight * ((Matrix3::identity() + g).determinant() - 1.0);
            }
        }
    }
    change * h * h * h
}

/// `[stop]`: ends a run before its steps or duration when every condition given holds, checked
/// every `every` steps from step `after` on (docs/experiments.md section 2):
///
/// ```toml
/// [stop]
/// unbalanced = 0.01     # the unbalanced-force ratio at most this
/// pressure = 1e5        # the mean stress p = -tr(sigma) / 3 at least this (compression positive)
/// solid_fraction = 0.6  # at least this
/// creep = { solid_fraction = 1e-4, over = 2000 }  # the solid fraction's change over the last
///                       # `over` steps at most this fraction of it (a multiple of `every`)
/// after = 1000          # not before this step (default 0; counted from step 0, in a stage too)
/// every = 100           # checked every this many steps (default 100)
/// ```
///
/// `pressure`, `solid_fraction` and `creep` need a sample volume (the walls enclose a box or a
/// closed cylinder). The other conditions are instantaneous, and a sample held at its pressure
/// can meet them while it still compacts (a frictionless packing under a servo did for 2,800
/// steps more, 0.01 in solid fraction: docs/experiments.md section 6); `creep` asks that the
/// compaction has ceased. It compares the check at `step` with the one `over` steps before, in
/// the same run: a restarted stage meets it `over` steps after its restart at the earliest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stop {
    /// The unbalanced-force ratio at most this.
    pub unbalanced: Option<f64>,
    /// The mean stress at least this.
    pub pressure: Option<f64>,
    /// The solid fraction at least this.
    pub solid_fraction: Option<f64>,
    /// The solid fraction's change over a window at most this fraction of it.
    pub creep: Option<Creep>,
    /// No stop before this step.
    #[serde(default)]
    pub after: u64,
    /// Checked every this many steps.
    #[serde(default = "hundred")]
    pub every: u64,
}

fn hundred() -> u64 {
    100
}

/// `[stop] creep`: `|phi(step) - phi(step - over)| <= solid_fraction phi(step)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Creep {
    /// The largest relative change.
    pub solid_fraction: f64,
    /// The window, in steps (a multiple of `every`).
    pub over: u64,
}

/// What a run remembers for its stop conditions: the solid fraction at each check of the last
/// `creep.over` steps ([`Stop::reached`]; empty at a run's start, a restart's included).
#[derive(Debug, Default)]
pub struct Watch {
    past: std::collections::VecDeque<(u64, f64)>,
}

impl Stop {
    /// The checks serde cannot make.
    pub fn check(&self) -> Result<(), KeyError> {
        let fail = |k: &str, m: String| Err(KeyError::new(format!("stop.{k}"), m));
        if self.unbalanced.is_none()
            && self.pressure.is_none()
            && self.solid_fraction.is_none()
            && self.creep.is_none()
        {
            return fail(
                "unbalanced",
                "a condition: unbalanced, pressure, solid_fraction or creep".into(),
            );
        }
        if let Some(c) = self.creep {
            if !(c.solid_fraction > 0.0 && c.solid_fraction < 1.0) {
                return fail(
                    "creep.solid_fraction",
                    format!(
                        "a finite number in (0, 1) (a relative change), got {}",
                        c.solid_fraction
                    ),
                );
            }
            if c.over == 0 || !c.over.is_multiple_of(self.every.max(1)) {
                return fail(
                    "creep.over",
                    format!(
                        "a positive multiple of stop.every ({}), got {}",
                        self.every, c.over
                    ),
                );
            }
        }
        // The ranges the measures can take (docs/experiments.md section 2): a ratio of force
        // magnitudes is > 0 (0 is never reached: the grains keep some net force); a sample
        // without cohesion carries compression only, p > 0 (tension positive in the stress,
        // compression positive in p); a solid fraction is in (0, 1), written as a fraction.
        let ranges = [
            (
                "unbalanced",
                self.unbalanced,
                "> 0 (a ratio of forces)",
                0.0,
                f64::MAX,
            ),
            (
                "pressure",
                self.pressure,
                "> 0 (the mean stress of a cohesionless sample, compression positive)",
                0.0,
                f64::MAX,
            ),
            (
                "solid_fraction",
                self.solid_fraction,
                "in (0, 1) (a fraction, not a percentage)",
                0.0,
                1.0,
            ),
        ];
        for (k, v, range, low, high) in ranges {
            if let Some(v) = v
                && !(v > low && v < high)
            {
                return fail(k, format!("a finite number {range}, got {v}"));
            }
        }
        if self.every == 0 {
            return fail("every", "at least 1".into());
        }
        Ok(())
    }

    /// Refuses conditions on the sample's volume when it has none.
    pub fn check_volume(&self, cell: Option<&Cell>, walls: &[Wall]) -> Result<(), KeyError> {
        let needs = [
            ("pressure", self.pressure),
            ("solid_fraction", self.solid_fraction),
            ("creep", self.creep.map(|c| c.solid_fraction)),
        ];
        match needs.iter().find(|(_, v)| v.is_some()) {
            Some((k, _)) if volume(cell, walls).is_none() => Err(KeyError::new(
                format!("stop.{k}"),
                "needs the sample's volume: a cell periodic on its three axes, or walls that enclose a box (three pairs of facing planes) or a cylinder closed by two planes".into(),
            )),
            _ => Ok(()),
        }
    }

    /// Whether the conditions are checked at `step` (the measures cost a pass over the grains:
    /// they are computed only then).
    pub fn due(&self, step: u64) -> bool {
        step >= self.after && step.is_multiple_of(self.every)
    }

    /// Whether the run stops at `step` with measures `m`: the conditions met, as a sentence;
    /// `watch` is the run's memory of its checks (creep).
    pub fn reached(&self, step: u64, m: &Measures, watch: &mut Watch) -> Option<String> {
        if !self.due(step) {
            return None;
        }
        // Every check is remembered, whether or not the conditions hold.
        let creep = self.creep.and_then(|c| {
            let now = m.sample.as_ref()?.solid_fraction;
            watch.past.retain(|(s, _)| s + c.over >= step);
            let then = (watch.past.front())
                .filter(|(s, _)| s + c.over == step)
                .map(|(_, f)| *f);
            watch.past.push_back((step, now));
            Some((c, now, then))
        });
        let mut met = Vec::new();
        // An undefined measure (no contact, no volume) meets no condition.
        if let Some(limit) = self.unbalanced {
            let u = m.unbalanced?;
            (u <= limit).then(|| met.push(format!("unbalanced {u:.3e} <= {limit:e}")))?;
        }
        let sample = m.sample.as_ref();
        if let Some(target) = self.pressure {
            let p = sample?.pressure();
            (p >= target).then(|| met.push(format!("pressure {p:.4e} >= {target:e}")))?;
        }
        if let Some(target) = self.solid_fraction {
            let f = sample?.solid_fraction;
            (f >= target).then(|| met.push(format!("solid fraction {f:.4} >= {target}")))?;
        }
        if let Some(c) = self.creep {
            let (_, now, then) = creep?;
            let change = (now - then?).abs() / now;
            (change <= c.solid_fraction).then(|| {
                met.push(format!(
                    "solid fraction changed by {change:.2e} <= {:e} of it over {} steps",
                    c.solid_fraction, c.over
                ))
            })?;
        }
        Some(met.join(", "))
    }
}
