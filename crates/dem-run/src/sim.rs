//! The simulation and its step (docs/physics.md sections 3, 4 and 6), in the manner of rapier's
//! `PhysicsPipeline::step`: named stages, each a function, the data flow in one screen
//! (`step`):
//!
//! 1. `integrate_first_half`: half kick and drift of the free grains (velocity
//!    Verlet: translations, rotations by an exact splitting of Euler's equations, amplitudes),
//!    prescribed grains moved to the new time;
//! 2. `move_walls`;
//! 3. `contacts`: one [`View`] of each body, the broad phase on the views'
//!    reach, the narrow phase and the contact law per pair (pairs in parallel);
//! 4. `reduce`: the pair forces summed onto grains and walls in pair order (the
//!    same bits for any thread count);
//! 5. `body_forces`: gravity first, local damping, the modal internal and
//!    damping forces;
//! 6. `integrate_second_half`: the second half kick;
//! 7. `account`: the energy ledger (work of walls and prescribed grains,
//!    dissipation).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use nalgebra::{UnitQuaternion, Vector3};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::body::{Body, Drive, Shape};
use crate::broad;
use crate::law::{
    Against, ContactLaw, Histories, NodeRecord, Pair, PairHistory, PairKey, PairOutcome, Partner,
};
use crate::levelset::LevelSetFault;
use crate::modal::{InternalLaw, Modes, PerMode, refill};
use crate::scene::KeyError;
use crate::scene::{ModesSpec, Motion, NodeRole, Scene, SceneError, TimeStep, held};
use crate::timestep;
use crate::view::View;
use crate::wall::Wall;

/// Everything that changes during a run: saved whole in checkpoints, so that a restart
/// continues bit for bit. (Compare two states by their serializations: a Jäger history arena
/// has no equality of its own.)
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct State {
    /// Steps taken.
    pub step: u64,
    /// Time.
    pub time: f64,
    /// The grains.
    pub bodies: Vec<Body>,
    /// The walls.
    pub walls: Vec<Wall>,
    /// The contact histories, sorted by pair, each in its law's checkpoint form
    /// ([`crate::law::History::save`]).
    pub histories: Vec<(PairKey, serde_json::Value)>,
    /// The energy ledger.
    pub ledger: Ledger,
}

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
/// leaves an error of order `dt^2` per unit time (more where trilinear level sets kink).
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
    /// Dissipated by friction: the shear spring energy removed by the Coulomb cap.
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

    /// Whether the energy grew beyond what the run can supply: a residual larger than the
    /// initial kinetic and elastic energy, the work of the boundaries, the dissipation and the
    /// gravity released together (an unstable integration, not a physical state).
    pub fn runaway(&self, e: &Energies) -> bool {
        self.residual(e) > self.supplied(e) + 1e-6 * e.magnitude()
    }

    /// What the run can supply (see [`Ledger::runaway`]).
    pub fn supplied(&self, e: &Energies) -> f64 {
        (self.initial - self.initial_gravity).abs()
            + self.work.abs()
            + self.dissipated()
            + (e.gravity - self.initial_gravity).abs()
    }
}

/// What a grain's model rests on over a range of amplitudes, beyond which it extrapolates
/// (docs/physics.md sections 1, 5 and 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Limit {
    /// The tabulated internal force, continued by its end slope.
    Table,
    /// The precomputed level sets, continued by the line through the last two samples.
    Samples,
    /// A path mode's snapshots, continued by the end segments.
    Path,
}

impl Limit {
    /// What the run does beyond the range.
    fn beyond(self) -> &'static str {
        match self {
            Limit::Table => {
                "the internal-force table's range: the force continues by the table's end slope"
            }
            Limit::Samples => {
                "its precomputed level sets' amplitudes: the blend continues the line through the last two"
            }
            Limit::Path => {
                "the amplitudes of its path (the FEM run's snapshots): the shape continues the end segment"
            }
        }
    }
}

/// A grain's amplitude beyond a range its model rests on ([`Limit`]): when it first left it,
/// and how far it went.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Excursion {
    /// The grain (its index in the scene's order).
    pub grain: usize,
    /// The mode.
    pub mode: usize,
    /// What it left.
    pub limit: Limit,
    /// The range's first and last amplitudes.
    pub range: (f64, f64),
    /// The step at which the amplitude first left the range.
    pub first_step: u64,
    /// Its time.
    pub first_time: f64,
    /// The amplitude farthest outside.
    pub amplitude: f64,
}

impl std::fmt::Display for Excursion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "grain {} mode {}: amplitude {:e} at step {} (t = {:e}) is past [{:e}, {:e}], {}",
            self.grain,
            self.mode,
            self.amplitude,
            self.first_step,
            self.first_time,
            self.range.0,
            self.range.1,
            self.limit.beyond()
        )
    }
}

