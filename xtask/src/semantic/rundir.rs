//! The `rundir` tool: dem-run's run directory (crates/dem-run/src/rundir.rs) under random
//! sequences of invocations, with a user's files among the run's.
//!
//! A case is a small scene (a few spheres dropped on a floor, in a box of six walls, placed by a
//! `[[packings]]` in such a box, or in a periodic cell; a random law, step, cadences and `[stop]`)
//! with its variants (a stage, `run.stage = true`; the scene at another fixed step; scenes of
//! other experiments: another grain count, law, scale, bundle or cell periodicity), three run
//! directories holding a user's files at random (names a run never writes, names it does, a
//! `manifest.json` of their own, a `manifest.jsonl` that is not dem-run's, files `vtk` and
//! `checkpoint` where a run keeps its folders), and a random sequence of invocations: fresh
//! runs with and without `--overwrite`, restarts of a directory's own checkpoint (its latest or
//! an earlier one), restarts from another directory's checkpoint into a third, stages into a
//! directory of their own or into the one they continue, restarts by the scene of another
//! experiment, each interrupted at random (the stop flag raised before it starts), while the user
//! adds and moves files between them and a crash's trace cuts a manifest's last line short.
//!
//! Each invocation is predicted from the contract alone (what the directories hold, which of
//! their files are the user's; a manifest's cut last line ignored): refused, and why, or run.
//! Then, on the outputs:
//! 1. no file the run did not write is changed or removed, in any directory, and a run changes
//!    no directory but its `--out`;
//! 2. a run reproduces the uninterrupted run of its scene from its start (same thread count):
//!    every row of history.csv equals, bit for bit, that run's row at the step, every checkpoint
//!    its state at the step (all but `history_bytes` and the copy of the scene's `settings`:
//!    step, origin, identity and state), every node cloud its cloud; rows strictly increase with
//!    no row of the cadence missing; the run ends where and as that run does (an interrupted one
//!    at the step after its start), with the same error if it failed; each checkpoint's
//!    `settings` are those of the scene whose run wrote it;
//! 3. a run stopped by `[stop]` stopped at a step the conditions are due, with a checkpoint
//!    there, and the history row there meets them (recomputed: `unbalanced` only with contacts);
//!    the uninterrupted run stops at the first due step whose row meets them (every step's row);
//! 4. a packing starts without contact (`node_contacts` and `elastic_contact` 0 at step 0), and
//!    its `grains.toml` in place of the `[[packings]]` starts the same run (every row);
//! 5. summary.json agrees with history.csv (`history_last_step` its last row's step, the
//!    step the run ended at unless it failed; a failed run says `failed` and the error it
//!    returned); run.pvd and cell.pvd list exactly the node and cell clouds in vtk/, a restart
//!    in its own directory included; `manifest.jsonl` is whole JSON Lines (its head: schema 1,
//!    dem-run as writer, the scene that took the directory; then a `dir` or `file` line per
//!    claim, each once, no line cut short) and lists every file of the run, only files that
//!    exist, and only folders that exist;
//! 6. a refusal is the one predicted, names what it refuses (the file, the key, the option),
//!    and leaves every directory's files as they were.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use dem_run::rundir::MANIFEST;
use dem_run::{RunOptions, Status, Summary};
use rand::RngExt;
use rand_xorshift::XorShiftRng;

use super::shared::{Verdict, bake_ball, class, draw_law, log_uniform};

/// The run directories of a case.
const DIRS: [&str; 3] = ["a", "b", "c"];

/// The names a user's files take: names a run never writes (some like its own, and
/// `manifest.json`, the manifest's name before JSON Lines: now a user's file like any), names
/// it writes, its manifest's (`manifest.jsonl`: a user's is not dem-run's, and refused), and
/// files where it keeps its folders.
const USER_NAMES: [&str; 28] = [
    "notes.txt",
    "README.md",
    "history.csv.bak",
    "summary.json~",
    "vtk/snapshot_1.vtu",
    "vtk/nodes_final.vtk",
    "vtk/cell_notes.txt",
    "vtk/sub/nodes_0000000010.vtp",
    "checkpoint/README",
    "checkpoint/step_latest.txt",
    "checkpoint/step_0000000010.json.bak",
    "history.csv",
    "summary.json",
    "run.pvd",
    "cell.pvd",
    "grains.toml",
    "vtk/nodes_0000000010.vtp",
    "vtk/nodes_0000000020_1.vtp",
    "vtk/nodes_0000000030.pvtp",
    "vtk/cell_0000000040.vtp",
    "vtk/nodes_x.vtp",
    "checkpoint/step_0000000020.json",
    "checkpoint/step_5.json",
    "checkpoint/step_9999999999.json",
    "manifest.json",
    "manifest.jsonl",
    "vtk",
    "checkpoint",
];

/// Whether `rel` is a name a run writes (docs/formats.md, "The run directory": history.csv,
/// summary.json, run.pvd, cell.pvd, grains.toml, vtk/nodes_*, vtk/cell_*,
/// checkpoint/step_*.json).
fn is_run_name(rel: &str) -> bool {
    match rel.split_once('/') {
        None => [
            "history.csv",
            "summary.json",
            "run.pvd",
            "cell.pvd",
            "grains.toml",
        ]
        .contains(&rel),
        Some(("vtk", name)) => {
            !name.contains('/')
                && (name.starts_with("nodes_") || name.starts_with("cell_"))
                && (name.ends_with(".vtp") || name.ends_with(".pvtp"))
        }
        Some(("checkpoint", name)) => {
            !name.contains('/') && name.starts_with("step_") && name.ends_with(".json")
        }
        _ => false,
    }
}

/// The step of a checkpoint's name `checkpoint/step_<step>.json`.
fn checkpoint_step(rel: &str) -> Option<u64> {
    rel.strip_prefix("checkpoint/step_")?
        .strip_suffix(".json")?
        .parse()
        .ok()
}

/// Every file below `root` with its bytes, by `/`-separated relative name; the lock `.lock` left
/// out (a refused run may leave it).
fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut all = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(rel) = p.strip_prefix(root) {
                let rel = rel.to_string_lossy().replace('\\', "/");
                if rel != ".lock" {
                    all.insert(rel, std::fs::read(&p).unwrap_or_default());
                }
            }
        }
    }
    all
}

/// What a scene is made of.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// Spheres dropped on a floor.
    Drop,
    /// Spheres in a box of six walls.
    Box,
    /// A `[[packings]]` of spheres in a box of six walls.
    Packing,
    /// Spheres in a periodic cell.
    Cell,
}

/// `[stop]`.
#[derive(Clone, Debug)]
struct StopSpec {
    unbalanced: Option<f64>,
    pressure: Option<f64>,
    solid_fraction: Option<f64>,
    after: u64,
    every: u64,
}

impl StopSpec {
    fn due(&self, step: u64) -> bool {
        step >= self.after && step.is_multiple_of(self.every)
    }

    /// Whether a history row meets the conditions: an unbalanced-force ratio only with a
    /// contact (without one it is undefined, and written 0).
    fn met(&self, h: &History, line: &str) -> Result<bool, String> {
        let v = |name: &str| h.value(line, name);
        let mut met = true;
        if let Some(limit) = self.unbalanced {
            met &= v("node_contacts")? > 0.0 && v("unbalanced")? <= limit;
        }
        if let Some(target) = self.pressure {
            met &= v("pressure")? >= target;
        }
        if let Some(target) = self.solid_fraction {
            met &= v("solid_fraction")? >= target;
        }
        Ok(met)
    }
}

/// A scene, as drawn.
#[derive(Clone, Debug)]
struct Spec {
    kind: Kind,
    law: String,
    /// A fixed step (`None`: automatic).
    dt: Option<f64>,
    steps: u64,
    stage: bool,
    gravity: f64,
    /// history_every, vtk_every, checkpoint_every.
    every: [u64; 3],
    /// Each grain's position and velocity.
    grains: Vec<[f64; 6]>,
    /// The box's half width and height, or the cell's edge.
    size: [f64; 2],
    /// The packing's seed and count.
    packing: Option<(u64, usize)>,
    stop: Option<StopSpec>,
    bundle: &'static str,
    scale: f64,
    periodic: [bool; 3],
    /// The `[[grains]]` of a packing's grains.toml, in place of the packing.
    placed: Option<String>,
}

