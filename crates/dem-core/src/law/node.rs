//! What the node laws share (docs/physics.md section 4): the narrow phase of surface nodes in a
//! level set, the damping and shear at each node, its history and its keys. The laws differ in
//! the elastic normal traction at a node and the node's weight ([`NodeModel`]): a linear spring
//! weighted per node or per area ([`Linear`]: [`super::linear_springs`],
//! [`super::area_tractions`]), or Hertz's pressure ([`super::hertz_patches`]).
//!
//! # Keys
//! `kn` (> 0), `ks`, `friction` (`mu`), `normal_damping` (`c_n`), all `>= 0` and 0 unless given,
//! in the law's units; `nodes = "both"` (default) or `"finer"`: which grain of a grain pair gives
//! the nodes ([`a_gives`], with the grains' own `nodes` roles).
//!
//! # The spring at a node
//! Each node in contact gives:
//! - the penetration `d = -phi >= 0` (length) of the node into the other side's level set `phi`;
//! - the unit normal `n = grad phi / |grad phi|` (global frame) of that level set, pointing out of
//!   the other side, so that the normal force on the node's body is along `+n`, and `|grad phi|`;
//! - the node's velocity relative to the other side's material point at the node, `v_rel`;
//! - the node's shear displacement `s` from the previous step (global frame), if it was in
//!   contact then;
//!
//! and the law returns, with the node's weight `w` (its law's: 1, or the node's area; times 1/2
//! when both grains of a pair give nodes), the force on the node's body (global frame; the other
//! side gets `-f` at the same point) `f = w (k_n d |grad phi| n - c_n v_n n - k_s s)`,
//! `v_n = v_rel . n`, the new shear displacement and the stored elastic energy. The elastic part
//! is `-grad (1/2 k_n phi^2)`, so that contacts conserve energy: it is Kawamoto's `k_n d n` where
//! `phi` is an exact distance (`|grad phi| = 1`), and differs from it only by the grid's
//! interpolation error elsewhere. (With the unit normal instead, an undamped box of grains
//! drifted 14 times more: 2.1e-3 against 1.5e-4 of its energy in 20,000 steps.)
//!
//! # Shear
//! An incremental spring per node contact: the previous `s` is turned into the current tangent
//! plane (its length kept), then `s += v_t dt` with `v_t = v_rel - v_n n`; the shear force (per
//! weight) is `-k_s s`, capped at `mu k_n d` (Coulomb on the elastic normal part): when the cap
//! is reached, `s` is shortened to the slip value `mu k_n d / k_s`. The history is dropped when
//! the node leaves contact. Normal damping does not enter the cap, and the normal force is not
//! clipped at zero: with `c_n > 0` a separating node may pull slightly.
//!
//! Energy (for the run's ledger): `w (1/2 k_n d^2 + 1/2 k_s |s|^2)` per node; the viscous force
//! dissipates `w c_n v_n^2` per unit time, the Coulomb cap the work of the slip
//! `s_trial - s` at the mean of the step's two spring forces, `w/2 k_s (s_old + s) . (s_trial -
//! s)` (`s_old` turned into the current plane): the spring's work `w/2 k_s (s_old + s) . v_t dt`
//! over the step less its energy change, zero while it sticks. (The spring energy the cap
//! removes, `w/2 k_s (|s_trial|^2 - |s|^2)`, counts `w/2 k_s |v_t dt|^2` more each sliding
//! step: a ledger error of first order in `dt`, 2.8 % in the demo's granular compression.)
//!
//! The spring above is the linear models' ([`Linear`]): another model ([`NodeModel`]) replaces
//! its elastic normal traction `k_n d` and energy `k_n d^2 / 2` by its own `p(d)` and energy
//! (the cap becomes `mu p`), and may take nodes just outside the other side (its
//! [`NodeModel::margin`]: a node whose patch is partly inside, `d > -w`); a node outside whose
//! patch carries no traction is skipped like one out of reach. A law that couples the contacts
//! through the grains' bodies ([`crate::coupling`]) raises every penetration of a pair by the
//! pair's [`Pair::offset`].
//!
//! # Deformable grains
//! The node's body takes `Phi_a(x0_k) . R^T f` on its modes (Eq. 41); the body whose level set is
//! penetrated takes `-dE/d eps_a = w k_n d dphi/d eps_a` for the elastic normal force, the exact
//! derivative of the contact energy through its level set's update, and the virtual work
//! `Phi_a(y0) . R^T (-f)` of the rest (damping and shear).
//!
//! # The narrow phase
//! A node `x_k` (local, current configuration) of body `p` is tested against the other side
//! through [`Surface::touch`]: for a body `q`, in `q`'s local frame, `y = R_q^T (X_p + R_p x_k -
//! X_q)`, computed as `y = R_pq x_k + t_pq` with the pair's relative rotation and translation
//! formed once. Node clusters out of reach (grown by the largest node displacement) are skipped
//! whole, and whole subtrees of them ([`crate::body::Clusters`]); the nodes of a cluster in
//! reach that lie outside `q`'s reach ball are dropped four at a time
//! ([`crate::body::Leaf::within`]) and the rest rejected one by one before the grid is read.
//!
//! Restart: the shears `s` are the whole history, saved in checkpoints (`{"Nodes": [...]}`).

