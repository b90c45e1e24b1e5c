//! Bundle round trips and the rejection of damaged bundles (each error must name the file).

use std::fs;
use std::path::Path;

use grain::{
    Deformation, ElementBlock, ElementType, EnergyPolynomial, FemMesh, FitDifference, FitReport,
    ForceTable, GrainBundle, GrainFlexibility, GrainProperties, GridSpec, InternalForce,
    LevelSetGrid, Material, ModeConstruction, ModesBundle, ModesInfo, Monomial, Normalization,
    Reconstruction, ReconstructionError, RigidTransform, SampledLevelSet, Snapshot, SourceFile,
    TableInterpolation, Truncation,
};
use ndarray::{Array1, Array2, Array3, Array5, array};

/// Distinct, non-round values so that a swapped index or a lost digit shows.
fn fill(n: usize, seed: f64) -> Vec<f64> {
    (0..n)
        .map(|i| seed + (i as f64 * 0.7311).sin() / 3.0)
        .collect()
}

fn table() -> ForceTable {
    ForceTable {
        eps: vec![0.0, 0.004, 0.008, 0.014],
        force: vec![0.0, 4.12, 11.95, 28.63],
        energy: vec![0.0, 0.00824, 0.04038, 0.1636800000000001],
    }
}

/// A unit sphere (its mass properties, its signed distance perturbed by less than 1 % of the
/// spacing, nodes on it), so that the bundle passes the checks of a body (`GrainBundle::read`).
fn rigid_grain() -> GrainBundle {
    let spec = GridSpec {
        origin: [-1.5, -2.0, -2.5],
        spacing: 0.5,
        dims: [8, 10, 12],
    };
    let [_, ny, nz] = spec.dims;
    let values = (0..spec.len())
        .zip(fill(spec.len(), 0.0))
        .map(|(n, e)| {
            spec.node(n / (ny * nz), (n / nz) % ny, n % nz)
                .coords
                .norm()
                - 1.0
                + 0.01 * e
        })
        .collect();
    let directions = fill(21, 0.1);
    let nodes: Vec<f64> = directions
        .chunks(3)
        .flat_map(|d| {
            let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
            [d[0] / r, d[1] / r, d[2] / r]
        })
        .collect();
    GrainBundle {
        properties: GrainProperties {
            units: "mm, N, s".into(),
            input_frame: RigidTransform {
                rotation: [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]],
                translation: [0.1, -0.2, 1.0 / 3.0],
            },
            volume: 4.1887902047863905,
            density: 2.65e-9,
            mass: 1.1100294042683935e-8,
            principal_moments: [4.44e-9, 4.45e-9, 4.46e-9],
        },
        levelset: LevelSetGrid::new(spec, values).unwrap(),
        nodes: Array2::from_shape_vec((7, 3), nodes).unwrap(),
        node_areas: Array1::from(fill(7, 1.0)),
        deformation: None,
    }
}

fn deformable_grain(modes: usize, law: InternalForce) -> GrainBundle {
    let mut g = rigid_grain();
    let [nx, ny, nz] = g.levelset.spec().dims;
    let sym = |seed: f64| {
        let m = Array2::from_shape_vec((modes, modes), fill(modes * modes, seed)).unwrap();
        &m + &m.t()
    };
    let mut precomputed = vec![vec![]; modes];
    precomputed[0] = vec![
        SampledLevelSet {
            amplitude: -0.05,
            values: Array3::from_shape_vec((nx, ny, nz), fill(nx * ny * nz, 0.3)).unwrap(),
        },
        SampledLevelSet {
            amplitude: 0.1,
            values: Array3::from_shape_vec((nx, ny, nz), fill(nx * ny * nz, 0.4)).unwrap(),
        },
    ];
    g.deformation = Some(Deformation {
        modal_mass: sym(1.0),
        modal_stiffness: sym(1e4),
        modal_damping: sym(2e4),
        internal_force: law,
        node_modes: Array3::from_shape_vec((modes, 7, 3), fill(modes * 21, 0.0)).unwrap(),
        grid_modes: Array5::from_shape_vec(
            (modes, nx, ny, nz, 3),
            fill(modes * nx * ny * nz * 3, 0.5),
        )
        .unwrap(),
        precomputed,
        path: None,
        material: Some(Material {
            youngs_modulus: 1000.0,
            poisson_ratio: 0.25,
            density: 1e-9,
        }),
        flexibility: Some(GrainFlexibility {
            points: Array2::from_shape_fn((3, 3), |(i, j)| (i * 3 + j) as f64 * 0.1),
            patch_radius: 0.2,
            matrix: array![[3e-3, -1e-4, 2e-5], [-1e-4, 2e-3, 0.0], [2e-5, 0.0, 1e-3]],
        }),
    });
    g
}

