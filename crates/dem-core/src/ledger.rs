//! The energy ledger (docs/physics.md section 3, "Energy ledger"): the energies of a state, and
//! what entered and left the grains since step 0, so that a run can show its energy balance
//! closes (and stop when it cannot: [`Ledger::runaway`]).

use std::sync::Arc;

use nalgebra::Vector3;
use serde::{Deserialize, Serialize};

use crate::body::{Body, Shape};
use crate::cell::Cell;
use crate::wall::Wall;

/// Energies of the current state (docs/physics.md section 3, "Energy ledger").
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Energies {
    /// `sum 1/2 m v^2` over free grains.
    pub translational: f64,
    /// `sum 1/2 omega . I omega` over free grains.
    pub rotational: f64,
    /// `sum 1/2 eps'^T M eps'` over free grains.
    pub modal_kinetic: f64,
    /// `sum U(eps)` over grains whose modes are on.
    pub modal_elastic: f64,
    /// `- sum m g . X` over free grains.
    pub gravity: f64,
    /// Elastic energy stored in the contacts at the last force evaluation.
    pub contact: f64,
}

impl Energies {
    /// Kinetic plus potential.
    pub fn total(&self) -> f64 {
        self.translational
            + self.rotational
            + self.modal_kinetic
            + self.modal_elastic
            + self.gravity
            + self.contact
    }

    /// The sum of the terms' magnitudes (the scale of the round-off in the total).
    fn magnitude(&self) -> f64 {
        self.translational
            + self.rotational
            + self.modal_kinetic
            + self.modal_elastic.abs()
            + self.gravity.abs()
            + self.contact
    }
}

/// The energy ledger: what entered and left the grains since step 0. The residual
/// `(total - initial) - work + dissipated` is zero for an exact integration; velocity Verlet
/// leaves an error of order `dt^2` per unit time (more where level sets kink).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Ledger {
    /// Total energy at step 0.
    pub initial: f64,
    /// Gravity's potential at step 0.
    pub initial_gravity: f64,
    /// Work done on the grains by walls and prescribed grains (trapezoid rule over each
    /// step's displacement).
    pub work: f64,
    /// Dissipated by Cundall's local damping: `alpha sum |F_i| |v_i| dt`.
    pub local: f64,
    /// Dissipated by normal viscous damping: `c_n v_n^2 dt` per node.
    pub viscous: f64,
    /// Dissipated by modal damping: `eps'^T C eps' dt`.
    pub modal: f64,
    /// Dissipated by friction: the work of the slips the Coulomb cap makes (crate::law::node).
    pub friction: f64,
}

impl Ledger {
    /// Everything dissipated.
    pub fn dissipated(&self) -> f64 {
        self.local + self.viscous + self.modal + self.friction
    }

    /// `(total - initial) - work + dissipated`.
    pub fn residual(&self, e: &Energies) -> f64 {
        e.total() - self.initial - self.work + self.dissipated()
    }

    /// Whether the energy grew beyond what the run was given: a residual larger than the
    /// initial kinetic and elastic energy, the work of the boundaries and the gravity released
    /// together ([`Ledger::given`]; an unstable integration, not a physical state). The
    /// dissipation is no supply: a physical run dissipates at most what it was given, while an
    /// unstable one whose local damping dissipates the energy it makes about as fast as it
    /// grows counted that heat as supply and ran on (a 200-grain compression, a residual 9.5
    /// times the work done).
    pub fn runaway(&self, e: &Energies) -> bool {
        self.residual(e) > self.given(e) + 1e-6 * e.magnitude()
    }

    /// What the run was given: its initial energy, the boundaries' work and the gravity
    /// released.
    pub fn given(&self, e: &Energies) -> f64 {
        (self.initial - self.initial_gravity).abs()
            + self.work.abs()
            + (e.gravity - self.initial_gravity).abs()
    }

    /// The ledger's scale, what the run was given and what it dissipated: the denominator of
    /// a run's ledger error.
    pub fn supplied(&self, e: &Energies) -> f64 {
        self.given(e) + self.dissipated()
    }
}

/// Dissipation at one evaluation: powers, and the friction loss of the step.
#[derive(Debug, Clone, Copy, Default)]
pub struct Dissipation {
    /// Power of the viscous contact forces.
    pub viscous: f64,
    /// Power of the local damping.
    pub local: f64,
    /// Spring energy the Coulomb caps removed in the step.
    pub friction: f64,
}

