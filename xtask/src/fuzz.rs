//! `cargo xtask fuzz [TARGET...] [--time S] [--runs N] [--seed N]`: a fuzz campaign against the
//! readers of every input format (docs/hardening.md).
//!
//! Coverage-guided fuzzing (cargo-fuzz, libFuzzer) needs a nightly toolchain, which this project
//! does not use. The campaign is structured mutation instead: each target has seed files (shipped
//! data, or small files written here), and proptest draws a few edits per mutant (bit flips,
//! inserted or deleted bytes, duplicated or deleted lines, a number token replaced by an extreme
//! value such as `1e308`, `NaN`, `4294967296` or `-1`, a truncation), from a fixed seed, so a
//! campaign is reproducible. Each mutant is written to `target/fuzz/TARGET/current.EXT` and read
//! through the library, as the tools read their inputs. A target passes a mutant when the reader
//! returns a value whose numbers are finite, or an error that names the file. Failures:
//! - a panic (caught, the mutant saved as `crash-N.EXT` with the message);
//! - a non-finite number in a value the reader accepted, or an error that does not name the file;
//! - a hang (one read longer than `HANG` seconds: the process exits, `current.EXT` is the input);
//! - an abort (an allocation failure kills the process: `cargo xtask fuzz` runs each target in a
//!   child process, and reports its exit with `current.EXT`, the mutant that killed it).
//!
//! Found cases become regression tests next to the reader they broke.

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// The longest one read may take before the campaign calls it a hang.
const HANG: Duration = Duration::from_secs(20);

/// Values a number token is replaced with: extremes, overflows, non-numbers.
const EXTREMES: [&str; 14] = [
    "0",
    "-1",
    "1e308",
    "-1e308",
    "1e-320",
    "NaN",
    "inf",
    "4294967296",
    "18446744073709551616",
    "3000",
    "-0",
    "",
    "x",
    "1e999",
];

/// One edit of a seed file.
#[derive(Debug, Clone)]
enum Edit {
    Flip(prop::sample::Index, u8),
    Insert(prop::sample::Index, Vec<u8>),
    Delete(prop::sample::Index, usize),
    DuplicateLine(prop::sample::Index),
    DeleteLine(prop::sample::Index),
    Number(prop::sample::Index, prop::sample::Index),
    Truncate(prop::sample::Index),
}

fn edit() -> impl Strategy<Value = Edit> {
    let index = any::<prop::sample::Index>;
    prop_oneof![
        (index(), 0u8..8).prop_map(|(i, b)| Edit::Flip(i, b)),
        (index(), prop::collection::vec(any::<u8>(), 1..8)).prop_map(|(i, b)| Edit::Insert(i, b)),
        (index(), 1usize..64).prop_map(|(i, n)| Edit::Delete(i, n)),
        index().prop_map(Edit::DuplicateLine),
        index().prop_map(Edit::DeleteLine),
        (index(), index()).prop_map(|(i, v)| Edit::Number(i, v)),
        index().prop_map(Edit::Truncate),
    ]
}

/// The seed with the edits applied in turn.
fn mutate(seed: &[u8], edits: &[Edit]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for e in edits {
        let at = |i: &prop::sample::Index, len: usize| if len == 0 { 0 } else { i.index(len) };
        match e {
            Edit::Flip(i, bit) if !b.is_empty() => {
                let k = at(i, b.len());
                b[k] ^= 1 << bit;
            }
            Edit::Insert(i, bytes) => {
                let k = at(i, b.len() + 1);
                b.splice(k..k, bytes.iter().copied());
            }
            Edit::Delete(i, n) if !b.is_empty() => {
                let k = at(i, b.len());
                b.drain(k..(k + n).min(b.len()));
            }
            Edit::DuplicateLine(i) | Edit::DeleteLine(i) => {
                let starts: Vec<usize> = std::iter::once(0)
                    .chain(
                        b.iter()
                            .enumerate()
                            .filter(|(_, c)| **c == b'\n')
                            .map(|(k, _)| k + 1),
                    )
                    .filter(|&k| k < b.len())
                    .collect();
                if starts.is_empty() {
                    continue;
                }
                let s = starts[at(i, starts.len())];
                let end = b[s..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |p| s + p + 1);
                let line: Vec<u8> = b[s..end].to_vec();
                if matches!(e, Edit::DuplicateLine(_)) {
                    b.splice(end..end, line);
                } else {
                    b.drain(s..end);
                }
            }
            Edit::Number(i, v) => {
                let numbers = number_tokens(&b);
                if numbers.is_empty() {
                    continue;
                }
                let (s, end) = numbers[at(i, numbers.len())];
                let value = EXTREMES[at(v, EXTREMES.len())];
                b.splice(s..end, value.bytes());
            }
            Edit::Truncate(i) => {
                let k = at(i, b.len());
                b.truncate(k);
            }
            _ => {}
        }
    }
    b
}

