//! A run on disk: the step loop with its outputs, checkpoints and restart (docs/formats.md, "Scene and
//! run").
//!
//! `<out>/history.csv`: one row every `output.history_every` steps (and the first and last):
//! - `step,time`;
//! - the energies (dem_core::ledger::Energies, docs/physics.md section 3): `kinetic_translational,
//!   kinetic_rotational,potential_gravity,elastic_contact,kinetic_modal,elastic_modal,
//!   energy_total`;
//! - the ledger (dem_core::ledger::Ledger): `work_boundaries` (work done on the grains by walls and
//!   prescribed grains), `dissipated_local,dissipated_viscous,dissipated_modal,
//!   dissipated_friction`, and `energy_residual` = `energy_total` - its initial value -
//!   `work_boundaries` + the dissipated terms (zero up to the integration error);
//! - `node_contacts,momentum_x,momentum_y,momentum_z`;
//! - per wall `i`: `wall<i>_ux,wall<i>_uy,wall<i>_uz,wall<i>_fx,wall<i>_fy,wall<i>_fz` (its
//!   displacement, and the force the grains exert on it), and per prescribed grain `j` the same
//!   with `grain<j>_` (its displacement from the start and the force on it);
//! - per deformable grain `j` followed (`output.modal_grains`, default the first 16 whose modes
//!   are on) and mode `a`: `grain<j>_eps<a>` (amplitude), `grain<j>_rate<a>`,
//!   `grain<j>_feps<a>` (generalized contact force `F_eps`, Eq. 41) and `grain<j>_fint<a>`
//!   (`F_int(eps)`).
//!
//! Global frame, scene units.
//!
//! `<out>/vtk/nodes_<step>.vtp` every `output.vtk_every` steps: every surface node at its
//! current (deformed) position, with point data `grain` (index), `force` (its contact force),
//! `displacement` (its deformation displacement `R eps_a Phi_a`, global) and `eps<a>` (its
//! grain's amplitude of mode `a`, 0 for rigid grains), listed in `<out>/run.pvd` for ParaView.
//! With a periodic cell, `<out>/vtk/cell_<step>.vtp` at the same steps: the cell's twelve
//! edges at its current shape, listed in `<out>/cell.pvd` (open both series in ParaView).
//!
//! `<out>/checkpoint/step_<step>.json` every `output.checkpoint_every` steps, when the run is
//! interrupted, and when `[stop]` ends it (the state its conditions describe): the whole
//! mutable state (exact: JSON numbers round-trip f64) and the length of history.csv at that
//! moment, and the identity of the experiment (dem_core::state::Identity). `dem-run SCENE
//! --restart CHECKPOINT` (or `--restart RUN_DIR`: the latest checkpoint its manifest lists)
//! continues from it bit for bit: in the checkpoint's own directory, history.csv and run.pvd are
//! cut back to the checkpoint and continued, and the later checkpoints and node clouds removed;
//! in another `--out` directory (checked as a fresh run's) they start afresh after the
//! checkpoint: the first row is the first `history_every` step after it. With `run.stage = true` the scene's steps or
//! duration count from the checkpoint of another run directory it starts from (kept in its own
//! checkpoints, so that a stage interrupted and resumed in its directory ends where it would
//! have): the next stage of an experiment (compress, then shear) is a scene of its own
//! restarted from the last stage's run directory. The grains' and walls' motions come
//! from the scene, so a continuation may change the loading; a checkpoint of another experiment
//! (other bundles, scales, grain count or order, contact law, periodic axes) or that does not
//! fit the scene (walls, node indices) is refused, and so is a restart with no step left.
//!
//! What a run may write and remove in its directory (`manifest.jsonl`, `--overwrite`, `.lock`):
//! crate::rundir.
//!
//! `<out>/grains.toml`, for a scene with `[[packings]]`: the grains the packings placed, as
//! `[[grains]]` entries (bundle paths as in the scene, relative to its directory): put in place
//! of the `[[packings]]` sections, they start the same run (crate::packing).
//!
//! `<out>/summary.json` at the start (`status = "running"`) and at the end: `status`
//! (`finished`, `stopped`, `interrupted`, or `failed` with the `error`), `history_last_step`
//! (history.csv's last row), and `excursions`: each grain's amplitude that went beyond a
//! range its model rests on (the internal-force table, the precomputed level sets, a path
//! mode's snapshots: `dem_core::modal::Limit`), the step it first did and the amplitude farthest out.
//! The run also says so on standard error at the step it happens. `timings` splits the
//! invocation's wall-clock seconds by stage of the step (`dem_core::sim::Timings`).
//!
//! A run stops with an error when a grain's state becomes non-finite, or when its energy grows
//! beyond what the run can supply (dem_core::ledger::Ledger::runaway): both mean a time step too large
//! for the scene. Every file but history.csv is written atomically; history.csv
//! grows by whole rows, flushed at checkpoints and at the end.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use grain::vtk::{PointData, PvdEntry, read_pvd, write_lines, write_pvd, write_pvtp, write_vtp};
use serde::{Deserialize, Serialize};

use dem_core::body::Drive;
use dem_core::error::KeyError;
use dem_core::modal::Excursion;
use dem_core::sim::{Simulation, Timings};
use dem_core::view::View;

use crate::checkpoint::{CHECKPOINT_SCHEMA, Checkpoint};
use crate::error::{RunError, file_error};
use crate::rundir::{RunDir, Take};
use crate::scene::{MODAL_COLUMNS_DEFAULT, Scene, SceneError, TimeStep};

/// The most steps a run may take: 1e12 is months of computing at a million steps per second,
/// so more is a unit slip, not a run.
pub const MAX_STEPS: f64 = 1e12;

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The run directory.
    pub out: PathBuf,
    /// Threads (`None`: the scene's).
    pub threads: Option<usize>,
    /// Continue from this checkpoint.
    pub restart: Option<PathBuf>,
    /// Show a progress bar (on a terminal).
    pub progress: bool,
    /// A fresh run may replace an earlier run's files in `out` (refused otherwise).
    pub overwrite: bool,
}

/// The ledger error past which a run warns (at its end, on standard error): the integration added
/// or lost energy that no load or dissipation accounts for (a Hertz impact far deeper than the
/// automatic step assumed, a step too large for the stiffness, a grain jittering at the end of
/// its path's range), and every energy-based result carries the error. Unstable runs are
/// stopped far later, when the residual exceeds all the run supplied.
pub const LEDGER_WARNING: f64 = 0.01;

