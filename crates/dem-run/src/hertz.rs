//! # `hertz-jaeger`: spherical grains (docs/physics.md section 4; docs/jaeger.md)
//!
//! Between two spherical grains of radii `R_a`, `R_b` (and between a sphere and a plane wall,
//! `R_b = infinity`), the contact is computed from the centres, not from nodes:
//! - total overlap `delta = R_a + R_b - |X_b - X_a|` (for a plane: `R_a - phi_wall(X_a)`), unit
//!   normal `n` from `a` towards `b`, contact point `x_c = X_a + (R_a - delta / 2) n`;
//! - Hertz normal force `N = 4/3 E* sqrt(R*) delta^(3/2)`, `E* = G / (1 - nu)` for one material;
//! - Jäger's tangential force for the whole history (the `jaeger` crate, exact unless
//!   `approximation > 0`), driven by the relative tangential displacement of `a` against `b` at
//!   `x_c` over the step, in a contact frame carried with the pair ([`jaeger::ContactFrame`]:
//!   twirled by the grains' mean spin about the normal, tilted to the new normal).
//!
//! The force on `a` is `-N n - T` (global), `b` gets the opposite at `x_c`. The history lives
//! while the grains overlap and is dropped when they separate; checkpoints keep it whole.
//! Energy: the normal part `2/5 N delta` is counted as stored contact energy; the tangential
//! elastic energy is not.
//!
//! Restrictions: every grain must be a sphere (surface nodes at one distance from the centre,
//! to 1e-6 relative: the bundle of `levelset-bake sphere`) with its modes off (the law's
//! geometry is the rigid spheres'); walls must be planes.
//!
//! Automatic step: the Hertz stiffness `dN/d delta = 2 E* sqrt(R* delta)` of two of the grain's
//! spheres at an overlap of 1 % of the radius (or the deepest initial overlap if larger).

use std::sync::Arc;

use jaeger::{ContactFrame, ContactParams, JaegerContact};
use nalgebra::Vector3;
use serde::{Deserialize, Serialize};

use crate::body::{Body, Shape};
use crate::law::{Against, ContactLaw, Pair, PairHistory};
use crate::narrow::PairOutcome;
use crate::scene::Contact;
use crate::wall::Wall;

/// The law's material parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct HertzJaeger {
    /// `G`.
    pub shear_modulus: f64,
    /// `nu`.
    pub poisson_ratio: f64,
    /// `mu`.
    pub friction: f64,
    /// Kuhn's `pdif`.
    pub approximation: f64,
}

/// The state of one sphere contact: its frame and its Jäger history.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpherePair {
    frame: ContactFrame,
    contact: JaegerContact,
}

