//! The simulation and its step (docs/physics.md sections 3, 4 and 6), in the manner of rapier's
//! `PhysicsPipeline::step`: named stages, each a function taking what it reads and writes, the
//! data flow in one screen ([`Simulation::step`]):
//!
//! 0. [`deform_cell`]: a periodic cell's rate for the step, and the change of the affine
//!    velocity field given to the grains (crate::cell);
//! 1. [`integrate::first_half`]: half kick and drift of the free grains (velocity Verlet:
//!    translations, rotations by an exact splitting of Euler's equations, amplitudes),
//!    prescribed grains moved to the new time;
//! 2. `move_walls`; the cell's vectors moved; [`wrap`]: free grains that left a periodic cell
//!    back into it, their pairs' image shifts corrected ([`crate::cell`]);
//! 3. [`views`]: one [`View`] of each body (pose, current nodes, reach, level-set queries);
//! 4. [`broad_phase`]: the candidate pairs, on the views' reach, from a neighbour list kept
//!    over the steps ([`crate::neighbours`]);
//! 5. [`narrow_phase`]: the contact law per pair with its history (pairs in parallel);
//! 6. `reduce`: the pair forces summed onto grains, walls and modes in pair order (the same
//!    bits for any thread count; in a decomposed run, with the sides of pairs other processes
//!    computed, merged in key order: the same bits for any process count);
//! 7. `body_forces`: gravity first, local damping, the modal internal and damping forces;
//! 8. [`integrate::second_half`]: the second half kick;
//! 9. the ledger ([`Ledger::book`]): work of walls, prescribed grains and the cell, dissipation.
//!
//! The wall-clock time of each stage is counted ([`Timings`], in summary.json).
//!
//! Elsewhere: the scene-to-world build (dem-run's `build`), the integrator
//! ([`crate::integrate`]), the energy ledger ([`crate::ledger`]), checkpoints
//! ([`crate::state`]).

use std::sync::Arc;
use std::time::Instant;

use nalgebra::Vector3;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::body::NodeRole;
use crate::body::{Body, Shape};
use crate::cell::{Cell, deform_cell, reshift, wrap};
use crate::domain::{Holding, Parcels, Processes, WallTerm};
use crate::integrate;
use crate::law::{
    Against, ContactLaw, Histories, NodeRecord, Pair, PairHistory, PairKey, PairOutcome, Partner,
};
use crate::ledger::{self, Dissipation, Energies, Ledger};
use crate::levelset::LevelSetFault;
use crate::measure::ContactSums;
use crate::modal::{Excursion, beyond, refill};
use crate::neighbours::NeighbourList;
use crate::path::PerMode;
use crate::timestep;
use crate::view::View;
use crate::wall::{ServoFault, Wall};

/// Wall-clock seconds spent in each stage of the step (module docs) since the run, or its
/// restart, began: where a run's time goes (rapier's counters). Not part of the state: a
/// restart counts from zero.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Timings {
    /// Both halves of the integration and the walls' motion (stages 1, 2, 8).
    pub integrate: f64,
    /// The bodies' views (stage 3).
    pub views: f64,
    /// The broad phase (stage 4).
    pub broad: f64,
    /// The narrow phase and the contact laws (stage 5).
    pub narrow: f64,
    /// The reduction of pair forces (stage 6).
    pub reduce: f64,
    /// Gravity, local damping and the modal forces (stage 7).
    pub body_forces: f64,
    /// The energy ledger (stage 9).
    pub ledger: f64,
    /// Grains moved to the processes that own them now (a decomposed run, crate::domain).
    #[serde(default)]
    pub migrate: f64,
    /// The ghosts' exchange (a decomposed run).
    #[serde(default)]
    pub ghosts: f64,
    /// Waiting for the slowest process before the exchanges (a decomposed run's imbalance).
    #[serde(default)]
    pub wait: f64,
    /// The sums over processes after the reduction (the walls' forces and the sample's sums),
    /// waiting for the slowest process's narrow phase included.
    #[serde(default)]
    pub sums: f64,
}

/// Seconds since `clock`, which restarts.
fn lap(clock: &mut Instant) -> f64 {
    let now = Instant::now();
    let seconds = (now - *clock).as_secs_f64();
    *clock = now;
    seconds
}

/// Below this many bodies, the broad phase lists their pairs on the calling thread: a body's
/// list costs about 100 ns, less than the lists' transfer between threads (216 bodies on 2
/// threads: 70 us per step in parallel, 33 serially; docs/performance.md, "Threads kept awake
/// through the steps"). The periodic bench's 4,000 bodies keep the parallel lists they were
/// measured with; between the two the threshold is not measured. Results do not depend on it.
const PARALLEL_PAIR_LISTS: usize = 2048;

/// Below this many pairs, the narrow phase runs on the calling thread (see
/// [`integrate::PARALLEL_BODIES`]). Results do not depend on it.
const PARALLEL_PAIRS: usize = 16;

/// A simulation: its world, parameters, the last evaluation, running totals and its share of a
/// decomposed run, each a part the step's stages take as arguments.
pub struct Simulation {
    /// The world and its clock.
    pub world: World,
    /// The parameters.
    pub parameters: Parameters,
    /// The last evaluation.
    pub last: Evaluation,
    /// Running totals.
    pub totals: Totals,
    /// This process's share of the grains.
    pub partition: Partition,
}

/// What a simulation is made of, and its clock: the shapes and grains, walls and periodic cell as
/// placed, the contact histories, the step and the time. A scene's build gives one at step 0
/// (positions in the cell, amplitudes and node roles set, no histories).
pub struct World {
    /// Shapes, one per bundle and scale.
    pub shapes: Vec<Arc<Shape>>,
    /// What each shape was made from (one per shape).
    pub sources: Vec<crate::body::ShapeSource>,
    /// The grains, in the scene's order (their global ids).
    pub bodies: Vec<Body>,
    /// The walls.
    pub walls: Vec<Wall>,
    /// The periodic cell, if any.
    pub cell: Option<Cell>,
    /// Shear histories by pair.
    pub histories: Histories,
    /// Each grain's own node role, by global id.
    pub node_roles: Vec<Option<NodeRole>>,
    /// Steps taken.
    pub step: u64,
    /// Time.
    pub time: f64,
}

