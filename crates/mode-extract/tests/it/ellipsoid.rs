//! A user's own CalculiX run, not the sphere (data/fem/ellipsoid, made by `cargo xtask fem
//! ellipsoid`): an octant of an ellipsoid pressed by one rigid plate whose C3D8 element is in the
//! deck, `*NODE FILE` written for the grain's node set only, the same results converted to VTK
//! by ccx2paraview (whose files hold the plate too) and three increments as Abaqus-style reports.
//! Every reading of the same results must give the same snapshots; the references are the
//! CalculiX tables (`ellipsoid.dat` via `ellipsoid_scalars.csv`).

use std::path::{Path, PathBuf};

use grain::{InternalForce, ModesBundle, Normalization};
use mode_extract::{ExtractOptions, Method, extract};

fn case(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/fem/ellipsoid")
        .join(name)
}

/// The grain's element set of the deck, one mode at the last increment.
fn options(snapshots: Vec<PathBuf>, normalization: Normalization) -> ExtractOptions {
    ExtractOptions {
        mesh: Some(case("ellipsoid.inp")),
        element_set: Some("GRAIN".into()),
        method: Method::Single,
        normalization,
        units: "mm, N, MPa".into(),
        scalars: Some(case("ellipsoid_scalars.csv")),
        ..ExtractOptions::new(snapshots)
    }
}

fn plate() -> Normalization {
    Normalization::Boundary {
        name: "plate".into(),
    }
}

fn vtk() -> Vec<PathBuf> {
    vec![case("vtk/ellipsoid.pvd")]
}

/// (scalars file) strain energy, force and displacement of the plate per increment.
fn scalars() -> Vec<[f64; 3]> {
    let text = std::fs::read_to_string(case("ellipsoid_scalars.csv")).unwrap();
    text.lines()
        .skip(1)
        .map(|l| {
            let v: Vec<f64> = l.split(',').map(|x| x.parse().unwrap()).collect();
            [v[1], v[2], v[3]]
        })
        .collect()
}

/// The options with the scalars' rows paired in order: the shipped scalars name the .frd's
/// increments, which its VTK conversion lists in the same order.
fn in_order(o: ExtractOptions) -> ExtractOptions {
    ExtractOptions {
        scalars_pairing: fem::Pairing::Position,
        ..o
    }
}

fn table(b: &ModesBundle) -> &grain::ForceTable {
    let InternalForce::Table { table, .. } = &b.internal_force else {
        panic!("a table")
    };
    table
}

/// (a): the .frd's DISP blocks cover the grain's 986 nodes, not the plate's 8: read by label.
/// Without the deck the file's own mesh includes the plate, and the message says what to give;
/// a control node set without results (the plate's) is named, with what to do.
#[test]
fn a_frd_written_for_the_grains_node_set_is_read_by_label() {
    let b = extract(&options(vec![case("ellipsoid.frd.gz")], plate())).unwrap();
    let deck = fem::Deck::read(&case("ellipsoid.inp")).unwrap();
    let grain = deck.part(Some("GRAIN")).unwrap();
    assert_eq!(b.mesh, grain.mesh);
    assert_eq!(b.mesh.nodes.nrows(), deck.node_sets["GRAINN"].len());
    assert_eq!(b.coords.nrows(), 10);

    let e = extract(&ExtractOptions {
        material: mode_extract::MaterialOptions {
            youngs_modulus: Some(1000.0),
            poisson_ratio: Some(0.3),
            density: Some(1e-9),
        },
        method: Method::Single,
        ..ExtractOptions::new(vec![case("ellipsoid.frd.gz")])
    })
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("ellipsoid.frd.gz: increment 1 step time 1.00000E-01 has no displacement at 8 of the file's 994 nodes (node 988, 989")
            && e.contains("give the deck (--mesh) and the grain's element set (--elset)"),
        "{e}"
    );
    let e = extract(&options(
        vec![case("ellipsoid.frd.gz")],
        Normalization::Control {
            node_set: "plate".into(),
            direction: [-1.0, 0.0, 0.0],
        },
    ))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("node set `plate` has no results at 8 of its 8 nodes")
            && e.contains("--normalize boundary=NAME --scalars FILE"),
        "{e}"
    );
}

