//! The scene file (`scene.toml`, docs/formats.md): what to simulate and how.
//!
//! ```toml
//! [run]
//! dt = 1e-6              # or dt = "auto" (with safety = 0.2, docs/physics.md section 6)
//! steps = 100000         # or duration = 0.1 (time units); one of the two
//! stage = false          # true: steps or duration count from a restart's checkpoint
//! gravity = [0, 0, -9.81]
//! threads = 2            # rayon threads (the command line's --threads overrides it)
//! skin = 0.05            # neighbour-list skin, a length (default: 0.5 x the smallest grain's
//!                        # bounding radius; 0: search every step; at most 2 x the largest's):
//!                        # it changes the cost of a step, never its result
//!
//! [output]               # cadences in steps; 0 = never (history.csv: every 100 by default)
//! history_every = 100
//! vtk_every = 1000
//! checkpoint_every = 0
//! modal_grains = [0, 3]  # grains whose amplitudes history.csv carries (default: the first 16)
//!
//! [contact]              # one law for every contact; its keys are the law's (dem_core::law)
//! law = "linear-springs" # or "area-tractions", "hertz-jaeger", "hertz-mindlin" (spheres)
//! kn = 1e5               # normal stiffness: force/length per node, or force/length^3 (areas)
//! ks = 5e4               # shear stiffness, same units as kn
//! friction = 0.5         # Coulomb coefficient mu of the shear cap
//! normal_damping = 0.0   # viscous: force*time/length per node, or per area
//! local_damping = 0.0    # Cundall's non-viscous damping, a fraction in [0, 1)
//! nodes = "both"         # which grain's nodes are tested in a grain pair: "both" or "finer"
//!
//! # [contact] for spherical grains: Hertz normal force, Jäger's tangential law (jaeger crate)
//! # law = "hertz-jaeger"
//! # shear_modulus = 29e9  # G of the grains' material
//! # poisson_ratio = 0.2
//! # friction = 0.5
//! # approximation = 0.0   # Kuhn's pdif (absolute, like friction); 0 = exact history
//! # ... or the incremental Mindlin spring of common DEM codes, same keys but approximation:
//! # law = "hertz-mindlin"
//! # restitution = 0.9     # optional viscous damping (Tsuji), as a coefficient of restitution
//!
//! [[grains]]             # one grain; bundle paths are relative to the scene file
//! bundle = "sphere.grain"
//! scale = 1.0            # optional: the same grain s times larger, same material (physics.md 10)
//! position = [0, 0, 0]
//! orientation = [1, 0, 0, 0]   # unit quaternion (w, x, y, z) from local to global frame
//! # frame = "input"    # optional: position and orientation place the frame of the mesh the
//!                      # bundle was baked from (the FEM model's), not the grain's centre and
//!                      # principal axes: at the origin, the grain sits where its mesh was
//! velocity = [0, 0, 0]
//! angular_velocity = [0, 0, 0] # global frame
//! motion = { velocity = [0, 0, -1] }  # optional prescribed motion (see Motion)
//! # deformable bundles only (see ModesSpec): the modal state and how the level set follows it
//! modes = { levelset = "semi-lagrangian", amplitudes = [0.0], rates = [0.0], damping = "bundle" }
//! nodes = "give"         # optional: this grain's nodes ("give") or level set ("receive") in its
//!                        # grain pairs, unless the partner claims the same role (see NodeRole)
//! hold = ["rotation"]    # optional: degrees of freedom held, among "x", "y", "z", "rotation"
//!                        # (free grains; see Dof)
//!
//! [[lattices]]           # counts[0] x counts[1] x counts[2] grains, spacing apart (at least
//!                        # 1e-3 of the grain's bounding radius; every grain of a scene within
//!                        # 1e8 of its radius from the origin, where f64 still resolves it)
//! bundle = "sphere.grain"
//! origin = [0, 0, 0]
//! counts = [6, 6, 6]
//! spacing = [2.2, 2.2, 2.2]
//! velocity = [0, 0, 0]
//! modes = { levelset = "precomputed" }  # every grain of the lattice (deformable bundles)
//! hold = ["rotation"]    # for every grain of the lattice
//!
//! [[packings]]           # random packings with size distributions (crate::packing)
//! seed = 7
//! count = 500
//! region = { kind = "box", min = [0, 0, 0], max = [10, 10, 10] }
//! bundles = [{ bundle = "sphere.grain" }]
//! sizes = [[0.8, 0.5], [1.2, 0.5]]   # [scale, fraction]
//!
//! [cell]                 # optional: a periodic cell (dem_core::cell)
//! origin = [0, 0, 0]
//! size = [10, 10, 10]    # or vectors = [[10, 0, 0], [0, 10, 0], [0, 0, 10]]
//! periodic = [true, true, false]
//! velocity_gradient = [[0, 0.1, 0], [0, 0, 0], [0, 0, 0]]  # optional: the cell deforms, L (rows)
//! # servo = { pressure = [1e5, 1e5, 1e5], max_rate = 0.1 }  # optional: L_kk to target stresses
//!
//! [stop]                 # optional: end early when every condition holds (dem_core::measure::Stop)
//! unbalanced = 0.01      # the unbalanced-force ratio at most this
//! pressure = 1e5         # the sample's mean stress at least this (needs walls enclosing it)
//! # creep = { solid_fraction = 1e-4, over = 2000 }  # and the compaction ceased (docs/experiments.md)
//!
//! [[walls]]              # half-spaces and cylinders; grains live on the side the normal points to
//! kind = "plane"
//! point = [0, 0, 0]
//! normal = [0, 0, 1]
//! motion = { table = [[0, 0, 0, 0], [1, 0, 0, -0.1]] }  # time, displacement x, y, z
//! # or, instead of a motion, a servo to a normal stress (dem_core::wall::Servo):
//! # servo = { pressure = 1e5, max_speed = 0.01, gain = 0.5 }
//!
//! [[walls]]
//! kind = "cylinder"      # grains inside
//! point = [0, 0, 0]
//! axis = [0, 0, 1]
//! radius = 10
//! ```
//!
//! Unknown keys are refused, and every error names the key's path (`contact.kn`,
//! `grains[2].position`) with what was expected.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use dem_core::body::held;
use dem_core::cell::CellSpec;
use dem_core::error::{KeyError, check_finite};
use dem_core::law::ContactLaw;
use dem_core::levelset::registry;
use dem_core::measure::Stop;
use dem_core::modal::ModesSpec;
use dem_core::wall::WallSpec;

