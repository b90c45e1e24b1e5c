//! The contact laws (docs/physics.md section 4), one module each in the manner of LAMMPS's pair
//! styles: its `[contact]` keys and their checks, its forces, its stiffness for the automatic
//! step, its pair history and its page of docs.
//!
//! | `law =` | module | contacts |
//! |---|---|---|
//! | `"linear-springs"` | [`linear_springs`] | surface nodes in level sets, a spring per node |
//! | `"area-tractions"` | [`area_tractions`] | surface nodes in level sets, a traction per unit area |
//! | `"hertz-patches"` | [`hertz_patches`] | surface nodes in level sets, Hertz's pressure per unit area |
//! | `"hertz-jaeger"` | [`hertz_jaeger`] | spheres: Hertz, Jäger's tangential law |
//! | `"hertz-mindlin"` | [`hertz_mindlin`] | spheres: Hertz, the incremental Mindlin spring |
//!
//! The node laws share their narrow phase, damping and shear ([`node`]), the sphere laws their contact
//! geometry ([`sphere`]). A law sees the other side of a pair, a body or a wall, through one
//! query interface ([`surface::Surface`]), and a body through its [`View`], so deformation
//! (moving nodes, deforming level sets, generalized forces) is the views' business, not the
//! law's.
//!
//! # The `[contact]` table
//! `law` names the law; `local_damping` (Cundall's non-viscous damping of the free grains'
//! rigid motion, a fraction in `[0, 1)`, applied by the solver whatever the law) may be given
//! with any law; every other key is the law's, and a key the law does not have is refused.
//!
//! # Adding a law
//! One file: a type that deserializes from its keys (`deny_unknown_fields`) and implements
//! [`ContactLaw`], with its history type implementing [`History`]; and one line in [`registry::LAWS`].
//!
//! Restart: each pair's history is saved whole in checkpoints ([`History::save`]) and read back
//! by the scene's law ([`ContactLaw::load`]), which refuses another law's.

pub mod area_tractions;
pub mod hertz_jaeger;
pub mod hertz_mindlin;
pub mod hertz_patches;
pub mod linear_springs;
pub mod node;
pub mod registry;
pub mod sphere;
pub mod surface;

use std::any::Any;
use std::sync::Arc;

use nalgebra::{Matrix3, Vector3};
use serde::{Deserialize, Serialize};

use crate::body::{Body, NodeRole, Shape};
use crate::error::KeyError;
use crate::path::PerMode;
use crate::view::View;
use crate::wall::{Wall, WallSpec};

/// A contact law: one implementation per `[contact] law`.
pub trait ContactLaw: Send + Sync + std::fmt::Debug {
    /// Its name in scene files.
    fn name(&self) -> &'static str;

    /// Refuses parameters out of range, or walls the law cannot meet (`walls[i]`).
    fn check_scene(&self, walls: &[WallSpec]) -> Result<(), KeyError>;

    /// Refuses a scene whose grains (with `walls` walls) the law cannot handle (`contact.law`
    /// and the first, or the key that would make it handle them).
    fn check(&self, shapes: &[Arc<Shape>], bodies: &[Body], walls: usize) -> Result<(), KeyError>;

    /// The stiffness `k` and viscous coefficient `c` (force per velocity) of the stiffest
    /// contact a grain of `shape` is expected to make, for the automatic time step; `patch`
    /// is the largest contact measured in the initial state (the law's own unit, see
    /// [`PairOutcome::patch`]), `overlap` the deepest initial penetration.
    fn stiffness(&self, shape: &Shape, patch: f64, overlap: f64) -> (f64, f64);

    /// A pair's history from a checkpoint ([`History::save`]), refused if it is not one of
    /// this law's or does not fit the scene (`nodes(i)`: the surface node count of body `i`).
    fn load(
        &self,
        key: &PairKey,
        saved: serde_json::Value,
        nodes: &dyn Fn(u32) -> usize,
    ) -> Result<PairHistory, String>;

    /// How far outside the other side a surface node of `shape` may still carry a traction (a
    /// length; 0 for a law that loads only nodes inside): the pair search grows each body's
    /// radius by the scene's largest ([`crate::sim::search_radii`]).
    fn margin(&self, shape: &Shape) -> f64 {
        let _ = shape;
        0.0
    }

    /// Whether the law takes the coupling of a grain's contacts through its body
    /// ([`crate::coupling`]: [`Pair::offset`]).
    fn couples(&self) -> bool {
        false
    }

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

/// What a pair in contact remembers from step to step: the law's own type.
pub trait History: Any + Send + Sync + std::fmt::Debug {
    /// Bytes it holds: its own size and what it allocated.
    fn bytes(&self) -> usize;
    /// Its checkpoint form, read back by its law's [`ContactLaw::load`].
    fn save(&self) -> serde_json::Value;
    /// A copy (checkpoints are written while the run goes on).
    fn boxed_clone(&self) -> PairHistory;

    /// The pair's load in its last step, for the coupling through grains' bodies (laws that do
    /// not couple keep none).
    fn load(&self) -> Option<ContactLoad> {
        None
    }
}

/// A pair's load in a step: its elastic normal force (on body `a`, the magnitudes of the node
/// forces summed) and where it acts (their force-weighted mean point, from body `a`'s centre,
/// global axes: a periodic cell's wrap of body `a` does not move it).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ContactLoad {
    /// The force.
    pub force: f64,
    /// The point.
    pub point: [f64; 3],
}

