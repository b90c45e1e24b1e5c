//! `cargo xtask experiment [--full] [CASE...]`: granular experiments on the grains the pipeline
//! builds, run through their pipelines under `data/experiments/<case>/` like the validations
//! (the stages tagged with the variant and the case, and the untagged ones). Their rows check
//! what has a reference (the servo's targets, equilibrium, the energy balance); what the
//! experiment measures, which has none, is in the report's notes.
//!
//! Cases:
//! - `compression`: isotropic compression of 200 balls in a periodic cell to 1 and 10 MPa
//!   (E / p = 1000 and 100), the grains' bodies their free modes and residual flexibility or
//!   rigid, from the same rigid preparation; the quick variant runs packing 1, `--full` twelve
//!   to 1 MPa and the first three of them on to 10 MPa (docs/experiments.md section 6).

use std::path::Path;

use anyhow::{Context, Result};

use crate::measure::{run_time, scene_value, summary};
use crate::plot::{Series, read_columns};
use crate::suite::{Case, Checked, Row, Suite};

/// The experiments.
pub const SUITE: Suite = Suite {
    dir: "experiments",
    command: "cargo xtask experiment",
    cases: &[Case {
        name: "compression",
        dir: "compression",
        check: compression,
    }],
};

/// The compression's pressure levels (MPa), each a stage restarted from the one before.
const LEVELS: [&str; 2] = ["1", "10"];

/// The packings of `--full`; the first [`PACKINGS_TO_10_MPA`] of them go on to 10 MPa. The
/// effect at 1 MPa is a tenth of that at 10 MPa and one packing's answer moves with its path by
/// more than three packings differ (docs/experiments.md section 6), so 1 MPa takes more
/// packings; 10 MPa, where the deformable stage is most of the cost, the three that resolve it.
const PACKINGS: usize = 12;

/// The packings compressed on to 10 MPa.
const PACKINGS_TO_10_MPA: usize = 3;

/// The grain models, each a stage chain from the same preparation.
const MODELS: [&str; 2] = ["rigid", "deformable"];

/// One run's state at its end: the pressure, the solid fraction of the grains' reference
/// volumes `phi_0 = sum V_0 / V` (the cell's compaction), that of their current volumes, the
/// mechanical coordination.
struct End {
    pressure: f64,
    reference_fraction: f64,
    fraction: f64,
    coordination: f64,
}

/// The mean and the sample standard deviation (0 for one value).
fn mean_sd(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = if x.len() > 1 {
        x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var.sqrt())
}

