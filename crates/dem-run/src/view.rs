//! One view of each body per step (docs/physics.md sections 1, 3 and 5): its pose, its current
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
//!     the reference is counted once (docs/physics.md section 5's completion of Eq. 50) and the
//!     increments come from samples computed alike: `phi^(a)(0)` is the bundle's sample of the
//!     undeformed surface (levelset-bake adds it), which differs from an exact reference
//!     `phi_0` (a primitive's) by the facets' chord error. Without it, `phi_0` serves;
//! - exact early-out (docs/physics.md section 5): the deformed value differs from `phi_0` by at
//!   most `shift` at every grid node, hence everywhere (the interpolation weights sum to 1):
//!   `L max_n |u(c_n)|_1` for the remap (`L` the level set's edge Lipschitz constant, 1 for a
//!   distance), `sum_a max |phi^(a)(eps_a) - phi^(a)(0)|` for the blend. A point with
//!   `phi_0 >= shift` is outside and is not remapped. The same maxima over the band of nodes
//!   with `phi_0 <= w` (`w` = 4 cells, [`crate::modal::BAND_CELLS`]) give a smaller `shift_band`,
//!   valid for points with `phi_0 <= w - 3 L h`: their cell's corners lie in the band (the
//!   trilinear `phi_0` changes by at most `L |dx|_1`, and a corner is within `3h` in that norm);
//! - reach: the bounding radius grown by the largest node displacement the amplitudes can give
//!   (`sum_a |eps_a| max_k |Phi_a(x0_k)|`) or the level set's shift, whichever is larger.
//!
//! The derivative of the deformed level set with respect to the amplitudes at fixed `y`
//! ([`View::probe`]) is exact for the interpolant: the difference quotient of the
//! bracketing samples (precomputed), or `sum_c w_c grad phi_0(c - u(c)) . (-Phi_a(c))` (remap).

use nalgebra::{Matrix3, Point3, Vector3};

use crate::body::{Body, Shape};
use crate::modal::{BAND_CELLS, Bound, LevelSetUpdate, ModalShape, Modes, PerMode, Sample};

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
    /// The deformation, if the body's modes are on.
    modes: Option<Deformed<'a>>,
}

/// The deformation part of a view.
struct Deformed<'a> {
    shape: &'a ModalShape,
    state: &'a Modes,
    /// Bound of `|phi - phi_0|` over the grid, and over the band.
    shift: Bound,
    /// The largest `phi_0` whose cell's corners all lie in the band.
    band_limit: f64,
    /// The precomputed blend of each mode, for that update.
    brackets: Vec<Bracket<'a>>,
}

