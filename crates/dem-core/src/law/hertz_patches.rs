//! # `law = "hertz-patches"`
//!
//! Hertz's pressure integrated over the surface nodes in contact (docs/physics.md section 4), for
//! grains of any convex shape, rigid or deformable: the law that carries a contact's local
//! flattening, while a deformable grain's modes carry its body (docs/physics.md section 2). A node
//! at penetration `d` (its depth in the other side's level set) carries the traction
//!
//! `p = (E* / pi) sqrt(kappa d)`,  `1 / E* = (1 - nu_1^2) / E_1 + (1 - nu_2^2) / E_2`,
//!
//! times its area, with `kappa = kappa_1 + kappa_2` the two surfaces' curvatures there
//! (`sqrt` of their Gaussian curvatures, [`crate::curvature`]). Two paraboloids of Hertz's
//! equivalent radius `R = 1 / kappa` pressed by `delta` interpenetrate by
//! `d = delta - r^2 / (2 R)`, and the integral of `p` over `r < sqrt(2 R delta)` is
//! `(E* / pi) sqrt(kappa) 2 pi R (2/3) delta^(3/2) = (4/3) E* sqrt(R) delta^(3/2)`, Hertz's force
//! (Johnson, *Contact Mechanics*, 1985, Eq. 4.23); the stored energy `(2/3) p d` per area sums to
//! Hertz's `(8/15) E* sqrt(R) delta^(5/2)`. A sum over nodes is a quadrature of that integral: on
//! a sphere of 1,000 nodes pressed into a plane to 1 % of its radius, within 1 % of Hertz (tests).
//! The law is Hertz's for each contact between smooth convex surfaces, with their local
//! curvatures summed as `sqrt(K_1) + sqrt(K_2)`: that is Hertz's relative curvature
//! `sqrt(det(C_1 + C_2))` when the two curvature tensors are proportional (a surface on a plane,
//! two spheres), and below it otherwise (a sphere on an ellipsoid; crossed cylinders, each of
//! `K = 0`, get none: a softer contact), and the elliptic-contact correction of Johnson's
//! section 4.2 is not made (0.4 % to 2.1 % on the ellipsoid of the tests).
//!
//! The grains' material is their bundle's (the modes' FEM material); a grain whose bundle carries
//! none (a rigid bundle) is rigid, or takes `youngs_modulus` and `poisson_ratio` if given. Walls
//! are rigid and flat (a cylinder wall's curvature is not counted).
//!
//! | key | meaning | units | default |
//! |---|---|---|---|
//! | `youngs_modulus` | `E` of grains whose bundles carry no material (> 0) | stress | those grains are rigid |
//! | `poisson_ratio` | their `nu`, in `(-1, 0.5)` | - | given with `youngs_modulus` |
//! | `ks` | shear stiffness `k_s` | force/length^3 | 0 |
//! | `friction` | Coulomb coefficient `mu` of the shear cap | - | 0 |
//! | `normal_damping` | viscous coefficient `c_n` | force*time/length^3 | 0 |
//! | `nodes` | `"both"` or `"finer"`: which grain of a pair gives the nodes | - | `"both"` |
//!
//! Restrictions: conforming surfaces (a flat face on a flat face, or on a wall) have no Hertz
//! contact; there `kappa` is at least `0.1 / r`, `r` the node's grain's bounding radius, and the
//! force is not validated. Two rigid sides cannot touch: a scene with two grains whose bundles
//! carry no material, or one and a wall, is refused unless `youngs_modulus` gives them one. The
//! curvature is the reference shape's (a deformable grain's modes do not change it). The
//! energy is the force's potential only while a node's spread and curvature stay put: they
//! follow the other side's normal and curvature where the node touches it, which move along a
//! curved receiver as the grains do. Give the nodes from the curved side (`nodes = "give"` on
//! it): a flat box giving its nodes to the egg of the validation (docs/validation.md) stopped as
//! unstable at its second step (contact energy 3.9e-4 for 3.8e-5 of work done by the boxes);
//! the egg giving its nodes to the box's level set runs, and matches its walls' run to 0.1 %.
//!
//! Automatic step: Hertz's stiffness `2 E* sqrt(r delta)` against a rigid plane, `r` the
//! bounding radius, `delta` 1 % of it or the deepest initial penetration.
//!
//! Restart: the node shears, saved whole.

use std::sync::{Arc, OnceLock};

use serde::Deserialize;

use super::node::{NodeModel, NodeRoles, NodeSides, Tangential, both};
use crate::body::{Body, Shape};
use crate::error::KeyError;

/// The law.
pub type HertzPatches = super::node::NodeLaw<Hertz>;

/// Its keys.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hertz {
    /// `E` of the grains without a material.
    pub youngs_modulus: Option<f64>,
    /// Their `nu`.
    pub poisson_ratio: Option<f64>,
    /// `k_s`, per area.
    #[serde(default)]
    pub ks: f64,
    /// `mu`.
    #[serde(default)]
    pub friction: f64,
    /// `c_n`, per area.
    #[serde(default)]
    pub normal_damping: f64,
    /// Which grain of a grain pair gives the nodes.
    #[serde(default = "both")]
    pub nodes: NodeRoles,
    /// The smallest non-zero `(1 - nu^2) / E` of the scene's grains, the stiffest partner a
    /// rigid grain may meet (set by the grains' check; 0 if none is elastic).
    #[serde(skip)]
    stiffest: OnceLock<f64>,
}