/// Byte ranges of the number-like tokens of a text.
fn number_tokens(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut k = 0;
    while k < b.len() {
        let starts =
            b[k].is_ascii_digit() || (b[k] == b'-' && b.get(k + 1).is_some_and(u8::is_ascii_digit));
        if starts && (k == 0 || !b[k - 1].is_ascii_alphanumeric()) {
            let s = k;
            k += 1;
            while k < b.len()
                && (b[k].is_ascii_digit() || matches!(b[k], b'.' | b'e' | b'E' | b'+' | b'-'))
            {
                k += 1;
            }
            out.push((s, k));
        } else {
            k += 1;
        }
    }
    out
}

/// A reader under test: reads the file at the path, and checks what it returned.
type Read = fn(&Path) -> std::result::Result<Checked, String>;

/// What a read returned: every number it holds finite, or the first that is not.
type Checked = std::result::Result<(), String>;

/// `Ok` if every value is finite, else which one is not.
fn finite<'a>(what: &str, values: impl IntoIterator<Item = &'a f64>) -> Checked {
    match values.into_iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(i) => Err(format!("{what}[{i}] is not finite")),
    }
}

/// A format: its name, file extension, seed files and reader.
pub struct Target {
    /// Name on the command line.
    pub name: &'static str,
    ext: &'static str,
    /// The seed files, written into `dir` if they are made here.
    seeds: fn(root: &Path, dir: &Path) -> Result<Vec<Vec<u8>>>,
    read: Read,
}

/// The target called `name`, or an error listing them all.
pub fn target(name: &str) -> Result<Target> {
    let all = targets();
    let known: Vec<&str> = all.iter().map(|t| t.name).collect();
    let list = known.join(", ");
    all.into_iter()
        .find(|t| t.name == name)
        .with_context(|| format!("no fuzz target `{name}` (targets: {list})"))
}

