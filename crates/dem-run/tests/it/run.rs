//! Runs on disk: determinism across thread counts, exact restart, and the output files.

use crate::common;

use std::path::Path;
use std::sync::atomic::AtomicBool;

use dem_run::{RunOptions, run};

/// Eight spheres with friction dropped into a box (four walls and a floor): contacts between
/// grains and with walls, shear histories, gravity.
pub(crate) fn scene(dir: &Path, threads: usize, checkpoint_every: u64) -> std::path::PathBuf {
    scene_with(dir, threads, checkpoint_every, None, None)
}

/// The same under a sphere law (`[contact]` lines `contact`), the cylinder replaced by two planes.
fn spheres(dir: &Path, checkpoint_every: u64, contact: &str) -> std::path::PathBuf {
    scene_with(dir, 2, checkpoint_every, None, Some(contact))
}

/// The same with deformable spheres (a damped dilation mode) whose level sets follow `update`.
pub(crate) fn deformable(
    dir: &Path,
    threads: usize,
    checkpoint_every: u64,
    update: &str,
) -> std::path::PathBuf {
    scene_with(dir, threads, checkpoint_every, Some(update), None)
}

fn scene_with(
    dir: &Path,
    threads: usize,
    checkpoint_every: u64,
    update: Option<&str>,
    sphere_law: Option<&str>,
) -> std::path::PathBuf {
    let (contact, side) = match sphere_law {
        None => (
            "law = \"linear-springs\"\nkn = 5000\nks = 2500\nfriction = 0.4\nnormal_damping = 2",
            "kind = \"cylinder\"\npoint = [0, 0, 0]\naxis = [0, 0, 1]\nradius = 1.45",
        ),
        Some(c) => (
            c,
            "kind = \"plane\"\npoint = [0, -1.1, 0]\nnormal = [0, 1, 0]\n[[walls]]\nkind = \"plane\"\npoint = [0, 1.1, 0]\nnormal = [0, -1, 0]",
        ),
    };
    let (bundle, modes) = match update {
        None => {
            common::sphere(dir, "ball", 0.5, 0.05, 300);
            ("ball", String::new())
        }
        Some(u) => {
            common::deformable_sphere(
                dir,
                "soft",
                0.5,
                0.05,
                300,
                common::TestMode::Dilation,
                [0.2, 2000.0, 0.05],
                &[-0.02, 0.02],
            );
            ("soft", format!("modes = {{ levelset = \"{u}\" }}"))
        }
    };
    common::scene_file(
        dir,
        &format!(
            r#"
[run]
dt = 4e-4
steps = 1000
gravity = [0, 0, -9.81]
threads = {threads}
[output]
history_every = 100
vtk_every = 250
checkpoint_every = {checkpoint_every}
[contact]
{contact}
[[lattices]]
bundle = "{bundle}.grain"
origin = [-0.52, -0.51, 0.6]
counts = [2, 2, 2]
spacing = [1.03, 1.02, 1.05]
velocity = [0.3, -0.2, 0]
{modes}
[[walls]]
kind = "plane"
point = [0, 0, 0]
normal = [0, 0, 1]
[[walls]]
kind = "plane"
point = [-1.1, 0, 0]
normal = [1, 0, 0]
[[walls]]
kind = "plane"
point = [1.1, 0, 0]
normal = [-1, 0, 0]
[[walls]]
{side}
"#
        ),
    )
}

pub(crate) fn options(out: &Path, restart: Option<std::path::PathBuf>) -> RunOptions {
    crate::common::run_options(out, None, restart)
}

#[test]
fn one_and_two_threads_give_the_same_bits() {
    same_bits_on_one_and_two_threads(|dir, threads| scene(dir, threads, 1000));
    // With modal state: amplitudes, rates and generalized forces in the checkpoint and history.
    same_bits_on_one_and_two_threads(|dir, threads| {
        deformable(dir, threads, 1000, "semi-lagrangian")
    });
}

