//! `cargo xtask validate [--quick|--full] [CASE...]`: the paper's validation cases (its Section
//! 4 and Appendices B and C) as shipped scenes under `data/validation/<case>/`, each run through
//! its pipeline (the stages tagged with the variant, and the untagged ones), then checked row by
//! row against its reference. The table is printed, and a Markdown report and one plot per case
//! are written to `data/validation/out/` (or under `--data`).
//!
//! Cases:
//! - `bending`: three-point bending with the analytic bending mode (Table 1). The normalized
//!   indenter force `F_hat = F / (K_g delta_0)` against `delta_hat = delta / delta_0` (Eq. 52)
//!   has slope 1 once the contact compliance is taken out; as measured, its slope is
//!   `1 / (1 + K_g c)` with `c` the compliance of the node springs in series. `K_g` is Table 1's
//!   (the beam's bundle is checked to carry it).
//! - `sphere`: one deformable sphere with the paper's lookup table (Table 2, Appendix B)
//!   squeezed by six walls, and by six plates giving the nodes: the total wall force against
//!   the wall displacement `u` follows the table (`u = R eps_table`, the force the table's) at
//!   every row past 10 % of its largest force (Appendix C with `N = 1`: the six walls' work is
//!   the sphere's energy, so their total force is `U'(u)`).
//! - `packing`: 27 such spheres in a 3 x 3 x 3 cubic packing squeezed by six walls each
//!   displaced by `u_w`: the total wall force is `F_w(u_w) = 9 F_int(u_w / 3)` (Appendix C,
//!   Eq. 73), checked at the table's rows past 10 % of its largest force.
//! - `squeeze`: a ball whose body is its free modes and residual flexibility and whose contacts
//!   are Hertz's (docs/physics.md section 2), between two plates at five random orientations of
//!   its mesh, against CalculiX's small-strain run of the same ball (data/fem/squeeze): each
//!   plate's force at every increment past 10 % of the largest, and the spread across the
//!   orientations; the finite-strain run is reported beside it.
//! - `squeeze-two`: the same ball pressed along z and along x at once, the x plates moving half
//!   as far: each pair's force against CalculiX's, and how far a rigid Hertz grain is from it.
//! - `squeeze-pair`: grain on grain: two such balls stacked between two plates moved in steps,
//!   each ball CalculiX's ball against a plane by symmetry; the force at the end of each hold.
//! - `egg`: an ellipsoid built the same way (another shape, another Poisson's ratio) pressed
//!   between two plates along each of its axes, and obliquely by two pairs at once, against
//!   CalculiX's small-strain runs (data/fem/egg).

use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::measure::{
    Loader, Points, at, calculix_points, loaders, scene_number, squeeze, three_point_bending,
};
use crate::plot::{Series, read_columns};
use crate::suite::{Case, Checked, Row, Suite};

/// The paper's validation cases.
pub const SUITE: Suite = Suite {
    dir: "validation",
    command: "cargo xtask validate",
    cases: &[
        Case {
            name: "bending",
            dir: "bending",
            check: bending,
        },
        Case {
            name: "sphere",
            dir: "sphere",
            check: sphere,
        },
        Case {
            name: "packing",
            dir: "sphere",
            check: packing,
        },
        Case {
            name: "squeeze",
            dir: "squeeze",
            check: squeeze_one,
        },
        Case {
            name: "squeeze-two",
            dir: "squeeze",
            check: squeeze_two,
        },
        Case {
            name: "squeeze-pair",
            dir: "squeeze",
            check: squeeze_pair,
        },
        Case {
            name: "egg",
            dir: "egg",
            check: egg,
        },
    ],
};

/// The beam's modal stiffness `K_g` in the paper's Table 1 (voxel units), which
/// data/validation/bending/pipeline.toml hands to levelset-bake (`--modal-stiffness 1e4`).
const TABLE_1_STIFFNESS: f64 = 1e4;

