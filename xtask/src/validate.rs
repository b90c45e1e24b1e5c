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
//!   `1 / (1 + K_g c)` with `c` the compliance of the node springs in series.
//! - `sphere`: one deformable sphere with the paper's lookup table (Table 2, Appendix B)
//!   squeezed by six walls, and by six plates giving the nodes: the total wall force against
//!   the wall displacement `u` follows the table (`u = R eps_table`, the force the table's) at
//!   every row past 10 % of its largest force (Appendix C with `N = 1`: the six walls' work is
//!   the sphere's energy, so their total force is `U'(u)`).
//! - `packing`: 27 such spheres in a 3 x 3 x 3 cubic packing squeezed by six walls each
//!   displaced by `u_w`: the total wall force is `F_w(u_w) = 9 F_int(u_w / 3)` (Appendix C,
//!   Eq. 73), checked at the table's rows past 10 % of its largest force.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::pipeline::{Outcome, Pipeline};
use crate::plot::{Series, draw, read_columns};

/// How long the runs are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// Faster loading, checked to stay quasi-static; in the test suite.
    Quick,
    /// The paper's protocol (time step, loading rate and step count of its Table 1).
    Full,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Quick => "quick",
            Variant::Full => "full",
        }
    }
}

/// One checked quantity.
pub struct Row {
    /// The case.
    pub case: &'static str,
    /// What is compared.
    pub quantity: String,
    /// The reference value.
    pub reference: f64,
    /// Where the reference comes from.
    pub source: String,
    /// The result of the run.
    pub result: f64,
    /// The largest accepted `|result - reference|`, relative to the reference, or absolute when
    /// the reference is 0.
    pub tolerance: f64,
}

impl Row {
    /// `|result - reference|`, relative unless the reference is 0.
    pub fn error(&self) -> f64 {
        let d = (self.result - self.reference).abs();
        if self.reference == 0.0 {
            d
        } else {
            d / self.reference.abs()
        }
    }

    /// Whether the row passes (a non-finite result never does).
    pub fn passes(&self) -> bool {
        self.result.is_finite() && self.error() <= self.tolerance
    }
}

/// What a case reports besides its rows.
struct Checked {
    rows: Vec<Row>,
    /// Markdown paragraphs: how the references were derived, what was measured.
    notes: Vec<String>,
    /// The plot: title, axis labels and curves.
    plot: (String, (String, String), Vec<Series>),
}

/// A validation case: its directory under `data/validation` (several cases may share one:
/// their stages are tagged with the case's name) and its check.
struct Case {
    name: &'static str,
    dir: &'static str,
    check: fn(&Path, Variant) -> Result<Checked>,
}

const CASES: &[Case] = &[
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
];

/// The case names, in report order.
pub fn case_names() -> Vec<&'static str> {
    CASES.iter().map(|c| c.name).collect()
}