impl Hertz {
    /// `(1 - nu^2) / E` of a grain of `shape`: its bundle's material, else the keys', else 0
    /// (rigid).
    fn compliance(&self, shape: &Shape) -> f64 {
        match (&shape.material, self.youngs_modulus, self.poisson_ratio) {
            (Some(m), _, _) => (1.0 - m.poisson_ratio.powi(2)) / m.youngs_modulus,
            (None, Some(e), Some(nu)) => (1.0 - nu * nu) / e,
            _ => 0.0,
        }
    }
}

/// The means of `sqrt(z)` and `z^(3/2)` (zero for `z < 0`) over `z` uniform in
/// `[d - w, d + w]`: a node's patch whose penetration varies linearly across it by `+-w`
/// (module docs). Below `w = 1e-6 |d|` the point values.
fn patch_means(d: f64, w: f64) -> (f64, f64) {
    if w <= 1e-6 * d.abs() {
        let z = d.max(0.0);
        return (z.sqrt(), z * z.sqrt());
    }
    let (hi, lo) = ((d + w).max(0.0), (d - w).max(0.0));
    let root = (hi * hi.sqrt() - lo * lo.sqrt()) / (3.0 * w);
    let power = (hi * hi * hi.sqrt() - lo * lo * lo.sqrt()) / (5.0 * w);
    (root, power)
}

impl NodeModel for Hertz {
    const NAME: &'static str = "hertz-patches";
    const COUPLES: bool = true;

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
        match (self.youngs_modulus, self.poisson_ratio) {
            (None, None) => Ok(()),
            (Some(e), Some(nu)) => {
                if !(e.is_finite() && e > 0.0) {
                    return Err(KeyError::new(
                        "contact.youngs_modulus".into(),
                        format!("a modulus > 0, got {e}"),
                    ));
                }
                if !(nu > -1.0 && nu < 0.5) {
                    return Err(KeyError::new(
                        "contact.poisson_ratio".into(),
                        format!("a ratio in (-1, 0.5), got {nu}"),
                    ));
                }
                Ok(())
            }
            (Some(_), None) => Err(KeyError::new(
                "contact.poisson_ratio".into(),
                "give it with youngs_modulus".into(),
            )),
            (None, Some(_)) => Err(KeyError::new(
                "contact.youngs_modulus".into(),
                "give it with poisson_ratio".into(),
            )),
        }
    }

    fn check_grains(
        &self,
        shapes: &[Arc<Shape>],
        bodies: &[Body],
        walls: usize,
    ) -> Result<(), KeyError> {
        let compliance = |i: usize| self.compliance(&shapes[bodies[i].shape]);
        let stiffest = (0..bodies.len())
            .map(compliance)
            .filter(|&c| c > 0.0)
            .fold(f64::INFINITY, f64::min);
        self.stiffest
            .get_or_init(|| if stiffest.is_finite() { stiffest } else { 0.0 });
        let rigid: Vec<usize> = (0..bodies.len())
            .filter(|&i| compliance(i) == 0.0)
            .collect();
        if rigid.len() >= 2 || (rigid.len() == 1 && walls > 0) {
            let with = if rigid.len() >= 2 {
                format!("grain {}", rigid[1])
            } else {
                "a wall".into()
            };
            return Err(KeyError::new(
                "contact.youngs_modulus".into(),
                format!(
                    "grain {}'s bundle carries no material (a rigid bundle) and could touch {with}, also rigid: Hertz's pressure between two rigid sides is unbounded; give youngs_modulus and poisson_ratio for the grains without a material",
                    rigid[0]
                ),
            ));
        }
        Ok(())
    }

    #[inline]
    fn scale(area: f64, weight: f64) -> f64 {
        weight * area
    }

    /// Half a node's side: the penetration's spread over its patch is at most that.
    fn margin(area: f64) -> f64 {
        0.5 * area.sqrt()
    }

    /// `p = (E* / pi) sqrt(kappa) <sqrt(d)>` and `(E* / pi) sqrt(kappa) (2/3) <d^(3/2)>`, the
    /// means over the node's patch (module docs).
    #[inline(always)]
    fn normal<'s>(&self, d: f64, sides: impl FnOnce() -> NodeSides<'s>) -> (f64, f64) {
        let s = sides();
        let compliance = self.compliance(s.giver) + s.other.map_or(0.0, |o| self.compliance(o));
        let c = s.curvature.sqrt() / (std::f64::consts::PI * compliance);
        let (root, power) = patch_means(d, s.spread);
        (c * root, 2.0 / 3.0 * c * power)
    }

    /// A rigid grain's stiffest contact is with the stiffest elastic grain of the scene (none:
    /// it touches nothing, stiffness 0).
    fn auto_stiffness(&self, shape: &Shape, patch: f64, overlap: f64) -> (f64, f64) {
        let r = shape.bounding_radius;
        let delta = (0.01 * r).max(overlap);
        let own = self.compliance(shape);
        let compliance = if own > 0.0 {
            own
        } else {
            self.stiffest.get().copied().unwrap_or(0.0)
        };
        let stiffness = if compliance > 0.0 {
            2.0 / compliance * (r * delta).sqrt()
        } else {
            0.0
        };
        (stiffness, patch.max(2.0 * std::f64::consts::PI * r * delta))
    }

    /// `dF/d delta = 3 F / (2 delta)` of Hertz's `F ~ delta^(3/2)`, at the deepest node (0
    /// while no node is inside, only the spread of the nearest ones).
    fn pair_stiffness(&self, _: f64, elastic: f64, deepest: f64) -> f64 {
        if deepest > 0.0 {
            1.5 * elastic / deepest
        } else {
            0.0
        }
    }
}