/// The physical parameters of a simulation that are not its grains' or walls'.
pub struct Parameters {
    /// The contact law.
    pub law: Arc<dyn ContactLaw>,
    /// Cundall's local damping fraction, in `[0, 1)`.
    pub local_damping: f64,
    /// Gravity (acceleration, global frame).
    pub gravity: Vector3<f64>,
    /// Time step.
    pub dt: f64,
    /// The neighbour list's skin (a length, `>= 0`; [`crate::neighbours`]): the list is kept
    /// until a grain has moved by half of it. Zero searches at every step. It changes the
    /// cost of a step, never its result.
    pub skin: f64,
}

/// What the last force evaluation found (stages 3 to 7), and the faults of the last step.
#[derive(Default)]
pub struct Evaluation {
    /// Node contacts at the last evaluation.
    pub contacts: usize,
    /// Contact elastic energy at the last evaluation.
    pub contact_energy: f64,
    /// Node forces of the last evaluation, if they were asked for.
    pub records: Vec<NodeRecord>,
    /// Dissipation of the last evaluation.
    pub dissipation: Dissipation,
    /// The largest contact patch and penetration of the last evaluation.
    pub largest_contact: (f64, f64),
    /// The last evaluation's sums for the sample measures ([`crate::measure`]).
    pub sample_sums: ContactSums,
    /// A level-set query of the last evaluation that could not be answered (the run stops).
    pub fault: Option<(usize, LevelSetFault)>,
    /// A servo wall that cannot reach its target (the run stops): the first found, kept until
    /// taken.
    pub servo_fault: Option<ServoFault>,
    /// The largest halo radius of the last evaluation's views ([`search_radii`]; a deformable
    /// grain's grows with its amplitudes), over every process: what a periodic cell's width
    /// is checked against during a run, and what ghosts are sent out to.
    pub largest_reach: f64,
    /// The broad phase's neighbour list, kept from one evaluation to the next.
    pub neighbours: NeighbourList,
}

/// Running totals since the run began: the energy ledger, counters, the excursions beyond the
/// grains' models, the stages' wall-clock time.
#[derive(Default)]
pub struct Totals {
    /// The energy ledger.
    pub ledger: Ledger,
    /// Node tests since the start (see [`PairOutcome::node_tests`]).
    pub node_tests: u64,
    /// Node queries since the start (see [`PairOutcome::node_queries`]).
    pub node_queries: u64,
    /// Node candidates since the start (see [`PairOutcome::node_candidates`]).
    pub node_candidates: u64,
    /// The amplitudes that went beyond a range their grain's model rests on, in the order they
    /// did (the run reports each at the step it happens, and summary.json lists them).
    pub excursions: Vec<Excursion>,
    /// Wall-clock time spent in each stage since the run (or restart) began.
    pub timings: Timings,
}

/// Which grains this process holds, in a run decomposed over processes (crate::domain); in one
/// process, every grain, owned.
pub struct Partition {
    /// The global id (index in the scene's order) of each body held: pair keys, histories,
    /// node roles, excursions and faults are in global ids.
    pub ids: Vec<u32>,
    /// How many of the bodies held this process owns (integrates, and counts in sums).
    pub owned: usize,
    /// Each grain's shape, by global id.
    pub shape_ids: Vec<usize>,
    /// The other processes of a decomposed run (crate::domain), none in one process.
    pub processes: Option<Box<dyn Processes>>,
    /// The reach the last ghost exchange assumed (crate::domain): a larger one stops the run.
    pub ghost_reach: f64,
}

impl Partition {
    /// Whether this is the first process (or the only one): the one that writes the run's
    /// files and books the walls' and the cell's work.
    pub fn is_first(&self) -> bool {
        self.processes.as_ref().is_none_or(|p| p.rank() == 0)
    }

    /// Whether `flag` holds in any process (in this one, for a run in one process): what
    /// every process must decide alike (a stop, an error, a neighbour search).
    pub fn anywhere(&self, flag: bool) -> bool {
        match &self.processes {
            Some(p) => p.max(if flag { 1.0 } else { 0.0 }) > 0.0,
            None => flag,
        }
    }

    /// How many of `walls` this process books the work of: all in the first, none elsewhere.
    fn booked_walls(&self, walls: usize) -> usize {
        if self.is_first() { walls } else { 0 }
    }
}

/// How far beyond the grains' largest reach of the last evaluation the ghosts are sent: a
/// deformable grain's reach grows with its amplitudes, by far less than this in a step.
pub const GHOST_MARGIN: f64 = 1.1;

impl Simulation {
    /// A simulation of `world` under `parameters` in one process, its forces evaluated (node
    /// records kept for a first output; no time passes, so no shear increment and no
    /// dissipation) and its energy ledger started from its energies. The caller may set
    /// `parameters.dt` after, for example to a fraction of [`Simulation::critical_step`].
    pub fn new(world: World, parameters: Parameters) -> Simulation {
        let n = world.bodies.len();
        let partition = Partition {
            ids: (0..n as u32).collect(),
            owned: n,
            shape_ids: world.bodies.iter().map(|b| b.shape).collect(),
            processes: None,
            ghost_reach: 0.0,
        };
        let mut sim = Simulation {
            world,
            parameters,
            last: Evaluation::default(),
            totals: Totals::default(),
            partition,
        };
        sim.evaluate_forces(true, 0.0, &mut Instant::now());
        for b in &mut sim.world.bodies {
            if let (Some(m), Some(modal)) = (&mut b.modes, &sim.world.shapes[b.shape].modal) {
                m.set_damping_force(modal);
            }
        }
        let e = sim.energies();
        sim.totals.ledger = Ledger {
            initial: e.total(),
            initial_gravity: e.gravity,
            ..Ledger::default()
        };
        sim
    }

    /// `n` steps without node forces kept, the pool's other workers busy through them
    /// ([`crate::threads::kept_busy`]): the loop of a caller that only steps. Call it where no
    /// parallel work is under way (in [`rayon::ThreadPool::install`], outside parallel loops).
    pub fn steps(&mut self, n: u64) {
        crate::threads::kept_busy(|| {
            for _ in 0..n {
                self.step(false);
            }
        });
    }