/// Three-point bending (Table 1; Eqs. 51-52), 5 nodes across the 4-voxel beam. The modal
/// stiffness `K_g` of the references is Table 1's: the beam's bundle must carry that value, so
/// that the references do not follow whatever levelset-bake wrote.
fn bending(dir: &Path, variant: &str) -> Result<Checked> {
    let beam = grain::GrainBundle::read(&dir.join("out/beam.grain"))?;
    let k_g = beam
        .deformation
        .as_ref()
        .context("the beam bundle has no mode")?
        .modal_stiffness[[0, 0]];
    if (k_g / TABLE_1_STIFFNESS - 1.0).abs() > 1e-12 {
        bail!(
            "{}: the beam's modal stiffness is {k_g}, not Table 1's {TABLE_1_STIFFNESS}",
            dir.join("out/beam.grain").display()
        );
    }
    let kn = scene_number(&dir.join(format!("{variant}.toml")), "contact", "kn")?;
    three_point_bending(
        "bending",
        &dir.join(format!("out/{variant}.run")),
        (k_g, kn, 5.0),
        format!("Three-point bending, analytic mode ({variant} run)"),
    )
}

/// The sphere's radius in the paper's Table 2 (voxels): the unit of its table's `eps`.
const RADIUS: f64 = 10.0;

/// The paper's table (data/reference) as reference points `(u_per_eps eps, factor F)`: all of
/// them, and those with a force past 10 % of the largest (the checked rows).
fn paper_points(dir: &Path, u_per_eps: f64, factor: f64) -> Result<(Points, Points)> {
    let path = dir.join("../../reference/sphere_compaction_lookup_paper.csv");
    let [eps, force] =
        <[Vec<f64>; 2]>::try_from(read_columns(&path, &["eps", "force"])?).expect("2 columns");
    let largest = force.iter().copied().fold(0.0, f64::max);
    let all: Points = eps
        .iter()
        .zip(&force)
        .map(|(e, f)| (u_per_eps * e, factor * f))
        .collect();
    let checked = all
        .iter()
        .zip(&force)
        .filter(|(_, f)| **f >= 0.1 * largest)
        .map(|(p, _)| *p)
        .collect();
    Ok((all, checked))
}

/// One deformable sphere squeezed by six walls, then by six plates that give the nodes
/// (Table 2; Appendix C with N = 1): at each row of the paper's table past 10 % of its largest
/// force, the DEM's total force at `u = 10 eps` (the radius) against the row's force.
fn sphere(dir: &Path, variant: &str) -> Result<Checked> {
    let radius = RADIUS;
    let (table, checked) = paper_points(dir, radius, 1.0)?;
    let largest = table.iter().map(|r| r.1).fold(0.0, f64::max);
    let from = checked[0].0;
    let mut rows = Vec::new();
    let mut notes = vec![format!(
        "The table's eps is in units of the sphere's radius R = {radius}: the wall displacement is u = R eps and the force the table's (the paper identifies the indenter reaction with the generalized force, Section 4.2). Checked at the {} rows with a force past 10 % of the largest ({largest}), u from {from} to {}.",
        checked.len(),
        checked.last().expect("rows").0
    )];
    let mut series = vec![Series {
        name: "paper's table (Appendix B), u = R eps".into(),
        points: table,
        markers: true,
    }];
    for (run, bodies, label) in [
        (
            "walls",
            loaders("wall", 0, &[0, 1, 2]),
            "six walls, the sphere gives the nodes",
        ),
        (
            "plates",
            loaders("grain", 1, &[0, 1, 2]),
            "six plates give the nodes to the sphere's level set",
        ),
    ] {
        let (r, note, curve) = squeeze(
            "sphere",
            &dir.join(format!("out/{run}-{variant}.run")),
            &bodies,
            &checked,
            (label, "the table, Appendix B"),
            0.02,
        )?;
        rows.extend(r);
        notes.push(note);
        series.push(curve);
    }
    let plot = (
        format!("One sphere squeezed by six walls ({variant} run)"),
        ("wall displacement u".into(), "total wall force".into()),
        series,
    );
    Ok(Checked { rows, notes, plot })
}

