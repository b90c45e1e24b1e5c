//! Modal degrees of freedom of deformable grains (docs/physics.md sections 1-3, 5 and 6; paper
//! Eqs. 1, 38, 41, 44 and 47-50).
//!
//! A deformable grain carries amplitudes `eps_a` (a = 1..A) and rates `eps'_a`. A material point
//! `x0` of its reference configuration (local frame) sits at `x0 + eps_a Phi_a(x0)` (Eq. 1), and
//! the amplitudes follow
//!
//! `M eps'' + C eps' + F_int(eps) = F_eps` (Eq. 38 with damping; Eq. 44 for `F_int = K eps`),
//!
//! integrated by velocity Verlet with the translations and rotations (`sim`), the damping term
//! taken at the full-step rates: the first half kick uses `C eps'_n`, the second solves
//! `(M + h/2 C) eps'_n+1 = M eps'_n+1/2 + h/2 (F_eps - F_int)` (the trapezoidal rule on the
//! damping, second order and stable for any damping; with the half-step rate instead, the
//! damped free vibration of the tests was first order, 4.6e-4 off after 10 periods). `F_eps` is the
//! generalized contact force (`crate::law::node`: Eq. 41 for the grain that gives a node, the
//! derivative of the contact energy for the grain whose level set is penetrated).
//!
//! The internal force comes from the bundle ([`InternalLaw`]): `K eps` (Eq. 3), a one-mode table
//! (`grain::TableLaw`: monotone interpolation with its exact integral as the energy, continued
//! beyond the rows by the end slope; the run reports the largest excursion in summary.json), or
//! the gradient of a fitted polynomial energy. Modal damping `C` is the bundle's matrix unless the
//! scene chooses another ([`ModalDamping`]).
//!
//! Units: `eps` in the mode's amplitude units (the bundle's), generalized forces in energy per
//! amplitude unit. The mode vectors are in the grain's local frame.

use grain::{Deformation, EnergyPolynomial, InternalForce, Lanes, LevelSetGrid, TableLaw};

use std::borrow::Cow;
use std::sync::OnceLock;

use nalgebra::{DMatrix, DVector, Vector3};
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use crate::error::{KeyError, ShapeError};
use crate::path::{BAND_CELLS, Bound, Field, Paths, PerMode};

/// `F_int` of a deformable grain.
#[derive(Debug, Clone)]
pub enum InternalLaw {
    /// `K eps`.
    Linear,
    /// One mode, tabulated.
    Table(TableLaw),
    /// `grad U` of a polynomial energy.
    Polynomial(EnergyPolynomial),
}

/// A precomputed level set of one mode (Eq. 49), the reference included at amplitude 0.
#[derive(Debug, Clone)]
pub struct Sample {
    /// The amplitude `eps_a,p`.
    pub amplitude: f64,
    /// Node values (C order, like the reference level set) minus those of the mode's sample
    /// at amplitude 0: the increment the blend adds to the reference.
    pub values: Vec<f64>,
    /// `max |values|` over the grid: the bound of this sample's increment (for the exact
    /// early-out and the reach).
    pub shift: Bound,
    /// [`Sample::lanes`], built at the first use.
    lanes: OnceLock<Vec<Lanes>>,
}

impl Sample {
    /// The increment's node values with their second differences on the grain's grid
    /// `levelset` ([`LevelSetGrid::node_lanes`]), lanes `[value, Delta_x, Delta_y, Delta_z]`:
    /// what the precomputed update reads. Built once, when a grain first uses that update (four
    /// more numbers per grid node), so that the other updates do not pay for them.
    pub fn lanes(&self, levelset: &LevelSetGrid) -> &[Lanes] {
        self.lanes.get_or_init(|| levelset.node_lanes(&self.values))
    }
}

/// What every instance of a deformable bundle shares (read once per bundle).
#[derive(Debug, Clone)]
pub struct ModalShape {
    /// Number of modes `A`.
    pub count: usize,
    /// `M_eps` (Eq. 8).
    pub mass: DMatrix<f64>,
    /// `M_eps^-1`.
    pub mass_inverse: DMatrix<f64>,
    /// `K` (Eq. 4).
    pub stiffness: DMatrix<f64>,
    /// The bundle's `C_eps`.
    pub damping: DMatrix<f64>,
    /// `F_int`.
    pub law: InternalLaw,
    /// Each mode's displacement as a function of its amplitude (a linear mode, or a path
    /// through the FEM run's snapshots).
    pub paths: Paths,
    /// Per mode, the precomputed level sets as increments from the one at amplitude 0, by
    /// increasing amplitude (the sample at 0 is the bundle's, computed like the others, or the
    /// reference level set if the bundle has none; alone when the mode has no samples).
    pub samples: Vec<Vec<Sample>>,
}

