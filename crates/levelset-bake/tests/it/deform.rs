//! Deformable grains: mode data on nodes and grids, the semi-Lagrangian remap, and precomputed
//! level sets, against exact references.

use std::process::Command;

use grain::{
    ElementBlock, ElementType, FemMesh, GrainBundle, InternalForce, Material, ModeConstruction,
    ModesBundle, ModesInfo, Normalization, Reconstruction, ReconstructionError, SnapshotPath,
};
use levelset_bake::{
    BakeOptions, CONTINUATION_REACH, DistanceField, Extent, Modal, ModeField, NodeChoice,
    NormalShell, OpenMesh, Primitive, Signing, TriangleMesh, attach_modes, bake_primitive,
};
use nalgebra::{Point3, Vector3};
use ndarray::{Array2, Array3};

/// Uniform dilation, Phi(x) = x: the sphere of radius R becomes the sphere of radius R (1 + eps).
struct Dilation;

impl ModeField for Dilation {
    fn count(&self) -> usize {
        1
    }
    fn values(&self, x: &Point3<f64>) -> Vec<Vector3<f64>> {
        vec![x.coords]
    }
}

fn options(spacing: f64) -> BakeOptions {
    BakeOptions {
        spacing,
        pad_cells: 3,
        extent: Extent::Full,
        nodes: NodeChoice::Vertices,
        density: 1.0,
        units: "test".into(),
        open: OpenMesh::Refuse,
        allow_unresolved: false,
    }
}

fn unit_modal() -> Modal {
    Modal {
        mass: Array2::eye(1),
        stiffness: Array2::eye(1),
        damping: Array2::zeros((1, 1)),
        internal_force: InternalForce::Linear,
        material: None,
        flexibility: None,
    }
}

#[test]
fn semi_lagrangian_pull_back_of_a_dilation_is_within_its_bound_near_the_surface() {
    let (r, h) = (10.0, 1.0);
    let mut baked = bake_primitive(&Primitive::Sphere { radius: r }, &options(h)).unwrap();
    attach_modes(&mut baked, &Dilation, unit_modal(), &[]).unwrap();
    let g = &baked.bundle;
    let d = g.deformation.as_ref().unwrap();
    let spec = g.levelset.spec().clone();
    let [_, ny, nz] = spec.dims;
    // Node modes are the node positions.
    for (k, p) in g.nodes.rows().into_iter().enumerate() {
        for c in 0..3 {
            assert_eq!(d.node_modes[[0, k, c]], p[c]);
        }
    }
    for eps in [0.02, -0.03] {
        let u = |n: usize| {
            let (i, j, k) = (n / (ny * nz), (n / nz) % ny, n % nz);
            Vector3::new(
                d.grid_modes[[0, i, j, k, 0]],
                d.grid_modes[[0, i, j, k, 1]],
                d.grid_modes[[0, i, j, k, 2]],
            ) * eps
        };
        let mut worst_ratio = 0.0f64;
        for n in 0..spec.len() {
            let p = spec.node(n / (ny * nz), (n / nz) % ny, n % nz);
            // Between grid nodes too: offset by a third of a cell.
            let p = p + Vector3::repeat(h / 3.0);
            let exact = p.coords.norm() - r * (1.0 + eps);
            if exact.abs() > 2.0 * h {
                continue;
            }
            let back = g.levelset.pull_back(&p, u).unwrap();
            let v = g.levelset.value(&back.point);
            // The exact pull-back of u = eps x is X = y / (1 + eps), so the value is the
            // reference distance there, exact / (1 + eps): it differs from the deformed sphere's
            // distance by |eps / (1 + eps)| |exact| (a pulled-back distance is not a distance),
            // plus the trilinear interpolation error of the sphere distance, h^2 / (4 r).
            let r_min = r - 3.0 * h;
            let bound = (eps / (1.0 + eps)).abs() * exact.abs() + h * h / (4.0 * r_min);
            worst_ratio = worst_ratio.max((v - exact).abs() / bound);
        }
        assert!(
            worst_ratio <= 1.0,
            "eps {eps}: error reaches {worst_ratio} x the bound"
        );
    }
}