/// A pair's history, as its law keeps it.
pub type PairHistory = Box<dyn History>;

impl Clone for PairHistory {
    fn clone(&self) -> Self {
        self.boxed_clone()
    }
}

/// The history `old` as law's type `H`, if it is one.
pub fn downcast<H: History>(old: Option<PairHistory>) -> Option<Box<H>> {
    old.and_then(|h| (h as Box<dyn Any>).downcast().ok())
}

/// The histories of every pair in contact, sorted by pair.
pub type Histories = Vec<(PairKey, PairHistory)>;

/// A pair as a law sees it: the views of body `a` and of its partner.
pub struct Pair<'a> {
    /// Its key.
    pub key: PairKey,
    /// Body `a`.
    pub a: &'a View<'a>,
    /// The partner.
    pub b: Against<'a>,
    /// The node roles the scene gives body `a` and, for a grain pair, its partner
    /// (`[[grains]] nodes`).
    pub roles: (Option<NodeRole>, Option<NodeRole>),
    /// Keep node forces for output.
    pub record: bool,
    /// The raise of the pair's overlap by the coupling through the grains' bodies (length; 0
    /// for laws that do not couple, [`crate::coupling`]).
    pub offset: f64,
}

/// The partner of a pair: the one place that tells a body from a wall; laws handle both
/// through [`surface::Surface`].
pub enum Against<'a> {
    /// Another body.
    Body(&'a View<'a>),
    /// A wall.
    Wall(&'a Wall),
}

/// What a body's nodes touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Partner {
    /// Another body (its index, larger than the first body's).
    Body(u32),
    /// A wall (its index).
    Wall(u32),
}

/// A contact pair: body `a` and its partner. Histories are keyed by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PairKey {
    /// The first body.
    pub a: u32,
    /// The partner.
    pub b: Partner,
    /// The partner body's periodic image: it meets `a` displaced by `H shift`
    /// ([`crate::cell`]; zero without a cell, and for walls).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shift: [i32; 3],
}

fn is_zero(n: &[i32; 3]) -> bool {
    *n == [0; 3]
}

/// A node's contact force, kept for output.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeRecord {
    /// The body giving the node.
    pub body: u32,
    /// The node.
    pub node: u32,
    /// Force on it, global.
    pub force: Vector3<f64>,
}

/// What one pair contributes.
#[derive(Debug, Clone, Default)]
pub struct PairOutcome {
    /// Force and torque (about its centre) on body `a`.
    pub on_a: (Vector3<f64>, Vector3<f64>),
    /// Force and torque (about its centre) on the partner (for a wall: force only).
    pub on_b: (Vector3<f64>, Vector3<f64>),
    /// Generalized forces on body `a`'s modes (empty if its modes are off).
    pub modal_a: PerMode<f64>,
    /// Generalized forces on the partner's modes (empty if rigid or a wall).
    pub modal_b: PerMode<f64>,
    /// Nodes in contact.
    pub nodes_in_contact: usize,
    /// Nodes tested: the nodes of the clusters in reach ([`crate::body::Clusters::near`]),
    /// each checked against the receiver's bounding sphere (four at a time, then one by one
    /// for those in it) or wall, in contact or not; the nodes of clusters out of reach, or
    /// under a subtree out of reach, are not counted. The unit of the narrow phase's cost.
    pub node_tests: u64,
    /// Node tests that passed the bounding-sphere test and asked the receiver's level set for
    /// its value (its early-out included; against a wall, every node test): with
    /// [`PairOutcome::node_tests`], where the narrow phase's time goes (docs/performance.md).
    pub node_queries: u64,
    /// Every node of the giving body of each side, tested or skipped with its cluster: the
    /// unit of a narrow phase without clusters (YADE's LS-DEM tests each of these).
    pub node_candidates: u64,
    /// Elastic energy stored.
    pub energy: f64,
    /// Power dissipated by viscous forces.
    pub viscous_power: f64,
    /// Energy dissipated by friction in this step.
    pub friction_loss: f64,
    /// The contact's size in the law's unit of stiffness: the summed node scales (nodes, or
    /// area) for node laws, 1 for a sphere contact (for the automatic step).
    pub patch: f64,
    /// Deepest penetration (or overlap) of the pair.
    pub deepest: f64,
    /// `sum f (x - X)^T` over the pair's forces on grains: each force `f` on a grain, at its
    /// point `x`, times its lever from that grain's centre `X` (both grains of a grain pair,
    /// the grain alone against a wall): the pair's part of the sample's stress (Love-Weber,
    /// crate::measure).
    pub dipole: Matrix3<f64>,
    /// The normal forces on body `a` summed: the pair's contact normal, for the fabric.
    pub normal: Vector3<f64>,
    /// The pair's normal contact stiffness now, `dF_n / d delta` (force per length): the
    /// servo walls' gain (crate::wall::Servo).
    pub stiffness: f64,
    /// Node forces, when asked for.
    pub records: Vec<NodeRecord>,
}
