//! `cargo bench -p levelset-bake`: exact signed distance of an icosphere of 20,480 triangles on a
//! 128^3 grid, full grid and 3-cell narrow band, and, when the Python package `pysdf` is
//! installed, the same query through pysdf in the same run (it needs Debian's libeigen3-dev to
//! build: `apt-get install libeigen3-dev && pip install pysdf`).
//!
//! pysdf is given the same triangles and the same grid points (as a 2M x 3 float32 array: its
//! API); its own internal timing of the query is used, excluding Python start-up and the
//! transfer of the inputs. Both use all cores.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Instant;

use grain::GridSpec;
use levelset_bake::{DistanceField, Extent, Primitive, Signing};

fn main() {
    let radius = 1.0;
    // Frequency 32 geodesic sphere: 20 x 32^2 = 20,480 triangles.
    let mesh = Primitive::Sphere { radius }.surface_mesh(1.1 * radius / 32.0);
    assert_eq!(mesh.triangles.len(), 20_480);
    let n = 128;
    let spacing = 2.4 * radius / (n - 1) as f64;
    let spec = GridSpec {
        origin: [-1.2 * radius; 3],
        spacing,
        dims: [n; 3],
    };
    let threads = rayon::current_num_threads();
    println!(
        "icosphere of {} triangles, grid {n}^3 = {} points, {threads} threads",
        mesh.triangles.len(),
        spec.len()
    );

    let start = Instant::now();
    let field = DistanceField::new(&mesh, Signing::PseudoNormal);
    let build = start.elapsed().as_secs_f64();
    let time = |extent: Extent| {
        // Best of 3.
        (0..3)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(field.grid(&spec, extent));
                t.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    let full = time(Extent::Full);
    let band = time(Extent::NarrowBand { cells: 3.0 });
    println!("hierarchy build                {:>9.3} s", build);
    println!(
        "levelset-bake full exact grid  {:>9.3} s  ({:.0} ns/point)",
        full,
        full * 1e9 / spec.len() as f64
    );
    println!(
        "levelset-bake 3-cell band      {:>9.3} s  ({:.0} ns/point)",
        band,
        band * 1e9 / spec.len() as f64
    );

    match pysdf(&mesh, &spec) {
        Some(t) => {
            println!("pysdf (same points)            {:>9.3} s", t);
            println!(
                "full grid: {:.2} x pysdf's time; narrow band: {:.2} x",
                full / t,
                band / t
            );
        }
        None => println!("pysdf is not installed: no side-by-side figure (see the bench's docs)"),
    }
}

/// Times pysdf's SDF query on the same triangles and grid points; `None` when it is missing.
fn pysdf(mesh: &levelset_bake::TriangleMesh, spec: &GridSpec) -> Option<f64> {
    let script = r#"
import sys, time, numpy as np
from pysdf import SDF
data = sys.stdin.buffer.read()
nv, nf, n0, n1, n2 = np.frombuffer(data[:40], dtype=np.int64)
off = 40
v = np.frombuffer(data[off:off + 24 * nv], dtype=np.float64).reshape(-1, 3); off += 24 * nv
f = np.frombuffer(data[off:off + 12 * nf], dtype=np.uint32).reshape(-1, 3); off += 12 * nf
origin = np.frombuffer(data[off:off + 24], dtype=np.float64); off += 24
h = np.frombuffer(data[off:off + 8], dtype=np.float64)[0]
i, j, k = np.meshgrid(np.arange(n0), np.arange(n1), np.arange(n2), indexing="ij")
pts = (origin + h * np.stack([i, j, k], axis=-1).reshape(-1, 3)).astype(np.float32)
sdf = SDF(v.astype(np.float32), f)
best = 1e9
for _ in range(3):
    t = time.perf_counter(); sdf(pts); best = min(best, time.perf_counter() - t)
print(best)
"#;
    let probe = Command::new("python3")
        .args(["-c", "import pysdf"])
        .stderr(Stdio::null())
        .status()
        .ok()?;
    if !probe.success() {
        return None;
    }
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    let mut bytes = Vec::new();
    for x in [
        mesh.vertices.len(),
        mesh.triangles.len(),
        spec.dims[0],
        spec.dims[1],
        spec.dims[2],
    ] {
        bytes.extend((x as i64).to_le_bytes());
    }
    for v in &mesh.vertices {
        bytes.extend(v.iter().flat_map(|c| c.to_le_bytes()));
    }
    for t in &mesh.triangles {
        bytes.extend(t.iter().flat_map(|c| c.to_le_bytes()));
    }
    bytes.extend(spec.origin.iter().flat_map(|c| c.to_le_bytes()));
    bytes.extend(spec.spacing.to_le_bytes());
    child.stdin.take()?.write_all(&bytes).ok()?;
    let out = child.wait_with_output().ok()?;
    String::from_utf8(out.stdout).ok()?.trim().parse().ok()
}
