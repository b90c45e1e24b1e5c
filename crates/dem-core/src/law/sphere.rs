//! What the sphere laws share (docs/physics.md section 4; docs/jaeger.md): contacts computed from
//! the centres of spherical grains, not from nodes, with Hertz's normal force and a tangential
//! model of their own ([`SphereModel`]: [`super::hertz_jaeger`], [`super::hertz_mindlin`]).
//!
//! Between two spherical grains of radii `R_a`, `R_b` (and between a sphere and a plane wall,
//! `R_b = infinity`):
//! - total overlap `delta = R_a + R_b - |X_b - X_a|` (for a plane: `R_a - phi_wall(X_a)`), unit
//!   normal `n` from `a` towards `b`, contact point `x_c = X_a + (R_a - delta / 2) n`;
//! - Hertz normal force `N = 4/3 E* sqrt(R*) delta^(3/2)`, `E* = G / (1 - nu)` for one material;
//! - the tangential force `T`, driven by the relative tangential displacement of `a` against `b`
//!   at `x_c` over the step, in a contact frame carried with the pair ([`jaeger::ContactFrame`]:
//!   twirled by the grains' mean spin about the normal, tilted to the new normal).
//!
//! The force on `a` is `-N n - T` (global), `b` gets the opposite at `x_c`. The history lives
//! while the grains overlap and is dropped when they separate; checkpoints keep it whole
//! (`{"Sphere": {"frame": ..., "contact": ...}}`). Energy: the normal part `2/5 N delta` is
//! counted as stored contact energy and the damping's power as viscous dissipation; the
//! tangential elastic energy is not counted.
//!
//! Keys shared by both laws: `shear_modulus` (`G > 0`) and `poisson_ratio` (`nu` in
//! `(-1, 0.5]`) of the grains' material, required; `friction` (`mu >= 0`, default 0).
//!
//! Restrictions: every grain must be a sphere (surface nodes at one distance from the centre,
//! to 1e-6 relative: the bundle of `levelset-bake sphere`) with its modes off (the laws'
//! geometry is the rigid spheres'); walls must be planes.
//!
//! Automatic step: the Hertz stiffness `dN/d delta = 2 E* sqrt(R* delta)` of two of the grain's
//! spheres at an overlap of 1 % of the radius (or the deepest initial overlap if larger).

use std::sync::Arc;

use jaeger::{ContactFrame, ContactParams};
use nalgebra::{Matrix3, Vector3};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::surface::Surface;
use super::{Against, ContactLaw, History, Pair, PairHistory, PairKey, PairOutcome, downcast};
use crate::body::{Body, Shape};
use crate::error::KeyError;
use crate::wall::{Kind, WallSpec};

/// A sphere law's tangential model: the one thing the sphere laws do not share.
pub trait SphereModel: Send + Sync + std::fmt::Debug + 'static {
    /// The law's name in scene files.
    const NAME: &'static str;

    /// The tangential history of a contact.
    type State: Serialize + DeserializeOwned + Clone + Send + Sync + std::fmt::Debug + 'static;

    /// The grains' material: `G`, `nu`, `mu`, and Kuhn's approximation threshold (0: exact).
    fn material(&self) -> Material;

    /// The history of a new contact with parameters `params`.
    fn start(&self, params: ContactParams) -> Self::State;

    /// One step of the contact: normal overlap `delta`, tangential slide `du` (in the contact frame's tangent plane),
    /// normal and tangential relative velocities `v_n`, `v_t` (of `a` against `b`, global),
    /// effective mass `mass`; `to_global` turns a contact-frame vector into the global frame.
    #[allow(clippy::too_many_arguments)]
    fn step(
        &self,
        state: &mut Self::State,
        delta: f64,
        du: [f64; 2],
        v_n: f64,
        v_t: &Vector3<f64>,
        mass: f64,
        to_global: &dyn Fn([f64; 2]) -> Vector3<f64>,
    ) -> SphereStep;

    /// Bytes a history allocated beyond its own size.
    fn allocated(state: &Self::State) -> usize;

    /// Refuses the model's own keys (the material is checked by the law).
    fn check(&self) -> Result<(), KeyError> {
        Ok(())
    }
}

/// The grains' material for a sphere law.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Material {
    /// `G`.
    pub shear_modulus: f64,
    /// `nu`.
    pub poisson_ratio: f64,
    /// `mu`.
    pub friction: f64,
    /// Kuhn's `pdif` (0: exact history).
    pub approximation: f64,
}

