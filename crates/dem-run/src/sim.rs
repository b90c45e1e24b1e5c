//! The simulation and its step: broad phase, narrow phase with the contact law, deterministic
//! force reduction, and velocity-Verlet integration (PHYSICS.md sections 3, 4 and 6).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use nalgebra::{UnitQuaternion, Vector3};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::body::{Body, Drive, Shape};
use crate::broad;
use crate::hertz::{HertzJaeger, Other};
use crate::law::ContactLaw;
use crate::narrow::{
    Histories, NodeRecord, PairHistory, PairKey, PairOutcome, Partner, Receiver, Side, Step,
    side_contacts,
};
use crate::scene::{NodeRoles, Scene, SceneError, TimeStep};
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
    /// Shear histories, sorted by pair.
    pub histories: Histories,
}

/// Energies of the current state.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Energies {
    /// `sum 1/2 m v^2` over free grains.
    pub translational: f64,
    /// `sum 1/2 omega . I omega` over free grains.
    pub rotational: f64,
    /// `- sum m g . X` over free grains.
    pub gravity: f64,
    /// Elastic energy stored in the contacts at the last force evaluation.
    pub contact: f64,
}

impl Energies {
    /// Kinetic plus potential.
    pub fn total(&self) -> f64 {
        self.translational + self.rotational + self.gravity + self.contact
    }
}

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
    pub law: ContactLaw,
    /// Node roles in grain pairs.
    pub roles: NodeRoles,
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
}