fn same_bits_on_one_and_two_threads(scene: impl Fn(&Path, usize) -> std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let mut finals = Vec::new();
    for threads in [1, 2] {
        let scene = scene(dir.path(), threads);
        let out = dir.path().join(format!("t{threads}"));
        let s = run(&scene, &options(&out, None), &AtomicBool::new(false)).unwrap();
        assert_eq!(s.threads, threads);
        assert!(s.node_contacts > 0);
        // The checkpoint but its copy of the scene's settings (run.threads differs).
        let mut c: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(out.join("checkpoint/step_0000001000.json")).unwrap(),
        )
        .unwrap();
        c.as_object_mut().unwrap().remove("settings").unwrap();
        finals.push((
            c.to_string(),
            std::fs::read_to_string(out.join("history.csv")).unwrap(),
        ));
    }
    assert!(finals[0].0 == finals[1].0, "checkpoints differ");
    assert_eq!(finals[0].1, finals[1].1);
}

#[test]
fn a_restart_continues_bit_for_bit() {
    restarts_bit_for_bit(|dir| scene(dir, 2, 500));
    restarts_bit_for_bit(|dir| deformable(dir, 2, 500, "precomputed"));
    let material = "shear_modulus = 1e4\npoisson_ratio = 0.25\nfriction = 0.4";
    restarts_bit_for_bit(|dir| spheres(dir, 500, &format!("law = \"hertz-jaeger\"\n{material}")));
    restarts_bit_for_bit(|dir| {
        spheres(
            dir,
            500,
            &format!("law = \"hertz-mindlin\"\n{material}\nrestitution = 0.8"),
        )
    });
}

fn restarts_bit_for_bit(scene: impl Fn(&Path) -> std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let scene = scene(dir.path());
    let out = dir.path().join("run");
    run(&scene, &options(&out, None), &AtomicBool::new(false)).unwrap();
    let final_state = std::fs::read(out.join("checkpoint/step_0000001000.json")).unwrap();
    let history = std::fs::read_to_string(out.join("history.csv")).unwrap();
    let pvd = std::fs::read_to_string(out.join("run.pvd")).unwrap();
    // Rows: the header, the start, every 100 steps; node clouds at 0, 250, 500, 750, 1000.
    assert_eq!(history.lines().count(), 1 + 1 + 10);
    assert_eq!(pvd.matches("<DataSet").count(), 5);
    std::fs::remove_file(out.join("checkpoint/step_0000001000.json")).unwrap();
    // The restart starts amid contacts with shear histories.
    let middle: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("checkpoint/step_0000000500.json")).unwrap(),
    )
    .unwrap();
    assert!(!middle["state"]["histories"].as_array().unwrap().is_empty());

    let s = run(
        &scene,
        &options(&out, Some(out.join("checkpoint/step_0000000500.json"))),
        &AtomicBool::new(false),
    )
    .unwrap();
    assert_eq!(s.steps, 1000);
    assert!(std::fs::read(out.join("checkpoint/step_0000001000.json")).unwrap() == final_state);
    assert_eq!(
        std::fs::read_to_string(out.join("history.csv")).unwrap(),
        history
    );
    assert_eq!(std::fs::read_to_string(out.join("run.pvd")).unwrap(), pvd);
}

#[test]
fn a_raised_stop_flag_checkpoints_and_reports_the_interruption() {
    let dir = tempfile::tempdir().unwrap();
    let scene = scene(dir.path(), 1, 0);
    let out = dir.path().join("run");
    let s = run(&scene, &options(&out, None), &AtomicBool::new(true)).unwrap();
    assert_eq!(s.status, dem_run::Status::Interrupted);
    assert_eq!(s.steps, 1);
    let c = s.last_checkpoint.unwrap();
    assert!(
        c.ends_with("checkpoint/step_0000000001.json"),
        "{}",
        c.display()
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["status"], "interrupted");
}

#[test]
fn the_summary_splits_the_steps_time_by_stage() {
    let dir = tempfile::tempdir().unwrap();
    let scene = scene(dir.path(), 1, 200);
    let out = dir.path().join("run");
    let s = run(&scene, &options(&out, None), &AtomicBool::new(false)).unwrap();
    let t = s.timings;
    let stages = [
        t.integrate,
        t.views,
        t.broad,
        t.narrow,
        t.reduce,
        t.body_forces,
        t.ledger,
    ];
    assert!(stages.iter().all(|&x| x > 0.0), "{t:?}");
    // The stages are timed inside the steps, which are inside the run's wall-clock time.
    assert!(
        stages.iter().sum::<f64>() <= s.wall_seconds,
        "{t:?} {}",
        s.wall_seconds
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["timings"]["narrow"], t.narrow);
}