impl Material {
    /// `dN/d delta` at overlap `delta` between spheres of effective radius `r_eff`:
    /// `2 E* sqrt(r_eff delta)`.
    pub fn hertz_stiffness(&self, r_eff: f64, delta: f64) -> f64 {
        2.0 * self.shear_modulus / (1.0 - self.poisson_ratio) * (r_eff * delta).sqrt()
    }
}

/// A tangential model's answer for one step.
pub struct SphereStep {
    /// The elastic normal force `N` (for the stored energy).
    pub elastic: f64,
    /// The normal force, damping included.
    pub normal: f64,
    /// The tangential force `T` (global), opposing the relative motion of `a` against `b`.
    pub tangential: Vector3<f64>,
    /// Power of the viscous forces.
    pub viscous_power: f64,
}

/// A sphere law: Hertz and the tangential model `M` (its keys are `M`'s).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct SphereLaw<M>(pub M);

/// The state of one sphere contact: its frame and its tangential history.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpherePair<S> {
    frame: ContactFrame,
    contact: S,
}

/// The checkpoint form of a sphere contact.
#[derive(Serialize, Deserialize)]
enum Saved<S> {
    Sphere(SpherePair<S>),
}

impl<M: SphereModel> History for SpherePairOf<M> {
    fn bytes(&self) -> usize {
        size_of::<Self>() + M::allocated(&self.0.contact)
    }

    fn save(&self) -> serde_json::Value {
        serde_json::to_value(Saved::Sphere(self.0.clone())).expect("a sphere contact serializes")
    }

    fn boxed_clone(&self) -> PairHistory {
        Box::new(SpherePairOf::<M>(self.0.clone()))
    }
}

/// A sphere contact under model `M`.
#[derive(Debug)]
pub struct SpherePairOf<M: SphereModel>(SpherePair<M::State>);

/// Refuses a sphere law's material (keys `contact.shear_modulus`, ...).
fn check_material(name: &str, m: &Material) -> Result<(), KeyError> {
    let params = ContactParams::new(1.0, 1.0, m.shear_modulus, m.poisson_ratio, m.friction)
        .and_then(|p| p.with_approximation(m.approximation));
    let Err(e) = params else {
        return Ok(());
    };
    let key = match e {
        jaeger::ParamError::ShearModulus(_) => "contact.shear_modulus",
        jaeger::ParamError::PoissonRatio(_) => "contact.poisson_ratio",
        jaeger::ParamError::Approximation(_) => "contact.approximation",
        jaeger::ParamError::Friction(_) => "contact.friction",
        jaeger::ParamError::NonFinite { name: "G", .. } => "contact.shear_modulus",
        jaeger::ParamError::NonFinite { name: "nu", .. } => "contact.poisson_ratio",
        jaeger::ParamError::NonFinite { name: "mu", .. } => "contact.friction",
        _ => "contact",
    };
    Err(KeyError::new(
        key.into(),
        format!("{e} ({name} needs shear_modulus and poisson_ratio)"),
    ))
}

impl<M: SphereModel> ContactLaw for SphereLaw<M> {
    fn name(&self) -> &'static str {
        M::NAME
    }

    fn check_scene(&self, walls: &[WallSpec]) -> Result<(), KeyError> {
        check_material(M::NAME, &self.0.material())?;
        self.0.check()?;
        for (i, w) in walls.iter().enumerate() {
            if !w.kind().geometry().flat() {
                return Err(KeyError::new(
                    format!("walls[{i}]"),
                    format!("{} meets flat walls (planes) only", M::NAME),
                ));
            }
        }
        Ok(())
    }

    fn check(&self, shapes: &[Arc<Shape>], bodies: &[Body], _: usize) -> Result<(), KeyError> {
        for (i, b) in bodies.iter().enumerate() {
            if shapes[b.shape].sphere_radius.is_none() {
                return Err(KeyError::new(
                    "contact.law".into(),
                    format!(
                        "{} needs spherical grains; grain {i} is not a sphere (its nodes are not all at one distance from its centre)",
                        M::NAME
                    ),
                ));
            }
            if b.modes.is_some() {
                return Err(KeyError::new(
                    "contact.law".into(),
                    format!(
                        "{} needs rigid spheres; grain {i} is deformable (set its `modes = {{ active = false }}`, or use a node law)",
                        M::NAME
                    ),
                ));
            }
        }
        Ok(())
    }

    fn stiffness(&self, shape: &Shape, _patch: f64, overlap: f64) -> (f64, f64) {
        let r = shape.sphere_radius.unwrap_or(shape.bounding_radius);
        let m = self.0.material();
        (m.hertz_stiffness(0.5 * r, (0.01 * r).max(overlap)), 0.0)
    }

    fn load(
        &self,
        _: &PairKey,
        saved: serde_json::Value,
        _: &dyn Fn(u32) -> usize,
    ) -> Result<PairHistory, String> {
        let Saved::Sphere(pair) = serde_json::from_value::<Saved<M::State>>(saved)
            .map_err(|e| format!("not a history of law = \"{}\": {e}", M::NAME))?;
        Ok(Box::new(SpherePairOf::<M>(pair)))
    }

    fn pair(
        &self,
        pair: &Pair,
        old: Option<PairHistory>,
        dt: f64,
    ) -> (PairOutcome, Option<PairHistory>) {
        let old = downcast::<SpherePairOf<M>>(old);
        match pair.b {
            Against::Body(b) => self.contact(pair, b, old, dt),
            Against::Wall(w) => self.contact(pair, w, old, dt),
        }
    }
}

