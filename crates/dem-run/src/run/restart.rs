//! Checkpoints written and read back: a restart's checks, and where a continuation ends.

use std::io::Write;
use std::path::{Path, PathBuf};

use dem_core::sim::Simulation;

use super::files::Files;
use super::history::History;
use crate::checkpoint::{CHECKPOINT_SCHEMA, Checkpoint};
use crate::error::{RunError, file_error};
use crate::scene::{Scene, SceneError, TimeStep};

/// What every checkpoint of a run carries besides its state ([`Checkpoint`]).
pub(crate) struct Stamp {
    /// Where the run's steps or duration count from.
    pub(crate) origin: (u64, f64),
    /// The scene's settings (crate::checkpoint::settings).
    pub(crate) settings: Option<serde_json::Value>,
}

/// What a restart took from its checkpoint.
pub(crate) struct Restart {
    /// The checkpoint is one this run directory's run wrote: its files continue.
    pub(crate) own: bool,
    /// The length of history.csv to keep (a restart in its own directory).
    pub(crate) history_bytes: Option<u64>,
    /// Where the run's steps or duration count from ([`Checkpoint::origin`]).
    pub(crate) origin: (u64, f64),
    /// The run continues at another step than its checkpoint's.
    pub(crate) new_dt: bool,
}

/// Puts the checkpoint `given` names (a file, or a run directory's latest) into `sim`, after
/// checking that the scene is its experiment ([`dem_core::state::Identity`]) and its state
/// the scene's to run; says on standard error what the restart took from where, and which of
/// the scene's `settings` changed since the checkpoint.
pub(crate) fn restore(
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
    let started = sim
        .restore(c.state)
        .map_err(|e| file_error(path, e.to_string()))?;
    // Modes switched on: the checkpoint's automatic step was computed without them.
    if started > 0 && !fixed {
        sim.parameters.dt = sim
            .parameters
            .dt
            .min(scene.run.safety * sim.critical_step());
    }
    let new_dt = sim.parameters.dt != c.dt;
    if started > 0 && sim.partition.is_first() {
        eprintln!(
            "dem-run: restart: {started} grains rigid in the checkpoint (modes off) are deformable in the scene: their modes start at rest, in the reference shape"
        );
    }
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
                (false, false) => "the checkpoint's (run.dt = \"auto\")".to_string(),
                (false, true) => format!(
                    "the modes' critical step (run.dt = \"auto\"; the checkpoint ran at {:e})",
                    c.dt
                ),
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
pub(crate) fn last_step(
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

/// The checkpoint `given` names: the file itself, or for a run directory the latest checkpoint
/// its manifest lists (crate::rundir).
pub(crate) fn latest_checkpoint(given: &Path) -> Result<PathBuf, RunError> {
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
pub(crate) fn checkpoint(
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

/// The most steps a run may take: 1e12 is months of computing at a million steps per second,
/// so more is a unit slip, not a run.
pub const MAX_STEPS: f64 = 1e12;
