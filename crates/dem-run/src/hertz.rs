//! # The sphere laws: `hertz-jaeger` and `hertz-mindlin` (docs/physics.md section 4; docs/jaeger.md)
//!
//! Between two spherical grains of radii `R_a`, `R_b` (and between a sphere and a plane wall,
//! `R_b = infinity`), the contact is computed from the centres, not from nodes:
//! - total overlap `delta = R_a + R_b - |X_b - X_a|` (for a plane: `R_a - phi_wall(X_a)`), unit
//!   normal `n` from `a` towards `b`, contact point `x_c = X_a + (R_a - delta / 2) n`;
//! - Hertz normal force `N = 4/3 E* sqrt(R*) delta^(3/2)`, `E* = G / (1 - nu)` for one material;
//! - the tangential force, driven by the relative tangential displacement of `a` against `b` at
//!   `x_c` over the step, in a contact frame carried with the pair ([`jaeger::ContactFrame`]:
//!   twirled by the grains' mean spin about the normal, tilted to the new normal):
//!   - `hertz-jaeger`: Jäger's law for the whole history (the `jaeger` crate, exact unless
//!     `approximation > 0`): partial slip, Masing hysteresis, the effect of normal unloading;
//!   - `hertz-mindlin`: the incremental spring of common DEM codes (LIGGGHTS' `hertz` with
//!     tangential history, YADE's Mindlin law): `T <- T + k_t du`, `k_t = 4 G a / (2 - nu)`
//!     (`= 8 G* a`, Mindlin's initial stiffness at the current contact radius `a`), capped at
//!     `mu N` ([`jaeger::SpringState`]); optionally viscous damping (Tsuji et al. 1992, as in
//!     LIGGGHTS): `F_d = -2 sqrt(5/6) beta sqrt(S m*) v` along the normal (`S = dN/d delta`) and
//!     along the tangent (`S = k_t`), `beta = ln e / sqrt(ln^2 e + pi^2)` from the coefficient
//!     of restitution `e`, `m* = m_a m_b / (m_a + m_b)` (`m_a` against walls and prescribed
//!     grains). The damped tangential force is capped at `mu N` as a whole.
//!
//! The force on `a` is `-N n - T` (global), `b` gets the opposite at `x_c`. The history lives
//! while the grains overlap and is dropped when they separate; checkpoints keep it whole.
//! Energy: the normal part `2/5 N delta` is counted as stored contact energy and the damping's
//! power as viscous dissipation; the tangential elastic energy is not counted.
//!
//! Restrictions: every grain must be a sphere (surface nodes at one distance from the centre,
//! to 1e-6 relative: the bundle of `levelset-bake sphere`) with its modes off (the laws'
//! geometry is the rigid spheres'); walls must be planes.
//!
//! Automatic step: the Hertz stiffness `dN/d delta = 2 E* sqrt(R* delta)` of two of the grain's
//! spheres at an overlap of 1 % of the radius (or the deepest initial overlap if larger).

use std::sync::Arc;

use jaeger::{ContactFrame, ContactParams, JaegerContact, SpringState};
use nalgebra::Vector3;
use serde::{Deserialize, Serialize};

use crate::body::{Body, Shape};
use crate::law::{Against, ContactLaw, Pair, PairHistory};
use crate::narrow::PairOutcome;
use crate::scene::KeyError;
use crate::scene::{Contact, LawKind};
use crate::wall::Wall;

/// A sphere law: its material parameters and its tangential model.
#[derive(Debug, Clone, PartialEq)]
pub struct SphereLaw {
    /// `G`.
    pub shear_modulus: f64,
    /// `nu`.
    pub poisson_ratio: f64,
    /// `mu`.
    pub friction: f64,
    /// The tangential model.
    pub tangential: Tangential,
}

/// The tangential model of a sphere law.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tangential {
    /// Jäger's law with Kuhn's approximation threshold `pdif` (0 = exact).
    Jaeger {
        /// `pdif`.
        approximation: f64,
    },
    /// The incremental Mindlin spring with Tsuji's damping ratio `beta <= 0` (0 = undamped).
    Mindlin {
        /// `beta = ln e / sqrt(ln^2 e + pi^2)`.
        beta: f64,
    },
}

/// The state of one sphere contact: its frame and its tangential history.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpherePair {
    frame: ContactFrame,
    contact: TangentialState,
}