/// Runs the cases (all when `names` is empty) with the stage binaries on `path`, prints the
/// table, writes the report and plots; `Ok(false)` when a row fails.
pub fn validate(data: &Path, names: &[String], variant: Variant, path: &[PathBuf]) -> Result<bool> {
    let root = data.join("validation");
    let selected: Vec<&Case> = if names.is_empty() {
        CASES.iter().collect()
    } else {
        names
            .iter()
            .map(|n| {
                CASES.iter().find(|c| c.name == n).with_context(|| {
                    format!(
                        "no validation case `{n}` (cases: {})",
                        case_names().join(", ")
                    )
                })
            })
            .collect::<Result<_>>()?
    };
    let out = root.join("out");
    let mut rows = Vec::new();
    let mut report = format!(
        "# Validation report ({} variant)\n\nMade by `cargo xtask validate --{}`. Each row compares a run with a reference that does not come from the code under test; the error is relative to the reference (absolute when the reference is 0).\n",
        variant.name(),
        variant.name()
    );
    for case in selected {
        let dir = root.join(case.dir);
        let pipeline = Pipeline::read(&dir.join("pipeline.toml"))?;
        println!("validate {}: pipeline {}", case.name, dir.display());
        let start = Instant::now();
        let tags = [variant.name(), case.name];
        if let Outcome::Failed { stage, code } =
            pipeline.run(&dir, path, false, Some(&tags), &mut std::io::stdout())?
        {
            bail!("{}: stage {stage} failed with exit code {code}", case.name);
        }
        let seconds = start.elapsed().as_secs_f64();
        let checked = (case.check)(&dir, variant)?;
        let (title, (x, y), series) = &checked.plot;
        let plot = out.join(format!("{}-{}.svg", case.name, variant.name()));
        draw(&plot, title, (x, y), series)?;
        report.push_str(&format!(
            "\n## {}\n\n![{}]({})\n\nPipeline wall time (stages that ran, including the solver): {seconds:.1} s.\n\n",
            case.name,
            title,
            plot.file_name().expect("a file name").to_string_lossy()
        ));
        for n in &checked.notes {
            report.push_str(n);
            report.push_str("\n\n");
        }
        report.push_str(&table(&checked.rows));
        rows.extend(checked.rows);
    }
    let summary = table(&rows);
    println!("\n{summary}");
    report.push_str(&format!("\n## All rows\n\n{summary}"));
    let path = out.join(format!("report-{}.md", variant.name()));
    std::fs::create_dir_all(&out)?;
    grain::atomic::write_file_atomically(&path, |w| w.write_all(report.as_bytes()))
        .with_context(|| format!("cannot write {}", path.display()))?;
    println!("report: {}", path.display());
    Ok(rows.iter().all(Row::passes))
}

/// The rows as a Markdown table.
fn table(rows: &[Row]) -> String {
    let mut t = String::from(
        "| case | quantity | reference | result | error | tolerance | |\n|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        t.push_str(&format!(
            "| {} | {} | {:.6} ({}) | {:.6} | {:.2e} | {:.0e} | {} |\n",
            r.case,
            r.quantity,
            r.reference,
            r.source,
            r.result,
            r.error(),
            r.tolerance,
            if r.passes() { "pass" } else { "FAIL" }
        ));
    }
    t
}

/// Least-squares slope of `y` against `x`.
fn slope(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let sxx: f64 = x.iter().map(|a| (a - mx) * (a - mx)).sum();
    sxy / sxx
}

/// A number from a scene file, by its table and key.
fn scene_number(scene: &Path, table: &str, key: &str) -> Result<f64> {
    let text = std::fs::read_to_string(scene)
        .with_context(|| format!("cannot read {}", scene.display()))?;
    let value: toml::Value =
        toml::from_str(&text).with_context(|| format!("{}: invalid TOML", scene.display()))?;
    value
        .get(table)
        .and_then(|t| t.get(key))
        .and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
        .with_context(|| format!("{}: no number at {table}.{key}", scene.display()))
}