use std::marker::PhantomData;
use std::sync::Arc;

use nalgebra::Vector3;
use serde::{Deserialize, Serialize};

use super::surface::{Scratch, Surface};
use super::{
    Against, ContactLaw, ContactLoad, History, NodeRecord, Pair, PairHistory, PairKey, PairOutcome,
    Partner, downcast,
};
use crate::body::{Body, Cluster, NodeRole, Shape};
use crate::error::KeyError;
use crate::lanes::{Quad, Wide, in_unit};
use crate::path::{PerColumn, PerMode};
use crate::view::View;
use crate::wall::WallSpec;

/// What a node law's models differ in (module docs): the elastic normal traction `p(d)` at a
/// node, its weight, and their keys; everything else is [`NodeLaw`]'s.
pub trait NodeModel: Send + Sync + std::fmt::Debug + 'static {
    /// The law's name in scene files.
    const NAME: &'static str;

    /// Whether the law takes the coupling through grains' bodies ([`ContactLaw::couples`]).
    const COUPLES: bool = false;

    /// The shared keys' values.
    fn tangential(&self) -> Tangential;

    /// Which grain of a grain pair gives the nodes.
    fn roles(&self) -> NodeRoles;

    /// Refuses the model's own keys out of range (named `contact.<key>`).
    fn check_keys(&self) -> Result<(), KeyError>;

    /// Refuses a scene whose grains (and `walls` walls) the model cannot handle
    /// ([`ContactLaw::check`]).
    fn check_grains(
        &self,
        _shapes: &[Arc<Shape>],
        _bodies: &[Body],
        _walls: usize,
    ) -> Result<(), KeyError> {
        Ok(())
    }

    /// The node's weight `w` (1, or its `area`) times `weight` (1/2 when both grains of a pair
    /// give nodes).
    fn scale(area: f64, weight: f64) -> f64;

    /// How far outside the other side a node of `area` still carries a traction (0: only
    /// nodes inside).
    fn margin(area: f64) -> f64 {
        let _ = area;
        0.0
    }

    /// The elastic normal traction per unit weight at penetration `d >= 0` and the elastic
    /// energy per unit weight it stores; `sides` tells the two sides at the node, for the
    /// models that need them.
    fn normal<'s>(&self, d: f64, sides: impl FnOnce() -> NodeSides<'s>) -> (f64, f64);

    /// The stiffness (force per length) and the weight multiplying `c_n` of the stiffest
    /// contact a grain of `shape` is expected to make, for the automatic step
    /// ([`ContactLaw::stiffness`]).
    fn auto_stiffness(&self, shape: &Shape, patch: f64, overlap: f64) -> (f64, f64);

    /// A pair's normal stiffness `dF_n / d delta` now, from its summed node weights `patch`,
    /// the magnitude of its summed elastic normal forces and its deepest penetration.
    fn pair_stiffness(&self, patch: f64, elastic: f64, deepest: f64) -> f64;
}

/// The two sides of a node contact, as a model may need them.
pub struct NodeSides<'s> {
    /// How much the penetration varies over the node's patch: half its side `sqrt(a_k)` times
    /// the penetration's slope along the giver's surface, `|grad phi| |n_q x n_p|` (`n_p` the
    /// node's normal, `n_q` the other side's), at most [`NodeModel::margin`].
    pub spread: f64,
    /// `kappa_1 + kappa_2`, the surfaces' curvatures at the node summed ([`crate::curvature`]),
    /// at least `0.1 / r` (`r` the giver's bounding radius: conforming flat faces).
    pub curvature: f64,
    /// The shape giving the node.
    pub giver: &'s Shape,
    /// The other side's shape (none for a wall).
    pub other: Option<&'s Shape>,
}

