//! The semantic campaign (`cargo xtask fuzz --semantic`): well-formed inputs drawn at random,
//! the kind a user's data or a typo gives, run through each tool's library, with the OUTPUTS
//! checked against what is known independently of the tool (docs/hardening.md, "Well-formed
//! but wrong").
//!
//! A case ends in one of three ways: refused (an error that names what it refuses: counted, its
//! message kept), accepted with every invariant holding, or a failure: accepted with an
//! invariant broken, a refusal with an empty message, or a panic. Per tool:
//!
//! - `bake`: analytic grains (sphere, box, cylinder, ellipsoid) of random size, spacing,
//!   density and node count, and meshes of two spheres, nested or overlapping. Accepted: the
//!   mass is density x the closed-form volume (for two spheres, the union's: the balls less the
//!   lens `pi (4R + d)(2R - d)^2 / 12` for equal radii, the outer ball when nested, within 6 %,
//!   the mesh's facetting), the level set is negative somewhere, the grid's solid volume is
//!   within 5 % of it, the nodes lie on the level set, and the bundle reads back equal.
//! - `modes`: snapshots of a box of hexahedra under a random uniform strain `u = eps A x` (or a
//!   rigid motion, which must be refused), written as a deck and CSV tables. Accepted: `K / M`
//!   is the closed form `int eps:C:eps dV / (rho int |A x|^2 dV)` (linear elements reproduce the
//!   field exactly), and `K`, `M` are positive.
//! - `run`: a few spheres dropped on a floor with a random law, step and velocities. Accepted:
//!   every history value finite, the energy ledger closed (residual within 2 % of the energy
//!   moved) unless the run warned that it is not, and a second run on the same directory
//!   refused.
//! - `jaeger`: random parameters and movement histories. Accepted: the normal force is Hertz's
//!   closed form `4/3 E* sqrt(R*) delta^(3/2)` and `|T| <= mu N`.
//! - `rundir`: dem-run's run directory contract: small scenes and their variants, three run
//!   directories with a user's files among the run's, and a random sequence of invocations
//!   (fresh, `--overwrite`, restarts, stages, interrupted runs) each predicted from the contract
//!   and checked on the outputs (the module `rundir`). Accepted: every invocation refused as
//!   predicted, or run with every invariant holding; its invocations' outcomes are tallied
//!   apart ([`Tally::outcomes`]).

use std::collections::BTreeMap;
use std::f64::consts::PI;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use anyhow::Result;
use levelset_bake::{
    BakeOptions, Extent, NodeChoice, OpenMesh, Primitive, bake_mesh, bake_primitive,
    grid_mass_properties,
};
use rand::{RngExt, SeedableRng};
use rand_xorshift::XorShiftRng;

mod rundir;
mod shared;

use shared::{Verdict, bake_ball, class, draw_law, log_uniform};

/// One tool's tally.
#[derive(Default)]
pub struct Tally {
    /// Cases tried.
    pub cases: usize,
    /// Cases refused or warned, by the class of their message (`shared::class`).
    pub refused: BTreeMap<String, usize>,
    /// Cases accepted with every invariant holding.
    pub accepted: usize,
    /// The failures: the case and what broke.
    pub failures: Vec<String>,
    /// What the steps inside the cases ended in, by class, for a tool whose case is a sequence
    /// of steps (`rundir`: each invocation of dem-run, `ran: <status>` or `refused: <message
    /// class>`), and `note: ...` counts of what some steps met on the way (not steps).
    pub outcomes: BTreeMap<String, usize>,
}

/// The tools, by name.
pub const TOOLS: [&str; 5] = ["bake", "modes", "run", "jaeger", "rundir"];

/// Runs `cases` cases of each of `tools` from `seed` in the scratch directory `dir`.
pub fn campaign(
    tools: &[&str],
    cases: usize,
    seed: u64,
    dir: &Path,
) -> Result<Vec<(String, Tally)>> {
    let mut out = Vec::new();
    for &tool in tools {
        let mut rng = XorShiftRng::seed_from_u64(seed ^ tool.len() as u64);
        let mut tally = Tally::default();
        for k in 0..cases {
            let scratch = dir.join(format!("{tool}-{k}"));
            std::fs::create_dir_all(&scratch)?;
            let (case, verdict) = one(tool, &mut rng, &scratch, &mut tally.outcomes);
            tally.cases += 1;
            match verdict {
                Verdict::Accepted => tally.accepted += 1,
                Verdict::Refused(m) if m.trim().is_empty() => tally
                    .failures
                    .push(format!("{case}: refused without a message")),
                Verdict::Refused(m) => {
                    let key = class(&m.replace(&scratch.display().to_string(), "<case>"));
                    *tally.refused.entry(key).or_default() += 1;
                }
                Verdict::Failed(what) => tally.failures.push(format!("{case}: {what}")),
            }
            std::fs::remove_dir_all(&scratch)?;
        }
        out.push((tool.to_string(), tally));
    }
    Ok(out)
}