/// Three-point bending (Table 1; Eqs. 51-52). The beam's modal stiffness `K_g` is read from
/// its bundle; `delta` is the indenter's displacement, `F` the force on it (history.csv's
/// `grain3_uz`, `grain3_fz`), `eps` the beam's amplitude. The slope is fitted over the
/// loading branch with `delta_hat >= 0.2` (past the start-up transient of the critically
/// damped mode).
fn bending(dir: &Path, variant: Variant) -> Result<Checked> {
    let run = dir.join(format!("out/{}.run", variant.name()));
    let beam = grain::GrainBundle::read(&dir.join("out/beam.grain"))?;
    let k_g = beam
        .deformation
        .as_ref()
        .context("the beam bundle has no mode")?
        .modal_stiffness[[0, 0]];
    let kn = scene_number(
        &dir.join(format!("{}.toml", variant.name())),
        "contact",
        "kn",
    )?;
    let columns = read_columns(
        &run.join("history.csv"),
        &[
            "grain3_uz",
            "grain3_fz",
            "grain0_eps0",
            "kinetic_translational",
            "kinetic_rotational",
            "kinetic_modal",
            "elastic_modal",
        ],
    )?;
    let [uz, fz, eps, kt, kr, km, um] = <[Vec<f64>; 7]>::try_from(columns).expect("7 columns");
    let delta: Vec<f64> = uz.iter().map(|u| -u).collect();
    let delta_0 = delta.iter().copied().fold(0.0, f64::max);
    // The loading branch: up to the first row at the full indentation.
    let end = delta
        .iter()
        .position(|&d| d >= delta_0 * (1.0 - 1e-12))
        .unwrap_or(delta.len() - 1);
    let window: Vec<usize> = (0..=end).filter(|&i| delta[i] >= 0.2 * delta_0).collect();
    if window.len() < 3 {
        bail!("{}: too few rows on the loading branch", run.display());
    }
    let pick = |v: &[f64]| -> Vec<f64> { window.iter().map(|&i| v[i]).collect() };
    let d_hat: Vec<f64> = pick(&delta).iter().map(|d| d / delta_0).collect();
    let f_hat: Vec<f64> = pick(&fz).iter().map(|f| f / (k_g * delta_0)).collect();
    let raw = slope(&d_hat, &f_hat);
    // The compliance: 5 nodes across the 4-voxel beam at the indenter, and at each support
    // (carrying F / 2): c = 1 / (5 kn) + 1 / (10 kn). Measured: the slope of delta - eps
    // against F (the cylinders' trilinear level sets also leave a constant gap, h^2 / 8R at
    // each top, which shifts but does not tilt the curve).
    let derived = 1.0 / (5.0 * kn) + 1.0 / (10.0 * kn);
    let gap: Vec<f64> = pick(&delta)
        .iter()
        .zip(pick(&eps))
        .map(|(d, e)| d - e)
        .collect();
    let measured = slope(&pick(&fz), &gap);
    let corrected: Vec<f64> = window
        .iter()
        .map(|&i| (delta[i] - derived * fz[i]) / delta_0)
        .collect();
    let after = slope(&corrected, &f_hat);
    let kinetic = window
        .iter()
        .map(|&i| (kt[i] + kr[i] + km[i]) / um[i])
        .fold(0.0, f64::max);
    let case = "bending";
    let rows = vec![
        Row {
            case,
            quantity: "slope of F_hat against delta_hat, as measured".into(),
            reference: 1.0 / (1.0 + k_g * derived),
            source: "1 / (1 + K_g c), c of the node springs".into(),
            result: raw,
            tolerance: 0.01,
        },
        Row {
            case,
            quantity: "slope after the contact compliance".into(),
            reference: 1.0,
            source: "Eq. 52: F_hat = delta_hat".into(),
            result: after,
            tolerance: 0.01,
        },
        Row {
            case,
            quantity: "largest kinetic / modal elastic energy on the fitted branch".into(),
            reference: 0.0,
            source: "quasi-static loading".into(),
            result: kinetic,
            tolerance: 0.01,
        },
    ];
    let notes = vec![format!(
        "The beam's modal stiffness K_g = {k_g} (the bundle), delta_0 = {delta_0}. Contact compliance: derived from the node springs (kn = {kn}; 5 nodes across the beam at the indenter and at each support, in series) c = 1/(5 kn) + 1/(10 kn) = {derived:.3e}, K_g c = {:.4}; measured as the slope of delta - eps against F over the fitted branch: c = {measured:.3e}, K_g c = {:.4}. The slope after the compliance is that of F_hat against (delta - c F) / delta_0 with the derived c. The DEM curve lies above the reference by the modal damping force C delta'/(K_g delta_0) while the indenter moves (constant, so the slope keeps it out), and drops by it when the indenter stops.",
        k_g * derived,
        k_g * measured
    )];
    let curve = |x: &[f64], y: &[f64]| x.iter().copied().zip(y.iter().copied()).collect();
    let all_d: Vec<f64> = delta.iter().map(|d| d / delta_0).collect();
    let all_f: Vec<f64> = fz.iter().map(|f| f / (k_g * delta_0)).collect();
    let plot = (
        format!(
            "Three-point bending, analytic mode ({} run)",
            variant.name()
        ),
        (
            "delta_hat = delta / delta_0".into(),
            "F_hat = F / (K_g delta_0)".into(),
        ),
        vec![
            Series {
                name: "DEM (indenter)".into(),
                points: curve(&all_d, &all_f),
                markers: false,
            },
            Series {
                name: "reference F_hat = delta_hat (Eq. 52)".into(),
                points: vec![(0.0, 0.0), (1.0, 1.0)],
                markers: false,
            },
        ],
    );
    Ok(Checked { rows, notes, plot })
}