/// The other side of a sphere contact.
enum Other<'a> {
    /// A spherical grain and its radius.
    Sphere(&'a Body, f64),
    /// A plane wall.
    Plane(&'a Wall),
}

impl ContactLaw for HertzJaeger {
    fn check(&self, shapes: &[Arc<Shape>], bodies: &[Body]) -> Result<(), (String, String)> {
        for (i, b) in bodies.iter().enumerate() {
            if shapes[b.shape].sphere_radius.is_none() {
                return Err((
                    "contact.law".into(),
                    format!(
                        "hertz-jaeger needs spherical grains; grain {i} is not a sphere (its nodes are not all at one distance from its centre)"
                    ),
                ));
            }
            if b.modes.is_some() {
                return Err((
                    "contact.law".into(),
                    format!(
                        "hertz-jaeger needs rigid spheres; grain {i} is deformable (set its `modes = {{ active = false }}`, or use a node law)"
                    ),
                ));
            }
        }
        Ok(())
    }

    fn stiffness(&self, shape: &Shape, _patch: f64, overlap: f64) -> (f64, f64) {
        let r = shape.sphere_radius.unwrap_or(shape.bounding_radius);
        (self.hertz_stiffness(0.5 * r, (0.01 * r).max(overlap)), 0.0)
    }

    fn accepts(&self, history: &PairHistory) -> bool {
        matches!(history, PairHistory::Sphere(_))
    }

    fn pair(
        &self,
        pair: &Pair,
        old: Option<&PairHistory>,
        dt: f64,
    ) -> (PairOutcome, Option<PairHistory>) {
        let old = match old {
            Some(PairHistory::Sphere(s)) => Some(s.as_ref()),
            _ => None,
        };
        let radius = |s: &Shape| s.sphere_radius.expect("spheres checked with the scene");
        let a = pair.a;
        let other = match pair.b {
            Against::Body(b) => Other::Sphere(b.body, radius(b.shape)),
            Against::Wall(w) => Other::Plane(w),
        };
        let (out, state) = self.sphere_pair(a.body, radius(a.shape), &other, old, dt);
        (out, state.map(|s| PairHistory::Sphere(Box::new(s))))
    }
}

impl HertzJaeger {
    /// The law of a checked scene's `[contact]` table.
    pub fn new(c: &Contact) -> HertzJaeger {
        HertzJaeger {
            shear_modulus: c.shear_modulus.unwrap_or(0.0),
            poisson_ratio: c.poisson_ratio.unwrap_or(0.0),
            friction: c.friction,
            approximation: c.approximation,
        }
    }

    fn params(&self, r_a: f64, other: &Other) -> ContactParams {
        let (g, nu, mu) = (self.shear_modulus, self.poisson_ratio, self.friction);
        match other {
            Other::Sphere(_, r_b) => ContactParams::new(r_a, *r_b, g, nu, mu),
            Other::Plane(_) => ContactParams::against_plane(r_a, g, nu, mu),
        }
        .and_then(|p| p.with_approximation(self.approximation))
        .expect("parameters checked with the scene")
    }

    /// Young's modulus-like stiffness `dN/d delta` at overlap `delta` between spheres of
    /// effective radius `r_eff`: `2 E* sqrt(r_eff delta)`.
    pub fn hertz_stiffness(&self, r_eff: f64, delta: f64) -> f64 {
        2.0 * self.shear_modulus / (1.0 - self.poisson_ratio) * (r_eff * delta).sqrt()
    }

    /// The contact of sphere `a` (radius `r_a`) with `other` over a step `dt`, continuing
    /// `old` if they touched before. Returns the outcome (forces on `a` and the other) and the
    /// new state, `None` once they are apart.
    fn sphere_pair(
        &self,
        a: &Body,
        r_a: f64,
        other: &Other,
        old: Option<&SpherePair>,
        dt: f64,
    ) -> (PairOutcome, Option<SpherePair>) {
        let mut out = PairOutcome::default();
        let (delta, n, v_other, spin_other, centre_other) = match other {
            Other::Sphere(b, r_b) => {
                let d = b.position - a.position;
                let dist = d.norm();
                (r_a + r_b - dist, d / dist, None, b.spin(), Some(b))
            }
            Other::Plane(w) => {
                let (phi, normal) = w.distance(&a.position);
                (r_a - phi, -normal, Some(w.velocity), Vector3::zeros(), None)
            }
        };
        if delta <= 0.0 || delta.is_nan() {
            return (out, None);
        }
        let x_c = a.position + n * (r_a - 0.5 * delta);
        let spin_a = a.spin();
        let v_b = match (centre_other, v_other) {
            (Some(b), _) => b.point_velocity(&spin_other, &x_c),
            (None, Some(v)) => v,
            (None, None) => Vector3::zeros(),
        };
        let v_rel = a.point_velocity(&spin_a, &x_c) - v_b;
        let normal = [n.x, n.y, n.z];
        let mut state = match old {
            Some(s) => {
                let mut s = s.clone();
                let (sa, sb) = (spin_a * dt, spin_other * dt);
                s.frame
                    .update(normal, [sa.x, sa.y, sa.z], [sb.x, sb.y, sb.z]);
                s
            }
            None => SpherePair {
                frame: ContactFrame::new(normal),
                contact: JaegerContact::new(self.params(r_a, other)),
            },
        };
        let slide = (v_rel - n * v_rel.dot(&n)) * dt;
        let du = state.frame.to_local([slide.x, slide.y, slide.z]);
        let f = state.contact.step(delta, du);
        let t = Vector3::from(state.frame.to_global(f.tangential));
        let on_a = -n * f.normal - t;
        out.on_a = (on_a, (x_c - a.position).cross(&on_a));
        out.on_b = (
            -on_a,
            centre_other.map_or(Vector3::zeros(), |b| (x_c - b.position).cross(&-on_a)),
        );
        out.nodes_in_contact = 1;
        out.energy = 0.4 * f.normal * delta;
        out.patch = 1.0;
        out.deepest = delta;
        (out, Some(state))
    }
}
