//! Mirroring an octant bundle to the whole grain, checked against an independent computation:
//! the modal matrices integrated directly over the whole mesh, and closed forms.

use grain::{
    ElementType, FemMesh, ForceTable, InternalForce, Material, ModeConstruction, ModesBundle,
    ModesInfo, Normalization, Reconstruction, ReconstructionError, TableInterpolation,
};
use mode_extract::mirror::mirror;
use mode_extract::{Elastic, modal_matrices};
use ndarray::{Array2, Array3};

const MATERIAL: Elastic = Elastic {
    youngs_modulus: 210.0,
    poisson_ratio: 0.3,
    density: 7.8,
};

type Field = fn(f64, f64, f64) -> [f64; 3];

/// Fields symmetric about all three coordinate planes (`u_x` odd in `x`, even in `y`, `z`, ...).
const CUBIC: Field = |x, y, z| [x * (1.0 + y * y), y * (1.0 + z * z), z * (1.0 + x * x)];
const DILATION: Field = |x, y, z| [x, y, z];
const STRETCH: Field = |x, _, _| [x, 0.0, 0.0];

fn fields(mesh: &FemMesh, f: &[Field]) -> Array3<f64> {
    Array3::from_shape_fn((f.len(), mesh.nodes.nrows(), 3), |(a, n, c)| {
        f[a](mesh.nodes[[n, 0]], mesh.nodes[[n, 1]], mesh.nodes[[n, 2]])[c]
    })
}

fn octant_bundle(element: ElementType, f: &[Field]) -> ModesBundle {
    let mesh = fem::box_mesh(element, [0.0; 3], [1.0; 3], [2, 2, 2]);
    let phi = fields(&mesh, f);
    let (mass, stiffness) = modal_matrices(&mesh, &phi, &MATERIAL).unwrap();
    ModesBundle {
        info: ModesInfo {
            units: "test".into(),
            material: Material {
                youngs_modulus: MATERIAL.youngs_modulus,
                poisson_ratio: MATERIAL.poisson_ratio,
                density: MATERIAL.density,
            },
            sources: vec![],
            construction: ModeConstruction::Single {
                snapshot: "fields".into(),
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
        mass,
        stiffness,
        coords: Array2::zeros((0, f.len())),
        internal_force: InternalForce::Linear,
        path: None,
        flexibility: None,
    }
}

fn assert_close(got: &Array2<f64>, want: &Array2<f64>, rel: f64) {
    let scale = want.iter().map(|x| x.abs()).fold(0.0, f64::max);
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= rel * scale, "{got} vs {want}");
    }
}

#[test]
fn mirrored_c3d20_octant_equals_the_whole_cube() {
    let octant = octant_bundle(ElementType::Hex20, &[CUBIC, DILATION]);
    let whole = mirror(&octant, &[0, 1, 2]).unwrap();
    let direct = fem::box_mesh(ElementType::Hex20, [-1.0; 3], [1.0; 3], [4, 4, 4]);
    assert_eq!(whole.mesh.nodes.nrows(), direct.nodes.nrows());
    assert_eq!(whole.info.mirror_planes, "xyz");
    assert_eq!(
        fem::boundary(&whole.mesh).triangles.len(),
        fem::boundary(&direct).triangles.len(),
        "the mirrored mesh is closed: faces on the planes are shared, not duplicated"
    );
    // The mirrored mode vectors are the fields at the mirrored nodes.
    assert_eq!(whole.phi, fields(&whole.mesh, &[CUBIC, DILATION]));
    // Its matrices (doubled per plane) equal those integrated over the whole cube; integrating
    // over the mirrored mesh also checks every reflected element keeps a positive Jacobian.
    let (m, k) = modal_matrices(&direct, &fields(&direct, &[CUBIC, DILATION]), &MATERIAL).unwrap();
    assert_close(&whole.mass, &m, 1e-12);
    assert_close(&whole.stiffness, &k, 1e-12);
    let (m2, k2) = modal_matrices(&whole.mesh, &whole.phi, &MATERIAL).unwrap();
    assert_close(&m2, &m, 1e-12);
    assert_close(&k2, &k, 1e-12);
}