/// The sphere's radius in the paper's Table 2 (voxels): the unit of its table's `eps`.
const RADIUS: f64 = 10.0;

/// Reference points `(u, F)`.
type Points = Vec<(f64, f64)>;

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

/// The value of the piecewise linear curve through `points` (increasing in x) at `x`; `None`
/// outside it (beyond its ends by more than the round-off of the time that moved the walls).
fn at(points: &[(f64, f64)], x: f64) -> Option<f64> {
    let (first, last) = (points.first()?, points.last()?);
    if x < first.0 || x > last.0 * (1.0 + 1e-9) || points.len() < 2 {
        return None;
    }
    if x >= last.0 {
        return Some(last.1);
    }
    let i = points
        .partition_point(|p| p.0 < x)
        .clamp(1, points.len() - 1);
    let (a, b) = (points[i - 1], points[i]);
    Some(a.1 + (b.1 - a.1) * (x - a.0) / (b.0 - a.0))
}

/// A squeezing run's total force against the wall displacement on the loading branch, from
/// history.csv: `bodies` names the six loaders (`wall<i>` or `grain<i>`, in the order +x, -x,
/// +y, -y, +z, -z), each pushed back along its axis. Also the largest kinetic / elastic energy
/// ratio past `from` in displacement.
fn squeeze_curve(run: &Path, bodies: &[String], from: f64) -> Result<(Vec<(f64, f64)>, f64)> {
    let mut names: Vec<String> = vec![format!("{}_ux", bodies[0])];
    for (i, b) in bodies.iter().enumerate() {
        names.push(format!("{b}_f{}", ["x", "y", "z"][i / 2]));
    }
    for n in [
        "kinetic_translational",
        "kinetic_rotational",
        "kinetic_modal",
        "elastic_modal",
    ] {
        names.push(n.into());
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let columns = read_columns(&run.join("history.csv"), &refs)?;
    let u: Vec<f64> = columns[0].iter().map(|x| x.abs()).collect();
    let u_max = u.iter().copied().fold(0.0, f64::max);
    let mut curve = Vec::new();
    let mut kinetic: f64 = 0.0;
    for (i, &ui) in u.iter().enumerate() {
        // The loading branch: while the walls advance.
        if curve.last().is_some_and(|&(x, _)| ui <= x) {
            continue;
        }
        // Each loader is pushed outwards: +x's force is +, -x's is -.
        let force: f64 = (0..6)
            .map(|w| if w % 2 == 0 { 1.0 } else { -1.0 } * columns[1 + w][i])
            .sum();
        curve.push((ui, force));
        if ui >= from {
            let e = columns[7][i] + columns[8][i] + columns[9][i];
            kinetic = kinetic.max(e / columns[10][i]);
        }
        if ui >= u_max {
            break;
        }
    }
    Ok((curve, kinetic))
}

/// One deformable sphere squeezed by six walls, then by six plates that give the nodes
/// (Table 2; Appendix C with N = 1): at each row of the paper's table past 10 % of its largest
/// force, the DEM's total force at `u = 10 eps` (the radius) against the row's force.
fn sphere(dir: &Path, variant: Variant) -> Result<Checked> {
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
            (0..6).map(|w| format!("wall{w}")).collect::<Vec<_>>(),
            "six walls, the sphere gives the nodes",
        ),
        (
            "plates",
            (1..7).map(|g| format!("grain{g}")).collect(),
            "six plates give the nodes to the sphere's level set",
        ),
    ] {
        let path = dir.join(format!("out/{run}-{}.run", variant.name()));
        let (curve, kinetic) = squeeze_curve(&path, &bodies, from)?;
        let (worst, note) = deviation(&path, &curve, &checked, label)?;
        notes.push(note);
        rows.extend(squeeze_rows(
            "sphere",
            label,
            "the table, Appendix B",
            worst,
            kinetic,
        ));
        series.push(Series {
            name: format!("DEM, {label}"),
            points: curve,
            markers: false,
        });
    }
    let plot = (
        format!("One sphere squeezed by six walls ({} run)", variant.name()),
        ("wall displacement u".into(), "total wall force".into()),
        series,
    );
    Ok(Checked { rows, notes, plot })
}

