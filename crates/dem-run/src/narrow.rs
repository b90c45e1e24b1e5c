//! Narrow phase and contact forces: surface nodes of one body against the level set of another
//! body or of a wall (docs/physics.md section 4), with the per-node shear histories, through the
//! bodies' views ([`crate::view`]) so that deformed nodes and level sets need no special case.
//!
//! A node `x_k` (local, current configuration) of body `p` is tested against body `q` in `q`'s
//! local frame, `y = R_q^T (X_p + R_p x_k - X_q)`, computed as `y = R_pq x_k + t_pq` with the
//! pair's relative rotation and translation formed once. Node clusters out of `q`'s reach (grown
//! by the largest node displacement) are skipped whole; nodes outside `q`'s reach are rejected
//! before the grid is read; the others query `q`'s level set.

use nalgebra::{Point3, Vector3};
use serde::{Deserialize, Serialize};

use crate::body::Cluster;
use crate::law::{Against, NodeForce, NodeLaw, Pair};
use crate::modal::PerMode;
use crate::scene::{NodeRole, NodeRoles};
use crate::view::View;
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
    /// Power dissipated by viscous forces.
    pub viscous_power: f64,
    /// Energy dissipated by friction in this step.
    pub friction_loss: f64,
    /// The contact's size in the law's unit of stiffness: the summed node scales (nodes, or
    /// area) for node laws, 1 for a sphere contact (for the automatic step).
    pub patch: f64,
    /// Deepest penetration (or overlap) of the pair.
    pub deepest: f64,
    /// Node forces, when asked for.
    pub records: Vec<NodeRecord>,
}

/// One direction of a pair: the nodes of `giver` in the receiver's level set.
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