impl ModalShape {
    /// The modal data of a bundle; `order` maps the shape's node order to the bundle's. Refused:
    /// a modal mass that is not positive definite, a stiffness that is not, a damping that is
    /// not positive semi-definite.
    pub fn new(
        d: &Deformation,
        order: &[usize],
        levelset: &LevelSetGrid,
    ) -> Result<ModalShape, ShapeError> {
        let phi0 = levelset.values();
        let band = BAND_CELLS * levelset.spec().spacing;
        let a = d.modal_mass.nrows();
        let matrix = |m: &ndarray::Array2<f64>| DMatrix::from_fn(a, a, |i, j| m[[i, j]]);
        let mass = matrix(&d.modal_mass);
        let mass_inverse = mass.clone().cholesky().ok_or(ShapeError::Mass)?.inverse();
        let (stiffness, damping) = (matrix(&d.modal_stiffness), matrix(&d.modal_damping));
        // A mode without stiffness is a rigid motion or a mechanism, and negative damping feeds
        // energy in: both run to plausible, wrong results.
        if !definite(&stiffness, false) {
            return Err(ShapeError::Stiffness);
        }
        if !definite(&damping, true) {
            return Err(ShapeError::Damping);
        }
        // A field of the bundle, `(.., k, 3)` at the nodes and `(.., nx, ny, nz, 3)` on the grid,
        // index `m` of the leading axis, in the shape's node order.
        let field = |nodes: &ndarray::Array3<f64>, grid: &ndarray::Array5<f64>, m: usize| {
            let grid = grid.index_axis(ndarray::Axis(0), m);
            let grid = grid.as_standard_layout();
            let flat = grid.as_slice().expect("standard layout");
            Field {
                nodes: order
                    .iter()
                    .map(|&k| Vector3::from_fn(|c, _| nodes[[m, k, c]]))
                    .collect(),
                grid: flat
                    .chunks_exact(3)
                    .map(|v| Vector3::new(v[0], v[1], v[2]))
                    .collect(),
            }
        };
        // The fields are kept in f32 (crate::path::stored): a value past its range would
        // become infinite.
        let path = d.path.iter().flat_map(|p| p.nodes.iter().chain(&p.grid));
        let mut values = d.node_modes.iter().chain(&d.grid_modes).chain(path);
        if let Some(x) = values.find(|x| x.abs() > f64::from(f32::MAX)) {
            return Err(ShapeError::FieldRange(*x));
        }
        let paths = match &d.path {
            // One mode following its FEM run.
            Some(p) => {
                let points: Vec<(f64, Field)> = (p.amplitudes.iter().enumerate())
                    .map(|(i, &e)| (e, field(&p.nodes, &p.grid, i)))
                    .collect();
                Paths::through(points, levelset)
            }
            None => Paths::linear(
                (0..a)
                    .map(|m| field(&d.node_modes, &d.grid_modes, m))
                    .collect(),
                levelset,
            ),
        };
        let samples: Vec<Vec<Sample>> = d
            .precomputed
            .iter()
            .map(|list| {
                let mut values: Vec<(f64, Vec<f64>)> = list
                    .iter()
                    .map(|s| (s.amplitude, s.values.iter().copied().collect()))
                    .collect();
                if !values.iter().any(|s| s.0 == 0.0) {
                    values.push((0.0, phi0.to_vec()));
                    values.sort_by(|x, y| x.0.total_cmp(&y.0));
                }
                let zero = values.iter().position(|s| s.0 == 0.0).expect("added");
                let origin = values[zero].1.clone();
                values
                    .into_iter()
                    .map(|(amplitude, v)| {
                        let values: Vec<f64> = v.iter().zip(&origin).map(|(x, o)| x - o).collect();
                        Sample {
                            amplitude,
                            shift: Bound::over(phi0, band, |n| values[n].abs()),
                            values,
                            lanes: OnceLock::new(),
                        }
                    })
                    .collect()
            })
            .collect();
        let law = match &d.internal_force {
            InternalForce::Linear => InternalLaw::Linear,
            InternalForce::Table {
                interpolation,
                table,
            } => InternalLaw::Table(TableLaw::new(table, *interpolation)),
            InternalForce::Polynomial(p) => InternalLaw::Polynomial(p.clone()),
        };
        Ok(ModalShape {
            count: a,
            mass,
            mass_inverse,
            stiffness,
            damping,
            law,
            paths,
            samples,
        })
    }

    /// Whether every mode has precomputed level sets besides the reference.
    pub fn has_samples(&self) -> bool {
        self.samples.iter().all(|s| s.len() > 1)
    }