/// The isotropic compression (module docs).
fn compression(dir: &Path, variant: &str) -> Result<Checked> {
    let seeds: Vec<usize> = (1..=if variant == "full" { PACKINGS } else { 1 }).collect();
    let columns = [
        "pressure",
        "volume",
        "solid_fraction",
        "mechanical_coordination",
    ];
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let mut series = Vec::new();
    // ends[level][model]: one End per seed.
    let mut ends: Vec<Vec<Vec<End>>> = (0..LEVELS.len())
        .map(|_| (0..MODELS.len()).map(|_| Vec::new()).collect())
        .collect();
    let mut costs = Vec::new();
    for &seed in &seeds {
        let prep = dir.join(format!("out/prep-{seed}.run"));
        let start = read_columns(&prep.join("history.csv"), &columns)?;
        // The grains' reference volume: the rigid preparation's solid fraction times the cell's
        // volume, at its first row.
        let solid = start[2][0] * start[1][0];
        let prep_curve: Vec<(f64, f64)> = (0..start[0].len())
            .map(|i| (solid / start[1][i], start[0][i]))
            .collect();
        let levels = if seed <= PACKINGS_TO_10_MPA {
            LEVELS.len()
        } else {
            1
        };
        for (m, model) in MODELS.iter().enumerate() {
            let mut curve = prep_curve.clone();
            for (l, level) in LEVELS.iter().enumerate().take(levels) {
                let run = dir.join(format!("out/{model}-{level}-{seed}.run"));
                let scene = dir.join(format!("{model}-{level}.toml"));
                let target = scene_value(&scene, &["cell", "servo", "pressure", "0"])?;
                let c = read_columns(&run.join("history.csv"), &columns)?;
                let last = c[0].len() - 1;
                curve.extend((0..=last).map(|i| (solid / c[1][i], c[0][i])));
                let s = summary(&run)?;
                let status = s["status"].as_str().unwrap_or("");
                rows.push(Row {
                    case: "compression",
                    quantity: format!(
                        "packing {seed}, {model}, {level} MPa: pressure at the end (MPa)"
                    ),
                    reference: target,
                    source: "the cell servo's target".into(),
                    result: c[0][last],
                    tolerance: 0.01,
                });
                rows.push(Row {
                    case: "compression",
                    quantity: format!(
                        "packing {seed}, {model}, {level} MPa: ended by its stop conditions (1: yes), unbalanced-force ratio within [stop]"
                    ),
                    reference: 1.0,
                    source: "equilibrium".into(),
                    result: f64::from(u8::from(status == "stopped")),
                    tolerance: 0.0,
                });
                rows.push(Row {
                    case: "compression",
                    quantity: format!(
                        "packing {seed}, {model}, {level} MPa: energy ledger residual / most energy supplied"
                    ),
                    reference: 0.0,
                    source: "energy balance".into(),
                    result: s["ledger_error"]
                        .as_f64()
                        .with_context(|| format!("{}: no ledger_error", run.display()))?,
                    tolerance: dem_run::run::LEDGER_WARNING,
                });
                ends[l][m].push(End {
                    pressure: c[0][last],
                    reference_fraction: solid / c[1][last],
                    fraction: c[2][last],
                    coordination: c[3][last],
                });
                costs.push(run_time(&run)?);
            }
            series.push(Series {
                name: format!("packing {seed}, {model}"),
                // From 0.01 MPa: the loose packing carries no pressure (log10 0 = -inf).
                points: (curve.into_iter())
                    .filter(|&(_, p)| p >= 0.01)
                    .map(|(phi, p)| (phi, p.log10()))
                    .collect(),
                markers: false,
            });
        }
    }
    let mut table = String::from(
        "| p (MPa) | E / p | packings | phi_0 rigid | phi_0 deformable | deformable - rigid, paired | its mean / standard error | phi deformable (current volumes) | Z_m rigid | Z_m deformable |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (l, level) in LEVELS.iter().enumerate() {
        let [rigid, deformable] = [&ends[l][0], &ends[l][1]];
        let stat = |e: &[End], f: fn(&End) -> f64| mean_sd(&e.iter().map(f).collect::<Vec<_>>());
        let pm = |(m, s): (f64, f64)| format!("{m:.4} ± {s:.4}");
        let paired: Vec<f64> = (rigid.iter().zip(deformable.iter()))
            .map(|(r, d)| d.reference_fraction - r.reference_fraction)
            .collect();
        let p = stat(rigid, |e| e.pressure).0;
        let (mean, sd) = mean_sd(&paired);
        // The paired mean in standard errors (Student's t with n - 1 degrees of freedom; none
        // for one packing).
        let t = if paired.len() > 1 {
            format!("{:.1}", mean / (sd / (paired.len() as f64).sqrt()))
        } else {
            "-".into()
        };
        table.push_str(&format!(
            "| {level} | {:.0} | {} | {} | {} | {} | {t} | {} | {:.2} | {:.2} |\n",
            1000.0 / p,
            paired.len(),
            pm(stat(rigid, |e| e.reference_fraction)),
            pm(stat(deformable, |e| e.reference_fraction)),
            pm((mean, sd)),
            pm(stat(deformable, |e| e.fraction)),
            stat(rigid, |e| e.coordination).0,
            stat(deformable, |e| e.coordination).0,
        ));
    }
    notes.push(format!(
        "200 balls of data/fem/ball (radius 10 mm at scales 0.8, 1 and 1.25, E = 1000 MPa, nu = 0.25), frictionless Hertz contacts over their surface nodes (hertz-patches), in a periodic cell; each packing prepared rigid to 0.1 MPa, then compressed by the cell's servo to 1 MPa (and the first {} on to 10 MPa) twice from that same state: rigid (pairwise Hertz) and deformable (20 free modes and the residual flexibility, which couple a grain's contacts through its body). Packings: {}. `phi_0` is the grains' reference volume over the cell's (the cell's compaction); mean ± sample standard deviation over the packings; the paired column is the difference per packing. There is no reference for these numbers: the rows check the servo, equilibrium and the energy balance.\n\n{table}",
        seeds.len().min(PACKINGS_TO_10_MPA),
        seeds.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")
    ));
    notes.push(costs.join(" "));
    Ok(Checked {
        rows,
        notes,
        plot: (
            "Isotropic compression: pressure against the cell's compaction".into(),
            (
                "phi_0 = sum V_0 / V (reference grain volumes over the cell's)".into(),
                "log10 of the pressure p (MPa)".into(),
            ),
            series,
        ),
    })
}
