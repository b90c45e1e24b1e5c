//! `cargo xtask demo [--quick]`: the README's main job. The shipped CalculiX runs go through the
//! stage binaries (data/demo/pipeline.toml: mode-extract, levelset-bake, dem-run), and the DEM
//! curves are checked against CalculiX's own numbers, which the code under test did not make:
//!
//! - `sphere`: one deformable sphere (the compaction mode of data/fem/sphere) squeezed by six
//!   walls. Its total wall force against the wall displacement `u` follows the generalized force
//!   of the CalculiX run, `8 (f_x + f_y + f_z)(u)` with `f` the octant's plate reactions (each of
//!   the whole sphere's six walls carries four octant walls; Appendix C with `N = 1`), within 3 %
//!   at every increment past 10 % of the largest.
//! - `packing`: 27 such spheres in a cubic packing squeezed by six walls: `F_w(u_w) =
//!   9 F_int(u_w / 3)` (Eq. 73), `F_int` CalculiX's generalized force, within 2 %.
//! - `beam`: the bending mode of the CalculiX beam (data/fem/beam) against the analytic mode, its
//!   modal stiffness against CalculiX's reaction, and the DEM's three-point bending slope.

use std::path::Path;

use anyhow::{Context, Result};

use crate::measure::{Points, squeeze};
use crate::plot::{Series, read_columns};
use crate::suite::{Case, Checked, Suite};

/// The demo's cases.
pub const SUITE: Suite = Suite {
    dir: "demo",
    command: "cargo xtask demo",
    cases: &[
        Case {
            name: "sphere",
            dir: ".",
            check: sphere,
        },
        Case {
            name: "packing",
            dir: ".",
            check: packing,
        },
    ],
};

/// How far the demo's walls squeeze each sphere (mm): the paper's 16 % of the radius, short of
/// the CalculiX run's last increment (1.65), whose shape is the mode (data/demo/walls.toml says
/// why).
const SQUEEZE: f64 = 1.6;

/// CalculiX's generalized force of the whole sphere against the wall displacement, `(u, 8
/// (f_x + f_y + f_z))` per increment (data/fem/sphere/sphere_scalars.csv): all increments, and
/// the checked ones: past 10 % of the largest force, up to [`SQUEEZE`].
fn calculix_sphere(dir: &Path, u_per_d: f64, factor: f64) -> Result<(Points, Points)> {
    let path = dir.join("../fem/sphere/sphere_scalars.csv");
    let [d, fx, fy, fz] = <[Vec<f64>; 4]>::try_from(read_columns(
        &path,
        &["displacement_x", "force_x", "force_y", "force_z"],
    )?)
    .expect("4 columns");
    let all: Points = (0..d.len())
        .map(|i| (u_per_d * d[i], factor * 8.0 * (fx[i] + fy[i] + fz[i])))
        .collect();
    let largest = all.iter().map(|p| p.1).fold(0.0, f64::max);
    let checked = all
        .iter()
        .copied()
        .filter(|p| p.1 >= 0.1 * largest && p.0 <= u_per_d * SQUEEZE)
        .collect();
    Ok((all, checked))
}

/// The paper's table (data/reference) scaled to CalculiX's force at its last row, for the plot:
/// its material is softer, so only the shape compares.
fn paper_for_context(dir: &Path, calculix: &Points, u_per_eps: f64) -> Result<Series> {
    let path = dir.join("../reference/sphere_compaction_lookup_paper.csv");
    let [eps, force] =
        <[Vec<f64>; 2]>::try_from(read_columns(&path, &["eps", "force"])?).expect("2 columns");
    let (u_last, f_last) = (u_per_eps * eps[eps.len() - 1], force[force.len() - 1]);
    let at_last = crate::measure::at(calculix, u_last)
        .context("the CalculiX run does not reach the paper table's last row")?;
    let scale = at_last / f_last;
    Ok(Series {
        name: format!("paper's table (Appendix B) x {scale:.1}: shape only"),
        points: eps
            .iter()
            .zip(&force)
            .map(|(e, f)| (u_per_eps * e, scale * f))
            .collect(),
        markers: false,
    })
}

/// The six walls, in the order +x, -x, +y, -y, +z, -z.
fn walls() -> Vec<String> {
    (0..6).map(|w| format!("wall{w}")).collect()
}

/// One sphere between six walls against the CalculiX run.
fn sphere(dir: &Path, _variant: &str) -> Result<Checked> {
    let (all, checked) = calculix_sphere(dir, 1.0, 1.0)?;
    let (rows, note, curve) = squeeze(
        "sphere",
        &dir.join("out/walls.run"),
        &walls(),
        &checked,
        ("one sphere, six walls", "CalculiX, 8 (f_x + f_y + f_z)"),
        0.03,
    )?;
    let notes = vec![
        format!(
            "The reference is CalculiX's: the octant's three plate reactions f at the plates' displacement u, as the generalized force of the compaction mode of the whole sphere, 8 (f_x + f_y + f_z) (each of its six walls carries four octant walls). The DEM grain's internal force is mode-extract's table of the same run, so this checks the chain from the FEM output to the DEM contact forces. Checked at the {} increments past 10 % of the largest force up to the walls' travel, {SQUEEZE} mm (the paper's 16 % of the radius), u from {} to {} mm; the last increment, 1.65 mm, is the mode's own shape (flat poles), not a check (data/demo/walls.toml).",
            checked.len(),
            checked[0].0,
            checked[checked.len() - 1].0
        ),
        note,
    ];
    let plot = (
        "One CalculiX sphere squeezed by six walls".into(),
        (
            "wall displacement u (mm)".into(),
            "total wall force (N)".into(),
        ),
        vec![
            Series {
                name: "CalculiX (octant reactions, whole sphere)".into(),
                points: all.clone(),
                markers: true,
            },
            paper_for_context(dir, &all, 10.0)?,
            curve,
        ],
    );
    Ok(Checked {
        rows: rows.into(),
        notes,
        plot,
    })
}

/// 27 spheres squeezed by six walls (Eq. 73) against the CalculiX run.
fn packing(dir: &Path, _variant: &str) -> Result<Checked> {
    let (all, checked) = calculix_sphere(dir, 3.0, 9.0)?;
    let (rows, note, curve) = squeeze(
        "packing",
        &dir.join("out/packing.run"),
        &walls(),
        &checked,
        (
            "27 spheres, six walls",
            "9 F_int(u_w / 3), F_int CalculiX's",
        ),
        0.02,
    )?;
    let notes = vec![
        format!(
            "Appendix C: the walls' work equals the 27 spheres' energy and each sphere's amplitude is u_w / 3, so F_w(u_w) = 9 F_int(u_w / 3) (Eq. 73), with F_int CalculiX's generalized force of one sphere, 8 (f_x + f_y + f_z). Checked at its {} increments past 10 % of the largest force up to u_w = {}.",
            checked.len(),
            3.0 * SQUEEZE
        ),
        note,
    ];
    let plot = (
        "27 CalculiX spheres squeezed by six walls".into(),
        (
            "wall displacement u_w (mm)".into(),
            "total wall force (N)".into(),
        ),
        vec![
            Series {
                name: "9 F_int(u_w / 3), CalculiX (Eq. 73)".into(),
                points: all,
                markers: true,
            },
            curve,
        ],
    );
    Ok(Checked {
        rows: rows.into(),
        notes,
        plot,
    })
}