/// The keys every node law has beside its normal model's: the viscous and tangential parts of
/// the node force (module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tangential {
    /// `k_s`, per weight.
    pub ks: f64,
    /// `mu`.
    pub friction: f64,
    /// `c_n`, per weight.
    pub normal_damping: f64,
}

/// A node law: its normal model `M` (module docs) under the shared narrow phase, damping and
/// shear. Its keys are the model's.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct NodeLaw<M>(pub M);

/// The node laws' linear spring, `p = k_n d` per weight: its keys (module docs) and its
/// weighting `W`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, bound = "")]
pub struct Linear<W> {
    /// `k_n`: force/length per node, or force/length^3 per area.
    pub kn: f64,
    /// `k_s`, in `k_n`'s units.
    #[serde(default)]
    pub ks: f64,
    /// `mu`.
    #[serde(default)]
    pub friction: f64,
    /// `c_n`: force*time/length per node, or per area.
    #[serde(default)]
    pub normal_damping: f64,
    /// Which grain of a grain pair gives the nodes.
    #[serde(default = "both")]
    pub nodes: NodeRoles,
    #[serde(skip)]
    weight: PhantomData<W>,
}

/// How a linear node law weights a node.
pub trait NodeWeight: Send + Sync + std::fmt::Debug + 'static {
    /// The law's name in scene files.
    const NAME: &'static str;

    /// The node's weight `w`: 1, or its `area`; times `weight`.
    fn scale(area: f64, weight: f64) -> f64;

    /// The weight of a contact patch of area `cap` on a grain of `shape` (for the automatic
    /// step): its node count (at least one), or its area (at least one node's).
    fn patch(shape: &Shape, cap: f64) -> f64;
}

/// The default of `nodes`.
pub fn both() -> NodeRoles {
    NodeRoles::Both
}

impl<W: NodeWeight> Linear<W> {
    /// The law with these parameters and `nodes = "both"`.
    pub fn new(kn: f64, ks: f64, friction: f64, normal_damping: f64) -> NodeLaw<Self> {
        NodeLaw(Linear {
            kn,
            ks,
            friction,
            normal_damping,
            nodes: NodeRoles::Both,
            weight: PhantomData,
        })
    }
}

impl<W: NodeWeight> NodeModel for Linear<W> {
    const NAME: &'static str = W::NAME;

    fn tangential(&self) -> Tangential {
        Tangential {
            ks: self.ks,
            friction: self.friction,
            normal_damping: self.normal_damping,
        }
    }

    fn roles(&self) -> NodeRoles {
        self.nodes
    }

    fn check_keys(&self) -> Result<(), KeyError> {
        if !(self.kn.is_finite() && self.kn > 0.0) {
            return Err(KeyError::new(
                "contact.kn".into(),
                format!("a stiffness > 0, got {}", self.kn),
            ));
        }
        Ok(())
    }

    #[inline]
    fn scale(area: f64, weight: f64) -> f64 {
        W::scale(area, weight)
    }

    #[inline]
    fn normal<'s>(&self, d: f64, _: impl FnOnce() -> NodeSides<'s>) -> (f64, f64) {
        let p = self.kn * d;
        (p, 0.5 * p * d)
    }

    /// A patch of nodes: a grain of bounding radius `r` pressed by `delta` (1 % of `r`, or the
    /// deepest initial penetration if larger) touches over a cap of area `2 pi r delta`; the
    /// patch carries `k_n` times its weight ([`NodeWeight::patch`]), or the largest patch of
    /// the initial state if that is larger. The viscous coefficient scales alike.
    fn auto_stiffness(&self, shape: &Shape, patch: f64, overlap: f64) -> (f64, f64) {
        let r = shape.bounding_radius;
        let cap = 2.0 * std::f64::consts::PI * r * (0.01 * r).max(overlap);
        let weight = W::patch(shape, cap).max(patch);
        (self.kn * weight, weight)
    }

    /// Each node's spring, `k_n` per weight, over the summed weights.
    fn pair_stiffness(&self, patch: f64, _: f64, _: f64) -> f64 {
        self.kn * patch
    }
}

