//! An independent oracle: the Method of Dimensionality Reduction (Popov and Hess), a bed of
//! independent springs with Coulomb limits (docs/jaeger.md section 9). For collinear tangential
//! movement with any normal loading and unloading it describes the same contact as Jäger's
//! algorithm, so the two must agree to the bed's discretization error. Acceptance: 1e-3 mu N.

use jaeger::{ContactParams, JaegerContact};
use rand::{RngExt, SeedableRng};
use rand_xorshift::XorShiftRng;

/// The MDR spring bed of two identical spheres, in full (total) units, collinear tangential
/// movement (one component).
struct SpringBed {
    e_star: f64,
    g_star: f64,
    mu_kappa: f64,
    dx: f64,
    /// `g(x_m) = x_m^2 / R*`, the 1-D profile at each spring.
    gap: Vec<f64>,
    /// Tangential spring displacements.
    v: Vec<f64>,
    d: f64,
}

impl SpringBed {
    fn new(p: &ContactParams, springs: usize, length: f64) -> Self {
        let dx = length / springs as f64;
        let r_star = p.effective_radius();
        let (g, nu) = (p.shear_modulus(), p.poisson_ratio());
        SpringBed {
            e_star: g / (1.0 - nu),
            g_star: 2.0 * g / (2.0 - nu),
            mu_kappa: p.friction() * p.kappa(),
            dx,
            gap: (0..springs)
                .map(|m| ((m as f64 + 0.5) * dx).powi(2) / r_star)
                .collect(),
            v: vec![0.0; springs],
            d: 0.0,
        }
    }

    /// Moves to overlap `d1` with tangential increment `ds`; returns (N, T).
    fn step(&mut self, d1: f64, ds: f64) -> (f64, f64) {
        let d0 = self.d;
        let (mut n, mut t) = (0.0, 0.0);
        for (g, v) in self.gap.iter().zip(self.v.iter_mut()) {
            let w = d1 - g;
            if w <= 0.0 {
                *v = 0.0;
                continue;
            }
            if *g < d0 {
                *v += ds; // in contact at both ends of the step
            } else {
                let lambda = (g - d0) / (d1 - d0); // touched during the step
                *v = (1.0 - lambda) * ds;
            }
            let limit = self.mu_kappa * w;
            if v.abs() > limit {
                *v = limit * v.signum();
            }
            n += w;
            t += *v;
        }
        self.d = d1;
        (
            2.0 * self.dx * self.e_star * n,
            2.0 * self.dx * self.g_star * t,
        )
    }
}

#[test]
fn jaeger_agrees_with_the_mdr_spring_bed_on_collinear_histories() {
    let p = ContactParams::new(1.0, 1.0, 1.0, 0.15, 0.4).unwrap();
    let d_max = 1e-3;
    let a_max = (p.effective_radius() * 2.0 * d_max).sqrt();
    let mut worst = 0.0f64;
    for seed in 1..=4u64 {
        let mut rng = XorShiftRng::seed_from_u64(seed);
        let mut rand = || rng.random::<f64>();
        let mut bed = SpringBed::new(&p, 20_000, 1.05 * a_max);
        let mut jaeger = JaegerContact::new(p);
        let mut d = 0.0f64;
        for _ in 0..300 {
            // Normal loading and unloading, tangential reversals of all sizes, both elastic and
            // slipping steps; the overlap stays within (0, 2 d_max].
            d = (d + d_max * (0.25 * rand() - 0.1)).clamp(0.05 * d_max, 2.0 * d_max);
            let ds = 0.4 * p.kappa() * d_max * (0.5 * rand() - 0.25);
            let (n_bed, t_bed) = bed.step(d, ds);
            let f = jaeger.step(d, [ds, 0.0]);
            let mu_n = p.friction() * f.normal;
            assert!(
                (n_bed - f.normal).abs() <= 1e-3 * f.normal,
                "N: bed {n_bed}, Hertz {}",
                f.normal
            );
            worst = worst.max((t_bed - f.tangential[0]).abs() / mu_n);
            assert_eq!(f.tangential[1], 0.0);
        }
    }
    println!("largest |T_jaeger - T_mdr| / (mu N) over 4 x 300 steps: {worst:.2e}");
    assert!(worst <= 1e-3, "{worst:e}");
}