/// Dissipation at one evaluation: powers, and the friction loss of the step.
#[derive(Debug, Clone, Copy, Default)]
struct Dissipation {
    viscous: f64,
    local: f64,
    friction: f64,
}

/// The most a wall may move in one step, in radii of the smallest grain.
pub const WALL_STEP: f64 = 0.1;

/// A running simulation.
pub struct Simulation {
    /// Shapes, one per bundle.
    pub shapes: Vec<Arc<Shape>>,
    /// The mutable state.
    pub bodies: Vec<Body>,
    /// Walls.
    pub walls: Vec<Wall>,
    /// Shear histories by pair.
    pub histories: Histories,
    /// The contact law.
    pub law: Arc<dyn ContactLaw>,
    /// Each body's own node role (`[[grains]] nodes`).
    pub node_roles: Vec<Option<NodeRole>>,
    /// Cundall's local damping fraction.
    pub local_damping: f64,
    /// Gravity.
    pub gravity: Vector3<f64>,
    /// Time step.
    pub dt: f64,
    /// Steps taken.
    pub step: u64,
    /// Time.
    pub time: f64,
    /// Node contacts at the last evaluation.
    pub contacts: usize,
    /// Node tests since the start (see [`PairOutcome::node_tests`]).
    pub node_tests: u64,
    /// Node candidates since the start (see [`PairOutcome::node_candidates`]).
    pub node_candidates: u64,
    /// Contact elastic energy at the last evaluation.
    pub contact_energy: f64,
    /// Node forces of the last evaluation, if they were asked for.
    pub records: Vec<NodeRecord>,
    /// The energy ledger.
    pub ledger: Ledger,
    /// The amplitudes that went beyond a range their grain's model rests on, in the order they
    /// did (the run reports each at the step it happens, and summary.json lists them).
    pub excursions: Vec<Excursion>,
    /// A level-set query of the last evaluation that could not be answered (the run stops).
    pub fault: Option<(usize, LevelSetFault)>,
    /// Dissipation of the last evaluation.
    dissipation: Dissipation,
    /// The largest contact patch and penetration of the last evaluation.
    largest_contact: (f64, f64),
}

/// A grain's modal state from its scene entry, checked against its bundle: `Ok(None)` when the
/// grain runs rigid.
fn modes_of(spec: Option<&ModesSpec>, shape: &Shape, key: &str) -> Result<Option<Modes>, KeyError> {
    let fail = |k: &str, m: String| Err(KeyError::new(format!("{key}.{k}"), m));
    let Some(modal) = &shape.modal else {
        return match spec {
            Some(_) => Err(KeyError::new(
                key.to_string(),
                "the bundle is rigid (no modes): a deformable option needs a deformable bundle"
                    .into(),
            )),
            None => Ok(None),
        };
    };
    let default = ModesSpec::default();
    let spec = spec.unwrap_or(&default);
    if !spec.active {
        return Ok(None);
    }
    let a = modal.count;
    let vector = |k: &str, v: &Option<Vec<f64>>| match v {
        None => Ok(vec![0.0; a]),
        Some(v) if v.len() == a => Ok(v.clone()),
        Some(v) => Err(KeyError::new(
            format!("{key}.{k}"),
            format!("one value per mode ({a}), got {}", v.len()),
        )),
    };
    let eps = vector("amplitudes", &spec.amplitudes)?;
    let rate = vector("rates", &spec.rates)?;
    if spec.levelset == crate::levelset::LevelSetUpdate::Precomputed && !modal.has_samples() {
        return fail(
            "levelset",
            "\"precomputed\" needs level sets baked at sampled amplitudes (levelset-bake --samples); this bundle has none for some mode".into(),
        );
    }
    if let InternalLaw::Table(t) = &modal.law {
        let (lo, hi) = t.range();
        if eps[0] < lo || eps[0] > hi {
            return fail(
                "amplitudes",
                format!(
                    "amplitude {} is outside the internal-force table's range [{lo}, {hi}]",
                    eps[0]
                ),
            );
        }
    }
    if let crate::modal::ModalDamping::Matrix(rows) = &spec.damping
        && (rows.len() != a
            || rows.iter().any(|r| r.len() != a)
            || !crate::modal::definite(&nalgebra::DMatrix::from_fn(a, a, |i, j| rows[i][j]), true))
    {
        return fail(
            "damping.matrix",
            format!(
                "a symmetric, positive semi-definite {a} x {a} matrix (one row per mode; negative damping feeds energy in)"
            ),
        );
    }
    Ok(Some(Modes::new(
        eps,
        rate,
        spec.levelset,
        spec.damping.clone(),
    )))
}