/// What a run reports (also written as summary.json).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// How the run ended, or that it is running.
    pub status: Status,
    /// Steps taken in total (including before a restart).
    pub steps: u64,
    /// Simulated time.
    pub time: f64,
    /// The step of history.csv's last row (none before its first).
    pub history_last_step: Option<u64>,
    /// Time step.
    pub dt: f64,
    /// Grains.
    pub grains: usize,
    /// Threads used.
    pub threads: usize,
    /// Wall-clock seconds of this invocation's steps.
    pub wall_seconds: f64,
    /// Steps per second of this invocation.
    pub steps_per_second: f64,
    /// Wall-clock seconds of this invocation's steps, by stage of the step
    /// ([`dem_core::sim::Timings`]; the rest of `wall_seconds` is output and checks).
    pub timings: Timings,
    /// Node contacts at the end.
    pub node_contacts: usize,
    /// Kinetic + potential + contact + modal energy at the end.
    pub energy_total: f64,
    /// The energy ledger's residual at the end.
    pub energy_residual: f64,
    /// The ledger error of this invocation's steps: the largest `|residual|` over the most the
    /// run supplied ([`dem_core::ledger::Ledger::supplied`]); past [`LEDGER_WARNING`] the run warned.
    #[serde(default)]
    pub ledger_error: f64,
    /// Ended early by the scene's `[stop]` conditions: the step and the conditions met.
    #[serde(default)]
    pub stopped: Option<String>,
    /// Why a failed run failed.
    #[serde(default)]
    pub error: Option<String>,
    /// Amplitudes beyond a range their grain's model rests on (module docs).
    pub excursions: Vec<Excursion>,
    /// The last checkpoint written, if any.
    pub last_checkpoint: Option<PathBuf>,
    /// A decomposed run's grid, grains per process and traffic (dem_core::domain::Decomposition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<dem_core::domain::Decomposition>,
}

/// Runs a scene to its stop condition, or until `stop` is raised (then a checkpoint is written).
pub fn run(
    scene_path: &Path,
    options: &RunOptions,
    stop: &AtomicBool,
) -> Result<Summary, RunError> {
    let scene = Scene::read(scene_path)?;
    let threads = threads(&scene, scene_path, options)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| file_error(scene_path, e))?;
    pool.install(|| {
        run_in_pool(
            &scene,
            scene_path,
            options,
            stop,
            pool.current_num_threads(),
            None,
        )
    })
}

/// Runs a scene over the processes of `world` (`mpirun -n N dem-run scene.toml`), each with
/// `--threads` (or the scene's) rayon threads; the first process writes the run's files
/// ([`run()`]'s, with the same scene files), the cuts rebalanced every `rebalance`
/// steps (0: never; [`crate::mpi::Mpi::decompose`]). MPI must be initialized at thread level
/// `MPI_THREAD_SERIALIZED` or higher.
#[cfg(feature = "mpi")]
pub fn run_mpi(
    scene_path: &Path,
    options: &RunOptions,
    stop: &AtomicBool,
    world: &::mpi::topology::SimpleCommunicator,
    rebalance: u64,
) -> Result<Summary, RunError> {
    use ::mpi::traits::Communicator;
    let scene = Scene::read(scene_path)?;
    let threads = threads(&scene, scene_path, options)?;
    // The steps run on this thread, which makes the MPI calls; rayon's global pool serves the
    // parallel loops inside them.
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
        .map_err(|e| RunError::File {
            path: scene_path.to_path_buf(),
            message: format!("the thread pool: {e}"),
        })?;
    let split = |sim: &mut Simulation| crate::mpi::Mpi::decompose(world, sim, rebalance);
    run_in_pool(
        &scene,
        scene_path,
        options,
        stop,
        rayon::current_num_threads(),
        Some((world.rank() == 0, &split)),
    )
}

/// The threads a run asks for (`--threads`, else the scene's; 0: one per core).
fn threads(scene: &Scene, scene_path: &Path, options: &RunOptions) -> Result<usize, RunError> {
    let threads = options.threads.unwrap_or(scene.run.threads);
    if threads > crate::scene::MAX_THREADS {
        return Err(file_error(
            scene_path,
            format!(
                "--threads: at most {} (0: one per core), got {threads}",
                crate::scene::MAX_THREADS
            ),
        ));
    }
    Ok(threads)
}

/// How a decomposed run splits its simulation (crate::mpi): whether this is the first
/// process, and the split of the whole scene's simulation, built (or restored) the same in
/// every process.
type Decompose<'a> = (bool, &'a dyn Fn(&mut Simulation));