/// Every target.
pub fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "deck",
            ext: "inp",
            seeds: |root, _| shipped(root, &["data/fem/ellipsoid/ellipsoid.inp"]),
            read: |p| {
                let deck = fem::Deck::read(p).map_err(|e| e.to_string())?;
                Ok(finite("node", deck.node_coords.iter().flatten())
                    .and_then(|()| deck.part(None).map(|_| ()).or(Ok(()))))
            },
        },
        Target {
            name: "frd",
            ext: "frd",
            seeds: |root, _| shipped(root, &["data/fem/beam/beam.frd"]),
            read: |p| {
                let frd = fem::read_frd(p).map_err(|e| e.to_string())?;
                Ok(finite("node", frd.part.mesh.nodes.iter()).and_then(|()| {
                    frd.displacements
                        .iter()
                        .try_for_each(|d| finite("displacement", d.values.iter().flatten()))
                }))
            },
        },
        Target {
            name: "rpt",
            ext: "rpt",
            seeds: |root, _| shipped(root, &["data/fem/ellipsoid/rpt/increment-3.rpt"]),
            read: nodal_table,
        },
        Target {
            name: "csv",
            ext: "csv",
            seeds: |_, _| {
                Ok(vec![
                    b"# displacements\nnode,u1,u2,u3\n1,0.1,-2e-3,0\n2,1,2,3\n7,-0.5,0.25,1e-9\n"
                        .to_vec(),
                ])
            },
            read: nodal_table,
        },
        Target {
            name: "scalars",
            ext: "csv",
            seeds: |root, _| shipped(root, &["data/fem/ellipsoid/ellipsoid_scalars.csv"]),
            read: |p| {
                // The shipped seed's labels are the increments 1 to 10 of one .frd.
                let ids: Vec<String> = (1..=10)
                    .map(|n| format!("run.frd increment {n} step time {n}.0"))
                    .collect();
                let s =
                    fem::read_scalars(p, &ids, fem::Pairing::Label).map_err(|e| e.to_string())?;
                Ok(s.boundaries
                    .iter()
                    .try_for_each(|(_, r, d)| finite("boundary", r.iter().chain(d)))
                    .and_then(|()| finite("strain_energy", s.strain_energy.iter().flatten())))
            },
        },
        Target {
            name: "vtu",
            ext: "vtu",
            seeds: |root, _| shipped(root, &["data/fem/ellipsoid/vtk/ellipsoid.01.vtu"]),
            read: |p| {
                let field = fem::read_vtu_field(p, "U").map(|(_, v)| v);
                let points = fem::read_vtu_points_field(p, "U").map_err(|e| e.to_string())?;
                Ok(finite("point", &points.0)
                    .and_then(|()| finite("U", points.1.iter().flatten()))
                    .and_then(|()| field.map_or(Ok(()), |v| finite("U", v.iter().flatten()))))
            },
        },
        Target {
            name: "vtk",
            ext: "vtk",
            seeds: |_, _| Ok(vec![LEGACY_VTK.as_bytes().to_vec()]),
            read: |p| {
                let (mesh, v) = fem::read_vtu_field(p, "U").map_err(|e| e.to_string())?;
                Ok(
                    finite("node", mesh.nodes.iter())
                        .and_then(|()| finite("U", v.iter().flatten())),
                )
            },
        },
        Target {
            name: "stl",
            ext: "stl",
            seeds: |_, _| Ok(vec![ascii_stl(), binary_stl()]),
            read: surface,
        },
        Target {
            name: "obj",
            ext: "obj",
            seeds: |_, _| Ok(vec![OBJ.as_bytes().to_vec()]),
            read: surface,
        },
        Target {
            name: "vtp",
            ext: "vtp",
            seeds: |_, _| Ok(vec![VTP.as_bytes().to_vec()]),
            read: surface,
        },
        Target {
            name: "npy",
            ext: "npy",
            seeds: |_, dir| {
                let image = ndarray::Array3::from_shape_fn((6, 5, 4), |(i, j, k)| {
                    u8::from((1..5).contains(&i) && (1..4).contains(&j) && (1..3).contains(&k))
                });
                let path = dir.join("seed.npy");
                ndarray_npy::write_npy(&path, &image)?;
                Ok(vec![std::fs::read(&path)?])
            },
            read: |p| {
                use levelset_bake::{Segmentation, VoxelImage};
                VoxelImage::read(p, 1.0, Segmentation::Threshold(1.0))
                    .map(|_| Ok(()))
                    .map_err(|e| e.to_string())
            },
        },
        Target {
            name: "pvd",
            ext: "pvd",
            seeds: |_, _| Ok(vec![PVD.as_bytes().to_vec()]),
            read: |p| {
                let entries = grain::vtk::read_pvd(p).map_err(|e| e.to_string())?;
                Ok(finite("time", entries.iter().map(|e| &e.time)))
            },
        },
        Target {
            name: "scene",
            ext: "toml",
            seeds: |_, dir| {
                sphere_bundle(dir, "ball.grain")?;
                Ok(vec![SCENE.as_bytes().to_vec()])
            },
            read: |p| {
                let scene = dem_run::Scene::read(p).map_err(|e| e.to_string())?;
                let mut sim = dem_run::build::from_scene(&scene, p).map_err(|e| e.to_string())?;
                // Two steps: a scene that loads can still break the first steps. A state gone
                // non-finite is what `dem-run` stops on with an error (RunError::Diverged).
                sim.step(false);
                sim.step(false);
                if !sim.is_finite() {
                    return Err(format!("{}: diverged", p.display()));
                }
                Ok(finite(
                    "position",
                    sim.world.bodies.iter().flat_map(|b| b.position.iter()),
                ))
            },
        },
        Target {
            name: "replay",
            ext: "csv",
            seeds: |_, _| Ok(vec![REPLAY.as_bytes().to_vec()]),
            read: |p| {
                use jaeger::replay::{Model, read_movements, replay};
                let params = jaeger::ContactParams::new(1e-3, 1e-3, 29e9, 0.15, 0.5)
                    .map_err(|e| e.to_string())?;
                let movements = read_movements(p).map_err(|e| e.to_string())?;
                let name = p.display().to_string();
                for model in [Model::Jaeger, Model::Baseline] {
                    let csv =
                        replay(&params, model, &movements, &name).map_err(|e| e.to_string())?;
                    let numbers = csv.lines().skip(1).flat_map(|l| l.split(','));
                    if let Some(bad) = numbers
                        .map(|x| x.parse::<f64>())
                        .find(|x| !x.as_ref().is_ok_and(|v| v.is_finite()))
                    {
                        return Ok(Err(format!("a replayed value {bad:?}")));
                    }
                }
                Ok(Ok(()))
            },
        },
        Target {
            name: "grain",
            ext: "grain/grain.json",
            seeds: |_, dir| {
                sphere_bundle(dir, "current.grain")?;
                Ok(vec![std::fs::read(dir.join("current.grain/grain.json"))?])
            },
            read: |p| {
                let g = grain::GrainBundle::read(p.parent().expect("in its bundle"))
                    .map_err(|e| e.to_string())?;
                Ok(finite("node", g.nodes.iter())
                    .and_then(|()| finite("mass", [&g.properties.mass])))
            },
        },
        Target {
            name: "modes",
            ext: "modes/modes.json",
            seeds: |_, dir| {
                modes_bundle(&dir.join("current.modes"))?;
                Ok(vec![std::fs::read(dir.join("current.modes/modes.json"))?])
            },
            read: |p| {
                let m = grain::ModesBundle::read(p.parent().expect("in its bundle"))
                    .map_err(|e| e.to_string())?;
                Ok(finite("phi", m.phi.iter())
                    .and_then(|()| finite("stiffness", m.stiffness.iter())))
            },
        },
    ]
}

