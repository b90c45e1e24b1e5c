//! The state of a run: everything that changes during it ([`State`]), saved whole so that a
//! continuation goes on bit for bit, and the identity of the experiment it belongs to
//! ([`Identity`]). A state is put back only when the simulation is the same experiment and the
//! state passes the simulation's own checks ([`Simulation::restore`]). The checkpoint file that
//! carries a state is the run application's (dem-run's `checkpoint` module).

use serde::{Deserialize, Serialize};

use crate::body::{Body, ShapeSource, too_far};
use crate::cell::Cell;
use crate::error::KeyError;
use crate::law::{Histories, PairKey, Partner};
use crate::ledger::Ledger;
use crate::sim::Simulation;
use crate::wall::{Wall, behind_wall};

/// What makes a run one experiment: a restart or a stage must have the same, and a scene that
/// differs in any of it is refused (the key that differs named). Everything else (the time
/// step, the law's coefficients, motions, servo targets, outputs, the end) may change between
/// a checkpoint and its continuation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Identity {
    /// The shapes, in the order the grains' `shape` indices refer to.
    pub shapes: Vec<ShapeSource>,
    /// Each grain's shape, in the scene's order (its length the grain count).
    pub grains: Vec<usize>,
    /// The periodic cell's periodic axes (none without a cell).
    pub periodic: Option<[bool; 3]>,
    /// The contact law (`[contact] law`).
    pub law: String,
}

impl Identity {
    /// The first difference of `scene`'s identity from this checkpoint's, as (key, message).
    pub fn differs(&self, scene: &Identity) -> Option<(String, String)> {
        let (a, b) = (self, scene);
        if a.grains.len() != b.grains.len() {
            return Some((
                "grains".into(),
                format!(
                    "the checkpoint's run has {} grains, the scene {}",
                    a.grains.len(),
                    b.grains.len()
                ),
            ));
        }
        if a.law != b.law {
            return Some((
                "contact.law".into(),
                format!(
                    "the checkpoint's run has law \"{}\", the scene \"{}\" (their contact histories differ)",
                    a.law, b.law
                ),
            ));
        }
        if a.periodic != b.periodic {
            let axes = |p: Option<[bool; 3]>| match p {
                None => "no periodic cell".to_string(),
                Some(p) => format!("a cell periodic along {p:?} (x, y, z)"),
            };
            return Some((
                "cell.periodic".into(),
                format!(
                    "the checkpoint's run has {}, the scene {}",
                    axes(a.periodic),
                    axes(b.periodic)
                ),
            ));
        }
        let source = |s: Option<&ShapeSource>| match s {
            Some(s) => format!(
                "{} at scale {} (bundle digest {})",
                s.bundle.display(),
                s.scale,
                &s.digest[..s.digest.len().min(12)]
            ),
            None => "no such shape".into(),
        };
        for (i, (&sa, &sb)) in a.grains.iter().zip(&b.grains).enumerate() {
            let (x, y) = (a.shapes.get(sa), b.shapes.get(sb));
            let same = match (x, y) {
                (Some(x), Some(y)) => x.digest == y.digest && x.scale == y.scale,
                _ => false,
            };
            if !same {
                return Some((
                    format!("grain {i}"),
                    format!(
                        "the checkpoint's grain is {}, the scene's {}",
                        source(x),
                        source(y)
                    ),
                ));
            }
        }
        None
    }
}

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
    /// The periodic cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell: Option<Cell>,
}

/// A process's share of a decomposed run's state ([`Simulation::run_state`]).
#[derive(Serialize, Deserialize)]
struct Share {
    ids: Vec<u32>,
    bodies: Vec<Body>,
    histories: Vec<(PairKey, serde_json::Value)>,
}

impl Simulation {
    /// What makes this run its experiment ([`Identity`]).
    pub fn identity(&self) -> Identity {
        Identity {
            shapes: self.world.sources.clone(),
            grains: self.partition.shape_ids.clone(),
            periodic: self.world.cell.as_ref().map(|c| c.periodic),
            law: self.parameters.law.name().into(),
        }
    }

    /// The mutable state, for a checkpoint.
    pub fn state(&self) -> State {
        State {
            step: self.world.step,
            time: self.world.time,
            bodies: self.world.bodies.clone(),
            walls: self.world.walls.clone(),
            histories: (self.world.histories.iter())
                .map(|(k, h)| (*k, h.save()))
                .collect(),
            ledger: self.totals.ledger,
            cell: self.world.cell.clone(),
        }
    }

    /// The state of the whole run, in the first process (`None` in the others): in a decomposed
    /// run, every process's grains and the histories of the pairs whose first grain it owns,
    /// gathered, and the ledger summed ([`Simulation::run_energies`]). Every process calls it.
    pub fn run_state(&self) -> Option<State> {
        let Some(p) = &self.partition.processes else {
            return Some(self.state());
        };
        let (_, ledger) = self.run_energies();
        let owned = &self.partition.ids[..self.partition.owned];
        let share = Share {
            ids: owned.to_vec(),
            bodies: self.world.bodies[..self.partition.owned].to_vec(),
            histories: (self.world.histories.iter())
                .filter(|(k, _)| owned.binary_search(&k.a).is_ok())
                .map(|(k, h)| (*k, h.save()))
                .collect(),
        };
        let all = p.gather_bytes(serde_json::to_vec(&share).expect("a share serializes"))?;
        let mut bodies: Vec<(u32, Body)> = Vec::new();
        let mut histories = Vec::new();
        for bytes in all {
            let s: Share = serde_json::from_slice(&bytes).expect("a share reads back");
            bodies.extend(s.ids.into_iter().zip(s.bodies));
            histories.extend(s.histories);
        }
        bodies.sort_unstable_by_key(|(i, _)| *i);
        histories.sort_by_key(|(k, _)| *k);
        Some(State {
            step: self.world.step,
            time: self.world.time,
            bodies: bodies.into_iter().map(|(_, b)| b).collect(),
            walls: self.world.walls.clone(),
            histories,
            ledger,
            cell: self.world.cell.clone(),
        })
    }

