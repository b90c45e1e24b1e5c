//! # `law = "area-tractions"` (Feldfogel et al. 2024)
//!
//! The node laws' spring ([`super::node`]) weighted by each node's area `a_k`:
//! `f = a_k (k_n d |grad phi| n - c_n v_n n - k_s s)`, a traction per unit penetration. A sum
//! over nodes is a quadrature of the traction over the contact area, so it converges as nodes
//! are refined: a sphere of radius `R` pressed by `h` into a plane carries `k_n pi R h^2` in the
//! limit (small `h`).
//!
//! | key | meaning | units | default |
//! |---|---|---|---|
//! | `kn` | normal stiffness `k_n` (> 0) | force/length^3 | required |
//! | `ks` | shear stiffness `k_s` | force/length^3 | 0 |
//! | `friction` | Coulomb coefficient `mu` of the shear cap | - | 0 |
//! | `normal_damping` | viscous coefficient `c_n` | force*time/length^3 | 0 |
//! | `nodes` | `"both"` or `"finer"`: which grain of a pair gives the nodes | - | `"both"` |
//!
//! Automatic step: a patch of area `2 pi r delta` (1 % of the bounding radius `r`, or the
//! deepest initial penetration), at least the largest node's area.
//!
//! Restart: the node shears, saved whole.

use super::node::{Linear, NodeLaw, NodeWeight};
use crate::body::Shape;

/// The law.
pub type AreaTractions = NodeLaw<Linear<PerArea>>;

/// A node's weight is its area.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PerArea;

impl NodeWeight for PerArea {
    const NAME: &'static str = "area-tractions";

    #[inline]
    fn scale(area: f64, weight: f64) -> f64 {
        weight * area
    }

    fn patch(shape: &Shape, cap: f64) -> f64 {
        let largest_area = shape.areas.iter().copied().fold(0.0, f64::max);
        cap.max(largest_area)
    }
}