fn shipped(root: &Path, files: &[&str]) -> Result<Vec<Vec<u8>>> {
    files
        .iter()
        .map(|f| std::fs::read(root.join(f)).with_context(|| format!("seed {f}")))
        .collect()
}

fn nodal_table(p: &Path) -> std::result::Result<Checked, String> {
    let t = fem::read_nodal_table(p).map_err(|e| e.to_string())?;
    Ok(finite("value", t.values.iter().flatten()))
}

fn surface(p: &Path) -> std::result::Result<Checked, String> {
    let mesh = levelset_bake::input::read_surface(p, None).map_err(|e| e.to_string())?;
    Ok(finite(
        "vertex",
        mesh.vertices.iter().flat_map(|v| v.iter()),
    ))
}

/// A small sphere bundle `dir/name`, for the scene and grain targets' seeds.
fn sphere_bundle(dir: &Path, name: &str) -> Result<()> {
    use levelset_bake::{BakeOptions, Extent, NodeChoice, OpenMesh, Primitive, bake_primitive};
    let options = BakeOptions {
        spacing: 1.0,
        pad_cells: 2,
        extent: Extent::Full,
        nodes: NodeChoice::Count(100),
        density: 1.0,
        units: "fuzz".into(),
        open: OpenMesh::Refuse,
        allow_unresolved: false,
    };
    bake_primitive(&Primitive::Sphere { radius: 10.0 }, &options)?
        .bundle
        .write(&dir.join(name))?;
    Ok(())
}

/// A small modes bundle at `path`: one dilation mode on a box of Tet4, linear internal force.
fn modes_bundle(path: &Path) -> Result<()> {
    use grain::{
        ElementType, InternalForce, Material, ModeConstruction, ModesBundle, ModesInfo,
        Normalization, Reconstruction, ReconstructionError, Snapshot,
    };
    let mesh = fem::box_mesh(ElementType::Tet4, [0.0; 3], [1.0, 2.0, 3.0], [2, 2, 2]);
    let n = mesh.nodes.nrows();
    let phi = ndarray::Array3::from_shape_fn((1, n, 3), |(_, i, c)| mesh.nodes[[i, c]] / 3.0);
    let info = ModesInfo {
        units: "fuzz".into(),
        material: Material {
            youngs_modulus: 1e3,
            poisson_ratio: 0.3,
            density: 1.0,
        },
        sources: Vec::new(),
        construction: ModeConstruction::Single {
            snapshot: "s1".into(),
        },
        normalization: Normalization::UnitMax,
        energy_orthogonalized: false,
        snapshots: vec![Snapshot {
            id: "s1".into(),
            holdout: false,
        }],
        reconstruction: Some(Reconstruction {
            train: ReconstructionError {
                displacement: 1e-3,
                strain_energy: Some(2e-3),
            },
            holdout: None,
        }),
        fit: None,
        mirror_planes: String::new(),
    };
    ModesBundle {
        info,
        mesh,
        phi,
        mass: ndarray::Array2::from_elem((1, 1), 2.0),
        stiffness: ndarray::Array2::from_elem((1, 1), 5.0),
        coords: ndarray::Array2::from_elem((1, 1), 0.1),
        internal_force: InternalForce::Linear,
        path: None,
        flexibility: None,
    }
    .write(path)?;
    Ok(())
}