#[test]
fn a_checkpoint_that_does_not_fit_the_scene_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let scene = scene(dir.path(), 1, 500);
    let out = dir.path().join("run");
    run(&scene, &options(&out, None), &AtomicBool::new(false)).unwrap();
    let checkpoint = out.join("checkpoint/step_0000000500.json");
    let text = std::fs::read_to_string(&checkpoint).unwrap();
    let restart = |text: &str| {
        let path = dir.path().join("edited.json");
        std::fs::write(&path, text).unwrap();
        run(
            &scene,
            &options(&dir.path().join("again"), Some(path)),
            &AtomicBool::new(false),
        )
        .unwrap_err()
        .to_string()
    };
    // A node index beyond the grain's 300-odd nodes.
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let histories = value["state"]["histories"].as_array_mut().unwrap();
    histories[0][1]["Nodes"][0]["node"] = 100_000.into();
    let e = restart(&value.to_string());
    assert!(e.contains("edited.json: state.histories: pair"), "{e}");
    // One grain fewer.
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["state"]["bodies"].as_array_mut().unwrap().pop();
    let e = restart(&value.to_string());
    assert!(
        e.contains("the checkpoint has 7 grains and 4 walls, the scene 8 and 4"),
        "{e}"
    );
    // Not a checkpoint.
    let e = restart("{\"schema\": 1}");
    assert!(e.contains("edited.json: missing field"), "{e}");
    // The untouched checkpoint continues in a fresh directory, its history starting there.
    let again = dir.path().join("fresh");
    run(
        &scene,
        &options(&again, Some(checkpoint)),
        &AtomicBool::new(false),
    )
    .unwrap();
    let history = std::fs::read_to_string(again.join("history.csv")).unwrap();
    assert!(
        history.lines().nth(1).unwrap().starts_with("600,"),
        "{history}"
    );
    // Again into that directory, from the other run's checkpoint: its files are another run's
    // (the first restart's). Issue #33: refused without --overwrite (the restart truncated that
    // run's history.csv); with it, they start afresh rather than being cut back to the
    // checkpoint's history length (which was this directory's history at no time).
    let from_other = options(&again, Some(out.join("checkpoint/step_0000000500.json")));
    let e = run(&scene, &from_other, &AtomicBool::new(false))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("holds an earlier run") && e.contains("--overwrite"),
        "{e}"
    );
    assert_eq!(
        std::fs::read_to_string(again.join("history.csv")).unwrap(),
        history,
        "refused before any write"
    );
    let overwrite = RunOptions {
        overwrite: true,
        ..from_other
    };
    run(&scene, &overwrite, &AtomicBool::new(false)).unwrap();
    assert_eq!(
        std::fs::read_to_string(again.join("history.csv")).unwrap(),
        history
    );
}

/// A step far beyond the critical one blows the state up: the run stops with an error that
/// says so, instead of writing infinities.
#[test]
fn a_diverging_run_stops_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    common::sphere(dir.path(), "ball", 0.5, 0.05, 300);
    let scene = common::scene_file(
        dir.path(),
        "[run]\ndt = 1e-2\nsteps = 1000\n[contact]\nlaw = \"linear-springs\"\nkn = 1e9\n\
         [[grains]]\nbundle = \"ball.grain\"\nposition = [0.001, 0, 0.485]\n\
         [[walls]]\nkind = \"plane\"\npoint = [0, 0, 0]\nnormal = [0, 0, 1]\n\
         [[walls]]\nkind = \"plane\"\npoint = [0, 0, 0.98]\nnormal = [0, 0, -1]\n",
    );
    let e = run(
        &scene,
        &options(&dir.path().join("run"), None),
        &AtomicBool::new(false),
    )
    .unwrap_err()
    .to_string();
    // The energy check sees it at the first step, before anything is infinite.
    assert!(e.contains("the run became unstable at step 1 "), "{e}");
    assert!(e.contains("lower run.dt or run.safety"), "{e}");
}