/// The result for one node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeForce {
    /// Force on the node's body, global.
    pub force: Vector3<f64>,
    /// Its elastic normal part, `k_n d |grad phi| n` (times the weight).
    pub elastic: Vector3<f64>,
    /// `dE/d phi = -k_n d` (times the weight): the elastic energy's slope in the level set.
    pub energy_slope: f64,
    /// The new shear displacement (zero without friction).
    pub shear: Vector3<f64>,
    /// Elastic energy stored in this node's springs.
    pub energy: f64,
    /// Power of the viscous force, `c_n v_n^2` (times the weight).
    pub viscous_power: f64,
    /// Spring energy removed by the Coulomb cap in this step.
    pub slip_loss: f64,
}

/// The shear displacement of one node contact. `side` 0: a node of body `a` in the partner;
/// 1: a node of partner body `b` in body `a`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NodeShear {
    /// Which body gives the node.
    pub side: u8,
    /// The node's index in its shape.
    pub node: u32,
    /// Shear displacement `s`, global.
    pub shear: Vector3<f64>,
}

/// A node-law pair's history: the shear of each node in contact, sorted by `(side, node)`, and
/// for a law that couples, the pair's load.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeHistory {
    /// The node contacts with a shear.
    #[serde(rename = "Nodes")]
    pub shears: Vec<NodeShear>,
    /// The pair's load in the step (laws that couple).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<ContactLoad>,
    /// The list the next step's shears are written into, empty between steps with its capacity
    /// kept: the step reads the old list while it writes the new one, and the two are swapped,
    /// so that a pair in contact allocates no list per step (docs/performance.md, "A pair's
    /// shears in two kept lists").
    #[serde(skip)]
    spare: Vec<NodeShear>,
}

impl History for NodeHistory {
    fn bytes(&self) -> usize {
        size_of::<Self>()
            + (self.shears.capacity() + self.spare.capacity()) * size_of::<NodeShear>()
    }

    fn save(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("shears serialize")
    }

    fn boxed_clone(&self) -> PairHistory {
        Box::new(self.clone())
    }

    fn load(&self) -> Option<ContactLoad> {
        self.load
    }
}

impl Tangential {
    /// Whether contacts carry a shear history.
    pub fn has_shear(&self) -> bool {
        self.ks > 0.0 && self.friction > 0.0
    }

    /// Whether the force depends on the relative velocity (damping or shear).
    pub fn uses_velocity(&self) -> bool {
        self.has_shear() || self.normal_damping > 0.0
    }