/// (b): ccx2paraview's files hold the plate's C3D8 and have no node labels; the deck's element
/// set still chooses the grain (elements matched by place), and the snapshots are the .frd's.
#[test]
fn vtk_snapshots_of_the_whole_model_take_the_decks_element_set() {
    let from_frd = extract(&options(vec![case("ellipsoid.frd.gz")], plate())).unwrap();
    // The scalars' labels name the .frd's increments; its VTK conversion lists them in order.
    let from_vtk = extract(&in_order(options(vtk(), plate()))).unwrap();
    assert_eq!(from_vtk.mesh, from_frd.mesh);
    assert_eq!(from_vtk.coords, from_frd.coords);
    assert_eq!(from_vtk.stiffness, from_frd.stiffness);
    assert_eq!(from_vtk.phi, from_frd.phi);
    // A node set outside the grain is found through the plate's cell.
    let by_plate = extract(&in_order(options(
        vtk(),
        Normalization::Control {
            node_set: "PLATE".into(),
            direction: [-1.0, 0.0, 0.0],
        },
    )))
    .unwrap();
    for (a, b) in by_plate.coords.iter().zip(&from_frd.coords) {
        assert!((a - b).abs() <= 1e-15, "{a} vs {b}");
    }
    // Without the deck, the file's mesh is the grain: here, with the plate in it.
    let whole = extract(&ExtractOptions {
        material: mode_extract::MaterialOptions {
            youngs_modulus: Some(1000.0),
            poisson_ratio: Some(0.3),
            density: Some(1e-9),
        },
        method: Method::Single,
        ..ExtractOptions::new(vtk())
    })
    .unwrap();
    assert_eq!(whole.mesh.nodes.nrows(), 994);
    assert!(
        whole
            .mesh
            .blocks
            .iter()
            .any(|b| b.element_type == grain::ElementType::Hex8)
    );
}

/// (c): with a size normalization the amplitudes grow with the loading (positive), and the
/// internal force's energy is zero at eps = 0.
#[test]
fn loading_gives_positive_amplitudes_and_the_energy_starts_at_zero() {
    for normalization in [
        Normalization::UnitMax,
        Normalization::UnitL2,
        Normalization::Mass,
    ] {
        let b = extract(&options(
            vec![case("ellipsoid.frd.gz")],
            normalization.clone(),
        ))
        .unwrap();
        let eps: Vec<f64> = b.coords.column(0).to_vec();
        assert!(eps.iter().all(|&e| e > 0.0), "{normalization:?}: {eps:?}");
        assert!(eps.windows(2).all(|w| w[1] > w[0]), "{normalization:?}");
        let t = table(&b);
        let origin = t.eps.iter().position(|&e| e == 0.0).unwrap();
        assert_eq!(t.energy[origin], 0.0, "{normalization:?}");
        assert!(t.energy.iter().all(|&u| u >= 0.0), "{normalization:?}");
    }
}

/// (d): eps tied to the plate's displacement (the paper's choice): the reaction-force table is the
/// plate's reaction, its energy (the exact integral of the interpolated force) is the FEM strain
/// energy within 3 % of the largest, and modes.json gives the two fits' difference per snapshot.
#[test]
fn eps_tied_to_the_plate_makes_its_reaction_the_generalized_force() {
    let b = extract(&options(vec![case("ellipsoid.frd.gz")], plate())).unwrap();
    let fem = scalars();
    let t = table(&b);
    let largest = fem.iter().fold(0.0f64, |m, r| m.max(r[0]));
    let mut worst: f64 = 0.0;
    for (i, row) in fem.iter().enumerate() {
        let k = i + 1; // row 0 is the origin
        assert_eq!(t.eps[k], row[2]);
        assert!(
            (t.force[k] - row[1]).abs() <= 1e-12 * row[1],
            "{} vs {}",
            t.force[k],
            row[1]
        );
        worst = worst.max((t.energy[k] - row[0]).abs() / largest);
    }
    println!("energy of the reaction-force table against CalculiX's: {worst:.2e} of the largest");
    assert!(worst <= 0.03, "{worst}");
    let fit = b.info.fit.as_ref().unwrap();
    assert_eq!(fit.per_snapshot.len(), 10);
    assert!(
        fit.per_snapshot[9]
            .snapshot
            .ends_with("step time 1.00000E+00")
    );
    let largest_difference = fit
        .per_snapshot
        .iter()
        .fold(0.0f64, |m, d| m.max(d.difference.abs()));
    assert_eq!(fit.energy_vs_force, Some(largest_difference));
    println!("fits differ by {largest_difference:.3e} at most");
    assert!(largest_difference <= 0.03);
}

