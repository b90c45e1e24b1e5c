//! `history.csv`: the run's energies, ledger, walls, prescribed grains and amplitudes, a row
//! every `output.history_every` steps.

use std::io::Write;
use std::path::PathBuf;

use dem_core::body::Drive;
use dem_core::error::KeyError;
use dem_core::sim::Simulation;

use super::files::Files;
use crate::error::{RunError, file_error};
use crate::scene::{MODAL_COLUMNS_DEFAULT, Scene};

/// history.csv, grown by whole rows (by the first process of a decomposed run; every
/// process computes the rows, each its share).
pub(crate) struct History {
    /// The step of the last row written.
    pub(crate) last_step: Option<u64>,
    pub(crate) path: PathBuf,
    /// The file (the first process's).
    pub(crate) file: Option<std::io::BufWriter<std::fs::File>>,
    /// The header, whose columns name a non-finite value.
    pub(crate) header: String,
    /// The prescribed grains (ids).
    pub(crate) prescribed: Vec<u32>,
    /// The deformable grains it follows (ids).
    pub(crate) followed: Vec<usize>,
    /// Whether the sample has a volume (its stress and solid fraction are written).
    pub(crate) sample: bool,
}

impl History {
    /// Opens a new history (writing the header), or one cut back to `keep` bytes (a restart in
    /// the run's own directory; restarted elsewhere, the history starts afresh at the
    /// checkpoint); `write`: whether this process writes it. `sim` holds every grain.
    pub(crate) fn open(
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
    pub(crate) fn row(&mut self, sim: &Simulation) -> Result<(), RunError> {
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
    pub(crate) fn flush(&mut self) -> Result<u64, RunError> {
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

pub(crate) fn header(sim: &Simulation, followed: &[usize]) -> String {
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

/// The deformable grains history.csv follows: the scene's list (each checked), or the first
/// [`MODAL_COLUMNS_DEFAULT`] whose modes are on.
pub(crate) fn modal_grains(scene: &Scene, sim: &Simulation) -> Result<Vec<usize>, KeyError> {
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
