//! The automatic time step (docs/physics.md section 6, with the paper's inverted ratio corrected):
//! the smallest critical step of the oscillators a scene holds, times `run.safety`.
//!
//! Velocity Verlet integrates an oscillator of mass `m`, stiffness `k` and viscous coefficient
//! `c` stably for `dt < (2 / omega) (sqrt(1 + zeta^2) - zeta)`, `omega = sqrt(k / m)`,
//! `zeta = c / (2 sqrt(k m))` (the central-difference limit with damping; for `c = 0` it is
//! `2 / omega`). The step reported here is `(sqrt(1 + zeta^2) - zeta) / omega`, half of that
//! limit, so that `safety = 1` keeps a factor of 2 and `zeta = 0` gives the paper's
//! `beta sqrt(m / k)`. Heavy damping matters: with `zeta >> 1` the limit is `2 m / c`, far
//! below `2 / omega`.
//!
//! The oscillators:
//! - each free grain against its stiffest contact: `m_eff` half the smallest of its mass and
//!   `I_i / r_i^2` (`r_i` the farthest node's distance from principal axis `i`: a force at a node
//!   turning the grain about that axis sees that inertia; for a slender grain the axis along it
//!   has a small `I_i` but a small lever too), `k` and `c` from the
//!   contact law ([`ContactLaw::stiffness`]: a patch of nodes for the node laws, Hertz for
//!   spheres), given the largest patch and penetration of the initial state;
//! - each free deformable grain's modes: `omega^2 = omega_max^2 + k_contact r^2 / lambda_min(M)`,
//!   with `omega_max` the largest root of `K_t v = omega^2 M v` (`K_t` the internal tangent at
//!   its stiffest, [`crate::modal::ModalShape::stiffest`]) and `r^2 = sum_a max_k
//!   |Phi_a(x0_k)|^2` (a contact acting through the modes' largest node displacement); the
//!   damping rate `c / m = (lambda_max(C) + c_contact r^2) / lambda_min(M)` bounds that of every
//!   mode, so `zeta = (c / m) / (2 omega)`.
//!
//! A scene whose contacts stiffen beyond these estimates (deeper overlaps, larger patches) can
//! still be unstable: the run's energy check stops it with a message (dem-run's run loop).

use std::sync::Arc;

use nalgebra::DMatrix;

use nalgebra::Matrix3;

use crate::body::{Body, Shape, largest_radius, smallest_radius};
use crate::cell::Cell;
use crate::error::KeyError;
use crate::law::ContactLaw;
use crate::modal::largest_frequency;
use crate::wall::Wall;

/// `(sqrt(1 + zeta^2) - zeta) / omega` for mass `m`, stiffness `k`, viscous coefficient `c`
/// (infinite when `k = 0` and `c = 0`).
pub fn oscillator_step(m: f64, k: f64, c: f64) -> f64 {
    if k <= 0.0 {
        return if c > 0.0 { m / c } else { f64::INFINITY };
    }
    let omega = (k / m).sqrt();
    let zeta = c / (2.0 * (k * m).sqrt());
    // (sqrt(1 + z^2) - z) = 1 / (sqrt(1 + z^2) + z), without cancellation.
    1.0 / (omega * ((1.0 + zeta * zeta).sqrt() + zeta))
}