/// Found by mutating inputs (issue #14): finite inputs too large for the arithmetic (a velocity
/// of -1e308, a damping of 1e308) filled history.csv with inf and exited 0. The run now stops
/// naming the column that went non-finite, and nothing non-finite is written.
#[test]
fn values_that_overflow_stop_the_run_and_are_never_written() {
    let dir = tempfile::tempdir().unwrap();
    common::sphere(dir.path(), "ball", 0.5, 0.05, 300);
    let cases = [
        (
            "velocity = [-1e308, 0, 0]",
            "",
            "kinetic_translational` at step 0",
        ),
        // The damping force overflows at the first evaluation: the unbalanced-force ratio of
        // the sample measures (inf / inf) is the first column to show it.
        (
            "velocity = [0, 0, -1]",
            "normal_damping = 1e308\n",
            "non-finite `unbalanced` at step 0 ",
        ),
    ];
    for (case, (velocity, damping, wanted)) in cases.into_iter().enumerate() {
        let scene = common::scene_file(
            dir.path(),
            &format!(
                "[run]\ndt = 1e-4\nsteps = 100\n[contact]\nlaw = \"linear-springs\"\nkn = 1e3\n{damping}\
                 [[grains]]\nbundle = \"ball.grain\"\nposition = [0, 0, 0.499]\n{velocity}\n\
                 [[walls]]\nkind = \"plane\"\npoint = [0, 0, 0]\nnormal = [0, 0, 1]\n"
            ),
        );
        let out = dir.path().join(format!("run-{case}"));
        let e = run(&scene, &options(&out, None), &AtomicBool::new(false))
            .unwrap_err()
            .to_string();
        assert!(e.contains(wanted) && e.contains("non-finite"), "{e}");
        let history = std::fs::read_to_string(out.join("history.csv")).unwrap();
        assert!(
            !history.contains("inf") && !history.contains("NaN"),
            "{history}"
        );
    }
}

/// The scene of the issue that found the automatic step unsafe: unit spheres (density 1) in a
/// lattice overlapping by 1 % of the radius, linear springs `k_n = 5e6` per node with normal
/// damping `5e4`. The old automatic step (one undamped node spring, `0.2 sqrt(m_eff / k_n)`)
/// blew the run up to a kinetic energy of 5.8e19 and reported success. Now the step accounts
/// for the contact patch and the damping (crate::timestep), and the run stays bounded by its
/// initial elastic energy; forced to the old step, it stops with the energy-growth error.
#[test]
fn heavy_damping_gets_a_safe_automatic_step_and_an_unsafe_one_is_stopped() {
    let dir = tempfile::tempdir().unwrap();
    common::sphere(dir.path(), "unit", 1.0, 0.1, 600);
    let scene = |dt: &str| {
        common::scene_file(
            dir.path(),
            &format!(
                "[run]\ndt = {dt}\nsafety = 0.2\nsteps = 400\n[output]\nhistory_every = 400\n\
                 [contact]\nlaw = \"linear-springs\"\nkn = 5e6\nnormal_damping = 5e4\n\
                 [[lattices]]\nbundle = \"unit.grain\"\norigin = [0, 0, 0]\ncounts = [3, 3, 3]\n\
                 spacing = [1.99, 1.99, 1.99]\n"
            ),
        )
    };
    let out = dir.path().join("auto");
    let s = run(
        &scene("\"auto\""),
        &options(&out, None),
        &AtomicBool::new(false),
    )
    .unwrap();
    let history = std::fs::read_to_string(out.join("history.csv")).unwrap();
    let rows: Vec<Vec<f64>> = history
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    // Columns: kinetic_translational 2, kinetic_rotational 3, elastic_contact 5.
    let elastic0 = rows[0][5];
    let kinetic_end = rows[1][2] + rows[1][3];
    println!(
        "dt {:.3e}: kinetic energy {kinetic_end:.3e} at the end, initial elastic {elastic0:.3e}, residual {:.2e}",
        s.dt, s.energy_residual
    );
    assert!(elastic0 > 0.0);
    assert!(kinetic_end < elastic0, "{kinetic_end} vs {elastic0}");
    // The old automatic step: m_eff = I / (2 r^2) for a unit sphere (I = 0.4 m, bounding
    // radius r = 1.1), k = k_n.
    let m = 4.0 / 3.0 * std::f64::consts::PI;
    let old = 0.2 * (0.4 * m / (2.0 * 1.1 * 1.1) / 5e6f64).sqrt();
    assert!(s.dt < 0.2 * old, "the new step {} vs the old {old}", s.dt);
    let e = run(
        &scene(&format!("{old:e}")),
        &options(&dir.path().join("old"), None),
        &AtomicBool::new(false),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("the run became unstable at step"), "{e}");
}