    /// The ranges of mode `a`'s amplitude that its data cover (the run reports an amplitude
    /// beyond one): the internal-force table's, the precomputed level sets' (when the grain's
    /// level-set update interpolates them, `samples`), the path's.
    pub fn ranges(&self, a: usize, samples: bool) -> impl Iterator<Item = (Limit, (f64, f64))> {
        let table = match &self.law {
            InternalLaw::Table(t) if a == 0 => Some((Limit::Table, t.range())),
            _ => None,
        };
        let sampled = &self.samples[a];
        let samples = (samples && sampled.len() > 1).then(|| {
            let last = sampled.len() - 1;
            (
                Limit::Samples,
                (sampled[0].amplitude, sampled[last].amplitude),
            )
        });
        let path = self.paths.modes[a].range.map(|r| (Limit::Path, r));
        table.into_iter().chain(samples).chain(path)
    }

    /// The strain energy `U(eps)` (`1/2 eps^T K eps`, the table's integral, or the polynomial).
    pub fn energy(&self, eps: &[f64]) -> f64 {
        match &self.law {
            InternalLaw::Linear => {
                let e = DVector::from_column_slice(eps);
                0.5 * e.dot(&(&self.stiffness * &e))
            }
            InternalLaw::Table(t) => t.energy(eps[0]),
            InternalLaw::Polynomial(p) => p.energy(eps),
        }
    }

    /// The tangent stiffness `dF_int / d eps` at `eps`.
    pub fn tangent(&self, eps: &[f64]) -> DMatrix<f64> {
        match &self.law {
            InternalLaw::Linear => self.stiffness.clone(),
            InternalLaw::Table(t) => DMatrix::from_element(1, 1, t.tangent(eps[0])),
            InternalLaw::Polynomial(p) => {
                let h = p.hessian(eps);
                DMatrix::from_fn(self.count, self.count, |i, j| h[i][j])
            }
        }
    }

    /// The stiffest tangent for the time step: `K`, the table's largest tangent over its range,
    /// or the polynomial's Hessian at the larger of the origin's and `eps`'s (the run's energy
    /// check stops a run that stiffens beyond it).
    pub fn stiffest(&self, eps: &[f64]) -> DMatrix<f64> {
        match &self.law {
            InternalLaw::Table(t) => DMatrix::from_element(1, 1, t.max_tangent()),
            InternalLaw::Linear => self.stiffness.clone(),
            InternalLaw::Polynomial(_) => {
                let at_origin = self.tangent(&vec![0.0; self.count]);
                let here = self.tangent(eps);
                if largest_frequency(&self.mass, &here) > largest_frequency(&self.mass, &at_origin)
                {
                    here
                } else {
                    at_origin
                }
            }
        }
    }

    /// `F_int(eps)` (without allocating for up to 4 modes: called for every grain every step).
    pub fn internal_force(&self, eps: &[f64]) -> PerMode<f64> {
        match &self.law {
            InternalLaw::Linear => times_matrix(&self.stiffness, eps),
            InternalLaw::Table(t) => smallvec::smallvec![t.force(eps[0])],
            InternalLaw::Polynomial(p) => p.force(eps).into_iter().collect(),
        }
    }

    /// The damping matrix of a choice at `eps`, row-major, without allocating for up to 4
    /// modes.
    fn damping_small(&self, choice: &ModalDamping, eps: &[f64]) -> Square {
        let n = self.count;
        // Row by row: a division and a remainder per entry cost more than the entry's product.
        let from = |m: &DMatrix<f64>, scale: f64| -> Square {
            let mut out = Square::with_capacity(n * n);
            for i in 0..n {
                out.extend(m.row(i).iter().map(|v| scale * v));
            }
            out
        };
        match choice {
            ModalDamping::Bundle => from(&self.damping, 1.0),
            ModalDamping::Matrix(rows) => (0..n * n).map(|k| rows[k / n][k % n]).collect(),
            ModalDamping::Stiffness(beta) => from(&self.stiffness, *beta),
            ModalDamping::Tangent(beta) => match &self.law {
                InternalLaw::Linear => from(&self.stiffness, *beta),
                InternalLaw::Table(t) => smallvec::smallvec![beta * t.tangent(eps[0])],
                InternalLaw::Polynomial(_) => from(&self.tangent(eps), *beta),
            },
        }
    }

    /// Whether the damping matrix of a choice is the same at every amplitude: all but a
    /// tangent-proportional damping of a nonlinear internal force.
    fn damping_is_constant(&self, choice: &ModalDamping) -> bool {
        match choice {
            ModalDamping::Bundle | ModalDamping::Matrix(_) | ModalDamping::Stiffness(_) => true,
            ModalDamping::Tangent(_) => match &self.law {
                InternalLaw::Linear => true,
                InternalLaw::Table(_) | InternalLaw::Polynomial(_) => false,
            },
        }
    }

    /// The damping matrix of a choice, at `eps` (for tangent-proportional damping).
    pub fn damping_matrix(&self, choice: &ModalDamping, eps: &[f64]) -> DMatrix<f64> {
        match choice {
            ModalDamping::Bundle => self.damping.clone(),
            ModalDamping::Matrix(rows) => {
                DMatrix::from_fn(self.count, self.count, |i, j| rows[i][j])
            }
            ModalDamping::Stiffness(beta) => &self.stiffness * *beta,
            ModalDamping::Tangent(beta) => self.tangent(eps) * *beta,
        }
    }
}