/// Positions at random in `lo..hi` (per axis), at least `gap` from each other (across the
/// faces of a periodic cell of edge `cell`, if given); fewer if they do not fit.
fn positions(
    rng: &mut XorShiftRng,
    n: usize,
    lo: [f64; 3],
    hi: [f64; 3],
    gap: f64,
    cell: Option<f64>,
) -> Vec<[f64; 3]> {
    let mut out: Vec<[f64; 3]> = Vec::new();
    for _ in 0..50 * n {
        if out.len() == n {
            break;
        }
        let x: [f64; 3] = std::array::from_fn(|k| rng.random_range(lo[k]..hi[k]));
        let far = out.iter().all(|y| {
            let d: f64 = (0..3)
                .map(|k| {
                    let mut d = (x[k] - y[k]).abs();
                    if let Some(l) = cell {
                        d = d.min(l - d);
                    }
                    d * d
                })
                .sum();
            d.sqrt() >= gap
        });
        if far {
            out.push(x);
        }
    }
    out
}

impl Spec {
    fn draw(rng: &mut XorShiftRng) -> Spec {
        let kind = [Kind::Drop, Kind::Box, Kind::Packing, Kind::Cell][rng.random_range(0..4)];
        let law = draw_law(rng);
        let dt = rng.random_bool(0.75).then(|| log_uniform(rng, 2e-4, 2e-3));
        let steps = rng.random_range(20..=90);
        let every = [
            rng.random_range(1..=12),
            if rng.random_bool(0.5) {
                0
            } else {
                rng.random_range(4..=30)
            },
            if rng.random_bool(0.2) {
                0
            } else {
                rng.random_range(4..=30)
            },
        ];
        let n = rng.random_range(1..=4);
        let v = |rng: &mut XorShiftRng, s: f64| rng.random_range(-s..s);
        let (grains, size, gravity, packing) = match kind {
            Kind::Drop => {
                // Resting on the floor or just above it, moving down.
                let p = positions(rng, n, [-2.0, -2.0, 0.0], [2.0, 2.0, 0.01], 1.01, None);
                let grains = p
                    .iter()
                    .map(|x| {
                        [
                            x[0],
                            x[1],
                            0.5 + x[2] - 0.002,
                            v(rng, 0.5),
                            v(rng, 0.5),
                            -rng.random_range(0.0..1.5),
                        ]
                    })
                    .collect();
                (grains, [0.0, 0.0], -9.81, None)
            }
            Kind::Box | Kind::Packing => {
                // A packing places a grain's bounding sphere (radius 0.6) inside its region.
                let (half, height) = match kind {
                    Kind::Box => (rng.random_range(1.0..1.5), rng.random_range(1.5..2.5)),
                    _ => (rng.random_range(1.6..2.2), rng.random_range(2.2..2.8)),
                };
                let packing = (kind == Kind::Packing).then(|| (rng.random_range(0..1000), n));
                let mut grains = Vec::new();
                if packing.is_none() {
                    let r = 0.5 + 1e-3;
                    let p = positions(
                        rng,
                        n,
                        [-half + r, -half + r, r],
                        [half - r, half - r, height - r],
                        1.01,
                        None,
                    );
                    for x in p {
                        grains.push([x[0], x[1], x[2], v(rng, 1.0), v(rng, 1.0), v(rng, 1.0)]);
                    }
                }
                (grains, [half, height], -9.81, packing)
            }
            Kind::Cell => {
                // At least twice a grain's bounding diameter (1.2, and 1.32 at the scale 1.1
                // of another experiment).
                let l = rng.random_range(2.7..3.3);
                let p = positions(rng, n.max(2), [0.0; 3], [l; 3], 1.01, Some(l));
                let grains = p
                    .iter()
                    .map(|x| [x[0], x[1], x[2], v(rng, 2.0), v(rng, 2.0), v(rng, 2.0)])
                    .collect();
                (grains, [l, l], 0.0, None)
            }
        };
        let stop = rng
            .random_bool(0.5)
            .then(|| StopSpec::draw(rng, kind, steps));
        Spec {
            kind,
            law,
            dt,
            steps,
            stage: false,
            gravity,
            every,
            grains,
            size,
            packing,
            stop,
            bundle: "ball.grain",
            scale: 1.0,
            periodic: [true; 3],
            placed: None,
        }
    }

    /// The scene's text; `reference`: the same with a row of history.csv and a checkpoint at
    /// every step, and `[stop] after` raised to `after` if given.
    fn toml(&self, reference: bool, after: Option<u64>) -> String {
        let mut s = String::new();
        let dt = self.dt.map_or("\"auto\"".into(), |dt| format!("{dt:e}"));
        let [h, v, c] = match reference {
            true => [1, self.every[1], 1],
            false => self.every,
        };
        s += &format!(
            "[run]\ndt = {dt}\nsteps = {}\nstage = {}\ngravity = [0, 0, {}]\n",
            self.steps, self.stage, self.gravity
        );
        s += &format!(
            "[output]\nhistory_every = {h}\nvtk_every = {v}\ncheckpoint_every = {c}\n[contact]\n{}\n",
            self.law
        );
        for g in &self.grains {
            s += &format!(
                "[[grains]]\nbundle = \"{}\"\nscale = {}\nposition = [{}, {}, {}]\nvelocity = [{}, {}, {}]\n",
                self.bundle, self.scale, g[0], g[1], g[2], g[3], g[4], g[5]
            );
        }
        let [half, height] = self.size;
        let plane = |p: [f64; 3], n: [f64; 3]| {
            format!(
                "[[walls]]\nkind = \"plane\"\npoint = [{}, {}, {}]\nnormal = [{}, {}, {}]\n",
                p[0], p[1], p[2], n[0], n[1], n[2]
            )
        };
        match self.kind {
            Kind::Drop => s += &plane([0.0; 3], [0.0, 0.0, 1.0]),
            Kind::Box | Kind::Packing => {
                s += &plane([0.0; 3], [0.0, 0.0, 1.0]);
                s += &plane([0.0, 0.0, height], [0.0, 0.0, -1.0]);
                s += &plane([-half, 0.0, 0.0], [1.0, 0.0, 0.0]);
                s += &plane([half, 0.0, 0.0], [-1.0, 0.0, 0.0]);
                s += &plane([0.0, -half, 0.0], [0.0, 1.0, 0.0]);
                s += &plane([0.0, half, 0.0], [0.0, -1.0, 0.0]);
            }
            Kind::Cell => {
                s += &format!(
                    "[cell]\nsize = [{half}, {half}, {half}]\nperiodic = [{}, {}, {}]\n",
                    self.periodic[0], self.periodic[1], self.periodic[2]
                );
            }
        }
        if let Some(stop) = &self.stop {
            s += "[stop]\n";
            for (k, v) in [
                ("unbalanced", stop.unbalanced),
                ("pressure", stop.pressure),
                ("solid_fraction", stop.solid_fraction),
            ] {
                if let Some(v) = v {
                    s += &format!("{k} = {v:e}\n");
                }
            }
            s += &format!(
                "after = {}\nevery = {}\n",
                after.unwrap_or(0).max(stop.after),
                stop.every
            );
        }
        match (&self.placed, self.packing) {
            (Some(placed), _) => {
                s += "\n";
                s += placed;
            }
            (None, Some((seed, count))) => {
                let m = 0.02;
                s += &format!(
                    "[[packings]]\nseed = {seed}\ncount = {count}\nregion = {{ kind = \"box\", min = [{}, {}, {m}], max = [{}, {}, {}] }}\nbundles = [{{ bundle = \"{}\" }}]\nsizes = [[{}, 1]]\nvelocity = [0, 0, -1]\n",
                    -half + m,
                    -half + m,
                    half - m,
                    half - m,
                    height - m,
                    self.bundle,
                    self.scale
                );
            }
            (None, None) => {}
        }
        s
    }

    fn describe(&self) -> String {
        format!(
            "{:?} of {} grains, {}, dt {}, {} steps, every {:?}{}",
            self.kind,
            self.packing.map_or(self.grains.len(), |p| p.1),
            self.law.lines().next().unwrap_or(""),
            self.dt.map_or("auto".into(), |dt| format!("{dt:.3e}")),
            self.steps,
            self.every,
            match &self.stop {
                Some(s) => format!(", {s:?}"),
                None => String::new(),
            }
        )
    }
}

impl StopSpec {
    fn draw(rng: &mut XorShiftRng, kind: Kind, steps: u64) -> StopSpec {
        // Conditions on the sample's volume need one: a box or a cell.
        let volume = kind != Kind::Drop;
        let mut s = StopSpec {
            unbalanced: None,
            pressure: None,
            solid_fraction: None,
            after: rng.random_range(0..=steps / 2),
            every: rng.random_range(1..=10),
        };
        loop {
            if rng.random_bool(0.6) {
                s.unbalanced = Some(log_uniform(rng, 1e-2, 10.0));
            }
            if volume && rng.random_bool(0.35) {
                s.pressure = Some(log_uniform(rng, 1.0, 1e4));
            }
            if volume && rng.random_bool(0.35) {
                s.solid_fraction = Some(rng.random_range(0.01..0.3));
            }
            if s.unbalanced.is_some() || s.pressure.is_some() || s.solid_fraction.is_some() {
                return s;
            }
        }
    }
}