    /// One step of velocity Verlet (kick, drift, forces, kick); `record` keeps node forces.
    pub fn step(&mut self, record: bool) {
        let dt = self.parameters.dt;
        let t = self.world.time + dt;
        let mut clock = Instant::now();
        let owned = self.partition.owned;
        let mut before = self.boundary_loads();
        // The prescribed grains' loads go with them if they migrate (crate::domain::Holding).
        let mut grain_loads: Vec<(u32, ledger::Load)> = (self.partition.ids[..owned].iter())
            .zip(&self.world.bodies)
            .filter(|(_, b)| !b.is_free())
            .map(|(&id, _)| id)
            .zip(before.drain(self.partition.booked_walls(self.world.walls.len())..))
            .collect();
        let modal_power = ledger::modal_damping_power(&self.world.bodies[..owned]);
        let images_before = self.world.cell.as_ref().map(|c| c.measured.images);
        self.totals.timings.ledger += lap(&mut clock);
        if let Some(cell) = &mut self.world.cell {
            self.totals.ledger.work += deform_cell(
                cell,
                &mut self.world.bodies[..owned],
                &self.world.shapes,
                dt,
            );
        }
        integrate::first_half(&mut self.world.bodies[..owned], &self.world.shapes, t, dt);
        let no_face = move_walls(&mut self.world.walls, t, dt);
        if self.last.servo_fault.is_none() {
            self.last.servo_fault = no_face.or_else(|| {
                crate::wall::driven_through(
                    &self.world.walls,
                    &self.world.bodies[..owned],
                    &self.partition.ids,
                )
            });
        }
        let mut remapped = Vec::new();
        if let Some(cell) = &mut self.world.cell {
            let step = cell.rate * dt;
            cell.vectors += step;
            // Gravity's potential is taken at the unwrapped position X + H image, which the
            // cell's motion moves: the cell's work.
            if self.parameters.gravity != Vector3::zeros() && step != nalgebra::Matrix3::zeros() {
                self.totals.ledger.work -= (self.world.bodies[..owned]
                    .iter()
                    .filter(|b| b.is_free()))
                .map(|b| {
                    let image = Vector3::from(b.image.map(f64::from));
                    self.world.shapes[b.shape].mass * self.parameters.gravity.dot(&(step * image))
                })
                .sum::<f64>();
            }
            let mut moved;
            (remapped, moved) = wrap(cell, &mut self.world.bodies[..owned], &self.partition.ids);
            if let Some(p) = &self.partition.processes {
                moved = p.all_wrapped(moved);
            }
            self.last.neighbours.wrapped(&moved);
            reshift(&mut self.world.histories, &moved);
        }
        self.totals.timings.integrate += lap(&mut clock);
        if let Some(p) = &mut self.partition.processes {
            let holding = Holding {
                bodies: &mut self.world.bodies,
                ids: &mut self.partition.ids,
                owned: &mut self.partition.owned,
                histories: &mut self.world.histories,
                remapped: &mut remapped,
                excursions: &mut self.totals.excursions,
                loads: &mut grain_loads,
                neighbours: &mut self.last.neighbours,
            };
            self.partition.ghost_reach = GHOST_MARGIN * self.last.largest_reach;
            // Ghosts for reaches grown by half the skin: the neighbour list's search holds
            // every partner the process's grains may meet while it is kept (crate::neighbours).
            let spent = p.exchange(
                holding,
                self.world.cell.as_ref(),
                self.partition.ghost_reach + 0.5 * self.parameters.skin,
            );
            self.totals.timings.wait += spent[0];
            self.totals.timings.migrate += spent[1];
            self.totals.timings.ghosts += spent[2];
            clock = Instant::now();
        }
        let owned = self.partition.owned;
        self.evaluate_forces(record, dt, &mut clock);
        integrate::second_half(&mut self.world.bodies[..owned], &self.world.shapes, dt);
        // The wraps' velocity changes `dv`, booked at the step's end velocities as velocity
        // Verlet's kinetic energy counts them: 1/2 m (|v|^2 - |v - dv|^2).
        for (id, dv) in remapped {
            let i = self.partition.ids[..owned]
                .binary_search(&id)
                .expect("a wrapped grain is owned by the process it migrated to");
            let b = &self.world.bodies[i];
            let v = b.velocity;
            self.totals.ledger.work += 0.5
                * self.world.shapes[b.shape].mass
                * (v.norm_squared() - (v - dv).norm_squared());
        }
        self.totals.timings.integrate += lap(&mut clock);
        grain_loads.sort_unstable_by_key(|(id, _)| *id);
        before.extend(grain_loads.into_iter().map(|(_, load)| load));
        let after = self.boundary_loads();
        let spins = (self.world.bodies[..owned].iter())
            .filter(|b| !b.is_free())
            .map(|b| b.spin());
        self.totals.ledger.book(
            (&before, &after),
            std::iter::repeat_n(
                Vector3::zeros(),
                self.partition.booked_walls(self.world.walls.len()),
            )
            .chain(spins),
            &self.last.dissipation,
            (
                modal_power,
                ledger::modal_damping_power(&self.world.bodies[..owned]),
            ),
            dt,
        );
        if let (Some(cell), Some(before), true) =
            (&self.world.cell, images_before, self.partition.is_first())
        {
            // The images' power -H' : sum F_b s^T, by the trapezoid rule over the step.
            let images = 0.5 * (before + cell.measured.images);
            self.totals.ledger.work -= cell.rate.component_mul(&images).sum() * dt;
        }
        self.totals.timings.ledger += lap(&mut clock);
        self.world.step += 1;
        self.world.time = t;
    }

    /// The loads of the walls and of the prescribed grains this process owns
    /// ([`ledger::boundary_loads`]); the walls' in the first process only, whose ledger books
    /// their work (each process books its own grains', and the ledger is their sum).
    fn boundary_loads(&self) -> Vec<ledger::Load> {
        ledger::boundary_loads(
            &self.world.bodies[..self.partition.owned],
            &self.world.walls[..self.partition.booked_walls(self.world.walls.len())],
            &self.world.shapes,
            &self.parameters.gravity,
        )
    }

