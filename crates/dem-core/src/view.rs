//! One view of each body per step (docs/physics.md sections 1, 3 and 5): its pose, its current
//! (deformed) surface nodes, the reach of its current shape, and its level set as the other
//! bodies query it. Built once per force evaluation; node positions and velocities, level-set
//! queries and generalized-force accumulation all go through it, so the narrow phase and the
//! contact laws never ask whether a body is deformable.
//!
//! For a rigid body the view borrows the shape's nodes and queries the reference level set
//! `phi_0`: exactly the rigid solver's arithmetic. For a deformable body (amplitudes `eps`):
//! - nodes: `x0_k + eps_a Phi_a(x0_k)` (Eq. 1), local frame;
//! - level set: the grain's update ([`crate::levelset`]: rigid, semi-Lagrangian, precomputed),
//!   behind the exact early-out of docs/physics.md section 5: a point whose `phi_0` exceeds the
//!   update's bound of `|phi - phi_0|` ([`crate::levelset::EarlyOut`]) is outside and is not
//!   queried;
//! - material points: the mode vectors of the material point `X` under a local point `y`
//!   (`X + u(X) = y`, the exact pull-back of [`grain::LevelSetGrid::pull_back`]), for its
//!   velocity and the virtual work of the non-elastic contact forces;
//! - reach: the radii the contact searches use ([`View::reach_within`], [`View::search_radius`],
//!   [`View::halo_radius`]): the reach derived from the level set grown by its shift and the
//!   margin, while that stays within a spacing, else the bounding radius grown by the largest
//!   node displacement the amplitudes can give (`sum_a |eps_a| max_k |Phi_a(x0_k)|`) or the
//!   level set's shift, whichever is larger.
//!
//! A level-set query that cannot be answered (a folding deformation, a pull-back that does not
//! converge) is recorded as the view's fault ([`View::fault`]); the query answers "outside"
//! and the run stops after the step with the fault's message.

use std::sync::{Arc, OnceLock};

use grain::Lanes;
use nalgebra::{Matrix3, Point3, Vector3};

use crate::body::{Body, Shape};
use crate::lanes::{InLanes, Quad, Unit, in_unit};
use crate::levelset::{self, DeformedLevelSet, EarlyOut, Evaluation, LevelSetFault, Slope};
use crate::modal::{ModalShape, Modes};
use crate::path::{Configuration, FewColumns, GRID_ROWS, PerMode, RowWeights};

/// A body as the narrow phase sees it during one force evaluation, or one of its periodic
/// images ([`View::image`]: the same body displaced by a cell vector, sharing its deformation).
#[derive(Clone)]
pub struct View<'a> {
    /// The body.
    pub body: &'a Body,
    /// Its shape.
    pub shape: &'a Shape,
    /// Its centre of mass, global: the body's, or its image's.
    pub position: Vector3<f64>,
    /// The centre's velocity, global: the body's, or its image's.
    pub velocity: Vector3<f64>,
    /// `R(q)`, local to global.
    pub rotation: Matrix3<f64>,
    /// Angular velocity, global.
    pub spin: Vector3<f64>,
    /// Radius about the centre of mass that encloses the current shape and the current level
    /// set's zero crossing, padded by a grid spacing (the bounding radius's): what
    /// [`View::reach_within`] falls back on where the derived reach does not hold.
    pub reach: f64,
    /// Bound on the displacement of any surface node from its reference position.
    pub node_shift: f64,
    /// The deformation, if the body's modes are on.
    modes: Option<Arc<Deformed<'a>>>,
}