fn modes_bundle() -> ModesBundle {
    let nodes = Array2::from_shape_vec((9, 3), fill(27, 0.0)).unwrap();
    ModesBundle {
        info: ModesInfo {
            units: "mm, N".into(),
            material: Material {
                youngs_modulus: 70e3,
                poisson_ratio: 0.3,
                density: 2.7e-9,
            },
            sources: vec![SourceFile {
                path: "data/sphere/job.frd".into(),
                sha256: "ab".repeat(32),
            }],
            construction: ModeConstruction::Svd {
                truncation: Truncation::Energy { fraction: 0.999 },
                singular_values: vec![3.5, 0.25, 1e-3],
            },
            normalization: Normalization::Control {
                node_set: "TOP".into(),
                direction: [0.0, 0.0, -1.0],
            },
            energy_orthogonalized: false,
            snapshots: vec![
                Snapshot {
                    id: "inc1".into(),
                    holdout: false,
                },
                Snapshot {
                    id: "inc2".into(),
                    holdout: false,
                },
                Snapshot {
                    id: "inc3".into(),
                    holdout: true,
                },
            ],
            reconstruction: Some(Reconstruction {
                train: ReconstructionError {
                    displacement: 1e-4,
                    strain_energy: Some(2e-3),
                },
                holdout: Some(ReconstructionError {
                    displacement: 3e-4,
                    strain_energy: None,
                }),
            }),
            fit: Some(FitReport {
                energy_vs_force: Some(0.013),
                slope_over_stiffness: 0.998,
                per_snapshot: vec![FitDifference {
                    snapshot: "run.frd step time 1.0".into(),
                    eps: vec![0.5],
                    difference: -0.013,
                }],
            }),
            mirror_planes: "xz".into(),
        },
        mesh: FemMesh {
            nodes,
            blocks: vec![
                ElementBlock {
                    element_type: ElementType::Tet4,
                    connectivity: array![[0u64, 1, 2, 3], [1, 2, 3, 4]],
                },
                ElementBlock {
                    element_type: ElementType::Hex8,
                    connectivity: array![[0u64, 1, 2, 3, 4, 5, 6, 7], [1, 2, 3, 4, 5, 6, 7, 8]],
                },
            ],
        },
        phi: Array3::from_shape_vec((1, 9, 3), fill(27, 0.7)).unwrap(),
        mass: array![[1e5]],
        stiffness: array![[2.5e4]],
        coords: array![[0.01], [0.02], [0.03]],
        internal_force: InternalForce::Table {
            interpolation: TableInterpolation::MonotoneCubic,
            table: table(),
        },
        path: None,
        flexibility: None,
    }
}

fn assert_names(err: impl std::fmt::Display, parts: &[&str]) {
    let msg = err.to_string();
    for p in parts {
        assert!(msg.contains(p), "message {msg:?} should contain {p:?}");
    }
}