    /// Stages 3 to 7 at the current positions (velocities are the half-step ones inside a
    /// step); shear displacements grow by `v_t dt`.
    pub(crate) fn evaluate_forces(&mut self, record: bool, dt: f64, clock: &mut Instant) {
        let Simulation {
            world,
            parameters,
            last,
            totals,
            partition,
        } = self;
        let old = std::mem::take(&mut world.histories);
        let views = views(&world.bodies, &world.shapes);
        let radii;
        (radii, last.largest_reach) = search_radii(&views, parameters.law.as_ref(), &world.shapes);
        if let Some(p) = &partition.processes {
            last.largest_reach = p.max(last.largest_reach);
        }
        totals.timings.views += lap(clock);
        let held = Held {
            bodies: &world.bodies,
            ids: &partition.ids,
            owned: partition.owned,
        };
        let pairs = broad_phase(
            &held,
            &radii,
            &world.walls,
            world.cell.as_ref(),
            (&mut last.neighbours, parameters.skin, &|flag| {
                partition.anywhere(flag)
            }),
        );
        totals.timings.broad += lap(clock);
        let contacts = Contacts {
            views: &views,
            cell: world.cell.as_ref(),
            walls: &world.walls,
            roles: &world.node_roles,
            law: parameters.law.as_ref(),
            owned: partition.owned,
            ids: &partition.ids,
        };
        let outcomes = narrow_phase(
            &contacts,
            &pairs,
            old,
            partition
                .processes
                .as_mut()
                .map(|p| p.as_mut() as &mut dyn Processes),
            record,
            dt,
        );
        // A ghost's view is queried by the pairs this process computes for it.
        last.fault = (views.iter().enumerate())
            .find_map(|(i, v)| v.fault().map(|f| (partition.ids[i] as usize, f.clone())));
        drop(views);
        totals.timings.narrow += lap(clock);
        // The forces on the ghosts, to their owners; theirs on the grains owned here.
        let theirs = match &mut partition.processes {
            Some(p) => {
                let mine = ghost_sides(&pairs, &outcomes, &partition.ids, partition.owned);
                let theirs = p.to_owners(mine);
                totals.timings.ghosts += lap(clock);
                theirs
            }
            None => Parcels::default(),
        };
        let sums = totals.timings.sums;
        let pairs = (&pairs[..], &theirs);
        reduce(world, parameters, partition, last, totals, pairs, outcomes);
        // The sums over processes are counted apart.
        totals.timings.reduce += lap(clock) - (totals.timings.sums - sums);
        body_forces(world, parameters, partition, last, totals);
        totals.timings.body_forces += lap(clock);
    }

    /// The automatic step before the safety factor (docs/physics.md section 6; [`timestep`]).
    pub fn critical_step(&self) -> f64 {
        let (patch, overlap) = self.last.largest_contact;
        timestep::critical_step(
            &self.world.shapes,
            &self.world.bodies[..self.partition.owned],
            self.parameters.law.as_ref(),
            patch,
            overlap,
        )
    }

    /// Whether every grain's position, orientation, velocities and amplitudes are finite
    /// numbers (a run whose step is too large for its contacts blows up to infinities and NaN).
    pub fn is_finite(&self) -> bool {
        self.world.bodies[..self.partition.owned]
            .iter()
            .all(Body::is_finite)
    }

    /// Energies of the current state.
    pub fn energies(&self) -> Energies {
        ledger::energies(
            &self.world.bodies[..self.partition.owned],
            &self.world.shapes,
            &self.parameters.gravity,
            self.last.contact_energy,
            self.world.cell.as_ref(),
        )
    }

    /// The energies and the energy ledger of the whole run: over every process, each of which
    /// holds its own grains' and pairs' share (the walls' and the cell's work in the first).
    pub fn run_energies(&self) -> (Energies, Ledger) {
        let ([], e, l) = self.run_checks([]);
        (e, l)
    }

    /// Whether each of `flags` holds in any process ([`Simulation::anywhere`]), with the run's
    /// energies and ledger ([`Simulation::run_energies`]), in one exchange between the
    /// processes: what a run checks after each step (each collective a step costs a few
    /// microseconds and a wait for the slowest process: docs/mpi.md, "Scaling").
    pub fn run_checks<const N: usize>(&self, flags: [bool; N]) -> ([bool; N], Energies, Ledger) {
        let (mut e, mut l) = (self.energies(), self.totals.ledger);
        let Some(p) = &self.partition.processes else {
            return (flags, e, l);
        };
        let mut fields = [
            &mut e.translational,
            &mut e.rotational,
            &mut e.modal_kinetic,
            &mut e.modal_elastic,
            &mut e.gravity,
            &mut e.contact,
            &mut l.initial,
            &mut l.initial_gravity,
            &mut l.work,
            &mut l.local,
            &mut l.viscous,
            &mut l.modal,
            &mut l.friction,
        ];
        // The flags as counts, exact in the sum.
        let mut x: Vec<f64> = (fields.iter().map(|f| **f))
            .chain(flags.map(f64::from))
            .collect();
        p.sum(&mut x);
        for (f, v) in fields.iter_mut().zip(&x) {
            **f = *v;
        }
        let counts = &x[fields.len()..];
        (std::array::from_fn(|k| counts[k] > 0.0), e, l)
    }

    /// Whether `flag` holds in any process ([`Partition::anywhere`]).
    pub fn anywhere(&self, flag: bool) -> bool {
        self.partition.anywhere(flag)
    }

    /// The shape of grain `id` (any grain, held here or not: the scene's).
    pub fn shape_of(&self, id: usize) -> usize {
        self.partition.shape_ids[id]
    }

    /// Total linear momentum of the free grains.
    pub fn momentum(&self) -> Vector3<f64> {
        self.world.bodies[..self.partition.owned]
            .iter()
            .filter(|b| b.is_free())
            .map(|b| b.velocity * self.world.shapes[b.shape].mass)
            .sum()
    }
}