/// A small square matrix, row-major, inline for up to 4 modes.
type Square = SmallVec<[f64; 16]>;

/// `m v`, `m` row-major.
fn times(m: &[f64], v: &[f64]) -> PerMode<f64> {
    let n = v.len();
    (0..n)
        .map(|i| (0..n).map(|j| m[i * n + j] * v[j]).sum())
        .collect()
}

/// `m v`.
fn times_matrix(m: &DMatrix<f64>, v: &[f64]) -> PerMode<f64> {
    let n = v.len();
    (0..n)
        .map(|i| (0..n).map(|j| m[(i, j)] * v[j]).sum())
        .collect()
}

/// Overwrites `to` with `from`, keeping its allocation.
pub(crate) fn refill(to: &mut Vec<f64>, from: &[f64]) {
    to.clear();
    to.extend_from_slice(from);
}

/// Factors `a` (row-major `n x n`) in place by Gaussian elimination with partial pivoting: `U`
/// on and above the diagonal, each elimination's multiplier below it where it was made (the
/// rows are swapped from the pivot's column on), and the pivot row of each column returned.
/// `M + h C`, without allocating for up to 4 modes (nalgebra's dynamic LU would). A singular
/// `a` (not possible for a positive definite `M` and positive semi-definite `C`) gives NaN in
/// [`substitute`], which the run reports as a divergence.
fn factor(a: &mut [f64]) -> PerMode<usize> {
    let n = a.len().isqrt();
    let mut pivots = PerMode::with_capacity(n);
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&i, &j| a[i * n + col].abs().total_cmp(&a[j * n + col].abs()))
            .expect("a non-empty column");
        if pivot != col {
            for k in col..n {
                a.swap(col * n + k, pivot * n + k);
            }
        }
        pivots.push(pivot);
        let d = a[col * n + col];
        for row in col + 1..n {
            let f = a[row * n + col] / d;
            for k in col + 1..n {
                a[row * n + k] -= f * a[col * n + k];
            }
            a[row * n + col] = f;
        }
    }
    pivots
}

/// Solves `a x = b` in place (`x` into `b`) with `a` and `pivots` from [`factor`]: the
/// elimination's swaps and multipliers applied to `b` in the order they were made, then the
/// back substitution (the operations, and so the bits, of eliminating `a` and `b` together).
fn substitute(a: &[f64], pivots: &[usize], b: &mut [f64]) {
    let n = b.len();
    for (col, &pivot) in pivots.iter().enumerate() {
        b.swap(col, pivot);
        for row in col + 1..n {
            b[row] -= a[row * n + col] * b[col];
        }
    }
    for row in (0..n).rev() {
        let s: f64 = (row + 1..n).map(|k| a[row * n + k] * b[k]).sum();
        b[row] = (b[row] - s) / a[row * n + row];
    }
}

/// Whether `m` is symmetric (to 1e-12 of its largest entry) and positive definite, or positive
/// semi-definite if `semi` (eigenvalues down to -1e-12 of the largest magnitude allowed, for
/// round-off).
pub fn definite(m: &DMatrix<f64>, semi: bool) -> bool {
    let scale = m.amax();
    if !m.iter().all(|x| x.is_finite()) || (m - m.transpose()).amax() > 1e-12 * scale {
        return false;
    }
    if scale == 0.0 {
        return semi;
    }
    let smallest = m.clone().symmetric_eigenvalues().min();
    if semi {
        smallest >= -1e-12 * scale
    } else {
        smallest > 1e-12 * scale
    }
}

/// The largest `omega` of `K v = omega^2 M v` (0 if `K` has no positive eigenvalue): with
/// `M = L L^T`, the largest eigenvalue of `L^-1 K L^-T`.
pub fn largest_frequency(mass: &DMatrix<f64>, stiffness: &DMatrix<f64>) -> f64 {
    let l = mass
        .clone()
        .cholesky()
        .expect("modal mass checked positive definite")
        .l();
    let l_inv = l.try_inverse().expect("a Cholesky factor is invertible");
    let a = &l_inv * stiffness * l_inv.transpose();
    let a = (&a + a.transpose()) * 0.5;
    let top = a
        .symmetric_eigenvalues()
        .iter()
        .copied()
        .fold(0.0, f64::max);
    top.sqrt()
}

/// Modal damping `C_eps`, chosen per grain in the scene.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum ModalDamping {
    /// The bundle's matrix.
    Bundle,
    /// A constant `A x A` matrix (symmetric, positive semi-definite).
    Matrix(Vec<Vec<f64>>),
    /// `C = beta K` (Rayleigh, stiffness-proportional).
    Stiffness(f64),
    /// `C = beta dF_int/d eps (eps)`, proportional to the current tangent stiffness (for tables
    /// and polynomial energies; for linear modes the same as `stiffness`).
    Tangent(f64),
}