/// The largest relative deviation of a squeezing curve from `checked` (`(u, F)` reference
/// points), and a note saying where it is.
fn deviation(
    run: &Path,
    curve: &[(f64, f64)],
    checked: &[(f64, f64)],
    label: &str,
) -> Result<(f64, String)> {
    let mut worst = (0.0f64, 0.0);
    for &(u, f) in checked {
        let dem = at(curve, u)
            .with_context(|| format!("{}: the walls did not reach u = {u}", run.display()))?;
        // A NaN deviation is the worst of all (and fails the row).
        let e = dem / f - 1.0;
        if e.is_nan() || e.abs() > worst.0.abs() {
            worst = (e, u);
        }
    }
    let note = format!(
        "{label}: the largest deviation from the reference, {:+.2} %, is at u = {}.",
        100.0 * worst.0,
        worst.1
    );
    Ok((worst.0.abs(), note))
}

/// The two rows of a squeezing run: its largest deviation (2 %) and kinetic energy (1 %).
fn squeeze_rows(
    case: &'static str,
    label: &str,
    source: &str,
    worst: f64,
    kinetic: f64,
) -> [Row; 2] {
    [
        Row {
            case,
            quantity: format!("{label}: largest |F / F_ref - 1| past 10 %"),
            reference: 0.0,
            source: source.into(),
            result: worst,
            tolerance: 0.02,
        },
        Row {
            case,
            quantity: format!("{label}: largest kinetic / modal elastic energy past 10 %"),
            reference: 0.0,
            source: "quasi-static loading".into(),
            result: kinetic,
            tolerance: 0.01,
        },
    ]
}

/// 27 spheres squeezed by six walls (Appendix C): at each row of the table past 10 % of its
/// largest force, the total wall force at `u_w = 3 R eps` against `9 F` (Eq. 73).
fn packing(dir: &Path, variant: Variant) -> Result<Checked> {
    let radius = RADIUS;
    let (table, checked) = paper_points(dir, 3.0 * radius, 9.0)?;
    let path = dir.join(format!("out/packing-{}.run", variant.name()));
    let walls: Vec<String> = (0..6).map(|w| format!("wall{w}")).collect();
    let (curve, kinetic) = squeeze_curve(&path, &walls, checked[0].0)?;
    let label = "27 spheres, six walls";
    let (worst, note) = deviation(&path, &curve, &checked, label)?;
    let notes = vec![
        format!(
            "Appendix C: the walls' work equals the 27 spheres' energy, and by symmetry each sphere's amplitude is u_w / 3, so F_w(u_w) = 9 F_int(u_w / 3) (Eq. 73); F_int is the paper's table with eps in units of the radius R = {radius}. Checked at its {} rows past 10 % of its largest force.",
            checked.len()
        ),
        note,
    ];
    let rows = squeeze_rows("packing", label, "9 F_int(u_w / 3), Eq. 73", worst, kinetic).into();
    let plot = (
        format!("27 spheres squeezed by six walls ({} run)", variant.name()),
        ("wall displacement u_w".into(), "total wall force".into()),
        vec![
            Series {
                name: "9 F_int(u_w / 3), the paper's table (Eq. 73)".into(),
                points: table,
                markers: true,
            },
            Series {
                name: "DEM".into(),
                points: curve,
                markers: false,
            },
        ],
    );
    Ok(Checked { rows, notes, plot })
}