use crate::grains::{GrainSpec, Lattice, check_scale};
use crate::packing::Packing;

/// Why a scene could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SceneError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The scene file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A key is unknown, missing, mistyped or inconsistent.
    #[error("{}: {key}: {message}", path.display())]
    Key {
        /// The scene file.
        path: PathBuf,
        /// The key's path, e.g. `grains[2].position`.
        key: String,
        /// What was expected.
        message: String,
    },
    /// A grain bundle could not be read.
    #[error("{}: {key}: {source}", path.display())]
    Bundle {
        /// The scene file.
        path: PathBuf,
        /// The key that names the bundle.
        key: String,
        /// The bundle's error.
        source: Box<grain::FormatError>,
    },
}

impl SceneError {
    /// The error of key `e` of the scene file `path`.
    pub fn key(path: &Path, e: KeyError) -> SceneError {
        SceneError::Key {
            path: path.to_path_buf(),
            key: e.key,
            message: e.message,
        }
    }
}

/// The scene: as written in the file (`Scene<toml::Table>`, the `[contact]` table unread), and
/// checked, its contact law read (`Scene`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scene<C = Contact> {
    /// Time stepping and stop condition.
    pub run: Run,
    /// Output cadences.
    #[serde(default)]
    pub output: Output,
    /// The contact law and its parameters.
    pub contact: C,
    /// Single grains.
    #[serde(default)]
    pub grains: Vec<GrainSpec>,
    /// Lattices of grains.
    #[serde(default)]
    pub lattices: Vec<Lattice>,
    /// Random packings.
    #[serde(default)]
    pub packings: Vec<Packing>,
    /// Analytic boundaries.
    #[serde(default)]
    pub walls: Vec<WallSpec>,
    /// Conditions on the sample measures that end the run early.
    pub stop: Option<Stop>,
    /// The periodic cell.
    pub cell: Option<CellSpec>,
}

/// The time step: a number, or `"auto"`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TimeStep {
    /// Fixed (time units).
    Fixed(f64),
    /// From stiffness and masses (docs/physics.md section 6), times `run.safety`.
    Auto(Auto),
}

/// The word `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Auto {
    /// Automatic time step.
    Auto,
}