/// The modal state of one grain instance (saved in checkpoints).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Modes {
    /// Amplitudes `eps_a`.
    pub eps: Vec<f64>,
    /// Rates `eps'_a`.
    pub rate: Vec<f64>,
    /// Generalized contact force `F_eps` of the last evaluation.
    pub contact: Vec<f64>,
    /// `F_int(eps)` of the last evaluation.
    pub internal: Vec<f64>,
    /// `C eps'` at the last full step.
    pub damping_force: Vec<f64>,
    /// How its level set follows the deformation.
    pub levelset: LevelSetUpdate,
    /// Its damping.
    pub damping: ModalDamping,
    /// The implicit kick's `M + h C`, factored, while `h` and a constant `C` last.
    #[serde(skip)]
    implicit: Factored,
}

/// `M + h C` factored for [`Modes::kick_implicit`] (LU with partial pivoting, [`factor`]), with
/// what it was factored for: kept while the step `h` (its bits) and the damping stay and the
/// damping does not depend on the amplitudes, so that a grain of tens of modes does not
/// eliminate its matrix every step (the modes bench's 20-mode grains: about 80,000
/// instructions per grain and step, docs/performance.md). A cache, not state: it is not saved,
/// a restored state starts without it ([`Modes::take_settings`]), and two states compare equal
/// whatever their caches hold.
#[derive(Clone, Default)]
struct Factored(Option<Factor>);

#[derive(Clone)]
struct Factor {
    h: u64,
    damping: ModalDamping,
    lu: Square,
    pivots: PerMode<usize>,
}

impl PartialEq for Factored {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for Factored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "factored" } else { "none" })
    }
}

impl Modes {
    /// A state with amplitudes `eps` and rates `rate`.
    pub fn new(
        eps: Vec<f64>,
        rate: Vec<f64>,
        levelset: LevelSetUpdate,
        damping: ModalDamping,
    ) -> Modes {
        let n = eps.len();
        Modes {
            eps,
            rate,
            contact: vec![0.0; n],
            internal: vec![0.0; n],
            damping_force: vec![0.0; n],
            levelset,
            damping,
            implicit: Factored::default(),
        }
    }

    /// `F_int(eps)` at the current amplitudes.
    pub fn set_internal_force(&mut self, shape: &ModalShape) {
        let internal = shape.internal_force(&self.eps);
        refill(&mut self.internal, &internal);
    }

    /// `C eps'` at the current (full-step) rates.
    pub fn set_damping_force(&mut self, shape: &ModalShape) {
        let c = shape.damping_small(&self.damping, &self.eps);
        let f = times(&c, &self.rate);
        refill(&mut self.damping_force, &f);
    }

    /// The first half kick: `eps' += M^-1 (F_eps - F_int - C eps'_n) h`.
    pub fn kick_explicit(&mut self, shape: &ModalShape, h: f64) {
        let net: PerMode<f64> = (0..self.eps.len())
            .map(|a| self.contact[a] - self.internal[a] - self.damping_force[a])
            .collect();
        let n = net.len();
        for (i, r) in self.rate.iter_mut().enumerate() {
            let acc: f64 = (0..n).map(|j| shape.mass_inverse[(i, j)] * net[j]).sum();
            *r += acc * h;
        }
    }

    /// The second half kick, implicit in the damping: `(M + h C) eps'_n+1 = M eps' + h (F_eps -
    /// F_int)`; then `C eps'_n+1` for the next step.
    pub fn kick_implicit(&mut self, shape: &ModalShape, h: f64) {
        let n = self.eps.len();
        let c = shape.damping_small(&self.damping, &self.eps);
        let mut rhs: PerMode<f64> = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| shape.mass[(i, j)] * self.rate[j])
                    .sum::<f64>()
                    + (self.contact[i] - self.internal[i]) * h
            })
            .collect();
        let constant = shape.damping_is_constant(&self.damping);
        match &self.implicit.0 {
            Some(f) if constant && f.h == h.to_bits() && f.damping == self.damping => {
                substitute(&f.lu, &f.pivots, &mut rhs)
            }
            _ => {
                let mut lu = Square::with_capacity(n * n);
                for i in 0..n {
                    let c = &c[i * n..(i + 1) * n];
                    lu.extend(shape.mass.row(i).iter().zip(c).map(|(m, c)| m + h * c));
                }
                let pivots = factor(&mut lu);
                substitute(&lu, &pivots, &mut rhs);
                self.implicit = Factored(constant.then(|| Factor {
                    h: h.to_bits(),
                    damping: self.damping.clone(),
                    lu,
                    pivots,
                }));
            }
        }
        refill(&mut self.rate, &rhs);
        let f = times(&c, &self.rate);
        refill(&mut self.damping_force, &f);
    }

    /// Takes the level-set update and the damping of `scene`'s state, for a restored state
    /// (its kept factorization is dropped: the scene may give it another shape).
    pub(crate) fn take_settings(&mut self, scene: &Modes) {
        self.levelset = scene.levelset.clone();
        self.damping = scene.damping.clone();
        self.implicit = Factored::default();
    }

    /// The drift: `eps += eps' dt`.
    pub fn drift(&mut self, dt: f64) {
        for (e, r) in self.eps.iter_mut().zip(&self.rate) {
            *e += r * dt;
        }
    }

    /// Modal kinetic energy `1/2 eps'^T M eps'`.
    pub fn kinetic(&self, shape: &ModalShape) -> f64 {
        let r = DVector::from_column_slice(&self.rate);
        0.5 * r.dot(&(&shape.mass * &r))
    }

    /// Power dissipated by the modal damping at the last full step, `eps'^T C eps'`.
    pub fn damping_power(&self) -> f64 {
        self.rate
            .iter()
            .zip(&self.damping_force)
            .map(|(r, f)| r * f)
            .sum()
    }
}