#[test]
fn rigid_grain_round_trips_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.grain");
    let g = rigid_grain();
    g.write(&path).unwrap();
    assert_eq!(GrainBundle::read(&path).unwrap(), g);
    for f in [
        "grain.json",
        "levelset.npy",
        "nodes.npy",
        "node_areas.npy",
        "grain.vti",
        "nodes.vtp",
    ] {
        assert!(path.join(f).is_file(), "{f}");
    }
}

#[test]
fn deformable_grain_round_trips_every_field_and_array() {
    let dir = tempfile::tempdir().unwrap();
    for (name, g) in [
        ("linear.grain", deformable_grain(2, InternalForce::Linear)),
        (
            "table.grain",
            deformable_grain(
                1,
                InternalForce::Table {
                    interpolation: TableInterpolation::Linear,
                    table: table(),
                },
            ),
        ),
        (
            "polynomial.grain",
            deformable_grain(2, InternalForce::Polynomial(polynomial(2))),
        ),
    ] {
        let path = dir.path().join(name);
        g.write(&path).unwrap();
        assert_eq!(GrainBundle::read(&path).unwrap(), g, "{name}");
    }
    assert!(dir.path().join("table.grain/internal_force.csv").is_file());
    assert!(
        dir.path()
            .join("linear.grain/precomputed/mode0_sample1.npy")
            .is_file()
    );
}

#[test]
fn modes_bundle_round_trips_every_field_and_array() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.modes");
    let m = modes_bundle();
    m.write(&path).unwrap();
    assert_eq!(ModesBundle::read(&path).unwrap(), m);
    assert!(path.join("modes.vtu").is_file());
}

fn set_schema(manifest: &Path, version: u64) {
    let mut json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(manifest).unwrap()).unwrap();
    json["schema"] = version.into();
    fs::write(manifest, json.to_string()).unwrap();
}

#[test]
fn unknown_schema_version_is_rejected_naming_file_and_both_versions() {
    let dir = tempfile::tempdir().unwrap();
    let grain = dir.path().join("a.grain");
    rigid_grain().write(&grain).unwrap();
    set_schema(&grain.join("grain.json"), 7);
    assert_names(
        GrainBundle::read(&grain).unwrap_err(),
        &["a.grain/grain.json", "version 7", "versions 1 to 3"],
    );
    // A version 1 grain bundle (before the modes' material) is read as it is.
    set_schema(&grain.join("grain.json"), 1);
    assert_eq!(GrainBundle::read(&grain).unwrap(), rigid_grain());

    let modes = dir.path().join("s.modes");
    modes_bundle().write(&modes).unwrap();
    set_schema(&modes.join("modes.json"), 3);
    assert_names(
        ModesBundle::read(&modes).unwrap_err(),
        &["s.modes/modes.json", "version 3", "versions 1 to 2"],
    );
    // A version 1 bundle (before free modes and flexibilities) is read as it is.
    set_schema(&modes.join("modes.json"), 1);
    assert_eq!(ModesBundle::read(&modes).unwrap(), modes_bundle());
}

#[test]
fn truncated_npy_is_rejected_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let grain = dir.path().join("a.grain");
    deformable_grain(2, InternalForce::Linear)
        .write(&grain)
        .unwrap();
    let file = grain.join("grid_modes.npy");
    let bytes = fs::read(&file).unwrap();
    fs::write(&file, &bytes[..bytes.len() - 100]).unwrap();
    assert_names(
        GrainBundle::read(&grain).unwrap_err(),
        &["a.grain/grid_modes.npy"],
    );
    // A header cut short is a different failure of the same reader.
    fs::write(&file, &bytes[..20]).unwrap();
    assert_names(
        GrainBundle::read(&grain).unwrap_err(),
        &["a.grain/grid_modes.npy"],
    );
}