/// history.csv follows the deformable grains the scene lists (amplitude, rate, generalized
/// contact and internal forces per mode) next to the energy ledger, and summary.json reports
/// the residual; a listed grain that is not deformable is refused by its key.
#[test]
fn history_follows_the_listed_deformable_grains() {
    let dir = tempfile::tempdir().unwrap();
    common::sphere(dir.path(), "ball", 0.5, 0.1, 100);
    common::deformable_sphere(
        dir.path(),
        "soft",
        0.5,
        0.1,
        100,
        common::TestMode::Dilation,
        [1.0, 100.0, 0.0],
        &[],
    );
    let scene = |listed: &str| {
        common::scene_file(
            dir.path(),
            &format!(
                "[run]\ndt = 1e-3\nsteps = 50\n[output]\nhistory_every = 10\nvtk_every = 50\nmodal_grains = [{listed}]\n\
                 [contact]\nlaw = \"linear-springs\"\nkn = 100\n\
                 [[grains]]\nbundle = \"ball.grain\"\nposition = [5, 0, 0]\n\
                 [[grains]]\nbundle = \"soft.grain\"\nposition = [0, 0, 0]\nmodes = {{ amplitudes = [0.01] }}\n"
            ),
        )
    };
    let out = dir.path().join("run");
    let s = run(&scene("1"), &options(&out, None), &AtomicBool::new(false)).unwrap();
    let history = std::fs::read_to_string(out.join("history.csv")).unwrap();
    let header: Vec<&str> = history.lines().next().unwrap().split(',').collect();
    // The followed grain's columns, then the sample measures.
    let at = header.iter().position(|c| *c == "grain1_eps0").unwrap();
    assert_eq!(
        header[at..at + 5],
        [
            "grain1_eps0",
            "grain1_rate0",
            "grain1_feps0",
            "grain1_fint0",
            "coordination"
        ]
    );
    for column in [
        "kinetic_modal",
        "elastic_modal",
        "work_boundaries",
        "energy_residual",
    ] {
        assert!(header.contains(&column), "{column}");
    }
    let first: Vec<f64> = history
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    // eps = 0.01 at rest: F_int = K eps = 1, no contact force.
    assert_eq!(&first[at..at + 4], &[0.01, 0.0, 0.0, 1.0]);
    let elastic = header.iter().position(|c| *c == "elastic_modal").unwrap();
    assert!((first[elastic] - 0.5 * 100.0 * 1e-4).abs() < 1e-15);
    assert!(s.energy_residual.abs() < 1e-6, "{}", s.energy_residual);
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
    assert!(summary.contains("\"excursions\": []"), "{summary}");
    // The first node cloud: the dilated grain's nodes at (1 + eps) x0, its displacement
    // eps x0, its amplitude eps; the rigid grain's at rest with zeros.
    use vtkio::model::{Attribute, DataSet, PolyDataPiece, Vtk};
    let vtk = Vtk::import(out.join("vtk/nodes_0000000000.vtp")).unwrap();
    let DataSet::PolyData { pieces, .. } = vtk.data else {
        panic!("not poly data")
    };
    let piece: PolyDataPiece = pieces[0].clone().into_loaded_piece_data(None).unwrap();
    let points: Vec<f64> = piece.points.into_vec().unwrap();
    let array = |name: &str| -> Vec<f64> {
        match piece.data.point.iter().find(|a| a.name() == name) {
            Some(Attribute::DataArray(d)) => d.data.clone().into_vec().unwrap(),
            other => panic!("{name}: {other:?}"),
        }
    };
    let (grain, displacement, eps) = (array("grain"), array("displacement"), array("eps0"));
    let soft = grain::GrainBundle::read(&dir.path().join("soft.grain")).unwrap();
    let first_soft = grain.iter().position(|g| *g == 1.0).unwrap();
    let mut checked = 0;
    for (k, g) in grain.iter().enumerate() {
        let p = &points[3 * k..3 * k + 3];
        let u = &displacement[3 * k..3 * k + 3];
        if *g == 0.0 {
            assert_eq!((u, eps[k]), (&[0.0; 3][..], 0.0));
            continue;
        }
        // The shape sorts nodes into clusters: find this one in the bundle by direction.
        let x0 = soft
            .nodes
            .rows()
            .into_iter()
            .map(|r| [r[0], r[1], r[2]])
            .min_by(|a, b| {
                let d = |x: &[f64; 3]| (0..3).map(|c| (p[c] / 1.01 - x[c]).powi(2)).sum::<f64>();
                d(a).total_cmp(&d(b))
            })
            .unwrap();
        // The mode field `Phi(x0) = x0` as the grain keeps it, rounded to f32.
        for c in 0..3 {
            let u0 = 0.01 * f64::from(x0[c] as f32);
            assert!((p[c] - (x0[c] + u0)).abs() < 1e-12, "node {k}");
            assert!((u[c] - u0).abs() < 1e-14, "node {k}");
        }
        assert_eq!(eps[k], 0.01);
        checked += 1;
    }
    assert_eq!(checked, soft.node_count());
    assert!(first_soft > 0);
    let e = run(
        &scene("0"),
        &options(&dir.path().join("bad"), None),
        &AtomicBool::new(false),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("output.modal_grains[0]: grain 0 is not a grain whose modes are on"),
        "{e}"
    );
}