/// `modes = { ... }` of a grain or lattice: the modal degrees of freedom of a deformable bundle
/// (crate::modal). A rigid bundle refuses the key. A prescribed grain keeps its amplitudes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModesSpec {
    /// `false` runs the bundle as a rigid grain (its modal data unused); then no other key.
    #[serde(default = "active_by_default")]
    pub active: bool,
    /// How the level set follows the deformation: an update of [`crate::levelset::registry`],
    /// `"rigid"`, `"semi-lagrangian"` (default) or `"precomputed"` (needs a bundle baked with
    /// `--samples`).
    #[serde(default = "semi_lagrangian")]
    pub levelset: LevelSetUpdate,
    /// Initial amplitudes `eps_a`, one per mode (default 0).
    pub amplitudes: Option<Vec<f64>>,
    /// Initial rates `eps'_a`, one per mode (default 0).
    pub rates: Option<Vec<f64>>,
    /// Modal damping: `"bundle"` (default: the bundle's matrix), `{ matrix = [[...]] }`,
    /// `{ stiffness = beta }` (`C = beta K`) or `{ tangent = beta }` (`C = beta dF_int/deps`).
    #[serde(default = "bundle_damping")]
    pub damping: ModalDamping,
}

impl Default for ModesSpec {
    fn default() -> Self {
        ModesSpec {
            active: true,
            levelset: DEFAULT_UPDATE,
            amplitudes: None,
            rates: None,
            damping: ModalDamping::Bundle,
        }
    }
}

fn active_by_default() -> bool {
    true
}

fn semi_lagrangian() -> LevelSetUpdate {
    DEFAULT_UPDATE
}

fn bundle_damping() -> ModalDamping {
    ModalDamping::Bundle
}

/// The checks of a modes table that need no bundle (counts and ranges are checked against the
/// bundle when the grains are built).
pub fn check_modes(m: &ModesSpec, key: &str) -> Result<(), KeyError> {
    let fail = |k: &str, message: String| Err(KeyError::new(format!("{key}.{k}"), message));
    if !m.active
        && (m.amplitudes.is_some()
            || m.rates.is_some()
            || *m
                != ModesSpec {
                    active: false,
                    ..ModesSpec::default()
                })
    {
        return fail(
            "active",
            "`active = false` runs the grain rigid: give no other modes key".into(),
        );
    }
    for (k, v) in [("amplitudes", &m.amplitudes), ("rates", &m.rates)] {
        if let Some(v) = v
            && !v.iter().all(|x| x.is_finite())
        {
            return fail(k, format!("finite numbers expected, got {v:?}"));
        }
    }
    match &m.damping {
        ModalDamping::Stiffness(b) | ModalDamping::Tangent(b) if !(b.is_finite() && *b >= 0.0) => {
            fail("damping", format!("a coefficient >= 0, got {b}"))
        }
        ModalDamping::Matrix(rows) if !rows.iter().flatten().all(|x| x.is_finite()) => {
            fail("damping.matrix", "finite numbers expected".into())
        }
        _ => Ok(()),
    }
}

/// How a grain's level set follows its deformation (docs/physics.md section 5), chosen per
/// grain: the name of one of the updates of [`crate::levelset::registry`] (`"rigid"`,
/// `"semi-lagrangian"`, `"precomputed"`). Checked against the registry when a simulation is
/// built; a checkpoint stores the name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LevelSetUpdate(pub Cow<'static, str>);

impl LevelSetUpdate {
    /// The update named `name`.
    pub const fn named(name: &'static str) -> LevelSetUpdate {
        LevelSetUpdate(Cow::Borrowed(name))
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.0
    }
}