fn run_in_pool(
    scene: &Scene,
    scene_path: &Path,
    options: &RunOptions,
    stop: &AtomicBool,
    threads: usize,
    decompose: Option<Decompose>,
) -> Result<Summary, RunError> {
    let out = &options.out;
    // The first process writes the run's files.
    let first = decompose.is_none_or(|(first, _)| first);
    // Everything is read and checked before the directory is touched: a refused run changes
    // no file.
    let (mut sim, packed) = crate::build::with_packings(scene, scene_path)?;
    // The scene's settings, kept in every checkpoint and compared with a restart's.
    let settings = std::fs::read_to_string(scene_path)
        .ok()
        .and_then(|t| crate::checkpoint::settings(&t));
    let restart = match &options.restart {
        Some(given) => Some(restore(&mut sim, scene, scene_path, &settings, given, out)?),
        None => None,
    };
    let own = restart.as_ref().is_some_and(|r| r.own);
    if own && options.overwrite {
        return Err(file_error(
            out,
            "--overwrite with a restart from this directory's own checkpoint: the restart continues its run (cut back to the checkpoint); there is nothing to replace",
        ));
    }
    // A stage continues another scene's run in a directory of its own; resumed there, it is
    // its own scene's run.
    if let Some(earlier) = crate::rundir::scene_of(out)?.filter(|_| own && scene.run.stage) {
        let this = scene_path
            .canonicalize()
            .map_err(|e| file_error(scene_path, e))?;
        if earlier != this {
            return Err(file_error(
                out,
                format!(
                    "holds the run of {}, which this stage's checkpoint continues: a stage (run.stage = true) starts its own run directory; give it another --out",
                    earlier.display()
                ),
            ));
        }
    }
    let followed = modal_grains(scene, &sim).map_err(|e| SceneError::key(scene_path, e))?;
    // Where the run's steps or duration count from (run.stage).
    let origin = restart.as_ref().map_or((0, 0.0), |r| r.origin);
    let total = last_step(scene, scene_path, &sim, origin, restart.as_ref())?;
    let mut files = Files {
        root: out.clone(),
        dir: None,
    };
    if first {
        let how = match own {
            true => Take::Continue,
            false => Take::Fresh {
                overwrite: options.overwrite,
            },
        };
        let mut dir = RunDir::take(out, scene_path, how)?;
        if own {
            dir.rewind(sim.world.step)?;
        }
        files.dir = Some(dir);
    }
    if !packed.is_empty() && restart.is_none() && first {
        for (i, g) in packed.iter().enumerate() {
            eprintln!(
                "dem-run: packings[{i}]: {} grains placed in {} attempts, solid fraction {:.4} of the region",
                g.grains.len(),
                g.attempts,
                g.solid_fraction
            );
        }
        let path = files.claim("grains.toml")?;
        let text = crate::packing::grains_toml(scene_path, &packed);
        grain::atomic::write_file_atomically(&path, |w| w.write_all(text.as_bytes()))
            .map_err(|e| file_error(&path, e))?;
    }
    if first
        && restart.is_none()
        && dem_core::measure::volume(sim.world.cell.as_ref(), &sim.world.walls).is_none()
    {
        eprintln!(
            "dem-run: no cell periodic on its three axes, and the walls enclose no box (three pairs of facing planes) or cylinder (a cylinder and two planes across it): history.csv has no sample volume, stress or solid fraction"
        );
    }
    let mut pvd = Series::default();
    if own && first {
        // The series as far as the checkpoint, written back at once: the later node clouds
        // were rewound, and a continuation without VTK output would leave them listed.
        for (name, series) in [("run.pvd", &mut pvd.nodes), ("cell.pvd", &mut pvd.cell)] {
            let pvd_path = out.join(name);
            if pvd_path.is_file() {
                *series = read_pvd(&pvd_path).map_err(|e| file_error(&pvd_path, e))?;
                series.retain(|e| e.time <= sim.world.time);
                write_pvd(&pvd_path, series).map_err(|e| file_error(&pvd_path, e))?;
            }
        }
    }
    let keep = restart.as_ref().and_then(|r| r.history_bytes);
    let mut history = History::open(&mut files, &sim, &followed, keep, first)?;
    let mut end = End {
        first_step: sim.world.step,
        started: Instant::now(),
        threads,
        last_checkpoint: None,
        stopped: None,
        largest: (0.0, 0.0),
    };
    // Until the run ends, its summary says it is running (a run killed leaves that).
    write_summary(&mut files, &end.summary(&sim, &history, Status::Running))?;
    if let Some((_, split)) = decompose {
        split(&mut sim);
    }
    sim.totals.timings = Timings::default();
    let stamp = Stamp { origin, settings };
    let ran = run_steps(
        &mut sim,
        scene,
        options,
        stop,
        total,
        &stamp,
        restart.is_none(),
        &mut files,
        &mut history,
        &mut pvd,
        &mut end,
    );
    if matches!(ran, Err(RunError::File { .. })) && sim.partition.processes.is_some() {
        // A file error is one process's: it stops the decomposed run (crate::mpi) without a
        // summary, whose sums would wait for the other processes.
        return ran.map(|_| unreachable!("an error"));
    }
    // Whatever ended it, summary.json says how, and where history.csv ends.
    let (status, error) = match &ran {
        Ok(s) => (*s, None),
        Err(e) => {
            history.flush()?;
            (Status::Failed, Some(e.to_string()))
        }
    };
    if end.ledger_error() > LEDGER_WARNING && first {
        let (residual, supplied) = end.largest;
        eprintln!(
            "dem-run: warning: the energy ledger was off by up to {residual:e}, {:.1} % of the most energy the run supplied ({supplied:e}): the integration added or lost energy the loads and dissipation do not account for (a step that does not resolve the contacts, or forces past a table's, samples' or path's range; see the excursions), and energy-based results carry the error; lower run.dt or run.safety (summary.json: ledger_error)",
            100.0 * end.ledger_error()
        );
    }
    let summary = Summary {
        error,
        ..end.summary(&sim, &history, status)
    };
    write_summary(&mut files, &summary)?;
    ran.map(|_| summary)
}

/// What every checkpoint of a run carries besides its state ([`Checkpoint`]).
struct Stamp {
    /// Where the run's steps or duration count from.
    origin: (u64, f64),
    /// The scene's settings (crate::checkpoint::settings).
    settings: Option<serde_json::Value>,
}

/// What a restart took from its checkpoint.
struct Restart {
    /// The checkpoint is one this run directory's run wrote: its files continue.
    own: bool,
    /// The length of history.csv to keep (a restart in its own directory).
    history_bytes: Option<u64>,
    /// Where the run's steps or duration count from ([`Checkpoint::origin`]).
    origin: (u64, f64),
    /// The run continues at another step than its checkpoint's.
    new_dt: bool,
}

