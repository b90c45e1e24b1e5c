//! `cargo xtask demo [--quick]`: the README's main job. The shipped CalculiX runs go through the
//! stage binaries (data/demo/pipeline.toml: mode-extract, levelset-bake, dem-run), and the DEM
//! curves are checked against CalculiX's own numbers, which the code under test did not make:
//!
//! - `sphere`: one deformable sphere (the compaction mode of data/fem/sphere) squeezed by six
//!   walls. Its total wall force against the wall displacement `u` follows the generalized force
//!   of the CalculiX run, `8 (f_x + f_y + f_z)(u)` with `f` the octant's plate reactions (each of
//!   the whole sphere's six walls carries four octant walls; Appendix C with `N = 1`), within 3 %
//!   at every increment past 10 % of the largest.
//! - `packing`: 27 such spheres in a cubic packing squeezed by six walls (8 in the quick
//!   variant): `F_w(u_w) = 9 F_int(u_w / 3)` (Eq. 73; `4 F_int(u_w / 2)` for 8), `F_int`
//!   CalculiX's generalized force, within 2 %.
//! - `beam`: the bending mode of the CalculiX beam (data/fem/beam) against the analytic mode
//!   (Eq. 51, by the modal assurance criterion; both written in [`crate::reference`], not taken
//!   from levelset-bake or mode-extract), its modal stiffness against CalculiX's reaction, and
//!   the DEM's three-point bending slope.
//! - `granular`: the granular experiment (docs/experiments.md section 5): a random packing of the
//!   CalculiX sphere and ellipsoid, deformable and rigid, compressed in a periodic cell to 4 MPa
//!   and sheared at constant normal stresses; checked against the servo's targets and the energy
//!   ledger, plotted side by side.

use std::path::Path;

use anyhow::{Context, Result};

use crate::measure::{
    Loader, Points, calculix_points, loaders, scene_number, scene_value, squeeze, summary,
    summary_number, three_point_bending,
};
use crate::plot::{Series, read_columns};
use crate::reference;
use crate::suite::{Case, Checked, Row, Suite};

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
        Case {
            name: "beam",
            dir: ".",
            check: beam,
        },
        Case {
            name: "sphere-path",
            dir: ".",
            check: sphere_path,
        },
        Case {
            name: "ellipsoid",
            dir: ".",
            check: ellipsoid,
        },
        Case {
            name: "pair",
            dir: ".",
            check: pair,
        },
        Case {
            name: "granular",
            dir: ".",
            check: granular,
        },
    ],
};

/// How far the demo's walls squeeze each sphere (mm): the paper's 16 % of the radius, short of
/// the CalculiX run's last increment (1.65), whose shape is the mode (data/demo/walls.toml says
/// why).
const SQUEEZE: f64 = 1.6;

