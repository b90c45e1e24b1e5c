//! # `law = "linear-springs"` (Kawamoto et al. 2016)
//!
//! A linear spring at each surface node in contact (the node laws' spring, [`super::node`]) with
//! weight `w = 1` per node: `f = k_n d |grad phi| n - c_n v_n n - k_s s`.
//!
//! | key | meaning | units | default |
//! |---|---|---|---|
//! | `kn` | normal stiffness `k_n` (> 0) | force/length per node | required |
//! | `ks` | shear stiffness `k_s` | force/length per node | 0 |
//! | `friction` | Coulomb coefficient `mu` of the shear cap | - | 0 |
//! | `normal_damping` | viscous coefficient `c_n` | force*time/length per node | 0 |
//! | `nodes` | `"both"` or `"finer"`: which grain of a pair gives the nodes | - | `"both"` |
//!
//! Restriction: the contact's stiffness grows with the number of nodes in contact, so results
//! depend on the node density; `area-tractions` does not.
//!
//! Automatic step: a patch of `2 pi r delta` (1 % of the bounding radius `r`, or the deepest
//! initial penetration) times the grain's nodes per unit area, at least one node.
//!
//! Restart: the node shears, saved whole.

use super::node::{Linear, NodeLaw, NodeWeight};
use crate::body::Shape;

/// The law.
pub type LinearSprings = NodeLaw<Linear<PerNode>>;

/// A weight of 1 per node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PerNode;

impl NodeWeight for PerNode {
    const NAME: &'static str = "linear-springs";

    #[inline]
    fn scale(_area: f64, weight: f64) -> f64 {
        weight
    }

    fn patch(shape: &Shape, cap: f64) -> f64 {
        (shape.node_density * cap).max(1.0)
    }
}