#[test]
fn precomputed_bending_level_sets_equal_the_distance_of_the_deformed_beam() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("beam.grain");
    let status = Command::new(env!("CARGO_BIN_EXE_levelset-bake"))
        .args([
            "box",
            "--size",
            "40",
            "4",
            "4",
            "--spacing",
            "1",
            "--bending-mode",
            "40",
        ])
        .args([
            "--modal-mass",
            "1e4",
            "--modal-stiffness",
            "1e4",
            "--modal-damping",
            "2e4",
        ])
        // A separate word that starts with a minus (issue #33: clap took it for a flag).
        .args(["--samples", "-1.5,0.5,2", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let g = GrainBundle::read(&out).unwrap();
    let d = g.deformation.as_ref().unwrap();
    assert_eq!(d.modal_damping[[0, 0]], 2e4);
    let spec = g.levelset.spec().clone();
    // Eq. 51 written out here, independently of the crate: s from the beam's end, z from the
    // mid-plane.
    let (l, k) = (40.0, std::f64::consts::PI / 40.0);
    let bend = |p: &Point3<f64>| {
        Vector3::new(
            p.z * k * (k * (p.x + 0.5 * l)).cos(),
            0.0,
            -(k * (p.x + 0.5 * l)).sin(),
        )
    };
    for (k_node, p) in g.nodes.rows().into_iter().enumerate() {
        let u = bend(&Point3::new(p[0], p[1], p[2]));
        for c in 0..3 {
            assert!((d.node_modes[[0, k_node, c]] - u[c]).abs() < 1e-14);
        }
    }
    let mesh = Primitive::Cuboid {
        half: [20.0, 2.0, 2.0],
    }
    .surface_mesh(1.0);
    for (p, sample) in d.precomputed[0].iter().enumerate() {
        let mut deformed = mesh.clone();
        for v in &mut deformed.vertices {
            *v += bend(v) * sample.amplitude;
        }
        let exact = DistanceField::new(&deformed, Signing::PseudoNormal).grid(&spec, Extent::Full);
        let err = sample
            .values
            .iter()
            .zip(&exact)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(err <= 1e-9 * spec.spacing, "sample {p}: {err:e}");
    }
    assert_eq!(
        d.precomputed[0]
            .iter()
            .map(|s| s.amplitude)
            .collect::<Vec<_>>(),
        vec![-1.5, 0.0, 0.5, 2.0],
        "the undeformed surface is added at 0"
    );
}

/// A modes bundle of one mode on `mesh`, the field `f` at its nodes (modal mass 3, stiffness
/// 5, made-up provenance).
fn one_mode_bundle(mesh: FemMesh, f: impl Fn(&Point3<f64>) -> Vector3<f64>) -> ModesBundle {
    let n = mesh.nodes.nrows();
    let phi = Array3::from_shape_fn((1, n, 3), |(_, k, c)| {
        let r = mesh.nodes.row(k);
        f(&Point3::new(r[0], r[1], r[2]))[c]
    });
    ModesBundle {
        info: ModesInfo {
            units: "test".into(),
            material: Material {
                youngs_modulus: 1.0,
                poisson_ratio: 0.3,
                density: 1.0,
            },
            sources: vec![],
            construction: ModeConstruction::Single {
                snapshot: "made up".into(),
            },
            normalization: Normalization::UnitMax,
            energy_orthogonalized: false,
            snapshots: vec![],
            reconstruction: Some(Reconstruction {
                train: ReconstructionError {
                    displacement: 0.0,
                    strain_energy: None,
                },
                holdout: None,
            }),
            fit: None,
            mirror_planes: String::new(),
        },
        mesh,
        phi,
        mass: Array2::from_elem((1, 1), 3.0),
        stiffness: Array2::from_elem((1, 1), 5.0),
        coords: Array2::zeros((0, 1)),
        internal_force: InternalForce::Linear,
        path: None,
        flexibility: None,
    }
}

/// One C3D20 element filling [-1, 1]^3, as a deck and as a modes bundle whose single mode is a
/// quadratic field the element reproduces exactly.
fn cube_modes(
    dir: &std::path::Path,
) -> (
    std::path::PathBuf,
    std::path::PathBuf,
    impl Fn(&Point3<f64>) -> Vector3<f64>,
) {
    let f = |p: &Point3<f64>| {
        Vector3::new(
            0.1 * p.x + 0.2 * p.y * p.z,
            -0.05 * p.z + 0.1 * p.x * p.x,
            0.3 * p.y,
        )
    };
    let nat = fem::shape::node_coordinates(ElementType::Hex20);
    let mut deck = String::from("*Node\n");
    for (i, p) in nat.iter().enumerate() {
        deck.push_str(&format!("{}, {}, {}, {}\n", i + 1, p.x, p.y, p.z));
    }
    deck.push_str("*Element, type=C3D20\n1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,\n16, 17, 18, 19, 20\n");
    let deck_path = dir.join("cube.inp");
    std::fs::write(&deck_path, deck).unwrap();
    let nodes = Array2::from_shape_fn((20, 3), |(n, c)| nat[n][c]);
    let mesh = FemMesh {
        nodes,
        blocks: vec![ElementBlock {
            element_type: ElementType::Hex20,
            connectivity: Array2::from_shape_fn((1, 20), |(_, n)| n as u64),
        }],
    };
    let bundle = one_mode_bundle(mesh, f);
    let modes_path = dir.join("cube.modes");
    bundle.write(&modes_path).unwrap();
    (deck_path, modes_path, f)
}

#[test]
fn fem_modes_are_interpolated_inside_and_continued_linearly_outside() {
    let dir = tempfile::tempdir().unwrap();
    let (deck, modes, f) = cube_modes(dir.path());
    let out = dir.path().join("cube.grain");
    let status = Command::new(env!("CARGO_BIN_EXE_levelset-bake"))
        .args([
            "mesh",
            deck.to_str().unwrap(),
            "--spacing",
            "0.25",
            "--modes",
            modes.to_str().unwrap(),
        ])
        .args([
            "--samples",
            "0.5",
            "--damping-beta",
            "0.01",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let g = GrainBundle::read(&out).unwrap();
    let d = g.deformation.as_ref().unwrap();
    assert_eq!(
        (
            d.modal_mass[[0, 0]],
            d.modal_stiffness[[0, 0]],
            d.modal_damping[[0, 0]]
        ),
        (3.0, 5.0, 0.05)
    );
    // The symmetric cube keeps the input frame, so local = input coordinates.
    assert_eq!(g.properties.input_frame.translation, [0.0; 3]);
    for (k, p) in g.nodes.rows().into_iter().enumerate() {
        let u = f(&Point3::new(p[0], p[1], p[2]));
        for c in 0..3 {
            assert!((d.node_modes[[0, k, c]] - u[c]).abs() < 1e-12);
        }
    }
    // The foot of a point outside on the cube's boundary: along the vertex normals
    // interpolated over its facets (levelset_bake::NormalShell, tested on its own).
    let mesh = fem::Deck::read(&deck).unwrap().part(None).unwrap().mesh;
    let shell = NormalShell::new(&TriangleMesh {
        vertices: (0..mesh.nodes.nrows())
            .map(|n| fem::node(&mesh, n))
            .collect(),
        triangles: fem::boundary(&mesh).triangles,
    });
    let spec = g.levelset.spec().clone();
    let reach = CONTINUATION_REACH * spec.spacing;
    let mut outside = 0;
    for i in 0..spec.dims[0] {
        for j in 0..spec.dims[1] {
            for k in 0..spec.dims[2] {
                let p = spec.node(i, j, k);
                // Inside: the field itself; outside: its first-order continuation from the
                // foot q, u(q) + grad u(q) (p - q). The gradient of the field, written out
                // (column j is du/dx_j).
                let inside = p.iter().all(|x| x.abs() <= 1.0);
                let q = if inside { p } else { shell.foot(&p).point };
                // On the boundary: the largest coordinate's magnitude 1.
                let largest = q.iter().fold(0.0f64, |m, x| m.max(x.abs()));
                assert!(inside || (largest - 1.0).abs() < 1e-12, "{p}: {q}");
                outside += usize::from(!inside);
                let gradient = nalgebra::Matrix3::new(
                    0.1,
                    0.2 * q.z,
                    0.2 * q.y,
                    0.2 * q.x,
                    0.0,
                    -0.05,
                    0.0,
                    0.3,
                    0.0,
                );
                // Linear within `reach` of the cube, the offset scaled beyond.
                let offset = p - q;
                let distance = (p - p.map(|x| x.clamp(-1.0, 1.0))).norm();
                let step = offset * (reach / distance).min(1.0);
                let u = if inside {
                    f(&q)
                } else {
                    f(&q) + gradient * step
                };
                for c in 0..3 {
                    assert!(
                        (d.grid_modes[[0, i, j, k, c]] - u[c]).abs() < 1e-9,
                        "{p}: {c}"
                    );
                }
            }
        }
    }
    assert!(outside > 1000, "{outside}");
}

/// The continuation outside the mesh, measured as a fold: on data/fem/ball's mesh, a
/// bending field the elements reproduce, `u = (x z, y z, -(x^2 + y^2) / 2) / 10`, whose
/// largest `|grad u|_2` over the ball is `2 / sqrt(3)` = 1.155 and whose own fold comes at
/// amplitude 1 (at the poles `G = diag(-1, -1, 0)`). The fold is read from the grid's corner
/// Jacobians `G` (edge differences, written here apart from the solver's bound): the largest
/// real eigenvalue magnitude of `G` is the inverse of the amplitude at which `det(I + eps G)`
/// first vanishes at a corner (an upper bound on the fold amplitude: inside a cell `G` is the
/// corners' weighted mean).
///
/// Measured (2026-12-01, the foot along the normal shell, the linear part out to one spacing),
/// at spacings 1 and 0.5: the largest real eigenvalue in the cells the surface cuts 1.085 and
/// 1.065, in those wholly outside 1.147 and 1.127, all below the body's 1.155, so no fold before
/// the body's (`det(I + eps G)` at `|eps| = 1 / 1.155` at least 8e-4 and 3.3e-3); spectral norms
/// outside 1.182 and 1.160. With the linear part out to a cell's diagonal `sqrt(3) h` (until
/// then): 1.088 and 1.077 cut, 1.230 and 1.161 outside, the least determinant -0.0057 and
/// -0.0006, norms 1.242 and 1.187: the first-order continuation's own growth (`d (d grad u /
/// dn)` over the reach) folded it from amplitude 0.81 and 0.86 against the body's 0.866. With
/// the foot at the facets' closest point and reach `2 h` (before that): 1.086 and 1.062 cut,
/// 1.261 and 1.360 outside, norms 1.270 and 1.372 (the closest point stretched the continuation
/// in stripes and jumped behind the 10 reflex edges near the south pole).
///
/// Asserted: no real eigenvalue reaches 1.155 at the corners of any cell not wholly inside (it
/// fails with the reach `sqrt(3) h`: 1.230 at spacing 1), the least determinant there positive;
/// and outside, the spectral norm within the field's own largest norm grown linearly over the
/// reach, `1.155 (1 + h / R)`. That is the bound of the exact field's first-order continuation
/// within the reach: its gradient is `L(c) + L((x - c) J)` with `L` the field's gradient map,
/// linear here with `|L(v)|_2 <= 0.1155 |v|`, and `J = dc/dx`, so at most `0.1155 (|c| + |x -
/// c| |J|_2)`, which is the bound where `|J|_2 <= 1` (the foot moving less than the point, as
/// outside a convex surface; not at the facets' 10 reflex edges). The grid's cells, the
/// elements' interpolation and the cells past the reach are measured against it, not derived.
#[test]
fn the_continuation_outside_the_mesh_does_not_fold() {
    let dir = tempfile::tempdir().unwrap();
    let deck =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/fem/ball/ball.inp");
    let mesh = fem::Deck::read(&deck).unwrap().part(None).unwrap().mesh;
    let bundle = one_mode_bundle(mesh, |p| {
        Vector3::new(p.x * p.z, p.y * p.z, -0.5 * (p.x * p.x + p.y * p.y)) / 10.0
    });
    let modes = dir.path().join("ball.modes");
    bundle.write(&modes).unwrap();
    let largest = 2.0 / 3f64.sqrt();
    for h in [1.0, 0.5] {
        let out = dir.path().join(format!("ball-{h}.grain"));
        let run = Command::new(env!("CARGO_BIN_EXE_levelset-bake"))
            .args(["mesh", deck.to_str().unwrap(), "--spacing", &h.to_string()])
            .args(["--modes", modes.to_str().unwrap(), "--out"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let g = GrainBundle::read(&out).unwrap();
        let field = &g.deformation.as_ref().unwrap().grid_modes;
        let grid = &g.levelset;
        let spec = grid.spec().clone();
        let u = |n: usize| {
            let (i, j, k) = (
                n / (spec.dims[1] * spec.dims[2]),
                (n / spec.dims[2]) % spec.dims[1],
                n % spec.dims[2],
            );
            Vector3::from_fn(|c, _| field[[0, i, j, k, c]])
        };
        let (mut outside, mut cut, mut inside) = (0.0f64, 0.0f64, 0.0f64);
        // The fold itself: the smallest det(I + eps G) over the corner Jacobians G of the cells
        // not wholly inside, at the amplitudes eps = +-1 / largest up to which the body cannot
        // fold (|eps G|_2 < 1 inside). G from the grid's values by the cell's edge differences,
        // written here apart from the solver's bound.
        let mut least_det = f64::INFINITY;
        let (mut rho_out, mut rho_cut) = (0.0f64, 0.0f64);
        for i in 0..spec.dims[0] - 1 {
            for j in 0..spec.dims[1] - 1 {
                for k in 0..spec.dims[2] - 1 {
                    let centre = spec.node(i, j, k) + Vector3::repeat(0.5 * h);
                    let at = grid.locate(&centre);
                    let norm = grid.cell_gradient_norm(&at, u);
                    let out = at
                        .corners
                        .iter()
                        .filter(|&&n| grid.values()[n] > 0.0)
                        .count();
                    let class = match out {
                        8 => &mut outside,
                        0 => &mut inside,
                        _ => &mut cut,
                    };
                    *class = class.max(norm);
                    if out > 0 {
                        let corner =
                            |a: usize, b: usize, c: usize| u(spec.index(i + a, j + b, k + c));
                        for (a, b, c) in (0..8).map(|n| (n >> 2, (n >> 1) & 1, n & 1)) {
                            let columns = [
                                (corner(1, b, c) - corner(0, b, c)) / h,
                                (corner(a, 1, c) - corner(a, 0, c)) / h,
                                (corner(a, b, 1) - corner(a, b, 0)) / h,
                            ];
                            let g = nalgebra::Matrix3::from_columns(&columns);
                            for eps in [1.0, -1.0].map(|s| s * (1.0 - 1e-9) / largest) {
                                let det = (nalgebra::Matrix3::identity() + g * eps).determinant();
                                least_det = least_det.min(det);
                            }
                            for l in g
                                .complex_eigenvalues()
                                .iter()
                                .filter(|l| l.im.abs() < 1e-12)
                            {
                                let slot = if out == 8 { &mut rho_out } else { &mut rho_cut };
                                *slot = slot.max(l.re.abs());
                            }
                        }
                    }
                }
            }
        }
        println!(
            "h {h}: largest |grad u|_2 inside {inside:.4}, cut by the surface {cut:.4}, outside {outside:.4}"
        );
        println!(
            "h {h}: least det(I + eps G) at the corners of the cells not wholly inside, |eps| = 1 / largest: {least_det:.4}; largest real |eigenvalue| of G cut {rho_cut:.4} outside {rho_out:.4}"
        );
        assert!(inside <= largest, "{inside}");
        // Neither in the cells the surface cuts, where queries near the surface land, nor in
        // those wholly outside does the continuation fold at any amplitude the body's own bound
        // admits (with its linear part out to sqrt(3) h it did outside: 1.230 and 1.161).
        assert!(rho_cut < largest, "h {h}: {rho_cut}");
        assert!(rho_out < largest, "h {h}: {rho_out}");
        assert!(least_det > 0.0, "h {h}: {least_det}");
        // Its norm grows no faster than the field's own analytic continuation, `largest r / 10`
        // at radius `r`, over the linear part's reach.
        let grown = largest * (1.0 + CONTINUATION_REACH * h / 10.0);
        assert!(outside <= grown, "h {h}: {outside} against {grown}");
    }
}

/// A one-mode FEM bundle with its mass and internal force replaced (the paper's Table 2: the
/// lookup table of Appendix B, eps in units of the radius, and a scaled modal mass): the table's
/// eps are scaled, its energies are the integrals of the interpolant (closed form for linear
/// data: `F = 4 e + 2` gives `U = 2 e^2 + 2 e`), `K` is its tangent at the last row, the damping
/// proportional to that `K`; or its modal mass scaled (any number of modes); the flags are
/// refused for what they cannot replace.
#[test]
fn a_fem_mode_takes_a_given_mass_and_internal_force_table() {
    let dir = tempfile::tempdir().unwrap();
    let (deck, modes, _) = cube_modes(dir.path());
    let table = dir.path().join("table.csv");
    // In units of 0.5: eps 0, 1, 2, 4 -> 0, 0.5, 1, 2; F = 4 e + 2 in the scaled eps.
    std::fs::write(&table, "eps,force\n0,2\n1,4\n2,6\n4,10\n").unwrap();
    let out = dir.path().join("cube.grain");
    let bake = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_levelset-bake"))
            .args(["mesh", deck.to_str().unwrap(), "--spacing", "0.5"])
            .args(["--modes", modes.to_str().unwrap(), "--out"])
            .arg(&out)
            .args(extra)
            .output()
            .unwrap()
    };
    let run = bake(&[
        "--modal-mass",
        "1e5",
        "--internal-force",
        table.to_str().unwrap(),
        "--table-eps-scale",
        "0.5",
        "--damping-beta",
        "0.1",
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let d = GrainBundle::read(&out).unwrap().deformation.unwrap();
    assert_eq!(d.modal_mass[[0, 0]], 1e5);
    assert!((d.modal_stiffness[[0, 0]] - 4.0).abs() < 1e-12);
    assert!((d.modal_damping[[0, 0]] - 0.4).abs() < 1e-12);
    let InternalForce::Table { table: t, .. } = &d.internal_force else {
        panic!("a table: {:?}", d.internal_force)
    };
    assert_eq!(t.eps, [0.0, 0.5, 1.0, 2.0]);
    for (e, u) in t.eps.iter().zip(&t.energy) {
        assert!((u - (2.0 * e * e + 2.0 * e)).abs() < 1e-12, "{e}: {u}");
    }
    let refused = bake(&["--modal-stiffness", "3"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--modal-stiffness"));
    // Selective mass scaling: the bundle's modal mass (3) times the factor, its stiffness (5)
    // and the damping proportional to it as they were; a factor <= 0 is refused by name.
    let run = bake(&["--modal-mass-scale", "36", "--damping-beta", "0.1"]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let d = GrainBundle::read(&out).unwrap().deformation.unwrap();
    assert_eq!(d.modal_mass[[0, 0]], 108.0);
    assert_eq!(d.modal_stiffness[[0, 0]], 5.0);
    assert!((d.modal_damping[[0, 0]] - 0.5).abs() < 1e-15);
    let refused = bake(&["--modal-mass-scale", "-2"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        stderr.contains("--modal-mass-scale: a positive number"),
        "{stderr}"
    );
    // Issue #23: a force pushing away from eps = 0, and an energy column that is not the
    // integral of the force (here twice the closed form U = 2 e^2 + 2 e), are refused by row.
    for (text, expected) in [
        (
            "eps,force\n0,0\n1,-4\n2,6\n",
            "row 2: force -4e0 at eps 1e0 pushes away from eps = 0",
        ),
        (
            "eps,force,energy\n0,2,0\n1,4,8\n2,6,24\n",
            "row 2: energy 8e0, but the integral of the forces from eps = 0 is 3e0",
        ),
    ] {
        std::fs::write(&table, text).unwrap();
        let refused = bake(&["--internal-force", table.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(!refused.status.success());
        assert!(
            stderr.contains("table.csv: internal force table:") && stderr.contains(expected),
            "{stderr}"
        );
    }
    // Issue #23: negative damping (it feeds energy in) is refused, naming the flag.
    for (flag, value) in [("--modal-damping", "-1"), ("--damping-beta", "-0.1")] {
        let refused = bake(&[flag, value]);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(!refused.status.success());
        assert!(
            stderr.contains(&format!("{flag}: a number >= 0")),
            "{stderr}"
        );
    }
}

/// Issue #23: the bending mode's stiffness must be positive (a mode without stiffness is no
/// deformation mode), named in the refusal.
#[test]
fn a_bending_mode_without_stiffness_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for k in ["0", "-5"] {
        let out = Command::new(env!("CARGO_BIN_EXE_levelset-bake"))
            .args(["box", "--size", "10", "2", "2", "--spacing", "0.5"])
            .args(["--bending-mode", "10", "--modal-mass", "1"])
            .args(["--modal-stiffness", k, "--out"])
            .arg(dir.path().join("b.grain"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            stderr.contains("--modal-stiffness: a positive number") && stderr.contains(k),
            "{stderr}"
        );
    }
}

/// `--samples path` precomputes the level sets at the path's own amplitudes (its FEM snapshots)
/// and at 0, exactly as listing those amplitudes does; without a path it is refused, naming the
/// option.
#[test]
fn samples_at_the_path_are_its_snapshots_and_need_a_path() {
    let dir = tempfile::tempdir().unwrap();
    let (deck, modes, f) = cube_modes(dir.path());
    let bake = |modes: &std::path::Path, samples: &str, out: &str| {
        Command::new(env!("CARGO_BIN_EXE_levelset-bake"))
            .args(["mesh", deck.to_str().unwrap(), "--spacing", "0.25"])
            .args(["--modes", modes.to_str().unwrap(), "--samples", samples])
            .args(["--out", dir.path().join(out).to_str().unwrap()])
            .output()
            .unwrap()
    };
    let refused = bake(&modes, "path", "none.grain");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        stderr.contains("--samples") && stderr.contains("path mode"),
        "{stderr}"
    );

    // A path through the mode at 1 whose midpoint is bent off the line (quadratic in x, which
    // the element reproduces).
    let mut bundle = ModesBundle::read(&modes).unwrap();
    let x = bundle.mesh.nodes.clone();
    bundle.path = Some(SnapshotPath {
        amplitudes: vec![0.5, 1.0],
        displacement: Array3::from_shape_fn((2, 20, 3), |(p, n, c)| {
            let at = Point3::new(x[[n, 0]], x[[n, 1]], x[[n, 2]]);
            let a = [0.5, 1.0][p];
            let bend = if c == 0 && p == 0 {
                0.05 * at.x * at.x
            } else {
                0.0
            };
            f(&at)[c] * a + bend
        }),
    });
    let path_modes = dir.path().join("path.modes");
    bundle.write(&path_modes).unwrap();
    for (samples, out) in [("path", "path.grain"), ("0.5,1", "listed.grain")] {
        let o = bake(&path_modes, samples, out);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let read = |out: &str| {
        GrainBundle::read(&dir.path().join(out))
            .unwrap()
            .deformation
            .unwrap()
            .precomputed
    };
    let (path, listed) = (read("path.grain"), read("listed.grain"));
    let amplitudes: Vec<f64> = path[0].iter().map(|s| s.amplitude).collect();
    assert_eq!(amplitudes, [0.0, 0.5, 1.0]);
    assert_eq!(path, listed);
    // Issue #33: `path` among amplitudes was taken alone, the amplitudes dropped; such a list,
    // or an item that is no finite amplitude, is refused whole with the forms accepted.
    for samples in ["0.25,path", "path,0.25", "0.25,,1", "0.25,inf"] {
        let o = bake(&path_modes, samples, "mixed.grain");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success()
                && stderr.contains(&format!(
                    "invalid value '{samples}' for '--samples <SAMPLES>': expected `path` alone (the path mode's own amplitudes) or finite amplitudes separated by commas"
                )),
            "{stderr}"
        );
    }
}

/// Issue #23: a precomputed level set at an amplitude that moves the surface past the grid was
/// computed on the grid all the same (the samples far out came out alike). Refused, naming the
/// mode and amplitude; amplitudes inside are baked.
#[test]
fn a_sample_that_moves_the_surface_off_the_grid_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (deck, modes, _) = cube_modes(dir.path());
    let bake = |samples: &str| {
        Command::new(env!("CARGO_BIN_EXE_levelset-bake"))
            .args(["mesh", deck.to_str().unwrap(), "--spacing", "0.25"])
            .args([
                "--modes",
                modes.to_str().unwrap(),
                &format!("--samples={samples}"),
            ])
            .args(["--out", dir.path().join("c.grain").to_str().unwrap()])
            .output()
            .unwrap()
    };
    // The mode moves a corner of the cube (half side 1) by |(0.3, 0.05, 0.3)| per unit
    // amplitude; the grid reaches 3 cells (0.75) past the cube.
    let o = bake("-0.5,0.5,1");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = bake("0.5,20");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        stderr.contains("--samples: mode 0 at amplitude 2e1: the deformed surface reaches")
            && stderr.contains("outside the grid"),
        "{stderr}"
    );
}