/// Stage 6: gravity first, then the pair forces in pair order, onto grains, walls and the
/// grains' modes; the new histories. `pairs` are this process's pairs, whose first grain it
/// owns, with their `outcomes`, and the sides other processes computed of pairs whose second
/// grain it owns ([`ghost_sides`]), merged in key order: each grain's forces are summed in the
/// order of a run in one process. The sums over pairs (contacts, energies, dissipation, the
/// walls' forces and the sample's) count this process's pairs: each pair once over the
/// processes.
fn reduce(
    world: &mut World,
    parameters: &Parameters,
    partition: &Partition,
    last: &mut Evaluation,
    totals: &mut Totals,
    (pairs, theirs): (&[Candidate], &Parcels),
    mut outcomes: Vec<(PairOutcome, Option<PairHistory>)>,
) {
    let mut generalized: Vec<PerMode<f64>> = world
        .bodies
        .iter()
        .map(|b| smallvec::smallvec![0.0; b.modes.as_ref().map_or(0, |m| m.eps.len())])
        .collect();
    for b in &mut world.bodies {
        let m = world.shapes[b.shape].mass;
        b.force = parameters.gravity * m;
        b.torque = Vector3::zeros();
    }
    for w in &mut world.walls {
        w.force = Vector3::zeros();
        w.stiffness = 0.0;
    }
    // At most one a pair (the last step's were taken by the narrow phase).
    let mut histories = Histories::with_capacity(pairs.len());
    last.contacts = 0;
    last.contact_energy = 0.0;
    last.dissipation = Dissipation::default();
    last.largest_contact = (0.0, 0.0);
    last.records.clear();
    let add = |to: &mut PerMode<f64>, from: &[f64]| {
        for (t, f) in to.iter_mut().zip(from) {
            *t += f;
        }
    };
    let mut sums = ContactSums::default();
    let mut wall_terms: Vec<WallTerm> = Vec::new();
    let mut count = vec![0u32; world.bodies.len()];
    let mut from = TheirSides {
        parcels: theirs,
        next: 0,
        ids: &partition.ids[..partition.owned],
    };
    // By reference: an outcome is a few hundred bytes, and a move per pair was a copy
    // (docs/performance.md, "The reduction without copies").
    for ((key, [a, b]), (o, history)) in pairs.iter().zip(&mut outcomes) {
        from.add_before(
            Some(key),
            world,
            &mut generalized,
            &mut count,
            &mut last.records,
        );
        let (a, b) = (*a as usize, *b as usize);
        if let Some(h) = history.take() {
            histories.push((*key, h));
        }
        {
            let on_a = &mut world.bodies[a];
            on_a.force += o.on_a.0;
            on_a.torque += o.on_a.1;
            add(&mut generalized[a], &o.modal_a);
        }
        if let Partner::Body(_) = key.b {
            let on_b = &mut world.bodies[b];
            on_b.force += o.on_b.0;
            on_b.torque += o.on_b.1;
            add(&mut generalized[b], &o.modal_b);
        }
        crate::measure::count_contact(key, o, [a, b], &mut count);
        // Node records of the grains owned here (a ghost's go to its owner: ghost_sides).
        let mine = |body: u32| (if body == key.a { a } else { b }) < partition.owned;
        last.records
            .extend(o.records.iter().filter(|r| mine(r.body)).copied());
        let branch = match key.b {
            Partner::Body(_) => Some(
                world.bodies[b].position - world.bodies[a].position
                    + world
                        .cell
                        .as_ref()
                        .map_or(Vector3::zeros(), |c| c.shift(key.shift)),
            ),
            Partner::Wall(w) if partition.processes.is_some() => {
                wall_terms.push((key.a, w, o.on_b.0, o.stiffness));
                None
            }
            Partner::Wall(w) => {
                let wall = &mut world.walls[w as usize];
                wall.force += o.on_b.0;
                wall.stiffness += o.stiffness;
                None
            }
        };
        sums.add(key, o, branch);
        last.contacts += o.nodes_in_contact;
        totals.node_tests += o.node_tests;
        totals.node_queries += o.node_queries;
        totals.node_candidates += o.node_candidates;
        last.contact_energy += o.energy;
        last.dissipation.viscous += o.viscous_power;
        last.dissipation.friction += o.friction_loss;
        last.largest_contact.0 = last.largest_contact.0.max(o.patch);
        last.largest_contact.1 = last.largest_contact.1.max(o.deepest);
    }
    from.add_before(None, world, &mut generalized, &mut count, &mut last.records);
    world.histories = histories;
    sums.finish(&count[..partition.owned], &world.bodies[..partition.owned]);
    if let Some(p) = &partition.processes {
        // The walls' sums in key order (the bits of one process); the sample's to
        // round-off (the cell's servo reads them).
        let clock = Instant::now();
        p.sum_walls(wall_terms, &mut world.walls);
        let mut flat = sums.flat();
        p.sum(&mut flat);
        sums = ContactSums::from_flat(&flat);
        totals.timings.sums += clock.elapsed().as_secs_f64();
    }
    if let Some(cell) = &mut world.cell {
        let volume = cell.volume();
        cell.measured = crate::cell::Measured {
            stress: (sums.dipole + sums.dipole.transpose()) / (2.0 * volume),
            stiffness: sums.stiffness / volume,
            images: sums.images,
        };
    }
    last.sample_sums = sums;
    for (b, g) in world.bodies.iter_mut().zip(generalized) {
        if let Some(m) = &mut b.modes {
            refill(&mut m.contact, &g);
        }
    }
}

/// The sides of this process's pairs whose second grain is a ghost, for the ghosts' owners
/// (docs/mpi.md, "Newton on"), in key order. A parcel's numbers: the force and torque on the
/// grain, the pair's nodes in contact, the count of generalized forces and those, then the
/// node records of the grain (node, force) if they were kept. A side with nothing to add (no
/// node in contact, every number `+0`) is not sent: adding `+0` leaves every sum as it is, but
/// for the sign of a zero (`-0 + 0 = +0`), which no later number reads.
fn ghost_sides(
    pairs: &[Candidate],
    outcomes: &[(PairOutcome, Option<PairHistory>)],
    ids: &[u32],
    owned: usize,
) -> Parcels {
    let mut parcels = Parcels::default();
    for ((key, [_, b]), (o, _)) in pairs.iter().zip(outcomes) {
        let (Partner::Body(grain), true) = (key.b, *b != u32::MAX && *b as usize >= owned) else {
            continue;
        };
        debug_assert_eq!(ids[*b as usize], grain);
        let zero = |x: &f64| x.to_bits() == 0;
        if o.nodes_in_contact == 0
            && (o.on_b.0.iter().chain(o.on_b.1.iter()).chain(&o.modal_b)).all(zero)
            && !o.records.iter().any(|r| r.body == grain)
        {
            continue;
        }
        let head = (o.on_b.0.iter().chain(o.on_b.1.iter()).copied())
            .chain([o.nodes_in_contact as f64, o.modal_b.len() as f64]);
        let records = (o.records.iter().filter(|r| r.body == grain))
            .flat_map(|r| [f64::from(r.node), r.force.x, r.force.y, r.force.z]);
        parcels.push(
            grain,
            *key,
            head.chain(o.modal_b.iter().copied()).chain(records),
        );
    }
    parcels
}

/// The sides of pairs other processes computed ([`ghost_sides`]), added to the grains owned
/// here in key order among this process's own pairs.
struct TheirSides<'a> {
    parcels: &'a Parcels,
    /// The first parcel not added yet.
    next: usize,
    /// The ids of the grains owned.
    ids: &'a [u32],
}

