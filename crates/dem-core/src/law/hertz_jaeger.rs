//! # `law = "hertz-jaeger"` (docs/jaeger.md)
//!
//! Between spherical grains and plane walls ([`super::sphere`]): Hertz's normal force and Jäger's
//! tangential law for the whole history (the `jaeger` crate): partial slip, Masing hysteresis,
//! the effect of normal unloading, exact unless `approximation > 0`.
//!
//! | key | meaning | units | default |
//! |---|---|---|---|
//! | `shear_modulus` | `G` of the grains' material (> 0) | stress | required |
//! | `poisson_ratio` | `nu`, in `(-1, 0.5)` | - | required |
//! | `friction` | Coulomb coefficient `mu` | - | 0 |
//! | `approximation` | Kuhn's `pdif`: history points closer than it (absolute, like `mu`) merged; 0 keeps the exact history | - | 0 |
//!
//! No viscous damping (Jäger's law dissipates through slip alone); `local_damping` may be given.
//!
//! Restart: the contact frame and Jäger's equivalent history, saved whole.

use jaeger::{ContactParams, JaegerContact};
use nalgebra::Vector3;
use serde::Deserialize;

use super::sphere::{Material, SphereLaw, SphereModel, SphereStep};

/// The law.
pub type HertzJaeger = SphereLaw<Jaeger>;

/// Its keys.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Jaeger {
    /// `G`.
    pub shear_modulus: f64,
    /// `nu`.
    pub poisson_ratio: f64,
    /// `mu`.
    #[serde(default)]
    pub friction: f64,
    /// Kuhn's `pdif` (0 = exact).
    #[serde(default)]
    pub approximation: f64,
}

impl SphereModel for Jaeger {
    const NAME: &'static str = "hertz-jaeger";
    type State = JaegerContact;

    fn material(&self) -> Material {
        Material {
            shear_modulus: self.shear_modulus,
            poisson_ratio: self.poisson_ratio,
            friction: self.friction,
            approximation: self.approximation,
        }
    }

    fn start(&self, params: ContactParams) -> JaegerContact {
        JaegerContact::new(params)
    }

    fn step(
        &self,
        contact: &mut JaegerContact,
        delta: f64,
        du: [f64; 2],
        _: f64,
        _: &Vector3<f64>,
        _: f64,
        to_global: &dyn Fn([f64; 2]) -> Vector3<f64>,
    ) -> SphereStep {
        let f = contact.step(delta, du);
        SphereStep {
            elastic: f.normal,
            normal: f.normal,
            tangential: to_global(f.tangential),
            viscous_power: 0.0,
        }
    }

    fn allocated(contact: &JaegerContact) -> usize {
        contact.parts().0.bytes_allocated()
    }
}