#[test]
fn shape_mismatch_names_array_expected_and_found() {
    let dir = tempfile::tempdir().unwrap();
    let grain = dir.path().join("a.grain");
    rigid_grain().write(&grain).unwrap();
    ndarray_npy::write_npy(grain.join("node_areas.npy"), &Array1::<f64>::zeros(6)).unwrap();
    assert_names(
        GrainBundle::read(&grain).unwrap_err(),
        &["a.grain/node_areas.npy", "`node_areas`", "[6]", "[7]"],
    );

    let modes = dir.path().join("s.modes");
    modes_bundle().write(&modes).unwrap();
    ndarray_npy::write_npy(modes.join("phi.npy"), &Array3::<f64>::zeros((2, 9, 3))).unwrap();
    assert_names(
        ModesBundle::read(&modes).unwrap_err(),
        &["s.modes/phi.npy", "[2, 9, 3]", "[1, 9, 3]"],
    );
}

#[test]
fn damaged_values_are_rejected_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let grain = dir.path().join("a.grain");
    rigid_grain().write(&grain).unwrap();
    let mut nodes = Array2::from_shape_vec((7, 3), fill(21, 0.1)).unwrap();
    nodes[[4, 1]] = f64::NAN;
    ndarray_npy::write_npy(grain.join("nodes.npy"), &nodes).unwrap();
    assert_names(
        GrainBundle::read(&grain).unwrap_err(),
        &["a.grain/nodes.npy", "non-finite", "[4, 1]"],
    );

    let modes = dir.path().join("s.modes");
    modes_bundle().write(&modes).unwrap();
    ndarray_npy::write_npy(
        modes.join("elements1.npy"),
        &array![[0u64, 1, 2, 3, 4, 5, 6, 9]],
    )
    .unwrap();
    // The manifest says 2 elements in that block: the shape check fires first.
    assert_names(
        ModesBundle::read(&modes).unwrap_err(),
        &["elements1.npy", "[1, 8]", "[2, 8]"],
    );
    ndarray_npy::write_npy(
        modes.join("elements1.npy"),
        &array![[0u64, 1, 2, 3, 4, 5, 6, 7], [1, 2, 3, 4, 5, 6, 7, 9]],
    )
    .unwrap();
    assert_names(
        ModesBundle::read(&modes).unwrap_err(),
        &["elements1.npy", "node index 9", "node count 9"],
    );

    let mut bad = modes_bundle();
    bad.phi = Array3::zeros((2, 9, 3));
    bad.mass = array![[1.0, 0.5], [0.25, 1.0]];
    bad.stiffness = array![[1.0, 0.0], [0.0, 1.0]];
    bad.coords = Array2::zeros((3, 2));
    bad.internal_force = InternalForce::Linear;
    assert_names(
        bad.write(&dir.path().join("b.modes")).unwrap_err(),
        &["b.modes", "mass", "not symmetric"],
    );
    assert!(!dir.path().join("b.modes").exists());

    let mut bad = deformable_grain(2, InternalForce::Polynomial(polynomial(3)));
    assert_names(
        bad.write(&dir.path().join("p.grain")).unwrap_err(),
        &[
            "p.grain",
            "internal_force.terms[0].powers",
            "one exponent per mode (2), found 3",
        ],
    );
    bad.deformation.as_mut().unwrap().internal_force =
        InternalForce::Polynomial(EnergyPolynomial {
            terms: vec![Monomial {
                powers: vec![1, 1],
                coefficient: f64::NAN,
            }],
        });
    assert_names(
        bad.write(&dir.path().join("p.grain")).unwrap_err(),
        &["internal_force.terms[0].coefficient", "a finite number"],
    );
}

/// `U = 3 eps_1^2 - 0.5 eps_1 eps_2 + ... ` over `modes` amplitudes, up to degree 3.
fn polynomial(modes: usize) -> EnergyPolynomial {
    EnergyPolynomial {
        terms: EnergyPolynomial::exponents(modes, 3)
            .into_iter()
            .enumerate()
            .map(|(i, powers)| Monomial {
                powers,
                coefficient: 3.0 - 0.5 * i as f64,
            })
            .collect(),
    }
}

