//! Deformable grains (PHYSICS.md sections 1-6): modal dynamics against closed forms, generalized
//! forces against finite differences of the contact energy, the level-set updates against the
//! recomputed level set, the energy ledger, and rigid trajectories when no load reaches a mode.

use crate::common::{self, TestMode};

use dem_run::Simulation;
use nalgebra::{Point3, Vector3};

/// A scene with one grain `grain` (TOML of its `[[grains]]` entry), no gravity, no contact.
fn lone(dir: &std::path::Path, dt: f64, steps: u64, grain: &str) -> Simulation {
    common::simulation(
        dir,
        &format!(
            "[run]\ndt = {dt}\nsteps = {steps}\n[contact]\nlaw = \"linear-springs\"\nkn = 1\n\
             [[grains]]\n{grain}\n"
        ),
    )
}

/// Free vibration without contact: `M eps'' + K eps = 0` from `eps0` at rest is
/// `eps0 cos(omega t)`, `omega = sqrt(K / M)`; with damping `C` (ratio `zeta = C / (2 sqrt(KM))`)
/// it is `eps0 e^(-zeta omega t) (cos(omega_d t) + zeta / sqrt(1 - zeta^2) sin(omega_d t))`,
/// `omega_d = omega sqrt(1 - zeta^2)` (any vibrations text). Velocity Verlet with 250 steps per
/// period keeps the undamped phase error `(omega dt)^2 omega t / 24` below 1e-4 over 10 periods.
#[test]
fn free_vibration_follows_the_closed_form_over_ten_periods() {
    let dir = tempfile::tempdir().unwrap();
    let (m, k): (f64, f64) = (2.0, 50.0);
    let omega = (k / m).sqrt();
    for zeta in [0.0f64, 0.05] {
        let c = zeta * 2.0 * (k * m).sqrt();
        common::deformable_sphere(
            dir.path(),
            "ball",
            1.0,
            0.25,
            100,
            TestMode::Dilation,
            [m, k, c],
            &[],
        );
        let period = 2.0 * std::f64::consts::PI / omega;
        let dt = period / 2500.0;
        let steps = 25_000;
        let eps0 = 0.01;
        let mut sim = lone(
            dir.path(),
            dt,
            steps,
            &format!(
                "bundle = \"ball.grain\"\nposition = [0, 0, 0]\nangular_velocity = [0.3, -1, 2]\nmodes = {{ amplitudes = [{eps0}] }}"
            ),
        );
        let wd = omega * (1.0 - zeta * zeta).sqrt();
        let exact = |t: f64| {
            eps0 * (-zeta * omega * t).exp()
                * ((wd * t).cos() + zeta / (1.0 - zeta * zeta).sqrt() * (wd * t).sin())
        };
        let mut worst: f64 = 0.0;
        for _ in 0..steps {
            sim.step(false);
            let eps = sim.bodies[0].modes.as_ref().unwrap().eps[0];
            worst = worst.max((eps - exact(sim.time)).abs() / eps0);
        }
        println!("zeta {zeta}: largest error over 10 periods {worst:.2e} of eps0");
        assert!(worst < 1e-4, "zeta {zeta}: {worst}");
        // A spinning, drifting grain: no load reaches the dilation mode, which vibrates as if
        // at rest (above), and the centre does not move.
        assert_eq!(sim.bodies[0].position, Vector3::zeros());
    }
}