impl SpherePair {
    /// Bytes this contact holds: its own size and, under Jäger's law, its history store.
    pub fn bytes(&self) -> usize {
        size_of::<Self>()
            + match &self.contact {
                TangentialState::Jaeger(c) => c.parts().0.bytes_allocated(),
                TangentialState::Mindlin { .. } => 0,
            }
    }
}

/// A sphere contact's tangential history: Jäger's equivalent path, or the Mindlin spring's force
/// and the pair's parameters. Untagged, so that checkpoints written before the Mindlin law read
/// as they are.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
enum TangentialState {
    Jaeger(JaegerContact),
    Mindlin {
        params: ContactParams,
        spring: SpringState,
    },
}

/// The other side of a sphere contact.
enum Other<'a> {
    /// A spherical grain and its radius.
    Sphere(&'a Body, f64),
    /// A plane wall.
    Plane(&'a Wall),
}

impl ContactLaw for SphereLaw {
    fn check(&self, shapes: &[Arc<Shape>], bodies: &[Body]) -> Result<(), KeyError> {
        for (i, b) in bodies.iter().enumerate() {
            if shapes[b.shape].sphere_radius.is_none() {
                return Err(KeyError::new(
                    "contact.law".into(),
                    format!(
                        "{} needs spherical grains; grain {i} is not a sphere (its nodes are not all at one distance from its centre)",
                        self.name()
                    ),
                ));
            }
            if b.modes.is_some() {
                return Err(KeyError::new(
                    "contact.law".into(),
                    format!(
                        "{} needs rigid spheres; grain {i} is deformable (set its `modes = {{ active = false }}`, or use a node law)",
                        self.name()
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
        match (history, self.tangential) {
            (PairHistory::Sphere(s), Tangential::Jaeger { .. }) => {
                matches!(s.contact, TangentialState::Jaeger(_))
            }
            (PairHistory::Sphere(s), Tangential::Mindlin { .. }) => {
                matches!(s.contact, TangentialState::Mindlin { .. })
            }
            _ => false,
        }
    }

    fn pair(
        &self,
        pair: &Pair,
        old: Option<PairHistory>,
        dt: f64,
    ) -> (PairOutcome, Option<PairHistory>) {
        let old = match old {
            Some(PairHistory::Sphere(s)) => Some(s),
            _ => None,
        };
        let radius = |s: &Shape| s.sphere_radius.expect("spheres checked with the scene");
        let a = pair.a;
        let (other, mass) = match pair.b {
            Against::Body(b) if b.body.is_free() => (
                Other::Sphere(b.body, radius(b.shape)),
                a.shape.mass * b.shape.mass / (a.shape.mass + b.shape.mass),
            ),
            Against::Body(b) => (Other::Sphere(b.body, radius(b.shape)), a.shape.mass),
            Against::Wall(w) => (Other::Plane(w), a.shape.mass),
        };
        let (out, state) = self.sphere_pair(a.body, (radius(a.shape), mass), &other, old, dt);
        (out, state.map(PairHistory::Sphere))
    }
}

impl SphereLaw {
    /// The law's name in scene files.
    pub fn name(&self) -> &'static str {
        match self.tangential {
            Tangential::Jaeger { .. } => "hertz-jaeger",
            Tangential::Mindlin { .. } => "hertz-mindlin",
        }
    }

    /// The law of a checked scene's `[contact]` table (a sphere law).
    pub fn new(c: &Contact) -> SphereLaw {
        let tangential = match c.law {
            LawKind::HertzMindlin => {
                let beta = c.restitution.map_or(0.0, |e| {
                    let l = e.ln();
                    l / (l * l + std::f64::consts::PI.powi(2)).sqrt()
                });
                Tangential::Mindlin { beta }
            }
            _ => Tangential::Jaeger {
                approximation: c.approximation,
            },
        };
        SphereLaw {
            shear_modulus: c.shear_modulus.unwrap_or(0.0),
            poisson_ratio: c.poisson_ratio.unwrap_or(0.0),
            friction: c.friction,
            tangential,
        }
    }

    fn params(&self, r_a: f64, other: &Other) -> ContactParams {
        let (g, nu, mu) = (self.shear_modulus, self.poisson_ratio, self.friction);
        let approximation = match self.tangential {
            Tangential::Jaeger { approximation } => approximation,
            Tangential::Mindlin { .. } => 0.0,
        };
        match other {
            Other::Sphere(_, r_b) => ContactParams::new(r_a, *r_b, g, nu, mu),
            Other::Plane(_) => ContactParams::against_plane(r_a, g, nu, mu),
        }
        .and_then(|p| p.with_approximation(approximation))
        .expect("parameters checked with the scene")
    }

    /// Young's modulus-like stiffness `dN/d delta` at overlap `delta` between spheres of
    /// effective radius `r_eff`: `2 E* sqrt(r_eff delta)`.
    pub fn hertz_stiffness(&self, r_eff: f64, delta: f64) -> f64 {
        2.0 * self.shear_modulus / (1.0 - self.poisson_ratio) * (r_eff * delta).sqrt()
    }

    /// The contact of sphere `a` (radius `r_a`; `mass` the pair's effective mass) with `other`
    /// over a step `dt`, continuing `old` if they touched before. Returns the outcome (forces on
    /// `a` and the other) and the state advanced in place, `None` once they are apart.
    fn sphere_pair(
        &self,
        a: &Body,
        (r_a, mass): (f64, f64),
        other: &Other,
        old: Option<Box<SpherePair>>,
        dt: f64,
    ) -> (PairOutcome, Option<Box<SpherePair>>) {
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
            Some(mut s) => {
                let (sa, sb) = (spin_a * dt, spin_other * dt);
                s.frame
                    .update(normal, [sa.x, sa.y, sa.z], [sb.x, sb.y, sb.z]);
                s
            }
            None => Box::new(SpherePair {
                frame: ContactFrame::new(normal),
                contact: match self.tangential {
                    Tangential::Jaeger { .. } => {
                        TangentialState::Jaeger(JaegerContact::new(self.params(r_a, other)))
                    }
                    Tangential::Mindlin { .. } => TangentialState::Mindlin {
                        params: self.params(r_a, other),
                        spring: SpringState::default(),
                    },
                },
            }),
        };
        let v_n = v_rel.dot(&n);
        let v_t = v_rel - n * v_n;
        let slide = v_t * dt;
        let du = state.frame.to_local([slide.x, slide.y, slide.z]);
        // (elastic normal force, normal force with damping, tangential force)
        let (elastic, normal_force, t) = match (&mut state.contact, self.tangential) {
            (TangentialState::Jaeger(contact), _) => {
                let f = contact.step(delta, du);
                let t = Vector3::from(state.frame.to_global(f.tangential));
                (f.normal, f.normal, t)
            }
            (TangentialState::Mindlin { params, spring }, Tangential::Mindlin { beta }) => {
                let f = spring.step(params, delta, du);
                let t = Vector3::from(state.frame.to_global(f.tangential));
                // Tsuji's damping: c = -2 sqrt(5/6) beta sqrt(S m*) per direction.
                let c = |stiffness: f64| {
                    -2.0 * (5.0f64 / 6.0).sqrt() * beta * (stiffness * mass).sqrt()
                };
                let (c_n, c_t) = (
                    c(self.hertz_stiffness(params.effective_radius(), delta)),
                    c(SpringState::stiffness(params, delta)),
                );
                // The damped force opposes the relative motion of a against b; the tangential
                // total is capped at mu N.
                let damped_n = (f.normal + c_n * v_n).max(0.0);
                let mut total_t = t + v_t * c_t;
                let limit = params.friction() * f.normal;
                if total_t.norm() > limit {
                    total_t *= limit / total_t.norm();
                }
                out.viscous_power = (damped_n - f.normal) * v_n + (total_t - t).dot(&v_t);
                (f.normal, damped_n, total_t)
            }
            (TangentialState::Mindlin { .. }, Tangential::Jaeger { .. }) => {
                unreachable!("a checkpoint's histories are checked against the law")
            }
        };
        let on_a = -n * normal_force - t;
        out.on_a = (on_a, (x_c - a.position).cross(&on_a));
        out.on_b = (
            -on_a,
            centre_other.map_or(Vector3::zeros(), |b| (x_c - b.position).cross(&-on_a)),
        );
        out.nodes_in_contact = 1;
        out.energy = 0.4 * elastic * delta;
        out.patch = 1.0;
        out.deepest = delta;
        (out, Some(state))
    }
}