fn cube() -> levelset_bake::TriangleMesh {
    levelset_bake::Primitive::Cuboid { half: [0.5; 3] }.surface_mesh(1.0)
}

fn ascii_stl() -> Vec<u8> {
    let mesh = cube();
    let mut s = String::from("solid cube\n");
    for f in 0..mesh.triangles.len() {
        s.push_str("facet normal 0 0 0\nouter loop\n");
        for p in mesh.corners(f) {
            s.push_str(&format!("vertex {} {} {}\n", p.x, p.y, p.z));
        }
        s.push_str("endloop\nendfacet\n");
    }
    (s + "endsolid cube\n").into_bytes()
}

fn binary_stl() -> Vec<u8> {
    let mesh = cube();
    let mut b = vec![0u8; 80];
    b.extend((mesh.triangles.len() as u32).to_le_bytes());
    for f in 0..mesh.triangles.len() {
        b.extend([0u8; 12]);
        for p in mesh.corners(f) {
            b.extend(p.iter().flat_map(|&x| (x as f32).to_le_bytes()));
        }
        b.extend([0u8; 2]);
    }
    b
}

const OBJ: &str =
    "# a tetrahedron\nv 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n";

const VTP: &str = r#"<?xml version="1.0"?>
<VTKFile type="PolyData" version="1.0" byte_order="LittleEndian" header_type="UInt64">
<PolyData><Piece NumberOfPoints="4" NumberOfPolys="4">
<Points><DataArray type="Float64" NumberOfComponents="3" format="ascii">0 0 0 1 0 0 0 1 0 0 0 1</DataArray></Points>
<Polys>
<DataArray type="Int64" Name="connectivity" format="ascii">0 2 1 0 1 3 0 3 2 1 2 3</DataArray>
<DataArray type="Int64" Name="offsets" format="ascii">3 6 9 12</DataArray>
</Polys></Piece></PolyData></VTKFile>
"#;

const LEGACY_VTK: &str = "# vtk DataFile Version 3.0\none tetra\nASCII\nDATASET UNSTRUCTURED_GRID\nPOINTS 4 double\n0 0 0\n1 0 0\n0 1 0\n0 0 1\nCELLS 1 5\n4 0 1 2 3\nCELL_TYPES 1\n10\nPOINT_DATA 4\nVECTORS U double\n0.1 0 0\n0 0.2 0\n0 0 0.3\n-1e-3 2e-3 0\n";

const SCENE: &str = r#"[run]
dt = 1e-3
steps = 10
gravity = [0, 0, -9.81]
threads = 1
[output]
history_every = 5
vtk_every = 0
[contact]
law = "linear-springs"
kn = 1e5
ks = 5e4
friction = 0.5
normal_damping = 10.0
local_damping = 0.1
[[grains]]
bundle = "ball.grain"
position = [0, 0, 12]
velocity = [0.1, 0, -1]
angular_velocity = [0, 0.5, 0]
[[grains]]
bundle = "ball.grain"
position = [25, 0, 12]
motion = { table = [[0, 0, 0, 0], [1, 0, 0, -0.1]] }
[[lattices]]
bundle = "ball.grain"
origin = [-30, -30, 40]
counts = [2, 2, 1]
spacing = [22, 22, 22]
hold = ["rotation"]
[[walls]]
kind = "plane"
point = [0, 0, 0]
normal = [0, 0, 1]
motion = { velocity = [0, 0, 0.01] }
[[walls]]
kind = "cylinder"
point = [0, 0, 0]
axis = [0, 0, 1]
radius = 80
"#;

const REPLAY: &str = "# loading, sliding, unloading\ndelta,ux,uy\n1e-6,0,0\n2e-6,1e-8,0\n3e-6,3e-7,1e-8\n2.5e-6,2e-7,-1e-7\n1e-6,0,0\n";

const PVD: &str = r#"<?xml version="1.0"?>
<VTKFile type="Collection" version="0.1">
<Collection>
<DataSet timestep="0" file="vtk/nodes_0.vtp"/>
<DataSet timestep="0.5" file="vtk/nodes_1.vtp"/>
</Collection>
</VTKFile>
"#;