impl Simulation {
    /// Builds the initial state of a scene (`path`: the scene file, for relative bundle paths
    /// and messages) and evaluates the initial forces.
    pub fn from_scene(scene: &Scene, path: &Path) -> Result<Simulation, SceneError> {
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
        for (i, g) in scene.grains.iter().enumerate() {
            let shape = shape_of(&g.bundle, format!("grains[{i}].bundle"))?;
            let drive = match &g.motion {
                None => Drive::Free,
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
        }
        for (i, l) in scene.lattices.iter().enumerate() {
            let shape = shape_of(&l.bundle, format!("lattices[{i}].bundle"))?;
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
                            Drive::Free,
                        ));
                    }
                }
            }
        }
        let law = ContactLaw::new(&scene.contact);
        if let ContactLaw::HertzJaeger(_) = law {
            let sphere = |i: usize| shapes[bodies[i].shape].sphere_radius.is_some();
            if let Some(i) = (0..bodies.len()).find(|&i| !sphere(i)) {
                return Err(SceneError::Key {
                    path: path.to_path_buf(),
                    key: "contact.law".into(),
                    message: format!(
                        "hertz-jaeger needs spherical grains; grain {i} is not a sphere (its nodes are not all at one distance from its centre)"
                    ),
                });
            }
        }
        let dt = match scene.run.dt {
            TimeStep::Fixed(dt) => dt,
            TimeStep::Auto(_) => scene.run.safety * critical_step(&shapes, &bodies, &law),
        };
        let mut sim = Simulation {
            shapes,
            bodies,
            walls: scene.walls.iter().map(Wall::from_spec).collect(),
            histories: Histories::new(),
            law,
            roles: scene.contact.nodes,
            local_damping: scene.contact.local_damping,
            gravity: Vector3::from(scene.run.gravity),
            dt,
            step: 0,
            time: 0.0,
            contacts: 0,
            node_tests: 0,
            node_candidates: 0,
            contact_energy: 0.0,
            records: Vec::new(),
        };
        // The initial forces, with node records for a first output; no time has passed, so no
        // shear increment.
        sim.evaluate_forces(true, 0.0);
        Ok(sim)
    }

    /// One step of velocity Verlet (kick, drift, forces, kick); `record` keeps node forces.
    pub fn step(&mut self, record: bool) {
        let dt = self.dt;
        let t = self.time + dt;
        let shapes = &self.shapes;
        for_each_body(&mut self.bodies, |b| match &b.drive {
            Drive::Free => {
                kick(b, &shapes[b.shape], 0.5 * dt);
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
        for w in &mut self.walls {
            w.move_to(t, dt);
        }
        self.evaluate_forces(record, dt);
        let shapes = &self.shapes;
        for_each_body(&mut self.bodies, |b| {
            if b.is_free() {
                kick(b, &shapes[b.shape], 0.5 * dt);
            }
        });
        self.step += 1;
        self.time = t;
    }

    /// Contact forces, gravity and damping at the current positions (velocities are the
    /// half-step ones inside a step); shear displacements grow by `v_t shear_dt`.
    fn evaluate_forces(&mut self, record: bool, shear_dt: f64) {
        let centres: Vec<Vector3<f64>> = self.bodies.iter().map(|b| b.position).collect();
        let radii: Vec<f64> = self
            .bodies
            .iter()
            .map(|b| self.shapes[b.shape].bounding_radius)
            .collect();
        // Each body's pairs in key order (its grain partners, then walls; prescribed grains meet
        // walls too, their reactions are an output), so the list is sorted like the histories.
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
        let outcomes: Vec<(PairOutcome, Option<PairHistory>)> = if keys.len() >= PARALLEL_PAIRS {
            keys.par_iter()
                .map(|key| self.pair(key, record, shear_dt))
                .collect()
        } else {
            keys.iter()
                .map(|key| self.pair(key, record, shear_dt))
                .collect()
        };

        // Deterministic reduction, in pair order.
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
        self.records.clear();
        for (key, (o, history)) in keys.iter().zip(outcomes) {
            let a = &mut self.bodies[key.a as usize];
            a.force += o.on_a.0;
            a.torque += o.on_a.1;
            match key.b {
                Partner::Body(j) => {
                    let b = &mut self.bodies[j as usize];
                    b.force += o.on_b.0;
                    b.torque += o.on_b.1;
                }
                Partner::Wall(w) => self.walls[w as usize].force += o.on_b.0,
            }
            self.contacts += o.nodes_in_contact;
            self.node_tests += o.node_tests;
            self.node_candidates += o.node_candidates;
            self.contact_energy += o.energy;
            self.records.extend(o.records);
            if let Some(h) = history {
                histories.push((*key, h));
            }
        }
        self.histories = histories;
        if self.local_damping > 0.0 {
            let alpha = self.local_damping;
            for b in self.bodies.iter_mut().filter(|b| b.is_free()) {
                let spin = b.spin();
                b.force = cundall(b.force, b.velocity, alpha);
                b.torque = cundall(b.torque, spin, alpha);
            }
        }
    }

    /// The contacts of one pair, and what it remembers for the next step.
    fn pair(&self, key: &PairKey, record: bool, dt: f64) -> (PairOutcome, Option<PairHistory>) {
        let old = self
            .histories
            .binary_search_by_key(key, |(k, _)| *k)
            .ok()
            .map(|i| &self.histories[i].1);
        match &self.law {
            ContactLaw::Nodes(law) => {
                let old = match old {
                    Some(PairHistory::Nodes(v)) => v.as_slice(),
                    _ => &[],
                };
                let step = Step { law, dt, record };
                let mut out = self.node_pair(key, old, &step);
                let shear = std::mem::take(&mut out.shear);
                (
                    out,
                    (!shear.is_empty()).then_some(PairHistory::Nodes(shear)),
                )
            }
            ContactLaw::HertzJaeger(law) => {
                let old = match old {
                    Some(PairHistory::Sphere(s)) => Some(s.as_ref()),
                    _ => None,
                };
                let (out, state) = self.sphere_pair(law, key, old, dt);
                (out, state.map(|s| PairHistory::Sphere(Box::new(s))))
            }
        }
    }

    /// Hertz-Jäger between a sphere and a sphere or plane.
    fn sphere_pair(
        &self,
        law: &HertzJaeger,
        key: &PairKey,
        old: Option<&crate::hertz::SpherePair>,
        dt: f64,
    ) -> (PairOutcome, Option<crate::hertz::SpherePair>) {
        let radius = |b: &Body| {
            self.shapes[b.shape]
                .sphere_radius
                .expect("spheres checked with the scene")
        };
        let a = &self.bodies[key.a as usize];
        let other = match key.b {
            Partner::Body(j) => {
                let b = &self.bodies[j as usize];
                Other::Sphere(b, radius(b))
            }
            Partner::Wall(w) => Other::Plane(&self.walls[w as usize]),
        };
        law.pair(a, radius(a), &other, old, dt)
    }

    /// Node law contacts of one pair.
    fn node_pair(
        &self,
        key: &PairKey,
        old: &[crate::narrow::NodeShear],
        step: &Step,
    ) -> PairOutcome {
        let mut out = PairOutcome::default();
        let a = &self.bodies[key.a as usize];
        let a_shape = &self.shapes[a.shape];
        match key.b {
            Partner::Wall(w) => {
                let wall = &self.walls[w as usize];
                side_contacts(
                    &self.side(0, key.a, 1.0),
                    &Receiver::Wall(wall),
                    old,
                    step,
                    &mut out,
                );
            }
            Partner::Body(j) => {
                let b = &self.bodies[j as usize];
                let b_shape = &self.shapes[b.shape];
                let a_gives = match self.roles {
                    NodeRoles::Both => None,
                    // The finer sampling gives nodes; ties go to the lower index (a).
                    NodeRoles::Finer => Some(a_shape.node_density >= b_shape.node_density),
                };
                let weight = if a_gives.is_none() { 0.5 } else { 1.0 };
                if a_gives != Some(false) {
                    side_contacts(
                        &self.side(0, key.a, weight),
                        &Receiver::Body(b, b_shape),
                        old,
                        step,
                        &mut out,
                    );
                }
                if a_gives != Some(true) {
                    side_contacts(
                        &self.side(1, j, weight),
                        &Receiver::Body(a, a_shape),
                        old,
                        step,
                        &mut out,
                    );
                }
            }
        }
        out
    }

    /// Body `giver` as side `s` of a pair.
    fn side(&self, s: u8, giver: u32, weight: f64) -> Side<'_> {
        let body = &self.bodies[giver as usize];
        Side {
            side: s,
            giver,
            body,
            shape: &self.shapes[body.shape],
            weight,
        }
    }

    /// Whether every grain's position, orientation and velocities are finite numbers (a run
    /// whose step is too large for its contacts blows up to infinities and NaN).
    pub fn is_finite(&self) -> bool {
        self.bodies.iter().all(|b| {
            [b.position, b.velocity, b.angular_velocity]
                .iter()
                .all(|v| v.iter().all(|x| x.is_finite()))
                && b.orientation.coords.iter().all(|x| x.is_finite())
        })
    }

    /// Energies of the current state.
    pub fn energies(&self) -> Energies {
        let mut e = Energies {
            contact: self.contact_energy,
            ..Energies::default()
        };
        for b in self.bodies.iter().filter(|b| b.is_free()) {
            let s = &self.shapes[b.shape];
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
            histories: self.histories.clone(),
        }
    }

    /// Puts a checkpoint's state back. The scene must have the same grains (bundles, in order)
    /// and walls; their motions come from the scene, so a continuation may change the loading.
    /// A checkpoint that does not fit the scene is refused with the first mismatch, and nothing
    /// is changed.
    pub fn restore(&mut self, mut state: State) -> Result<(), String> {
        if state.bodies.len() != self.bodies.len() || state.walls.len() != self.walls.len() {
            return Err(format!(
                "the checkpoint has {} grains and {} walls, the scene {} and {}",
                state.bodies.len(),
                state.walls.len(),
                self.bodies.len(),
                self.walls.len()
            ));
        }
        for (i, (saved, scene)) in state.bodies.iter_mut().zip(&self.bodies).enumerate() {
            if saved.shape != scene.shape {
                return Err(format!("grain {i} has another bundle in the scene"));
            }
            let finite = [saved.position, saved.velocity, saved.angular_velocity]
                .iter()
                .all(|v| v.iter().all(|x| x.is_finite()))
                && saved.orientation.coords.iter().all(|x| x.is_finite());
            if !finite {
                return Err(format!("grain {i} has a non-finite state"));
            }
            saved.drive = scene.drive.clone();
        }
        for (saved, scene) in state.walls.iter_mut().zip(&self.walls) {
            saved.geometry = scene.geometry.clone();
            saved.motion = scene.motion.clone();
        }
        if !state.histories.is_sorted_by_key(|(k, _)| *k) {
            return Err("the contact histories are not sorted by pair".into());
        }
        for (key, history) in &state.histories {
            let bodies = self.bodies.len() as u32;
            let partner_ok = match key.b {
                Partner::Body(j) => key.a < j && j < bodies,
                Partner::Wall(w) => (w as usize) < self.walls.len(),
            };
            let history_ok = match (history, &self.law) {
                (PairHistory::Nodes(list), ContactLaw::Nodes(_)) => list.iter().all(|s| {
                    let giver = match (s.side, key.b) {
                        (0, _) => key.a,
                        (1, Partner::Body(j)) => j,
                        _ => return false,
                    };
                    giver < bodies
                        && (s.node as usize)
                            < self.shapes[self.bodies[giver as usize].shape].nodes.len()
                }),
                (PairHistory::Sphere(_), ContactLaw::HertzJaeger(_)) => true,
                _ => false,
            };
            if key.a >= bodies || !partner_ok || !history_ok {
                return Err(format!(
                    "the contact history of pair {key:?} does not fit the scene or its contact law"
                ));
            }
        }
        self.step = state.step;
        self.time = state.time;
        self.bodies = state.bodies;
        self.walls = state.walls;
        self.histories = state.histories;
        Ok(())
    }
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

/// Half a kick: `v += F/m h`, and the body-frame angular momentum `L += R^T tau h`.
fn kick(b: &mut Body, s: &Shape, h: f64) {
    b.velocity += b.force * (h / s.mass);
    let torque = b.orientation.inverse_transform_vector(&b.torque);
    for k in 0..3 {
        b.angular_velocity[k] += torque[k] * h / s.moments[k];
    }
}

/// The drift: `X += v dt`, and the torque-free rotation over `dt` by the symmetric splitting of
/// Dullweber, Leimkuhler and McLachlan (J. Chem. Phys. 107, 1997): exact rotations about the
/// body axes 1, 2, 3, 2, 1 for `dt/2, dt/2, dt, dt/2, dt/2`. Each sub-rotation about axis `k`
/// turns the body by `theta = omega_k h` and the body-frame angular momentum by `-theta`, so the
/// scheme is symplectic and time-reversible, keeps `|L|` and the kinetic energy of each
/// sub-flow exactly, and includes the gyroscopic term of Euler's equations.
fn drift(b: &mut Body, s: &Shape, dt: f64) {
    b.position += b.velocity * dt;
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

/// The critical step `sqrt(m_eff / k)` (PHYSICS.md section 6), with `m_eff` half the smallest of
/// each free grain's mass and `I_min / r^2` (its inertia at the bounding radius, which rotation
/// sees), and `k` the stiffness of:
/// - one node spring: `k_n` (linear springs) or `k_n` times the largest node area (area
///   tractions); several nodes in contact stiffen a contact, which the safety factor covers;
/// - a Hertz contact of two of the smallest spheres at an overlap of 1 % of their radius
///   (`dN/d delta` grows as `sqrt(delta)`: deeper overlaps need a smaller safety factor).
pub fn critical_step(shapes: &[Arc<Shape>], bodies: &[Body], law: &ContactLaw) -> f64 {
    let mut m_eff = f64::INFINITY;
    let mut largest_area: f64 = 0.0;
    let mut smallest_radius = f64::INFINITY;
    for b in bodies.iter().filter(|b| b.is_free()) {
        let s = &shapes[b.shape];
        let i_min = s.moments.iter().copied().fold(f64::INFINITY, f64::min);
        let r = s.bounding_radius;
        m_eff = m_eff.min(0.5 * s.mass.min(i_min / (r * r)));
        largest_area = s.areas.iter().copied().fold(largest_area, f64::max);
        smallest_radius = smallest_radius.min(s.sphere_radius.unwrap_or(r));
    }
    let k = match law {
        ContactLaw::Nodes(l) if l.per_area => l.kn * largest_area,
        ContactLaw::Nodes(l) => l.kn,
        ContactLaw::HertzJaeger(h) => h.stiffness(0.5 * smallest_radius, 0.01 * smallest_radius),
    };
    (m_eff / k).sqrt()
}