/// The update of a grain whose scene names none.
pub const DEFAULT_UPDATE: LevelSetUpdate = LevelSetUpdate::named("semi-lagrangian");

/// What a grain's model rests on over a range of amplitudes, beyond which it extrapolates
/// (docs/physics.md sections 1, 5 and 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Limit {
    /// The tabulated internal force, continued by its end slope.
    Table,
    /// The precomputed level sets, continued by the line through the last two samples.
    Samples,
    /// A path mode's snapshots, continued along the end tangents.
    Path,
}

impl Limit {
    /// What the run does beyond the range.
    fn beyond(self) -> &'static str {
        match self {
            Limit::Table => {
                "the internal-force table's range: the force continues by the table's end slope"
            }
            Limit::Samples => {
                "its precomputed level sets' amplitudes: the blend continues the line through the last two"
            }
            Limit::Path => {
                "the amplitudes of its path (the FEM run's snapshots): the shape continues along the path's end tangent"
            }
        }
    }
}

/// How far past a range an amplitude may go, as a fraction of the range's width, before it
/// counts as an excursion ([`beyond`]). Every continuation past a range is tangent to the
/// model at its end (the table's end slope, the path's end tangent) or the line of its last
/// interval (the precomputed samples' blend), so at a distance `delta` past the end it departs
/// from a smooth continuation of the data by `delta^2 / 2` times their second derivative: at
/// `1e-4` of the width, `5e-9` of the width squared times it, below what the FEM data resolve.
/// A quasi-static loader that stops at the end of a grain's data overshoots it dynamically by
/// about `1e-5` of the width (the shipped cases of `cargo xtask demo`, docs/physics.md section
/// 5): that is the run reaching the data's end, not leaving them.
pub const EXCURSION_ALLOWANCE: f64 = 1e-4;

/// How far `eps` is past `range` (`(first, last)` amplitudes), if by more than
/// [`EXCURSION_ALLOWANCE`] of the range's width: an excursion.
pub fn beyond(eps: f64, range: (f64, f64)) -> Option<f64> {
    let past = (range.0 - eps).max(eps - range.1);
    (past > EXCURSION_ALLOWANCE * (range.1 - range.0)).then_some(past)
}

/// A grain's amplitude beyond a range its model rests on ([`Limit`]): when it first left it,
/// and how far it went.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Excursion {
    /// The grain (its index in the scene's order).
    pub grain: usize,
    /// The mode.
    pub mode: usize,
    /// What it left.
    pub limit: Limit,
    /// The range's first and last amplitudes.
    pub range: (f64, f64),
    /// The step at which the amplitude first left the range.
    pub first_step: u64,
    /// Its time.
    pub first_time: f64,
    /// The amplitude farthest outside.
    pub amplitude: f64,
}