#[test]
fn missing_or_malformed_manifest_fields_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let grain = dir.path().join("a.grain");
    rigid_grain().write(&grain).unwrap();
    let manifest = grain.join("grain.json");
    let text = fs::read_to_string(&manifest).unwrap();
    fs::write(&manifest, text.replace("\"node_count\"", "\"nodes_count\"")).unwrap();
    assert_names(
        GrainBundle::read(&grain).unwrap_err(),
        &["grain.json", "nodes_count", "line"],
    );
    fs::write(&manifest, "{\"units\": 1}").unwrap();
    assert_names(
        GrainBundle::read(&grain).unwrap_err(),
        &["grain.json", "missing integer field `schema`"],
    );
    // Found by the fuzz campaign (issue #14): a byte that is not UTF-8 gave "stream did not
    // contain valid UTF-8" with no position.
    let mut bytes = text.into_bytes();
    let at = bytes.iter().position(|&b| b == b'\n').unwrap() + 3;
    bytes[at] = 0xff;
    fs::write(&manifest, bytes).unwrap();
    assert_names(
        GrainBundle::read(&grain).unwrap_err(),
        &["grain.json", "line 2, column 3: not UTF-8 text (byte 0xff)"],
    );
}

/// Issue #23: a manifest edited by hand was run as written. Each edit below describes a body the
/// arrays cannot (the references are the unit sphere's: m = rho V, I = 2/5 m R^2, |grad phi| = 1)
/// and is refused naming its field; the bundle as written is read.
#[test]
fn a_manifest_that_contradicts_its_arrays_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let grain = dir.path().join("a.grain");
    rigid_grain().write(&grain).unwrap();
    let manifest = grain.join("grain.json");
    let text = fs::read_to_string(&manifest).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    GrainBundle::read(&grain).unwrap();
    let edited = |edit: &dyn Fn(&mut serde_json::Value), expected: &[&str]| {
        let mut j = json.clone();
        edit(&mut j);
        fs::write(&manifest, serde_json::to_string_pretty(&j).unwrap()).unwrap();
        assert_names(GrainBundle::read(&grain).unwrap_err(), expected);
    };
    edited(
        &|j| j["properties"]["mass"] = (2.0 * 1.1100294042683935e-8).into(),
        &["grain.json", "properties.mass", "is not density x volume"],
    );
    edited(
        &|j| j["properties"]["principal_moments"] = serde_json::json!([1e-9, 1e-9, 4.46e-9]),
        &["properties.principal_moments", "no body has these moments"],
    );
    edited(
        &|j| j["properties"]["principal_moments"] = serde_json::json!([4.4e-6, 4.4e-6, 4.4e-6]),
        &["properties.principal_moments", "beyond its grid"],
    );
    edited(
        &|j| j["grid"]["spacing"] = 0.8.into(),
        &[
            "nodes.npy[",
            "`grid.spacing` 8e-1 does not match levelset.npy",
        ],
    );
    edited(
        &|j| j["grid"]["origin"] = serde_json::json!([0.5, -2.0, -2.5]),
        &["nodes.npy[", "not inside the grid"],
    );
    fs::write(&manifest, &text).unwrap();
    GrainBundle::read(&grain).unwrap();
    // Nodes of another grain (a sphere of radius 1.65 in this one of radius 1).
    let mut g = rigid_grain();
    g.nodes *= 1.65;
    assert_names(
        g.write(&dir.path().join("b.grain")).unwrap_err(),
        &[
            "nodes.npy[0]",
            "the nodes do not lie on this grain's surface",
        ],
    );
}

#[test]
fn tabulated_law_needs_one_mode() {
    let dir = tempfile::tempdir().unwrap();
    let g = deformable_grain(
        2,
        InternalForce::Table {
            interpolation: TableInterpolation::Linear,
            table: table(),
        },
    );
    assert_names(
        g.write(&dir.path().join("t.grain")).unwrap_err(),
        &["t.grain", "exactly 1 mode"],
    );
}