    /// Refuses a negative or non-finite key.
    fn check(&self) -> Result<(), KeyError> {
        for (key, v) in [
            ("ks", self.ks),
            ("friction", self.friction),
            ("normal_damping", self.normal_damping),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(KeyError::new(
                    format!("contact.{key}"),
                    format!("a number >= 0, got {v}"),
                ));
            }
        }
        Ok(())
    }

    /// The force on one node (module docs): the elastic normal traction `p` and its energy per
    /// weight ([`NodeModel::normal`]), unit normal `n`, `|grad phi|`, relative velocity `v_rel`,
    /// previous shear `shear` (zero if new), node weight `scale` ([`NodeModel::scale`]), step
    /// `dt`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn node_force(
        &self,
        (normal, stored): (f64, f64),
        n: &Vector3<f64>,
        grad_norm: f64,
        v_rel: &Vector3<f64>,
        shear: &Vector3<f64>,
        scale: f64,
        dt: f64,
    ) -> NodeForce {
        let v_n = v_rel.dot(n);
        let mut force = n * (scale * (normal * grad_norm - self.normal_damping * v_n));
        let elastic = n * (scale * normal * grad_norm);
        let mut energy = scale * stored;
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
            let turned = s;
            s += (v_rel - n * v_n) * dt;
            let cap = self.friction * normal;
            let spring = self.ks * s.norm();
            if spring > cap {
                let trial = s;
                s *= cap / spring;
                // The slip's work at the mean of the step's two spring forces, less what the
                // spring keeps (module docs): exactly the work the integrator's trapezoid gave
                // the grains, so that the ledger closes at second order in dt.
                slip_loss = 0.5 * scale * self.ks * (turned + s).dot(&(trial - s));
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

impl<M: NodeModel> ContactLaw for NodeLaw<M> {
    fn name(&self) -> &'static str {
        M::NAME
    }

    fn check_scene(&self, _: &[WallSpec]) -> Result<(), KeyError> {
        self.0.tangential().check()?;
        self.0.check_keys()
    }

    fn check(&self, shapes: &[Arc<Shape>], bodies: &[Body], walls: usize) -> Result<(), KeyError> {
        self.0.check_grains(shapes, bodies, walls)
    }

    fn stiffness(&self, shape: &Shape, patch: f64, overlap: f64) -> (f64, f64) {
        let (k, weight) = self.0.auto_stiffness(shape, patch, overlap);
        (k, self.0.tangential().normal_damping * weight)
    }

    fn margin(&self, shape: &Shape) -> f64 {
        M::margin(shape.largest_area)
    }

    fn load(
        &self,
        key: &PairKey,
        saved: serde_json::Value,
        nodes: &dyn Fn(u32) -> usize,
    ) -> Result<PairHistory, String> {
        let h: NodeHistory = serde_json::from_value(saved)
            .map_err(|e| format!("not a history of law = \"{}\": {e}", M::NAME))?;
        for s in &h.shears {
            let giver = match (s.side, key.b) {
                (0, _) => key.a,
                (1, Partner::Body(j)) => j,
                _ => return Err(format!("side {} does not fit the pair", s.side)),
            };
            if s.node as usize >= nodes(giver) {
                return Err(format!("node {} is not one of body {giver}'s", s.node));
            }
        }
        if !h.shears.is_sorted_by_key(|s| (s.side, s.node)) {
            return Err("node shears not sorted by side and node".into());
        }
        Ok(Box::new(h))
    }

    fn couples(&self) -> bool {
        M::COUPLES
    }

    fn pair(
        &self,
        pair: &Pair,
        old: Option<PairHistory>,
        dt: f64,
    ) -> (PairOutcome, Option<PairHistory>) {
        let mut history = downcast::<NodeHistory>(old).unwrap_or_default();
        // The pairs' contacts change little from step to step.
        let mut spare = std::mem::take(&mut history.spare);
        spare.reserve(history.shears.len());
        let (out, shears, load) = node_pair(&self.0, pair, &history.shears, spare, dt);
        if shears.is_empty() && load.is_none() {
            return (out, None);
        }
        let mut old = std::mem::replace(&mut history.shears, shears);
        old.clear();
        history.spare = old;
        history.load = load;
        (out, Some(history))
    }
}

/// One direction of a pair: the nodes of `giver` in the other side's level set.
struct Side<'a> {
    /// 0 or 1 (see [`NodeShear`]).
    side: u8,
    /// Index of the body giving nodes.
    index: u32,
    /// The body giving nodes.
    giver: &'a View<'a>,
    /// The law's weight (1/2 when both directions count).
    weight: f64,
}

/// The node-law contacts of one pair (both directions, or the finer grain's nodes, by the
/// scene's node roles), the new shears (sorted, written into the empty list `shears`) and, for
/// a law that couples, the pair's load.
fn node_pair<M: NodeModel>(
    law: &M,
    pair: &Pair,
    old: &[NodeShear],
    shears: Vec<NodeShear>,
    dt: f64,
) -> (PairOutcome, Vec<NodeShear>, Option<ContactLoad>) {
    let a = pair.a;
    let mut out = PairOutcome {
        modal_a: smallvec::smallvec![0.0; a.mode_count()],
        ..PairOutcome::default()
    };
    if let Against::Body(b) = pair.b {
        out.modal_b = smallvec::smallvec![0.0; b.mode_count()];
    }
    let mut acc = Acc {
        law,
        tangential: law.tangential(),
        old,
        dt,
        record: pair.record,
        out,
        shears,
        columns: PerColumn::new(),
        elastic: 0.0,
        moment: Vector3::zeros(),
        offset: pair.offset,
    };
    let side = |side: u8, index: u32, giver, weight| Side {
        side,
        index,
        giver,
        weight,
    };
    match pair.b {
        Against::Wall(wall) => acc.side_contacts(&side(0, pair.key.a, a, 1.0), wall),
        Against::Body(b) => {
            let Partner::Body(j) = pair.key.b else {
                unreachable!("a body partner has a body key")
            };
            let a_gives = a_gives(
                law.roles(),
                (pair.roles.0, a.shape.node_density),
                (pair.roles.1, b.shape.node_density),
            );
            let weight = if a_gives.is_none() { 0.5 } else { 1.0 };
            if a_gives != Some(false) {
                acc.side_contacts(&side(0, pair.key.a, a, weight), b);
            }
            if a_gives != Some(true) {
                acc.side_contacts(&side(1, j, b, weight), a);
            }
        }
    }
    acc.out.stiffness = law.pair_stiffness(acc.out.patch, acc.elastic, acc.out.deepest);
    // The coupling's share of the energy (crate::coupling).
    acc.out.energy -= 0.5 * pair.offset * acc.elastic;
    let load = (M::COUPLES && acc.elastic > 0.0).then(|| ContactLoad {
        force: acc.elastic,
        point: (acc.moment / acc.elastic - pair.a.position).into(),
    });
    (acc.out, acc.shears, load)
}

