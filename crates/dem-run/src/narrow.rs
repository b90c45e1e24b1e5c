//! Narrow phase and contact forces: surface nodes of one body against the level set of another
//! body or of a wall (PHYSICS.md section 4), with the per-node shear histories.
//!
//! A node `x0_k` of body `p` is tested against body `q` in `q`'s local frame, `y = R_q^T (X_p +
//! R_p x0_k - X_q)`, computed as `y = R_pq x0_k + t_pq` with the pair's relative rotation and
//! translation formed once. Nodes outside `q`'s bounding sphere are rejected before the grid is
//! read; the others read `phi_q` and its gradient by trilinear interpolation.

use nalgebra::{Matrix3, Vector3};
use serde::{Deserialize, Serialize};

use crate::body::{Body, Cluster, Shape};
use crate::hertz::SpherePair;
use crate::law::NodeLaw;
use crate::wall::Wall;

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

/// What a pair in contact remembers from step to step.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum PairHistory {
    /// Node laws: the shear of each node in contact, sorted by `(side, node)`.
    Nodes(Vec<NodeShear>),
    /// Hertz-Jäger: the sphere contact's frame and history.
    Sphere(Box<SpherePair>),
}

/// The histories of every pair in contact, sorted by pair.
pub type Histories = Vec<(PairKey, PairHistory)>;

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
    /// The new node shear histories (sorted; node laws).
    pub shear: Vec<NodeShear>,
    /// Nodes in contact.
    pub nodes_in_contact: usize,
    /// Nodes tested (each transformed and checked against the receiver's bounding sphere or
    /// wall, in contact or not; the nodes of clusters out of reach are not counted): the unit
    /// of the narrow phase's cost.
    pub node_tests: u64,
    /// Every node of the giving body of each side, tested or skipped with its cluster: the
    /// unit of a narrow phase without clusters (YADE's LS-DEM tests each of these).
    pub node_candidates: u64,
    /// Elastic energy stored.
    pub energy: f64,
    /// Node forces, when asked for.
    pub records: Vec<NodeRecord>,
}

/// One direction of a pair: nodes of `giver` in `receiver`'s level set.
pub struct Side<'a> {
    /// 0 or 1 (see [`NodeShear`]).
    pub side: u8,
    /// Index of the body giving nodes.
    pub giver: u32,
    /// The body giving nodes.
    pub body: &'a Body,
    /// Its shape.
    pub shape: &'a Shape,
    /// The law's weight (1/2 when both directions count).
    pub weight: f64,
}

/// The receiving level set.
pub enum Receiver<'a> {
    /// A body with its shape.
    Body(&'a Body, &'a Shape),
    /// A wall.
    Wall(&'a Wall),
}

/// Everything the node loop needs besides the pair.
pub struct Step<'a> {
    /// The law.
    pub law: &'a NodeLaw,
    /// Time step (for the shear increment).
    pub dt: f64,
    /// Keep node forces for output.
    pub record: bool,
}

/// The nodes of the clusters that pass `reaches`, in order.
fn near<'a>(
    clusters: &'a [Cluster],
    reaches: impl Fn(&Cluster) -> bool + 'a,
) -> impl Iterator<Item = usize> + 'a {
    clusters
        .iter()
        .filter(move |c| reaches(c))
        .flat_map(|c| c.range.clone())
}

/// A node of the giver inside the receiver.
struct Hit {
    /// Node index.
    k: usize,
    /// Its global position.
    x: Vector3<f64>,
    /// Penetration `d = -phi`.
    d: f64,
    /// Unit normal out of the receiver, global.
    n: Vector3<f64>,
    /// `|grad phi|` of the receiver's level set.
    grad_norm: f64,
    /// Velocity of the receiver's material point at `x`.
    v_other: Vector3<f64>,
    /// The receiver's centre (torque), none for a wall.
    centre_other: Option<Vector3<f64>>,
}

/// Applies the law to the hits of one side, in node order, and accumulates into a pair outcome.
struct Accumulate<'a, I: Iterator<Item = &'a NodeShear>> {
    side: &'a Side<'a>,
    spin: Vector3<f64>,
    step: &'a Step<'a>,
    old: std::iter::Peekable<I>,
}

