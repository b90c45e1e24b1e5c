//! Measurements on runs shared by the suites' checks: slopes, squeezing curves, three-point
//! bending.

use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::plot::{Series, read_columns};
use crate::suite::{Checked, Row};

/// A run's summary.json.
pub fn summary(run: &Path) -> Result<serde_json::Value> {
    let path = run.join("summary.json");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}: invalid JSON", path.display()))
}

/// A number of a run's summary.json.
pub fn summary_number(run: &Path, key: &str) -> Result<f64> {
    summary(run)?
        .get(key)
        .and_then(serde_json::Value::as_f64)
        .with_context(|| format!("{}: no number `{key}`", run.join("summary.json").display()))
}

/// What a run cost, from its summary.json: steps, wall time, steps per second, threads (the
/// wall time of the run itself, whoever ran it).
pub fn run_time(run: &Path) -> Result<String> {
    let number = |key: &str| summary_number(run, key);
    Ok(format!(
        "The run ({}) took {:.0} steps in {:.1} s of wall time ({:.0} steps/s; threads: {}).",
        run.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        number("steps")?,
        number("wall_seconds")?,
        number("steps_per_second")?,
        number("threads")?
    ))
}

/// Least-squares slope of `y` against `x`.
pub fn slope(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let sxx: f64 = x.iter().map(|a| (a - mx) * (a - mx)).sum();
    sxy / sxx
}

/// A number from a scene file, by its table and key.
pub fn scene_number(scene: &Path, table: &str, key: &str) -> Result<f64> {
    scene_value(scene, &[table, key])
}

/// A number from a scene file at a path of keys, array indices as numbers
/// (`["cell", "servo", "pressure", "0"]`).
pub fn scene_value(scene: &Path, path: &[&str]) -> Result<f64> {
    let text = std::fs::read_to_string(scene)
        .with_context(|| format!("cannot read {}", scene.display()))?;
    let value: toml::Value =
        toml::from_str(&text).with_context(|| format!("{}: invalid TOML", scene.display()))?;
    path.iter()
        .try_fold(&value, |v, key| match key.parse::<usize>() {
            Ok(i) => v.get(i),
            Err(_) => v.get(*key),
        })
        .and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
        .with_context(|| format!("{}: no number at {}", scene.display(), path.join(".")))
}

