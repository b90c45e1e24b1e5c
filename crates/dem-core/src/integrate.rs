//! The integrator (docs/physics.md section 3): velocity Verlet for the free grains, split in the
//! half steps around the force evaluation, and the prescribed grains' motion.
//!
//! - [`first_half`]: half kick (`v += F/m dt/2`, the body-frame angular momentum, the modal
//!   rates explicitly) and drift (translation, the exact rotation splitting of `drift`, the
//!   amplitudes) of free grains; prescribed grains moved to the new time with a constant spin;
//! - [`second_half`]: the second half kick (the modal rates implicit in the damping).
//!
//! Held degrees of freedom (`hold`) keep their values: their components of the kick are skipped.

use std::sync::Arc;

use nalgebra::{UnitQuaternion, Vector3};
use rayon::prelude::*;

use crate::body::{Body, Drive, Shape};

/// Below this many bodies, loops over them run on the calling thread: handing a few microseconds
/// of work to rayon costs more than it saves. Results do not depend on it.
pub(crate) const PARALLEL_BODIES: usize = 64;

/// The first half of a step `dt` ending at time `t`: half kick and drift of free grains (and
/// their amplitudes); prescribed grains follow their motion with a constant spin.
pub fn first_half(bodies: &mut [Body], shapes: &[Arc<Shape>], t: f64, dt: f64) {
    for_each_body(bodies, |b| match &b.drive {
        Drive::Free | Drive::Held { .. } => {
            kick(b, &shapes[b.shape], 0.5 * dt, false);
            drift(b, &shapes[b.shape], dt);
        }
        Drive::Prescribed { origin, motion } => {
            let x = Vector3::from(*origin) + Vector3::from(motion.displacement(t));
            b.velocity = (x - b.position) / dt;
            b.position = x;
            let spin = b.spin();
            b.orientation = UnitQuaternion::from_scaled_axis(spin * dt) * b.orientation;
            b.angular_velocity = b.orientation.inverse_transform_vector(&spin);
        }
    });
}

/// The second half kick of free grains and their amplitudes, with the forces at the step's end.
pub fn second_half(bodies: &mut [Body], shapes: &[Arc<Shape>], dt: f64) {
    for_each_body(bodies, |b| {
        if b.is_free() {
            kick(b, &shapes[b.shape], 0.5 * dt, true);
        }
    });
}

fn for_each_body(bodies: &mut [Body], f: impl Fn(&mut Body) + Sync + Send) {
    if bodies.len() >= PARALLEL_BODIES {
        bodies.par_iter_mut().for_each(f);
    } else {
        bodies.iter_mut().for_each(f);
    }
}

/// Half a kick: `v += F/m h`, the body-frame angular momentum `L += R^T tau h` (the components a
/// grain holds excepted), and the rates
/// (the first half explicit, the second implicit in the damping: [`crate::modal::Modes::kick_implicit`]).
fn kick(b: &mut Body, s: &Shape, h: f64, second: bool) {
    let (translation, rotation) = match b.drive {
        Drive::Held {
            translation,
            rotation,
        } => (translation, rotation),
        _ => ([false; 3], false),
    };
    for k in (0..3).filter(|&k| !translation[k]) {
        b.velocity[k] += b.force[k] * (h / s.mass);
    }
    if !rotation {
        let torque = b.orientation.inverse_transform_vector(&b.torque);
        for k in 0..3 {
            b.angular_velocity[k] += torque[k] * h / s.moments[k];
        }
    }
    if let (Some(m), Some(modal)) = (&mut b.modes, &s.modal) {
        if second {
            m.kick_implicit(modal, h);
        } else {
            m.kick_explicit(modal, h);
        }
    }
}

/// The drift: `X += v dt`, `eps += eps' dt`, and the torque-free rotation over `dt` by the symmetric splitting of
/// Dullweber, Leimkuhler and McLachlan (J. Chem. Phys. 107, 1997): exact rotations about the
/// body axes 1, 2, 3, 2, 1 for `dt/2, dt/2, dt, dt/2, dt/2`. Each sub-rotation about axis `k`
/// turns the body by `theta = omega_k h` and the body-frame angular momentum by `-theta`, so the
/// scheme is symplectic and time-reversible, keeps `|L|` and the kinetic energy of each
/// sub-flow exactly, and includes the gyroscopic term of Euler's equations.
fn drift(b: &mut Body, s: &Shape, dt: f64) {
    b.position += b.velocity * dt;
    if let Some(m) = &mut b.modes {
        m.drift(dt);
    }
    let i = s.moments;
    let mut l = Vector3::new(
        i[0] * b.angular_velocity[0],
        i[1] * b.angular_velocity[1],
        i[2] * b.angular_velocity[2],
    );
    // The quaternion's components `(x, y, z, w)`.
    let mut q = b.orientation.into_inner().coords;
    for (k, h) in [(0, 0.5), (1, 0.5), (2, 1.0), (1, 0.5), (0, 0.5)] {
        let theta = l[k] / i[k] * h * dt;
        // The sub-rotation `r = (cos(theta/2), sin(theta/2) e_k)` on the two axes `ka`, `kb`
        // across `k` (cyclic), without a general quaternion's products: `L -> R_k(-theta) L`
        // with `cos(theta) = 1 - 2 s^2` and `sin(theta) = 2 s c`, and `q -> q r`, whose vector
        // part gains `s (w e_k + v x e_k)`, `v x e_k = (v_kb, -v_ka)` on `(ka, kb)`.
        let (s, c) = (0.5 * theta).sin_cos();
        let (ka, kb) = ((k + 1) % 3, (k + 2) % 3);
        let (cos, sin) = (1.0 - 2.0 * s * s, 2.0 * s * c);
        (l[ka], l[kb]) = (cos * l[ka] + sin * l[kb], cos * l[kb] - sin * l[ka]);
        let (w, vk, va, vb) = (q[3], q[k], q[ka], q[kb]);
        q[3] = c * w - s * vk;
        q[k] = c * vk + s * w;
        q[ka] = c * va + s * vb;
        q[kb] = c * vb - s * va;
    }
    b.orientation = UnitQuaternion::new_normalize(nalgebra::Quaternion::from(q));
    b.angular_velocity = Vector3::new(l[0] / i[0], l[1] / i[1], l[2] / i[2]);
}