/// `cargo xtask fuzz --semantic`: `cases` cases of each of `tools` (all if empty) from
/// `seed`, in a scratch directory; prints each tool's tally, its `messages` most frequent
/// refusals and every failure. Returns whether there was none.
pub fn run(tools: &[String], cases: usize, seed: u64, messages: usize) -> Result<bool> {
    let chosen: Vec<&str> = if tools.is_empty() {
        TOOLS.to_vec()
    } else {
        tools.iter().map(String::as_str).collect()
    };
    if let Some(t) = chosen.iter().find(|t| !TOOLS.contains(t)) {
        anyhow::bail!("no semantic target `{t}` (expected {})", TOOLS.join(", "));
    }
    let scratch = std::env::temp_dir().join(format!("xtask-semantic-{}", std::process::id()));
    let report = campaign(&chosen, cases, seed, &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    let mut clean = true;
    for (tool, t) in report? {
        let refused: usize = t.refused.values().sum();
        println!(
            "{tool}: {} cases, {} accepted with every invariant, {refused} refused, {} failures",
            t.cases,
            t.accepted,
            t.failures.len()
        );
        let mut common: Vec<(&String, &usize)> = t.refused.iter().collect();
        common.sort_by(|a, b| b.1.cmp(a.1));
        for (m, n) in common.into_iter().take(messages) {
            println!("  {n:>5} x {m}");
        }
        if !t.outcomes.is_empty() {
            let mut common: Vec<(&String, &usize)> = t.outcomes.iter().collect();
            common.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            // Every run's status and every note, and the most frequent refusals.
            let (notes, steps): (Vec<_>, Vec<_>) =
                common.into_iter().partition(|(m, _)| m.starts_with("note"));
            let (ran, refused): (Vec<_>, Vec<_>) =
                steps.into_iter().partition(|(m, _)| m.starts_with("ran"));
            let count = |v: &[(&String, &usize)]| v.iter().map(|(_, n)| **n).sum::<usize>();
            println!(
                "  {} steps inside the cases: {} ran, {} refused",
                count(&ran) + count(&refused),
                count(&ran),
                count(&refused)
            );
            for (m, n) in (ran.into_iter())
                .chain(notes)
                .chain(refused.into_iter().take(messages))
            {
                println!("  {n:>5} x {m}");
            }
        }
        for f in &t.failures {
            println!("  FAILED {f}");
            clean = false;
        }
    }
    Ok(clean)
}

/// One case of `tool`: its description and verdict (a panic is a failure).
fn one(
    tool: &str,
    rng: &mut XorShiftRng,
    dir: &Path,
    outcomes: &mut BTreeMap<String, usize>,
) -> (String, Verdict) {
    let mut case = String::new();
    let verdict = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match tool {
        "bake" => bake_case(rng, dir, &mut case),
        "modes" => modes_case(rng, dir, &mut case),
        "run" => run_case(rng, dir, &mut case),
        "rundir" => rundir::rundir_case(rng, dir, &mut case, outcomes),
        _ => jaeger_case(rng, &mut case),
    }))
    .unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Verdict::Failed(format!("panicked: {what}"))
    });
    (case, verdict)
}

/// Relative difference.
fn off(a: f64, b: f64) -> f64 {
    (a / b - 1.0).abs()
}