/// What a campaign found for one target.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Mutants read.
    pub runs: u64,
    /// Of those, accepted (the rest refused with an error).
    pub accepted: u64,
    /// Failures found.
    pub failed: u64,
    /// The first `SAVED` failures: the saved file and what went wrong.
    pub failures: Vec<(PathBuf, String)>,
    /// The refusals' messages by shape (see `shape`): how many, and the first one met.
    pub messages: std::collections::HashMap<String, (u64, String)>,
}

/// Distinct message shapes kept per campaign (a reader that puts a mutated byte in its message
/// could otherwise fill the memory).
const SHAPES: usize = 4096;

/// A refusal's message with the mutant's path and every run of digits taken out, so that the
/// messages of one check count together.
fn shape(message: &str, path: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut digits = false;
    for c in message.replace(path, "FILE").chars() {
        if c.is_ascii_digit() {
            if !digits {
                out.push('#');
            }
            digits = true;
        } else {
            out.push(c);
            digits = false;
        }
    }
    out
}

impl Outcome {
    /// The `n` most frequent message shapes: count and an example, most frequent first.
    pub fn common_messages(&self, n: usize) -> Vec<(u64, &str)> {
        let mut all: Vec<(u64, &str)> = self
            .messages
            .values()
            .map(|(c, m)| (*c, m.as_str()))
            .collect();
        all.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        all.truncate(n);
        all
    }
}

/// How one read of a mutant went.
enum Verdict {
    /// A value whose numbers are all finite.
    Accepted,
    /// An error that names the file.
    Refused(String),
    /// A failure of the reader (a panic is caught apart).
    Failed(String),
}

/// Judges a reader's answer for the mutant at `name` (its path as text).
fn verdict(read: std::result::Result<Checked, String>, name: &str) -> Verdict {
    match read {
        Ok(Ok(())) => Verdict::Accepted,
        Ok(Err(value)) => Verdict::Failed(format!("accepted a non-finite value: {value}")),
        Err(message) if !message.contains(name) && !message.contains("current.") => {
            Verdict::Failed(format!("an error that does not name the file: {message}"))
        }
        Err(message) => Verdict::Refused(message),
    }
}

/// One input of a coverage-guided run (`fuzz/`, cargo-fuzz on a nightly toolchain): `data`
/// read as target `name`'s format, judged as a campaign judges a mutant. A failure panics, which
/// libFuzzer reports with the input; a reader's own panic or abort goes to libFuzzer as it is.
pub fn libfuzzer_one(name: &str, data: &[u8]) {
    use std::sync::OnceLock;
    static SET_UP: OnceLock<(Target, PathBuf)> = OnceLock::new();
    let (target, current) = SET_UP.get_or_init(|| {
        let target = target(name).unwrap_or_else(|e| panic!("{e}"));
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("xtask sits in the workspace");
        // One directory per process: libFuzzer's workers (-fork, -jobs) run side by side.
        let dir = root
            .join("target/fuzz/libfuzzer")
            .join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        (target.seeds)(root, &dir).expect("the target's seeds");
        let current = dir.join(format!("current.{}", target.ext));
        (target, current)
    });
    std::fs::write(current, data).expect("the input written");
    if let Verdict::Failed(what) = verdict((target.read)(current), &current.display().to_string()) {
        panic!("{what}");
    }
}

/// Writes target `name`'s seed files into `corpus` (`seed-N`), the starting corpus of a
/// coverage-guided run.
pub fn write_seeds(root: &Path, name: &str, corpus: &Path) -> Result<()> {
    let target = target(name)?;
    let scratch = root.join("target/fuzz/seeds").join(name);
    std::fs::create_dir_all(&scratch)?;
    std::fs::create_dir_all(corpus)?;
    for (i, seed) in (target.seeds)(root, &scratch)?.iter().enumerate() {
        std::fs::write(corpus.join(format!("seed-{i}")), seed)?;
    }
    Ok(())
}

/// Failures saved per campaign (one bug tends to fail thousands of mutants).
const SAVED: usize = 20;