/// The energies of `bodies` (of `shapes`) under `gravity`, with `contact` the elastic energy
/// of the last force evaluation; in a periodic `cell`, gravity's at the grains' unwrapped
/// positions (a grain wrapped across a face keeps its potential energy).
pub fn energies(
    bodies: &[Body],
    shapes: &[Arc<Shape>],
    gravity: &Vector3<f64>,
    contact: f64,
    cell: Option<&Cell>,
) -> Energies {
    let mut e = Energies {
        contact,
        ..Energies::default()
    };
    for b in bodies {
        let s = &shapes[b.shape];
        if let (Some(m), Some(modal)) = (&b.modes, &s.modal) {
            e.modal_elastic += modal.energy(&m.eps);
            if b.is_free() {
                e.modal_kinetic += m.kinetic(modal);
            }
        }
        if !b.is_free() {
            continue;
        }
        e.translational += 0.5 * s.mass * b.velocity.norm_squared();
        e.rotational += 0.5
            * (0..3)
                .map(|k| s.moments[k] * b.angular_velocity[k].powi(2))
                .sum::<f64>();
        let unwrapped = cell.map_or(b.position, |c| b.position + c.shift(b.image));
        e.gravity -= s.mass * gravity.dot(&unwrapped);
    }
    e
}

/// Power of the modal damping at the current full step, `sum eps'^T C eps'` over free grains.
pub fn modal_damping_power(bodies: &[Body]) -> f64 {
    bodies
        .iter()
        .filter(|b| b.is_free())
        .filter_map(|b| b.modes.as_ref())
        .map(|m| m.damping_power())
        .sum()
}

/// A boundary's load: its position (a wall's displacement), the force and the torque the grains
/// exert on it.
pub type Load = [Vector3<f64>; 3];

/// The loads of the boundaries: each wall's displacement and the force on it, each prescribed
/// grain's position, contact force and torque (its weight taken out).
pub fn boundary_loads(
    bodies: &[Body],
    walls: &[Wall],
    shapes: &[Arc<Shape>],
    gravity: &Vector3<f64>,
) -> Vec<Load> {
    let walls = walls
        .iter()
        .map(|w| [w.displacement, w.force, Vector3::zeros()]);
    let grains = bodies.iter().filter(|b| !b.is_free()).map(|b| {
        let weight = gravity * shapes[b.shape].mass;
        [b.position, b.force - weight, b.torque]
    });
    walls.chain(grains).collect()
}

impl Ledger {
    /// Books one step `dt`: the boundaries' work on the grains, `-(F_0 + F_1)/2 . dx` for a
    /// wall or prescribed grain that felt force `F` from the grains and moved by `dx` (and
    /// `-(tau_0 + tau_1)/2 . omega dt` for a spinning grain; `spins`: the prescribed grains',
    /// after the walls' zeros), from the loads `before` and `after` the step
    /// ([`boundary_loads`]); dissipation at the powers of the step's evaluation, the modal
    /// damping's by the trapezoid rule over the full steps (what its implicit half kick
    /// integrates: `modal_power` before and after).
    pub fn book(
        &mut self,
        (before, after): (&[Load], &[Load]),
        spins: impl Iterator<Item = Vector3<f64>>,
        dissipation: &Dissipation,
        modal_power: (f64, f64),
        dt: f64,
    ) {
        let mut work = 0.0;
        for ((b, a), spin) in before.iter().zip(after).zip(spins) {
            work -= 0.5 * (b[1] + a[1]).dot(&(a[0] - b[0]));
            work -= 0.5 * (b[2] + a[2]).dot(&(spin * dt));
        }
        self.work += work;
        self.viscous += dissipation.viscous * dt;
        self.local += dissipation.local * dt;
        self.modal += 0.5 * (modal_power.0 + modal_power.1) * dt;
        self.friction += dissipation.friction;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A residual beyond what the run was given is a runaway however much it dissipated; one
    /// within it is not.
    #[test]
    fn dissipation_does_not_excuse_a_runaway() {
        let ledger = Ledger {
            initial: 1.0,
            work: 2.0,
            local: 10.0,
            ..Ledger::default()
        };
        // total - initial - work + dissipated = residual.
        let at = |residual: f64| Energies {
            translational: residual + 1.0 + 2.0 - 10.0,
            ..Energies::default()
        };
        assert!(ledger.runaway(&at(3.5)));
        assert!(!ledger.runaway(&at(2.5)));
        assert_eq!(ledger.supplied(&at(0.0)), 13.0);
    }
}
