//! One view of each body per step (PHYSICS.md sections 1, 3 and 5): its pose, its current
//! (deformed) surface nodes, the reach of its current shape, and its level set as the other
//! bodies query it. Built once per force evaluation; node positions and velocities, level-set
//! queries and generalized-force accumulation all go through it, so the narrow phase and the
//! contact laws never ask whether a body is deformable.
//!
//! For a rigid body the view borrows the shape's nodes and queries the reference level set
//! `phi_0`: exactly the rigid solver's arithmetic. For a deformable body (amplitudes `eps`):
//! - nodes: `x0_k + eps_a Phi_a(x0_k)` (Eq. 1), local frame;
//! - level set at a local point `y`, by the grain's update ([`LevelSetUpdate`]):
//!   - `rigid`: `phi_0(y)`;
//!   - `semi-lagrangian` (Eqs. 47-48): the corners `c` of `y`'s cell take `phi_0(c - u(c))`,
//!     `u(c) = eps_a Phi_a(c)` from the grid's mode field, interpolated trilinearly at `y`;
//!   - `precomputed` (Eqs. 49-50): per mode, the hat-function blend `phi^(a)(eps_a)` of the two
//!     samples that bracket `eps_a` (beyond the outermost samples, the straight line through
//!     the last two), combined as `phi = phi_0 + sum_a (phi^(a)(eps_a) - phi^(a)(0))`, so that
//!     the reference is counted once (PHYSICS.md section 5's completion of Eq. 50) and the
//!     increments come from samples computed alike: `phi^(a)(0)` is the bundle's sample of the
//!     undeformed surface (levelset-bake adds it), which differs from an exact reference
//!     `phi_0` (a primitive's) by the facets' chord error. Without it, `phi_0` serves;
//! - exact early-out (PHYSICS.md section 5): the deformed value differs from `phi_0` by at
//!   most `shift` at every grid node, hence everywhere (the interpolation weights sum to 1):
//!   `L max_n |u(c_n)|_1` for the remap (`L` the level set's edge Lipschitz constant, 1 for a
//!   distance), `sum_a max |phi^(a)(eps_a) - phi^(a)(0)|` for the blend. A point with
//!   `phi_0 >= shift` is outside and is not remapped;
//! - reach: the bounding radius grown by the largest node displacement the amplitudes can give
//!   (`sum_a |eps_a| max_k |Phi_a(x0_k)|`) or the level set's shift, whichever is larger.
//!
//! The derivative of the deformed level set with respect to the amplitudes at fixed `y`
//! ([`View::level_set_derivative`]) is exact for the interpolant: the difference quotient of the
//! bracketing samples (precomputed), or `sum_c w_c grad phi_0(c - u(c)) . (-Phi_a(c))` (remap).

use std::borrow::Cow;

use grain::Located;
use nalgebra::{Matrix3, Point3, Vector3};

use crate::body::{Body, Shape};
use crate::modal::{LevelSetUpdate, ModalShape, Modes, Sample};

/// A body as the narrow phase sees it during one force evaluation.
pub struct View<'a> {
    /// The body.
    pub body: &'a Body,
    /// Its shape.
    pub shape: &'a Shape,
    /// `R(q)`, local to global.
    pub rotation: Matrix3<f64>,
    /// Angular velocity, global.
    pub spin: Vector3<f64>,
    /// Radius about the centre of mass that encloses the current shape and the current level
    /// set's zero crossing.
    pub reach: f64,
    /// Bound on the displacement of any surface node from its reference position.
    pub node_shift: f64,
    /// Surface nodes, local frame, current configuration.
    nodes: Cow<'a, [Vector3<f64>]>,
    /// The deformation, if the body's modes are on.
    modes: Option<Deformed<'a>>,
}

/// The deformation part of a view.
struct Deformed<'a> {
    shape: &'a ModalShape,
    state: &'a Modes,
    /// Bound of `|phi - phi_0|` over the grid.
    shift: f64,
    /// The precomputed blend of each mode, for that update.
    brackets: Vec<Bracket<'a>>,
}