impl TheirSides<'_> {
    /// Adds the parcels whose keys come before `key` (all that are left, for `None`).
    fn add_before(
        &mut self,
        key: Option<&PairKey>,
        world: &mut World,
        generalized: &mut [PerMode<f64>],
        count: &mut [u32],
        records: &mut Vec<NodeRecord>,
    ) {
        while self.next < self.parcels.len()
            && key.is_none_or(|k| self.parcels.keys[self.next] < *k)
        {
            let (grain, _, x) = self.parcels.get(self.next);
            self.next += 1;
            let i =
                (self.ids.binary_search(&grain)).expect("a pair's side goes to its grain's owner");
            let body = &mut world.bodies[i];
            body.force += Vector3::new(x[0], x[1], x[2]);
            body.torque += Vector3::new(x[3], x[4], x[5]);
            count[i] += u32::from(x[6] > 0.0);
            let modes = x[7] as usize;
            for (g, f) in generalized[i].iter_mut().zip(&x[8..8 + modes]) {
                *g += f;
            }
            records.extend(x[8 + modes..].chunks_exact(4).map(|r| NodeRecord {
                body: grain,
                node: r[0] as u32,
                force: Vector3::new(r[1], r[2], r[3]),
            }));
        }
    }
}

/// Stage 7: Cundall's local damping of free grains, and the internal and damping forces
/// on the amplitudes (docs/physics.md section 3).
fn body_forces(
    world: &mut World,
    parameters: &Parameters,
    partition: &Partition,
    last: &mut Evaluation,
    totals: &mut Totals,
) {
    if parameters.local_damping > 0.0 {
        let alpha = parameters.local_damping;
        // In a deforming cell, the damping opposes the velocity about the affine field
        // `H' H^-1 (X - origin)` (YADE's fluctuation velocity), not the field itself.
        let field = (world.cell.as_ref().filter(|c| c.moving())).map(|c| {
            let inverse = c.vectors.try_inverse().expect("a cell of positive volume");
            (c.rate * inverse, c.origin)
        });
        for b in world.bodies[..partition.owned]
            .iter_mut()
            .filter(|b| b.is_free())
        {
            let spin = b.spin();
            let u = field.map_or(b.velocity, |(l, o)| b.velocity - l * (b.position - o));
            // Power of the damping, `-F_d . v`: alpha sum |F_i| sign(u_i) v_i (force and
            // torque; `alpha sum |F_i| |v_i|` out of a deforming cell).
            last.dissipation.local += alpha
                * (0..3)
                    .map(|i| {
                        let sign = if u[i] == 0.0 { 0.0 } else { u[i].signum() };
                        b.force[i].abs() * (sign * b.velocity[i])
                            + b.torque[i].abs() * spin[i].abs()
                    })
                    .sum::<f64>();
            b.force = cundall(b.force, u, alpha);
            b.torque = cundall(b.torque, spin, alpha);
        }
    }
    for (b, &id) in world.bodies[..partition.owned]
        .iter_mut()
        .zip(&partition.ids)
    {
        let (Some(m), Some(modal)) = (&mut b.modes, &world.shapes[b.shape].modal) else {
            continue;
        };
        let i = id as usize;
        m.set_internal_force(modal);
        let samples = crate::levelset::registry::find(m.levelset.name()).is_some_and(|u| u.samples);
        for (a, &e) in m.eps.iter().enumerate() {
            for (limit, range) in modal.ranges(a, samples) {
                let Some(past) = beyond(e, range) else {
                    continue;
                };
                let known = totals
                    .excursions
                    .iter_mut()
                    .find(|x| x.grain == i && x.mode == a && x.limit == limit);
                match known {
                    Some(x) if beyond(x.amplitude, range).is_some_and(|known| known >= past) => {}
                    Some(x) => x.amplitude = e,
                    None => totals.excursions.push(Excursion {
                        grain: i,
                        mode: a,
                        limit,
                        range,
                        first_step: world.step + 1,
                        first_time: world.time + parameters.dt,
                        amplitude: e,
                    }),
                }
            }
        }
    }
}

impl Simulation {
    /// The sample measures of the last force evaluation ([`crate::measure::measures`]): the
    /// sample's volume is the cell's or the walls' ([`crate::measure::volume`]), the grains'
    /// the sum over every process.
    pub fn measures(&self) -> crate::measure::Measures {
        let sample =
            crate::measure::volume(self.world.cell.as_ref(), &self.world.walls).map(|volume| {
                let mut solid = [(self.world.bodies[..self.partition.owned].iter())
                    .map(|b| crate::measure::grain_volume(&self.world.shapes[b.shape], b))
                    .sum::<f64>()];
                if let Some(p) = &self.partition.processes {
                    p.sum(&mut solid);
                }
                (volume, solid[0])
            });
        crate::measure::measures(&self.last.sample_sums, sample)
    }
}

/// Stage 2: walls to their positions at time `t` (`dt`: the step just taken). A servo wall
/// whose face has no area any more stays, and is returned ([`ServoFault::NoFace`]).
fn move_walls(walls: &mut [Wall], t: f64, dt: f64) -> Option<ServoFault> {
    // Servos press on their faces' areas (their own, or the enclosure's from every wall's
    // position before the move).
    let areas: Vec<Option<f64>> = (0..walls.len())
        .map(|i| {
            (walls[i].servo.as_ref())
                .and_then(|s| s.area.or_else(|| crate::measure::face_area(walls, i)))
        })
        .collect();
    let fault = (walls.iter().zip(&areas).enumerate()).find_map(|(w, (wall, area))| {
        match (&wall.servo, area) {
            (Some(servo), None) => Some(ServoFault::NoFace {
                wall: w,
                pressure: servo.pressure,
            }),
            _ => None,
        }
    });
    for (w, area) in walls.iter_mut().zip(areas) {
        w.move_to(t, dt, area);
    }
    fault
}

/// Stage 3: one view of each body at its current state. A rigid body's view is its rotation
/// matrix, cheaper than the hand-over to another thread: rigid scenes below
/// 2,048 bodies (`PARALLEL_PAIR_LISTS`) build their views on the calling thread (settle bench, 216
/// bodies on 2 threads: 10 us per step in parallel, 5.8 serially; docs/performance.md). A
/// deformable body's view updates its level set: scenes with one build their views in parallel
/// from 64 bodies (`PARALLEL_BODIES`), as every scene did before.
pub fn views<'a>(bodies: &'a [Body], shapes: &'a [Arc<Shape>]) -> Vec<View<'a>> {
    let deformable = || bodies.iter().any(|b| b.modes.is_some());
    if bodies.len() >= PARALLEL_PAIR_LISTS
        || (bodies.len() >= integrate::PARALLEL_BODIES && deformable())
    {
        bodies
            .par_iter()
            .map(|b| View::new(b, &shapes[b.shape]))
            .collect()
    } else {
        bodies
            .iter()
            .map(|b| View::new(b, &shapes[b.shape]))
            .collect()
    }
}