/// The receiving level set.
enum Receiver<'a> {
    /// A body.
    Body(&'a View<'a>),
    /// A wall.
    Wall(&'a Wall),
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

/// The node-law contacts of one pair (both directions, or the finer grain's nodes, by the
/// scene's node roles).
pub fn node_pair(law: &NodeLaw, pair: &Pair, old: &[NodeShear], dt: f64) -> PairOutcome {
    let a = pair.a;
    let mut out = PairOutcome {
        modal_a: smallvec::smallvec![0.0; a.mode_count()],
        ..PairOutcome::default()
    };
    let side = |side: u8, index: u32, giver, weight| Side {
        side,
        index,
        giver,
        weight,
    };
    match pair.b {
        Against::Wall(wall) => {
            let s = side(0, pair.key.a, a, 1.0);
            side_contacts(
                law,
                &s,
                &Receiver::Wall(wall),
                old,
                dt,
                pair.record,
                &mut out,
            );
        }
        Against::Body(b) => {
            out.modal_b = smallvec::smallvec![0.0; b.mode_count()];
            let Partner::Body(j) = pair.key.b else {
                unreachable!("a body partner has a body key")
            };
            let a_gives = pair.a_gives;
            let weight = if a_gives.is_none() { 0.5 } else { 1.0 };
            if a_gives != Some(false) {
                let s = side(0, pair.key.a, a, weight);
                side_contacts(law, &s, &Receiver::Body(b), old, dt, pair.record, &mut out);
            }
            if a_gives != Some(true) {
                let s = side(1, j, b, weight);
                side_contacts(law, &s, &Receiver::Body(a), old, dt, pair.record, &mut out);
            }
        }
    }
    out
}

/// Which body of a grain pair gives the nodes: `Some(true)` body `a`, `Some(false)` its
/// partner, `None` both (each weighted 1/2). A grain's own role decides unless its partner claims
/// the same one; otherwise the scene's rule, where the finer sampling gives (ties: `a`).
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

/// Tests the nodes of one side against the receiver and adds their forces to `out`. `old` is
/// the pair's previous history (sorted); the new entries are appended in node order.
fn side_contacts(
    law: &NodeLaw,
    side: &Side,
    receiver: &Receiver,
    old: &[NodeShear],
    dt: f64,
    record: bool,
    out: &mut PairOutcome,
) {
    let p = side.giver;
    let rot_p = p.rotation;
    out.node_candidates += p.shape.nodes.len() as u64;
    let mut old = old.iter().filter(|s| s.side == side.side).peekable();
    // The node's previous shear (zero if it was not in contact): the old list is sorted by
    // node, like the hits, so one forward walk serves the whole side.
    let mut previous = |node: u32| -> Vector3<f64> {
        while old.next_if(|s| s.node < node).is_some() {}
        old.next_if(|s| s.node == node)
            .map_or(Vector3::zeros(), |s| s.shear)
    };
    let grow = p.node_shift;
    match receiver {
        Receiver::Body(q) => {
            let rot_pq = q.rotation.transpose() * rot_p;
            let t_pq = q.rotation.transpose() * (p.body.position - q.body.position);
            let r_q = q.reach;
            let r2 = r_q * r_q;
            // The receiver's centre in the giver's frame, for the cluster filter.
            let c_q = rot_pq.transpose() * (-t_pq);
            let reaches =
                |c: &Cluster| (c.centre - c_q).norm_squared() < (c.radius + grow + r_q).powi(2);
            let mut derivative: PerMode<f64> = smallvec::smallvec![0.0; q.mode_count()];
            let mut q_modes = PerMode::new();
            for k in near(&p.shape.clusters, reaches) {
                out.node_tests += 1;
                let x0 = p.node_local(k);
                let y = rot_pq * x0 + t_pq;
                if y.norm_squared() >= r2 {
                    continue;
                }
                let y = Point3::from(y);
                let Some(hit) = q.probe(&y, &mut derivative) else {
                    continue;
                };
                let (phi, grad) = (hit.phi, hit.grad);
                let g = grad.norm();
                let x = p.body.position + rot_p * x0;
                let n = q.rotation * (grad / g);
                // The receiver's material point under the node: its mode vectors are needed for
                // its velocity and the virtual work of the non-elastic forces.
                if law.uses_velocity() {
                    q.modes_at(&y, hit.material.as_ref(), &mut q_modes);
                }
                let v_rel = p.node_velocity(k, &x) - q.material_velocity(&x, &q_modes);
                let contact = NodeContact {
                    k,
                    x,
                    d: -phi,
                    n,
                    grad_norm: g,
                    v_rel,
                    shear: previous(k as u32),
                };
                let f = apply(law, side, &contact, Some(&q.body.position), dt, out);
                if q.is_deformable() {
                    // Elastic part: -dE/d eps through the level set; the rest: virtual work.
                    let (_, _, _, modal_q) = split(out, side.side);
                    for (m, d) in modal_q.iter_mut().zip(&derivative) {
                        *m -= f.energy_slope * d;
                    }
                    q.add_point_force(&q_modes, &(f.elastic - f.force), modal_q);
                }
                tally(out, side, k, -phi, &f, law, record);
            }
        }
        Receiver::Wall(w) => {
            let reaches =
                |c: &Cluster| w.distance(&(p.body.position + rot_p * c.centre)).0 < c.radius + grow;
            for k in near(&p.shape.clusters, reaches) {
                out.node_tests += 1;
                let x = p.body.position + rot_p * p.node_local(k);
                let (phi, n) = w.distance(&x);
                if phi >= 0.0 {
                    continue;
                }
                let contact = NodeContact {
                    k,
                    x,
                    d: -phi,
                    n,
                    grad_norm: 1.0,
                    v_rel: p.node_velocity(k, &x) - w.velocity,
                    shear: previous(k as u32),
                };
                let f = apply(law, side, &contact, None, dt, out);
                tally(out, side, k, -phi, &f, law, record);
            }
        }
    }
}

/// A node of the giver in contact, as the law takes it.
struct NodeContact {
    /// The node.
    k: usize,
    /// Its global position.
    x: Vector3<f64>,
    /// Penetration `d = -phi`.
    d: f64,
    /// Unit normal out of the receiver, global.
    n: Vector3<f64>,
    /// `|grad phi|` of the receiver's level set.
    grad_norm: f64,
    /// The node's velocity relative to the receiver's material point.
    v_rel: Vector3<f64>,
    /// Its previous shear.
    shear: Vector3<f64>,
}

/// The law at a node in contact: its force on the giver (force, torque, modes) and the
/// opposite on the receiver (torque about `centre`, none for a wall).
fn apply(
    law: &NodeLaw,
    side: &Side,
    c: &NodeContact,
    centre: Option<&Vector3<f64>>,
    dt: f64,
    out: &mut PairOutcome,
) -> NodeForce {
    let p = side.giver;
    let scale = law.scale(p.shape.areas[c.k], side.weight);
    let f = law.node_force(c.d, &c.n, c.grad_norm, &c.v_rel, &c.shear, scale, dt);
    let (on_p, on_q, modal_p, _) = split(out, side.side);
    on_p.0 += f.force;
    on_p.1 += (c.x - p.body.position).cross(&f.force);
    on_q.0 -= f.force;
    if let Some(centre) = centre {
        on_q.1 -= (c.x - centre).cross(&f.force);
    }
    p.add_node_force(c.k, &f.force, modal_p);
    f
}

type Wrench = (Vector3<f64>, Vector3<f64>);

/// The giver's and the receiver's force, torque and modal accumulators for a side.
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

/// Counts a node contact: energy, dissipation, patch, shear history and record.
fn tally(
    out: &mut PairOutcome,
    side: &Side,
    k: usize,
    d: f64,
    f: &NodeForce,
    law: &NodeLaw,
    record: bool,
) {
    out.nodes_in_contact += 1;
    out.energy += f.energy;
    out.viscous_power += f.viscous_power;
    out.friction_loss += f.slip_loss;
    out.patch += law.scale(side.giver.shape.areas[k], side.weight);
    out.deepest = out.deepest.max(d);
    if law.has_shear() {
        out.shear.push(NodeShear {
            side: side.side,
            node: k as u32,
            shear: f.shear,
        });
    }
    if record {
        out.records.push(NodeRecord {
            body: side.index,
            node: k as u32,
            force: f.force,
        });
    }
}