impl<M: SphereModel> SphereLaw<M> {
    /// The contact of sphere `pair.a` with `other` over a step `dt`, continuing `old` if they
    /// touched before. Returns the outcome (forces on `a` and the other) and the state advanced
    /// in place, `None` once they are apart.
    fn contact<S: Surface>(
        &self,
        pair: &Pair,
        other: &S,
        old: Option<Box<SpherePairOf<M>>>,
        dt: f64,
    ) -> (PairOutcome, Option<PairHistory>) {
        let radius = |r: Option<f64>| r.expect("spheres checked with the scene");
        let (a, shape) = (pair.a, pair.a.shape);
        let r_a = radius(shape.sphere_radius);
        let mass = match other.free_mass() {
            Some(m_b) => shape.mass * m_b / (shape.mass + m_b),
            None => shape.mass,
        };
        let mut out = PairOutcome::default();
        let (delta, n) = other.sphere_overlap(&a.position, r_a);
        if delta <= 0.0 || delta.is_nan() {
            return (out, None);
        }
        let spin_other = other.spin();
        let x_c = a.position + n * (r_a - 0.5 * delta);
        let spin_a = a.spin;
        let v_rel = a.point_velocity(&x_c) - other.velocity_at(&x_c);
        let normal = [n.x, n.y, n.z];
        let mut state = match old {
            Some(mut s) => {
                let (sa, sb) = (spin_a * dt, spin_other * dt);
                s.0.frame
                    .update(normal, [sa.x, sa.y, sa.z], [sb.x, sb.y, sb.z]);
                s
            }
            None => {
                let m = self.0.material();
                let params = match other.sphere_radius() {
                    Some(r_b) => {
                        ContactParams::new(r_a, r_b, m.shear_modulus, m.poisson_ratio, m.friction)
                    }
                    None => ContactParams::against_plane(
                        r_a,
                        m.shear_modulus,
                        m.poisson_ratio,
                        m.friction,
                    ),
                }
                .and_then(|p| p.with_approximation(m.approximation))
                .expect("parameters checked with the scene");
                Box::new(SpherePairOf::<M>(SpherePair {
                    frame: ContactFrame::new(normal),
                    contact: self.0.start(params),
                }))
            }
        };
        let v_n = v_rel.dot(&n);
        let v_t = v_rel - n * v_n;
        let slide = v_t * dt;
        let frame = state.0.frame;
        let du = frame.to_local([slide.x, slide.y, slide.z]);
        let to_global = |v: [f64; 2]| Vector3::from(frame.to_global(v));
        let step = self
            .0
            .step(&mut state.0.contact, delta, du, v_n, &v_t, mass, &to_global);
        let on_a = -n * step.normal - step.tangential;
        out.on_a = (on_a, (x_c - a.position).cross(&on_a));
        out.on_b = (
            -on_a,
            other
                .centre()
                .map_or(Vector3::zeros(), |c| (x_c - c).cross(&-on_a)),
        );
        out.dipole = on_a * (x_c - a.position).transpose()
            + other
                .centre()
                .map_or(Matrix3::zeros(), |c| -on_a * (x_c - c).transpose());
        out.normal = -n * step.normal;
        // Hertz's tangent stiffness at the overlap, with the pair's effective radius.
        let r_eff = other
            .sphere_radius()
            .map_or(r_a, |r_b| r_a * r_b / (r_a + r_b));
        out.stiffness = self.0.material().hertz_stiffness(r_eff, delta);
        out.viscous_power = step.viscous_power;
        out.nodes_in_contact = 1;
        out.energy = 0.4 * step.elastic * delta;
        out.patch = 1.0;
        out.deepest = delta;
        (out, Some(state))
    }
}