/// The deformation part of a view.
struct Deformed<'a> {
    shape: &'a ModalShape,
    state: &'a Modes,
    /// Each mode's weights of its points at the amplitudes.
    config: Configuration<'a>,
    /// The modes' rates as weights of the columns ([`Configuration::column_rates`]).
    rates: FewColumns<f64>,
    /// The level set at the current amplitudes.
    levelset: Box<dyn DeformedLevelSet + 'a>,
    /// Its early-out.
    early: EarlyOut,
    /// The first query that could not be answered.
    fault: OnceLock<LevelSetFault>,
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
                    position: body.position,
                    velocity: body.velocity,
                    rotation,
                    spin,
                    reach: shape.bounding_radius,
                    node_shift: 0.0,
                    modes: None,
                };
            }
        };
        let config = Configuration::new(&modal.paths, &state.eps);
        let node_shift = config.bounds().nodes;
        let levelset = levelset::registry::update(&state.levelset, shape, modal, config.clone());
        let early = levelset.early_out();
        View {
            body,
            shape,
            position: body.position,
            velocity: body.velocity,
            rotation,
            spin,
            reach: shape.bounding_radius + node_shift.max(early.all),
            node_shift,
            modes: Some(Arc::new(Deformed {
                shape: modal,
                state,
                rates: config.column_rates(&state.rate),
                config,
                levelset,
                early,
                fault: OnceLock::new(),
            })),
        }
    }

    /// A radius about the centre of mass outside which the current level set is at least
    /// `margin >= 0`: what a side's node tests leave out beyond (at its nodes' largest
    /// margin).
    ///
    /// Derived from the level set while the level `derived_level(margin)` below is at most the
    /// spacing `h` ([`crate::body::Shape::reach`]: every point where the reference level set is
    /// at most `m <= h` lies within `reach + m`): `Shape::reach + derived_level(margin)`. Past
    /// it, the padded radius [`View::reach`] plus `margin`: the judgement the derived bound
    /// replaced, as it was (docs/performance.md, "A reach derived from the level set"), for
    /// every node of a side whose largest margin is past it.
    pub fn reach_within(&self, margin: f64) -> f64 {
        let level = self.derived_level(margin);
        if level <= self.shape.levelset.spec().spacing {
            self.shape.reach + level
        } else {
            self.reach + margin
        }
    }

    /// A bound of the reference level set (its corrected interpolant, which
    /// [`crate::body::Shape::reach`] bounds) where the current one is below `margin`: `margin`
    /// for a rigid body; for a deformed one `all + gap + margin * stretch` (its [`EarlyOut`]:
    /// `all` bounds `|phi - T[phi_0]|` against the reference's trilinear interpolant, `gap`
    /// that interpolant's distance from the corrected one, `stretch` the inverse of the
    /// deformed value's factor; infinite for a margin when that factor may vanish).
    fn derived_level(&self, margin: f64) -> f64 {
        match &self.modes {
            Some(m) => {
                let gap = self.shape.levelset.interpolation_gap();
                m.early.all + gap + margin * m.early.stretch
            }
            None => margin,
        }
    }

    /// The pair search's radius for a law whose nodes take at most `margin`: it holds every
    /// surface node (at most `node_shift` from its reference position, all within
    /// [`crate::body::Shape::reach`]) grown by `margin`, and [`View::reach_within`] at every
    /// margin up to `margin` (increasing on each side of the switch to the padded radius, and
    /// at most `Shape::reach + h` below it), so that two bodies, or a body and a wall, farther
    /// apart than the sum of their radii cannot touch (stage 4, [`crate::sim::broad_phase`]).
    pub fn search_radius(&self, margin: f64) -> f64 {
        let h = self.shape.levelset.spec().spacing;
        let below_switch = match self.derived_level(0.0) <= h {
            true => self.shape.reach + self.derived_level(margin).min(h),
            false => 0.0,
        };
        (self.reach_within(margin))
            .max(below_switch)
            .max(self.shape.reach + self.node_shift + margin)
    }

    /// The radius the ghosts of a decomposed run and a periodic cell's width are held to, from
    /// the view's [`View::search_radius`] `search` at `margin`: at least the padded
    /// [`View::reach`] plus `margin`, which grows with the amplitudes without the search
    /// radius's jump at its switch (the ghosts are sent for a tenth more than the last step's
    /// largest).
    pub fn halo_radius(&self, search: f64, margin: f64) -> f64 {
        search.max(self.reach + margin)
    }

    /// The view of the body's image displaced by `shift` and moving `velocity` faster (a
    /// periodic cell's image: a cell vector, and the cell's velocity gradient times it). It
    /// shares the body's deformation and records its level-set faults in the body's view.
    pub fn image(&self, shift: Vector3<f64>, velocity: Vector3<f64>) -> View<'a> {
        View {
            position: self.position + shift,
            velocity: self.velocity + velocity,
            ..self.clone()
        }
    }

    /// Velocity of the rigid motion at global point `x`: `v + omega x (x - X)`.
    #[inline]
    pub fn point_velocity(&self, x: &Vector3<f64>) -> Vector3<f64> {
        self.velocity + self.spin.cross(&(x - self.position))
    }

    /// The first level-set query of this step that could not be answered, if any.
    pub fn fault(&self) -> Option<&LevelSetFault> {
        self.modes.as_ref().and_then(|m| m.fault.get())
    }

    /// Surface node `k` in the local frame, current configuration: `x0_k + u(x0_k; eps)`
    /// (Eq. 1; [`crate::path`]), computed when asked: a node is tested about once per step, so
    /// this costs less than deforming every node up front.
    #[inline(always)]
    pub fn node_local(&self, k: usize) -> Vector3<f64> {
        in_unit!(self.node_unit(), |q| self.node_local_in(q, k))
    }

    /// [`View::node_local`] in the lanes of `q`, the unit a caller is compiled for (any unit
    /// gives the same bits, [`crate::lanes`]; below four columns the sums take no lanes).
    #[inline(always)]
    pub fn node_local_in<Q: Quad>(&self, q: Q, k: usize) -> Vector3<f64> {
        let x0 = self.shape.nodes[k];
        match &self.modes {
            None => x0,
            Some(m) => x0 + m.config.node_displacement_in(q, k),
        }
    }

    /// The vector unit of the sums over a node's columns ([`View::node_local_in`],
    /// [`View::node_velocity`], [`View::add_node_force`]): none for a rigid body or below four
    /// columns.
    #[inline(always)]
    pub fn node_unit(&self) -> Option<Unit> {
        self.modes.as_ref().and_then(|m| m.config.node_unit())
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
        self.position + self.rotation * self.node_local(k)
    }

    /// Velocity of node `k` at its global position `x`: the rigid motion plus
    /// `R eps'_a du/d eps_a(x0_k)` (the tangents are the mode vectors `Phi_a` of a linear
    /// mode). The sums in the lanes of `q` ([`View::node_local_in`]).
    #[inline(always)]
    pub fn node_velocity<Q: Quad>(&self, q: Q, k: usize, x: &Vector3<f64>) -> Vector3<f64> {
        let rigid = self.point_velocity(x);
        match &self.modes {
            None => rigid,
            Some(m) => rigid + self.rotation * m.config.node_sum(q, k, &m.rates),
        }
    }

    /// Adds the generalized force of a force `f` (global) on node `k` to `columns`, in column
    /// space (Eq. 41: `F_eps_a += du/d eps_a(x0_k) . R^T f`, the tangent being `Phi_a` for a
    /// linear mode); [`View::add_column_forces`] maps them to the modes. `columns` holds
    /// [`View::column_count`] values. The sums in the lanes of `q` ([`View::node_local_in`]).
    #[inline(always)]
    pub fn add_node_force<Q: Quad>(&self, q: Q, k: usize, f: &Vector3<f64>, columns: &mut [f64]) {
        if let Some(m) = &self.modes {
            m.config
                .add_node_force(q, k, &(self.rotation.transpose() * f), columns);
        }
    }

    /// Adds to `out` the modes' generalized forces of the node forces added up in `columns`
    /// ([`View::add_node_force`]).
    pub fn add_column_forces(&self, columns: &[f64], out: &mut [f64]) {
        if let Some(m) = &self.modes {
            m.config.map_columns(columns, out);
        }
    }

    /// Number of the modes' columns (0 if rigid): one per linear mode, one per point of a
    /// path ([`crate::path::Paths`]).
    pub fn column_count(&self) -> usize {
        self.modes.as_ref().map_or(0, |m| m.config.columns())
    }

    /// The level set at local point `y` (value, gradient in the local frame, and the material
    /// point if the update pulled it back) if `y` is inside or within `margin` outside (`phi <
    /// margin`, non-zero gradient), with the exact early-out of the module docs. For a
    /// deformable body, `slope` then holds `d phi / d eps_a` at fixed `y`, exact for the
    /// update's interpolant (zero for the rigid update; per mode: [`View::slope_values`]): a
    /// law that loads nodes in its margin takes their generalized forces from it. `start` is a
    /// guess of the material point under `y` ([`DeformedLevelSet::evaluate`]).
    #[inline(always)]
    pub fn probe(
        &self,
        y: &Point3<f64>,
        start: &Point3<f64>,
        margin: f64,
        slope: &mut Slope,
    ) -> Option<Evaluation> {
        self.evaluate(y, start, Some(margin), margin, slope)
            .filter(|e| e.phi < margin && e.grad.norm() != 0.0)
    }

    /// The (deformed) level set's value and gradient (local frame) at local point `y`,
    /// anywhere.
    pub fn level_set(&self, y: &Point3<f64>) -> (f64, Vector3<f64>) {
        let e = self
            .evaluate(y, y, None, f64::NEG_INFINITY, &mut Slope::Zero)
            .expect("no early-out asked for");
        (e.phi, e.grad)
    }

    /// The level set at `y`, and its amplitude derivative if it is below `below`; `None` if
    /// `early_out` gives a margin and the update's bound shows `y` farther outside, or if the
    /// query failed (then the view records the fault).
    #[inline(always)]
    fn evaluate(
        &self,
        y: &Point3<f64>,
        start: &Point3<f64>,
        early_out: Option<f64>,
        below: f64,
        slope: &mut Slope,
    ) -> Option<Evaluation> {
        let grid = &self.shape.levelset;
        let cell = grid.cell(y);
        // Most points tested are outside: the reference's trilinear value alone decides
        // (within the grid's interpolation gap of the level set), before the point's corners
        // and tie rule ([`grain::Located`]), any gradient or deformed value are computed.
        let trilinear = || grid.trilinear_value(&cell);
        let Some(m) = &self.modes else {
            if early_out.is_some_and(|margin| trilinear() >= margin + grid.interpolation_gap()) {
                return None;
            }
            let at = grid.located(cell);
            let (phi, grad) = grid.sample(&at);
            return Some(Evaluation {
                phi,
                grad,
                material: None,
            });
        };
        if early_out.is_some_and(|margin| m.early.outside(trilinear(), margin)) {
            return None;
        }
        match m.levelset.evaluate(y, start, &cell, below, slope) {
            Ok(v) => Some(v),
            Err(fault) => {
                let _ = m.fault.set(fault);
                None
            }
        }
    }

    /// The mode vectors `Phi_a(X)` of the material point now at local position `y`
    /// (`X + u(X) = y`, the exact pull-back through the grid's mode field, unless `material`
    /// is `X` already: [`Evaluation::material`]), into `out` (emptied; left empty for a rigid
    /// body).
    #[inline(always)]
    pub fn modes_at(
        &self,
        y: &Point3<f64>,
        material: Option<&Point3<f64>>,
        out: &mut PerMode<Vector3<f64>>,
    ) {
        out.clear();
        let Some(m) = &self.modes else {
            return;
        };
        let grid = &self.shape.levelset;
        let at = match material {
            Some(x) => grid.locate(x),
            // In the processor's vector unit as the semi-Lagrangian query's, a cell's lanes in
            // its register, the grid nodes combined afresh: a contact point's cells share few
            // corners with the last one's (the memo missed 7.2 of every 8 reads,
            // docs/performance.md).
            None => match in_unit!(m.config.wide().unit(), |q| grid.pull_back_from(
                y,
                y,
                #[inline(always)]
                |n| InLanes::new(q, Lanes::from_vector(m.config.grid_displacement(n), 0.0))
            )) {
                Ok(back) => back.at,
                Err(fault) => {
                    let _ = m.fault.set(fault.into());
                    grid.locate(y)
                }
            },
        };
        m.config.grid_tangents_at(&at, out);
    }

    /// Velocity of the body's material point at global position `x` (local `y`): the rigid
    /// motion plus `R eps'_a Phi_a(y0)` (`modes` from [`View::modes_at`]).
    #[inline(always)]
    pub fn material_velocity(&self, x: &Vector3<f64>, modes: &[Vector3<f64>]) -> Vector3<f64> {
        let rigid = self.point_velocity(x);
        match &self.modes {
            None => rigid,
            Some(m) => {
                let local: Vector3<f64> =
                    modes.iter().zip(&m.state.rate).map(|(p, r)| p * *r).sum();
                rigid + self.rotation * local
            }
        }
    }

    /// A query's slope ([`View::probe`]) per mode, into `out` (zeros for a rigid body).
    pub fn slope_values(&self, slope: &Slope, out: &mut [f64]) {
        match &self.modes {
            Some(m) => slope.values(&m.config, out),
            None => out.fill(0.0),
        }
    }

    /// Adds `scale` times a query's corner weights ([`Slope::Corners`]) to `rows`, in the
    /// configuration's vector lanes, for the side's end ([`View::drain_rows`]); or, where the
    /// configuration maps them at once ([`Configuration::defers_rows`]), adds their map to
    /// `out`.
    #[inline(always)]
    pub fn add_rows(
        &self,
        rows: &mut RowWeights,
        corners: &[usize; 8],
        weights: &[[f64; GRID_ROWS]; 8],
        scale: f64,
        out: &mut [f64],
    ) {
        if let Some(m) = &self.modes {
            if m.config.defers_rows() {
                rows.add(m.config.wide(), corners, weights, scale);
            } else {
                m.config
                    .grid_rows_map(corners.iter().copied().zip(weights), scale, out);
            }
        }
    }

    /// Adds to `out` the map of the grid rows' weights `rows` added up over queries
    /// ([`crate::path::RowWeights`]: the generalized forces they stand for) and empties them.
    pub fn drain_rows(&self, rows: &mut RowWeights, out: &mut [f64]) {
        if let Some(m) = &self.modes {
            rows.drain_into(&m.config, out);
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