/// What a scene is to the case.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Role {
    /// The experiment.
    Base,
    /// Its next stage (`run.stage = true`).
    Stage,
    /// The experiment at another fixed step.
    Hot,
    /// Another experiment: the key a restart of the base's checkpoint is refused for.
    Other(&'static str),
}

struct Scene {
    name: String,
    spec: Spec,
    path: PathBuf,
    role: Role,
}

/// A checkpoint file, read.
#[derive(Clone)]
struct Ckpt {
    step: u64,
    /// The step its run's steps count from.
    origin: u64,
    text: String,
    /// What two runs of one state write alike ([`comparable`]).
    same: String,
}

impl Ckpt {
    fn read(path: &Path) -> Result<Ckpt, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        let v: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| format!("{} is no checkpoint: {e}", path.display()))?;
        let (Some(step), Some(origin)) = (v["state"]["step"].as_u64(), v["origin"][0].as_u64())
        else {
            return Err(format!("{} has no state.step or origin", path.display()));
        };
        Ok(Ckpt {
            step,
            origin,
            same: comparable(&text)?,
            text,
        })
    }
}

/// A checkpoint's text as two runs of one state write it alike: without `history_bytes` (the
/// length of the history beside it: their histories have other cadences) and `settings` (the
/// copy of the scene's tables: the reference's scene has other cadences and `[stop] after`, a
/// hot scene another step); its state, step, origin and identity as written (JSON numbers
/// read back exactly).
fn comparable(text: &str) -> Result<String, String> {
    let mut v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("no checkpoint: {e}"))?;
    let o = v
        .as_object_mut()
        .ok_or("a checkpoint that is no JSON object")?;
    for field in ["history_bytes", "settings"] {
        o.remove(field);
    }
    Ok(v.to_string())
}

/// history.csv: its header and its rows by step, in file order.
struct History {
    header: String,
    rows: Vec<(u64, String)>,
}

impl History {
    fn read(path: &Path) -> Result<History, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(format!("reading {}: {e}", path.display())),
        };
        let mut lines = text.lines();
        let header = lines.next().unwrap_or("").to_string();
        let mut rows = Vec::new();
        for l in lines {
            let step = (l.split(',').next())
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| format!("{}: a row without its step: {l}", path.display()))?;
            rows.push((step, l.to_string()));
        }
        if !text.is_empty() && !text.ends_with('\n') {
            return Err(format!("{} ends in a partial row", path.display()));
        }
        Ok(History { header, rows })
    }

    fn value(&self, line: &str, name: &str) -> Result<f64, String> {
        let i = (self.header.split(',').position(|h| h == name))
            .ok_or_else(|| format!("history.csv has no column {name}"))?;
        (line.split(',').nth(i))
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("history.csv row without a number for {name}: {line}"))
    }

    fn last_step(&self) -> Option<u64> {
        self.rows.last().map(|r| r.0)
    }
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq)]
enum Ended {
    Finished,
    Stopped,
    Interrupted,
    Failed(String),
}

/// The uninterrupted run of a scene from a start (none: step 0), with a row and a checkpoint at
/// every step.
struct Reference {
    scene: usize,
    start: Option<Ckpt>,
    /// `[stop] after` raised past a stop the run continued from.
    after: Option<u64>,
    header: String,
    rows: BTreeMap<u64, String>,
    checkpoints: BTreeMap<u64, String>,
    /// The node and cell clouds, by file name.
    clouds: BTreeMap<String, Vec<u8>>,
    end: u64,
    ended: Ended,
}

/// A run directory of the case, as the contract sees it.
struct Dir {
    path: PathBuf,
    /// The user's files and their bytes (relative names).
    user: BTreeMap<String, Vec<u8>>,
    /// The run it holds: its manifest's scene and its timeline.
    held: Option<Held>,
    /// Its manifest's last line is cut short ([`World::cut`]) and no run has taken it since.
    cut: bool,
}

/// A run in a directory: the scene that took it, and the uninterrupted runs its history
/// follows: `(start, reference)`, each reference covering the steps after its start (none:
/// from step 0) up to the next one's.
struct Held {
    scene: usize,
    segments: Vec<(Option<u64>, usize)>,
}

impl Held {
    /// The reference covering `step`.
    fn covering(&self, step: u64) -> usize {
        (self.segments.iter().rev())
            .find(|(s, _)| s.is_none_or(|s| s < step))
            .map_or(self.segments[0].1, |(_, r)| *r)
    }
}

impl Dir {
    /// The user's files at the names a run writes (which no manifest lists).
    fn strangers(&self) -> Vec<&str> {
        (self.user.keys())
            .filter(|r| is_run_name(r))
            .map(String::as_str)
            .collect()
    }

    /// The checkpoints the directory's run wrote, by step.
    fn checkpoints(&self) -> BTreeMap<u64, String> {
        (files(&self.path).into_keys())
            .filter(|r| !self.user.contains_key(r))
            .filter_map(|r| Some((checkpoint_step(&r)?, r)))
            .collect()
    }

    /// A user's file `vtk` or `checkpoint`, where a run keeps that folder.
    fn blocked(&self) -> Option<&str> {
        ["vtk", "checkpoint"]
            .into_iter()
            .find(|f| self.user.contains_key(*f))
    }
}

/// Where a restart takes its checkpoint.
#[derive(Clone, Debug)]
enum Source {
    /// `--restart DIR`: the latest checkpoint its manifest lists.
    Dir(usize),
    /// `--restart FILE`.
    File(usize, String),
}

struct Invocation {
    /// What it is, for the tally: a fresh run, a restart, a stage...
    kind: &'static str,
    scene: usize,
    out: usize,
    restart: Option<Source>,
    overwrite: bool,
    interrupt: bool,
    /// How the scene, `--out` and `--restart` paths are spelled ([`World::spell`]).
    spelling: [u8; 3],
}

/// The ways a path is spelled: as it is, with `/.`, through a sibling and `..`, through a
/// symbolic link.
const SPELLINGS: [&str; 4] = ["", "/.", "x/../", "link:"];

/// A case: its directory, scenes, run directories and uninterrupted runs.
struct World {
    dir: PathBuf,
    threads: usize,
    scenes: Vec<Scene>,
    dirs: Vec<Dir>,
    refs: Vec<Reference>,
    memo: BTreeMap<(usize, Option<String>, Option<u64>), usize>,
    /// What the invocations met on the way, for the tally (`note: ...`).
    notes: Vec<&'static str>,
}

/// The options of a run.
fn options(out: &Path, threads: usize, restart: Option<PathBuf>, overwrite: bool) -> RunOptions {
    RunOptions {
        out: out.to_path_buf(),
        threads: Some(threads),
        restart,
        progress: false,
        overwrite,
    }
}

