//! The contact-law interface, and the laws between a surface node and a level set (docs/physics.md
//! section 4), one page each in the LAMMPS "pair style" manner.
//!
//! # The interface
//! Each law is one type implementing [`ContactLaw`]: its scene check (which grains it can
//! handle), its stiffness for the automatic time step, and its forces on a pair with the
//! pair's history ([`PairHistory`]: what the law keeps from step to step, saved whole in
//! checkpoints). The solver builds one [`View`] of each body per step; a law sees the pair
//! through them, so deformation (moving nodes, deforming level sets, generalized forces) is the
//! views' business, not the law's.
//!
//! # The node laws
//! Both node laws take, per node in contact:
//! - the penetration `d = -phi >= 0` (length) of the node into the other body's level set `phi`;
//! - the unit normal `n = grad phi / |grad phi|` (global frame) of that level set, pointing out of
//!   the other body, so that the normal force on the node's body is along `+n`, and `|grad phi|`;
//! - the node's velocity relative to the other body at the node, `v_rel` (global frame);
//! - the node's shear displacement `s` from the previous step (global frame), if it was in
//!   contact then;
//!
//! and return the force on the node's body (global frame; the other body gets `-f` at the same
//! point), the new shear displacement and the stored elastic energy.
//!
//! # `linear-springs` (Kawamoto et al. 2016)
//! `f = k_n d |grad phi| n - c_n v_n n + f_t`, with `v_n = v_rel . n`; `k_n` in force/length per
//! node. The elastic part is `-grad (1/2 k_n phi^2)`, so that contacts conserve energy: it is
//! Kawamoto's `k_n d n` where `phi` is an exact distance (`|grad phi| = 1`), and differs from it
//! only by the grid's interpolation error elsewhere. (With the unit normal instead, an undamped
//! box of grains drifted 14 times more: 2.1e-3 against 1.5e-4 of its energy in 20,000 steps.)
//! Its stiffness grows with the number of nodes in contact: results depend on the node density.
//!
//! # `area-tractions` (Feldfogel et al. 2024)
//! The same expression times the node's area `a_k`: `f = a_k (k_n d n - c_n v_n n + t_s)`, with
//! `k_n` in force/length^3 (a traction per unit penetration). A sum over nodes is a quadrature of
//! the traction over the contact area, so it converges as nodes are refined: a sphere of radius
//! `R` pressed by `h` into a plane carries `k_n pi R h^2` in the limit (small `h`).
//!
//! # Shear (both laws)
//! An incremental spring per node contact: the previous `s` is turned into the current tangent
//! plane (its length kept), then `s += v_t dt` with `v_t = v_rel - v_n n`; the shear force (per
//! node, or per unit area) is `-k_s s`, capped at `mu k_n d` (Coulomb on the elastic normal part):
//! when the cap is reached, `s` is shortened to the slip value `mu k_n d / k_s`. The history is
//! dropped when the node leaves contact. Normal damping does not enter the cap, and the normal
//! force is not clipped at zero: with `c_n > 0` a separating node may pull slightly.
//!
//! Energy (for the run's ledger): `1/2 k_n d^2` plus `1/2 k_s |s|^2` per node (times the
//! scale); the viscous force dissipates `c_n v_n^2` per unit time, the Coulomb cap the spring
//! energy it removes, `1/2 k_s (|s_trial|^2 - |s|^2)`.
//!
//! Deformable grains: the node's body takes `Phi_a(x0_k) . R^T f` on its modes (Eq. 41); the
//! body whose level set is penetrated takes `-dE/d eps_a = k_n d dphi/d eps_a` (times the scale)
//! for the elastic normal force, the exact derivative of the contact energy through its level
//! set's update, and the virtual work `Phi_a(y0) . R^T (-f)` of the rest (damping and shear).
//!
//! Restart: `s` is the whole history, saved in checkpoints.

use std::sync::Arc;

use nalgebra::Vector3;
use serde::{Deserialize, Serialize};

use crate::body::{Body, Shape};
use crate::hertz::{SphereLaw, SpherePair};
use crate::narrow::{self, NodeShear, PairKey, PairOutcome};
use crate::scene::KeyError;
use crate::scene::{Contact, LawKind};
use crate::view::View;
use crate::wall::Wall;

/// A contact law: one implementation per `contact.law` of the scene.
pub trait ContactLaw: Send + Sync + std::fmt::Debug {
    /// Refuses a scene whose grains the law cannot handle: `(key, message)` of the first.
    fn check(&self, shapes: &[Arc<Shape>], bodies: &[Body]) -> Result<(), KeyError>;

    /// The stiffness `k` and viscous coefficient `c` (force per velocity) of the stiffest
    /// contact a grain of `shape` is expected to make, for the automatic time step; `patch`
    /// is the largest contact measured in the initial state (the law's own unit, see
    /// [`PairOutcome::patch`]), `overlap` the deepest initial penetration.
    fn stiffness(&self, shape: &Shape, patch: f64, overlap: f64) -> (f64, f64);