/// A slender grain's automatic step sees the lever arm of each principal axis: a 20 x 1 x 1 box
/// turning about its long axis has a small inertia but a lever of only half its diagonal. The
/// step is `safety sqrt(m_eff / k)` with `m_eff = min(m, I_i / r_i^2) / 2`, the moments from the
/// closed form of a box (`I_x = m (b^2 + c^2) / 12`), `r_i` the farthest node's distance from
/// axis `i` plus a grid spacing; with the bounding radius for every axis the step would be 10 x
/// smaller.
#[test]
fn a_slender_grain_gets_the_step_of_its_own_lever_arms() {
    let dir = tempfile::tempdir().unwrap();
    let h = 0.25;
    common::brick(dir.path(), "rod", [10.0, 0.5, 0.5], h, 800);
    let sim = common::simulation(
        dir.path(),
        "[run]\ndt = \"auto\"\nsafety = 1\nsteps = 1\n[contact]\nlaw = \"linear-springs\"\nkn = 1e4\n\
         [[grains]]\nbundle = \"rod.grain\"\nposition = [0, 0, 0]\n",
    );
    let shape = &sim.world.shapes[0];
    let m = 20.0;
    let moments = [
        m * (1.0 + 1.0) / 12.0,
        m * (400.0 + 1.0) / 12.0,
        m * (400.0 + 1.0) / 12.0,
    ];
    // The farthest nodes are the box's corners.
    let reach = [
        0.5f64.hypot(0.5) + h,
        10.0f64.hypot(0.5) + h,
        10.0f64.hypot(0.5) + h,
    ];
    let m_eff = 0.5
        * (0..3)
            .map(|i| moments[i] / reach[i].powi(2))
            .fold(m, f64::min);
    let (k, _) = sim.parameters.law.stiffness(shape, 0.0, 0.0);
    let expected = (m_eff / k).sqrt();
    println!(
        "dt {:.6e}, expected {expected:.6e}, m_eff {m_eff}",
        sim.parameters.dt
    );
    assert!(
        (sim.parameters.dt / expected - 1.0).abs() < 1e-6,
        "{} vs {expected}",
        sim.parameters.dt
    );
    let r = shape.bounding_radius;
    let old = (0.5 * moments[0] / (r * r) / k).sqrt();
    assert!(
        sim.parameters.dt > 10.0 * old,
        "{} vs the bounding radius' {old}",
        sim.parameters.dt
    );
}

/// Issue #23: a run whose duration and step imply more than `MAX_STEPS` steps (a unit slip) is
/// refused before it starts, naming the key, the step count and the limit; so is `steps` beyond
/// it.
#[test]
fn a_run_of_more_steps_than_a_run_can_take_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = scene(dir.path(), 1, 0);
    let text = std::fs::read_to_string(&path).unwrap();
    for (change, key) in [
        ("dt = 4e-4\nduration = 1e300", "run.duration"),
        ("dt = 4e-4\nsteps = 2000000000000", "run.steps"),
    ] {
        let edited = text.replacen("dt = 4e-4\nsteps = 1000", change, 1);
        assert_ne!(edited, text);
        let path = dir.path().join("long.toml");
        std::fs::write(&path, edited).unwrap();
        let out = dir.path().join(format!("{key}.run"));
        let e = run(&path, &options(&out, None), &AtomicBool::new(false))
            .unwrap_err()
            .to_string();
        assert!(e.contains(key) && e.contains("at most 1e12"), "{e}");
        assert!(
            !out.join("history.csv").exists(),
            "refused before any output"
        );
    }
}