fn read_summary(out: &Path) -> Result<Summary, String> {
    let path = out.join("summary.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("no {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// A run's manifest, read as the contract describes it (docs/formats.md, "The run
/// directory"): JSON Lines, a head `{"schema": 1, "writer": ..., "scene": ...}`, then a line
/// `{"dir": ...}` or `{"file": ...}` per claim.
struct Manifest {
    scene: PathBuf,
    dirs: BTreeSet<String>,
    files: BTreeSet<String>,
}

impl Manifest {
    /// The manifest of a run that did not crash: every line whole (a last line without its
    /// newline, which a crash leaves and a reader ignores, is a failure here: the run that
    /// took the directory rewrites the manifest), each file listed once.
    fn parse(text: &str) -> Result<Manifest, String> {
        if !text.ends_with('\n') {
            return Err(format!(
                "{MANIFEST} ends in a line without its newline, after a run that did not crash: {:?}",
                text.lines().last().unwrap_or("")
            ));
        }
        let mut lines = text.lines().map(|l| {
            serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(l)
                .map_err(|e| format!("{MANIFEST}: a line that is no JSON object ({e}): {l}"))
        });
        let head = lines.next().ok_or(format!("{MANIFEST} is empty"))??;
        let keys: Vec<&str> = head.keys().map(String::as_str).collect();
        let writer = head.get("writer").and_then(|w| w.as_str()).unwrap_or("");
        let scene = head.get("scene").and_then(|s| s.as_str());
        let (true, Some(1), true, Some(scene)) = (
            keys == ["scene", "schema", "writer"],
            head.get("schema").and_then(|s| s.as_u64()),
            writer.starts_with("dem-run "),
            scene,
        ) else {
            return Err(format!(
                "{MANIFEST}'s head is not {{\"schema\": 1, \"writer\": \"dem-run ...\", \"scene\": ...}}: {head:?}"
            ));
        };
        let mut m = Manifest {
            scene: PathBuf::from(scene),
            dirs: BTreeSet::new(),
            files: BTreeSet::new(),
        };
        for line in lines {
            let line = line?;
            let (set, name) = match (line.len(), line.get("dir"), line.get("file")) {
                (1, Some(serde_json::Value::String(d)), None) => (&mut m.dirs, d),
                (1, None, Some(serde_json::Value::String(f))) => (&mut m.files, f),
                _ => return Err(format!("{MANIFEST}: a line that is no claim: {line:?}")),
            };
            if !set.insert(name.clone()) {
                return Err(format!("{MANIFEST} lists {name} twice"));
            }
        }
        Ok(m)
    }
}

/// The `file="..."` entries of a .pvd.
fn pvd_files(text: &str) -> Vec<String> {
    text.split("file=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .map(str::to_string)
        .collect()
}

impl World {
    /// The uninterrupted run of `scene` from `start` (none: a fresh run), `[stop] after`
    /// raised to `after`: run once, kept, and checked on its own (its stop, its packing, its
    /// summary).
    fn reference(
        &mut self,
        scene: usize,
        start: Option<&Ckpt>,
        after: Option<u64>,
    ) -> Result<usize, String> {
        let key = (scene, start.map(|c| c.same.clone()), after);
        if let Some(&k) = self.memo.get(&key) {
            return Ok(k);
        }
        let k = self.refs.len();
        let spec = &self.scenes[scene].spec;
        let path = self.dir.join(format!("ref-{k}.toml"));
        let out = self.dir.join(format!("ref-{k}"));
        let io = |e: std::io::Error| format!("writing the reference: {e}");
        std::fs::write(&path, spec.toml(true, after)).map_err(io)?;
        let restart = match start {
            Some(c) => {
                let p = self.dir.join(format!("ref-{k}-start.json"));
                std::fs::write(&p, &c.text).map_err(io)?;
                Some(p)
            }
            None => None,
        };
        let result = dem_run::run(
            &path,
            &options(&out, self.threads, restart, false),
            &AtomicBool::new(false),
        );
        let what = || {
            format!(
                "the uninterrupted run of {} from {}",
                self.scenes[scene].name,
                start.map_or("step 0".into(), |c| format!(
                    "the checkpoint at step {}",
                    c.step
                ))
            )
        };
        let summary = read_summary(&out).map_err(|e| match &result {
            Err(r) => format!("{} was refused: {r}", what()),
            Ok(_) => format!("{}: {e}", what()),
        })?;
        let ended = match (&result, summary.status) {
            (Ok(_), Status::Finished) => Ended::Finished,
            (Ok(_), Status::Stopped) => Ended::Stopped,
            (Err(e), Status::Failed) => Ended::Failed(e.to_string()),
            (r, s) => {
                return Err(format!(
                    "{}: summary.json says {s:?}, the run returned {:?}",
                    what(),
                    r.as_ref().map(|s| s.status)
                ));
            }
        };
        let h = History::read(&out.join("history.csv"))?;
        if summary.history_last_step != h.last_step() {
            return Err(format!(
                "{}: summary.json's history_last_step {:?}, history.csv's last row {:?}",
                what(),
                summary.history_last_step,
                h.last_step()
            ));
        }
        let mut refs = Reference {
            scene,
            start: start.cloned(),
            after,
            header: h.header.clone(),
            rows: h.rows.iter().cloned().collect(),
            checkpoints: BTreeMap::new(),
            clouds: BTreeMap::new(),
            end: summary.steps,
            ended,
        };
        // A row at every step from the start on (the last one's, if it failed, may be missing).
        let first = start.map_or(0, |c| c.step + 1);
        let expected = (first..=summary.steps).count();
        if !(refs.rows.len() == expected || matches!(refs.ended, Ended::Failed(_)))
            || refs.rows.len() != h.rows.len()
        {
            return Err(format!(
                "{}: {} rows in history.csv at history_every = 1 for steps {first}..={}",
                what(),
                h.rows.len(),
                summary.steps
            ));
        }
        packing_starts_apart(spec, &h)?;
        if let Some(stop) = &spec.stop {
            // The first due step whose row meets the conditions is where the run stopped.
            let stop = StopSpec {
                after: after.unwrap_or(0).max(stop.after),
                ..stop.clone()
            };
            let mut met = None;
            for (s, line) in &h.rows {
                if *s >= first.max(1) && stop.due(*s) && stop.met(&h, line)? {
                    met = Some(*s);
                    break;
                }
            }
            let stopped = (refs.ended == Ended::Stopped).then_some(refs.end);
            if met != stopped && !(met.is_none() && matches!(refs.ended, Ended::Failed(_))) {
                return Err(format!(
                    "{}: [stop] {stop:?}: stopped at {stopped:?}, the rows first meet the conditions at a due step at {met:?}",
                    what()
                ));
            }
        }
        for (rel, bytes) in files(&out) {
            if let Some(s) = checkpoint_step(&rel) {
                let text = String::from_utf8_lossy(&bytes);
                let same = comparable(&text).map_err(|e| format!("{}: {rel}: {e}", what()))?;
                refs.checkpoints.insert(s, same);
            } else if let Some(name) = rel.strip_prefix("vtk/") {
                refs.clouds.insert(name.to_string(), bytes);
            }
        }
        self.refs.push(refs);
        self.memo.insert(key, k);
        Ok(k)
    }
}

/// (4): a packing's grains touch nothing at step 0.
fn packing_starts_apart(spec: &Spec, h: &History) -> Result<(), String> {
    if spec.packing.is_none() || spec.placed.is_some() {
        return Ok(());
    }
    if let Some((0, line)) = h.rows.first() {
        let (n, e) = (
            h.value(line, "node_contacts")?,
            h.value(line, "elastic_contact")?,
        );
        if n != 0.0 || e != 0.0 {
            return Err(format!(
                "the packing starts in contact: node_contacts {n}, elastic_contact {e:e} at step 0"
            ));
        }
    }
    Ok(())
}

/// The prediction of an invocation: refused (why, and the words its message must hold), or run.
struct Prediction {
    refused: Option<(&'static str, Vec<String>)>,
    /// The checkpoint a restart takes, and whether it is the out directory's own.
    checkpoint: Option<(Ckpt, bool)>,
    /// The reference the source directory's history follows at the checkpoint (a run file).
    from: Option<usize>,
}

impl World {
    /// What the contract says of `inv`, from what the directories hold.
    /// `given`: the `--restart` path as given (a refusal names it so).
    fn predict(&self, inv: &Invocation, given: Option<&Path>) -> Result<Prediction, String> {
        let out = &self.dirs[inv.out];
        let scene = &self.scenes[inv.scene];
        let refuse = |why: &'static str, words: Vec<String>| {
            Ok(Prediction {
                refused: Some((why, words)),
                checkpoint: None,
                from: None,
            })
        };
        // A user's file named as the manifest, read where a run reads its directory's manifest.
        let user_manifest = |d: &Dir| d.user.contains_key(MANIFEST);
        let not_manifest = || {
            refuse(
                "a user's manifest.jsonl",
                vec![MANIFEST.into(), "not a manifest of dem-run's".into()],
            )
        };
        let mut checkpoint = None;
        let mut from = None;
        if let Some(source) = &inv.restart {
            let (d, rel) = match source {
                Source::Dir(d) => {
                    if user_manifest(&self.dirs[*d]) {
                        return not_manifest();
                    }
                    match self.dirs[*d].checkpoints().pop_last() {
                        Some((_, rel)) => (*d, rel),
                        None => {
                            return refuse(
                                "no checkpoint of the directory's run",
                                vec!["no checkpoint that a run of this directory wrote".into()],
                            );
                        }
                    }
                }
                Source::File(d, rel) => (*d, rel.clone()),
            };
            let path = self.dirs[d].path.join(&rel);
            let user = self.dirs[d].user.contains_key(&rel);
            let c = match Ckpt::read(&path) {
                Ok(c) => c,
                Err(_) if user => {
                    return refuse(
                        "a user's file for a checkpoint",
                        vec![given.unwrap_or(&path).display().to_string()],
                    );
                }
                Err(e) => return Err(e),
            };
            if let Role::Other(key) = scene.role {
                return refuse(
                    "another experiment's scene",
                    vec!["another experiment".into(), format!("{key}: ")],
                );
            }
            if user_manifest(out) {
                return not_manifest();
            }
            let own = d == inv.out && !user;
            if own && inv.overwrite {
                return refuse(
                    "--overwrite with its own checkpoint",
                    vec!["--overwrite with a restart".into()],
                );
            }
            if own && scene.spec.stage && out.held.as_ref().is_some_and(|h| h.scene != inv.scene) {
                return refuse(
                    "a stage into the directory it continues",
                    vec!["a stage (run.stage = true) starts its own run directory".into()],
                );
            }
            let origin = match (own, scene.spec.stage) {
                (true, _) => c.origin,
                (false, true) => c.step,
                (false, false) => 0,
            };
            if origin + scene.spec.steps <= c.step {
                return refuse(
                    "nothing left to run",
                    vec!["nothing is left to run".into(), "run.steps".into()],
                );
            }
            if !user {
                from = self.dirs[d].held.as_ref().map(|h| h.covering(c.step));
            }
            checkpoint = Some((c, own));
        } else if user_manifest(out) {
            return not_manifest();
        }
        // Taking the directory: a file where the run keeps a folder, then a user's files at
        // the run's names, then an earlier run.
        if let Some(f) = out.blocked() {
            return refuse(
                "a file where a run keeps a folder",
                vec![
                    format!("{f}:"),
                    "is a file where a run keeps a folder of its outputs".into(),
                ],
            );
        }
        let strangers = out.strangers();
        if !strangers.is_empty() {
            let mut words: Vec<String> = strangers.iter().map(|s| s.to_string()).collect();
            words.push("never replaces".into());
            return refuse("a user's file at a run's name", words);
        }
        let own = checkpoint.as_ref().is_some_and(|(_, own)| *own);
        if !own && out.held.is_some() && !inv.overwrite {
            return refuse(
                "an earlier run without --overwrite",
                vec!["holds an earlier run".into(), "--overwrite".into()],
            );
        }
        Ok(Prediction {
            refused: None,
            checkpoint,
            from,
        })
    }
}

/// A case of the `rundir` tool (module docs).
pub(super) fn rundir_case(
    rng: &mut XorShiftRng,
    dir: &Path,
    case: &mut String,
    outcomes: &mut BTreeMap<String, usize>,
) -> Verdict {
    match world(rng, dir, case) {
        Ok(mut w) => match w.invocations(rng, case, outcomes) {
            Ok(()) => Verdict::Accepted,
            Err(e) => Verdict::Failed(e),
        },
        Err(e) => Verdict::Failed(e),
    }
}

/// The case's scenes and directories, the user's first files placed.
fn world(rng: &mut XorShiftRng, dir: &Path, case: &mut String) -> Result<World, String> {
    bake_ball(&dir.join("ball.grain"), 0.5).map_err(|e| format!("baking the sphere: {e}"))?;
    let base = Spec::draw(rng);
    let threads = if rng.random_bool(0.3) { 2 } else { 1 };
    *case = format!("{}, {threads} threads", base.describe());
    let mut specs = vec![("base", base.clone(), Role::Base)];
    if rng.random_bool(0.6) {
        let mut stage = base.clone();
        stage.stage = true;
        stage.steps = rng.random_range(5..=50);
        stage.gravity *= [0.0, 1.0, 2.0][rng.random_range(0..3)];
        stage.every[0] = rng.random_range(1..=12);
        if rng.random_bool(0.5) {
            stage.stop = Some(StopSpec::draw(rng, base.kind, stage.steps));
        }
        *case += &format!("; stage of {} steps", stage.steps);
        specs.push(("stage", stage, Role::Stage));
    }
    if let Some(dt) = base.dt.filter(|_| rng.random_bool(0.6)) {
        let mut hot = base.clone();
        let factor = [0.5, 3.0, 100.0][rng.random_range(0..3)];
        hot.dt = Some(dt * factor);
        *case += &format!("; hot: dt x {factor}");
        specs.push(("hot", hot, Role::Hot));
    }
    let mut other = base.clone();
    let key = match rng.random_range(0..5) {
        0 => {
            match &mut other.packing {
                Some((_, count)) => *count += 1,
                None => {
                    let mut g = other.grains[0];
                    g[0] += 1e-3;
                    other.grains.push(g);
                }
            }
            "grains"
        }
        1 => {
            let name = |l: &str| l.lines().next().unwrap_or("").to_string();
            while name(&other.law) == name(&base.law) {
                other.law = draw_law(rng);
            }
            "contact.law"
        }
        2 => {
            other.scale = 1.1;
            "grain 0"
        }
        3 if base.kind == Kind::Cell => {
            other.periodic = [true, true, false];
            // Conditions on a volume the cell no longer has would be refused first.
            other.stop = None;
            "cell.periodic"
        }
        _ => {
            bake_ball(&dir.join("ball2.grain"), 0.45)
                .map_err(|e| format!("baking the second sphere: {e}"))?;
            other.bundle = "ball2.grain";
            "grain 0"
        }
    };
    specs.push(("other", other, Role::Other(key)));
    let mut scenes = Vec::new();
    for (name, spec, role) in specs {
        let path = dir.join(format!("{name}.toml"));
        std::fs::write(&path, spec.toml(false, None))
            .map_err(|e| format!("writing {name}.toml: {e}"))?;
        scenes.push(Scene {
            name: name.into(),
            spec,
            path,
            role,
        });
    }
    let mut dirs = Vec::new();
    for name in DIRS {
        let path = dir.join(name);
        std::fs::create_dir_all(&path).map_err(|e| format!("{name}: {e}"))?;
        dirs.push(Dir {
            path,
            user: BTreeMap::new(),
            held: None,
            cut: false,
        });
    }
    let mut w = World {
        dir: dir.to_path_buf(),
        threads,
        scenes,
        dirs,
        refs: Vec::new(),
        memo: BTreeMap::new(),
        notes: Vec::new(),
    };
    *case += "; user files:";
    for _ in 0..rng.random_range(0..=3) {
        w.place(rng, case)?;
    }
    Ok(w)
}

impl World {
    /// A user's file at random, where none is (a copy of a run's checkpoint at a checkpoint's
    /// name, sometimes).
    fn place(&mut self, rng: &mut XorShiftRng, case: &mut String) -> Result<(), String> {
        let d = rng.random_range(0..self.dirs.len());
        let rel = USER_NAMES[rng.random_range(0..USER_NAMES.len())];
        let root = self.dirs[d].path.clone();
        let path = root.join(rel);
        // Only where nothing is: not over a file or folder, not below a file.
        let mut parent = Path::new(rel).parent();
        while let Some(p) = parent.filter(|p| !p.as_os_str().is_empty()) {
            if root.join(p).is_file() {
                return Ok(());
            }
            parent = p.parent();
        }
        if path.exists() {
            return Ok(());
        }
        let mut bytes = format!("the user's {rel} in {}\n", DIRS[d]).into_bytes();
        if rel == MANIFEST {
            // A line that is no JSON, a line without its newline (no whole line), or nothing.
            match rng.random_range(0..3) {
                0 => {}
                1 => _ = bytes.pop(),
                _ => bytes.clear(),
            }
        }
        if checkpoint_step(rel).is_some() && rng.random_bool(0.5) {
            // A copy of some run's checkpoint.
            let all: Vec<PathBuf> = (self.dirs.iter())
                .flat_map(|x| x.checkpoints().into_values().map(|r| x.path.join(r)))
                .collect();
            if !all.is_empty() {
                let from = &all[rng.random_range(0..all.len())];
                bytes = std::fs::read(from).map_err(|e| format!("{}: {e}", from.display()))?;
            }
        }
        if let Some(p) = path.parent() {
            std::fs::create_dir_all(p).map_err(|e| format!("{}: {e}", p.display()))?;
        }
        std::fs::write(&path, &bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        self.dirs[d].user.insert(rel.to_string(), bytes);
        *case += &format!(" +{}/{rel}", DIRS[d]);
        Ok(())
    }

    /// A crash's trace in a directory holding a run: its manifest's last line cut short, a
    /// claim without its newline (whole, or cut within), which names a file never written and
    /// which a reader ignores (the next run that takes the directory writes the manifest
    /// whole).
    fn cut(&mut self, rng: &mut XorShiftRng, case: &mut String) -> Result<(), String> {
        let held: Vec<usize> = (0..self.dirs.len())
            .filter(|&d| self.dirs[d].held.is_some())
            .collect();
        if held.is_empty() {
            return Ok(());
        }
        let d = held[rng.random_range(0..held.len())];
        let line = [
            "{\"file\":\"checkpoint/step_0000000999.json\"}",
            "{\"file\":\"vtk/nodes_00000",
            "{\"dir\":\"vtk\"}",
            "{\"fi",
        ][rng.random_range(0..4)];
        let path = self.dirs[d].path.join(MANIFEST);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        std::io::Write::write_all(&mut f, line.as_bytes())
            .map_err(|e| format!("{}: {e}", path.display()))?;
        self.dirs[d].cut = true;
        *case += &format!(" ~{}/{MANIFEST} ending in `{line}`", DIRS[d]);
        Ok(())
    }

    /// The user moves one of their files away.
    fn unplace(&mut self, rng: &mut XorShiftRng, case: &mut String) -> Result<(), String> {
        let all: Vec<(usize, String)> = (self.dirs.iter().enumerate())
            .flat_map(|(d, x)| x.user.keys().map(move |r| (d, r.clone())))
            .collect();
        if all.is_empty() {
            return Ok(());
        }
        let (d, rel) = all[rng.random_range(0..all.len())].clone();
        let path = self.dirs[d].path.join(&rel);
        std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        self.dirs[d].user.remove(&rel);
        *case += &format!(" -{}/{rel}", DIRS[d]);
        Ok(())
    }

    /// An invocation at random (`after`: a directory whose run was just interrupted, resumed
    /// more often than not).
    fn draw(&self, rng: &mut XorShiftRng, after: Option<usize>) -> Invocation {
        let n = self.dirs.len();
        let pick = |rng: &mut XorShiftRng| rng.random_range(0..n);
        // A directory to restart from: mostly one whose run wrote checkpoints.
        let with_run: Vec<usize> = (0..n)
            .filter(|&d| !self.dirs[d].checkpoints().is_empty())
            .collect();
        let pick_run = |rng: &mut XorShiftRng| {
            if with_run.is_empty() || rng.random_bool(0.15) {
                pick(rng)
            } else {
                with_run[rng.random_range(0..with_run.len())]
            }
        };
        // Another directory than `d`: mostly one without a run, if there is one.
        let elsewhere = |rng: &mut XorShiftRng, d: usize| {
            let free: Vec<usize> = (0..n)
                .filter(|&e| e != d && self.dirs[e].held.is_none())
                .collect();
            if free.is_empty() || rng.random_bool(0.3) {
                (d + rng.random_range(1..n)) % n
            } else {
                free[rng.random_range(0..free.len())]
            }
        };
        let base = 0;
        let stage = self.scenes.iter().position(|s| s.role == Role::Stage);
        let hot = self.scenes.iter().position(|s| s.role == Role::Hot);
        let other = self.scenes.len() - 1;
        // A checkpoint of `d` to restart from: its latest (`--restart DIR`) or a file, an
        // earlier one or a user's.
        let source = |rng: &mut XorShiftRng, d: usize| {
            let mut all: Vec<String> = self.dirs[d].checkpoints().into_values().collect();
            all.extend(
                (self.dirs[d].user.keys())
                    .filter(|r| checkpoint_step(r).is_some())
                    .cloned(),
            );
            if all.is_empty() || rng.random_bool(0.5) {
                Source::Dir(d)
            } else {
                Source::File(d, all[rng.random_range(0..all.len())].clone())
            }
        };
        // The scene a directory's run continues with: its own, or at another step.
        let own_scene = |rng: &mut XorShiftRng, d: usize| {
            let held = self.dirs[d].held.as_ref().map_or(base, |h| h.scene);
            match hot {
                Some(h) if held == base && rng.random_bool(0.3) => h,
                _ => held,
            }
        };
        // Mostly a fresh run while no directory holds a checkpoint; the run just interrupted
        // mostly resumed.
        let draw = match (after, with_run.is_empty()) {
            (Some(_), _) if rng.random_bool(0.7) => 12,
            (_, true) if rng.random_bool(0.9) => 0,
            _ => rng.random_range(0..12),
        };
        let (kind, scene, out, restart, overwrite) = match draw {
            0..=3 => {
                let overwrite = rng.random_bool(0.5);
                let kind = if overwrite {
                    "fresh --overwrite"
                } else {
                    "fresh"
                };
                (kind, base, pick(rng), None, overwrite)
            }
            4..=6 => {
                let d = pick_run(rng);
                let scene = own_scene(rng, d);
                let restart = source(rng, d);
                ("own restart", scene, d, Some(restart), rng.random_bool(0.1))
            }
            7..=10 if stage.is_none() || draw < 9 => {
                let from = pick_run(rng);
                let out = elsewhere(rng, from);
                let restart = source(rng, from);
                (
                    "restart elsewhere",
                    base,
                    out,
                    Some(restart),
                    rng.random_bool(0.5),
                )
            }
            9 | 10 => {
                let from = pick_run(rng);
                let (kind, out) = match rng.random_bool(0.25) {
                    true => ("stage into its source", from),
                    false => ("stage", elsewhere(rng, from)),
                };
                let scene = stage.unwrap_or(base);
                (
                    kind,
                    scene,
                    out,
                    Some(Source::Dir(from)),
                    rng.random_bool(0.3),
                )
            }
            11 => {
                let from = pick_run(rng);
                let out = pick(rng);
                let restart = source(rng, from);
                (
                    "other experiment",
                    other,
                    out,
                    Some(restart),
                    rng.random_bool(0.5),
                )
            }
            _ => {
                let d = after.unwrap_or(0);
                let scene = own_scene(rng, d);
                ("resume", scene, d, Some(Source::Dir(d)), false)
            }
        };
        Invocation {
            kind,
            scene,
            out,
            restart,
            overwrite,
            interrupt: rng.random_bool(0.25),
            // Mostly as they are.
            spelling: std::array::from_fn(|_| match rng.random_bool(0.7) {
                true => 0,
                false => rng.random_range(1..4),
            }),
        }
    }

    /// `path` (below the case's directory) spelled the `k`th way of [`SPELLINGS`]: the same
    /// file or folder.
    fn spell(&self, path: &Path, k: u8) -> Result<PathBuf, String> {
        let rel = path.strip_prefix(&self.dir).map_err(|e| e.to_string())?;
        let mut parts = rel.components();
        let Some(first) = parts.next() else {
            return Ok(path.to_path_buf());
        };
        let rest = parts.as_path();
        let first = first.as_os_str().to_string_lossy().into_owned();
        // (`join("")` would add a separator: a file's name would read as a folder's.)
        let below = |p: PathBuf| match rest.as_os_str().is_empty() {
            true => p,
            false => p.join(rest),
        };
        Ok(match k {
            1 if path.is_dir() => path.join("."),
            2 => below(self.dir.join(DIRS[0]).join("..").join(&first)),
            3 => {
                let link = self.dir.join(format!("link-{first}"));
                if !link.exists() {
                    #[cfg(unix)]
                    std::os::unix::fs::symlink(self.dir.join(&first), &link)
                        .map_err(|e| format!("{}: {e}", link.display()))?;
                    #[cfg(not(unix))]
                    return Ok(path.to_path_buf());
                }
                below(link)
            }
            _ => path.to_path_buf(),
        })
    }

    fn describe(&self, inv: &Invocation) -> String {
        let [sp, op, rp] = inv.spelling.map(|k| SPELLINGS[k as usize]);
        let mut s = format!("{sp}{}", self.scenes[inv.scene].name);
        match &inv.restart {
            None => {}
            Some(Source::Dir(d)) => s += &format!(" --restart {rp}{}", DIRS[*d]),
            Some(Source::File(d, r)) => s += &format!(" --restart {rp}{}/{r}", DIRS[*d]),
        }
        s += &format!(" --out {op}{}", DIRS[inv.out]);
        if inv.overwrite {
            s += " --overwrite";
        }
        if inv.interrupt {
            s += " (interrupted)";
        }
        s
    }

    /// The case's invocations, each checked.
    fn invocations(
        &mut self,
        rng: &mut XorShiftRng,
        case: &mut String,
        outcomes: &mut BTreeMap<String, usize>,
    ) -> Result<(), String> {
        let mut interrupted = None;
        for _ in 0..rng.random_range(3..=7) {
            if rng.random_bool(0.3) {
                self.place(rng, case)?;
            }
            if rng.random_bool(0.15) {
                self.unplace(rng, case)?;
            }
            if rng.random_bool(0.1) {
                self.cut(rng, case)?;
            }
            let inv = self.draw(rng, interrupted.take());
            *case += &format!("; {}", self.describe(&inv));
            let outcome = self.invoke(&inv)?;
            *case += &format!(": {outcome}");
            if outcome == "ran: interrupted" {
                interrupted = Some(inv.out);
            }
            // Runs by kind and status; refusals by their message.
            let key = match outcome.starts_with("ran") {
                true => format!("{outcome} ({})", inv.kind),
                false => outcome,
            };
            *outcomes.entry(key).or_default() += 1;
            for note in self.notes.drain(..) {
                *outcomes.entry(format!("note: {note}")).or_default() += 1;
            }
        }
        if let Some(k) = self
            .scenes
            .iter()
            .position(|s| s.spec.packing.is_some() && s.role == Role::Base)
            .filter(|_| rng.random_bool(0.5))
        {
            self.placed_grains_start_the_same_run(k)?;
            *case += "; grains.toml in place of the packing";
        }
        Ok(())
    }

    /// (4): the packing's grains.toml, in place of its `[[packings]]`, starts the same run.
    fn placed_grains_start_the_same_run(&mut self, scene: usize) -> Result<(), String> {
        let r = self.reference(scene, None, None)?;
        let out = self.dir.join(format!("ref-{r}"));
        let placed = std::fs::read_to_string(out.join("grains.toml"))
            .map_err(|e| format!("the packing's grains.toml: {e}"))?;
        let mut spec = self.scenes[scene].spec.clone();
        spec.placed = Some(placed);
        // Compared by its rows alone: a row at every step, no node cloud, and no checkpoint but
        // a stop's (a checkpoint at every step, synced, was most of this run's time).
        spec.every = [1, 0, 0];
        let path = self.dir.join("placed.toml");
        std::fs::write(&path, spec.toml(false, None)).map_err(|e| e.to_string())?;
        let placed_out = self.dir.join("placed");
        let result = dem_run::run(
            &path,
            &options(&placed_out, self.threads, None, false),
            &AtomicBool::new(false),
        );
        if let (Err(e), false) = (&result, placed_out.join("summary.json").exists()) {
            return Err(format!("the scene with grains.toml was refused: {e}"));
        }
        let h = History::read(&placed_out.join("history.csv"))?;
        let reference = &self.refs[r];
        let rows: BTreeMap<u64, String> = h.rows.into_iter().collect();
        if rows != reference.rows {
            let differs = (rows.iter())
                .find(|(s, l)| reference.rows.get(s) != Some(l))
                .map(|(s, _)| *s);
            return Err(format!(
                "grains.toml in place of the packing is another run: {} rows against {}, first differing at step {differs:?}",
                rows.len(),
                reference.rows.len()
            ));
        }
        Ok(())
    }

    /// Runs `inv` and checks it; returns its outcome's class.
    fn invoke(&mut self, inv: &Invocation) -> Result<String, String> {
        let [sp, op, rp] = inv.spelling;
        let out = self.spell(&self.dirs[inv.out].path, op)?;
        let restart = match &inv.restart {
            Some(Source::Dir(d)) => Some(self.spell(&self.dirs[*d].path, rp)?),
            Some(Source::File(d, r)) => Some(self.spell(&self.dirs[*d].path.join(r), rp)?),
            None => None,
        };
        let scene = self.spell(&self.scenes[inv.scene].path, sp)?;
        let p = self.predict(inv, restart.as_deref())?;
        let before: Vec<BTreeMap<String, Vec<u8>>> =
            self.dirs.iter().map(|d| files(&d.path)).collect();
        let result = dem_run::run(
            &scene,
            &options(&out, self.threads, restart, inv.overwrite),
            &AtomicBool::new(inv.interrupt),
        );
        let after: Vec<BTreeMap<String, Vec<u8>>> =
            self.dirs.iter().map(|d| files(&d.path)).collect();
        // (1) The user's files, everywhere; no directory but --out touched.
        for (d, dir) in self.dirs.iter().enumerate() {
            for (rel, bytes) in &dir.user {
                if after[d].get(rel) != Some(bytes) {
                    return Err(format!(
                        "the user's {}/{rel} was {}",
                        DIRS[d],
                        if after[d].contains_key(rel) {
                            "changed"
                        } else {
                            "removed"
                        }
                    ));
                }
            }
            if d != inv.out && after[d] != before[d] {
                return Err(format!(
                    "a run into {} changed {}'s files",
                    DIRS[inv.out], DIRS[d]
                ));
            }
        }
        let message = match &result {
            Err(e) => Some(e.to_string()),
            Ok(_) => None,
        };
        let unchanged = after[inv.out] == before[inv.out];
        if let (Some(m), true) = (&message, unchanged) {
            // (6) Refused: the refusal predicted, its words in the message.
            let Some((why, words)) = &p.refused else {
                return Err(format!("refused a run the contract allows: {m}"));
            };
            if let Some(w) = words.iter().find(|w| !m.contains(w.as_str())) {
                return Err(format!(
                    "refused ({why} predicted) without naming `{w}`: {m}"
                ));
            }
            // The scenes and the run directories, however spelled, as <scene> and <dir>.
            let mut m = m.replace(&self.dir.display().to_string(), "<case>");
            for s in &self.scenes {
                let name = format!("{}.toml", s.name);
                for spelled in [
                    format!("<case>/{}/../{name}", DIRS[0]),
                    format!("<case>/link-{name}"),
                    format!("<case>/{name}"),
                ] {
                    m = m.replace(&spelled, "<scene>");
                }
            }
            for spelled in [
                |d: &str| format!("<case>/{}/../{d}", DIRS[0]),
                |d: &str| format!("<case>/link-{d}"),
                |d: &str| format!("<case>/{d}/."),
                |d: &str| format!("<case>/{d}"),
            ] {
                for d in DIRS {
                    for end in [":", "/"] {
                        m = m.replace(&format!("{}{end}", spelled(d)), &format!("<dir>{end}"));
                    }
                }
            }
            return Ok(format!("refused: {}", class(&m)));
        }
        if let Some((why, _)) = &p.refused {
            return Err(format!(
                "ran although the contract refuses it ({why}): {}",
                message.map_or("it ran".into(), |m| format!("failed: {m}"))
            ));
        }
        // It read a manifest whose last line a crash cut, and took --out (writing its manifest
        // whole: check_dir reads it so).
        if matches!(&inv.restart, Some(Source::Dir(d)) if self.dirs[*d].cut) {
            self.notes
                .push("--restart DIR found its checkpoint in a manifest whose last line was cut");
        }
        if std::mem::take(&mut self.dirs[inv.out].cut) {
            self.notes
                .push("a run took a directory whose manifest's last line was cut");
        }
        self.ran(inv, &p, message.as_deref(), result.ok().as_ref())
    }

    /// The checks of an invocation that ran (finished, stopped, interrupted or failed).
    fn ran(
        &mut self,
        inv: &Invocation,
        p: &Prediction,
        failed: Option<&str>,
        returned: Option<&Summary>,
    ) -> Result<String, String> {
        // The directory's run after this one: its timeline.
        let start = p.checkpoint.as_ref().map(|(c, _)| c.step);
        match &p.checkpoint {
            None => {
                let r = self.reference(inv.scene, None, None)?;
                self.dirs[inv.out].held = Some(Held {
                    scene: inv.scene,
                    segments: vec![(None, r)],
                });
            }
            Some((c, true)) => {
                let held = self.dirs[inv.out].held.as_ref().expect("own: a run");
                let mut segments: Vec<(Option<u64>, usize)> = (held.segments.iter())
                    .filter(|(s, _)| s.is_none_or(|s| s < c.step))
                    .cloned()
                    .collect();
                let covering = segments.last().expect("a segment").1;
                let r = &self.refs[covering];
                let (rs, rstart, rafter) = (r.scene, r.start.clone(), r.after);
                if rs != inv.scene {
                    let k = self.reference(inv.scene, Some(c), None)?;
                    segments.push((Some(c.step), k));
                } else if r.end <= c.step && r.ended == Ended::Stopped {
                    // Past the stop it continues from: the same run, not stopping there.
                    let after = Some(rafter.unwrap_or(0).max(c.step + 1));
                    let k = self.reference(rs, rstart.as_ref(), after)?;
                    segments.push((Some(c.step), k));
                } else if r.end <= c.step {
                    return Err(format!(
                        "ran from step {} although its uninterrupted run ended there ({:?})",
                        c.step, r.ended
                    ));
                }
                self.dirs[inv.out].held.as_mut().expect("a run").segments = segments;
            }
            Some((c, false)) => {
                // From another directory: the same run as the source's if the same scene
                // continues it (not a stage: it counts from its own start); else its own.
                let reuse = p.from.filter(|&f| {
                    let r = &self.refs[f];
                    r.scene == inv.scene && !self.scenes[inv.scene].spec.stage && r.end > c.step
                });
                let r = match reuse {
                    Some(r) => r,
                    None => self.reference(inv.scene, Some(c), None)?,
                };
                self.dirs[inv.out].held = Some(Held {
                    scene: inv.scene,
                    segments: vec![(Some(c.step), r)],
                });
            }
        }
        let summary = read_summary(&self.dirs[inv.out].path)?;
        let h = self.check_dir(inv.out, p.checkpoint.is_none())?;
        // (5) summary.json and the end the uninterrupted run says.
        if summary.history_last_step != h.last_step() {
            return Err(format!(
                "summary.json's history_last_step {:?}, history.csv's last row {:?}",
                summary.history_last_step,
                h.last_step()
            ));
        }
        let held = self.dirs[inv.out].held.as_ref().expect("a run");
        let r = &self.refs[held.segments.last().expect("a segment").1];
        let first = start.unwrap_or(0);
        let (end, ended) = match (&r.ended, inv.interrupt) {
            (_, true) if r.end > first + 1 => (first + 1, Ended::Interrupted),
            (Ended::Finished, true) => (first + 1, Ended::Interrupted),
            (e, _) => (r.end, e.clone()),
        };
        let status = match failed {
            Some(m) => {
                if summary.status != Status::Failed || summary.error.as_deref() != Some(m) {
                    return Err(format!(
                        "failed with `{m}`, summary.json says {:?} with error {:?}",
                        summary.status, summary.error
                    ));
                }
                Ended::Failed(m.to_string())
            }
            None => {
                let s = returned.expect("a summary");
                if (s.status, s.steps, s.history_last_step)
                    != (summary.status, summary.steps, summary.history_last_step)
                {
                    return Err(format!(
                        "returned {:?} at step {}, summary.json says {:?} at step {}",
                        s.status, s.steps, summary.status, summary.steps
                    ));
                }
                if summary.history_last_step != Some(summary.steps) {
                    return Err(format!(
                        "{:?} at step {}, history.csv ends at {:?}",
                        summary.status, summary.steps, summary.history_last_step
                    ));
                }
                match summary.status {
                    Status::Finished => Ended::Finished,
                    Status::Stopped => Ended::Stopped,
                    Status::Interrupted => Ended::Interrupted,
                    s => return Err(format!("returned a summary saying {s:?}")),
                }
            }
        };
        if status != ended || (failed.is_none() && summary.steps != end) {
            return Err(format!(
                "ended {status:?} at step {}; the uninterrupted run from step {first} ended {:?} at step {}{}",
                summary.steps,
                r.ended,
                r.end,
                if inv.interrupt {
                    " (this one interrupted at its first step)"
                } else {
                    ""
                }
            ));
        }
        // (3) A stop: due, its row meeting the conditions, a checkpoint of that state.
        let checkpoints = self.dirs[inv.out].checkpoints();
        if matches!(status, Ended::Stopped | Ended::Interrupted)
            && !checkpoints.contains_key(&summary.steps)
        {
            return Err(format!(
                "{status:?} at step {} without a checkpoint there",
                summary.steps
            ));
        }
        if status == Ended::Stopped {
            let spec = &self.scenes[inv.scene].spec;
            let stop = spec.stop.clone().ok_or("stopped without [stop]")?;
            let line = (h.rows.iter().find(|(s, _)| *s == summary.steps))
                .map(|(_, l)| l.clone())
                .ok_or("stopped without a row at its step")?;
            if !stop.due(summary.steps) || !stop.met(&h, &line)? {
                return Err(format!(
                    "stopped at step {} ({:?}), where {stop:?} is not due or not met by the row {line}",
                    summary.steps, summary.stopped
                ));
            }
        }
        Ok(match status {
            Ended::Failed(m) => format!("ran: failed: {}", class(&m)),
            s => format!("ran: {}", format!("{s:?}").to_lowercase()),
        })
    }

    /// (2), (4), (5) on a directory holding a run: its history, checkpoints, clouds, series
    /// and manifest against its timeline; `fresh`: the run began at step 0 in this directory.
    fn check_dir(&self, d: usize, fresh: bool) -> Result<History, String> {
        let dir = &self.dirs[d];
        let held = dir.held.as_ref().expect("a run");
        let h = History::read(&dir.path.join("history.csv"))?;
        let last = &self.refs[held.segments.last().expect("a segment").1];
        if h.header != last.header {
            return Err("history.csv's header is not the uninterrupted run's".into());
        }
        let cadence = |s: u64| self.scenes[self.refs[held.covering(s)].scene].spec.every[0];
        // A run started in another directory's checkpoint has rows after it only.
        let mut previous: Option<u64> = held.segments[0].0;
        for (s, line) in &h.rows {
            let r = &self.refs[held.covering(*s)];
            if r.rows.get(s) != Some(line) {
                return Err(format!(
                    "history.csv's row at step {s} is not the uninterrupted run's:\n  {line}\n  {}",
                    r.rows.get(s).map_or("(no row)", String::as_str)
                ));
            }
            match previous {
                None if *s != 0 => return Err(format!("history.csv starts at step {s}")),
                Some(p) if *s <= p => {
                    return Err(format!("history.csv's step {s} follows step {p}"));
                }
                Some(p) => {
                    let every = cadence(*s);
                    let next = (p / every + 1) * every;
                    if next < *s {
                        return Err(format!(
                            "history.csv goes from step {p} to {s}, without the row at {next} (history_every = {every})"
                        ));
                    }
                }
                None => {}
            }
            previous = Some(*s);
        }
        if fresh {
            packing_starts_apart(&self.scenes[held.scene].spec, &h)?;
        }
        let all = files(&dir.path);
        let mine: BTreeSet<&String> = all.keys().filter(|r| !dir.user.contains_key(*r)).collect();
        for rel in &mine {
            if let Some(s) = checkpoint_step(rel) {
                let r = &self.refs[held.covering(s)];
                let text = String::from_utf8_lossy(&all[*rel]);
                let same = comparable(&text).map_err(|e| format!("{rel}: {e}"))?;
                if r.checkpoints.get(&s) != Some(&same) {
                    return Err(format!(
                        "{rel} is not the uninterrupted run's state at step {s}{}",
                        if r.checkpoints.contains_key(&s) {
                            ""
                        } else {
                            " (which has no such step)"
                        }
                    ));
                }
                // Its copy of the settings: those of the scene whose run wrote it.
                let scene = &self.scenes[r.scene];
                let expected = std::fs::read_to_string(&scene.path)
                    .ok()
                    .and_then(|t| dem_run::checkpoint::settings(&t));
                let v: serde_json::Value =
                    serde_json::from_str(&text).map_err(|e| format!("{rel}: {e}"))?;
                if v.get("settings") != expected.as_ref() {
                    return Err(format!(
                        "{rel}'s settings are not those of {}.toml, whose run wrote it: {}",
                        scene.name,
                        v.get("settings").map_or("none".into(), |s| s.to_string())
                    ));
                }
            } else if let Some(name) = rel.strip_prefix("vtk/") {
                let s: Option<u64> = (name.split(['_', '.']).nth(1)).and_then(|s| s.parse().ok());
                let Some(s) = s else {
                    return Err(format!("{rel}: a cloud without its step"));
                };
                let r = &self.refs[held.covering(s)];
                if r.clouds.get(name) != Some(&all[*rel]) {
                    return Err(format!(
                        "{rel} is not the uninterrupted run's cloud at step {s}"
                    ));
                }
            }
        }
        // The series list exactly the clouds in vtk/.
        for (pvd, prefix) in [("run.pvd", "vtk/nodes_"), ("cell.pvd", "vtk/cell_")] {
            let clouds: BTreeSet<String> = (mine.iter())
                .filter(|r| r.starts_with(prefix))
                .map(|r| r.to_string())
                .collect();
            let listed: BTreeSet<String> =
                match all.get(pvd).filter(|_| mine.contains(&pvd.to_string())) {
                    Some(b) => pvd_files(&String::from_utf8_lossy(b)).into_iter().collect(),
                    None => BTreeSet::new(),
                };
            if let Some(f) = listed.difference(&clouds).next() {
                return Err(format!(
                    "{pvd} lists {f}, which is not in the directory (the run's clouds: {})",
                    clouds.len()
                ));
            }
            if let Some(f) = clouds.difference(&listed).next() {
                return Err(format!("{pvd} does not list the run's {f}"));
            }
        }
        // The manifest lists the run's files, and only files there; its head names the scene
        // that took the directory.
        let text = all.get(MANIFEST).ok_or("a run without its manifest")?;
        let manifest = Manifest::parse(&String::from_utf8_lossy(text))?;
        let scene = self.scenes[held.scene].path.canonicalize();
        let scene = scene.map_err(|e| format!("{}: {e}", self.scenes[held.scene].name))?;
        if manifest.scene != scene {
            return Err(format!(
                "{MANIFEST} says its run ran {}, not {}",
                manifest.scene.display(),
                scene.display()
            ));
        }
        if let Some(d) = manifest.dirs.iter().find(|d| !dir.path.join(d).is_dir()) {
            return Err(format!(
                "{MANIFEST} lists the folder {d}, which is not there"
            ));
        }
        let listed = manifest.files;
        for rel in &mine {
            if rel.as_str() != MANIFEST && !listed.contains(*rel) {
                return Err(format!("{rel} is the run's and not in its {MANIFEST}"));
            }
        }
        if let Some(rel) = listed.iter().find(|r| !mine.contains(r)) {
            return Err(format!(
                "{MANIFEST} lists {rel}, which is {}",
                if dir.user.contains_key(rel) {
                    "the user's"
                } else {
                    "not there"
                }
            ));
        }
        Ok(h)
    }
}