fn bake_case(rng: &mut XorShiftRng, dir: &Path, case: &mut String) -> Verdict {
    let options = BakeOptions {
        spacing: log_uniform(rng, 0.02, 0.5),
        pad_cells: rng.random_range(1..4),
        extent: if rng.random_bool(0.5) {
            Extent::Full
        } else {
            Extent::NarrowBand {
                cells: rng.random_range(1.0..4.0),
            }
        },
        nodes: NodeChoice::Count(rng.random_range(20..2000)),
        density: log_uniform(rng, 1e-3, 1e4),
        units: "semantic".into(),
        open: OpenMesh::Refuse,
        allow_unresolved: false,
    };
    let size = |rng: &mut XorShiftRng| log_uniform(rng, 0.1, 2.0);
    let (baked, volume, tolerance) = match rng.random_range(0..5) {
        0 => {
            let r = size(rng);
            (
                bake_primitive(&Primitive::Sphere { radius: r }, &options),
                4.0 / 3.0 * PI * r.powi(3),
                1e-12,
            )
        }
        1 => {
            let h = [size(rng), size(rng), size(rng)];
            (
                bake_primitive(&Primitive::Cuboid { half: h }, &options),
                8.0 * h[0] * h[1] * h[2],
                1e-12,
            )
        }
        2 => {
            let (r, h) = (size(rng), size(rng));
            let p = Primitive::Cylinder {
                radius: r,
                half_height: h,
            };
            (bake_primitive(&p, &options), 2.0 * PI * r * r * h, 1e-12)
        }
        3 => {
            let a = [size(rng), size(rng), size(rng)];
            let p = Primitive::Ellipsoid { semi_axes: a };
            (
                bake_primitive(&p, &options),
                4.0 / 3.0 * PI * a[0] * a[1] * a[2],
                1e-12,
            )
        }
        _ => {
            // Two spheres of radius R in one mesh: nested (the second of radius r inside) or
            // overlapping at distance d.
            let r_big = size(rng);
            let nested = rng.random_bool(0.5);
            let (r_small, d) = if nested {
                (r_big * rng.random_range(0.2..0.8), 0.0)
            } else {
                (r_big, r_big * rng.random_range(0.0..2.5))
            };
            let sphere = |r: f64, x: f64| {
                let mut m = Primitive::Sphere { radius: r }.surface_mesh(r / 12.0);
                m.transform(
                    &nalgebra::Matrix3::identity(),
                    &nalgebra::Vector3::new(x, 0.0, 0.0),
                );
                m
            };
            let (a, b) = (sphere(r_big, 0.0), sphere(r_small, d));
            let n = a.vertices.len() as u32;
            let mesh = levelset_bake::TriangleMesh {
                vertices: [a.vertices, b.vertices].concat(),
                triangles: (a.triangles.into_iter())
                    .chain(b.triangles.iter().map(|t| t.map(|v| v + n)))
                    .collect(),
            };
            let ball = |r: f64| 4.0 / 3.0 * PI * r.powi(3);
            let union = if nested {
                ball(r_big)
            } else if d >= 2.0 * r_big {
                2.0 * ball(r_big)
            } else {
                2.0 * ball(r_big) - PI * (4.0 * r_big + d) * (2.0 * r_big - d).powi(2) / 12.0
            };
            *case = format!("two spheres R {r_big:.3e}, r {r_small:.3e}, d {d:.3e}, ");
            (
                bake_mesh(&mesh, Path::new("two-spheres.stl"), &options),
                union,
                0.06,
            )
        }
    };
    case.push_str(&format!(
        "spacing {:.3e}, density {:.3e}, volume {volume:.4e}",
        options.spacing, options.density
    ));
    let baked = match baked {
        Ok(b) => b,
        Err(e) => return Verdict::Refused(e.to_string()),
    };
    let g = &baked.bundle;
    let p = &g.properties;
    if off(p.volume, volume) > tolerance {
        return Verdict::Failed(format!("volume {:e}, expected {volume:e}", p.volume));
    }
    if off(p.mass, options.density * volume) > tolerance.max(1e-12) {
        return Verdict::Failed(format!("mass {:e} is not density x volume", p.mass));
    }
    if !g.levelset.values().iter().any(|v| *v < 0.0) {
        return Verdict::Failed("the level set has no inside".into());
    }
    let grid_volume = grid_mass_properties(&g.levelset).volume;
    if off(grid_volume, volume) > 0.05 + tolerance {
        return Verdict::Failed(format!("the grid's solid has volume {grid_volume:e}"));
    }
    let h = g.levelset.spec().spacing;
    for r in g.nodes.rows() {
        let phi = g.levelset.value(&nalgebra::Point3::new(r[0], r[1], r[2]));
        if phi.abs() > h {
            return Verdict::Failed(format!(
                "node ({}, {}, {}) is {phi:e} off the surface",
                r[0], r[1], r[2]
            ));
        }
    }
    let path = dir.join("g.grain");
    if let Err(e) = g.write(&path) {
        return Verdict::Refused(e.to_string());
    }
    match grain::GrainBundle::read(&path) {
        Ok(back) if &back == g => Verdict::Accepted,
        Ok(_) => Verdict::Failed("the bundle read back differs".into()),
        Err(e) => Verdict::Failed(format!("the bundle written does not read back: {e}")),
    }
}