#[test]
fn bundle_write_failing_halfway_keeps_the_previous_bundle() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.grain");
    let good = deformable_grain(
        1,
        InternalForce::Table {
            interpolation: TableInterpolation::Linear,
            table: table(),
        },
    );
    good.write(&path).unwrap();
    // The table is checked when internal_force.csv is written, after the arrays: a failure
    // halfway through the bundle.
    let mut bad = good.clone();
    bad.node_areas[0] = 123.0;
    let Some(Deformation {
        internal_force: InternalForce::Table { table, .. },
        ..
    }) = &mut bad.deformation
    else {
        unreachable!()
    };
    table.eps[2] = table.eps[1];
    assert_names(
        bad.write(&path).unwrap_err(),
        &["internal_force.csv", "row 3", "does not increase"],
    );
    assert_eq!(GrainBundle::read(&path).unwrap(), good);
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("t.grain")]);
}

/// Found by mutating inputs (issue #14): an array whose header declares a huge shape was
/// allocated before anything was checked (a 35 GB request, exit 134). The header is now read
/// first and a shape the file cannot fill is refused, naming the file, before any allocation.
#[test]
fn huge_header_shapes_are_refused_before_allocation() {
    let dir = tempfile::tempdir().unwrap();
    let grain = dir.path().join("a.grain");
    rigid_grain().write(&grain).unwrap();
    let file = grain.join("node_areas.npy");
    let bytes = fs::read(&file).unwrap();
    let find = |what: &[u8]| bytes.windows(what.len()).position(|w| w == what).unwrap();
    // (7,) becomes (4294967296,); the header keeps its length (the padding absorbs it).
    let at = find(b"(7,)") + 1;
    let mut patched = bytes[..at].to_vec();
    patched.extend(b"4294967296");
    let pad = find(b"}") + 1;
    patched.extend(&bytes[at + 1..pad]);
    patched.extend(&bytes[pad + 9..]);
    assert_eq!(patched.len(), bytes.len());
    fs::write(&file, &patched).unwrap();
    assert_names(
        GrainBundle::read(&grain).unwrap_err(),
        &[
            "a.grain/node_areas.npy",
            "[4294967296]",
            "34359738368 bytes",
            "holds 56 bytes",
        ],
    );
}

/// Found by mutating inputs (issue #14): mode-extract wrote `null` (a NaN) for a fit figure of
/// degenerate scalars. Bundles now refuse to write a non-finite figure or array value, naming
/// the field, and nothing is written.
#[test]
fn non_finite_figures_and_arrays_are_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.modes");
    let mut bundle = modes_bundle();
    bundle
        .info
        .reconstruction
        .as_mut()
        .unwrap()
        .train
        .displacement = f64::NAN;
    assert_names(
        bundle.write(&path).unwrap_err(),
        &[
            "m.modes/modes.json",
            "reconstruction.train.displacement",
            "NaN",
        ],
    );
    assert!(!path.exists());
    let mut bundle = modes_bundle();
    bundle.stiffness[[0, 0]] = f64::INFINITY;
    assert_names(bundle.write(&path).unwrap_err(), &["stiffness"]);
    let grain = dir.path().join("g.grain");
    let mut g = rigid_grain();
    g.node_areas[3] = f64::NAN;
    assert_names(
        g.write(&grain).unwrap_err(),
        &["node_areas", "flat index 3", "not written"],
    );
    assert!(!grain.exists());
}