impl<'a, I: Iterator<Item = &'a NodeShear>> Accumulate<'a, I> {
    /// The node's previous shear (zero if it was not in contact): the old list is sorted by
    /// node, like the hits, so one forward walk serves the whole side.
    fn previous(&mut self, node: u32) -> Vector3<f64> {
        while self.old.next_if(|s| s.node < node).is_some() {}
        self.old
            .next_if(|s| s.node == node)
            .map_or(Vector3::zeros(), |s| s.shear)
    }

    fn hit(&mut self, h: Hit, out: &mut PairOutcome) {
        let (side, step) = (self.side, self.step);
        let p = side.body;
        let v_rel = p.point_velocity(&self.spin, &h.x) - h.v_other;
        let scale = step.law.scale(side.shape.areas[h.k], side.weight);
        let previous = self.previous(h.k as u32);
        let f = step
            .law
            .node_force(h.d, &h.n, h.grad_norm, &v_rel, &previous, scale, step.dt);
        let (on_p, on_q) = if side.side == 0 {
            (&mut out.on_a, &mut out.on_b)
        } else {
            (&mut out.on_b, &mut out.on_a)
        };
        on_p.0 += f.force;
        on_p.1 += (h.x - p.position).cross(&f.force);
        on_q.0 -= f.force;
        if let Some(c) = h.centre_other {
            on_q.1 -= (h.x - c).cross(&f.force);
        }
        out.nodes_in_contact += 1;
        out.energy += f.energy;
        if step.law.has_shear() {
            out.shear.push(NodeShear {
                side: side.side,
                node: h.k as u32,
                shear: f.shear,
            });
        }
        if step.record {
            out.records.push(NodeRecord {
                body: side.giver,
                node: h.k as u32,
                force: f.force,
            });
        }
    }
}

/// Tests the nodes of one side against the receiver and adds their forces to `out`. `old` is
/// the pair's previous history (sorted); the new entries are appended in node order.
pub fn side_contacts(
    side: &Side,
    receiver: &Receiver,
    old: &[NodeShear],
    step: &Step,
    out: &mut PairOutcome,
) {
    let p = side.body;
    let rot_p: Matrix3<f64> = p.orientation.to_rotation_matrix().into_inner();
    out.node_candidates += side.shape.nodes.len() as u64;
    let mut acc = Accumulate {
        side,
        spin: p.spin(),
        step,
        old: old.iter().filter(|s| s.side == side.side).peekable(),
    };
    match receiver {
        Receiver::Body(q, q_shape) => {
            let rot_q: Matrix3<f64> = q.orientation.to_rotation_matrix().into_inner();
            let rot_pq = rot_q.transpose() * rot_p;
            let t_pq = rot_q.transpose() * (p.position - q.position);
            let r_q = q_shape.bounding_radius;
            let r2 = r_q * r_q;
            let spin_q = q.spin();
            // The receiver's centre in the giver's frame, for the cluster filter.
            let c_q = rot_pq.transpose() * (-t_pq);
            let reaches = |c: &Cluster| (c.centre - c_q).norm_squared() < (c.radius + r_q).powi(2);
            for k in near(&side.shape.clusters, reaches) {
                out.node_tests += 1;
                let x0 = &side.shape.nodes[k];
                let y = rot_pq * x0 + t_pq;
                if y.norm_squared() >= r2 {
                    continue;
                }
                let (phi, grad) = q_shape.levelset.value_and_gradient(&y.into());
                let g = grad.norm();
                if phi >= 0.0 || g == 0.0 {
                    continue;
                }
                let x = p.position + rot_p * x0;
                let hit = Hit {
                    k,
                    x,
                    d: -phi,
                    n: rot_q * (grad / g),
                    grad_norm: g,
                    v_other: q.point_velocity(&spin_q, &x),
                    centre_other: Some(q.position),
                };
                acc.hit(hit, out);
            }
        }
        Receiver::Wall(w) => {
            let reaches = |c: &Cluster| w.distance(&(p.position + rot_p * c.centre)).0 < c.radius;
            for k in near(&side.shape.clusters, reaches) {
                out.node_tests += 1;
                let x0 = &side.shape.nodes[k];
                let x = p.position + rot_p * x0;
                let (phi, n) = w.distance(&x);
                if phi >= 0.0 {
                    continue;
                }
                let hit = Hit {
                    k,
                    x,
                    d: -phi,
                    n,
                    grad_norm: 1.0,
                    v_other: w.velocity,
                    centre_other: None,
                };
                acc.hit(hit, out);
            }
        }
    }
}