/// Runs `target` on mutants drawn from `seed` until `runs` mutants or `time` have passed, in this
/// process, writing its files under `dir`. A hang exits the process (code 3) after saying so.
pub fn campaign(
    target: &Target,
    root: &Path,
    dir: &Path,
    seed: u64,
    runs: u64,
    time: Duration,
) -> Result<Outcome> {
    std::fs::create_dir_all(dir)?;
    let seeds = (target.seeds)(root, dir)?;
    let current = dir.join(format!("current.{}", target.ext));
    // The seeds themselves must read: a reader that refuses good files passes any campaign.
    for (i, seed) in seeds.iter().enumerate() {
        std::fs::write(&current, seed)?;
        match (target.read)(&current) {
            Ok(Ok(())) => {}
            Ok(Err(e)) | Err(e) => bail!("{}: seed {i} is refused: {e}", target.name),
        }
    }
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    );
    let strategy = (
        any::<prop::sample::Index>(),
        prop::collection::vec(edit(), 1..4),
    );
    // The watchdog: the start of the read in progress (0: none), in milliseconds.
    let started = Instant::now();
    let busy_since = Arc::new(AtomicU64::new(0));
    let watchdog = {
        let busy = Arc::clone(&busy_since);
        let current = current.clone();
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(Duration::from_millis(500));
                let since = busy.load(Ordering::Relaxed);
                if since == u64::MAX {
                    return;
                }
                if since > 0
                    && (started.elapsed().as_millis() as u64).saturating_sub(since)
                        > HANG.as_millis() as u64
                {
                    eprintln!(
                        "fuzz: HANG: one read took more than {HANG:?}; the input is {}",
                        current.display()
                    );
                    std::process::exit(3);
                }
            }
        })
    };
    // Panics are failures to record, not messages to print.
    let panic = Arc::new(Mutex::new(String::new()));
    let hook = std::panic::take_hook();
    {
        let panic = Arc::clone(&panic);
        std::panic::set_hook(Box::new(move |info| {
            *panic.lock().unwrap_or_else(|e| e.into_inner()) = info.to_string();
        }));
    }
    let mut outcome = Outcome::default();
    let name = current.display().to_string();
    while outcome.runs < runs && started.elapsed() < time {
        let (which, edits) = strategy
            .new_tree(&mut runner)
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .current();
        let mutant = mutate(&seeds[which.index(seeds.len())], &edits);
        std::fs::write(&current, &mutant)?;
        busy_since.store(started.elapsed().as_millis() as u64 + 1, Ordering::Relaxed);
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| (target.read)(&current)));
        busy_since.store(0, Ordering::Relaxed);
        outcome.runs += 1;
        let failure = match result.map(|r| verdict(r, &name)) {
            Err(_) => Some(format!(
                "panic: {}",
                panic.lock().unwrap_or_else(|e| e.into_inner())
            )),
            Ok(Verdict::Accepted) => {
                outcome.accepted += 1;
                None
            }
            Ok(Verdict::Failed(what)) => Some(what),
            Ok(Verdict::Refused(message)) => {
                let key = shape(&message, &name);
                let known = outcome.messages.len();
                if let Some(entry) = outcome.messages.get_mut(&key) {
                    entry.0 += 1;
                } else if known < SHAPES {
                    outcome.messages.insert(key, (1, message));
                }
                None
            }
        };
        if let Some(what) = failure {
            outcome.failed += 1;
            if outcome.failures.len() == SAVED {
                continue;
            }
            let saved = dir.join(format!(
                "crash-{}.{}",
                outcome.failures.len(),
                target.ext.replace('/', "-")
            ));
            std::fs::write(&saved, &mutant)?;
            outcome.failures.push((saved, what));
        }
    }
    busy_since.store(u64::MAX, Ordering::Relaxed);
    let _ = watchdog.join();
    std::panic::set_hook(hook);
    Ok(outcome)
}

