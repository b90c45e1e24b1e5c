//! `cargo bench -p dem-run --bench packing` (or `cargo xtask bench dem`): generating random
//! packings (`[[packings]]`, docs/experiments.md section 1) of 10^4 and 10^5 spheres (radius 1,
//! 200 surface nodes) in three size classes (scales 0.8, 1, 1.25 by count), in boxes sized for
//! the same solid fraction, 0.2. Reported: the time of the scene's build (the packing, then the
//! first force evaluation, which finds no contact) and how it grows from 10^4 to 10^5 (10 is
//! linear). Random sequential addition costs a constant per attempt at a fixed solid fraction
//! (hash-grid neighbours, node tests on a few of them), so the build should grow linearly.

use std::time::Instant;

use dem_run::Scene;

mod common;

const SOLID_FRACTION: f64 = 0.2;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    common::bake_ball(dir.path());
    let sizes = [0.8f64, 1.0, 1.25];
    // Mean grain volume over the classes (equal counts).
    let volume = common::mean_volume(&sizes);
    let mut seconds = Vec::new();
    for count in [10_000usize, 100_000] {
        let side = (count as f64 * volume / SOLID_FRACTION).cbrt();
        let text = format!(
            r#"
[run]
dt = 1e-4
steps = 1
[contact]
law = "linear-springs"
kn = 1e5
[[packings]]
seed = 1
count = {count}
region = {{ kind = "box", min = [0, 0, 0], max = [{side}, {side}, {side}] }}
bundles = [{{ bundle = "ball.grain" }}]
sizes = [[0.8, 1], [1.0, 1], [1.25, 1]]
"#
        );
        let path = dir.path().join("scene.toml");
        std::fs::write(&path, text).unwrap();
        let scene = Scene::read(&path).unwrap();
        let start = Instant::now();
        let dem_run::build::Built {
            sim,
            packings: packed,
            ..
        } = dem_run::build::with_packings(&scene, &path).unwrap();
        let t = start.elapsed().as_secs_f64();
        seconds.push(t);
        println!(
            "{count} spheres in a box of side {side:.1}: built in {t:.2} s ({:.1} us per grain), {} attempts ({:.2} per grain), solid fraction {:.3}, {} contacts",
            t * 1e6 / count as f64,
            packed[0].attempts,
            packed[0].attempts as f64 / count as f64,
            packed[0].solid_fraction,
            sim.last.contacts
        );
    }
    println!(
        "10^5 / 10^4 build time: {:.1} (10 is linear)",
        seconds[1] / seconds[0]
    );
}