/// Three-point bending of a one-mode beam (the paper's Eq. 52): `delta` is the indenter's
/// displacement and `F` the force on it (history.csv's `grain3_uz`, `grain3_fz`: the beam is
/// grain 0, the supports 1 and 2, the indenter 3), `eps` the beam's amplitude, `K_g` its modal
/// stiffness, `kn` the node springs' stiffness and `across` the beam's nodes across its width
/// under each cylinder. The slope of `F_hat = F / (K_g delta_0)` against
/// `delta_hat = delta / delta_0` is fitted over the loading branch with `delta_hat >= 0.2` (past
/// the start-up transient of the critically damped mode); as measured it is `1 / (1 + K_g c)`,
/// `c` the compliance of the node springs in series, and 1 once `c` is taken out.
pub fn three_point_bending(
    case: &'static str,
    run: &Path,
    (k_g, kn, across): (f64, f64, f64),
    title: String,
) -> Result<Checked> {
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
    // The compliance: `across` nodes at the indenter, and at each support (carrying F / 2):
    // c = 1 / (across kn) + 1 / (2 across kn). Measured: the slope of delta - eps
    // against F (the cylinders' trilinear level sets also leave a constant gap, h^2 / 8R at
    // each top, which shifts but does not tilt the curve).
    let derived = 1.0 / (across * kn) + 1.0 / (2.0 * across * kn);
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
    let mut notes = vec![format!(
        "The beam's modal stiffness K_g = {k_g} (the bundle), delta_0 = {delta_0}. Contact compliance: derived from the node springs (kn = {kn}; {across} nodes across the beam at the indenter and at each support, in series) c = 1/({across} kn) + 1/({} kn) = {derived:.3e}, K_g c = {:.4}; measured as the slope of delta - eps against F over the fitted branch: c = {measured:.3e}, K_g c = {:.4}. The slope after the compliance is that of F_hat against (delta - c F) / delta_0 with the derived c. The DEM curve lies above the reference by the modal damping force C delta'/(K_g delta_0) while the indenter moves (constant, so the slope keeps it out), and drops by it when the indenter stops.",
        2.0 * across,
        k_g * derived,
        k_g * measured
    )];
    notes.push(run_time(run)?);
    let curve = |x: &[f64], y: &[f64]| x.iter().copied().zip(y.iter().copied()).collect();
    let all_d: Vec<f64> = delta.iter().map(|d| d / delta_0).collect();
    let all_f: Vec<f64> = fz.iter().map(|f| f / (k_g * delta_0)).collect();
    let plot = (
        title,
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

/// Reference points `(u, F)`.
pub type Points = Vec<(f64, f64)>;

/// The value of the piecewise linear curve through `points` (increasing in x) at `x`; `None`
/// outside it (beyond its ends by more than the round-off of the time that moved the walls).
pub fn at(points: &[(f64, f64)], x: f64) -> Option<f64> {
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

/// A loader of a squeezing run: a body of the run's history (`wall<i>` or `grain<i>`) pushed
/// back along a direction.
#[derive(Debug, Clone)]
pub struct Loader {
    /// Its name in history.csv.
    pub name: String,
    /// The unit direction it moves along: its displacement and force are their components along
    /// it (read from the history's columns of the direction's nonzero components).
    pub direction: [f64; 3],
}

impl Loader {
    /// The loader `name` along axis `axis` (0, 1, 2 for x, y, z).
    pub fn along(name: &str, axis: usize) -> Loader {
        let mut direction = [0.0; 3];
        direction[axis] = 1.0;
        Loader {
            name: name.into(),
            direction,
        }
    }

    /// The history's columns `<name>_<quantity><axis>` of its direction's nonzero components,
    /// with those components.
    fn columns(&self, quantity: &str) -> Vec<(String, f64)> {
        (0..3)
            .filter(|&d| self.direction[d] != 0.0)
            .map(|d| {
                (
                    format!("{}_{quantity}{}", self.name, ["x", "y", "z"][d]),
                    self.direction[d],
                )
            })
            .collect()
    }
}

/// Loaders in pairs along `axes`, named `<prefix><first + i>` in the order (+, -) per axis:
/// `loaders("wall", 0, &[0, 1, 2])` are six walls +x, -x, +y, -y, +z, -z.
pub fn loaders(prefix: &str, first: usize, axes: &[usize]) -> Vec<Loader> {
    axes.iter()
        .flat_map(|&axis| [axis, axis])
        .enumerate()
        .map(|(i, axis)| Loader::along(&format!("{prefix}{}", first + i), axis))
        .collect()
}

/// A squeezing run's total force against the wall displacement on the loading branch, from
/// history.csv: `bodies` the loaders in pairs (+, -) along their directions, each pushed back
/// along its direction (the displacement is the first one's). Where the walls hold still (a
/// staircase's steps, the hold at the end), the point is the last sample at that displacement:
/// the state the hold settled to. Also the kinetic / elastic energy ratio at the same points.
fn squeeze_curve(run: &Path, bodies: &[Loader]) -> Result<(Points, Points)> {
    let mut names: Vec<String> = [
        "kinetic_translational",
        "kinetic_rotational",
        "kinetic_modal",
        "elastic_modal",
    ]
    .map(String::from)
    .into();
    // Each quantity's columns and their weights: the first loader's displacement, then each
    // loader's force, as components along its direction.
    let mut quantities: Vec<Vec<(usize, f64)>> = Vec::new();
    let sources = std::iter::once((&bodies[0], "u")).chain(bodies.iter().map(|b| (b, "f")));
    for (body, quantity) in sources {
        let mut terms = Vec::new();
        for (name, weight) in body.columns(quantity) {
            terms.push((names.len(), weight));
            names.push(name);
        }
        quantities.push(terms);
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let columns = read_columns(&run.join("history.csv"), &refs)?;
    let along =
        |q: usize, i: usize| -> f64 { quantities[q].iter().map(|&(c, w)| w * columns[c][i]).sum() };
    // Each point with its kinetic / elastic ratio.
    let mut points: Vec<(f64, f64, f64)> = Vec::new();
    let samples = columns[0].len();
    for (i, ui) in (0..samples).map(|i| (i, along(0, i).abs())) {
        // Each loader is pushed outwards: +x's force is +, -x's is -.
        let force: f64 = (0..bodies.len())
            .map(|w| if w % 2 == 0 { 1.0 } else { -1.0 } * along(1 + w, i))
            .sum();
        let kinetic = (columns[0][i] + columns[1][i] + columns[2][i]) / columns[3][i];
        match points.last_mut() {
            // The loading branch: while the walls advance, or hold.
            Some(last) if ui < last.0 => continue,
            Some(last) if ui == last.0 => *last = (ui, force, kinetic),
            _ => points.push((ui, force, kinetic)),
        }
    }
    Ok((
        points.iter().map(|p| (p.0, p.1)).collect(),
        points.iter().map(|p| (p.0, p.2)).collect(),
    ))
}

/// A squeezing run (`loaders` as for [`squeeze_curve`]) checked against reference points
/// `checked` (`(u, F)`): its rows (the largest `|F / F_ref - 1|`, within `tolerance`; the largest
/// kinetic / modal elastic energy at the checked points, within 1 %), a note saying
/// where the largest deviation is, and its curve for the plot.
pub fn squeeze(
    case: &'static str,
    run: &Path,
    loaders: &[Loader],
    checked: &[(f64, f64)],
    (label, source): (&str, &str),
    tolerance: f64,
) -> Result<([Row; 2], String, Series)> {
    let (curve, ratios) = squeeze_curve(run, loaders)?;
    let mut worst = (0.0f64, 0.0);
    let mut kinetic: f64 = 0.0;
    for &(u, f) in checked {
        let dem = at(&curve, u)
            .with_context(|| format!("{}: the walls did not reach u = {u}", run.display()))?;
        // A ratio that is not a number fails the row.
        let ratio = at(&ratios, u).unwrap_or(f64::NAN);
        kinetic = if ratio.is_nan() || kinetic.is_nan() {
            f64::NAN
        } else {
            kinetic.max(ratio)
        };
        // A NaN deviation is the worst of all (and fails the row).
        let e = dem / f - 1.0;
        if e.is_nan() || e.abs() > worst.0.abs() {
            worst = (e, u);
        }
    }
    let note = format!(
        "{label}: the largest deviation from the reference, {:+.2} %, is at u = {}. {}",
        100.0 * worst.0,
        worst.1,
        run_time(run)?
    );
    let rows = [
        Row {
            case,
            quantity: format!("{label}: largest |F / F_ref - 1| past 10 %"),
            reference: 0.0,
            source: source.into(),
            result: worst.0.abs(),
            tolerance,
        },
        Row {
            case,
            quantity: format!("{label}: largest kinetic / modal elastic energy past 10 %"),
            reference: 0.0,
            source: "quasi-static loading".into(),
            result: kinetic,
            tolerance: 0.01,
        },
    ];
    let series = Series {
        name: format!("DEM, {label}"),
        points: curve,
        markers: false,
    };
    Ok((rows, note, series))
}

/// The points `(u, factor F)` of a CalculiX table's columns `u` and `forces` (summed), and those
/// past 10 % of the largest force (all the increments to the last).
pub fn calculix_points(
    path: &Path,
    u: &str,
    forces: &[&str],
    factor: f64,
) -> Result<(Points, Points)> {
    let mut names = vec![u];
    names.extend(forces);
    let columns = read_columns(path, &names)?;
    let all: Points = std::iter::once((0.0, 0.0))
        .chain((0..columns[0].len()).map(|i| {
            let f: f64 = columns[1..].iter().map(|c| c[i]).sum();
            (columns[0][i], factor * f)
        }))
        .collect();
    let largest = all.iter().map(|p| p.1).fold(0.0, f64::max);
    let checked = all
        .iter()
        .copied()
        .filter(|p| p.1 >= 0.1 * largest)
        .collect();
    Ok((all, checked))
}