/// Path modes: a grain bundle's path (its points at the nodes and on the grid) and a modes
/// bundle's (at the FEM nodes) round-trip; a path on a two-mode bundle, or with amplitudes not
/// positive and increasing, is refused naming the bundle and the field, on write and on read.
#[test]
fn paths_round_trip_and_bad_paths_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut g = deformable_grain(1, InternalForce::Linear);
    let [nx, ny, nz] = g.levelset.spec().dims;
    let k = g.node_count();
    let path = |amplitudes: Vec<f64>| {
        let p = amplitudes.len();
        grain::ModePath {
            amplitudes,
            nodes: Array3::from_shape_vec((p, k, 3), fill(p * k * 3, 0.3)).unwrap(),
            grid: Array5::from_shape_vec((p, nx, ny, nz, 3), fill(p * nx * ny * nz * 3, 0.2))
                .unwrap(),
        }
    };
    g.deformation.as_mut().unwrap().path = Some(path(vec![0.1, 0.25, 0.4]));
    let at = dir.path().join("path.grain");
    g.write(&at).unwrap();
    assert_eq!(GrainBundle::read(&at).unwrap(), g);
    assert!(at.join("path_grid.npy").is_file());
    // Baked by schema 2, the level set precomputed at -0.05 (off the points) followed the
    // piecewise linear path: refused, the path being C1 now.
    let old = dir.path().join("old.grain");
    g.write(&old).unwrap();
    set_schema(&old.join("grain.json"), 2);
    assert_names(
        GrainBundle::read(&old).unwrap_err(),
        &[
            "grain.json",
            "precomputed_amplitudes",
            "-0.05",
            "bake the bundle again",
        ],
    );
    let mut m = modes_bundle();
    let n = m.mesh.nodes.nrows();
    m.path = Some(grain::SnapshotPath {
        amplitudes: vec![0.01, 0.02],
        displacement: Array3::from_shape_vec((2, n, 3), fill(2 * n * 3, 0.1)).unwrap(),
    });
    let modes = dir.path().join("path.modes");
    m.write(&modes).unwrap();
    assert_eq!(ModesBundle::read(&modes).unwrap(), m);

    g.deformation.as_mut().unwrap().path = Some(path(vec![0.1, 0.1]));
    assert_names(
        g.write(&dir.path().join("repeat.grain")).unwrap_err(),
        &["repeat.grain", "path_amplitudes", "strictly increasing"],
    );
    let mut two = deformable_grain(2, InternalForce::Linear);
    two.deformation.as_mut().unwrap().path = Some(path(vec![0.1]));
    assert_names(
        two.write(&dir.path().join("two.grain")).unwrap_err(),
        &["two.grain", "one-mode", "2 modes"],
    );
    // A manifest edited by hand: read refuses it too.
    let manifest = at.join("grain.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, text.replace("0.25", "-0.25")).unwrap();
    assert_names(
        GrainBundle::read(&at).unwrap_err(),
        &["grain.json", "deformable.path_amplitudes", "positive"],
    );
}

#[test]
fn a_residual_flexibility_round_trips_and_a_bad_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = modes_bundle();
    let matrix = ndarray::arr2(&[[2.0, 0.5, 0.1], [0.5, 3.0, 0.2], [0.1, 0.2, 1.0]]);
    m.flexibility = Some(grain::SurfaceFlexibility {
        nodes: vec![0, 2, 1],
        patch_radius: 0.5,
        matrix: matrix.clone(),
    });
    let at = dir.path().join("f.modes");
    m.write(&at).unwrap();
    assert_eq!(ModesBundle::read(&at).unwrap(), m);
    assert!(at.join("flexibility.npy").is_file());
    let refused = |edit: &dyn Fn(&mut grain::SurfaceFlexibility), parts: &[&str]| {
        let mut bad = m.clone();
        edit(bad.flexibility.as_mut().unwrap());
        assert_names(bad.write(&dir.path().join("bad.modes")).unwrap_err(), parts);
    };
    refused(
        &|f| f.nodes[2] = 0,
        &["flexibility_nodes", "node 0 is listed twice"],
    );
    refused(
        &|f| f.nodes[1] = 99,
        &["flexibility_nodes", "node index 99"],
    );
    refused(
        &|f| f.patch_radius = -1.0,
        &["flexibility.patch_radius", "positive"],
    );
    refused(
        &|f| f.matrix[[0, 1]] = 0.6,
        &["flexibility", "not symmetric"],
    );
    // A manifest that names another count than the arrays hold: read refuses it.
    let manifest = at.join("modes.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("\"surface_nodes\": 3", "\"surface_nodes\": 4"),
    )
    .unwrap();
    assert_names(
        ModesBundle::read(&at).unwrap_err(),
        &["flexibility_nodes", "[4]", "[3]"],
    );
}