/// 27 spheres squeezed by six walls (Appendix C): at each row of the table past 10 % of its
/// largest force, the total wall force at `u_w = 3 R eps` against `9 F` (Eq. 73).
fn packing(dir: &Path, variant: &str) -> Result<Checked> {
    let radius = RADIUS;
    let (table, checked) = paper_points(dir, 3.0 * radius, 9.0)?;
    let walls = loaders("wall", 0, &[0, 1, 2]);
    let (rows, note, curve) = squeeze(
        "packing",
        &dir.join(format!("out/packing-{variant}.run")),
        &walls,
        &checked,
        ("27 spheres, six walls", "9 F_int(u_w / 3), Eq. 73"),
        0.02,
    )?;
    let notes = vec![
        format!(
            "Appendix C: the walls' work equals the 27 spheres' energy, and by symmetry each sphere's amplitude is u_w / 3, so F_w(u_w) = 9 F_int(u_w / 3) (Eq. 73); F_int is the paper's table with eps in units of the radius R = {radius}. Checked at its {} rows past 10 % of its largest force.",
            checked.len()
        ),
        note,
    ];
    let plot = (
        format!("27 spheres squeezed by six walls ({variant} run)"),
        ("wall displacement u_w".into(), "total wall force".into()),
        vec![
            Series {
                name: "9 F_int(u_w / 3), the paper's table (Eq. 73)".into(),
                points: table,
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

/// The squeezed ball's radius and material (data/fem/ball, data/fem/squeeze).
const BALL: (f64, f64, f64) = (10.0, 1000.0, 0.25);

/// A CalculiX squeeze table of data/fem/squeeze (`file`; its columns `travel` and `force`, the
/// whole sphere's force on one plate, negative) as reference points `(travel, -2 F)`, the two
/// plates' total: all of them, and those past 10 % of the largest force.
fn squeeze_points(dir: &Path, file: &str, travel: &str, force: &str) -> Result<(Points, Points)> {
    calculix_points(
        &dir.join("../../fem/squeeze").join(file),
        travel,
        &[force],
        -2.0,
    )
}

/// The largest `|F / F_ref - 1|` of `curve` at `points`.
fn largest_deviation(curve: &[(f64, f64)], points: &[(f64, f64)]) -> f64 {
    (points.iter())
        .map(|&(u, f)| at(curve, u).map_or(f64::NAN, |d| (d / f - 1.0).abs()))
        .fold(0.0, |a: f64, e| if e.is_nan() { e } else { a.max(e) })
}

/// Hertz's force of a rigid grain of equivalent radius `r` and material `e`, `nu` on two
/// plates, each moved by `travel`: `2 (4/3) E* sqrt(r) travel^(3/2)` (Johnson 1985, Eq. 4.23; a
/// plate meets the grain alone).
fn hertz_on_plates(travel: f64, (r, e, nu): (f64, f64, f64)) -> f64 {
    2.0 * 4.0 / 3.0 * e / (1.0 - nu * nu) * r.sqrt() * travel.powf(1.5)
}

/// [`hertz_on_plates`] for the ball.
fn rigid_hertz(travel: f64) -> f64 {
    hertz_on_plates(travel, BALL)
}

/// The ball between two plates along z at five random orientations of its mesh (one in the
/// quick variant): each run's largest deviation from CalculiX's small-strain run, and the spread
/// of the force across the orientations.
fn squeeze_one(dir: &Path, variant: &str) -> Result<Checked> {
    let source = "CalculiX, small strain (data/fem/squeeze)";
    let (table, checked) =
        squeeze_points(dir, "squeeze_linear_plate.csv", "travel", "force_sphere")?;
    let (_, finite) = squeeze_points(dir, "squeeze_plate.csv", "travel", "force_sphere")?;
    let count = if variant == "quick" { 1 } else { 5 };
    let runs: Vec<String> = (1..=count).map(|i| format!("one-{i}")).collect();
    let walls = loaders("wall", 0, &[2]);
    let mut rows = Vec::new();
    let mut notes = vec![format!(
        "The reference is CalculiX's run of the same ball (radius {}, E {}, nu {}) without geometric nonlinearity, its mesh refined to 0.15 mm at the poles, the plates' total force at each of its 20 increments (checked: the {} past 10 % of the largest). The grain: the 20 lowest free modes of the size-3 mesh of data/fem/ball and their residual flexibility (patches of radius 5), the exact sphere's surface with 60,000 nodes, Hertz's pressure at its nodes. The quick variant runs the first of the five orientations.",
        BALL.0,
        BALL.1,
        BALL.2,
        checked.len()
    )];
    let (finite_table, _) = squeeze_points(dir, "squeeze_plate.csv", "travel", "force_sphere")?;
    let mut series = vec![
        Series {
            name: "rigid grain, Hertz".into(),
            points: table.iter().map(|&(u, _)| (u, rigid_hertz(u))).collect(),
            markers: false,
        },
        Series {
            name: "CalculiX, finite strain (NLGEOM)".into(),
            points: finite_table,
            markers: true,
        },
        Series {
            name: "CalculiX, small strain".into(),
            points: table,
            markers: true,
        },
    ];
    let mut curves = Vec::new();
    for run in &runs {
        let (r, note, curve) = squeeze(
            "squeeze",
            &dir.join(format!("out/{run}.run")),
            &walls,
            &checked,
            (run.as_str(), source),
            0.03,
        )?;
        rows.extend(r);
        notes.push(format!(
            "{note} Against the finite-strain (NLGEOM) run: {:.2} %.",
            100.0 * largest_deviation(&curve.points, &finite)
        ));
        curves.push(curve.points.clone());
        series.push(curve);
    }
    if curves.len() > 1 {
        let spread = (checked.iter())
            .map(|&(u, f)| {
                let at_u: Vec<f64> = curves.iter().filter_map(|c| at(c, u)).collect();
                let (lo, hi) = at_u
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                        (lo.min(x), hi.max(x))
                    });
                (hi - lo) / f
            })
            .fold(0.0, f64::max);
        rows.push(Row {
            case: "squeeze",
            quantity: "spread of the force across the 5 orientations, largest past 10 %".into(),
            reference: 0.0,
            source: "orientation-free".into(),
            result: spread,
            tolerance: 0.01,
        });
    }
    notes.push(format!(
        "A rigid grain with Hertz's contacts is {:.2} % from the small-strain run.",
        100.0
            * largest_deviation(
                &checked
                    .iter()
                    .map(|&(u, _)| (u, rigid_hertz(u)))
                    .collect::<Vec<_>>(),
                &checked
            )
    ));
    let plot = (
        format!("The ball between two plates ({variant} run)"),
        ("plate travel".into(), "two plates' force".into()),
        series,
    );
    Ok(Checked { rows, notes, plot })
}

/// The ball pressed along z and along x at once (the x plates move half as far): each pair's
/// force against CalculiX's small-strain run, and how far a rigid Hertz grain is from it.
fn squeeze_two(dir: &Path, variant: &str) -> Result<Checked> {
    let source = "CalculiX, small strain (data/fem/squeeze)";
    let run = dir.join("out/two.run");
    let mut rows = Vec::new();
    let mut notes = vec![
        "The reference is CalculiX's small-strain run of the ball pressed by plates along z and along x at once, the x plates moving half as far (data/fem/squeeze, `make.py two linear`): each pair's total force at every increment past 10 % of its largest. Pairwise laws miss the coupling of the contacts through the grain's body (Brodu, Dijksman and Behringer 2015); a rigid grain with Hertz's contacts shows how much.".into(),
    ];
    let mut series = Vec::new();
    for (axis, travel, force, first) in [
        ("z", "travel_z", "force_z_sphere", 0),
        ("x", "travel_x", "force_x_sphere", 2),
    ] {
        let (table, checked) = squeeze_points(dir, "two_linear_plates.csv", travel, force)?;
        let (_, finite) = squeeze_points(dir, "two_plates.csv", travel, force)?;
        let axis_index = if axis == "z" { 2 } else { 0 };
        let (r, note, curve) = squeeze(
            "squeeze-two",
            &run,
            &loaders("wall", first, &[axis_index]),
            &checked,
            (&format!("{axis} plates"), source),
            0.03,
        )?;
        rows.extend(r);
        let rigid: Vec<(f64, f64)> = checked.iter().map(|&(u, _)| (u, rigid_hertz(u))).collect();
        notes.push(format!(
            "{note} A rigid Hertz grain: {:.2} %. Against the finite-strain (NLGEOM) run: {:.2} %.",
            100.0 * largest_deviation(&rigid, &checked),
            100.0 * largest_deviation(&curve.points, &finite)
        ));
        series.push(Series {
            name: format!("rigid grain, Hertz, {axis} plates"),
            points: table.iter().map(|&(u, _)| (u, rigid_hertz(u))).collect(),
            markers: false,
        });
        series.push(Series {
            name: format!("CalculiX, small strain, {axis} plates"),
            points: table,
            markers: true,
        });
        series.push(curve);
    }
    let plot = (
        format!("The ball pressed along two axes ({variant} run)"),
        ("plate travel".into(), "a pair of plates' force".into()),
        series,
    );
    Ok(Checked { rows, notes, plot })
}

/// Grain on grain: two balls stacked between two plates (each ball's mesh at its own random
/// orientation), the plates moved in steps to twice CalculiX's increments and held (every fourth
/// increment in the quick variant). By symmetry each ball is CalculiX's ball between a plate and
/// a rigid plane, compressed by a plate's travel `U` as CalculiX's plates compress it at `U / 2`:
/// the two plates' force at the end of each hold against CalculiX's at that increment.
fn squeeze_pair(dir: &Path, variant: &str) -> Result<Checked> {
    let source = "CalculiX, small strain (data/fem/squeeze), one ball against a plane";
    let (table, checked) =
        squeeze_points(dir, "squeeze_linear_plate.csv", "travel", "force_sphere")?;
    // The increments the plates hold at (the table starts at the origin, increment 0): all, or
    // every fourth (the quick scene's).
    let step = if variant == "quick" { 4 } else { 1 };
    let held: Vec<(f64, f64)> = (table.iter().enumerate())
        .filter(|(k, p)| k % step == 0 && checked.contains(p))
        .map(|(_, &(t, f))| (2.0 * t, f))
        .collect();
    let run = if variant == "quick" {
        "pair-quick"
    } else {
        "pair"
    };
    let (rows, note, curve) = squeeze(
        "squeeze-pair",
        &dir.join(format!("out/{run}.run")),
        &loaders("wall", 0, &[2]),
        &held,
        ("two balls stacked", source),
        0.03,
    )?;
    let rigid: Vec<(f64, f64)> = held
        .iter()
        .map(|&(u, _)| (u, rigid_hertz(u / 2.0)))
        .collect();
    let notes = vec![
        format!(
            "Two balls as in `squeeze` (orientations 2 and 3), stacked between two plates that move at 0.3 mm/ms and hold for 0.3 ms at each of {} of CalculiX's increments past 10 % of its largest force, the force read at the end of each hold; the balls are free along the stack, their contact each one's surface nodes in the other's level set of 20 modes. Two equal frictionless balls keep their contact plane flat by symmetry: each is CalculiX's ball against a plane, the plates' travel twice CalculiX's.",
            held.len()
        ),
        format!(
            "{note} Rigid Hertz balls (three contacts in series): {:.2} %.",
            100.0 * largest_deviation(&rigid, &held)
        ),
    ];
    let plot = (
        format!("Two balls stacked between two plates ({variant} run)"),
        ("plate travel".into(), "two plates' force".into()),
        vec![
            Series {
                name: "rigid balls, Hertz".into(),
                points: table
                    .iter()
                    .map(|&(t, _)| (2.0 * t, rigid_hertz(t)))
                    .collect(),
                markers: false,
            },
            Series {
                name: "CalculiX, small strain, one ball against a plane".into(),
                points: table.iter().map(|&(t, f)| (2.0 * t, f)).collect(),
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

/// The egg's semi-axes and material (data/fem/egg).
const EGG: ([f64; 3], f64, f64) = ([10.0, 8.0, 6.0], 1000.0, 0.3);

/// The egg's loadings (data/fem/egg/make.py's LOADINGS): a name (its run and CalculiX table) and
/// the directions of its pairs of plates, each pair's walls (+, -) in the run's order.
const EGG_LOADINGS: [(&str, &[[f64; 3]]); 4] = [
    ("x", &[[1.0, 0.0, 0.0]]),
    ("y", &[[0.0, 1.0, 0.0]]),
    ("z", &[[0.0, 0.0, 1.0]]),
    ("xz", &[[0.6, 0.0, 0.8], [0.6, 0.0, -0.8]]),
];

/// Hertz's equivalent radius `sqrt(r_1 r_2)` of the ellipsoid of semi-axes `axes` at the point
/// whose normal is `n` (unit, in a principal plane or along an axis: `n_y = 0` unless `n` is the y
/// axis), from its principal curvatures there: with `h = |A n|` the support distance, `h / b^2`
/// across the principal plane of `n` and `h^3 / (a^2 c^2)` in it (the pedal formula of the
/// plane's ellipse; at the tip of axis `i` they are `a_i / a_j^2`).
fn egg_equivalent_radius(axes: [f64; 3], n: [f64; 3]) -> f64 {
    let h = (0..3).map(|i| (axes[i] * n[i]).powi(2)).sum::<f64>().sqrt();
    // The axis across the plane of n: y, unless n lies on y (then x, the plane y-z's normal);
    // the plane's ellipse has the other two.
    let across = if n[1] == 0.0 { 1 } else { 0 };
    let in_plane: f64 = axes.iter().product::<f64>() / axes[across];
    let r_across = axes[across].powi(2) / h;
    let r_in = in_plane.powi(2) / h.powi(3);
    (r_across * r_in).sqrt()
}

/// The egg between plates: along each of its axes, and obliquely by two pairs at once; each
/// run's largest deviation from CalculiX's small-strain run.
fn egg(dir: &Path, variant: &str) -> Result<Checked> {
    let (axes, e, nu) = EGG;
    let source = "CalculiX, small strain (data/fem/egg)";
    let mut rows = Vec::new();
    let mut notes = vec![format!(
        "The reference is CalculiX's run of the ellipsoid of semi-axes {axes:?} (E {e}, nu {nu}) without geometric nonlinearity, an octant refined to 0.15 mm at the loaded point, pressed by 0.2 mm per plate in 20 increments, along each axis and obliquely (xz: two pairs of plates at once along (0.6, 0, +-0.8), whose couples cancel): the plates' total force at every increment past 10 % of the largest, against the DEM's loaders, walls or box grains (8 x 8 x 2 mm, the egg's nodes on their level sets). The grain: the 20 lowest free modes of the whole mesh of size 2 and their residual flexibility, the exact ellipsoid's surface (92,000 nodes), Hertz's pressure at its nodes."
    )];
    let mut series = Vec::new();
    for (name, directions) in EGG_LOADINGS {
        let plates = 2.0 * directions.len() as f64;
        let (table, checked) = calculix_points(
            &dir.join(format!("../../fem/egg/egg_{name}_plate.csv")),
            "travel",
            &["force_sphere"],
            -plates,
        )?;
        series.push(Series {
            name: format!("CalculiX, small strain, {name} plates"),
            points: table,
            markers: true,
        });
        // The loaders: walls, then box grains (grain 0 is the egg) in the same order; the quick
        // variant has the oblique loading's boxes only.
        let mut runs = vec![(name.to_string(), "wall", 0, format!("{name} plates"))];
        if variant == "full" || name == "xz" {
            runs.push((
                format!("{name}-boxes"),
                "grain",
                1,
                format!("{name} box grains"),
            ));
        }
        let mut run_notes = Vec::new();
        for (run, prefix, first, label) in runs {
            let loaders: Vec<Loader> = (directions.iter().enumerate())
                .flat_map(|(i, &direction)| {
                    (0..2).map(move |k| Loader {
                        name: format!("{prefix}{}", first + 2 * i + k),
                        direction,
                    })
                })
                .collect();
            let (r, note, curve) = squeeze(
                "egg",
                &dir.join(format!("out/{run}.run")),
                &loaders,
                &checked,
                (&label, source),
                0.03,
            )?;
            rows.extend(r);
            run_notes.push(note);
            series.push(curve);
        }
        // A rigid grain: each plate meets it alone (the directions are symmetric images).
        let equivalent = egg_equivalent_radius(axes, directions[0]);
        let rigid: Vec<(f64, f64)> = (checked.iter())
            .map(|&(u, _)| {
                let pair = hertz_on_plates(u, (equivalent, e, nu));
                (u, pair * directions.len() as f64)
            })
            .collect();
        notes.push(format!(
            "{} A rigid grain with Hertz's contact (equivalent radius {equivalent:.3}): {:.2} %.",
            run_notes.join(" "),
            100.0 * largest_deviation(&rigid, &checked)
        ));
    }
    let plot = (
        "The egg between plates along each axis and obliquely".to_string(),
        ("plate travel".into(), "the plates' total force".into()),
        series,
    );
    Ok(Checked { rows, notes, plot })
}