    /// Whether a history (read from a checkpoint) is one of this law's.
    fn accepts(&self, history: &PairHistory) -> bool;

    /// The forces of one pair over a step `dt` (`old`: its history, if it touched before,
    /// handed over so that the law can advance it in place) and the history to keep (`None`
    /// once apart).
    fn pair(
        &self,
        pair: &Pair,
        old: Option<PairHistory>,
        dt: f64,
    ) -> (PairOutcome, Option<PairHistory>);
}

/// The law of a checked scene's `[contact]` table.
pub fn from_scene(c: &Contact) -> Box<dyn ContactLaw> {
    match c.law {
        LawKind::HertzJaeger | LawKind::HertzMindlin => Box::new(SphereLaw::new(c)),
        LawKind::LinearSprings | LawKind::AreaTractions => Box::new(NodeLaw::new(c)),
    }
}

/// A pair as a law sees it: the views of body `a` and of its partner.
pub struct Pair<'a> {
    /// Its key.
    pub key: PairKey,
    /// Body `a`.
    pub a: &'a View<'a>,
    /// The partner.
    pub b: Against<'a>,
    /// Which body gives the nodes in a grain pair ([`crate::narrow::a_gives`]; unused for
    /// walls).
    pub a_gives: Option<bool>,
    /// Keep node forces for output.
    pub record: bool,
}

/// The partner of a pair.
pub enum Against<'a> {
    /// Another body.
    Body(&'a View<'a>),
    /// A wall.
    Wall(&'a Wall),
}

/// What a pair in contact remembers from step to step.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum PairHistory {
    /// Node laws: the shear of each node in contact, sorted by `(side, node)`.
    Nodes(Vec<NodeShear>),
    /// Hertz-Jäger: the sphere contact's frame and history.
    Sphere(Box<SpherePair>),
}

impl PairHistory {
    /// Bytes this history holds: its own size and what it allocated (a Jäger contact's store).
    pub fn bytes(&self) -> usize {
        size_of::<Self>()
            + match self {
                PairHistory::Nodes(v) => v.capacity() * size_of::<NodeShear>(),
                PairHistory::Sphere(s) => s.bytes(),
            }
    }
}

/// The histories of every pair in contact, sorted by pair.
pub type Histories = Vec<(PairKey, PairHistory)>;

/// A node contact law with its parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeLaw {
    /// Area tractions (forces scale with node areas), or linear node springs.
    pub per_area: bool,
    /// `k_n`.
    pub kn: f64,
    /// `k_s`.
    pub ks: f64,
    /// `mu`.
    pub friction: f64,
    /// `c_n`.
    pub normal_damping: f64,
}

/// The result for one node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeForce {
    /// Force on the node's body, global.
    pub force: Vector3<f64>,
    /// Its elastic normal part, `k_n d |grad phi| n` (times the scale).
    pub elastic: Vector3<f64>,
    /// `dE/d phi = -k_n d` (times the scale): the elastic energy's slope in the level set.
    pub energy_slope: f64,
    /// The new shear displacement (zero without friction).
    pub shear: Vector3<f64>,
    /// Elastic energy stored in this node's springs.
    pub energy: f64,
    /// Power of the viscous force, `c_n v_n^2` (times the scale).
    pub viscous_power: f64,
    /// Spring energy removed by the Coulomb cap in this step.
    pub slip_loss: f64,
}

impl NodeLaw {
    /// The law of a scene's `[contact]` table.
    pub fn new(c: &Contact) -> NodeLaw {
        NodeLaw {
            per_area: c.law == LawKind::AreaTractions,
            kn: c.kn,
            ks: c.ks,
            friction: c.friction,
            normal_damping: c.normal_damping,
        }
    }

    /// Whether contacts carry a shear history.
    pub fn has_shear(&self) -> bool {
        self.ks > 0.0 && self.friction > 0.0
    }

    /// Whether the force depends on the relative velocity (damping or shear).
    pub fn uses_velocity(&self) -> bool {
        self.has_shear() || self.normal_damping > 0.0
    }

    /// The node's weight: 1 per node, or its area; times `weight` (1/2 when both grains of a
    /// pair give nodes).
    #[inline]
    pub fn scale(&self, area: f64, weight: f64) -> f64 {
        if self.per_area { weight * area } else { weight }
    }