#[test]
fn mirrored_tetrahedra_keep_positive_volume_and_match_closed_forms() {
    for element in [ElementType::Tet4, ElementType::Tet10] {
        let octant = octant_bundle(element, &[DILATION, STRETCH]);
        let whole = mirror(&octant, &[0, 1, 2]).unwrap();
        let (m, k) = modal_matrices(&whole.mesh, &whole.phi, &MATERIAL).unwrap();
        // Over the cube [-1, 1]^3 (volume 8): u = (x, y, z) has strain I, energy density
        // (9 lambda + 6 mu) / 2; u = (x, 0, 0) has strain e_x e_x. M_ab = rho int u_a . u_b.
        let (lambda, mu) = MATERIAL.lame();
        let rho = MATERIAL.density;
        let want_k = Array2::from_shape_vec(
            (2, 2),
            vec![
                8.0 * (9.0 * lambda + 6.0 * mu),
                8.0 * (3.0 * lambda + 2.0 * mu),
                8.0 * (3.0 * lambda + 2.0 * mu),
                8.0 * (lambda + 2.0 * mu),
            ],
        )
        .unwrap();
        let want_m = Array2::from_shape_vec(
            (2, 2),
            vec![8.0 * rho, 8.0 * rho / 3.0, 8.0 * rho / 3.0, 8.0 * rho / 3.0],
        )
        .unwrap();
        assert_close(&m, &want_m, 1e-12);
        assert_close(&whole.mass, &want_m, 1e-12);
        assert_close(&k, &want_k, 1e-12);
        assert_close(&whole.stiffness, &want_k, 1e-12);
    }
}

#[test]
fn tabulated_force_and_energy_double_per_plane() {
    let mut octant = octant_bundle(ElementType::Hex8, &[STRETCH]);
    octant.internal_force = InternalForce::Table {
        interpolation: TableInterpolation::MonotoneCubic,
        table: ForceTable {
            eps: vec![0.0, 0.1, 0.2],
            force: vec![0.0, 1.0, 3.0],
            energy: vec![0.0, 0.05, 0.25],
        },
    };
    let whole = mirror(&octant, &[0, 2]).unwrap();
    let InternalForce::Table { table, .. } = &whole.internal_force else {
        panic!("the law stays tabulated");
    };
    assert_eq!(table.eps, vec![0.0, 0.1, 0.2]);
    assert_eq!(table.force, vec![0.0, 4.0, 12.0]);
    assert_eq!(table.energy, vec![0.0, 0.2, 1.0]);
    assert_eq!(whole.mass, &octant.mass * 4.0);
}

#[test]
fn a_mesh_across_the_plane_is_refused() {
    let mut b = octant_bundle(ElementType::Hex8, &[STRETCH]);
    b.mesh.nodes.column_mut(1).mapv_inplace(|y| y - 0.5);
    let err = mirror(&b, &[0, 1]).unwrap_err();
    assert!(matches!(
        err,
        mode_extract::mirror::MirrorError::Sides { axis: 'y', .. }
    ));
    assert!(err.to_string().contains("both sides"), "{err}");
}

#[test]
fn nodes_no_element_uses_are_dropped() {
    let b = octant_bundle(ElementType::Hex8, &[STRETCH]);
    let mut with_plate = b.clone();
    // A rigid plate's node across the plane, as in a deck with analytical walls.
    with_plate
        .mesh
        .nodes
        .push_row(ndarray::aview1(&[-2.0, 0.5, 0.5]))
        .unwrap();
    with_plate.phi = fields(&with_plate.mesh, &[STRETCH]);
    assert_eq!(
        mirror(&with_plate, &[0]).unwrap(),
        mirror(&b, &[0]).unwrap()
    );
}

#[test]
fn mass_normalized_modes_stay_mass_normalized() {
    let mut octant = octant_bundle(ElementType::Hex20, &[CUBIC]);
    let s = octant.mass[[0, 0]].sqrt();
    octant.phi /= s;
    octant.mass /= s * s;
    octant.stiffness /= s * s;
    octant.info.normalization = Normalization::Mass;
    octant.coords = Array2::from_elem((1, 1), 0.3);
    // A tabulated law U = k eps^2 / 2 with the octant's stiffness.
    let k = octant.stiffness[[0, 0]];
    let eps = vec![0.0, 0.5, 1.0];
    octant.internal_force = InternalForce::Table {
        interpolation: TableInterpolation::Linear,
        table: ForceTable {
            force: eps.iter().map(|e| k * e).collect(),
            energy: eps.iter().map(|e| k * e * e / 2.0).collect(),
            eps,
        },
    };
    let whole = mirror(&octant, &[0, 1, 2]).unwrap();
    // Integrated independently over the mirrored mesh: M = 1 still, K unchanged.
    let (m, k_whole) = modal_matrices(&whole.mesh, &whole.phi, &MATERIAL).unwrap();
    assert!((m[[0, 0]] - 1.0).abs() < 1e-12, "{m}");
    assert!((whole.mass[[0, 0]] - 1.0).abs() < 1e-12);
    assert!((k_whole[[0, 0]] - k).abs() < 1e-12 * k);
    assert!((whole.stiffness[[0, 0]] - k).abs() < 1e-12 * k);
    // The same deformation: eps * phi is unchanged on the octant, so eps grows by sqrt(8).
    let r = 8f64.sqrt();
    assert!((whole.coords[[0, 0]] - 0.3 * r).abs() < 1e-12);
    // The tabulated law is still U = K eps^2 / 2 with the unchanged K, at the scaled amplitudes.
    let InternalForce::Table { table, .. } = &whole.internal_force else {
        panic!("a table")
    };
    for ((e, f), u) in table.eps.iter().zip(&table.force).zip(&table.energy) {
        assert!((f - k * e).abs() <= 1e-12 * k, "{f} vs {}", k * e);
        assert!((u - k * e * e / 2.0).abs() <= 1e-12 * k, "{u}");
    }
    assert!((table.eps[2] - r).abs() < 1e-12);
}

