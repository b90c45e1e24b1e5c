//! The baseline law that common DEM codes use, for comparison: Hertz normal force with an
//! incremental Mindlin no-slip tangential spring capped by Coulomb friction (e.g. LIGGGHTS'
//! `hertz` with `tangential history`, YADE's `Law2_ScGeom_MindlinPhys_Mindlin`).
//!
//! `T <- T + k_t du` with the current tangential stiffness `k_t = 4 G a / (2 - nu)` (Mindlin's
//! initial stiffness of two identical spheres, `a` the Hertz contact radius; docs/jaeger.md section 2),
//! then `T <- mu N T / |T|` if `|T| > mu N`. Same conventions as [`crate::HistoryStore::step`]:
//! TOTAL overlap and TOTAL tangential increment, local frame. It matches Jäger's law only for
//! the first, infinitesimal steps of a virgin contact: it knows no partial slip, no Masing
//! hysteresis and no effect of normal unloading on the tangential stiffness.

use crate::kernel::ContactForce;
use crate::params::ContactParams;

/// Per-contact state of the baseline law: the tangential force (16 bytes).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SpringState {
    tangential: [f64; 2],
}

impl SpringState {
    /// Mindlin's current tangential stiffness `k_t = 4 G a / (2 - nu)` at total overlap `delta`
    /// (`8 G* a` with `G* = G / (2 (2 - nu))` for one material).
    pub fn stiffness(params: &ContactParams, delta: f64) -> f64 {
        4.0 * params.shear_modulus() * params.contact_radius(delta) / (2.0 - params.poisson_ratio())
    }

    /// Advances the contact by one step. `delta <= 0` (or NaN) is loss of contact.
    pub fn step(&mut self, params: &ContactParams, delta: f64, du: [f64; 2]) -> ContactForce {
        if delta <= 0.0 || delta.is_nan() {
            self.tangential = [0.0; 2];
            return ContactForce {
                normal: 0.0,
                tangential: [0.0; 2],
            };
        }
        let n = params.normal_force(delta);
        let k_t = Self::stiffness(params, delta);
        let mut t = [
            self.tangential[0] + k_t * du[0],
            self.tangential[1] + k_t * du[1],
        ];
        let (norm, limit) = ((t[0] * t[0] + t[1] * t[1]).sqrt(), params.friction() * n);
        if norm > limit {
            t = [t[0] * limit / norm, t[1] * limit / norm];
        }
        self.tangential = t;
        ContactForce {
            normal: n,
            tangential: t,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_stiffness_is_mindlins_and_the_force_is_capped() {
        let p = ContactParams::new(1.0, 1.0, 1.0, 0.3, 0.5).unwrap();
        let mut s = SpringState::default();
        let d = 1e-3;
        s.step(&p, d, [0.0, 0.0]);
        // Mindlin: dT/ds = 4 G a / (2 - nu) (docs/jaeger.md 8.1, checked there against mu N / S).
        let du = 1e-9;
        let f = s.step(&p, d, [du, 0.0]);
        let slope_cm = 1.5 * p.friction() * p.normal_force(d) / (p.friction() * p.kappa() * d);
        assert!((f.tangential[0] / du / slope_cm - 1.0).abs() < 1e-12);
        let f = s.step(&p, d, [1.0, 1.0]);
        let t = f.tangential[0].hypot(f.tangential[1]);
        assert!((t - p.friction() * f.normal).abs() <= 1e-15 * f.normal);
        assert_eq!(s.step(&p, -1.0, [1.0, 0.0]).tangential, [0.0, 0.0]);
    }
}