impl Simulation {
    /// Builds the initial state of a scene (`path`: the scene file, for relative bundle paths
    /// and messages) and evaluates the initial forces.
    pub fn from_scene(scene: &Scene, path: &Path) -> Result<Simulation, SceneError> {
        /// How far from the origin, in its own radii, a grain may be placed.
        /// The closest a lattice may place its grains, in their radii.
        const CLOSEST: f64 = 1e-3;
        let key_error = |KeyError { key, message }: KeyError| SceneError::Key {
            path: path.to_path_buf(),
            key,
            message,
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut shapes: Vec<Arc<Shape>> = Vec::new();
        let mut by_path: HashMap<std::path::PathBuf, usize> = HashMap::new();
        let mut shape_of = |bundle: &Path, key: String| -> Result<usize, SceneError> {
            let full = dir.join(bundle);
            if let Some(&i) = by_path.get(&full) {
                return Ok(i);
            }
            let b = grain::GrainBundle::read(&full).map_err(|source| SceneError::Bundle {
                path: path.to_path_buf(),
                key: key.clone(),
                source: Box::new(source),
            })?;
            let shape = Shape::from_bundle(&b).map_err(|message| SceneError::Key {
                path: path.to_path_buf(),
                key: key.clone(),
                message: format!("{}: {message}", full.display()),
            })?;
            shapes.push(Arc::new(shape));
            by_path.insert(full, shapes.len() - 1);
            Ok(shapes.len() - 1)
        };
        let mut bodies = Vec::new();
        let mut modal_specs: Vec<(Option<&ModesSpec>, String)> = Vec::new();
        let mut node_roles = Vec::new();
        // Where each body was placed, for the check below: its key, position and shape.
        let mut places: Vec<(String, [f64; 3], usize)> = Vec::new();
        // Each lattice's index, spacing, counts and shape, for the check below.
        let mut spacings = Vec::new();
        for (i, g) in scene.grains.iter().enumerate() {
            let shape = shape_of(&g.bundle, format!("grains[{i}].bundle"))?;
            places.push((format!("grains[{i}].position"), g.position, shape));
            let drive = match &g.motion {
                None => free_drive(&g.hold),
                Some(m) => Drive::Prescribed {
                    origin: g.position,
                    motion: m.clone(),
                },
            };
            bodies.push(Body::new(
                shape,
                g.position,
                g.orientation,
                g.velocity,
                g.angular_velocity,
                drive,
            ));
            modal_specs.push((g.modes.as_ref(), format!("grains[{i}].modes")));
            node_roles.push(g.nodes);
        }
        for (i, l) in scene.lattices.iter().enumerate() {
            let shape = shape_of(&l.bundle, format!("lattices[{i}].bundle"))?;
            // Its farthest grains are at its two extreme corners.
            let far = [0, 1, 2]
                .map(|d| l.origin[d] + l.counts[d].saturating_sub(1) as f64 * l.spacing[d]);
            for corner in [l.origin, far] {
                places.push((format!("lattices[{i}].origin"), corner, shape));
            }
            spacings.push((i, l.spacing, l.counts, shape));
            for a in 0..l.counts[0] {
                for b in 0..l.counts[1] {
                    for c in 0..l.counts[2] {
                        let offset = [a, b, c];
                        let position =
                            [0, 1, 2].map(|d| l.origin[d] + offset[d] as f64 * l.spacing[d]);
                        bodies.push(Body::new(
                            shape,
                            position,
                            [1.0, 0.0, 0.0, 0.0],
                            l.velocity,
                            [0.0; 3],
                            free_drive(&l.hold),
                        ));
                        modal_specs.push((l.modes.as_ref(), format!("lattices[{i}].modes")));
                        node_roles.push(None);
                    }
                }
            }
        }
        for (key, position, shape) in &places {
            if let Some(message) = too_far(position, &shapes[*shape]) {
                return Err(key_error(KeyError::new(key.clone(), message)));
            }
        }
        // Grains of a lattice closer than CLOSEST of their radius lie on top of each other (the
        // fuzz campaign's 1e-320), and the first step runs for minutes; even plates stacked
        // along their thickness are farther apart.
        for (i, spacing, counts, shape) in spacings {
            let r = shapes[shape].bounding_radius;
            if let Some(d) = (0..3).find(|&d| counts[d] > 1 && spacing[d] < CLOSEST * r) {
                return Err(key_error(KeyError::new(
                    format!("lattices[{i}].spacing"),
                    format!(
                        "{:e} along {} puts the grains on top of each other: at least {CLOSEST:e} times their radius {r:e} expected",
                        spacing[d],
                        ["x", "y", "z"][d]
                    ),
                )));
            }
        }
        for (b, (spec, key)) in bodies.iter_mut().zip(&modal_specs) {
            b.modes = modes_of(*spec, &shapes[b.shape], key).map_err(key_error)?;
        }
        let law = scene.contact.law.clone();
        law.check(&shapes, &bodies).map_err(key_error)?;
        let mut sim = Simulation {
            shapes,
            bodies,
            walls: scene.walls.iter().map(Wall::from_spec).collect(),
            histories: Histories::new(),
            law,
            node_roles,
            local_damping: scene.contact.local_damping,
            gravity: Vector3::from(scene.run.gravity),
            dt: 0.0,
            step: 0,
            time: 0.0,
            contacts: 0,
            node_tests: 0,
            node_candidates: 0,
            contact_energy: 0.0,
            records: Vec::new(),
            ledger: Ledger::default(),
            excursions: Vec::new(),
            fault: None,
            dissipation: Dissipation::default(),
            largest_contact: (0.0, 0.0),
        };
        for (i, (_, key)) in modal_specs.iter().enumerate() {
            if let Some(message) = behind_wall(&sim.bodies[i], &sim.walls) {
                return Err(key_error(KeyError::new(
                    key.trim_end_matches(".modes").to_string(),
                    message,
                )));
            }
        }
        // The initial forces, with node records for a first output; no time has passed, so no
        // shear increment and no dissipation.
        sim.evaluate_forces(true, 0.0);
        for b in &mut sim.bodies {
            if let (Some(m), Some(modal)) = (&mut b.modes, &sim.shapes[b.shape].modal) {
                m.set_damping_force(modal);
            }
        }
        let e = sim.energies();
        sim.ledger = Ledger {
            initial: e.total(),
            initial_gravity: e.gravity,
            ..Ledger::default()
        };
        sim.dt = match scene.run.dt {
            TimeStep::Fixed(dt) => dt,
            TimeStep::Auto(_) => scene.run.safety * sim.critical_step(),
        };
        sim.check_wall_steps().map_err(key_error)?;
        Ok(sim)
    }

    /// Refuses a wall that moves a good part of a grain per step at the step `dt`: it overruns
    /// its contacts, and the grains meet it deep inside, with forces of no physical meaning.
    /// The error is the wall's scene key and the reason.
    pub fn check_wall_steps(&self) -> Result<(), KeyError> {
        let smallest = (self.shapes.iter())
            .map(|s| s.bounding_radius)
            .fold(f64::INFINITY, f64::min);
        for (w, wall) in self.walls.iter().enumerate() {
            let speed = wall.motion.as_ref().map_or(0.0, Motion::largest_speed);
            if speed * self.dt > WALL_STEP * smallest {
                return Err(KeyError::new(
                    format!("walls[{w}].motion"),
                    format!(
                        "it moves {:e} per step (speed {speed:e}, dt {:e}), more than {WALL_STEP} of the smallest grain's radius {smallest:e}: lower its speed or the step",
                        speed * self.dt,
                        self.dt
                    ),
                ));
            }
        }
        Ok(())
    }

    /// One step of velocity Verlet (kick, drift, forces, kick); `record` keeps node forces.
    pub fn step(&mut self, record: bool) {
        let dt = self.dt;
        let before = self.boundary_loads();
        let modal_power = self.modal_damping_power();
        self.integrate_first_half(dt);
        self.move_walls(self.time + dt, dt);
        self.evaluate_forces(record, dt);
        self.integrate_second_half(dt);
        self.account(&before, modal_power, dt);
        self.step += 1;
        self.time += dt;
    }

    /// Stage 1: half kick and drift of free grains (and their amplitudes); prescribed grains
    /// follow their motion with a constant spin.
    fn integrate_first_half(&mut self, dt: f64) {
        let t = self.time + dt;
        let shapes = &self.shapes;
        for_each_body(&mut self.bodies, |b| match &b.drive {
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

    /// Stage 2: walls to their positions at time `t`.
    fn move_walls(&mut self, t: f64, dt: f64) {
        for w in &mut self.walls {
            w.move_to(t, dt);
        }
    }

    /// Stages 3 to 5 at the current positions (velocities are the half-step ones inside a
    /// step); shear displacements grow by `v_t dt`.
    fn evaluate_forces(&mut self, record: bool, dt: f64) {
        let old = std::mem::take(&mut self.histories);
        let (keys, outcomes, fault) = self.contacts(old, record, dt);
        self.fault = fault;
        self.reduce(&keys, outcomes);
        self.body_forces();
    }

    /// Stage 3: the views, the broad phase and the narrow phase with the contact law. Each
    /// body's pairs come in key order (its grain partners, then walls; prescribed grains meet
    /// walls too, their reactions are an output), so the list is sorted like the histories.
    /// Each pair's history in `old` is handed to the law, which advances it in place; those of
    /// pairs the broad phase no longer finds are dropped.
    #[allow(clippy::type_complexity)]
    fn contacts(
        &self,
        old: Histories,
        record: bool,
        dt: f64,
    ) -> (
        Vec<PairKey>,
        Vec<(PairOutcome, Option<PairHistory>)>,
        Option<(usize, LevelSetFault)>,
    ) {
        let shapes = &self.shapes;
        let views: Vec<View> = if self.bodies.len() >= PARALLEL_BODIES {
            self.bodies
                .par_iter()
                .map(|b| View::new(b, &shapes[b.shape]))
                .collect()
        } else {
            self.bodies
                .iter()
                .map(|b| View::new(b, &shapes[b.shape]))
                .collect()
        };
        let centres: Vec<Vector3<f64>> = self.bodies.iter().map(|b| b.position).collect();
        let radii: Vec<f64> = views.iter().map(|v| v.reach).collect();
        let neighbours = broad::neighbours(&centres, &radii);
        let pairs_of = |i: usize| -> Vec<PairKey> {
            let a = &self.bodies[i];
            let grains = neighbours[i]
                .iter()
                .filter(|&&j| a.is_free() || self.bodies[j as usize].is_free())
                .map(|&j| Partner::Body(j));
            let walls = (0..self.walls.len())
                .filter(|&w| self.walls[w].distance(&a.position).0 < radii[i])
                .map(|w| Partner::Wall(w as u32));
            grains
                .chain(walls)
                .map(|b| PairKey { a: i as u32, b })
                .collect()
        };
        let keys: Vec<PairKey> = if self.bodies.len() >= PARALLEL_BODIES {
            (0..self.bodies.len())
                .into_par_iter()
                .flat_map_iter(pairs_of)
                .collect()
        } else {
            (0..self.bodies.len()).flat_map(pairs_of).collect()
        };
        // Both lists are sorted by key: one merge pairs each key with its history.
        debug_assert!(keys.is_sorted(), "pairs out of key order");
        let mut old = old.into_iter().peekable();
        let olds: Vec<Option<PairHistory>> = keys
            .iter()
            .map(|key| {
                while old.next_if(|(k, _)| k < key).is_some() {}
                old.next_if(|(k, _)| k == key).map(|(_, h)| h)
            })
            .collect();
        let pair = |(key, old): (&PairKey, Option<PairHistory>)| {
            let b = match key.b {
                Partner::Body(j) => Against::Body(&views[j as usize]),
                Partner::Wall(w) => Against::Wall(&self.walls[w as usize]),
            };
            let roles = (
                self.node_roles[key.a as usize],
                match key.b {
                    Partner::Body(j) => self.node_roles[j as usize],
                    Partner::Wall(_) => None,
                },
            );
            let pair = Pair {
                key: *key,
                a: &views[key.a as usize],
                b,
                roles,
                record,
            };
            self.law.pair(&pair, old, dt)
        };
        let outcomes = if keys.len() >= PARALLEL_PAIRS {
            keys.par_iter().zip(olds).map(pair).collect()
        } else {
            keys.iter().zip(olds).map(pair).collect()
        };
        let fault = views
            .iter()
            .enumerate()
            .find_map(|(i, v)| v.fault().map(|f| (i, f.clone())));
        (keys, outcomes, fault)
    }

    /// Stage 4: gravity first, then the pair forces in pair order, onto grains, walls and the
    /// grains' modes; the new histories.
    fn reduce(&mut self, keys: &[PairKey], outcomes: Vec<(PairOutcome, Option<PairHistory>)>) {
        let mut generalized: Vec<PerMode<f64>> = self
            .bodies
            .iter()
            .map(|b| smallvec::smallvec![0.0; b.modes.as_ref().map_or(0, |m| m.eps.len())])
            .collect();
        for b in &mut self.bodies {
            let m = self.shapes[b.shape].mass;
            b.force = self.gravity * m;
            b.torque = Vector3::zeros();
        }
        for w in &mut self.walls {
            w.force = Vector3::zeros();
        }
        let mut histories = Histories::with_capacity(self.histories.len());
        self.contacts = 0;
        self.contact_energy = 0.0;
        self.dissipation = Dissipation::default();
        self.largest_contact = (0.0, 0.0);
        self.records.clear();
        let add = |to: &mut PerMode<f64>, from: &[f64]| {
            for (t, f) in to.iter_mut().zip(from) {
                *t += f;
            }
        };
        for (key, (o, history)) in keys.iter().zip(outcomes) {
            let a = &mut self.bodies[key.a as usize];
            a.force += o.on_a.0;
            a.torque += o.on_a.1;
            add(&mut generalized[key.a as usize], &o.modal_a);
            match key.b {
                Partner::Body(j) => {
                    let b = &mut self.bodies[j as usize];
                    b.force += o.on_b.0;
                    b.torque += o.on_b.1;
                    add(&mut generalized[j as usize], &o.modal_b);
                }
                Partner::Wall(w) => self.walls[w as usize].force += o.on_b.0,
            }
            self.contacts += o.nodes_in_contact;
            self.node_tests += o.node_tests;
            self.node_candidates += o.node_candidates;
            self.contact_energy += o.energy;
            self.dissipation.viscous += o.viscous_power;
            self.dissipation.friction += o.friction_loss;
            self.largest_contact.0 = self.largest_contact.0.max(o.patch);
            self.largest_contact.1 = self.largest_contact.1.max(o.deepest);
            self.records.extend(o.records);
            if let Some(h) = history {
                histories.push((*key, h));
            }
        }
        self.histories = histories;
        for (b, g) in self.bodies.iter_mut().zip(generalized) {
            if let Some(m) = &mut b.modes {
                refill(&mut m.contact, &g);
            }
        }
    }

    /// Stage 5: Cundall's local damping of free grains, and the internal and damping forces
    /// on the amplitudes (docs/physics.md section 3).
    fn body_forces(&mut self) {
        if self.local_damping > 0.0 {
            let alpha = self.local_damping;
            for b in self.bodies.iter_mut().filter(|b| b.is_free()) {
                let spin = b.spin();
                // Power of the damping: alpha sum |F_i| |v_i| (force and torque).
                self.dissipation.local += alpha
                    * (0..3)
                        .map(|i| {
                            b.force[i].abs() * b.velocity[i].abs()
                                + b.torque[i].abs() * spin[i].abs()
                        })
                        .sum::<f64>();
                b.force = cundall(b.force, b.velocity, alpha);
                b.torque = cundall(b.torque, spin, alpha);
            }
        }
        for (i, b) in self.bodies.iter_mut().enumerate() {
            let (Some(m), Some(modal)) = (&mut b.modes, &self.shapes[b.shape].modal) else {
                continue;
            };
            m.set_internal_force(modal);
            for (a, &e) in m.eps.iter().enumerate() {
                for (limit, range) in modal.ranges(a, m.levelset) {
                    let beyond = |e: f64| (range.0 - e).max(e - range.1);
                    // Beyond by round-off (a grain at rest on the range's end) is not an
                    // excursion.
                    if beyond(e) <= 1e-9 * (range.1 - range.0) {
                        continue;
                    }
                    let known = self
                        .excursions
                        .iter_mut()
                        .find(|x| x.grain == i && x.mode == a && x.limit == limit);
                    match known {
                        Some(x) if beyond(x.amplitude) >= beyond(e) => {}
                        Some(x) => x.amplitude = e,
                        None => self.excursions.push(Excursion {
                            grain: i,
                            mode: a,
                            limit,
                            range,
                            first_step: self.step + 1,
                            first_time: self.time + self.dt,
                            amplitude: e,
                        }),
                    }
                }
            }
        }
    }

    /// Stage 6: the second half kick of free grains and their amplitudes.
    fn integrate_second_half(&mut self, dt: f64) {
        let shapes = &self.shapes;
        for_each_body(&mut self.bodies, |b| {
            if b.is_free() {
                kick(b, &shapes[b.shape], 0.5 * dt, true);
            }
        });
    }

    /// Power of the modal damping at the current full step, `sum eps'^T C eps'`.
    fn modal_damping_power(&self) -> f64 {
        self.bodies
            .iter()
            .filter(|b| b.is_free())
            .filter_map(|b| b.modes.as_ref())
            .map(|m| m.damping_power())
            .sum()
    }

    /// The loads of the boundaries before a step: each wall's displacement and the force on it,
    /// each prescribed grain's position, contact force and torque.
    fn boundary_loads(&self) -> Vec<[Vector3<f64>; 3]> {
        let walls = self
            .walls
            .iter()
            .map(|w| [w.displacement, w.force, Vector3::zeros()]);
        let grains = self.bodies.iter().filter(|b| !b.is_free()).map(|b| {
            let weight = self.gravity * self.shapes[b.shape].mass;
            [b.position, b.force - weight, b.torque]
        });
        walls.chain(grains).collect()
    }

    /// Stage 7: the ledger. The boundaries' work on the grains over the step, `-(F_0 + F_1)/2 .
    /// dx` for a wall or prescribed grain that felt force `F` from the grains and moved by `dx`
    /// (and `-(tau_0 + tau_1)/2 . omega dt` for a spinning grain); dissipation at the powers of
    /// this step's evaluation, the modal damping's by the trapezoid rule over the full steps
    /// (what its implicit half kick integrates).
    fn account(&mut self, before: &[[Vector3<f64>; 3]], modal_power: f64, dt: f64) {
        let after = self.boundary_loads();
        let spins = self
            .bodies
            .iter()
            .filter(|b| !b.is_free())
            .map(|b| b.spin());
        let turns = std::iter::repeat_n(Vector3::zeros(), self.walls.len()).chain(spins);
        let mut work = 0.0;
        for ((b, a), spin) in before.iter().zip(&after).zip(turns) {
            work -= 0.5 * (b[1] + a[1]).dot(&(a[0] - b[0]));
            work -= 0.5 * (b[2] + a[2]).dot(&(spin * dt));
        }
        let modal_after = self.modal_damping_power();
        let l = &mut self.ledger;
        l.work += work;
        l.viscous += self.dissipation.viscous * dt;
        l.local += self.dissipation.local * dt;
        l.modal += 0.5 * (modal_power + modal_after) * dt;
        l.friction += self.dissipation.friction;
    }

    /// The automatic step before the safety factor (docs/physics.md section 6; [`timestep`]).
    pub fn critical_step(&self) -> f64 {
        let (patch, overlap) = self.largest_contact;
        timestep::critical_step(
            &self.shapes,
            &self.bodies,
            self.law.as_ref(),
            patch,
            overlap,
        )
    }

    /// Whether every grain's position, orientation, velocities and amplitudes are finite
    /// numbers (a run whose step is too large for its contacts blows up to infinities and NaN).
    pub fn is_finite(&self) -> bool {
        self.bodies.iter().all(finite_state)
    }

    /// Energies of the current state.
    pub fn energies(&self) -> Energies {
        let mut e = Energies {
            contact: self.contact_energy,
            ..Energies::default()
        };
        for b in &self.bodies {
            let s = &self.shapes[b.shape];
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
            e.gravity -= s.mass * self.gravity.dot(&b.position);
        }
        e
    }

    /// Total linear momentum of the free grains.
    pub fn momentum(&self) -> Vector3<f64> {
        self.bodies
            .iter()
            .filter(|b| b.is_free())
            .map(|b| b.velocity * self.shapes[b.shape].mass)
            .sum()
    }

    /// The mutable state, for a checkpoint.
    pub fn state(&self) -> State {
        State {
            step: self.step,
            time: self.time,
            bodies: self.bodies.clone(),
            walls: self.walls.clone(),
            histories: (self.histories.iter())
                .map(|(k, h)| (*k, h.save()))
                .collect(),
            ledger: self.ledger,
        }
    }

    /// Puts a checkpoint's state back. The scene must have the same grains (bundles, in order,
    /// with their modes on or off alike) and walls; motions, level-set updates and modal
    /// damping come from the scene, so a continuation may change the loading. A checkpoint that
    /// does not fit the scene is refused with the first mismatch, and nothing is changed.
    pub fn restore(&mut self, mut state: State) -> Result<(), KeyError> {
        let refuse = |key: String, message: String| Err(KeyError::new(key, message));
        if state.bodies.len() != self.bodies.len() || state.walls.len() != self.walls.len() {
            return refuse(
                "state".into(),
                format!(
                    "the checkpoint has {} grains and {} walls, the scene {} and {}",
                    state.bodies.len(),
                    state.walls.len(),
                    self.bodies.len(),
                    self.walls.len()
                ),
            );
        }
        for (saved, scene) in state.walls.iter_mut().zip(&self.walls) {
            saved.geometry = scene.geometry.clone();
            saved.motion = scene.motion.clone();
        }
        for (i, (saved, scene)) in state.bodies.iter_mut().zip(&self.bodies).enumerate() {
            let key = |k: &str| format!("state.bodies[{i}]{k}");
            if saved.shape != scene.shape {
                return refuse(key(".shape"), "another bundle than the scene's".into());
            }
            if !finite_state(saved) {
                return refuse(key(""), "a non-finite state".into());
            }
            let q = saved.orientation.coords.norm();
            if (q - 1.0).abs() > 1e-6 {
                return refuse(
                    key(".orientation"),
                    format!("a quaternion of norm {q}, not 1: it is not a rotation"),
                );
            }
            // The restored state is checked as a scene's is (issue #23: an edited checkpoint ran
            // as written); the caller checks the walls' steps at the step it runs with.
            let placed = too_far(&saved.position.into(), &self.shapes[saved.shape])
                .or_else(|| behind_wall(saved, &state.walls));
            if let Some(message) = placed {
                return refuse(key(".position"), message);
            }
            match (&mut saved.modes, &scene.modes) {
                (None, None) => {}
                (Some(s), Some(m)) if s.eps.len() == m.eps.len() && s.rate.len() == m.eps.len() => {
                    s.levelset = m.levelset;
                    s.damping = m.damping.clone();
                }
                _ => {
                    return refuse(
                        key(".modes"),
                        "on in one of the checkpoint and the scene and off in the other, or of another count".into(),
                    );
                }
            }
            saved.drive = scene.drive.clone();
        }
        if !state.histories.is_sorted_by_key(|(k, _)| *k) {
            return refuse("state.histories".into(), "not sorted by pair".into());
        }
        let bodies = self.bodies.len() as u32;
        let nodes =
            |i: u32| (self.bodies.get(i as usize)).map_or(0, |b| self.shapes[b.shape].nodes.len());
        let mut histories = Histories::with_capacity(state.histories.len());
        for (key, saved) in state.histories {
            let partner_ok = match key.b {
                Partner::Body(j) => key.a < j && j < bodies,
                Partner::Wall(w) => (w as usize) < self.walls.len(),
            };
            let history = if key.a < bodies && partner_ok {
                self.law.load(&key, saved, &nodes)
            } else {
                Err("its bodies or wall are not the scene's".into())
            };
            match history {
                Ok(h) => histories.push((key, h)),
                Err(why) => {
                    return refuse(
                        "state.histories".into(),
                        format!("pair {key:?} does not fit the scene or its contact law: {why}"),
                    );
                }
            }
        }
        if !(state.time.is_finite() && state.time >= 0.0) {
            return refuse(
                "state.time".into(),
                format!("{} is not a finite number >= 0", state.time),
            );
        }
        self.step = state.step;
        self.time = state.time;
        self.bodies = state.bodies;
        self.walls = state.walls;
        self.histories = histories;
        self.ledger = state.ledger;
        Ok(())
    }
}

/// Why `body`'s centre is behind one of `walls`, if it is: the wall would launch it.
fn behind_wall(body: &Body, walls: &[Wall]) -> Option<String> {
    walls.iter().enumerate().find_map(|(w, wall)| {
        let (d, _) = wall.distance(&body.position);
        (d < 0.0).then(|| {
            format!(
                "a grain's centre is {:e} behind walls[{w}] (a wall's inside is where its normal points): the wall would launch it",
                -d
            )
        })
    })
}

/// Beyond this many of its radii from the origin, f64 resolves less than about 2e-8 of a grain:
/// its contact geometry would be rounding noise, and a lattice's grains would fall onto each
/// other (found by the fuzz campaign: an origin of 1e308 put 3,000 grains on one point, and the
/// first step ran for minutes).
const FARTHEST: f64 = 1e8;

/// Why a grain of `shape` at `position` is too far from the origin ([`FARTHEST`]), if it is.
fn too_far(position: &[f64; 3], shape: &Shape) -> Option<String> {
    let r = shape.bounding_radius;
    position.iter().any(|x| x.abs() > FARTHEST * r).then(|| {
        format!(
            "the grain would sit at {position:?}, more than {FARTHEST:e} times its radius {r:e} from the origin, where floating point cannot resolve it; move the scene nearer the origin"
        )
    })
}

/// Whether a body's pose, velocities and amplitudes are finite.
fn finite_state(b: &Body) -> bool {
    [b.position, b.velocity, b.angular_velocity]
        .iter()
        .all(|v| v.iter().all(|x| x.is_finite()))
        && b.orientation.coords.iter().all(|x| x.is_finite())
        && b.modes
            .as_ref()
            .is_none_or(|m| m.eps.iter().chain(&m.rate).all(|x| x.is_finite()))
}

/// Below these counts, loops over bodies and pairs run on the calling thread: handing a few
/// microseconds of work to rayon costs more than it saves. Results do not depend on it.
const PARALLEL_BODIES: usize = 64;
const PARALLEL_PAIRS: usize = 16;

fn for_each_body(bodies: &mut [Body], f: impl Fn(&mut Body) + Sync + Send) {
    if bodies.len() >= PARALLEL_BODIES {
        bodies.par_iter_mut().for_each(f);
    } else {
        bodies.iter_mut().for_each(f);
    }
}

/// The drive of a free grain holding `hold`.
fn free_drive(hold: &[crate::scene::Dof]) -> Drive {
    if hold.is_empty() {
        return Drive::Free;
    }
    let (translation, rotation) = held(hold);
    Drive::Held {
        translation,
        rotation,
    }
}

/// Half a kick: `v += F/m h`, the body-frame angular momentum `L += R^T tau h` (the components a
/// grain holds excepted), and the rates
/// (the first half explicit, the second implicit in the damping: [`Modes::kick_implicit`]).
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
    let mut q = b.orientation;
    for (k, h) in [(0, 0.5), (1, 0.5), (2, 1.0), (1, 0.5), (0, 0.5)] {
        let theta = l[k] / i[k] * h * dt;
        let axis = Vector3::ith_axis(k);
        let r = UnitQuaternion::from_axis_angle(&axis, theta);
        l = r.inverse_transform_vector(&l);
        q *= r;
    }
    b.orientation = UnitQuaternion::new_normalize(q.into_inner());
    b.angular_velocity = Vector3::new(l[0] / i[0], l[1] / i[1], l[2] / i[2]);
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
