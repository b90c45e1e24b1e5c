//! # `law = "hertz-mindlin"`
//!
//! Between spherical grains and plane walls ([`super::sphere`]): Hertz's normal force and the
//! incremental tangential spring of common DEM codes (LIGGGHTS' `hertz` with tangential history,
//! YADE's Mindlin law): `T <- T + k_t du`, `k_t = 4 G a / (2 - nu)` (`= 8 G* a`, Mindlin's
//! initial stiffness at the current contact radius `a`), capped at `mu N`
//! ([`jaeger::SpringState`]); optionally viscous damping (Tsuji et al. 1992, as in LIGGGHTS):
//! `F_d = -2 sqrt(5/6) beta sqrt(S m*) v` along the normal (`S = dN/d delta`) and along the
//! tangent (`S = k_t`), `beta = ln e / sqrt(ln^2 e + pi^2)` from the coefficient of restitution
//! `e`, `m* = m_a m_b / (m_a + m_b)` (`m_a` against walls and prescribed grains). The damped
//! normal force is not allowed to pull; the damped tangential force is capped at `mu N` as a
//! whole.
//!
//! | key | meaning | units | default |
//! |---|---|---|---|
//! | `shear_modulus` | `G` of the grains' material (> 0) | stress | required |
//! | `poisson_ratio` | `nu`, in `(-1, 0.5)` | - | required |
//! | `friction` | Coulomb coefficient `mu` | - | 0 |
//! | `restitution` | the coefficient of restitution `e` in `(0, 1]` of Tsuji's damping | - | undamped |
//!
//! Restart: the contact frame, the spring's force and the pair's parameters, saved whole.

use jaeger::{ContactParams, SpringState};
use nalgebra::Vector3;
use serde::{Deserialize, Serialize};

use super::sphere::{Material, SphereLaw, SphereModel, SphereStep};
use crate::error::KeyError;

/// The law.
pub type HertzMindlin = SphereLaw<Mindlin>;

/// Its keys.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mindlin {
    /// `G`.
    pub shear_modulus: f64,
    /// `nu`.
    pub poisson_ratio: f64,
    /// `mu`.
    #[serde(default)]
    pub friction: f64,
    /// `e` (absent: undamped).
    pub restitution: Option<f64>,
}

/// A contact's spring and its parameters.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MindlinState {
    params: ContactParams,
    spring: SpringState,
}

impl Mindlin {
    /// Tsuji's `beta = ln e / sqrt(ln^2 e + pi^2) <= 0` (0: undamped).
    pub fn beta(&self) -> f64 {
        self.restitution.map_or(0.0, |e| {
            let l = e.ln();
            l / (l * l + std::f64::consts::PI.powi(2)).sqrt()
        })
    }
}

impl SphereModel for Mindlin {
    const NAME: &'static str = "hertz-mindlin";
    type State = MindlinState;

    fn material(&self) -> Material {
        Material {
            shear_modulus: self.shear_modulus,
            poisson_ratio: self.poisson_ratio,
            friction: self.friction,
            approximation: 0.0,
        }
    }

    fn start(&self, params: ContactParams) -> MindlinState {
        MindlinState {
            params,
            spring: SpringState::default(),
        }
    }

    fn step(
        &self,
        s: &mut MindlinState,
        delta: f64,
        du: [f64; 2],
        v_n: f64,
        v_t: &Vector3<f64>,
        mass: f64,
        to_global: &dyn Fn([f64; 2]) -> Vector3<f64>,
    ) -> SphereStep {
        let params = &s.params;
        let f = s.spring.step(params, delta, du);
        let t = to_global(f.tangential);
        // Tsuji's damping: c = -2 sqrt(5/6) beta sqrt(S m*) per direction.
        let beta = self.beta();
        let c = |stiffness: f64| -2.0 * (5.0f64 / 6.0).sqrt() * beta * (stiffness * mass).sqrt();
        let (c_n, c_t) = (
            c(self
                .material()
                .hertz_stiffness(params.effective_radius(), delta)),
            c(SpringState::stiffness(params, delta)),
        );
        // The damped force opposes the relative motion of a against b; the tangential total is
        // capped at mu N.
        let damped_n = (f.normal + c_n * v_n).max(0.0);
        let mut total_t = t + v_t * c_t;
        let limit = params.friction() * f.normal;
        if total_t.norm() > limit {
            total_t *= limit / total_t.norm();
        }
        SphereStep {
            elastic: f.normal,
            normal: damped_n,
            tangential: total_t,
            viscous_power: (damped_n - f.normal) * v_n + (total_t - t).dot(v_t),
        }
    }

    fn allocated(_: &MindlinState) -> usize {
        0
    }

    fn check(&self) -> Result<(), KeyError> {
        match self.restitution {
            Some(e) if !(e > 0.0 && e <= 1.0) => Err(KeyError::new(
                "contact.restitution".into(),
                format!("a coefficient of restitution in (0, 1], got {e}"),
            )),
            _ => Ok(()),
        }
    }
}
