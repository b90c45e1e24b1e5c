//! `cargo bench -p dem-run --bench modes` (part of `cargo xtask bench dem`): the step of a grain
//! with 20 modes against the step of the same scene with its modes off.
//!
//! The grain is the validation's ball (docs/validation.md, `squeeze`): the 20 lowest free modes
//! of data/fem/ball's mesh and its residual flexibility (`mode-extract --free 20 --flexibility
//! --patch-radius 5`), on the exact sphere of radius 10 mm with 60,000 surface nodes
//! (`levelset-bake sphere --spacing 0.5`), under `law = "hertz-patches"`. Two scenes:
//! - `plates`: the ball held, two plates closing on it along z by 0.3 mm each over 2 ms, then
//!   holding (the squeeze);
//! - `pair`: two such balls stacked along z, free along z only, between the closing plates: the
//!   contact between the balls takes the semi-Lagrangian level set of the other ball's 20 modes.
//!
//! The rigid variant is the same scene with `modes = { active = false }` and the balls' material
//! as the law's keys. Each variant first runs `LOAD` steps (untimed: the plates reach the grains
//! and press them), then the variants are timed for `TIMED` steps each on 1 thread, in turn,
//! `REPEATS` times (medians; this machine kind's timings vary by tens of percent from run to
//! run). Reported: steps/s, node contacts, and the ratio deformable / rigid (goal <= 2, issue
//! #35 item 2): the median of the rounds' own ratios, each taken within a round.
//!
//! On the AMD processor of 2026-11-29 the rigid step's time moved by up to 1.46 x with the code's
//! layout alone (a change to this file moved it), so the ratio in time varies between builds;
//! the ratio of instructions, counted on the scenes themselves, does not. `DEM_BENCH_KEEP=DIR`
//! keeps the bench's grains and scenes in `DIR` for that count (docs/performance.md, "Locating
//! a point without closures").

mod side_by_side;
mod work_dir;

use std::path::Path;

use dem_core::sim::Simulation;
use levelset_bake::{
    BakeOptions, Damping, Extent, ModeRequest, ModeSource, NodeChoice, OpenMesh, Primitive,
    Samples, bake_primitive,
};
use mode_extract::{FreeOptions, MaterialOptions, free_bundle};

const LOAD: u64 = 1000;
const TIMED: u64 = 1000;
const REPEATS: usize = 3;

fn main() {
    let dir = work_dir::WorkDir::new();
    bake(dir.path());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    for (name, grains, plate) in [("plates", PLATES, 10.0), ("pair", PAIR, 20.0)] {
        let variants = [
            ("20 modes", "{ levelset = \"semi-lagrangian\" }", ""),
            (
                "rigid",
                "{ active = false }",
                "youngs_modulus = 1000\npoisson_ratio = 0.25\n",
            ),
        ];
        let mut sims: Vec<Simulation> = variants
            .iter()
            .map(|(label, modes, keys)| {
                let text = SCENE
                    .replace("KEYS\n", keys)
                    .replace("GRAINS\n", &grains.replace("MODES", modes))
                    .replace("PLATE", &plate.to_string());
                let path = dir.path().join(format!("{name}-{}.toml", &label[..2]));
                side_by_side::advanced(&path, &text, &pool, LOAD)
            })
            .collect();
        let (rates, counts) = side_by_side::in_turn(&mut sims, &pool, TIMED, REPEATS);
        println!("{name}: 1 thread, after {LOAD} loading steps, {TIMED} steps timed:");
        let spreads: Vec<_> = rates.iter().map(|r| side_by_side::spread(r)).collect();
        for (v, (label, ..)) in variants.iter().enumerate() {
            let (median, low, high) = spreads[v];
            println!(
                "  {label}: {median:.0} steps/s ({low:.0} to {high:.0}), {:.0} node tests per step, {:.1} ns each, {:.0} node queries per step, {} node contacts",
                counts[v].tests as f64 / TIMED as f64,
                1e9 / median * TIMED as f64 / counts[v].tests as f64,
                counts[v].queries as f64 / TIMED as f64,
                sims[v].last.contacts
            );
        }
        let (ratio, each) = side_by_side::ratio(&rates[1], &rates[0]);
        println!(
            "  20 modes / rigid: {ratio:.2} (goal <= 2; the median of the rounds' own ratios, {})",
            side_by_side::listed(&each)
        );
    }
}

/// The ball's modes bundle and grain bundle, as data/validation/squeeze/pipeline.toml makes
/// them, in `dir`.
fn bake(dir: &Path) {
    let mesh = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/fem/ball/ball.inp");
    let modes = free_bundle(&FreeOptions {
        mesh,
        element_set: None,
        redefinition: fem::Redefinition::Refuse,
        modes: 20,
        flexibility: Some(Some(5.0)),
        material: MaterialOptions {
            youngs_modulus: None,
            poisson_ratio: None,
            density: None,
        },
        units: "mm, N, s, t".into(),
    })
    .unwrap();
    modes.write(&dir.join("ball.modes")).unwrap();
    let options = BakeOptions {
        spacing: 0.5,
        pad_cells: levelset_bake::DEFAULT_PAD,
        extent: Extent::Full,
        nodes: NodeChoice::Count(60_000),
        density: 1e-9,
        units: "mm, N, s, t".into(),
        open: OpenMesh::Refuse,
        allow_unresolved: false,
    };
    let mut baked = bake_primitive(&Primitive::Sphere { radius: 10.0 }, &options).unwrap();
    ModeRequest {
        source: ModeSource::Bundle {
            dir: dir.join("ball.modes"),
            mass: levelset_bake::ModalMass::Bundle,
            table: None,
        },
        samples: Samples::At(Vec::new()),
        damping: Damping::StiffnessProportional(6e-6),
    }
    .apply(&mut baked, 1e-9, None)
    .unwrap();
    baked.bundle.write(&dir.join("ball.grain")).unwrap();
}

/// The scene: plates at `+-PLATE` closing by 0.3 mm each over 2 ms, as
/// data/validation/squeeze/one-1.toml.
const SCENE: &str = r#"
[run]
dt = 1e-6
steps = 1
[contact]
law = "hertz-patches"
KEYS
GRAINS
[[walls]]
kind = "plane"
point = [0, 0, PLATE]
normal = [0, 0, -1]
motion = { table = [[0, 0, 0, 0], [2e-3, 0, 0, -0.3], [1, 0, 0, -0.3]] }
[[walls]]
kind = "plane"
point = [0, 0, -PLATE]
normal = [0, 0, 1]
motion = { table = [[0, 0, 0, 0], [2e-3, 0, 0, 0.3], [1, 0, 0, 0.3]] }
"#;

/// The held ball, at orientation 1 of the squeeze.
const PLATES: &str = r#"
[[grains]]
bundle = "ball.grain"
position = [0, 0, 0]
orientation = [-0.610144927056568, -0.19272997695894, -0.013003998445359, -0.768380908139299]
hold = ["x", "y", "z", "rotation"]
modes = MODES
"#;

/// Two balls touching at z = 0, free along z.
const PAIR: &str = r#"
[[grains]]
bundle = "ball.grain"
position = [0, 0, -10]
orientation = [-0.610144927056568, -0.19272997695894, -0.013003998445359, -0.768380908139299]
hold = ["x", "y", "rotation"]
modes = MODES
[[grains]]
bundle = "ball.grain"
position = [0, 0, 10]
hold = ["x", "y", "rotation"]
modes = MODES
"#;