/// Which body of a grain pair gives the nodes: `Some(true)` body `a`, `Some(false)` its
/// partner, `None` both (each weighted 1/2). A grain's own role decides unless its partner claims
/// the same one; otherwise the law's rule, where the finer sampling gives (ties: `a`).
pub fn a_gives(
    rule: NodeRoles,
    (role_a, density_a): (Option<NodeRole>, f64),
    (role_b, density_b): (Option<NodeRole>, f64),
) -> Option<bool> {
    use NodeRole::{Give, Receive};
    match (role_a, role_b) {
        (Some(Give), b) if b != Some(Give) => Some(true),
        (Some(Receive), b) if b != Some(Receive) => Some(false),
        (None, Some(Give)) => Some(false),
        (None, Some(Receive)) => Some(true),
        _ => match rule {
            NodeRoles::Both => None,
            NodeRoles::Finer => Some(density_a >= density_b),
        },
    }
}

/// A pair's node contacts being added up.
struct Acc<'a, M> {
    law: &'a M,
    tangential: Tangential,
    /// The elastic normal forces' magnitudes, summed.
    elastic: f64,
    /// Each elastic normal force's magnitude times its node's position, summed.
    moment: Vector3<f64>,
    /// The pair's overlap raise ([`Pair::offset`]).
    offset: f64,
    /// The pair's previous shears (sorted).
    old: &'a [NodeShear],
    dt: f64,
    record: bool,
    out: PairOutcome,
    /// The new shears, appended in node order.
    shears: Vec<NodeShear>,
    /// The side's node forces on the giver's modes, in column space
    /// ([`View::add_node_force`]), mapped to the modes at the side's end.
    columns: PerColumn,
}