/// Puts the checkpoint `given` names (a file, or a run directory's latest) into `sim`, after
/// checking that the scene is its experiment ([`dem_core::state::Identity`]) and its state
/// the scene's to run; says on standard error what the restart took from where, and which of
/// the scene's `settings` changed since the checkpoint.
fn restore(
    sim: &mut Simulation,
    scene: &Scene,
    scene_path: &Path,
    settings: &Option<serde_json::Value>,
    given: &Path,
    out: &Path,
) -> Result<Restart, RunError> {
    let path = &latest_checkpoint(given)?;
    let c = Checkpoint::read(path).map_err(|e| file_error(path, e))?;
    match &c.identity {
        Some(identity) => {
            if let Some((key, message)) = identity.differs(&sim.identity()) {
                return Err(file_error(
                    path,
                    format!(
                        "{key}: {message}: the scene {} is another experiment than the checkpoint's run; restart it with the scene of that run (its grains, law and cell; loading, dt and coefficients may change)",
                        scene_path.display()
                    ),
                ));
            }
        }
        None if sim.partition.is_first() => eprintln!(
            "dem-run: warning: {} is a checkpoint of schema 2, without the identity of its experiment: only its grain count, shapes' order and walls are checked against the scene",
            path.display()
        ),
        None => {}
    }
    // A fixed step is the scene's (a restart after a divergence takes the lowered step); an
    // automatic one stays the checkpoint's, computed for the run's start.
    let fixed = matches!(scene.run.dt, TimeStep::Fixed(_));
    if !fixed {
        sim.parameters.dt = c.dt;
    }
    let new_dt = sim.parameters.dt != c.dt;
    sim.restore(c.state)
        .map_err(|e| file_error(path, e.to_string()))?;
    dem_core::timestep::check_wall_steps(
        &sim.world.shapes,
        &sim.world.walls,
        sim.world.cell.as_ref(),
        sim.parameters.dt,
    )
    .map_err(|e| file_error(path, e.to_string()))?;
    // A checkpoint of this run directory continues its files; one of another run directory
    // (an earlier stage, a copy) starts them afresh.
    let own = crate::rundir::is_own(out, path)?;
    if let (Some(then), Some(now), true) = (&c.settings, settings, sim.partition.is_first()) {
        let changes = crate::checkpoint::changes(then, now);
        eprintln!(
            "dem-run: restart: {}",
            match changes.is_empty() {
                true => "no setting of the scene changed since the checkpoint".to_string(),
                false => format!("changed since the checkpoint: {}", changes.join("; ")),
            }
        );
    }
    if sim.partition.is_first() {
        eprintln!(
            "dem-run: restart from {} at step {} (t = {:e}){}: the grains, walls, amplitudes, contact histories and energy ledger are the checkpoint's; dt = {:e} is {}; the contact law's coefficients, motions, servo targets, outputs and end are the scene's",
            path.display(),
            sim.world.step,
            sim.world.time,
            match own {
                true => ", continuing this directory's run",
                false => ", into a run directory of its own",
            },
            sim.parameters.dt,
            match (fixed, new_dt) {
                (false, _) => "the checkpoint's (run.dt = \"auto\")".to_string(),
                (true, false) => "the scene's, as in the checkpoint".to_string(),
                (true, true) => format!("the scene's (the checkpoint ran at {:e})", c.dt),
            }
        );
    }
    Ok(Restart {
        own,
        history_bytes: own.then_some(c.history_bytes),
        // A stage resumed in its own directory keeps its origin; started from another run's
        // checkpoint, it counts from there.
        origin: match (own, scene.run.stage) {
            (true, _) => c.origin,
            (false, true) => (sim.world.step, sim.world.time),
            (false, false) => (0, 0.0),
        },
        new_dt,
    })
}

/// The step the run ends at: the scene's steps or duration from `origin`. Refused: more than
/// [`MAX_STEPS`], and a restart that would take no step.
fn last_step(
    scene: &Scene,
    scene_path: &Path,
    sim: &Simulation,
    origin: (u64, f64),
    restart: Option<&Restart>,
) -> Result<u64, RunError> {
    let duration = scene.run.duration.unwrap_or(0.0);
    let key = match scene.run.steps {
        Some(_) => "run.steps",
        None => "run.duration",
    };
    let steps = match scene.run.steps {
        Some(n) => origin.0 as f64 + n as f64,
        // A stage, or a run at a new step, ends at its duration from its origin (the 1e-9
        // absorbs the round-off of the time summed so far).
        None if origin.0 > 0 || restart.is_some_and(|r| r.new_dt) => {
            sim.world.step as f64
                + ((origin.1 + duration - sim.world.time) / sim.parameters.dt - 1e-9)
                    .ceil()
                    .max(0.0)
        }
        None => (duration / sim.parameters.dt).ceil(),
    };
    let refuse = |message: String| {
        Err(RunError::Scene(SceneError::Key {
            path: scene_path.to_path_buf(),
            key: key.into(),
            message,
        }))
    };
    if steps > MAX_STEPS {
        return refuse(format!(
            "{steps:.3e} steps of dt = {:e}: at most {MAX_STEPS:e} (months of computing even at a million steps per second; is dt or the duration in the wrong unit?)",
            sim.parameters.dt
        ));
    }
    if restart.is_some() && steps <= sim.world.step as f64 {
        let counted = match origin.0 {
            0 => "from step 0".to_string(),
            s => format!("from step {s}, where its stage began"),
        };
        return refuse(format!(
            "the checkpoint is at step {} (t = {:e}) and the scene's run, counted {counted}, ends at step {steps}: nothing is left to run (to run further, raise {key}; to start a next stage from it, set run.stage = true and give the stage its own --out)",
            sim.world.step, sim.world.time
        ));
    }
    Ok(steps as u64)
}

/// Where a process writes: the run directory, held by the first process (which lists every
/// file in its manifest, [`crate::rundir`]); the other processes of a decomposed run write
/// their VTK pieces under the same root.
struct Files {
    root: PathBuf,
    dir: Option<RunDir>,
}

impl Files {
    /// The path of `rel` in the run directory, listed before it is written.
    fn claim(&mut self, rel: &str) -> Result<PathBuf, RunError> {
        match &mut self.dir {
            Some(d) => d.claim(rel),
            None => Ok(self.root.join(rel)),
        }
    }
}

/// How a run ended (summary.json's `status`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Still running (or killed: the summary of a run that ended says how).
    Running,
    /// It took its steps or reached its duration.
    Finished,
    /// The scene's `[stop]` conditions were met (`stopped` says which, and when).
    Stopped,
    /// Stopped by Ctrl-C (a checkpoint was written).
    Interrupted,
    /// It failed (`error` says why, as standard error did); history.csv ends at
    /// `history_last_step`, and the state the summary gives may be past it.
    Failed,
}

/// What the step loop keeps for the summary.
struct End {
    /// The step this invocation began at.
    first_step: u64,
    started: Instant,
    threads: usize,
    last_checkpoint: Option<PathBuf>,
    /// The `[stop]` conditions met, and when.
    stopped: Option<String>,
    /// The ledger's largest `|residual|` and the most the run supplied, over this invocation.
    largest: (f64, f64),
}

impl End {
    /// The ledger error of this invocation's steps ([`Summary::ledger_error`]).
    fn ledger_error(&self) -> f64 {
        let (residual, supplied) = self.largest;
        if supplied > 0.0 {
            residual / supplied
        } else {
            0.0
        }
    }