/// Issue #23: a run owns its directory. While one holds it (its lock), another is refused; a
/// fresh run into a directory holding an earlier run is refused naming the files, and with
/// `overwrite` replaces them (one history of one run).
#[test]
fn a_run_owns_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let path = scene(dir.path(), 1, 500);
    let out = dir.path().join("owned.run");
    let go = |overwrite: bool| {
        let o = RunOptions {
            overwrite,
            ..options(&out, None)
        };
        run(&path, &o, &AtomicBool::new(false)).map(|_| ())
    };
    go(false).unwrap();
    assert!(out.join("checkpoint").read_dir().unwrap().count() > 0);
    let e = go(false).unwrap_err().to_string();
    assert!(
        e.contains("holds an earlier run (checkpoint/step_0000000500.json, ")
            && e.contains("history.csv")
            && e.contains("--overwrite")
            && e.contains("--restart"),
        "{e}"
    );
    // Another run holding the directory.
    let held = std::fs::File::open(out.join(".lock")).unwrap();
    held.lock().unwrap();
    let e = go(true).unwrap_err().to_string();
    assert!(
        e.contains("another run is writing to this directory"),
        "{e}"
    );
    held.unlock().unwrap();
    // Replaced: the new run's checkpoints only, and its history has one header. Issue #33: a
    // file the earlier run did not write is never removed (crate::rundir), and a run does not
    // start over one at a name it writes.
    let stranger = out.join("checkpoint/step_0000099999.json");
    std::fs::write(&stranger, "{}").unwrap();
    let e = go(true).unwrap_err().to_string();
    assert!(
        e.contains("step_0000099999.json") && e.contains("never replaces"),
        "{e}"
    );
    std::fs::remove_file(&stranger).unwrap();
    go(true).unwrap();
    let history = std::fs::read_to_string(out.join("history.csv")).unwrap();
    assert_eq!(history.matches("step,").count(), 1, "{history}");
}

/// Issue #23: a restart with a corrected fixed step runs at the scene's step (it silently kept
/// the checkpoint's, though the divergence message says to lower it) and still ends at the
/// scene's duration: 500 steps of 4e-4 restarted at 2e-4 end at t = 0.4 after 1000 more.
#[test]
fn a_restart_takes_the_scenes_corrected_step_and_ends_at_its_duration() {
    let dir = tempfile::tempdir().unwrap();
    let path = scene(dir.path(), 1, 500);
    let text =
        std::fs::read_to_string(&path)
            .unwrap()
            .replacen("steps = 1000", "duration = 0.4", 1);
    std::fs::write(&path, &text).unwrap();
    let out = dir.path().join("run");
    let first = run(&path, &options(&out, None), &AtomicBool::new(false)).unwrap();
    assert_eq!(first.steps, 1000);
    std::fs::write(&path, text.replacen("dt = 4e-4", "dt = 2e-4", 1)).unwrap();
    let restarted = run(
        &path,
        &options(&out, Some(out.join("checkpoint/step_0000000500.json"))),
        &AtomicBool::new(false),
    )
    .unwrap();
    assert_eq!(restarted.dt, 2e-4);
    assert_eq!(restarted.steps, 1500);
    assert!((restarted.time - 0.4).abs() < 1e-9, "{}", restarted.time);
}

/// Issue #23: a checkpoint whose state was edited ran as written. The restored grains are
/// checked as a scene's are (a centre behind a wall, beyond floating point's reach) and their
/// orientations must be rotations; the untouched checkpoint restarts.
#[test]
fn an_edited_checkpoint_is_checked_like_a_scene() {
    let dir = tempfile::tempdir().unwrap();
    let path = scene(dir.path(), 1, 500);
    let out = dir.path().join("run");
    run(&path, &options(&out, None), &AtomicBool::new(false)).unwrap();
    let checkpoint = out.join("checkpoint/step_0000000500.json");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&checkpoint).unwrap()).unwrap();
    let edited = dir.path().join("edited.json");
    let restart = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut j = json.clone();
        edit(&mut j["state"]["bodies"][3]);
        std::fs::write(&edited, j.to_string()).unwrap();
        run(
            &path,
            &options(&out, Some(edited.clone())),
            &AtomicBool::new(false),
        )
        .map(|_| ())
        .unwrap_err()
        .to_string()
    };
    // Below the floor (the wall z = 0, inside z > 0).
    let e = restart(&|b| b["position"] = serde_json::json!([0.0, 0.0, -0.3]));
    assert!(
        e.contains("edited.json")
            && e.contains("state.bodies[3].position: a grain's centre is 3e-1 behind walls[0]"),
        "{e}"
    );
    let e = restart(&|b| b["position"] = serde_json::json!([0.0, 0.0, 1e300]));
    assert!(
        e.contains("state.bodies[3].position: the grain would sit at"),
        "{e}"
    );
    let e = restart(&|b| b["orientation"] = serde_json::json!([0.0, 0.0, 0.0, 2.0]));
    assert!(
        e.contains("state.bodies[3].orientation: a quaternion of norm 2, not 1"),
        "{e}"
    );
    run(
        &path,
        &options(&out, Some(checkpoint)),
        &AtomicBool::new(false),
    )
    .unwrap();
}