fn eigen_range(m: &DMatrix<f64>) -> (f64, f64) {
    let e = m.clone().symmetric_eigenvalues();
    let lo = e.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = e.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

/// The smallest step of the module docs over the free grains of a scene.
pub fn critical_step(
    shapes: &[Arc<Shape>],
    bodies: &[Body],
    law: &dyn ContactLaw,
    patch: f64,
    overlap: f64,
) -> f64 {
    let mut dt = f64::INFINITY;
    for b in bodies.iter().filter(|b| b.is_free()) {
        let s = &shapes[b.shape];
        let m_eff = 0.5
            * (0..3)
                .map(|i| s.moments[i] / (s.axis_reach[i] * s.axis_reach[i]))
                .fold(s.mass, f64::min);
        let (k, c) = law.stiffness(s, patch, overlap);
        dt = dt.min(oscillator_step(m_eff, k, c));
        if let (Some(m), Some(modal)) = (&b.modes, &s.modal) {
            let reach2: f64 = modal
                .paths
                .modes
                .iter()
                .map(|p| p.largest_node_tangent().powi(2))
                .sum();
            let mass = eigen_range(&modal.mass).0;
            let internal = largest_frequency(&modal.mass, &modal.stiffest(&m.eps));
            let omega2 = internal * internal + k * reach2 / mass;
            let damping = modal.damping_matrix(&m.damping, &m.eps);
            let rate = (eigen_range(&damping).1.max(0.0) + c * reach2) / mass;
            // An oscillator of unit mass with these omega^2 and damping rate.
            dt = dt.min(oscillator_step(1.0, omega2, rate));
        }
    }
    dt
}

/// The most a wall, or a deforming cell between two grains, may move in one step, in radii of
/// the smallest grain ([`check_wall_steps`]).
pub const WALL_STEP: f64 = 0.1;

/// Refuses a wall that moves a good part of a grain per step at the step `dt`: it overruns
/// its contacts, and the grains meet it deep inside, with forces of no physical meaning.
/// The same for a deforming periodic cell, whose velocity gradient `L` moves two grains in
/// contact, their centres `l` apart, by `L l dt` per step relative to each other
/// (crate::cell: the grains follow the affine field, the images the cell): at most
/// `|L| 2 r_max dt`, `|L|` the largest singular value of `L` (its largest stretch), over the
/// gradients its servo may set ([`Cell::extreme_gradients`]). A cell held below this also
/// keeps `det(I + L dt) > 0`, so it never turns inside out (`|L dt| < 1`). The error is the
/// scene key (`walls[i].motion`, `walls[i].servo.max_speed`, `cell.velocity_gradient`,
/// `cell.servo.max_rate`) and the reason.
pub fn check_wall_steps(
    shapes: &[Arc<Shape>],
    walls: &[Wall],
    cell: Option<&Cell>,
    dt: f64,
) -> Result<(), KeyError> {
    let smallest = smallest_radius(shapes);
    for (w, wall) in walls.iter().enumerate() {
        let (speed, key) = match (&wall.motion, &wall.servo) {
            (Some(m), _) => (m.largest_speed(), "motion"),
            (None, Some(s)) => (s.max_speed, "servo.max_speed"),
            (None, None) => (0.0, ""),
        };
        if speed * dt > WALL_STEP * smallest {
            return Err(KeyError::new(
                format!("walls[{w}].{key}"),
                format!(
                    "it moves {:e} per step (speed {speed:e}, dt {:e}), more than {WALL_STEP} of the smallest grain's radius {smallest:e}: lower its speed or the step",
                    speed * dt,
                    dt
                ),
            ));
        }
    }
    let Some(cell) = cell else {
        return Ok(());
    };
    // The largest singular value, from L scaled to at most 1 (it is linear in the scale).
    let stretch = |l: &Matrix3<f64>| {
        let scale = l.amax();
        if scale == 0.0 {
            return 0.0;
        }
        scale * (l / scale).svd(false, false).singular_values.max()
    };
    let apart = 2.0 * largest_radius(shapes);
    let fastest = (cell.extreme_gradients().into_iter())
        .map(|l| (stretch(&l), l))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .expect("one gradient at least");
    let moved = fastest.0 * apart * dt;
    if moved <= WALL_STEP * smallest {
        return Ok(());
    }
    let prescribed = stretch(&cell.loading.velocity_gradient) * apart * dt;
    let key = if prescribed > WALL_STEP * smallest {
        "cell.velocity_gradient"
    } else {
        "cell.servo.max_rate"
    };
    // Over the step the cell is (I + s L dt) H, s from 0 to 1: it goes flat where
    // det(I + s L dt) = 0, at a real eigenvalue of L dt of -1 or less (det(I + L dt) <= 0
    // is one case; two such eigenvalues keep it positive).
    let flat = (fastest.1 * dt)
        .complex_eigenvalues()
        .iter()
        .filter(|e| e.im == 0.0 && e.re <= -1.0)
        .map(|e| e.re)
        .fold(f64::INFINITY, f64::min);
    let inverted = if flat.is_finite() {
        format!(
            " (L dt has the eigenvalue {flat:e} <= -1: the cell goes flat within the step, and inside out past it; det(I + L dt) = {:e})",
            (Matrix3::identity() + fastest.1 * dt).determinant()
        )
    } else {
        String::new()
    };
    Err(KeyError::new(
        key.into(),
        format!(
            "it moves grains in contact, up to {apart:e} apart (twice the largest bounding radius), by up to {moved:e} per step relative to each other (L's largest stretch {:e}, dt {:e}), more than {WALL_STEP} of the smallest grain's radius {smallest:e}{inverted}: lower the rate or the step",
            fastest.0, dt
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_step_is_one_over_omega_undamped_and_m_over_c_overdamped() {
        assert!((oscillator_step(2.0, 8.0, 0.0) - 0.5).abs() < 1e-15);
        // zeta = 100: (sqrt(1 + z^2) - z) / omega -> 1 / (2 z omega) = m / c.
        let (m, k): (f64, f64) = (2.0, 8.0);
        let c = 100.0 * 2.0 * (k * m).sqrt();
        assert!((oscillator_step(m, k, c) / (m / c) - 1.0).abs() < 1e-4);
        assert_eq!(oscillator_step(1.0, 0.0, 0.0), f64::INFINITY);
    }
}