    /// The run's summary at this state (every process calls it: it sums over them).
    fn summary(&self, sim: &Simulation, history: &History, status: Status) -> Summary {
        let wall = self.started.elapsed().as_secs_f64();
        let (energies, ledger) = sim.run_energies();
        let processes = sim.partition.processes.as_ref().map(|p| {
            let t = p.traffic();
            let mut x = [t.migrants, t.migrant_bytes, t.ghosts, t.ghost_bytes].map(|v| v as f64);
            p.sum(&mut x);
            let [migrants, migrant_bytes, ghosts, ghost_bytes] = x.map(|v| v as u64);
            let mut owned = vec![0.0; p.size()];
            owned[p.rank()] = sim.partition.owned as f64;
            p.sum(&mut owned);
            dem_core::domain::Decomposition {
                grid: p.grid(),
                owned: owned.into_iter().map(|n| n as usize).collect(),
                traffic: dem_core::domain::Traffic {
                    migrants,
                    migrant_bytes,
                    ghosts,
                    ghost_bytes,
                    ..t
                },
            }
        });
        Summary {
            status,
            steps: sim.world.step,
            time: sim.world.time,
            history_last_step: history.last_step,
            dt: sim.parameters.dt,
            grains: sum_count(sim, sim.partition.owned),
            threads: self.threads,
            wall_seconds: wall,
            steps_per_second: (sim.world.step - self.first_step) as f64 / wall.max(1e-12),
            timings: sim.totals.timings,
            node_contacts: sum_count(sim, sim.last.contacts),
            energy_total: energies.total(),
            energy_residual: ledger.residual(&energies),
            ledger_error: self.ledger_error(),
            excursions: all_excursions(sim),
            stopped: self.stopped.clone(),
            error: None,
            last_checkpoint: self.last_checkpoint.clone(),
            processes,
        }
    }
}

/// Writes summary.json (the first process).
fn write_summary(files: &mut Files, summary: &Summary) -> Result<(), RunError> {
    if files.dir.is_none() {
        return Ok(());
    }
    let path = files.claim("summary.json")?;
    let json = serde_json::to_string_pretty(summary).expect("summary serializes");
    grain::atomic::write_file_atomically(&path, |w| w.write_all(json.as_bytes()))
        .map_err(|e| file_error(&path, e))
}

/// The step loop, from the state in `sim` to step `total`, a `[stop]`, an interruption or an
/// error; `fresh`: the run starts here (its first row and node cloud are the initial state's).
#[allow(clippy::too_many_arguments)]
fn run_steps(
    sim: &mut Simulation,
    scene: &Scene,
    options: &RunOptions,
    stop: &AtomicBool,
    total: u64,
    stamp: &Stamp,
    fresh: bool,
    files: &mut Files,
    history: &mut History,
    pvd: &mut Series,
    end: &mut End,
) -> Result<Status, RunError> {
    let every = |n: u64, step: u64| n > 0 && step.is_multiple_of(n);
    let o = &scene.output;
    // A restart's first row is the run's next: the checkpoint's state was written by the run
    // that made it (measures of its last force evaluation that a checkpoint does not keep).
    if fresh {
        history.row(sim)?;
        if o.vtk_every > 0 {
            write_vtk(files, sim, pvd)?;
        }
    }
    if let Some(e) = level_set_fault(sim) {
        return Err(e);
    }
    let bar = progress(
        options.progress && sim.partition.is_first(),
        total,
        sim.world.step,
    );
    let say = |line: String| match &bar {
        Some(b) => b.println(line),
        None => eprintln!("{line}"),
    };
    let mut status = Status::Finished;
    while sim.world.step < total {
        let next = sim.world.step + 1;
        let record = every(o.vtk_every, next);
        sim.step(record);
        if let Some(e) = level_set_fault(sim) {
            history.row(sim)?;
            return Err(e);
        }
        // No row: a wall that met its facing wall leaves no sample volume to write.
        let servo = sim.last.servo_fault.take();
        if sim.anywhere(servo.is_some()) {
            let (step, time) = (sim.world.step, sim.world.time);
            return Err(match servo {
                Some(fault) => RunError::Servo { step, time, fault },
                // The process that owns the grain says which.
                None => RunError::Elsewhere {
                    step,
                    time,
                    message:
                        "another process found a servo wall out of reach (its message says which)"
                            .into(),
                },
            });
        }
        if sim.last.largest_reach > sim.partition.ghost_reach && sim.partition.processes.is_some() {
            return Err(RunError::Elsewhere {
                step: sim.world.step,
                time: sim.world.time,
                message: format!(
                    "a grain's reach grew to {:e}, beyond the {:e} the step's ghosts were sent for (a deformable grain's amplitude jumped)",
                    sim.last.largest_reach, sim.partition.ghost_reach
                ),
            });
        }
        // A deforming cell narrows; a deformable grain's reach grows with its amplitudes.
        let largest = dem_core::body::largest_radius(&sim.world.shapes).max(sim.last.largest_reach);
        if let Some(Err(e)) =
            (sim.world.cell.as_ref()).map(|c| dem_core::cell::check_cell(c, largest))
        {
            history.row(sim)?;
            return Err(RunError::Cell {
                step: sim.world.step,
                time: sim.world.time,
                message: e.message,
            });
        }
        if sim.anywhere(!sim.is_finite()) {
            return Err(RunError::Diverged {
                step: sim.world.step,
                time: sim.world.time,
            });
        }
        let (energies, ledger) = sim.run_energies();
        if ledger.runaway(&energies) {
            history.row(sim)?;
            return Err(RunError::EnergyGrowth {
                step: sim.world.step,
                time: sim.world.time,
                residual: ledger.residual(&energies),
                supplied: ledger.supplied(&energies),
            });
        }
        // The ledger's largest residual against the most the run supplied, over the run (at one
        // step the supplied energy can be tiny: a load just begun).
        let (residual, supplied) = &mut end.largest;
        *residual = residual.max(ledger.residual(&energies).abs());
        *supplied = supplied.max(ledger.supplied(&energies));
        // Those that began this step (a decomposed run's processes each report their grains').
        for x in sim
            .totals
            .excursions
            .iter()
            .filter(|x| x.first_step == sim.world.step)
        {
            say(format!("dem-run: warning: {x}"));
        }
        if every(o.history_every, sim.world.step) || sim.world.step == total {
            history.row(sim)?;
        }
        if record {
            write_vtk(files, sim, pvd)?;
        }
        if every(o.checkpoint_every, sim.world.step) {
            end.last_checkpoint = Some(checkpoint(files, sim, stamp, history)?);
        }
        if let Some(b) = &bar {
            b.set_position(sim.world.step);
        }
        if let Some(met) = (scene.stop.as_ref().filter(|s| s.due(sim.world.step)))
            .and_then(|s| s.reached(sim.world.step, &sim.measures()))
        {
            // The measures are the same numbers in every process: all stop here.
            say(format!(
                "dem-run: stop conditions met at step {}: {met}",
                sim.world.step
            ));
            status = Status::Stopped;
            end.stopped = Some(format!("step {}: {met}", sim.world.step));
        } else if sim.anywhere(stop.load(Ordering::Relaxed)) {
            status = Status::Interrupted;
        } else {
            continue;
        }
        // The state the conditions describe, for a next stage to restart from; or where the
        // interruption came.
        if !every(o.history_every, sim.world.step) && sim.world.step != total {
            history.row(sim)?;
        }
        end.last_checkpoint = Some(checkpoint(files, sim, stamp, history)?);
        break;
    }
    history.flush()?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(status)
}