    /// Puts a checkpoint's state back. The scene must have the same grains (bundles, in order)
    /// and walls; motions, level-set updates and modal damping come from the scene, so a
    /// continuation may change the loading. A grain rigid in the checkpoint (its modes off) and
    /// deformable in the scene starts its modes at rest in its reference shape, the scene's
    /// amplitudes (a rigid preparation continued deformable, docs/experiments.md section 6); the
    /// return value counts those grains. A deformable grain made rigid would lose its
    /// deformation, and modes of another count are another grain: both are refused. A checkpoint
    /// that does not fit the scene is refused with the first mismatch, and nothing is changed.
    pub fn restore(&mut self, mut state: State) -> Result<usize, KeyError> {
        let refuse = |key: String, message: String| Err(KeyError::new(key, message));
        if state.bodies.len() != self.world.bodies.len()
            || state.walls.len() != self.world.walls.len()
        {
            return refuse(
                "state".into(),
                format!(
                    "the checkpoint has {} grains and {} walls, the scene {} and {}",
                    state.bodies.len(),
                    state.walls.len(),
                    self.world.bodies.len(),
                    self.world.walls.len()
                ),
            );
        }
        for (saved, scene) in state.walls.iter_mut().zip(&self.world.walls) {
            saved.geometry = scene.geometry.clone();
            saved.motion = scene.motion.clone();
            saved.servo = scene.servo.clone();
        }
        let mut started = 0;
        for (i, (saved, scene)) in state.bodies.iter_mut().zip(&self.world.bodies).enumerate() {
            let key = |k: &str| format!("state.bodies[{i}]{k}");
            if saved.shape != scene.shape {
                return refuse(key(".shape"), "another bundle than the scene's".into());
            }
            if !saved.is_finite() {
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
            let placed = too_far(&saved.position.into(), &self.world.shapes[saved.shape])
                .or_else(|| behind_wall(saved, &state.walls));
            if let Some(message) = placed {
                return refuse(key(".position"), message);
            }
            match (&mut saved.modes, &scene.modes) {
                (None, None) => {}
                (None, Some(m)) => {
                    saved.modes = Some(m.clone());
                    started += 1;
                }
                (Some(s), Some(m)) if s.eps.len() == m.eps.len() && s.rate.len() == m.eps.len() => {
                    s.take_settings(m)
                }
                (Some(_), None) => {
                    return refuse(
                        key(".modes"),
                        "deformable in the checkpoint and rigid in the scene (modes off): its deformation would be lost; restart it with its modes on".into(),
                    );
                }
                (Some(_), Some(_)) => {
                    return refuse(
                        key(".modes"),
                        "modes of another count than the scene's grain".into(),
                    );
                }
            }
            saved.drive = scene.drive.clone();
        }
        if !state.histories.is_sorted_by_key(|(k, _)| *k) {
            return refuse("state.histories".into(), "not sorted by pair".into());
        }
        let bodies = self.world.bodies.len() as u32;
        let nodes = |i: u32| {
            (self.world.bodies.get(i as usize))
                .map_or(0, |b| self.world.shapes[b.shape].nodes.len())
        };
        let mut histories = Histories::with_capacity(state.histories.len());
        for (key, saved) in state.histories {
            let partner_ok = match key.b {
                Partner::Body(j) => key.a < j && j < bodies,
                Partner::Wall(w) => (w as usize) < self.world.walls.len(),
            };
            let history = if key.a < bodies && partner_ok {
                self.parameters.law.load(&key, saved, &nodes)
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
        // The cell: its state in the checkpoint (a deformed cell, its rate), with the scene's
        // periodic axes and loading.
        if state.cell.is_some() != self.world.cell.is_some() {
            return refuse(
                "state.cell".into(),
                "the checkpoint and the scene differ in having a periodic cell".into(),
            );
        }
        if let (Some(saved), Some(scene)) = (&mut state.cell, &self.world.cell) {
            saved.periodic = scene.periodic;
            saved.loading = scene.loading.clone();
            let m = &saved.measured;
            let finite = (saved.origin.iter())
                .chain(saved.vectors.iter())
                .chain(saved.rate.iter())
                .chain(
                    m.stress
                        .iter()
                        .chain(m.stiffness.iter())
                        .chain(m.images.iter()),
                )
                .all(|x| x.is_finite());
            let volume = saved.vectors.determinant();
            if !(finite && volume.is_finite() && volume > 0.0) {
                return refuse(
                    "state.cell".into(),
                    format!(
                        "a cell of finite numbers and positive volume, got the volume {volume}"
                    ),
                );
            }
        }
        if !(state.time.is_finite() && state.time >= 0.0) {
            return refuse(
                "state.time".into(),
                format!("{} is not a finite number >= 0", state.time),
            );
        }
        self.world.step = state.step;
        self.world.time = state.time;
        self.world.bodies = state.bodies;
        self.world.walls = state.walls;
        self.world.histories = histories;
        self.totals.ledger = state.ledger;
        self.world.cell = state.cell;
        Ok(started)
    }
}