impl<M: NodeModel> Acc<'_, M> {
    /// Tests the nodes of `side` against `surface` and adds their forces.
    fn side_contacts<S: Surface>(&mut self, side: &Side, surface: &S) {
        let p = side.giver;
        self.out.node_candidates += p.shape.nodes.len() as u64;
        let margin = M::margin(p.shape.largest_area) + self.offset.max(0.0);
        let grow = p.node_shift + margin;
        let frame = surface.frame(p, margin);
        let mut scratch = Scratch::for_side();
        self.columns.clear();
        self.columns.resize(p.column_count(), 0.0);
        // The node loop compiled for the processor's vector unit, whatever the giver: a
        // deformable giver's sums over the node's columns (position, velocity, generalized
        // force) stay in the loop's registers instead of a call each returning through memory,
        // and a rigid loop's arithmetic takes 9 % fewer instructions (docs/performance.md,
        // "Few columns with fixed bounds, and every node loop in AVX2").
        in_unit!(Wide::detect().unit(), |q| self.nodes(
            q,
            side,
            surface,
            &frame,
            grow,
            &mut scratch
        ));
        let (_, _, modal_p, modal_q) = split(&mut self.out, side.side);
        p.add_column_forces(&self.columns, modal_p);
        surface.flush(&mut scratch, modal_q);
        self.out.node_queries += scratch.queries;
    }

    /// The node loop of [`Acc::side_contacts`], its sums over a deformable giver's columns in
    /// the lanes of `q`.
    #[inline(always)]
    fn nodes<Q: Quad, S: Surface>(
        &mut self,
        q: Q,
        side: &Side,
        surface: &S,
        frame: &S::Frame,
        grow: f64,
        scratch: &mut Scratch,
    ) {
        let p = side.giver;
        let mut old = self.old.iter().filter(|s| s.side == side.side).peekable();
        // The node's previous shear (zero if it was not in contact): the old list is sorted by
        // node, like the hits, so one forward walk serves the whole side.
        let mut previous = |node: u32| -> Vector3<f64> {
            while old.next_if(|s| s.node < node).is_some() {}
            old.next_if(|s| s.node == node)
                .map_or(Vector3::zeros(), |s| s.shear)
        };
        let velocity = self.tangential.uses_velocity();
        let deformable = p.is_deformable();
        let ball = surface.node_ball(frame, grow);
        for leaf in (p.shape.clusters).near(|c| surface.reaches(frame, p, c, grow)) {
            let c = leaf.cluster;
            self.out.node_tests += c.range.len() as u64;
            // The nodes that may reach, four at a time: most do not.
            let mut bits = ball.map_or(u32::MAX >> (32 - c.range.len()), |(centre, r)| {
                leaf.within(q, &centre, r)
            });
            while bits != 0 {
                let k = c.range.start + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                // A deformable giver's node is at most `node_shift` from its reference position: one
                // that cannot reach from there is passed before its modes are summed (against a
                // body, the ball's bits did that).
                if deformable && ball.is_none() {
                    let node = Cluster {
                        centre: p.shape.nodes[k],
                        radius: 0.0,
                        range: k..k + 1,
                    };
                    if !surface.reaches(frame, p, &node, grow) {
                        continue;
                    }
                }
                let x0 = p.node_local_in(q, k);
                let margin = M::margin(p.shape.areas[k]) + self.offset.max(0.0);
                let Some(mut t) = surface.touch(frame, p, &x0, margin, velocity, scratch) else {
                    continue;
                };
                t.d += self.offset;
                // A law without damping or shear does not read the relative velocity: a deformable
                // giver's node velocity sums its modes' rates over every column.
                let v_rel = if velocity {
                    p.node_velocity(q, k, &t.x) - t.velocity
                } else {
                    Vector3::zeros()
                };
                let shear = previous(k as u32);
                let Some(f) = self.apply(side, surface, k, &t, &v_rel, &shear) else {
                    continue;
                };
                p.add_node_force(q, k, &f.force, &mut self.columns);
                let (_, _, _, modal_q) = split(&mut self.out, side.side);
                surface.react(scratch, f.energy_slope, &(f.elastic - f.force), modal_q);
                self.tally(side, k, t.d, &f);
            }
        }
    }

    /// The law at a node in contact: its force and torque on the giver (the node loop adds its
    /// share of the modes) and the opposite on the other side (torque about its centre, none for
    /// a wall); none for a node outside whose patch carries no traction (a node of the margin,
    /// [`NodeModel::margin`]). Inlined in both compilations of the node loop, as it was in
    /// the one before them.
    #[inline(always)]
    fn apply<S: Surface>(
        &mut self,
        side: &Side,
        surface: &S,
        k: usize,
        t: &super::surface::Touch,
        v_rel: &Vector3<f64>,
        shear: &Vector3<f64>,
    ) -> Option<NodeForce> {
        let p = side.giver;
        let scale = M::scale(p.shape.areas[k], side.weight);
        let normal = (self.law).normal(
            t.d,
            #[inline(always)]
            || NodeSides {
                spread: {
                    let area = p.shape.areas[k];
                    let slope = t.grad_norm * t.n.cross(&(p.rotation * p.shape.normals[k])).norm();
                    (0.5 * slope * area.sqrt()).min(M::margin(area))
                },
                curvature: (p.shape.curvature.nodes[k] + surface.curvature(t))
                    .max(0.1 / p.shape.bounding_radius),
                giver: p.shape,
                other: surface.shape(),
            },
        );
        if t.d <= 0.0 && normal.0 == 0.0 {
            return None;
        }
        let f =
            (self.tangential).node_force(normal, &t.n, t.grad_norm, v_rel, shear, scale, self.dt);
        self.elastic += f.elastic.norm();
        self.moment += t.x * f.elastic.norm();
        // The sample's stress and fabric (crate::measure): the force on the giver at the node,
        // the opposite on the other side's grain at the same point.
        self.out.dipole += f.force * (t.x - p.position).transpose();
        if let Some(centre) = surface.centre() {
            self.out.dipole -= f.force * (t.x - centre).transpose();
        }
        let normal = t.n * f.force.dot(&t.n);
        self.out.normal += if side.side == 0 { normal } else { -normal };
        let (on_p, on_q, _, _) = split(&mut self.out, side.side);
        on_p.0 += f.force;
        on_p.1 += (t.x - p.position).cross(&f.force);
        on_q.0 -= f.force;
        if let Some(centre) = surface.centre() {
            on_q.1 -= (t.x - centre).cross(&f.force);
        }
        Some(f)
    }

    /// Counts a node contact: energy, dissipation, patch, shear history and record.
    #[inline(always)]
    fn tally(&mut self, side: &Side, k: usize, d: f64, f: &NodeForce) {
        let out = &mut self.out;
        if d > 0.0 || f.elastic != Vector3::zeros() {
            out.nodes_in_contact += 1;
        }
        out.energy += f.energy;
        out.viscous_power += f.viscous_power;
        out.friction_loss += f.slip_loss;
        out.patch += M::scale(side.giver.shape.areas[k], side.weight);
        out.deepest = out.deepest.max(d);
        if self.tangential.has_shear() {
            self.shears.push(NodeShear {
                side: side.side,
                node: k as u32,
                shear: f.shear,
            });
        }
        if self.record {
            out.records.push(NodeRecord {
                body: side.index,
                node: k as u32,
                force: f.force,
            });
        }
    }
}