/// The last evaluation's level-set fault, if any process had one: this process's own, or word
/// that another process stopped (every process stops alike).
fn level_set_fault(sim: &mut Simulation) -> Option<RunError> {
    let fault = sim.last.fault.take();
    if !sim.anywhere(fault.is_some()) {
        return None;
    }
    Some(match fault {
        Some((grain, fault)) => RunError::LevelSet {
            step: sim.world.step,
            time: sim.world.time,
            grain,
            fault,
        },
        None => RunError::Elsewhere {
            step: sim.world.step,
            time: sim.world.time,
            message: "another process met a grain's level set it could not evaluate (its message says which)".into(),
        },
    })
}

/// A count over every process.
fn sum_count(sim: &Simulation, mine: usize) -> usize {
    let mut x = [mine as f64];
    if let Some(p) = &sim.partition.processes {
        p.sum(&mut x);
    }
    x[0] as usize
}

/// Every process's excursions, in the order they happened (by step, grain and mode).
fn all_excursions(sim: &Simulation) -> Vec<Excursion> {
    let Some(p) = &sim.partition.processes else {
        return sim.totals.excursions.clone();
    };
    let mine = serde_json::to_vec(&sim.totals.excursions).expect("excursions serialize");
    let mut all: Vec<Excursion> = (p.all_bytes(mine).iter())
        .flat_map(|b| serde_json::from_slice::<Vec<Excursion>>(b).expect("excursions read back"))
        .collect();
    all.sort_by_key(|x| (x.first_step, x.grain, x.mode));
    all
}

fn progress(show: bool, total: u64, at: u64) -> Option<indicatif::ProgressBar> {
    show.then(|| {
        let bar = indicatif::ProgressBar::new(total);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} steps, {per_sec}, {eta} left",
            )
            .expect("valid template"),
        );
        bar.set_position(at);
        bar
    })
}

/// The deformable grains history.csv follows: the scene's list (each checked), or the first
/// [`MODAL_COLUMNS_DEFAULT`] whose modes are on.
fn modal_grains(scene: &Scene, sim: &Simulation) -> Result<Vec<usize>, KeyError> {
    match &scene.output.modal_grains {
        None => Ok((0..sim.world.bodies.len())
            .filter(|&i| sim.world.bodies[i].modes.is_some())
            .take(MODAL_COLUMNS_DEFAULT)
            .collect()),
        Some(list) => {
            for (k, &i) in list.iter().enumerate() {
                if i >= sim.world.bodies.len() || sim.world.bodies[i].modes.is_none() {
                    return Err(KeyError::new(
                        format!("output.modal_grains[{k}]"),
                        format!(
                            "grain {i} is not a grain whose modes are on (the scene has {} grains)",
                            sim.world.bodies.len()
                        ),
                    ));
                }
            }
            Ok(list.clone())
        }
    }
}

/// history.csv, grown by whole rows (by the first process of a decomposed run; every
/// process computes the rows, each its share).
struct History {
    /// The step of the last row written.
    last_step: Option<u64>,
    path: PathBuf,
    /// The file (the first process's).
    file: Option<std::io::BufWriter<std::fs::File>>,
    /// The header, whose columns name a non-finite value.
    header: String,
    /// The prescribed grains (ids).
    prescribed: Vec<u32>,
    /// The deformable grains it follows (ids).
    followed: Vec<usize>,
    /// Whether the sample has a volume (its stress and solid fraction are written).
    sample: bool,
}

impl History {
    /// Opens a new history (writing the header), or one cut back to `keep` bytes (a restart in
    /// the run's own directory; restarted elsewhere, the history starts afresh at the
    /// checkpoint); `write`: whether this process writes it. `sim` holds every grain.
    fn open(
        files: &mut Files,
        sim: &Simulation,
        followed: &[usize],
        keep: Option<u64>,
        write: bool,
    ) -> Result<History, RunError> {
        let path = &files.claim("history.csv")?;
        let io = |e: std::io::Error| file_error(path, e);
        let keep = keep.filter(|_| path.is_file());
        let header = header(sim, followed);
        let mut last_step = None;
        let file = match (write, keep) {
            (false, _) => None,
            (true, None) => {
                let mut f = std::fs::File::create(path).map_err(io)?;
                f.write_all(header.as_bytes()).map_err(io)?;
                Some(f)
            }
            (true, Some(bytes)) => {
                let f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(path)
                    .map_err(io)?;
                let length = f.metadata().map_err(io)?.len();
                if length < bytes {
                    return Err(file_error(
                        path,
                        format!(
                            "{length} bytes, shorter than the {bytes} the checkpoint was written with: it is not this history's (another run in this directory since); restart from a checkpoint of the last run, or into another --out"
                        ),
                    ));
                }
                f.set_len(bytes).map_err(io)?;
                let text = std::fs::read_to_string(path).map_err(io)?;
                last_step = (text.lines().last()).and_then(|l| l.split(',').next()?.parse().ok());
                Some(f)
            }
        };
        Ok(History {
            last_step,
            path: path.to_path_buf(),
            file: file.map(std::io::BufWriter::new),
            header,
            prescribed: (sim.partition.ids.iter().zip(&sim.world.bodies))
                .filter(|(_, b)| matches!(b.drive, Drive::Prescribed { .. }))
                .map(|(&i, _)| i)
                .collect(),
            followed: followed.to_vec(),
            sample: dem_core::measure::volume(sim.world.cell.as_ref(), &sim.world.walls).is_some(),
        })
    }