    /// The force on one node (module docs): penetration `d`, unit normal `n`, `|grad phi|`,
    /// relative velocity `v_rel`, previous shear `shear` (zero if new), node scale from
    /// [`NodeLaw::scale`], step `dt`.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn node_force(
        &self,
        d: f64,
        n: &Vector3<f64>,
        grad_norm: f64,
        v_rel: &Vector3<f64>,
        shear: &Vector3<f64>,
        scale: f64,
        dt: f64,
    ) -> NodeForce {
        let v_n = v_rel.dot(n);
        let normal = self.kn * d;
        let mut force = n * (scale * (normal * grad_norm - self.normal_damping * v_n));
        let elastic = n * (scale * normal * grad_norm);
        let mut energy = 0.5 * scale * normal * d;
        let mut slip_loss = 0.0;
        let mut s = Vector3::zeros();
        if self.has_shear() {
            // Turn the old shear into the new tangent plane, keeping its length.
            let old = shear.norm();
            let projected = shear - n * shear.dot(n);
            let p = projected.norm();
            if p > 0.0 {
                s = projected * (old / p);
            }
            s += (v_rel - n * v_n) * dt;
            let cap = self.friction * normal;
            let spring = self.ks * s.norm();
            if spring > cap {
                let trial = s.norm_squared();
                s *= cap / spring;
                slip_loss = 0.5 * scale * self.ks * (trial - s.norm_squared());
            }
            force -= s * (scale * self.ks);
            energy += 0.5 * scale * self.ks * s.norm_squared();
        }
        NodeForce {
            force,
            elastic,
            energy_slope: -scale * normal,
            shear: s,
            energy,
            viscous_power: scale * self.normal_damping * v_n * v_n,
            slip_loss,
        }
    }
}

impl ContactLaw for NodeLaw {
    fn check(&self, _: &[Arc<Shape>], _: &[Body]) -> Result<(), KeyError> {
        Ok(())
    }

    /// A patch of nodes: a grain of bounding radius `r` pressed by `delta` (1 % of `r`, or the
    /// deepest initial penetration if larger) touches over a cap of area `2 pi r delta`; the
    /// patch carries `k_n` per node in it (node density times area, at least one node) or
    /// `k_n` times its area (area tractions), or the largest patch of the initial state if
    /// that is larger. The viscous coefficient scales alike.
    fn stiffness(&self, shape: &Shape, patch: f64, overlap: f64) -> (f64, f64) {
        let r = shape.bounding_radius;
        let cap = 2.0 * std::f64::consts::PI * r * (0.01 * r).max(overlap);
        let largest_area = shape.areas.iter().copied().fold(0.0, f64::max);
        let weight = if self.per_area {
            cap.max(largest_area)
        } else {
            (shape.node_density * cap).max(1.0)
        }
        .max(patch);
        (self.kn * weight, self.normal_damping * weight)
    }

    fn accepts(&self, history: &PairHistory) -> bool {
        matches!(history, PairHistory::Nodes(_))
    }

    fn pair(
        &self,
        pair: &Pair,
        old: Option<PairHistory>,
        dt: f64,
    ) -> (PairOutcome, Option<PairHistory>) {
        let old = match &old {
            Some(PairHistory::Nodes(v)) => v.as_slice(),
            _ => &[],
        };
        let mut out = narrow::node_pair(self, pair, old, dt);
        let shear = std::mem::take(&mut out.shear);
        (
            out,
            (!shear.is_empty()).then_some(PairHistory::Nodes(shear)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn law(per_area: bool) -> NodeLaw {
        NodeLaw {
            per_area,
            kn: 100.0,
            ks: 50.0,
            friction: 0.5,
            normal_damping: 0.0,
        }
    }

    #[test]
    fn shear_spring_sticks_then_slips_at_the_coulomb_cap() {
        let l = law(false);
        let n = Vector3::z();
        let v = Vector3::new(1.0, 0.0, 0.0);
        // d = 0.01: normal force 1, cap 0.5, reached at s = 0.01.
        let mut s = Vector3::zeros();
        let f = l.node_force(0.01, &n, 1.0, &v, &s, 1.0, 0.004);
        assert!((f.force - Vector3::new(-50.0 * 0.004, 0.0, 1.0)).norm() < 1e-15);
        s = f.shear;
        let f = l.node_force(0.01, &n, 1.0, &v, &s, 1.0, 0.004);
        assert!((f.force - Vector3::new(-0.4, 0.0, 1.0)).norm() < 1e-15);
        s = f.shear;
        let f = l.node_force(0.01, &n, 1.0, &v, &s, 1.0, 0.004);
        assert!(
            (f.force - Vector3::new(-0.5, 0.0, 1.0)).norm() < 1e-15,
            "capped"
        );
        assert!((f.shear.x - 0.01).abs() < 1e-15);
        // Area tractions: the same times the area.
        let a = law(true).node_force(0.01, &n, 1.0, &v, &Vector3::zeros(), 0.3, 0.004);
        assert!((a.force - Vector3::new(-0.3 * 0.2, 0.0, 0.3)).norm() < 1e-15);
    }

    #[test]
    fn old_shear_turns_with_the_normal() {
        let l = law(false);
        // Shear along x under normal z; the normal tilts to (sin t, 0, cos t): the shear keeps
        // its length in the new tangent plane.
        let t: f64 = 0.1;
        let n = Vector3::new(t.sin(), 0.0, t.cos());
        let f = l.node_force(
            1.0,
            &n,
            1.0,
            &Vector3::zeros(),
            &Vector3::new(0.002, 0.0, 0.0),
            1.0,
            1.0,
        );
        assert!(f.shear.dot(&n).abs() < 1e-18);
        assert!((f.shear.norm() - 0.002).abs() < 1e-17);
    }
}