/// The blend of one mode's two bracketing samples: `lo + t (hi - lo)`, derivative
/// `(hi - lo) / (eps_hi - eps_lo)`; its increment is taken from the sample at 0, `zero`.
struct Bracket<'a> {
    lo: &'a [f64],
    hi: &'a [f64],
    zero: &'a [f64],
    t: f64,
    per_amplitude: f64,
}

/// A level-set query that found the point inside the body.
pub struct Probe {
    /// The (deformed) level set's value, negative.
    pub phi: f64,
    /// Its gradient, local frame.
    pub grad: Vector3<f64>,
    /// Where the point fell on the grid.
    at: Located,
    /// For the remap: `grad phi_0` at each corner's pulled-back position.
    corner_grads: [Vector3<f64>; 8],
}

impl<'a> View<'a> {
    /// The view of `body` (its shape `shape`) at its current state.
    pub fn new(body: &'a Body, shape: &'a Shape) -> View<'a> {
        let rotation: Matrix3<f64> = body.orientation.to_rotation_matrix().into_inner();
        let spin = body.spin();
        let (modal, state) = match (&shape.modal, &body.modes) {
            (Some(m), Some(s)) => (m, s),
            _ => {
                return View {
                    body,
                    shape,
                    rotation,
                    spin,
                    reach: shape.bounding_radius,
                    node_shift: 0.0,
                    nodes: Cow::Borrowed(&shape.nodes),
                    modes: None,
                };
            }
        };
        let a = modal.count;
        let eps = &state.eps;
        let nodes: Vec<Vector3<f64>> = shape
            .nodes
            .iter()
            .enumerate()
            .map(|(k, x0)| {
                let phi = &modal.node_modes[k * a..(k + 1) * a];
                x0 + phi
                    .iter()
                    .zip(eps)
                    .map(|(p, e)| p * *e)
                    .sum::<Vector3<f64>>()
            })
            .collect();
        let node_shift: f64 = modal
            .node_reach
            .iter()
            .zip(eps)
            .map(|(r, e)| r * e.abs())
            .sum();
        let mut brackets = Vec::new();
        let shift = match state.levelset {
            LevelSetUpdate::Rigid => 0.0,
            LevelSetUpdate::SemiLagrangian => {
                shape.lipschitz
                    * modal
                        .grid_reach
                        .iter()
                        .zip(eps)
                        .map(|(r, e)| r * e.abs())
                        .sum::<f64>()
            }
            LevelSetUpdate::Precomputed => {
                let mut total = 0.0;
                for ((samples, &e), &zero) in modal.samples.iter().zip(eps).zip(&modal.zero) {
                    let (b, bound) = bracket(samples, zero, e);
                    total += bound;
                    brackets.push(b);
                }
                total
            }
        };
        View {
            body,
            shape,
            rotation,
            spin,
            reach: shape.bounding_radius + node_shift.max(shift),
            node_shift,
            nodes: Cow::Owned(nodes),
            modes: Some(Deformed {
                shape: modal,
                state,
                shift,
                brackets,
            }),
        }
    }

    /// The surface nodes in the local frame, current configuration.
    #[inline]
    pub fn nodes(&self) -> &[Vector3<f64>] {
        &self.nodes
    }

    /// Number of modes whose generalized forces this body takes (0 if rigid).
    pub fn mode_count(&self) -> usize {
        self.modes.as_ref().map_or(0, |m| m.shape.count)
    }

    /// Whether its modes are on.
    pub fn is_deformable(&self) -> bool {
        self.modes.is_some()
    }

    /// Global position of node `k` (current configuration).
    #[inline]
    pub fn node_global(&self, k: usize) -> Vector3<f64> {
        self.body.position + self.rotation * self.nodes[k]
    }

    /// Velocity of node `k` at its global position `x`: the rigid motion plus
    /// `R eps'_a Phi_a(x0_k)`.
    #[inline]
    pub fn node_velocity(&self, k: usize, x: &Vector3<f64>) -> Vector3<f64> {
        let rigid = self.body.point_velocity(&self.spin, x);
        match &self.modes {
            None => rigid,
            Some(m) => {
                let a = m.shape.count;
                let phi = &m.shape.node_modes[k * a..(k + 1) * a];
                let local: Vector3<f64> = phi.iter().zip(&m.state.rate).map(|(p, r)| p * *r).sum();
                rigid + self.rotation * local
            }
        }
    }

    /// Adds the generalized force of a force `f` (global) on node `k` to `out` (Eq. 41:
    /// `F_eps_a += Phi_a(x0_k) . R^T f`).
    #[inline]
    pub fn add_node_force(&self, k: usize, f: &Vector3<f64>, out: &mut [f64]) {
        if let Some(m) = &self.modes {
            let a = m.shape.count;
            let local = self.rotation.transpose() * f;
            for (o, p) in out.iter_mut().zip(&m.shape.node_modes[k * a..(k + 1) * a]) {
                *o += p.dot(&local);
            }
        }
    }

    /// The level set at local point `y` if `y` is inside (`phi < 0`, non-zero gradient), with
    /// the exact early-out of the module docs.
    #[inline]
    pub fn probe(&self, y: &Point3<f64>) -> Option<Probe> {
        self.evaluate(y, true)
            .filter(|p| p.phi < 0.0 && p.grad.norm() != 0.0)
    }

    /// The (deformed) level set's value and gradient (local frame) at local point `y`,
    /// anywhere.
    pub fn level_set(&self, y: &Point3<f64>) -> (f64, Vector3<f64>) {
        let p = self.evaluate(y, false).expect("no early-out asked for");
        (p.phi, p.grad)
    }

    /// The level set at `y`; `None` if `early_out` and `phi_0(y) >= shift` (then `y` is
    /// outside).
    #[inline]
    fn evaluate(&self, y: &Point3<f64>, early_out: bool) -> Option<Probe> {
        let grid = &self.shape.levelset;
        let at = grid.locate(y);
        let reference = grid.corner_values(&at);
        let (phi_0, grad_0) = grid.interpolate(&at, &reference);
        let mut corner_grads = [Vector3::zeros(); 8];
        let (phi, grad) = match &self.modes {
            None => (phi_0, grad_0),
            Some(m) if m.state.levelset == LevelSetUpdate::Rigid => (phi_0, grad_0),
            Some(m) => {
                if early_out && phi_0 >= m.shift {
                    return None;
                }
                let mut c = [0.0; 8];
                match m.state.levelset {
                    LevelSetUpdate::SemiLagrangian => {
                        let a = m.shape.count;
                        for (i, &n) in at.corners.iter().enumerate() {
                            let phi = &m.shape.grid_modes[n * a..(n + 1) * a];
                            let u: Vector3<f64> =
                                phi.iter().zip(&m.state.eps).map(|(p, e)| p * *e).sum();
                            let (v, g) = grid.value_and_gradient(&(grid.node_position(n) - u));
                            c[i] = v;
                            corner_grads[i] = g;
                        }
                    }
                    _ => {
                        c = reference;
                        for b in &m.brackets {
                            for (i, &n) in at.corners.iter().enumerate() {
                                c[i] += b.lo[n] + b.t * (b.hi[n] - b.lo[n]) - b.zero[n];
                            }
                        }
                    }
                }
                grid.interpolate(&at, &c)
            }
        };
        Some(Probe {
            phi,
            grad,
            at,
            corner_grads,
        })
    }

    /// `d phi / d eps_a` at the probed point (fixed local position), exact for the update's
    /// interpolant (module docs); zero for the rigid update.
    pub fn level_set_derivative(&self, probe: &Probe, out: &mut [f64]) {
        let Some(m) = &self.modes else { return };
        let w = probe.at.weights();
        match m.state.levelset {
            LevelSetUpdate::Rigid => out.iter_mut().for_each(|o| *o = 0.0),
            LevelSetUpdate::SemiLagrangian => {
                let a = m.shape.count;
                for (mode, o) in out.iter_mut().enumerate() {
                    *o = -(0..8)
                        .map(|i| {
                            let n = probe.at.corners[i];
                            w[i] * probe.corner_grads[i].dot(&m.shape.grid_modes[n * a + mode])
                        })
                        .sum::<f64>();
                }
            }
            LevelSetUpdate::Precomputed => {
                for (b, o) in m.brackets.iter().zip(out.iter_mut()) {
                    *o = b.per_amplitude
                        * (0..8)
                            .map(|i| {
                                let n = probe.at.corners[i];
                                w[i] * (b.hi[n] - b.lo[n])
                            })
                            .sum::<f64>();
                }
            }
        }
    }

    /// The mode vectors `Phi_a(y0)` of the material point now at local position `y`, with
    /// `y0 = y - u(y)` (one fixed-point step, PHYSICS.md section 3), from the grid's mode
    /// field (trilinear; the value at the closest grid point outside the box).
    pub fn modes_at(&self, y: &Point3<f64>) -> Vec<Vector3<f64>> {
        let Some(m) = &self.modes else {
            return Vec::new();
        };
        let a = m.shape.count;
        let grid = &self.shape.levelset;
        let field = |p: &Point3<f64>| -> Vec<Vector3<f64>> {
            let at = grid.locate(p);
            let w = at.weights();
            (0..a)
                .map(|mode| {
                    (0..8)
                        .map(|i| m.shape.grid_modes[at.corners[i] * a + mode] * w[i])
                        .sum()
                })
                .collect()
        };
        let at_y = field(y);
        let u: Vector3<f64> = at_y.iter().zip(&m.state.eps).map(|(p, e)| p * *e).sum();
        field(&(y - u))
    }

    /// Velocity of the body's material point at global position `x` (local `y`): the rigid
    /// motion plus `R eps'_a Phi_a(y0)` (`modes` from [`View::modes_at`]).
    pub fn material_velocity(&self, x: &Vector3<f64>, modes: &[Vector3<f64>]) -> Vector3<f64> {
        let rigid = self.body.point_velocity(&self.spin, x);
        match &self.modes {
            None => rigid,
            Some(m) => {
                let local: Vector3<f64> =
                    modes.iter().zip(&m.state.rate).map(|(p, r)| p * *r).sum();
                rigid + self.rotation * local
            }
        }
    }

    /// Adds the generalized force of a force `f` (global) acting on the body's material point
    /// with mode vectors `modes` (virtual work: `Phi_a(y0) . R^T f`).
    pub fn add_point_force(&self, modes: &[Vector3<f64>], f: &Vector3<f64>, out: &mut [f64]) {
        let local = self.rotation.transpose() * f;
        for (o, p) in out.iter_mut().zip(modes) {
            *o += p.dot(&local);
        }
    }
}

/// The blend of the samples bracketing `eps` (`zero`: the index of the sample at 0) and the
/// bound of its increment.
fn bracket(samples: &[Sample], zero: usize, eps: f64) -> (Bracket<'_>, f64) {
    let n = samples.len();
    let i = samples
        .partition_point(|s| s.amplitude <= eps)
        .clamp(1, n - 1)
        - 1;
    let (lo, hi) = (&samples[i], &samples[i + 1]);
    let width = hi.amplitude - lo.amplitude;
    let t = (eps - lo.amplitude) / width;
    let bound = (1.0 - t).abs() * lo.shift + t.abs() * hi.shift;
    (
        Bracket {
            lo: &lo.values,
            hi: &hi.values,
            zero: &samples[zero].values,
            t,
            per_amplitude: 1.0 / width,
        },
        bound,
    )
}