/// The bodies a process holds ([`World::bodies`]): its own grains, then the ghosts.
pub struct Held<'a> {
    /// Owned, then ghosts.
    pub bodies: &'a [Body],
    /// Their global ids.
    pub ids: &'a [u32],
    /// How many are owned.
    pub owned: usize,
}

/// A candidate pair: its key (global ids) and the indices of its two bodies among those held
/// (`u32::MAX` for a wall).
pub type Candidate = (PairKey, [u32; 2]);

/// Stage 4's radius of each view ([`View::search_radius`]) at the law's largest node margin
/// over the scene's shapes ([`ContactLaw::margin`]), and the largest of the views' halo radii
/// ([`View::halo_radius`], [`Evaluation::largest_reach`]). A law that couples raises a pair's
/// overlap by an offset known only once the pairs are found ([`crate::coupling`]), which no
/// derived radius bounds: its radii keep at least the padded [`View::reach`], whose spacing
/// covers an offset up to that.
pub fn search_radii(
    views: &[View],
    law: &dyn ContactLaw,
    shapes: &[Arc<Shape>],
) -> (Vec<f64>, f64) {
    let margin = shapes.iter().map(|s| law.margin(s)).fold(0.0, f64::max);
    let padded = law.couples();
    let mut halo: f64 = 0.0;
    let radii = (views.iter())
        .map(|v| {
            let search = v.search_radius(margin);
            halo = halo.max(v.halo_radius(search, margin));
            match padded {
                true => search.max(v.reach),
                false => search,
            }
        })
        .collect();
    (radii, halo)
}

/// Stage 4: the pairs whose radii `radii` (one per body held, [`search_radii`]) overlap and
/// whose first grain (the lower id) this process owns, in key order: each body's grain partners (one of the
/// two free), then the walls within its radius (prescribed grains meet walls too, their
/// reactions are an output). Keys are in global ids,
/// the lower first, and sorted like the histories. In a periodic cell, the grain partners
/// include images across its faces ([`crate::cell::periodic_neighbours`]). The grain partners
/// come from `list`, brought to this step with the skin `skin` and `anywhere` (whether a flag
/// holds in any process) ([`NeighbourList::update`]).
pub fn broad_phase(
    held: &Held,
    radii: &[f64],
    walls: &[Wall],
    cell: Option<&Cell>,
    (list, skin, anywhere): (&mut NeighbourList, f64, &dyn Fn(bool) -> bool),
) -> Vec<Candidate> {
    let bodies = held.bodies;
    let centres: Vec<Vector3<f64>> = bodies.iter().map(|b| b.position).collect();
    // Only the owned grains search: a ghost's partners among the ghosts are another process's.
    let searching = crate::neighbours::Bodies {
        centres: &centres,
        radii,
        ids: held.ids,
        searching: held.owned,
    };
    list.update(&searching, cell, skin, anywhere);
    let list = &*list;
    let ids = held.ids;
    // Body i's candidates appended to one list, in loops: a list per body was an allocation,
    // and an iterator's chain of filters and flattening took about 140 instructions a pair
    // (docs/performance.md, "The pair lists in loops").
    let pairs_of = |i: usize, out: &mut Vec<Candidate>| {
        let a = &bodies[i];
        for &(j, shift) in list.partners(i) {
            let b = &bodies[j as usize];
            let (first, second) = (ids[i], ids[j as usize]);
            // Each pair is computed by its first grain's owner ("Newton on", docs/mpi.md).
            let first_held = if first < second { i } else { j as usize };
            if first_held >= held.owned || !(a.is_free() || b.is_free()) {
                continue;
            }
            out.push(if first < second {
                let b = Partner::Body(second);
                (PairKey { a: first, b, shift }, [i as u32, j])
            } else {
                let b = Partner::Body(first);
                let shift = shift.map(|s| -s);
                (
                    PairKey {
                        a: second,
                        b,
                        shift,
                    },
                    [j, i as u32],
                )
            });
        }
        if i < held.owned {
            for (w, wall) in walls.iter().enumerate() {
                if wall.distance(&a.position).0 < radii[i] {
                    let b = Partner::Wall(w as u32);
                    out.push((
                        PairKey {
                            a: ids[i],
                            b,
                            shift: [0; 3],
                        },
                        [i as u32, u32::MAX],
                    ));
                }
            }
        }
    };
    let n = bodies.len();
    // Every kept partner and a wall a grain searching: the list is seldom regrown, and a bound
    // (every wall of every grain) would reserve walls x grains entries.
    let hint = list.partner_count() + held.owned;
    let mut pairs = concatenated(n, n >= PARALLEL_PAIR_LISTS, hint, pairs_of);
    // Held in global order (one process), the pairs come sorted; a process's ghosts follow
    // its own grains, and its pairs are sorted here.
    if !pairs.is_sorted_by_key(|p| p.0) {
        pairs.par_sort_unstable_by_key(|p| p.0);
    }
    pairs
}

/// The lists that `list(i, out)` appends to `out` for `i = 0, .., n - 1`, one after the other,
/// made in parallel or not (the same result: rayon's reduce joins neighbours in order); made in
/// turn, into a list made for `capacity` items (grown from nothing, it was reallocated seven
/// times a step on the settle bench: docs/performance.md, "A pair's shears in two kept lists").
fn concatenated<T: Send>(
    n: usize,
    parallel: bool,
    capacity: usize,
    list: impl Fn(usize, &mut Vec<T>) + Sync + Send,
) -> Vec<T> {
    if parallel {
        (0..n)
            .into_par_iter()
            .fold(Vec::new, |mut out, i| {
                list(i, &mut out);
                out
            })
            .reduce(Vec::new, |mut a, mut b| {
                a.append(&mut b);
                a
            })
    } else {
        let mut out = Vec::with_capacity(capacity);
        (0..n).for_each(|i| list(i, &mut out));
        out
    }
}

/// What the narrow phase reads: the views, the walls, the grains' node roles and the law.
pub struct Contacts<'a> {
    /// One per body held.
    pub views: &'a [View<'a>],
    /// The periodic cell, whose images pairs may meet.
    pub cell: Option<&'a Cell>,
    /// The walls.
    pub walls: &'a [Wall],
    /// Each grain's own node role (`[[grains]] nodes`), by global id.
    pub roles: &'a [Option<NodeRole>],
    /// The contact law.
    pub law: &'a dyn ContactLaw,
    /// The first `owned` views are this process's grains, the rest its ghosts.
    pub owned: usize,
    /// The views' grains (global ids).
    pub ids: &'a [u32],
}