type Wrench = (Vector3<f64>, Vector3<f64>);

/// The giver's and the other side's force, torque and modal accumulators for a side.
fn split(
    out: &mut PairOutcome,
    side: u8,
) -> (
    &mut Wrench,
    &mut Wrench,
    &mut PerMode<f64>,
    &mut PerMode<f64>,
) {
    if side == 0 {
        (
            &mut out.on_a,
            &mut out.on_b,
            &mut out.modal_a,
            &mut out.modal_b,
        )
    } else {
        (
            &mut out.on_b,
            &mut out.on_a,
            &mut out.modal_b,
            &mut out.modal_a,
        )
    }
}

/// Which grain of a pair gives the surface nodes tested against the other's level set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeRoles {
    /// Both directions, each weighted 1/2 (symmetric; twice the node tests).
    Both,
    /// The grain with more nodes per unit area (ties: the lower index); the other's level set.
    Finer,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::law::area_tractions::PerArea;
    use crate::law::linear_springs::PerNode;

    fn law<W: NodeWeight>() -> Linear<W> {
        Linear::<W>::new(100.0, 50.0, 0.5, 0.0).0
    }

    /// The linear law's node force at penetration `d`.
    #[allow(clippy::too_many_arguments)]
    fn node_force<W: NodeWeight>(
        l: &Linear<W>,
        d: f64,
        n: &Vector3<f64>,
        grad_norm: f64,
        v_rel: &Vector3<f64>,
        shear: &Vector3<f64>,
        scale: f64,
        dt: f64,
    ) -> NodeForce {
        let normal = l.normal(d, || unreachable!("a linear spring needs no sides"));
        (l.tangential()).node_force(normal, n, grad_norm, v_rel, shear, scale, dt)
    }

    #[test]
    fn shear_spring_sticks_then_slips_at_the_coulomb_cap() {
        let l = law::<PerNode>();
        let n = Vector3::z();
        let v = Vector3::new(1.0, 0.0, 0.0);
        // d = 0.01: normal force 1, cap 0.5, reached at s = 0.01.
        let mut s = Vector3::zeros();
        let f = node_force(&l, 0.01, &n, 1.0, &v, &s, 1.0, 0.004);
        assert!((f.force - Vector3::new(-50.0 * 0.004, 0.0, 1.0)).norm() < 1e-15);
        s = f.shear;
        let f = node_force(&l, 0.01, &n, 1.0, &v, &s, 1.0, 0.004);
        assert!((f.force - Vector3::new(-0.4, 0.0, 1.0)).norm() < 1e-15);
        s = f.shear;
        let f = node_force(&l, 0.01, &n, 1.0, &v, &s, 1.0, 0.004);
        assert!(
            (f.force - Vector3::new(-0.5, 0.0, 1.0)).norm() < 1e-15,
            "capped"
        );
        assert!((f.shear.x - 0.01).abs() < 1e-15);
        // Area tractions: the same times the area.
        let scale = PerArea::scale(0.3, 1.0);
        let a = node_force(
            &law::<PerArea>(),
            0.01,
            &n,
            1.0,
            &v,
            &Vector3::zeros(),
            scale,
            0.004,
        );
        assert!((a.force - Vector3::new(-0.3 * 0.2, 0.0, 0.3)).norm() < 1e-15);
    }

    #[test]
    fn old_shear_turns_with_the_normal() {
        let l = law::<PerNode>();
        // Shear along x under normal z; the normal tilts to (sin t, 0, cos t): the shear keeps
        // its length in the new tangent plane.
        let t: f64 = 0.1;
        let n = Vector3::new(t.sin(), 0.0, t.cos());
        let f = node_force(
            &l,
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