/// The increment of one mode's blend of its two bracketing samples: `lo + t (hi - lo)` with
/// `lo` and `hi` the samples' increments from the sample at 0 ([`Sample::values`]), derivative
/// `(hi - lo) / (eps_hi - eps_lo)`.
struct Bracket<'a> {
    lo: &'a [f64],
    hi: &'a [f64],
    t: f64,
    per_amplitude: f64,
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
                    modes: None,
                };
            }
        };
        let eps = &state.eps;
        let node_shift: f64 = modal
            .node_reach
            .iter()
            .zip(eps)
            .map(|(r, e)| r * e.abs())
            .sum();
        let mut brackets = Vec::new();
        let mut shift = Bound::default();
        match state.levelset {
            LevelSetUpdate::Rigid => {}
            LevelSetUpdate::SemiLagrangian => {
                for (r, e) in modal.grid_reach.iter().zip(eps) {
                    shift.all += shape.lipschitz * r.all * e.abs();
                    shift.band += shape.lipschitz * r.band * e.abs();
                }
            }
            LevelSetUpdate::Precomputed => {
                for (samples, &e) in modal.samples.iter().zip(eps) {
                    let (b, bound) = bracket(samples, e);
                    shift.all += bound.all;
                    shift.band += bound.band;
                    brackets.push(b);
                }
            }
        }
        let h = shape.levelset.spec().spacing;
        View {
            body,
            shape,
            rotation,
            spin,
            reach: shape.bounding_radius + node_shift.max(shift.all),
            node_shift,
            modes: Some(Deformed {
                shape: modal,
                state,
                shift,
                band_limit: (BAND_CELLS - 3.0 * shape.lipschitz) * h,
                brackets,
            }),
        }
    }

    /// Surface node `k` in the local frame, current configuration: `x0_k + eps_a Phi_a(x0_k)`
    /// (computed when asked: a node is tested about once per step, so this costs less than
    /// deforming every node up front).
    #[inline]
    pub fn node_local(&self, k: usize) -> Vector3<f64> {
        let x0 = self.shape.nodes[k];
        match &self.modes {
            None => x0,
            Some(m) => {
                let a = m.shape.count;
                let phi = &m.shape.node_modes[k * a..(k + 1) * a];
                let mut x = x0;
                for (p, e) in phi.iter().zip(&m.state.eps) {
                    x += p * *e;
                }
                x
            }
        }
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
        self.body.position + self.rotation * self.node_local(k)
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

    /// The level set at local point `y` (value, and gradient in the local frame) if `y` is
    /// inside (`phi < 0`, non-zero gradient), with the exact early-out of the module docs. For
    /// a deformable body, `derivative` (one entry per mode) then holds `d phi / d eps_a` at
    /// fixed `y`, exact for the update's interpolant (module docs; zero for the rigid update).
    #[inline]
    pub fn probe(&self, y: &Point3<f64>, derivative: &mut [f64]) -> Option<(f64, Vector3<f64>)> {
        self.evaluate(y, true, derivative)
            .filter(|(phi, grad)| *phi < 0.0 && grad.norm() != 0.0)
    }

    /// The (deformed) level set's value and gradient (local frame) at local point `y`,
    /// anywhere.
    pub fn level_set(&self, y: &Point3<f64>) -> (f64, Vector3<f64>) {
        let mut derivative: PerMode<f64> = smallvec::smallvec![0.0; self.mode_count()];
        self.evaluate(y, false, &mut derivative)
            .expect("no early-out asked for")
    }

    /// The level set at `y`, and its amplitude derivative if it is negative; `None` if
    /// `early_out` and `phi_0(y) >= shift` (then `y` is outside).
    #[inline]
    fn evaluate(
        &self,
        y: &Point3<f64>,
        early_out: bool,
        derivative: &mut [f64],
    ) -> Option<(f64, Vector3<f64>)> {
        let grid = &self.shape.levelset;
        let Some(m) = &self.modes else {
            return Some(grid.value_and_gradient(y));
        };
        let at = grid.locate(y);
        let reference = grid.corner_values(&at);
        if m.state.levelset == LevelSetUpdate::Rigid {
            derivative.iter_mut().for_each(|d| *d = 0.0);
            return Some(grid.interpolate(&at, &reference));
        }
        if early_out {
            let phi_0 = grid.interpolate(&at, &reference).0;
            if phi_0 >= m.shift.all || (phi_0 >= m.shift.band && phi_0 <= m.band_limit) {
                return None;
            }
        }
        let a = m.shape.count;
        let mut c = reference;
        let mut corner_grads = [Vector3::zeros(); 8];
        let w = at.weights();
        let semi_lagrangian = m.state.levelset == LevelSetUpdate::SemiLagrangian;
        if semi_lagrangian {
            let u: [Vector3<f64>; 8] = std::array::from_fn(|i| {
                let n = at.corners[i];
                let phi = &m.shape.grid_modes[n * a..(n + 1) * a];
                let mut u = Vector3::zeros();
                for (p, e) in phi.iter().zip(&m.state.eps) {
                    u += p * *e;
                }
                u
            });
            // The local form of the early-out: each corner's remapped value is at least
            // phi_0(c_i) - L |u_i|_1, so phi >= phi_0(y) - L sum_i w_i |u_i|_1.
            if early_out {
                let bound: f64 = (0..8).map(|i| w[i] * u[i].abs().sum()).sum();
                if grid.interpolate(&at, &reference).0 >= self.shape.lipschitz * bound {
                    return None;
                }
            }
            for (i, &n) in at.corners.iter().enumerate() {
                (c[i], corner_grads[i]) = grid.value_and_gradient(&(grid.node_position(n) - u[i]));
            }
        } else {
            for b in &m.brackets {
                for (i, &n) in at.corners.iter().enumerate() {
                    c[i] += b.lo[n] + b.t * (b.hi[n] - b.lo[n]);
                }
            }
        }
        let (phi, grad) = grid.interpolate(&at, &c);
        if phi < 0.0 {
            // The derivative at fixed y, for the contact's generalized force.
            for (mode, d) in derivative.iter_mut().enumerate() {
                *d = if semi_lagrangian {
                    // d c_i / d eps_a = grad phi_0(c_i - u(c_i)) . (-Phi_a(c_i)).
                    -(0..8)
                        .map(|i| {
                            w[i] * corner_grads[i]
                                .dot(&m.shape.grid_modes[at.corners[i] * a + mode])
                        })
                        .sum::<f64>()
                } else {
                    let b = &m.brackets[mode];
                    b.per_amplitude
                        * (0..8)
                            .map(|i| w[i] * (b.hi[at.corners[i]] - b.lo[at.corners[i]]))
                            .sum::<f64>()
                };
            }
        }
        Some((phi, grad))
    }

    /// The mode vectors `Phi_a(y0)` of the material point now at local position `y`, with
    /// `y0 = y - u(y)` (one fixed-point step, docs/physics.md section 3), from the grid's mode
    /// field (trilinear; the value at the closest grid point outside the box), into `out`
    /// (emptied; left empty for a rigid body).
    pub fn modes_at(&self, y: &Point3<f64>, out: &mut PerMode<Vector3<f64>>) {
        out.clear();
        let Some(m) = &self.modes else {
            return;
        };
        let a = m.shape.count;
        let grid = &self.shape.levelset;
        let field = |p: &Point3<f64>, out: &mut PerMode<Vector3<f64>>| {
            let at = grid.locate(p);
            let w = at.weights();
            out.clear();
            out.extend((0..a).map(|mode| {
                (0..8)
                    .map(|i| m.shape.grid_modes[at.corners[i] * a + mode] * w[i])
                    .sum::<Vector3<f64>>()
            }));
        };
        field(y, out);
        let u: Vector3<f64> = out.iter().zip(&m.state.eps).map(|(p, e)| p * *e).sum();
        field(&(y - u), out);
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

/// The blend of the samples bracketing `eps` and the bound of its increment.
fn bracket(samples: &[Sample], eps: f64) -> (Bracket<'_>, Bound) {
    let n = samples.len();
    let i = samples
        .partition_point(|s| s.amplitude <= eps)
        .clamp(1, n - 1)
        - 1;
    let (lo, hi) = (&samples[i], &samples[i + 1]);
    let width = hi.amplitude - lo.amplitude;
    let t = (eps - lo.amplitude) / width;
    let bound = Bound {
        all: (1.0 - t).abs() * lo.shift.all + t.abs() * hi.shift.all,
        band: (1.0 - t).abs() * lo.shift.band + t.abs() * hi.shift.band,
    };
    (
        Bracket {
            lo: &lo.values,
            hi: &hi.values,
            t,
            per_amplitude: 1.0 / width,
        },
        bound,
    )
}
