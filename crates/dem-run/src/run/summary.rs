//! `summary.json`: how a run ended, its excursions, timings and ledger.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use dem_core::modal::Excursion;
use dem_core::sim::{Simulation, Timings};

use super::files::Files;
use super::history::History;
use crate::error::{RunError, file_error};

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
    /// How many times this invocation's broad phase searched for neighbours: the builds of
    /// its neighbour list, each kept for the steps its skin allows ([`dem_core::neighbours`];
    /// the first process's, in a decomposed run, which searches at every step).
    #[serde(default)]
    pub neighbour_searches: u64,
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
    /// Where the ledger went wrong, with a `ledger_error` past [`LEDGER_WARNING`].
    #[serde(default)]
    pub ledger_departure: Option<LedgerDeparture>,
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
pub(crate) struct End {
    /// The step this invocation began at.
    pub(crate) first_step: u64,
    pub(crate) started: Instant,
    pub(crate) threads: usize,
    pub(crate) last_checkpoint: Option<PathBuf>,
    /// The `[stop]` conditions met, and when.
    pub(crate) stopped: Option<String>,
    /// The ledger's largest `|residual|` and the most the run supplied, over this invocation.
    pub(crate) largest: (f64, f64),
    /// The steps at which the ledger's `|residual|` set a record, each at least
    /// [`RECORD_STEP`] times the one before (a few thousand over any run): where it first passed a
    /// level, to that factor.
    pub(crate) records: Vec<LedgerDeparture>,
}

/// Each of [`End::records`] is at least this times the one before.
const RECORD_STEP: f64 = 1.01;

/// Where a run's energy ledger went wrong (summary.json's `ledger_departure`, with a ledger error
/// past [`LEDGER_WARNING`]): the first step at which its `|residual|` reached `LEDGER_WARNING` of
/// the most energy the run supplied, to within 1 % of that level. A step past the stability limit
/// of a contact's stiffness or viscous damping departs where a contact starts to ring (a wall
/// that stops, an impact); a slow drift departs late.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LedgerDeparture {
    /// `|residual|` there, in the run's energy unit.
    pub residual: f64,
    /// The step.
    pub step: u64,
    /// Its time.
    pub time: f64,
}

impl End {
    /// Takes the ledger's residual after step `step`, at time `time`.
    pub(crate) fn record_residual(&mut self, residual: f64, step: u64, time: f64) {
        let residual = residual.abs();
        let last = self.records.last().map_or(0.0, |r| r.residual);
        if residual > RECORD_STEP * last {
            self.records.push(LedgerDeparture {
                residual,
                step,
                time,
            });
        }
    }

    /// The run's [`LedgerDeparture`], when its ledger error is past [`LEDGER_WARNING`].
    pub(crate) fn departure(&self) -> Option<LedgerDeparture> {
        if self.ledger_error() <= LEDGER_WARNING {
            return None;
        }
        let level = LEDGER_WARNING * self.largest.1;
        self.records.iter().find(|r| r.residual >= level).copied()
    }

    /// The ledger error of this invocation's steps ([`Summary::ledger_error`]).
    pub(crate) fn ledger_error(&self) -> f64 {
        let (residual, supplied) = self.largest;
        if supplied > 0.0 {
            residual / supplied
        } else {
            0.0
        }
    }

    /// The run's summary at this state (every process calls it: it sums over them).
    pub(crate) fn summary(&self, sim: &Simulation, history: &History, status: Status) -> Summary {
        let wall = self.started.elapsed().as_secs_f64();
        let (energies, ledger) = sim.run_energies();
        let processes = sim.partition.processes.as_ref().map(|p| {
            let t = p.traffic();
            let mut x = [
                t.migrants,
                t.migrant_bytes,
                t.ghosts,
                t.ghost_bytes,
                t.parcel_bytes,
            ]
            .map(|v| v as f64);
            p.sum(&mut x);
            let [migrants, migrant_bytes, ghosts, ghost_bytes, parcel_bytes] = x.map(|v| v as u64);
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
                    parcel_bytes,
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
            neighbour_searches: sim.last.neighbours.builds(),
            node_contacts: sum_count(sim, sim.last.contacts),
            energy_total: energies.total(),
            energy_residual: ledger.residual(&energies),
            ledger_error: self.ledger_error(),
            ledger_departure: self.departure(),
            excursions: all_excursions(sim),
            stopped: self.stopped.clone(),
            error: None,
            last_checkpoint: self.last_checkpoint.clone(),
            processes,
        }
    }
}

/// Writes summary.json (the first process).
pub(crate) fn write_summary(files: &mut Files, summary: &Summary) -> Result<(), RunError> {
    if files.dir.is_none() {
        return Ok(());
    }
    let path = files.claim("summary.json")?;
    let json = serde_json::to_string_pretty(summary).expect("summary serializes");
    grain::atomic::write_file_atomically(&path, |w| w.write_all(json.as_bytes()))
        .map_err(|e| file_error(&path, e))
}

/// The ledger error past which a run warns (at its end, on standard error): the integration added
/// or lost energy that no load or dissipation accounts for (a Hertz impact far deeper than the
/// automatic step assumed, a step too large for the stiffness, a grain jittering at the end of
/// its path's range), and every energy-based result carries the error. Unstable runs are
/// stopped far later, when the residual exceeds all the run supplied.
pub const LEDGER_WARNING: f64 = 0.01;

/// A count over every process.
pub(crate) fn sum_count(sim: &Simulation, mine: usize) -> usize {
    let mut x = [mine as f64];
    if let Some(p) = &sim.partition.processes {
        p.sum(&mut x);
    }
    x[0] as usize
}

/// Every process's excursions, in the order they happened (by step, grain and mode).
pub(crate) fn all_excursions(sim: &Simulation) -> Vec<Excursion> {
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