    /// Appends the state's row. A non-finite value is never written: the run stops with the
    /// column that went non-finite.
    fn row(&mut self, sim: &Simulation) -> Result<(), RunError> {
        let (e, l) = sim.run_energies();
        // This process's grains' columns (zeros for the others'), its contacts and momentum:
        // summed over the processes.
        let owned = &sim.partition.ids[..sim.partition.owned];
        let of = |id: usize| (owned.binary_search(&(id as u32)).ok()).map(|i| &sim.world.bodies[i]);
        let p = sim.momentum();
        let mut shares = vec![sim.last.contacts as f64, p.x, p.y, p.z];
        for &j in &self.prescribed {
            match of(j as usize) {
                Some(b) => {
                    let Drive::Prescribed { origin, .. } = &b.drive else {
                        unreachable!("a prescribed grain stays prescribed")
                    };
                    let u = b.position - nalgebra::Vector3::from(*origin);
                    let f = b.force;
                    shares.extend([u.x, u.y, u.z, f.x, f.y, f.z]);
                }
                None => shares.extend([0.0; 6]),
            }
        }
        for &j in &self.followed {
            let count = sim.world.shapes[sim.shape_of(j)]
                .modal
                .as_ref()
                .map_or(0, |m| m.mass.nrows());
            match of(j).and_then(|b| b.modes.as_ref()) {
                Some(m) => {
                    for a in 0..m.eps.len() {
                        shares.extend([m.eps[a], m.rate[a], m.contact[a], m.internal[a]]);
                    }
                }
                None => shares.extend(std::iter::repeat_n(0.0, 4 * count)),
            }
        }
        if let Some(processes) = &sim.partition.processes {
            processes.sum(&mut shares);
        }
        let contacts = shares[0] as usize;
        let mut values = vec![
            sim.world.time,
            e.translational,
            e.rotational,
            e.gravity,
            e.contact,
            e.modal_kinetic,
            e.modal_elastic,
            e.total(),
            l.work,
            l.local,
            l.viscous,
            l.modal,
            l.friction,
            l.residual(&e),
        ];
        values.extend(&shares[..4]);
        for w in &sim.world.walls {
            let (u, f) = (w.displacement, w.force);
            values.extend([u.x, u.y, u.z, f.x, f.y, f.z]);
        }
        values.extend(&shares[4..]);
        let m = sim.measures();
        let f = m.fabric;
        values.extend([
            m.coordination,
            m.mechanical_coordination,
            m.rattlers as f64,
            m.unbalanced.unwrap_or(0.0),
            f[(0, 0)],
            f[(1, 1)],
            f[(2, 2)],
            f[(0, 1)],
            f[(1, 2)],
            f[(2, 0)],
        ]);
        if self.sample {
            // A volume lost mid-run (walls crossed) is a non-finite column: the run stops.
            match &m.sample {
                Some(v) => {
                    let s = v.stress;
                    values.extend([
                        v.volume,
                        s[(0, 0)],
                        s[(1, 1)],
                        s[(2, 2)],
                        s[(0, 1)],
                        s[(1, 2)],
                        s[(2, 0)],
                        v.pressure(),
                        v.deviator(),
                        v.solid_fraction,
                    ]);
                }
                None => values.extend([f64::NAN; 10]),
            }
        }
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(RunError::NonFinite {
                step: sim.world.step,
                time: sim.world.time,
                column: (self.header.trim_end().split(','))
                    .nth(i + 1)
                    .unwrap_or("?")
                    .to_string(),
            });
        }
        let Some(file) = &mut self.file else {
            return Ok(());
        };
        let mut r = sim.world.step.to_string();
        for (i, v) in values.iter().enumerate() {
            // The contact count (column 15) is an integer.
            if i == 14 {
                r += &format!(",{contacts}");
            } else {
                r += &format!(",{v:e}");
            }
        }
        r.push('\n');
        file.write_all(r.as_bytes())
            .map_err(|e| file_error(&self.path, e))?;
        self.last_step = Some(sim.world.step);
        Ok(())
    }

    /// Flushes and returns the length (0 in a process that does not write it).
    fn flush(&mut self) -> Result<u64, RunError> {
        let Some(file) = &mut self.file else {
            return Ok(0);
        };
        file.flush().map_err(|e| file_error(&self.path, e))?;
        file.get_ref()
            .metadata()
            .map(|m| m.len())
            .map_err(|e| file_error(&self.path, e))
    }
}

fn header(sim: &Simulation, followed: &[usize]) -> String {
    let mut h = String::from(
        "step,time,kinetic_translational,kinetic_rotational,potential_gravity,elastic_contact,kinetic_modal,elastic_modal,energy_total,work_boundaries,dissipated_local,dissipated_viscous,dissipated_modal,dissipated_friction,energy_residual,node_contacts,momentum_x,momentum_y,momentum_z",
    );
    let columns = |prefix: String| {
        ["ux", "uy", "uz", "fx", "fy", "fz"]
            .map(|c| format!(",{prefix}_{c}"))
            .concat()
    };
    for i in 0..sim.world.walls.len() {
        h += &columns(format!("wall{i}"));
    }
    for (j, b) in sim.world.bodies.iter().enumerate() {
        if !b.is_free() {
            h += &columns(format!("grain{j}"));
        }
    }
    for &j in followed {
        let count = sim.world.bodies[j]
            .modes
            .as_ref()
            .map_or(0, |m| m.eps.len());
        for a in 0..count {
            h += &format!(",grain{j}_eps{a},grain{j}_rate{a},grain{j}_feps{a},grain{j}_fint{a}");
        }
    }
    h += ",coordination,mechanical_coordination,rattlers,unbalanced,fabric_xx,fabric_yy,fabric_zz,fabric_xy,fabric_yz,fabric_zx";
    if dem_core::measure::volume(sim.world.cell.as_ref(), &sim.world.walls).is_some() {
        h += ",volume,stress_xx,stress_yy,stress_zz,stress_xy,stress_yz,stress_zx,pressure,deviator,solid_fraction";
    }
    h.push('\n');
    h
}

/// The checkpoint `given` names: the file itself, or for a run directory the latest checkpoint
/// its manifest lists (crate::rundir).
fn latest_checkpoint(given: &Path) -> Result<PathBuf, RunError> {
    if !given.is_dir() {
        return Ok(given.to_path_buf());
    }
    let (_, latest) = (crate::rundir::checkpoints(given)?.pop()).ok_or_else(|| {
        file_error(
            given,
            format!(
                "no checkpoint that a run of this directory wrote (listed in its {}): give a checkpoint file",
                crate::rundir::MANIFEST
            ),
        )
    })?;
    Ok(latest)
}