/// Abaqus-style data: the deck and field-output reports of three increments (two blocks each)
/// give the .frd's snapshots of those increments.
#[test]
fn abaqus_reports_give_the_frds_increments() {
    let reports: Vec<PathBuf> = [3, 6, 10]
        .iter()
        .map(|k| case(&format!("rpt/increment-{k}.rpt")))
        .collect();
    // Two modes from increments 3 and 10 (6 held out) read either way.
    let two_modes = |snapshots: Vec<PathBuf>, held: Vec<String>| ExtractOptions {
        method: Method::Svd(mode_extract::modes::Keep::Count(2)),
        scalars: None,
        holdout_snapshots: held,
        ..options(snapshots, Normalization::UnitL2)
    };
    let from_rpt = extract(&two_modes(reports, vec!["increment-6.rpt".into()])).unwrap();
    let from_frd = extract(&two_modes(
        vec![case("ellipsoid.frd.gz")],
        [1, 2, 4, 5, 6, 7, 8, 9]
            .map(|k| format!("step time {k}.00000E-01"))
            .to_vec(),
    ))
    .unwrap();
    assert_eq!(from_rpt.mesh, from_frd.mesh);
    assert_eq!(from_rpt.phi, from_frd.phi);
    assert_eq!(from_rpt.stiffness, from_frd.stiffness);
}

/// (c) and (d) on Abaqus-style data: the reports of three increments with a scalars file of those
/// increments give positive amplitudes, and with eps tied to the plate the reaction as the
/// generalized force.
#[test]
fn abaqus_reports_tie_eps_to_the_plate_too() {
    let dir = tempfile::tempdir().unwrap();
    let fem = scalars();
    // Rows named by the reports' stems, in another order than the snapshots (issue #23: the
    // labels were ignored and the rows paired by position).
    let mut csv = String::from("snapshot,strain_energy,force_plate,displacement_plate\n");
    for k in [10, 3, 6] {
        let [u, f, d] = fem[k - 1];
        csv.push_str(&format!("increment-{k},{u:e},{f:e},{d:e}\n"));
    }
    let path = dir.path().join("scalars.csv");
    std::fs::write(&path, &csv).unwrap();
    let reports: Vec<PathBuf> = [3, 6, 10]
        .iter()
        .map(|k| case(&format!("rpt/increment-{k}.rpt")))
        .collect();
    let b = extract(&ExtractOptions {
        scalars: Some(path.clone()),
        ..options(reports.clone(), plate())
    })
    .unwrap();
    let t = table(&b);
    for (k, i) in [3, 6, 10].iter().enumerate() {
        assert_eq!(t.eps[k + 1], fem[i - 1][2]);
        assert!((t.force[k + 1] - fem[i - 1][1]).abs() <= 1e-12 * fem[i - 1][1]);
    }
    let b = extract(&ExtractOptions {
        scalars: Some(path.clone()),
        ..options(reports.clone(), Normalization::UnitMax)
    })
    .unwrap();
    assert!(b.coords.iter().all(|&e| e > 0.0), "{:?}", b.coords);
    assert_eq!(table(&b).energy[0], 0.0);

    // Labels that name no snapshot, or two, or one snapshot twice, are refused with the line.
    for (from, to, expected) in [
        (
            "increment-3,",
            "3,",
            "line 3: snapshot `3` names none of the 3 snapshots",
        ),
        ("increment-3,", "increment-6,", "line 4: snapshot `"),
    ] {
        std::fs::write(&path, csv.replace(from, to)).unwrap();
        let e = extract(&ExtractOptions {
            scalars: Some(path.clone()),
            ..options(reports.clone(), plate())
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("scalars.csv") && e.contains(expected), "{e}");
    }
    // Paired in order when asked: the rows as written are increments 10, 3, 6, so the first
    // snapshot (increment 3) takes increment 10's plate displacement as its amplitude, and the
    // amplitudes then fall from the first snapshot to the second (refused since issue #33).
    std::fs::write(&path, &csv).unwrap();
    let e = extract(&ExtractOptions {
        scalars: Some(path),
        scalars_pairing: fem::Pairing::Position,
        ..options(reports, plate())
    })
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(&format!("increment-3.rpt` (eps {:e})", fem[9][2])),
        "{e}"
    );
}
