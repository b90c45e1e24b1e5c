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
//! The run also says so on standard error at the step it happens, for its first
//! [`EXCURSIONS_SAID`] (per process), and at its end how many there were in all. `timings` splits the
//! invocation's wall-clock seconds by stage of the step (`dem_core::sim::Timings`).
//!
//! A run stops with an error when a grain's state becomes non-finite, or when its energy grows
//! beyond what the run was given (dem_core::ledger::Ledger::runaway): both mean a time step too large
//! for the scene. Every file but history.csv is written atomically; history.csv
//! grows by whole rows, flushed at checkpoints and at the end.

mod files;
mod history;
mod restart;
mod summary;
mod vtk;

pub use restart::MAX_STEPS;
pub use summary::{LEDGER_WARNING, LedgerDeparture, Status, Summary};

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use grain::vtk::{read_pvd, write_pvd};

use dem_core::modal::beyond;
use dem_core::sim::{Simulation, Timings};

use crate::error::{RunError, file_error};
use crate::rundir::{RunDir, Take};
use crate::scene::{Scene, SceneError};
use files::Files;
use history::{History, modal_grains};
use restart::{Stamp, checkpoint, last_step, restore};
use summary::{End, write_summary};
use vtk::{Series, write_vtk};

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
    let crate::build::Built {
        mut sim,
        packings: packed,
        warnings,
    } = crate::build::with_packings(scene, scene_path)?;
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
    if first && restart.is_none() {
        for w in &warnings {
            eprintln!("dem-run: warning: {w}");
        }
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
        records: Vec::new(),
    };
    // Until the run ends, its summary says it is running (a run killed leaves that).
    write_summary(&mut files, &end.summary(&sim, &history, Status::Running))?;
    if let Some((_, split)) = decompose {
        split(&mut sim);
    }
    sim.totals.timings = Timings::default();
    let stamp = Stamp { origin, settings };
    // The pool's threads wait busy between the steps' parallel stages (dem_core::threads).
    let ran = dem_core::threads::kept_busy(|| {
        run_steps(
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
        )
    });
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
        let departed = end.departure().map_or(String::new(), |d| {
            format!(
                "; it passed 1 % of that at step {} (t = {:e}): look there in history.csv (energy_residual)",
                d.step, d.time
            )
        });
        eprintln!(
            "dem-run: warning: the energy ledger was off by up to {residual:e}, {:.1} % of the most energy the run supplied ({supplied:e}): the integration added or lost energy the loads and dissipation do not account for (a step that does not resolve the contacts, or forces past a table's, samples' or path's range; see the excursions), and energy-based results carry the error{departed}; lower run.dt or run.safety, or contact.normal_damping if the contacts ring (its viscous force has a step limit of its own, docs/physics.md section 6) (summary.json: ledger_error)",
            100.0 * end.ledger_error()
        );
    }
    let summary = Summary {
        error,
        ..end.summary(&sim, &history, status)
    };
    let x = &summary.excursions;
    if x.len() > EXCURSIONS_SAID && first {
        let farthest = (x.iter())
            .filter_map(|x| beyond(x.amplitude, x.range).map(|p| p / (x.range.1 - x.range.0)))
            .fold(0.0, f64::max);
        let mut grains: Vec<usize> = x.iter().map(|x| x.grain).collect();
        grains.sort_unstable();
        grains.dedup();
        eprintln!(
            "dem-run: warning: {} amplitudes left a range of their grain's data, of {} grains; the farthest by {farthest:.3e} of its range's width (summary.json: excursions)",
            x.len(),
            grains.len()
        );
    }
    write_summary(&mut files, &summary)?;
    ran.map(|_| summary)
}

/// How many excursions a run says at the step they happen (per process); the run's end says
/// how many there were in all, and summary.json lists each.
pub const EXCURSIONS_SAID: usize = 3;

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
    let fault = sim.last.fault.take();
    let faulted = sim.anywhere(fault.is_some());
    if let Some(e) = level_set_fault(sim, fault, faulted) {
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
    // Excursions said so far.
    let mut said = 0;
    // The stop conditions' memory of the run's checks (creep).
    let mut watch = dem_core::measure::Watch::default();
    while sim.world.step < total {
        let next = sim.world.step + 1;
        let record = every(o.vtk_every, next);
        sim.step(record);
        // Every check that every process must decide alike, in one exchange.
        let fault = sim.last.fault.take();
        let servo = sim.last.servo_fault.take();
        let flags = [
            fault.is_some(),
            servo.is_some(),
            !sim.is_finite(),
            stop.load(Ordering::Relaxed),
        ];
        let ([faulted, out_of_reach, diverged, interrupted], energies, ledger) =
            sim.run_checks(flags);
        if let Some(e) = level_set_fault(sim, fault, faulted) {
            history.row(sim)?;
            return Err(e);
        }
        // No row: a wall that met its facing wall leaves no sample volume to write.
        if out_of_reach {
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
        if diverged {
            return Err(RunError::Diverged {
                step: sim.world.step,
                time: sim.world.time,
            });
        }
        if ledger.runaway(&energies) {
            history.row(sim)?;
            return Err(RunError::EnergyGrowth {
                step: sim.world.step,
                time: sim.world.time,
                residual: ledger.residual(&energies),
                given: ledger.given(&energies),
            });
        }
        // The ledger's largest residual against the most the run supplied, over the run (at one
        // step the supplied energy can be tiny: a load just begun).
        let now = ledger.residual(&energies);
        let (residual, supplied) = &mut end.largest;
        *residual = residual.max(now.abs());
        *supplied = supplied.max(ledger.supplied(&energies));
        end.record_residual(now, sim.world.step, sim.world.time);
        // Those that began this step, the run's first few (a decomposed run's processes each
        // report their grains'): a packing's grains leave their data by the hundred.
        for x in sim
            .totals
            .excursions
            .iter()
            .filter(|x| x.first_step == sim.world.step)
        {
            said += 1;
            if said <= EXCURSIONS_SAID {
                say(format!("dem-run: warning: {x}"));
            } else if said == EXCURSIONS_SAID + 1 {
                say("dem-run: warning: more amplitudes leave their data's ranges: the run's end says how many (summary.json: excursions)".into());
            }
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
            .and_then(|s| s.reached(sim.world.step, &sim.measures(), &mut watch))
        {
            // The measures are the same numbers in every process: all stop here.
            say(format!(
                "dem-run: stop conditions met at step {}: {met}",
                sim.world.step
            ));
            status = Status::Stopped;
            end.stopped = Some(format!("step {}: {met}", sim.world.step));
        } else if interrupted {
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

/// The run's error for the last evaluation's level-set fault, if any process had one
/// (`anywhere`): this process's own `fault`, or word that another process stopped (every
/// process stops alike).
fn level_set_fault(
    sim: &Simulation,
    fault: Option<(usize, dem_core::levelset::LevelSetFault)>,
    anywhere: bool,
) -> Option<RunError> {
    if !anywhere {
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
