//! A grain's residual flexibility in the solver: the static compliance of its body between
//! points of its surface that its modes leave out (docs/physics.md section 2, "Contacts
//! anywhere"), from its bundle ([`grain::GrainFlexibility`]).
//!
//! The bundle tabulates `G_ts` between `S` surface points `x_s`, each load spread over a patch
//! of radius `rho`. Between the points the table is interpolated with the weights of
//! [`crate::cloud`] over the points within `rho`:
//!
//! - between two contacts at `x` and `y`: `G(x, y) = sum_s sum_t w_s(x) w_t(y) G_st`;
//! - a contact's own regular compliance, its patch compliance less the half space's for the same
//!   patch weights (which the contact law carries as Hertz's): `G_own(x) = sum_s w_s(x) G_ss -
//!   3 (1 - nu^2) / (5 rho E)` (the half space's patch-weighted displacement under the patch
//!   load `sqrt(1 - d^2 / rho^2)`, Johnson 1985, section 3.4; data/reference/sphere_series.py
//!   derives and prints it).
//!
//! Both are inward displacements per unit inward force (length / force).
//!
//! Cost: a cloud lookup per contact for its weights, then `O(k^2)` table reads per pair of a
//! grain's contacts (each pair once, `G` being symmetric), `k` the points within `rho` (about
//! 10 to 50): a grain with `m` contacts reads `m (m - 1) k^2 / 2` entries of `G` per step.

use grain::{GrainFlexibility, Material};
use nalgebra::Vector3;

use crate::cloud::{Cloud, Weights};

/// A grain's residual flexibility (module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct Flexibility {
    /// The points, smoothed over `rho`.
    cloud: Cloud,
    /// `G_ts`, row-major `S x S`.
    matrix: Vec<f64>,
    /// The half space's patch compliance `3 (1 - nu^2) / (5 rho E)`.
    half_space: f64,
}

impl Flexibility {
    /// The flexibility of a bundle made of `material` (module docs).
    pub fn new(f: &GrainFlexibility, material: &Material) -> Flexibility {
        let points = (f.points.rows().into_iter())
            .map(|r| Vector3::new(r[0], r[1], r[2]))
            .collect();
        let nu = material.poisson_ratio;
        Flexibility {
            cloud: Cloud::new(points, f.patch_radius),
            matrix: f.matrix.iter().copied().collect(),
            half_space: 3.0 * (1.0 - nu * nu) / (5.0 * f.patch_radius * material.youngs_modulus),
        }
    }

    /// `G_ts`.
    fn entry(&self, t: usize, s: usize) -> f64 {
        self.matrix[t * self.cloud.points.len() + s]
    }

    /// The interpolation weights `w_s(x)` of a contact at local point `x` (module docs), which
    /// [`Flexibility::between`] and [`Flexibility::own`] take: computed once per contact, they
    /// serve all its pairs with the grain's other contacts.
    pub fn weights(&self, x: &Vector3<f64>) -> Weights {
        self.cloud.weights(x)
    }

    /// `G(x, y)` between contacts of weights `wx` and `wy` (module docs). Plain loops over one
    /// row of `G` at a time: the coupling's inner loop, which iterator adaptors left as an
    /// un-inlined closure call per entry (a fifth of a dense packing's step, measured).
    pub fn between(&self, wx: &Weights, wy: &Weights) -> f64 {
        let n = self.cloud.points.len();
        let mut total = 0.0;
        for &(t, a) in wx {
            let row = &self.matrix[t * n..(t + 1) * n];
            let mut sum = 0.0;
            for &(s, b) in wy {
                sum += b * row[s];
            }
            total += a * sum;
        }
        total
    }

    /// `G_own(x)`, the regular part of a contact's own compliance, from its weights `wx`
    /// (module docs).
    pub fn own(&self, wx: &Weights) -> f64 {
        let diagonal: f64 = (wx.iter()).map(|&(s, w)| w * self.entry(s, s)).sum();
        diagonal - self.half_space
    }
}
