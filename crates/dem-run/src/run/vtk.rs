//! The node clouds `vtk/nodes_<step>.vtp` and cell edges `vtk/cell_<step>.vtp`, with their
//! series `run.pvd` and `cell.pvd`.

use std::path::{Path, PathBuf};

use grain::vtk::{PointData, PvdEntry, write_lines, write_pvd, write_pvtp, write_vtp};

use dem_core::sim::Simulation;
use dem_core::view::View;

use super::files::Files;
use crate::error::{RunError, file_error};

/// The VTK time series of a run: the nodes (`run.pvd`) and the periodic cell (`cell.pvd`).
#[derive(Default)]
pub(crate) struct Series {
    pub(crate) nodes: Vec<PvdEntry>,
    pub(crate) cell: Vec<PvdEntry>,
}

/// Writes `file` (under `vtk/`) with `write`, adds it to `series` at the run's time and
/// rewrites the series' collection `pvd`.
pub(crate) fn add_to_series(
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
pub(crate) fn write_vtk(
    files: &mut Files,
    sim: &Simulation,
    pvd: &mut Series,
) -> Result<(), RunError> {
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
pub(crate) fn write_nodes(
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