/// `--remove-rigid` (mode_extract::rigid): a rigid field (a translation and a rotation about
/// the centre of mass, here (0.5, 0.5, 0.5) of the unit cube) is removed to round-off, and a
/// deformation plus a rigid field leaves a field that moves no mass and has no angular moment
/// about the centre (its mass cross terms with the six rigid fields vanish, integrated
/// independently by modal_matrices over the mesh), equal to the deformation's own cleaned
/// field (the projection is linear); the path's points are cleaned alike, and the stiffness
/// of the modes does not change (a rigid field has no strain).
#[test]
fn removing_the_rigid_motion_leaves_deformation_about_the_centre_of_mass() {
    const RIGID: Field = |x, _, z| [0.3 + 0.2 * (z - 0.5), -0.1, -0.2 * (x - 0.5)];
    const LOADED: Field = |x, y, z| {
        let (r, c) = (RIGID(x, y, z), CUBIC(x, y, z));
        [r[0] + c[0], r[1] + c[1], r[2] + c[2]]
    };
    let mut b = octant_bundle(ElementType::Hex20, &[RIGID, LOADED, CUBIC]);
    b.path = Some(grain::SnapshotPath {
        amplitudes: vec![0.5, 1.0],
        displacement: fields(&b.mesh, &[LOADED, RIGID]),
    });
    let clean = mode_extract::rigid::remove_rigid(&b).unwrap();
    let n = b.mesh.nodes.nrows();
    let largest = |m: &Array3<f64>, a: usize| {
        (0..n)
            .flat_map(|k| (0..3).map(move |c| (k, c)))
            .map(|(k, c)| m[[a, k, c]].abs())
            .fold(0.0, f64::max)
    };
    assert!(largest(&clean.phi, 0) < 1e-12, "{}", largest(&clean.phi, 0));
    let path = clean.path.as_ref().unwrap();
    assert!(largest(&path.displacement, 1) < 1e-12);
    for k in 0..n {
        for c in 0..3 {
            assert!((clean.phi[[1, k, c]] - clean.phi[[2, k, c]]).abs() < 1e-12);
            assert!((path.displacement[[0, k, c]] - clean.phi[[2, k, c]]).abs() < 1e-12);
        }
    }
    let six: [Field; 6] = [
        |_, _, _| [1.0, 0.0, 0.0],
        |_, _, _| [0.0, 1.0, 0.0],
        |_, _, _| [0.0, 0.0, 1.0],
        |_, y, z| [0.0, -(z - 0.5), y - 0.5],
        |x, _, z| [z - 0.5, 0.0, -(x - 0.5)],
        |x, y, _| [-(y - 0.5), x - 0.5, 0.0],
    ];
    let mut both = fields(&b.mesh, &six);
    let cleaned = clean.phi.index_axis(ndarray::Axis(0), 1);
    both.append(ndarray::Axis(0), cleaned.insert_axis(ndarray::Axis(0)))
        .unwrap();
    let (mass, _) = modal_matrices(&b.mesh, &both, &MATERIAL).unwrap();
    for j in 0..6 {
        let scale = (mass[[j, j]] * mass[[6, 6]]).sqrt();
        assert!(
            mass[[j, 6]].abs() < 1e-12 * scale,
            "rigid field {j}: {}",
            mass[[j, 6]]
        );
    }
    // The bundle keeps its stiffness: that of the cleaned modes, integrated anew, is the same.
    let (_, stiffness) = modal_matrices(&b.mesh, &clean.phi, &MATERIAL).unwrap();
    assert_close(&stiffness, &b.stiffness, 1e-10);
    assert_close(&clean.stiffness, &b.stiffness, 0.0);
}