/// `cargo xtask fuzz`: each target's campaign in a child process (`xtask fuzz-worker`), so that
/// an abort is reported with its input instead of ending the campaign unexplained.
pub fn run(names: &[String], time: f64, runs: u64, seed: u64, messages: usize) -> Result<bool> {
    for n in names {
        target(n)?;
    }
    let all = targets();
    let exe = std::env::current_exe()?;
    let mut clean = true;
    println!(
        "{:<8} {:>10} {:>10} {:>9} {:>8}  failures",
        "target", "runs", "accepted", "seconds", "runs/s"
    );
    for t in all
        .iter()
        .filter(|t| names.is_empty() || names.iter().any(|n| n == t.name))
    {
        let start = Instant::now();
        let out = std::process::Command::new(&exe)
            .args([
                "fuzz-worker",
                t.name,
                "--time",
                &time.to_string(),
                "--runs",
                &runs.to_string(),
                "--seed",
                &seed.to_string(),
                "--messages",
                &messages.to_string(),
            ])
            .output()?;
        let seconds = start.elapsed().as_secs_f64();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let counts = stdout.lines().find_map(|l| l.strip_prefix("FUZZ "));
        match (out.status.success(), counts) {
            (true, Some(line)) => {
                let mut f = line
                    .split_whitespace()
                    .map(|x| x.parse::<u64>().unwrap_or(0));
                let (r, a, n) = (
                    f.next().unwrap_or(0),
                    f.next().unwrap_or(0),
                    f.next().unwrap_or(0),
                );
                println!(
                    "{:<8} {r:>10} {a:>10} {seconds:>9.1} {:>8.0}  {n}",
                    t.name,
                    r as f64 / seconds
                );
                for l in stdout.lines().filter(|l| l.starts_with("FAIL ")) {
                    println!("  {}", &l[5..]);
                }
                for l in stdout.lines().filter_map(|l| l.strip_prefix("MSG ")) {
                    println!("  refused {l}");
                }
                clean &= n == 0;
            }
            _ => {
                clean = false;
                println!(
                    "{:<8} the worker died ({}): the input is target/fuzz/{}/current.{}\n{}",
                    t.name,
                    out.status,
                    t.name,
                    t.ext,
                    String::from_utf8_lossy(&out.stderr)
                        .lines()
                        .last()
                        .unwrap_or("")
                );
            }
        }
    }
    Ok(clean)
}

/// The child's side of [`run`]: one target's campaign, its counts on a `FUZZ` line, each
/// failure on a `FAIL` line and its `messages` most frequent refusals on `MSG` lines.
pub fn worker(
    root: &Path,
    name: &str,
    (time, runs, seed): (f64, u64, u64),
    messages: usize,
) -> Result<()> {
    let t = target(name)?;
    let dir = root.join("target/fuzz").join(name);
    let o = campaign(&t, root, &dir, seed, runs, Duration::from_secs_f64(time))?;
    println!("FUZZ {} {} {}", o.runs, o.accepted, o.failed);
    for (path, what) in &o.failures {
        println!("FAIL {}: {what}", path.display());
    }
    for (count, example) in o.common_messages(messages) {
        println!("MSG {count:>8} x {}", example.replace('\n', " | "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default suite's short campaign: every target, 150 mutants from a fixed seed, in this
    /// process (an abort fails the test run). `cargo xtask fuzz` runs the long ones.
    #[test]
    fn short_fixed_seed_campaign_finds_nothing() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let mut report = Vec::new();
        for t in targets() {
            let o = campaign(
                &t,
                root,
                &scratch.path().join(t.name),
                14,
                150,
                Duration::from_secs(120),
            )
            .unwrap();
            assert_eq!(o.runs, 150, "{}", t.name);
            for (path, what) in o.failures {
                report.push(format!("{}: {}: {what}", t.name, path.display()));
            }
        }
        assert!(report.is_empty(), "{}", report.join("\n"));
    }

    #[test]
    fn mutations_edit_numbers_lines_and_bytes() {
        let seed = b"a 12 b\nc -3.5e2 d\n";
        assert_eq!(number_tokens(seed), vec![(2, 4), (9, 15)]);
        let index = |k: usize, n: usize| {
            let mut runner = TestRunner::deterministic();
            loop {
                let i = any::<prop::sample::Index>()
                    .new_tree(&mut runner)
                    .unwrap()
                    .current();
                if i.index(n) == k {
                    return i;
                }
            }
        };
        let huge = EXTREMES.iter().position(|v| *v == "1e308").unwrap();
        let m = mutate(
            seed,
            &[Edit::Number(index(1, 2), index(huge, EXTREMES.len()))],
        );
        assert_eq!(m, b"a 12 b\nc 1e308 d\n");
        let m = mutate(seed, &[Edit::DuplicateLine(index(0, 2))]);
        assert_eq!(m, b"a 12 b\na 12 b\nc -3.5e2 d\n");
        let m = mutate(seed, &[Edit::DeleteLine(index(1, 2))]);
        assert_eq!(m, b"a 12 b\n");
    }
}