/// CalculiX's generalized force of the whole sphere against the wall displacement, `(u, 8
/// (f_x + f_y + f_z))` per increment (data/fem/sphere/sphere_scalars.csv): all increments, and
/// the checked ones: past 10 % of the largest force, up to `upto` (plate displacement).
fn calculix_sphere(dir: &Path, u_per_d: f64, factor: f64, upto: f64) -> Result<(Points, Points)> {
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
        .filter(|p| p.1 >= 0.1 * largest && p.0 <= u_per_d * upto)
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
fn walls() -> Vec<Loader> {
    loaders("wall", 0, &[0, 1, 2])
}

/// One sphere between six walls against the CalculiX run.
fn sphere(dir: &Path, _variant: &str) -> Result<Checked> {
    let (all, checked) = calculix_sphere(dir, 1.0, 1.0, SQUEEZE)?;
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

/// The spheres per row of a cubic packing scene (its first lattice's counts, all equal).
fn per_row(scene: &Path) -> Result<usize> {
    let text = std::fs::read_to_string(scene)
        .with_context(|| format!("cannot read {}", scene.display()))?;
    let value: toml::Value =
        toml::from_str(&text).with_context(|| format!("{}: invalid TOML", scene.display()))?;
    let counts: Vec<i64> = value
        .get("lattices")
        .and_then(|l| l.get(0))
        .and_then(|l| l.get("counts"))
        .and_then(|c| c.as_array())
        .map(|c| c.iter().filter_map(toml::Value::as_integer).collect())
        .unwrap_or_default();
    match counts[..] {
        [n, m, k] if n == m && m == k && n > 0 => Ok(n as usize),
        _ => anyhow::bail!(
            "{}: expected a cubic lattice, counts [n, n, n]",
            scene.display()
        ),
    }
}

/// `n^3` spheres in a cubic packing squeezed by six walls (Eq. 73) against the CalculiX run: the
/// walls' work is the spheres' energy and each sphere's amplitude is `u_w / n`, so `F_w(u_w) =
/// n^2 F_int(u_w / n)` (`N / n` with `N = n^3`; 9 for the paper's 27 spheres).
fn packing(dir: &Path, variant: &str) -> Result<Checked> {
    let scene = match variant {
        "quick" => "packing-quick.toml",
        _ => "packing.toml",
    };
    let n = per_row(&dir.join(scene))?;
    let nf = n as f64;
    let (all, checked) = calculix_sphere(dir, nf, nf * nf, SQUEEZE)?;
    let spheres = n * n * n;
    let (rows, note, curve) = squeeze(
        "packing",
        &dir.join(format!("out/packing-{variant}.run")),
        &walls(),
        &checked,
        (
            &format!("{spheres} spheres, six walls"),
            &format!("{} F_int(u_w / {n}), F_int CalculiX's", n * n),
        ),
        0.02,
    )?;
    let notes = vec![
        format!(
            "Appendix C: the walls' work equals the {spheres} spheres' energy and each sphere's amplitude is u_w / {n}, so F_w(u_w) = (N / n) F_int(u_w / n) = {} F_int(u_w / {n}) (Eq. 73), with F_int CalculiX's generalized force of one sphere, 8 (f_x + f_y + f_z). Checked at its {} increments past 10 % of the largest force up to u_w = {}.",
            n * n,
            checked.len(),
            nf * SQUEEZE
        ),
        note,
    ];
    let plot = (
        format!("{spheres} CalculiX spheres squeezed by six walls"),
        (
            "wall displacement u_w (mm)".into(),
            "total wall force (N)".into(),
        ),
        vec![
            Series {
                name: format!("{} F_int(u_w / {n}), CalculiX (Eq. 73)", n * n),
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

/// A path-mode case: the runs `runs` (`(run directory, label, the loaders that squeeze it)`)
/// against CalculiX's points, every increment past 10 % of the largest force to the last, within
/// 3 %.
fn path_case(
    dir: &Path,
    case: &'static str,
    runs: &[(&str, &str, &[Loader])],
    (all, checked): (Points, Points),
    (source, title, note): (&str, &str, String),
) -> Result<Checked> {
    let mut rows = Vec::new();
    let mut notes = vec![note];
    let mut series = vec![Series {
        name: format!("CalculiX, {source}"),
        points: all,
        markers: true,
    }];
    for (run, label, loaders) in runs {
        let run = dir.join(format!("out/{run}.run"));
        let (r, n, curve) = squeeze(case, &run, loaders, &checked, (label, source), 0.03)?;
        rows.extend(r);
        // The ledger closed to the run's own warning level (dem_run::run::LEDGER_WARNING).
        rows.push(Row {
            case,
            quantity: format!("{label}: energy ledger residual / most energy supplied"),
            reference: 0.0,
            source: "energy balance".into(),
            result: summary_number(&run, "ledger_error")?,
            tolerance: dem_run::run::LEDGER_WARNING,
        });
        notes.push(n);
        series.push(curve);
    }
    let plot = (
        title.to_string(),
        (
            "loader displacement u (mm)".into(),
            "total loader force (N)".into(),
        ),
        series,
    );
    Ok(Checked { rows, notes, plot })
}

/// The CalculiX sphere as a path mode (data/demo/sphere-path.toml) between six walls, against
/// the run's generalized force to its last increment.
fn sphere_path(dir: &Path, _variant: &str) -> Result<Checked> {
    let last = read_columns(
        &dir.join("../fem/sphere/sphere_scalars.csv"),
        &["displacement_x"],
    )?[0]
        .iter()
        .copied()
        .fold(0.0, f64::max);
    let points = calculix_sphere(dir, 1.0, 1.0, last)?;
    let note = format!(
        "The sphere's mode follows the CalculiX run's increments (a path mode, docs/physics.md section 1), and the walls' contact has the run's penalty stiffness. Reference: 8 (f_x + f_y + f_z) as for `sphere`, at the {} increments past 10 % of the largest force up to the run's last, {last} mm.",
        points.1.len()
    );
    path_case(
        dir,
        "sphere-path",
        &[("sphere-path", "path mode, six walls", &walls())],
        points,
        (
            "8 (f_x + f_y + f_z)",
            "The CalculiX sphere as a path mode, to the run's last increment",
            note,
        ),
    )
}

/// The CalculiX ellipsoid as a path mode squeezed along x by two walls (data/demo/ellipsoid.toml)
/// and by two box grains with each deforming level-set update
/// (data/demo/ellipsoid-plates-*.toml): the two loaders' total force against twice the whole
/// grain's plate force, 4 f_plate each (the octant's plate carries a quarter of the whole grain's
/// wall, two symmetry planes containing its axis).
fn ellipsoid(dir: &Path, _variant: &str) -> Result<Checked> {
    let points = calculix_points(
        &dir.join("../fem/ellipsoid/ellipsoid_scalars.csv"),
        "displacement_plate",
        &["force_plate"],
        8.0,
    )?;
    let note = format!(
        "An ellipsoid of semi-axes 12, 9, 7 mm (data/fem/ellipsoid) as a path mode, eps the plate's displacement, squeezed along x at the run's penalty stiffness by two walls (the grain gives the nodes) and by two box grains (they give the nodes to its deformed level set). Reference: the two loaders' total force against 2 x 4 f_plate (the octant's plate reaction f_plate, a quarter of a whole wall's), at the {} increments past 10 % of the largest to the run's last.",
        points.1.len()
    );
    let (walls, plates) = (loaders("wall", 0, &[0]), loaders("grain", 1, &[0]));
    path_case(
        dir,
        "ellipsoid",
        &[
            ("ellipsoid", "path mode, two walls", &walls),
            (
                "ellipsoid-plates-semi-lagrangian",
                "two box grains, semi-Lagrangian",
                &plates,
            ),
            (
                "ellipsoid-plates-precomputed",
                "two box grains, precomputed",
                &plates,
            ),
        ],
        points,
        (
            "8 f_plate",
            "The CalculiX ellipsoid as a path mode, to the run's last increment",
            note,
        ),
    )
}

/// Grain on grain (data/demo/pair-*.toml): the capsule and the ellipsoid of data/fem/pair, each a
/// path mode, between two walls, with each deforming level-set update: the walls' total force
/// against the quarter model's plates, 4 (f_top + f_bottom).
fn pair(dir: &Path, _variant: &str) -> Result<Checked> {
    let points = calculix_points(
        &dir.join("../fem/pair/pair_plates.csv"),
        "closure",
        &["force_top", "force_bottom"],
        4.0,
    )?;
    let note = format!(
        "Two different deformable grains pressed together (data/fem/pair: a capsule on an ellipsoid, E = 1000 and 2000 MPa, a quarter model). Each grain is a path mode of its own part of the run, freed of its rigid motion; the capsule gives its nodes to the ellipsoid's deformed level set, so the level-set update decides the grain-on-grain contact. Reference: the two walls' total force against 4 (f_top + f_bottom), the quarter model's plate reactions, at the {} increments past 10 % of the largest to the run's last. The rigid update (the ellipsoid's level set left undeformed) is not a method for a penetrated deforming grain: it gave 35 to 53 % too much here.",
        points.1.len()
    );
    // The top wall (wall1) is pushed up, the bottom one (wall0) down: (+, -) along z.
    let walls = vec![Loader::along("wall1", 2), Loader::along("wall0", 2)];
    path_case(
        dir,
        "pair",
        &[
            (
                "pair-semi-lagrangian",
                "grain on grain, semi-Lagrangian",
                &walls,
            ),
            ("pair-precomputed", "grain on grain, precomputed", &walls),
        ],
        points,
        (
            "4 (f_top + f_bottom)",
            "A capsule on an ellipsoid, both path modes, against CalculiX",
            note,
        ),
    )
}

/// The CalculiX beam: its mode against the analytic bending mode (Eq. 51) by the modal assurance
/// criterion, its modal stiffness against CalculiX's reaction over the deflection (linear run:
/// the work of the load is `R delta = K delta^2`), and the DEM's three-point bending slope
/// (Eq. 52) with that mode.
fn beam(dir: &Path, _variant: &str) -> Result<Checked> {
    let modes = grain::ModesBundle::read(&dir.join("out/beam.modes"))?;
    // Eq. 51 and the modal assurance criterion are computed here (crate::reference), not by
    // levelset-bake or mode-extract. The beam lies along x from 0 to 40 mm, z across it from its
    // mid-plane, and deflects along z; the span: CalculiX's supports are 1 mm in from its ends.
    let (span, start) = (38.0, 1.0);
    let n = modes.mesh.nodes.nrows();
    let (fem_mode, analytic): (Vec<[f64; 3]>, Vec<[f64; 3]>) = (0..n)
        .map(|i| {
            let node = [0, 1, 2].map(|c| modes.mesh.nodes[[i, c]]);
            (
                [0, 1, 2].map(|c| modes.phi[[0, i, c]]),
                reference::bending_mode(node, span, 0, 2, start),
            )
        })
        .unzip();
    let mac = reference::mac(&fem_mode, &analytic);
    // CalculiX's total reaction of the load line for its 0.01 mm deflection (beam.dat's last
    // number).
    let dat = std::fs::read_to_string(dir.join("../fem/beam/beam.dat"))?;
    let reaction = dat
        .split_whitespace()
        .last()
        .and_then(|w| w.parse::<f64>().ok())
        .context("beam.dat: no reaction")?
        .abs();
    let k_g = modes.stiffness[[0, 0]];
    let kn = scene_number(&dir.join("beam.toml"), "contact", "kn")?;
    let mut checked = three_point_bending(
        "beam",
        &dir.join("out/beam.run"),
        (k_g, kn, 5.0),
        "Three-point bending of the CalculiX beam with its own mode".into(),
    )?;
    let mut rows = vec![
        Row {
            case: "beam",
            quantity: "modal assurance criterion of the CalculiX mode against Eq. 51".into(),
            reference: 1.0,
            source: "the analytic bending mode".into(),
            result: mac,
            tolerance: 0.01,
        },
        Row {
            case: "beam",
            quantity: "modal stiffness K_g (N/mm)".into(),
            reference: reaction / 0.01,
            source: "CalculiX: reaction / deflection".into(),
            result: k_g,
            tolerance: 1e-6,
        },
    ];
    rows.append(&mut checked.rows);
    checked.rows = rows;
    checked.notes.insert(
        0,
        format!(
            "mode-extract takes the beam's one snapshot as its mode, eps the load line's deflection. Against the analytic bending mode of a simply supported beam (Eq. 51: axial z (pi/L) cos(pi s/L), deflection -sin(pi s/L), s from the left support, the span L = 38 mm; the overhangs continue the sine) the modal assurance criterion (Allemang 2003: (a . b)^2 / ((a . a)(b . b)), Euclidean over the FEM nodes' displacement vectors; Eq. 51 and the criterion computed by xtask, not by the code under test) is {mac:.5}. The modal stiffness equals CalculiX's reaction over the deflection, {reaction:.6e} N / 0.01 mm."
        ),
    );
    Ok(checked)
}

/// One stage of the granular experiment, read from its run: `(gamma, tau / sigma_n, ln(V / V0),
/// sigma_kk)` per history row, the shear strain from the cell's `L_12` and the time since the
/// shear began.
struct Stage {
    gamma: Vec<f64>,
    ratio: Vec<f64>,
    volumetric: Vec<f64>,
    normal: Vec<[f64; 3]>,
}

/// The granular experiment's runs of `kind` (deformable or rigid): the compression's last row
/// (the shear's start) and the shear's rows.
fn granular_stage(dir: &Path, kind: &str, rate: f64) -> Result<Stage> {
    let names = [
        "time",
        "volume",
        "stress_xx",
        "stress_yy",
        "stress_zz",
        "stress_xy",
    ];
    let compress = read_columns(
        &dir.join(format!("out/granular-compress-{kind}.run/history.csv")),
        &names,
    )?;
    let shear = read_columns(
        &dir.join(format!("out/granular-shear-{kind}.run/history.csv")),
        &names,
    )?;
    let last = compress[0].len() - 1;
    let (t0, v0) = (compress[0][last], compress[1][last]);
    // The compression's last row is the shear's start (the checkpoint it restarted from).
    let column = |c: usize| -> Vec<f64> {
        std::iter::once(compress[c][last])
            .chain(shear[c].iter().copied())
            .collect()
    };
    let (time, volume, xx, yy, zz, xy) = (
        column(0),
        column(1),
        column(2),
        column(3),
        column(4),
        column(5),
    );
    Ok(Stage {
        gamma: time.iter().map(|t| rate * (t - t0)).collect(),
        ratio: xy.iter().zip(&yy).map(|(t, s)| t / -s).collect(),
        volumetric: volume.iter().map(|v| (v / v0).ln()).collect(),
        normal: (0..time.len()).map(|i| [xx[i], yy[i], zz[i]]).collect(),
    })
}

/// The granular experiment: the servo's targets reached and held, the energy ledger, and the
/// stress ratio and volumetric strain against the shear strain, rigid and deformable.
fn granular(dir: &Path, variant: &str) -> Result<Checked> {
    let scene = |stage: &str, kind: &str| dir.join(format!("granular-{stage}-{kind}.toml"));
    let target = scene_value(
        &scene("compress", "deformable"),
        &["cell", "servo", "pressure", "0"],
    )?;
    let rate = scene_value(
        &scene("shear", "deformable"),
        &["cell", "velocity_gradient", "0", "1"],
    )?;
    let count = scene_value(
        &scene("compress", "deformable"),
        &["packings", "0", "count"],
    )?;
    let mut rows = Vec::new();
    let mut notes = vec![format!(
        "A random packing of {count} grains in a periodic cell (docs/experiments.md section 5): the CalculiX sphere (radius 10 mm) and ellipsoid (semi-axes 12, 9, 7 mm) of data/fem, half and half, at scales 0.85, 1 and 1.15, compressed by the cell's servo to {target} MPa on its three axes until in equilibrium (unbalanced-force ratio below 1 %), then sheared at dv_x/dy = {rate} per unit time with the servo holding the three normal stresses. The same packing (same seed) twice: the grains deformable (their CalculiX modes, precomputed level sets) and rigid (modes off). The references are the servo's targets and the energy balance: no published curve exists for this mixture; the plots compare rigid and deformable."
    )];
    let mut ratio_series = Vec::new();
    let mut volume_series = Vec::new();
    for kind in ["deformable", "rigid"] {
        let compress = dir.join(format!("out/granular-compress-{kind}.run"));
        let shear = dir.join(format!("out/granular-shear-{kind}.run"));
        let [p, phi, z] = <[Vec<f64>; 3]>::try_from(read_columns(
            &compress.join("history.csv"),
            &["pressure", "solid_fraction", "mechanical_coordination"],
        )?)
        .expect("3 columns");
        let end = p.len() - 1;
        rows.push(Row {
            case: "granular",
            quantity: format!("{kind}: sample pressure p at the end of the compression (MPa)"),
            reference: target,
            source: "the cell servo's target".into(),
            result: p[end],
            tolerance: 0.01,
        });
        let stage = granular_stage(dir, kind, rate)?;
        // Per history row, the normal stress farthest from the target: held on average, with
        // transients where the sample rearranges (its stresses drop before the grains settle and
        // the servo follows).
        let deviation: Vec<f64> = (stage.normal.iter())
            .map(|s| {
                s.iter()
                    .map(|s| (-s / target - 1.0).abs())
                    .fold(0.0, f64::max)
            })
            .collect();
        let mean = deviation.iter().sum::<f64>() / deviation.len() as f64;
        let largest = deviation.iter().copied().fold(0.0, f64::max);
        rows.push(Row {
            case: "granular",
            quantity: format!("{kind}: mean over the shear of max_k |-sigma_kk / p_target - 1|"),
            reference: 0.0,
            source: "the servo holds its target".into(),
            result: mean,
            tolerance: 0.01,
        });
        for (stage_name, run) in [("compression", &compress), ("shear", &shear)] {
            rows.push(Row {
                case: "granular",
                quantity: format!(
                    "{kind} {stage_name}: energy ledger residual / most energy supplied"
                ),
                reference: 0.0,
                source: "energy balance".into(),
                result: summary_number(run, "ledger_error")?,
                tolerance: dem_run::run::LEDGER_WARNING,
            });
        }
        let n = stage.gamma.len();
        let late: Vec<f64> = (0..n)
            .filter(|&i| stage.gamma[i] >= 0.5 * stage.gamma[n - 1])
            .map(|i| stage.ratio[i])
            .collect();
        let excursions = summary(&shear)?["excursions"]
            .as_array()
            .map_or(0, Vec::len);
        notes.push(format!(
            "{kind}: compressed to a solid fraction of {:.4} (the grains' deformed volumes over the cell's), mechanical coordination {:.2}; sheared to gamma = {:.3}: tau / sigma_n {:.3} on average over its second half, peak {:.3}; volumetric strain ln(V / V0) {:+.4} at the end (dilation positive); the normal stresses {:.2} % from the target at most ({} of {} history rows beyond 1 %: rearrangements, the stresses dropping before the grains settle); {excursions} amplitude ranges left during the shear (summary.json). {} {}",
            phi[end],
            z[end],
            stage.gamma[n - 1],
            late.iter().sum::<f64>() / late.len() as f64,
            stage.ratio.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            stage.volumetric[n - 1],
            100.0 * largest,
            deviation.iter().filter(|d| **d > 0.01).count(),
            deviation.len(),
            crate::measure::run_time(&compress)?,
            crate::measure::run_time(&shear)?,
        ));
        let points = |y: &[f64]| stage.gamma.iter().copied().zip(y.iter().copied()).collect();
        ratio_series.push(Series {
            name: format!("{kind} grains"),
            points: points(&stage.ratio),
            markers: false,
        });
        volume_series.push(Series {
            name: format!("{kind} grains"),
            points: points(&stage.volumetric),
            markers: false,
        });
    }
    let volumetric = format!("granular-volumetric-{variant}.svg");
    crate::plot::draw(
        &dir.join("out").join(&volumetric),
        "Granular experiment: volumetric strain under simple shear at 4 MPa",
        (
            "shear strain gamma",
            "volumetric strain ln(V / V0), dilation positive",
        ),
        &volume_series,
    )?;
    notes.push(format!(
        "![Volumetric strain against shear strain]({volumetric})\n\nThe deformable grains' modes were computed by CalculiX for their own loading (six walls for the sphere, one plate for the ellipsoid): in the packing, contacts between the loaded points drive some amplitudes negative (the grain bulging where the FEM run never pushed it), beyond the runs' range, where the solver extrapolates the internal force by the table's end slope and says so (dem-run's warnings; summary.json's `excursions`). A mode from a FEM run under the packing's own contact pattern would not extrapolate. One packing of {count} grains is one realization: docs/experiments.md section 5 has the same stages with seeds 2 and 3 (measured apart from the demo), whose scatter exceeds the difference between rigid and deformable grains."
    ));
    Ok(Checked {
        rows,
        notes,
        plot: (
            "Granular experiment: stress ratio under simple shear at 4 MPa".into(),
            (
                "shear strain gamma".into(),
                "stress ratio tau / sigma_n = sigma_xy / -sigma_yy".into(),
            ),
            ratio_series,
        ),
    })
}