fn modes_case(rng: &mut XorShiftRng, dir: &Path, case: &mut String) -> Verdict {
    let l = log_uniform(rng, 0.1, 10.0);
    let (e, nu, rho) = (
        log_uniform(rng, 1.0, 1e11),
        rng.random_range(0.0..0.45),
        log_uniform(rng, 1e-9, 1e4),
    );
    let rigid = rng.random_bool(0.2);
    let mut a = [[0.0; 3]; 3];
    for row in &mut a {
        for x in row.iter_mut() {
            *x = rng.random_range(-1.0..1.0);
        }
    }
    if rigid {
        // A rotation rate (antisymmetric) and a translation: no strain at all.
        let upper = a;
        a = std::array::from_fn(|i| {
            std::array::from_fn(|j| match i.cmp(&j) {
                std::cmp::Ordering::Less => upper[i][j],
                std::cmp::Ordering::Equal => 0.0,
                std::cmp::Ordering::Greater => -upper[j][i],
            })
        });
    }
    let shift = [
        rng.random_range(-1.0..1.0),
        rng.random_range(-1.0..1.0),
        rng.random_range(-1.0..1.0),
    ];
    // Amplitudes of both signs, or a loading's growing ones (a path through the snapshots
    // needs those), and a mode that scales linearly or follows its path.
    let positive = rng.random_bool(0.5);
    let mut amplitudes: Vec<f64> = (0..rng.random_range(2..6))
        .map(|_| rng.random_range(if positive { 1e-5..1e-3 } else { -1e-3..1e-3 }))
        .collect();
    if positive {
        amplitudes.sort_by(f64::total_cmp);
    }
    let linear = rng.random_bool(0.5);
    *case = format!(
        "box {l:.3e}, E {e:.3e}, nu {nu:.3}, rho {rho:.3e}, rigid {rigid}, linear {linear}, {} snapshots",
        amplitudes.len()
    );
    let mesh = fem::box_mesh(grain::ElementType::Hex8, [0.0; 3], [l; 3], [2, 2, 2]);
    let mut deck = String::from("*NODE\n");
    for (n, x) in mesh.nodes.rows().into_iter().enumerate() {
        deck.push_str(&format!("{}, {:e}, {:e}, {:e}\n", n + 1, x[0], x[1], x[2]));
    }
    deck.push_str("*ELEMENT, TYPE=C3D8, ELSET=GRAIN\n");
    for (k, c) in mesh.blocks[0].connectivity.rows().into_iter().enumerate() {
        let ids: Vec<String> = c.iter().map(|n| (n + 1).to_string()).collect();
        deck.push_str(&format!("{}, {}\n", k + 1, ids.join(", ")));
    }
    deck.push_str(&format!(
        "*MATERIAL, NAME=M\n*ELASTIC\n{e:e}, {nu}\n*DENSITY\n{rho:e}\n"
    ));
    let deck_path = dir.join("box.inp");
    let mut snapshots = Vec::new();
    let write = || -> std::io::Result<()> {
        std::fs::write(&deck_path, &deck)?;
        for (s, eps) in amplitudes.iter().enumerate() {
            let mut table = String::from("node,u1,u2,u3\n");
            for (n, x) in mesh.nodes.rows().into_iter().enumerate() {
                let u: Vec<String> = (0..3)
                    .map(|i| {
                        let ax: f64 = (0..3).map(|j| a[i][j] * x[j]).sum();
                        let t = if rigid { shift[i] * l } else { 0.0 };
                        format!("{:e}", eps * (ax + t))
                    })
                    .collect();
                table.push_str(&format!("{},{}\n", n + 1, u.join(",")));
            }
            std::fs::write(dir.join(format!("s{s}.csv")), table)?;
        }
        Ok(())
    };
    if let Err(e) = write() {
        return Verdict::Failed(format!("writing the case: {e}"));
    }
    snapshots.extend((0..amplitudes.len()).map(|s| dir.join(format!("s{s}.csv"))));
    let b = match mode_extract::extract(&mode_extract::ExtractOptions {
        mesh: Some(deck_path),
        method: mode_extract::Method::Single,
        linear,
        ..mode_extract::ExtractOptions::new(snapshots)
    }) {
        Ok(b) => b,
        Err(e) => return Verdict::Refused(e.to_string()),
    };
    if rigid {
        return Verdict::Failed(format!(
            "a rigid motion became a mode with K = {:e}",
            b.stiffness[[0, 0]]
        ));
    }
    let (k, m) = (b.stiffness[[0, 0]], b.mass[[0, 0]]);
    if !(k > 0.0 && m > 0.0) {
        return Verdict::Failed(format!("K = {k:e}, M = {m:e}"));
    }
    // Closed form over the box [0, l]^3: int x_i x_j dV = l^5 / 3 (i = j), l^5 / 4 (i != j).
    let lambda = e * nu / ((1.0 + nu) * (1.0 - 2.0 * nu));
    let mu = e / (2.0 * (1.0 + nu));
    let strain = |i: usize, j: usize| 0.5 * (a[i][j] + a[j][i]);
    let trace = strain(0, 0) + strain(1, 1) + strain(2, 2);
    let contraction: f64 = (0..3)
        .flat_map(|i| (0..3).map(move |j| (i, j)))
        .map(|(i, j)| strain(i, j).powi(2))
        .sum();
    let stiffness = l.powi(3) * (lambda * trace * trace + 2.0 * mu * contraction);
    let mut kinetic = 0.0;
    for i in 0..3 {
        for j in 0..3 {
            let ata: f64 = (0..3).map(|r| a[r][i] * a[r][j]).sum();
            kinetic += ata * l.powi(5) * if i == j { 1.0 / 3.0 } else { 0.25 };
        }
    }
    let expected = stiffness / (rho * kinetic);
    if off(k / m, expected) > 1e-6 {
        return Verdict::Failed(format!("K/M = {:e}, closed form {expected:e}", k / m));
    }
    Verdict::Accepted
}