impl std::fmt::Display for Excursion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "grain {} mode {}: amplitude {:e} at step {} (t = {:e}) is past [{:e}, {:e}], {}",
            self.grain,
            self.mode,
            self.amplitude,
            self.first_step,
            self.first_time,
            self.range.0,
            self.range.1,
            self.limit.beyond()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_amplitude_counts_as_an_excursion_past_the_allowance_on_either_side() {
        // A range of width 2: the allowance is 2e-4 of amplitude on each side.
        let range = (-0.5, 1.5);
        for inside in [-0.5, 0.0, 1.5, 1.5 + 1.9e-4, -0.5 - 1.9e-4] {
            assert_eq!(beyond(inside, range), None, "{inside}");
        }
        for (outside, past) in [(1.5 + 2.1e-4, 2.1e-4), (-0.5 - 2.1e-4, 2.1e-4), (3.5, 2.0)] {
            let found = beyond(outside, range).expect("an excursion");
            assert!((found - past).abs() < 1e-12, "{outside}: {found}");
        }
        assert_eq!(beyond(f64::NAN, range), None);
    }

    #[test]
    fn gaussian_elimination_solves_a_system_that_needs_pivoting() {
        // a = [[0, 2, 1], [1, 1, 0], [3, 0, 1]], x = (1, -2, 3): b = a x.
        let mut a = [0.0, 2.0, 1.0, 1.0, 1.0, 0.0, 3.0, 0.0, 1.0];
        let mut b = [-1.0, -1.0, 6.0];
        let pivots = factor(&mut a);
        substitute(&a, &pivots, &mut b);
        for (x, want) in b.iter().zip([1.0, -2.0, 3.0]) {
            assert!((x - want).abs() < 1e-14, "{b:?}");
        }
    }

    /// A factorization kept and applied to new right-hand sides gives the bits of eliminating
    /// the matrix and each right-hand side together (the implicit kick's cache changes no
    /// result): against that elimination written out, on a 20 x 20 matrix whose columns need
    /// row swaps.
    #[test]
    fn a_kept_factorization_gives_the_bits_of_a_joint_elimination() {
        let n = 20;
        let entry = |i: usize, j: usize| {
            let (x, y) = (i as f64, j as f64);
            (1.3 * x + 0.7 * y).sin() + if (i + 3) % n == j { 4.0 } else { 0.0 }
        };
        let a0: Vec<f64> = (0..n * n).map(|k| entry(k / n, k % n)).collect();
        let mut lu = a0.clone();
        let pivots = factor(&mut lu);
        assert!(pivots.iter().enumerate().any(|(c, &p)| p != c));
        for r in 0..3 {
            let b0: Vec<f64> = (0..n).map(|i| (0.37 * (i + r) as f64).cos()).collect();
            let mut b = b0.clone();
            substitute(&lu, &pivots, &mut b);
            // The joint elimination.
            let (mut a, mut x) = (a0.clone(), b0.clone());
            for col in 0..n {
                let pivot = (col..n)
                    .max_by(|&i, &j| a[i * n + col].abs().total_cmp(&a[j * n + col].abs()))
                    .unwrap();
                for k in 0..n {
                    a.swap(col * n + k, pivot * n + k);
                }
                x.swap(col, pivot);
                for row in col + 1..n {
                    let f = a[row * n + col] / a[col * n + col];
                    for k in col..n {
                        a[row * n + k] -= f * a[col * n + k];
                    }
                    x[row] -= f * x[col];
                }
            }
            for row in (0..n).rev() {
                let s: f64 = (row + 1..n).map(|k| a[row * n + k] * x[k]).sum();
                x[row] = (x[row] - s) / a[row * n + row];
            }
            assert_eq!(b, x, "right-hand side {r}");
            // And it solves the system.
            for i in 0..n {
                let ax: f64 = (0..n).map(|j| a0[i * n + j] * b[j]).sum();
                assert!((ax - b0[i]).abs() < 1e-12, "row {i}: {ax} vs {}", b0[i]);
            }
        }
    }

    /// The implicit kick with its factorization kept gives the bits of the kick that factors
    /// afresh every step, through a change of the step and of the damping (which a kept factor
    /// must not survive): three modes with full (non-diagonal) mass, stiffness and damping.
    #[test]
    fn the_implicit_kick_keeps_its_factor_only_while_the_step_and_damping_last() {
        use grain::{GridSpec, InternalForce};
        let levelset = LevelSetGrid::from_fn(
            GridSpec {
                origin: [-1.5; 3],
                spacing: 0.75,
                dims: [5; 3],
            },
            |p| p.coords.norm() - 1.0,
        )
        .unwrap();
        let a = 3;
        let sym = |d: [f64; 3], o: f64| {
            ndarray::Array2::from_shape_fn((a, a), |(i, j)| if i == j { d[i] } else { o })
        };
        let deformation = Deformation {
            modal_mass: sym([2.0, 1.5, 1.0], 0.2),
            modal_stiffness: sym([40.0, 55.0, 70.0], 3.0),
            modal_damping: sym([0.8, 0.6, 0.9], 0.1),
            internal_force: InternalForce::Linear,
            node_modes: ndarray::Array3::from_shape_fn((a, 1, 3), |(m, _, d)| (m + d) as f64),
            grid_modes: ndarray::Array5::from_shape_fn((a, 5, 5, 5, 3), |(m, i, j, k, d)| {
                0.01 * (m + i + 2 * j + 3 * k + d) as f64
            }),
            precomputed: vec![Vec::new(); a],
            path: None,
            material: None,
            flexibility: None,
        };
        let shape = ModalShape::new(&deformation, &[0], &levelset).unwrap();
        let start = Modes::new(
            vec![0.01, -0.02, 0.005],
            vec![0.3, -0.1, 0.2],
            DEFAULT_UPDATE,
            ModalDamping::Bundle,
        );
        let (mut kept, mut fresh) = (start.clone(), start);
        for step in 0..12 {
            // The step changes at 4, the damping at 8.
            let h = if step < 4 { 1e-3 } else { 7e-4 };
            if step == 8 {
                kept.damping = ModalDamping::Stiffness(0.05);
                fresh.damping = ModalDamping::Stiffness(0.05);
            }
            for m in [&mut kept, &mut fresh] {
                m.contact = vec![0.5 * step as f64, -0.2, 0.1];
                m.set_internal_force(&shape);
            }
            fresh.implicit = Factored::default();
            kept.kick_implicit(&shape, h);
            fresh.kick_implicit(&shape, h);
            assert!(
                kept.implicit.0.is_some(),
                "step {step}: a constant damping is kept"
            );
            assert_eq!(kept.rate, fresh.rate, "step {step}");
            assert_eq!(kept.damping_force, fresh.damping_force, "step {step}");
            // The amplitudes move, and with them the internal force.
            for e in kept.eps.iter_mut().chain(fresh.eps.iter_mut()) {
                *e += 1e-4;
            }
        }
    }
}