/// Writes a checkpoint of the run's state (the first process, with every process's share:
/// every process calls it).
fn checkpoint(
    files: &mut Files,
    sim: &Simulation,
    stamp: &Stamp,
    history: &mut History,
) -> Result<PathBuf, RunError> {
    let rel = format!("checkpoint/step_{:010}.json", sim.world.step);
    let Some(state) = sim.run_state() else {
        return Ok(files.root.join(rel));
    };
    let c = Checkpoint {
        schema: CHECKPOINT_SCHEMA,
        history_bytes: history.flush()?,
        dt: sim.parameters.dt,
        origin: stamp.origin,
        identity: Some(sim.identity()),
        settings: stamp.settings.clone(),
        state,
    };
    let path = files.claim(&rel)?;
    let json = serde_json::to_string(&c).expect("checkpoint serializes");
    grain::atomic::write_file_atomically(&path, |w| w.write_all(json.as_bytes()))
        .map_err(|e| file_error(&path, e))?;
    Ok(path)
}

/// The VTK time series of a run: the nodes (`run.pvd`) and the periodic cell (`cell.pvd`).
#[derive(Default)]
struct Series {
    nodes: Vec<PvdEntry>,
    cell: Vec<PvdEntry>,
}

/// Writes `file` (under `vtk/`) with `write`, adds it to `series` at the run's time and
/// rewrites the series' collection `pvd`.
fn add_to_series(
    files: &mut Files,
    sim: &Simulation,
    file: String,
    write: impl FnOnce(&Path) -> grain::Result<()>,
    series: &mut Vec<PvdEntry>,
    pvd: &str,
) -> Result<(), RunError> {
    let path = files.claim(&format!("vtk/{file}"))?;
    write(&path).map_err(|e| file_error(&path, e))?;
    series.push(PvdEntry {
        time: sim.world.time,
        file: PathBuf::from("vtk").join(file),
    });
    let pvd_path = files.claim(pvd)?;
    write_pvd(&pvd_path, series).map_err(|e| file_error(&pvd_path, e))
}

/// The nodes, and the cell if there is one ([`Series`]).
fn write_vtk(files: &mut Files, sim: &Simulation, pvd: &mut Series) -> Result<(), RunError> {
    write_nodes(files, sim, &mut pvd.nodes)?;
    let (Some(cell), true) = (&sim.world.cell, sim.partition.is_first()) else {
        return Ok(());
    };
    // The eight corners and the twelve edges between corners that differ in one bit.
    let points: Vec<f64> = cell
        .corners()
        .iter()
        .flat_map(|x| [x.x, x.y, x.z])
        .collect();
    let edges: Vec<[u64; 2]> = (0..8u64)
        .flat_map(|c| (0..3).map(move |k| [c, c | 1 << k]))
        .filter(|[a, b]| a != b)
        .collect();
    add_to_series(
        files,
        sim,
        format!("cell_{:010}.vtp", sim.world.step),
        |path| write_lines(path, &points, &edges),
        &mut pvd.cell,
        "cell.pvd",
    )
}

/// The surface nodes of the grains this process owns, at their current positions: the run's
/// `vtk/nodes_<step>.vtp`, or in a decomposed run each process's piece
/// `vtk/nodes_<step>_<process>.vtp`, gathered by the first process's `vtk/nodes_<step>.pvtp`.
fn write_nodes(
    files: &mut Files,
    sim: &Simulation,
    pvd: &mut Vec<PvdEntry>,
) -> Result<(), RunError> {
    let owned = &sim.world.bodies[..sim.partition.owned];
    let mut modes = (owned.iter())
        .map(|b| b.modes.as_ref().map_or(0, |m| m.eps.len()))
        .max()
        .unwrap_or(0);
    if let Some(p) = &sim.partition.processes {
        // Every piece carries the same arrays.
        modes = p.max(modes as f64) as usize;
    }
    let mut points = Vec::new();
    let mut grain_index = Vec::new();
    let mut displacement = Vec::new();
    let mut amplitudes: Vec<Vec<f64>> = vec![Vec::new(); modes];
    let mut start = Vec::with_capacity(owned.len());
    for (b, &id) in owned.iter().zip(&sim.partition.ids) {
        start.push(grain_index.len());
        let shape = &sim.world.shapes[b.shape];
        let view = View::new(b, shape);
        for (k, x0) in shape.nodes.iter().enumerate() {
            points.extend(view.node_global(k).iter());
            displacement.extend((view.rotation * (view.node_local(k) - x0)).iter());
            grain_index.push(f64::from(id));
            for (a, column) in amplitudes.iter_mut().enumerate() {
                column.push(
                    b.modes
                        .as_ref()
                        .and_then(|m| m.eps.get(a))
                        .copied()
                        .unwrap_or(0.0),
                );
            }
        }
    }
    let mut force = vec![0.0; points.len()];
    for r in &sim.last.records {
        let i = sim.partition.ids[..sim.partition.owned]
            .binary_search(&r.body)
            .expect("node records are of owned grains");
        let k = 3 * (start[i] + r.node as usize);
        for c in 0..3 {
            force[k + c] += r.force[c];
        }
    }
    let names: Vec<String> = (0..modes).map(|a| format!("eps{a}")).collect();
    let mut data = vec![
        PointData::Scalars("grain", &grain_index),
        PointData::Vectors("force", &force),
        PointData::Vectors("displacement", &displacement),
    ];
    data.extend(
        names
            .iter()
            .zip(&amplitudes)
            .map(|(n, v)| PointData::Scalars(n, v)),
    );
    let Some(p) = &sim.partition.processes else {
        return add_to_series(
            files,
            sim,
            format!("nodes_{:010}.vtp", sim.world.step),
            |path| write_vtp(path, &points, &data),
            pvd,
            "run.pvd",
        );
    };
    let piece = |r: usize| PathBuf::from(format!("nodes_{:010}_{r}.vtp", sim.world.step));
    // The first process lists every piece before any is written, and lists them in the .pvtp
    // after all are.
    for r in 0..p.size() {
        files.claim(&format!("vtk/{}", piece(r).display()))?;
    }
    p.max(0.0);
    let path = files.root.join("vtk").join(piece(p.rank()));
    write_vtp(&path, &points, &data).map_err(|e| file_error(&path, e))?;
    p.max(0.0);
    if p.rank() != 0 {
        return Ok(());
    }
    let pieces: Vec<PathBuf> = (0..p.size()).map(piece).collect();
    add_to_series(
        files,
        sim,
        format!("nodes_{:010}.pvtp", sim.world.step),
        |path| write_pvtp(path, &pieces, &data),
        pvd,
        "run.pvd",
    )
}