fn run_case(rng: &mut XorShiftRng, dir: &Path, case: &mut String) -> Verdict {
    if let Err(e) = bake_ball(&dir.join("ball.grain"), 0.5) {
        return Verdict::Failed(format!("baking the sphere: {e}"));
    }
    let law = draw_law(rng);
    let dt = if rng.random_bool(0.5) {
        "\"auto\"".to_string()
    } else {
        format!("{:e}", log_uniform(rng, 1e-6, 1e-2))
    };
    let mut scene = format!(
        "[run]\ndt = {dt}\nsteps = 300\ngravity = [0, 0, -9.81]\n[output]\nhistory_every = 10\n[contact]\n{law}\n"
    );
    let grains = rng.random_range(1..6);
    for _ in 0..grains {
        scene.push_str(&format!(
            "[[grains]]\nbundle = \"ball.grain\"\nposition = [{}, {}, {}]\nvelocity = [{}, {}, {}]\n",
            rng.random_range(-2.0..2.0),
            rng.random_range(-2.0..2.0),
            rng.random_range(-0.2..2.0),
            rng.random_range(-2.0..2.0),
            rng.random_range(-2.0..2.0),
            rng.random_range(-2.0..2.0)
        ));
    }
    scene.push_str("[[walls]]\nkind = \"plane\"\npoint = [0, 0, 0]\nnormal = [0, 0, 1]\n");
    *case = format!(
        "{grains} spheres, dt {dt}, {}",
        law.lines().next().unwrap_or("")
    );
    let path = dir.join("scene.toml");
    if let Err(e) = std::fs::write(&path, &scene) {
        return Verdict::Failed(format!("writing the scene: {e}"));
    }
    let out = dir.join("run");
    let options = dem_run::RunOptions {
        out: out.clone(),
        threads: Some(1),
        restart: None,
        progress: false,
        overwrite: false,
    };
    let summary = match dem_run::run(&path, &options, &AtomicBool::new(false)) {
        Ok(s) => s,
        Err(e) => return Verdict::Refused(e.to_string()),
    };
    // The history: finite, the ledger closed, no grain through the floor.
    let text = match std::fs::read_to_string(out.join("history.csv")) {
        Ok(t) => t,
        Err(e) => return Verdict::Failed(format!("no history: {e}")),
    };
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name);
    let (Some(total), Some(residual)) = (column("energy_total"), column("energy_residual")) else {
        return Verdict::Failed("history without energy columns".into());
    };
    let moved: Vec<usize> = header
        .iter()
        .enumerate()
        .filter(|(_, h)| {
            h.starts_with("work_") || h.starts_with("dissipated_") || **h == "energy_total"
        })
        .map(|(i, _)| i)
        .collect();
    let mut scale = 0.0f64;
    let mut residuals = Vec::new();
    for line in lines {
        let values: Vec<f64> = line
            .split(',')
            .map(|v| v.parse().unwrap_or(f64::NAN))
            .collect();
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Verdict::Failed(format!("history column {} is not finite", header[i]));
        }
        scale = scale
            .max(moved.iter().map(|&i| values[i].abs()).sum::<f64>())
            .max(values[total].abs());
        residuals.push(values[residual].abs());
    }
    // Silent, the ledger must be closed; a run that warned of its ledger (summary.json
    // `ledger_error`) counts as warned.
    let warned = summary.ledger_error > dem_run::run::LEDGER_WARNING;
    if let Some(r) = residuals
        .iter()
        .find(|r| **r > 0.02 * scale)
        .filter(|_| !warned)
    {
        return Verdict::Failed(format!(
            "energy residual {r:e} against {scale:e} moved, no warning"
        ));
    }
    // A second run on the directory is refused.
    match dem_run::run(&path, &options, &AtomicBool::new(false)) {
        Ok(_) => Verdict::Failed("a second run on the same directory was accepted".into()),
        Err(e) if !e.to_string().contains("--overwrite") => Verdict::Failed(format!(
            "the second run was refused for another reason: {e}"
        )),
        Err(_) if warned => Verdict::Refused(format!(
            "warned: the energy ledger off by {:.1} % (ledger_error)",
            100.0 * summary.ledger_error
        )),
        Err(_) => Verdict::Accepted,
    }
}