/// `[run]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Run {
    /// Time step.
    pub dt: TimeStep,
    /// Safety factor `beta` of the automatic step, in (0, 1].
    #[serde(default = "default_safety")]
    pub safety: f64,
    /// Number of steps (exclusive with `duration`).
    pub steps: Option<u64>,
    /// Simulated time (exclusive with `steps`).
    pub duration: Option<f64>,
    /// `steps` and `duration` count from the checkpoint a restart starts from (the next stage
    /// of an experiment: compress, then shear), not from step 0 (the end of an interrupted
    /// run). Without a restart, the same.
    #[serde(default)]
    pub stage: bool,
    /// Gravity (acceleration, global frame).
    #[serde(default)]
    pub gravity: [f64; 3],
    /// Threads (0: rayon's default, the number of cores); they stay busy for the whole run
    /// ([`dem_core::threads`]).
    #[serde(default)]
    pub threads: usize,
    /// The neighbour list's skin (a length, `>= 0`; [`dem_core::neighbours`]); default
    /// [`SKIN_DEFAULT`] times the smallest grain's bounding radius.
    pub skin: Option<f64>,
}

/// The default skin as a fraction of the smallest grain's bounding radius (YADE's default
/// `verletDist`; docs/performance.md, "The neighbour list").
pub const SKIN_DEFAULT: f64 = 0.5;

/// The largest skin a scene may ask for, as a multiple of the largest grain's bounding radius.
pub const SKIN_LARGEST: f64 = 2.0;

/// The most threads a run takes (more is a typo: no machine this runs on has them).
pub const MAX_THREADS: usize = 1024;

/// The most grains a scene holds (each grain costs kilobytes; ten million is beyond any machine
/// this runs on, and a typo in a lattice's counts would otherwise exhaust the memory).
pub const MAX_GRAINS: usize = 10_000_000;

/// Memory a run takes per grain, whatever its shape (shapes are shared): the body, its broad-phase
/// entries and contact histories, its history and checkpoint text. Measured: a lattice of 1e5
/// spheres peaks at 189 MB resident and one of 2e5 at 373 MB over one step with a checkpoint,
/// 1.84 kB per grain (`/usr/bin/time -v dem-run`).
pub const BYTES_PER_GRAIN: usize = 2048;

fn default_safety() -> f64 {
    0.2
}

/// `[output]`: cadences in steps, 0 for never.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Output {
    /// Rows of history.csv.
    pub history_every: u64,
    /// VTK point clouds of the surface nodes.
    pub vtk_every: u64,
    /// Checkpoints.
    pub checkpoint_every: u64,
    /// The grains (indices) whose amplitudes and generalized forces history.csv carries;
    /// default: the first [`MODAL_COLUMNS_DEFAULT`] grains whose modes are on.
    pub modal_grains: Option<Vec<usize>>,
}

/// How many deformable grains history.csv follows when the scene does not list them.
pub const MODAL_COLUMNS_DEFAULT: usize = 16;

impl Default for Output {
    fn default() -> Self {
        Output {
            history_every: 100,
            vtk_every: 0,
            checkpoint_every: 0,
            modal_grains: None,
        }
    }
}

/// `[contact]`: the law (its keys are its own, [`dem_core::law`]) and Cundall's local damping.
#[derive(Debug, Clone)]
pub struct Contact {
    /// The law, read and checked.
    pub law: Arc<dyn ContactLaw>,
    /// Cundall's local damping fraction, in `[0, 1)`.
    pub local_damping: f64,
}

impl Contact {
    /// The `[contact]` table: `law`, `local_damping` and the law's keys; `walls` for the laws
    /// that meet some kinds only.
    fn read(mut table: toml::Table, walls: &[WallSpec]) -> Result<Contact, KeyError> {
        let local_damping = match table.remove("local_damping") {
            None => 0.0,
            Some(v) => f64::deserialize(v).map_err(|e| {
                KeyError::new("contact.local_damping".into(), e.message().trim().into())
            })?,
        };
        if !(0.0..1.0).contains(&local_damping) {
            return Err(KeyError::new(
                "contact.local_damping".into(),
                format!("a fraction in [0, 1), got {local_damping}"),
            ));
        }
        let law = match table.remove("law") {
            Some(toml::Value::String(name)) => name,
            Some(v) => {
                return Err(KeyError::new(
                    "contact.law".into(),
                    format!("a law's name (a string), got {v}"),
                ));
            }
            None => {
                return Err(KeyError::new(
                    "contact.law".into(),
                    "missing: the contact law's name".into(),
                ));
            }
        };
        Ok(Contact {
            law: dem_core::law::registry::from_table(&law, table, walls)?,
            local_damping,
        })
    }
}

impl Scene {
    /// Reads and checks a scene file.
    pub fn read(path: &Path) -> Result<Scene, SceneError> {
        let io = |source| SceneError::Io {
            path: path.to_path_buf(),
            source,
        };
        let bytes = std::fs::read(path).map_err(io)?;
        let text = grain::text::utf8_text(bytes)
            .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
        Scene::parse(&text, path)
    }