/// Issue #33: a scale of 1e-65 underflowed the moments of inertia (`s^5`) to zero, and the run
/// diverged "for too large a step". A scale that takes the volume, mass, moments, grid spacing,
/// modal mass or stiffness out of the normal `f64`s is refused, naming the first such quantity
/// and the scales the grain takes: from the smallest moment's underflow to the modal mass's
/// overflow, here.
#[test]
fn a_scale_that_takes_the_grain_out_of_floating_point_is_refused() {
    let g = deformable_grain(1, InternalForce::Linear);
    let smallest_moment = 4.44e-9;
    let modal_mass = g.deformation.as_ref().unwrap().modal_mass[[0, 0]];
    assert_eq!(modal_mass, 2.0);
    let low = (f64::MIN_POSITIVE / smallest_moment).powf(0.2);
    let high = (f64::MAX / modal_mass).powf(0.2);
    let range = format!("here it must lie between about {low:.3e} and {high:.3e}");
    let e = g.scaled(1e-65).unwrap_err().to_string();
    assert!(
        e.starts_with(
            "the scale 1e-65 makes the principal moments of inertia 4.44e-334, which is not a normal floating-point number"
        ) && e.ends_with(&range),
        "{e}"
    );
    let e = g.scaled(1e62).unwrap_err().to_string();
    assert!(
        e.starts_with("the scale 1e62 makes the modal mass 2.00e310") && e.ends_with(&range),
        "{e}"
    );
    // Just inside the range, every quantity is normal.
    for s in [1.001 * low, 0.999 * high] {
        let b = g.scaled(s).unwrap();
        let d = b.deformation.as_ref().unwrap();
        assert!(
            b.properties
                .principal_moments
                .iter()
                .chain([&b.properties.mass, &d.modal_mass[[0, 0]]])
                .all(|x| x.is_normal()),
            "{s:e}"
        );
    }
}

#[test]
fn a_grain_bundle_with_an_impossible_material_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let grain = dir.path().join("a.grain");
    deformable_grain(1, InternalForce::Linear)
        .write(&grain)
        .unwrap();
    let manifest = grain.join("grain.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&manifest).unwrap()).unwrap();
    json["deformable"]["material"]["poisson_ratio"] = 0.6.into();
    fs::write(&manifest, json.to_string()).unwrap();
    assert_names(
        GrainBundle::read(&grain).unwrap_err(),
        &[
            "a.grain/grain.json",
            "deformable.material.poisson_ratio",
            "0.6",
        ],
    );
}

/// A grain `s` times larger of the same material: its flexibility's points and patch radius
/// are lengths (`x s`), and `G`, a displacement per force of a body whose stiffness goes as
/// `E L`, goes as `1 / s` (docs/physics.md section 10).
#[test]
fn a_scaled_grain_s_flexibility_scales_as_a_compliance() {
    let g = deformable_grain(1, InternalForce::Linear);
    let s = 2.5;
    let scaled = g.scaled(s).unwrap();
    let (a, b) = (
        g.deformation.unwrap().flexibility.unwrap(),
        scaled.deformation.unwrap().flexibility.unwrap(),
    );
    assert_eq!(b.patch_radius, a.patch_radius * s);
    assert_eq!(b.points, a.points.mapv(|x| x * s));
    assert_eq!(b.matrix, a.matrix.mapv(|g| g / s));
}