fn jaeger_case(rng: &mut XorShiftRng, case: &mut String) -> Verdict {
    let (r1, r2) = (log_uniform(rng, 1e-6, 1e3), log_uniform(rng, 1e-6, 1e3));
    let g = log_uniform(rng, 1e-3, 1e12);
    let nu = rng.random_range(-0.5..0.5);
    let mu = rng.random_range(0.0..1.5);
    *case = format!("r {r1:.3e}, {r2:.3e}, G {g:.3e}, nu {nu:.3}, mu {mu:.3}");
    let params = match jaeger::ContactParams::new(r1, r2, g, nu, mu) {
        Ok(p) => p,
        Err(e) => return Verdict::Refused(e.to_string()),
    };
    let mut contact = jaeger::JaegerContact::new(params);
    let scale = r1.min(r2) * 1e-3;
    let mut delta = 0.0f64;
    // E* = G / (1 - nu) for one material, R* = r1 r2 / (r1 + r2) (Johnson, eq. 4.23).
    let (e_star, r_star) = (g / (1.0 - nu), r1 * r2 / (r1 + r2));
    for step in 0..300 {
        delta = (delta + scale * rng.random_range(-0.3..0.5)).max(-scale);
        let du = [
            scale * rng.random_range(-0.5..0.5),
            scale * rng.random_range(-0.5..0.5),
        ];
        let f = contact.step(delta, du);
        let hertz = if delta > 0.0 {
            4.0 / 3.0 * e_star * r_star.sqrt() * delta.powf(1.5)
        } else {
            0.0
        };
        if (f.normal - hertz).abs() > 1e-12 * hertz {
            return Verdict::Failed(format!("step {step}: N = {:e}, Hertz {hertz:e}", f.normal));
        }
        let t = f.tangential[0].hypot(f.tangential[1]);
        if !(t.is_finite() && t <= mu * f.normal * (1.0 + 1e-12)) {
            return Verdict::Failed(format!(
                "step {step}: |T| = {t:e} > mu N = {:e}",
                mu * f.normal
            ));
        }
    }
    Verdict::Accepted
}

#[cfg(test)]
mod tests {
    /// The default suite's reduced campaign: a few cases of each tool from a fixed seed (25, and
    /// `RUNDIR` of `rundir`, whose case runs dem-run a dozen times). `cargo xtask fuzz
    /// --semantic` runs the long one.
    #[test]
    fn reduced_semantic_campaign_finds_nothing() {
        const RUNDIR: usize = 4;
        let scratch = tempfile::tempdir().unwrap();
        let mut report = Vec::new();
        for tool in super::TOOLS {
            let cases = if tool == "rundir" { RUNDIR } else { 25 };
            let r = super::campaign(&[tool], cases, 2026, scratch.path()).unwrap();
            assert_eq!(r[0].1.cases, cases, "{tool}");
            report.extend(r);
        }
        let failures: Vec<String> = report
            .iter()
            .flat_map(|(tool, t)| t.failures.iter().map(move |f| format!("{tool}: {f}")))
            .collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