    /// Parses and checks scene text (`path` names it in errors).
    pub fn parse(text: &str, path: &Path) -> Result<Scene, SceneError> {
        let de = toml::Deserializer::parse(text).map_err(|e| SceneError::Key {
            path: path.to_path_buf(),
            key: "(syntax)".into(),
            message: e.to_string().trim().replace('\n', " "),
        })?;
        let raw: Scene<toml::Table> = serde_path_to_error::deserialize(de).map_err(|e| {
            let key = e.path().to_string();
            SceneError::Key {
                path: path.to_path_buf(),
                key: if key == "." {
                    "(top level)".into()
                } else {
                    key
                },
                message: e.into_inner().message().trim().to_string(),
            }
        })?;
        let in_scene = |e: KeyError| SceneError::key(path, e);
        let scene = Scene {
            contact: Contact::read(raw.contact, &raw.walls).map_err(in_scene)?,
            run: raw.run,
            output: raw.output,
            grains: raw.grains,
            lattices: raw.lattices,
            packings: raw.packings,
            walls: raw.walls,
            stop: raw.stop,
            cell: raw.cell,
        };
        scene.check().map_err(in_scene)?;
        Ok(scene)
    }

    /// The consistency checks serde cannot make: `(key, message)` of the first failure.
    fn check(&self) -> Result<(), KeyError> {
        let fail = |key: &str, message: String| Err(KeyError::new(key.to_string(), message));
        let r = &self.run;
        match r.dt {
            TimeStep::Fixed(dt) if !(dt.is_finite() && dt > 0.0) => {
                return fail("run.dt", format!("a time step > 0 or \"auto\", got {dt}"));
            }
            _ => {}
        }
        if !(r.safety > 0.0 && r.safety <= 1.0) {
            return fail("run.safety", format!("in (0, 1], got {}", r.safety));
        }
        match (r.steps, r.duration) {
            (Some(_), Some(_)) | (None, None) => {
                return fail("run", "give exactly one of `steps` and `duration`".into());
            }
            (None, Some(d)) if !(d.is_finite() && d > 0.0) => {
                return fail("run.duration", format!("a duration > 0, got {d}"));
            }
            _ => {}
        }
        check_finite("run.gravity", &r.gravity)?;
        if let Some(skin) = r.skin
            && !(skin.is_finite() && skin >= 0.0)
        {
            return fail("run.skin", format!("a length >= 0, got {skin}"));
        }
        if r.threads > MAX_THREADS {
            return fail(
                "run.threads",
                format!("at most {MAX_THREADS} (0: one per core), got {}", r.threads),
            );
        }
        let mut grains = self.grains.len();
        for (i, l) in self.lattices.iter().enumerate() {
            grains = l
                .counts
                .iter()
                .try_fold(1usize, |n, &c| n.checked_mul(c))
                .and_then(|n| n.checked_add(grains))
                .filter(|&n| n <= MAX_GRAINS)
                .ok_or_else(|| {
                    KeyError::new(
                        format!("lattices[{i}].counts"),
                        format!(
                            "the scene's grains and lattices make more than {MAX_GRAINS} grains (this lattice: {:?})",
                            l.counts
                        ),
                    )
                })?;
        }
        for (i, p) in self.packings.iter().enumerate() {
            p.check(&format!("packings[{i}]"))?;
            grains = grains
                .checked_add(p.count)
                .filter(|&n| n <= MAX_GRAINS)
                .ok_or_else(|| {
                    KeyError::new(
                        format!("packings[{i}].count"),
                        format!(
                            "the scene's grains, lattices and packings make more than {MAX_GRAINS} grains (this packing: {})",
                            p.count
                        ),
                    )
                })?;
        }
        if grains == 0 {
            return fail("grains", "the scene has no grain".into());
        }
        // Within the count, the memory: refused here, not by the allocator mid-setup.
        let (needed, available) = (
            grains.saturating_mul(BYTES_PER_GRAIN),
            grain::memory::available(),
        );
        if needed > available {
            return fail(
                if !self.packings.is_empty() {
                    "packings"
                } else if !self.lattices.is_empty() {
                    "lattices"
                } else {
                    "grains"
                },
                format!(
                    "{grains} grains need about {:.1} GB ({BYTES_PER_GRAIN} bytes each), more than the {:.1} GB available to this process: fewer grains, or a larger machine",
                    needed as f64 / 1e9,
                    available as f64 / 1e9
                ),
            );
        }
        for (i, g) in self.grains.iter().enumerate() {
            let key = |k: &str| format!("grains[{i}].{k}");
            check_scale(g.scale, &key("scale"))?;
            check_finite(&key("position"), &g.position)?;
            check_finite(&key("velocity"), &g.velocity)?;
            check_finite(&key("angular_velocity"), &g.angular_velocity)?;
            let q = g.orientation;
            let norm = q.iter().map(|x| x * x).sum::<f64>().sqrt();
            if (norm - 1.0).abs() >= 1e-6 || norm.is_nan() {
                return fail(
                    &key("orientation"),
                    format!("a unit quaternion (w, x, y, z), got {q:?} of norm {norm}"),
                );
            }
            if let Some(m) = &g.motion {
                m.check(&key("motion"))?;
            }
            if !g.hold.is_empty() {
                if g.motion.is_some() {
                    return fail(
                        &key("hold"),
                        "a prescribed grain follows its motion; hold is for free grains".into(),
                    );
                }
                let (translation, rotation) = held(&g.hold);
                if (0..3).any(|k| translation[k] && g.velocity[k] != 0.0) {
                    return fail(
                        &key("velocity"),
                        format!("0 along the held axes {:?}, got {:?}", g.hold, g.velocity),
                    );
                }
                if rotation && g.angular_velocity != [0.0; 3] {
                    return fail(
                        &key("angular_velocity"),
                        format!(
                            "[0, 0, 0] with the rotation held, got {:?}",
                            g.angular_velocity
                        ),
                    );
                }
            }
            if let Some(m) = &g.modes {
                check_modes(m, &key("modes"))?;
            }
        }
        for (i, l) in self.lattices.iter().enumerate() {
            let key = |k: &str| format!("lattices[{i}].{k}");
            check_scale(l.scale, &key("scale"))?;
            check_finite(&key("origin"), &l.origin)?;
            check_finite(&key("velocity"), &l.velocity)?;
            if !l.spacing.iter().all(|s| s.is_finite() && *s > 0.0) {
                return fail(
                    &key("spacing"),
                    format!("three distances > 0, got {:?}", l.spacing),
                );
            }
            if let Some(m) = &l.modes {
                check_modes(m, &key("modes"))?;
            }
            let (translation, _) = held(&l.hold);
            if (0..3).any(|k| translation[k] && l.velocity[k] != 0.0) {
                return fail(
                    &key("velocity"),
                    format!("0 along the held axes {:?}, got {:?}", l.hold, l.velocity),
                );
            }
        }
        for (i, p) in self.packings.iter().enumerate() {
            let key = format!("packings[{i}]");
            for (b, ingredient) in p.bundles.iter().enumerate() {
                if let Some(m) = &ingredient.modes {
                    check_modes(m, &format!("{key}.bundles[{b}].modes"))?;
                }
            }
        }
        for (i, w) in self.walls.iter().enumerate() {
            w.check(&format!("walls[{i}]"))?;
        }
        if let Some(cell) = &self.cell {
            cell.check()?;
        }
        for (i, p) in self.packings.iter().enumerate() {
            let periodic = self.cell.as_ref().is_some_and(|c| c.periodic == [true; 3]);
            if p.region == crate::packing::Region::Cell && !periodic {
                return fail(
                    &format!("packings[{i}].region"),
                    "a [cell] periodic on its three axes, for the region \"cell\"".into(),
                );
            }
        }
        let walls: Vec<dem_core::wall::Wall> = self
            .walls
            .iter()
            .map(dem_core::wall::Wall::from_spec)
            .collect();
        if let Some(stop) = &self.stop {
            stop.check()?;
            let cell = self.cell.as_ref().map(CellSpec::cell);
            stop.check_volume(cell.as_ref(), &walls)?;
        }
        for (i, w) in walls.iter().enumerate() {
            if let Some(servo) = &w.servo
                && servo.area.is_none()
                && dem_core::measure::face_area(&walls, i).is_none()
            {
                return fail(
                    &format!("walls[{i}].servo.area"),
                    "missing, and the walls enclose no box (three pairs of facing planes) or closed cylinder whose face this wall is: give the face's area".into(),
                );
            }
        }
        Ok(())
    }
}

/// A grain's or lattice's `modes` (`key`): the modal checks ([`dem_core::modal::check_modes`])
/// and its level-set update, which must be registered ([`registry::entry`]).
fn check_modes(m: &ModesSpec, key: &str) -> Result<(), KeyError> {
    dem_core::modal::check_modes(m, key)?;
    registry::entry(&m.levelset, &format!("{key}.levelset")).map(|_| ())
}