/// A grain rigid in a checkpoint (modes off) and deformable in the restarted scene starts its
/// modes at rest in its reference shape (a rigid preparation continued deformable,
/// docs/experiments.md section 6), with the modes' critical step: a grain held against a wall
/// that presses its pole, restarted deformable after 200 rigid steps, ends with the amplitudes,
/// rates and step of the same grain run deformable from the start (nothing moves in the rigid
/// steps, so the two start from the same state), to the bit. The reverse, a deformable grain
/// made rigid, would lose its deformation and is refused naming the grain's modes.
#[test]
fn a_rigid_checkpoint_restarts_deformable_with_its_modes_at_rest() {
    let dir = tempfile::tempdir().unwrap();
    common::deformable_sphere(
        dir.path(),
        "flat",
        1.0,
        0.1,
        1500,
        common::TestMode::Flatten,
        [0.5, 2000.0, 5.0],
        &[],
    );
    let scene = |name: &str, modes: &str| {
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!(
                "[run]\ndt = \"auto\"\nsteps = 200\nstage = true\n[output]\nhistory_every = 50\nvtk_every = 0\ncheckpoint_every = 200\n\
                 [contact]\nlaw = \"linear-springs\"\nkn = 1e3\n\
                 [[grains]]\nbundle = \"flat.grain\"\nposition = [0, 0, 0]\nhold = [\"x\", \"y\", \"z\", \"rotation\"]\n\
                 modes = {modes}\n\
                 [[walls]]\nkind = \"plane\"\npoint = [0, 0, 0.97]\nnormal = [0, 0, -1]\n"
            ),
        )
        .unwrap();
        path
    };
    let rigid = scene("rigid", "{ active = false }");
    let deformable = scene("deformable", "{ levelset = \"semi-lagrangian\" }");
    let go = |path: &Path, out: &str, restart: Option<std::path::PathBuf>| {
        run(
            path,
            &options(&dir.path().join(out), restart),
            &AtomicBool::new(false),
        )
        .map_err(|e| e.to_string())
    };
    let body = |out: &str, step: u64| -> serde_json::Value {
        let c: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(
                dir.path()
                    .join(format!("{out}/checkpoint/step_{step:010}.json")),
            )
            .unwrap(),
        )
        .unwrap();
        c["state"]["bodies"][0].clone()
    };
    let r = go(&rigid, "rigid.run", None).unwrap();
    let fresh = go(&deformable, "fresh.run", None).unwrap();
    let restarted = go(
        &deformable,
        "restarted.run",
        Some(dir.path().join("rigid.run")),
    )
    .unwrap();
    assert!(r.node_contacts > 0);
    // The modes' step, not the rigid checkpoint's.
    assert!(fresh.dt < r.dt, "{} {}", fresh.dt, r.dt);
    assert_eq!(restarted.dt.to_bits(), fresh.dt.to_bits());
    let (a, b) = (body("fresh.run", 200), body("restarted.run", 400));
    assert!(a["modes"]["eps"][0].as_f64().unwrap().abs() > 1e-6, "{a}");
    assert_eq!(a["modes"], b["modes"]);
    assert_eq!(a["position"], b["position"]);

    let e = go(&rigid, "back.run", Some(dir.path().join("fresh.run"))).unwrap_err();
    assert!(
        e.contains("state.bodies[0].modes") && e.contains("its deformation would be lost"),
        "{e}"
    );
}