/// Stage 5: the law on each pair of `pairs` over a step `dt`, with its history from `old`
/// (both sorted by key: one merge pairs them; the histories of pairs no longer found are
/// dropped), handed to the law, which advances it in place, and for a law that couples, the
/// overlap corrections of the coupling through the grains' bodies ([`crate::coupling`]) from
/// those histories (with a ghost's part from its owner among `processes`). `record` keeps node
/// forces.
pub fn narrow_phase(
    c: &Contacts,
    pairs: &[Candidate],
    old: Histories,
    processes: Option<&mut dyn Processes>,
    record: bool,
    dt: f64,
) -> Vec<(PairOutcome, Option<PairHistory>)> {
    let mut old = old.into_iter().peekable();
    let olds: Vec<Option<PairHistory>> = pairs
        .iter()
        .map(|(key, _)| {
            while old.next_if(|(k, _)| k < key).is_some() {}
            old.next_if(|(k, _)| k == key).map(|(_, h)| h)
        })
        .collect();
    let offsets = if c.law.couples() {
        crate::coupling::offsets((c.views, c.ids, c.cell, c.owned), pairs, &olds, processes)
    } else {
        vec![0.0; pairs.len()]
    };
    let pair = |(((key, [a, b]), old), &offset): ((&Candidate, Option<PairHistory>), &f64)| {
        let image;
        let (partner, role_b) = match key.b {
            Partner::Body(j) if key.shift != [0; 3] => {
                let cell = c.cell.expect("image shifts come from a cell");
                let n = Vector3::from(key.shift.map(f64::from));
                image = c.views[*b as usize].image(cell.vectors * n, cell.rate * n);
                (Against::Body(&image), c.roles[j as usize])
            }
            Partner::Body(j) => (Against::Body(&c.views[*b as usize]), c.roles[j as usize]),
            Partner::Wall(w) => (Against::Wall(&c.walls[w as usize]), None),
        };
        let pair = Pair {
            key: *key,
            a: &c.views[*a as usize],
            b: partner,
            roles: (c.roles[key.a as usize], role_b),
            record,
            offset,
        };
        c.law.pair(&pair, old, dt)
    };
    if pairs.len() >= PARALLEL_PAIRS {
        pairs.par_iter().zip(olds).zip(&offsets).map(pair).collect()
    } else {
        pairs.iter().zip(olds).zip(&offsets).map(pair).collect()
    }
}

/// Cundall's local damping: each component of a force is reduced by `alpha |F_i|` against its
/// velocity component's sign.
fn cundall(f: Vector3<f64>, v: Vector3<f64>, alpha: f64) -> Vector3<f64> {
    Vector3::from_fn(|i, _| {
        if v[i] == 0.0 {
            f[i]
        } else {
            f[i] - alpha * f[i].abs() * v[i].signum()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::Drive;

    /// Each pair is found by exactly one process of a decomposition, the owner of its first
    /// grain ("Newton on", docs/mpi.md), and the processes' pairs together are one process's.
    #[test]
    fn each_pair_is_found_by_its_first_grains_owner_alone() {
        // A jittered lattice of 60 grains of mixed radii, cut across x into two owners.
        let mut bodies = Vec::new();
        let mut radii = Vec::new();
        for i in 0..60 {
            let t = i as f64;
            let x = [
                (i % 5) as f64 * 1.8 + 0.3 * (1.3 * t).sin(),
                (i / 5 % 4) as f64 * 1.9 + 0.3 * (0.7 * t).cos(),
                (i / 20) as f64 * 2.0 + 0.2 * (2.1 * t).sin(),
            ];
            bodies.push(Body::new(
                0,
                x,
                [1.0, 0.0, 0.0, 0.0],
                [0.0; 3],
                [0.0; 3],
                Drive::Free,
            ));
            radii.push(0.9 + 0.25 * (0.9 * t).cos().abs());
        }
        let search = |held: &Held, radii: &[f64]| {
            let mut list = NeighbourList::default();
            broad_phase(held, radii, &[], None, (&mut list, 0.0, &|flag| flag))
        };
        let ids: Vec<u32> = (0..60).collect();
        let one = search(
            &Held {
                bodies: &bodies,
                ids: &ids,
                owned: 60,
            },
            &radii,
        );
        let mut together = Vec::new();
        for mine in [true, false] {
            // Its own grains in id order, then every other grain as a ghost, in reverse order
            // (ghosts arrive in their owners' order, not by id).
            let owns = |i: usize| (bodies[i].position.x < 3.9) == mine;
            let order: Vec<usize> = (0..60)
                .filter(|&i| owns(i))
                .chain((0..60).rev().filter(|&i| !owns(i)))
                .collect();
            let held_bodies: Vec<Body> = order.iter().map(|&i| bodies[i].clone()).collect();
            let held_ids: Vec<u32> = order.iter().map(|&i| i as u32).collect();
            let held_radii: Vec<f64> = order.iter().map(|&i| radii[i]).collect();
            let owned = order.iter().filter(|&&i| owns(i)).count();
            assert!((10..50).contains(&owned), "{owned} grains owned");
            let pairs = search(
                &Held {
                    bodies: &held_bodies,
                    ids: &held_ids,
                    owned,
                },
                &held_radii,
            );
            assert!(pairs.is_sorted_by_key(|p| p.0));
            for (key, [a, _]) in &pairs {
                assert!((*a as usize) < owned, "{key:?}: its first grain is a ghost");
                assert_eq!(held_ids[*a as usize], key.a);
            }
            together.extend(pairs.into_iter().map(|p| p.0));
        }
        let crossing = together
            .iter()
            .filter(|k| match k.b {
                Partner::Body(j) => {
                    (bodies[k.a as usize].position.x < 3.9) != (bodies[j as usize].position.x < 3.9)
                }
                Partner::Wall(_) => false,
            })
            .count();
        assert!(crossing >= 5, "{crossing} pairs cross the cut");
        together.sort();
        assert_eq!(together, one.iter().map(|p| p.0).collect::<Vec<_>>());
    }

    #[test]
    fn lists_concatenated_in_parallel_are_those_concatenated_in_turn() {
        // Lists of 0 to 6 items, uneven as a body's pairs are.
        let list = |i: usize, out: &mut Vec<_>| out.extend((0..(i * 7) % 6).map(|k| (i, k)));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        for n in [0, 1, 5, 3000] {
            let parallel = pool.install(|| super::concatenated(n, true, 0, list));
            assert_eq!(
                parallel,
                super::concatenated(n, false, 0, list),
                "{n} lists"
            );
        }
    }
}
