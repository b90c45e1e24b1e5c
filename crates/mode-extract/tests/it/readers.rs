//! Snapshot readers on golden files: real CalculiX output (tests/data/*.frd, made by CalculiX
//! 2.20 from the decks beside them), an Abaqus report with two blocks and wrapped rows, CSV and
//! VTK; and every reader's messages for malformed input.

use std::path::{Path, PathBuf};

use fem::Deck;
use fem::{read_frd, read_nodal_table};
use grain::ElementType;
use grain::vtk::{PointData, PvdEntry, write_pvd, write_vtu};
use mode_extract::snapshots::{Read, read};

/// VTK snapshots without a deck: the file's mesh and the snapshot matrix.
fn read_vtk(
    files: &[PathBuf],
    field: &str,
) -> Result<(grain::FemMesh, mode_extract::snapshots::Snapshots), fem::InputError> {
    let Read {
        part, snapshots, ..
    } = read(files, None, None, field, None)?;
    Ok((part.mesh, snapshots))
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

#[test]
fn calculix_frd_gives_the_deck_mesh_and_every_increment() {
    let frd = read_frd(&data("tiny.frd")).unwrap();
    let (mesh, snaps) = (frd.part.mesh, frd.displacements);
    let deck = Deck::read(&data("tiny.inp"))
        .unwrap()
        .part(None)
        .unwrap()
        .mesh;
    assert_eq!(mesh, deck);
    assert_eq!(snaps.len(), 3);
    assert!(
        snaps[0].id.ends_with("step time 3.40000E-01"),
        "{}",
        snaps[0].id
    );
    // The top nodes (5-8, 11, 12) move down by 0.34, 0.68, 1.0 of 0.01 (the prescribed boundary);
    // .frd writes those values with no space before the minus sign.
    for (s, fraction) in snaps.iter().zip([0.34, 0.68, 1.0]) {
        for top in [4, 5, 6, 7, 10, 11] {
            assert!(
                (s.values[top][2] + 0.01 * fraction).abs() < 1e-12,
                "{}: node {}",
                s.id,
                top + 1
            );
        }
        assert_eq!(s.values[0], [0.0; 3]);
    }
}

#[test]
fn frd_twenty_node_bricks_are_put_back_in_abaqus_order() {
    let frd = read_frd(&data("hex20.frd")).unwrap();
    let (mesh, snaps) = (frd.part.mesh, frd.displacements);
    let deck = Deck::read(&data("hex20.inp"))
        .unwrap()
        .part(None)
        .unwrap()
        .mesh;
    assert_eq!(mesh.blocks[0].element_type, ElementType::Hex20);
    assert_eq!(mesh, deck);
    assert_eq!(snaps.len(), 1);
}

#[test]
fn abaqus_report_with_wrapped_rows_and_two_blocks() {
    let table = read_nodal_table(&data("two_blocks.rpt")).unwrap();
    assert_eq!(
        table.at(&[10, 1, 2, 3]).unwrap(),
        vec![
            [1.25e-2, -2.5e-3, 3e-3],
            [-746.369e-6, 700e-6, 0.0],
            [0.0, -1.5e-3, 0.0],
            [0.0; 3]
        ]
    );
    assert_eq!(table.at(&[1, 2, 4]), Err(vec![4]));
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn csv_tables_and_their_errors() {
    let dir = tempfile::tempdir().unwrap();
    let ok = write(
        dir.path(),
        "u.csv",
        "# comment\nU3,node,U1,u2\n3.0,7,1.0,2.0\n-1,8,0.,5e-3\n",
    );
    assert_eq!(
        read_nodal_table(&ok).unwrap().at(&[8, 7]).unwrap(),
        vec![[0.0, 5e-3, -1.0], [1.0, 2.0, 3.0]]
    );
    let e = read_nodal_table(&write(dir.path(), "a.csv", "node,u1,u2\n1,0,0\n"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("a.csv: line 1: no column `u3`"), "{e}");
    let e = read_nodal_table(&write(dir.path(), "b.csv", "node,u1,u2,u3\n1,0,x,0\n"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("b.csv: line 2: `x` is not a finite number"),
        "{e}"
    );
    // Found by mutating inputs (issue #14): `inf` parsed as a number and went on.
    let e = read_nodal_table(&write(dir.path(), "i.csv", "node,u1,u2,u3\n1,0,inf,0\n"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("i.csv: line 2: `inf` is not a finite number"),
        "{e}"
    );
    let e = read_nodal_table(&write(
        dir.path(),
        "c.csv",
        "node,u1,u2,u3\n1,0,0,0\n1,0,0,0\n",
    ))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("c.csv: line 3: node 1 appears twice (first on line 2)"),
        "{e}"
    );
}

#[test]
fn malformed_reports_and_frd_name_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let e = read_nodal_table(&write(dir.path(), "a.rpt", "nothing here\n"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("a.rpt: no block with columns"), "{e}");
    let rpt = "            Node           U.U1           U.U2           U.U3\n           Label          @Loc 1         @Loc 1         @Loc 1\n----------\n     1   0.   oops   0.\n";
    let e = read_nodal_table(&write(dir.path(), "b.rpt", rpt))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("b.rpt: line 4: `oops` is not a finite number"),
        "{e}"
    );
    let rpt = "            Node           U.U1           U.U2           U.U3\n----------\n     1   0.   0.\n\n";
    let e = read_nodal_table(&write(dir.path(), "c.rpt", rpt))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("c.rpt: line 3: row of node 1 has 2 values, the header 3"),
        "{e}"
    );
    let frd = std::fs::read_to_string(data("tiny.frd")).unwrap().replacen(
        " 1.00000E+00 0.00000E+00 0.00000E+00",
        " 1.0000XE+00 0.00000E+00 0.00000E+00",
        1,
    );
    let e = read_frd(&write(dir.path(), "bad.frd", &frd))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("bad.frd: line 15: `1.0000XE+00` (columns 14-25) is not a number"),
        "{e}"
    );
    let e = read_frd(&write(dir.path(), "empty.frd", "    1C\n 9999\n"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("empty.frd: no node or element block"), "{e}");
}

#[test]
fn vtk_snapshots_through_a_pvd_and_their_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mesh = fem::box_mesh(ElementType::Tet10, [0.0; 3], [1.0, 1.0, 2.0], [1, 1, 2]);
    let n = mesh.nodes.nrows();
    let mut entries = vec![];
    for s in 0..3 {
        let u: Vec<f64> = (0..3 * n).map(|k| (k * (s + 1)) as f64 * 1e-3).collect();
        let file = format!("snap{s}.vtu");
        write_vtu(
            &dir.path().join(&file),
            &mesh,
            &[
                PointData::Vectors("U", &u),
                PointData::Scalars("mises", &vec![0.0; n]),
            ],
        )
        .unwrap();
        entries.push(PvdEntry {
            time: s as f64,
            file: file.into(),
        });
    }
    let pvd = dir.path().join("run.pvd");
    write_pvd(&pvd, &entries).unwrap();
    let (got_mesh, snaps) = read_vtk(&[pvd], "U").unwrap();
    assert_eq!(got_mesh, mesh);
    assert_eq!(snaps.ids.len(), 3);
    assert!(snaps.ids[2].ends_with("snap2.vtu"), "{:?}", snaps.ids);
    assert_eq!(
        [3, 4, 5].map(|r| snaps.matrix[(r, 2)]),
        [9.0 * 1e-3, 12.0 * 1e-3, 15.0 * 1e-3]
    );
    let e = read_vtk(&[dir.path().join("snap0.vtu")], "DISP")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("snap0.vtu: no point data `DISP` (point data: U, mises)"),
        "{e}"
    );
    let mut moved = mesh.clone();
    moved.nodes[[0, 0]] = -0.5;
    let u = vec![0.0; 3 * n];
    write_vtu(
        &dir.path().join("moved.vtu"),
        &moved,
        &[PointData::Vectors("U", &u)],
    )
    .unwrap();
    let e = read_vtk(
        &[dir.path().join("snap0.vtu"), dir.path().join("moved.vtu")],
        "U",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("moved.vtu: its points differ from the first snapshot's"),
        "{e}"
    );
    let raw = write(
        dir.path(),
        "raw.vtu",
        "<VTKFile type=\"UnstructuredGrid\"><AppendedData encoding=\"raw\">_",
    );
    let e = read_vtk(&[raw], "U").unwrap_err().to_string();
    assert!(e.contains("raw.vtu: raw appended binary data cannot be read; save the file with \"Encode appended data\""), "{e}");
}

/// A legacy ASCII `.vtk` file of one linear tetrahedron, as ParaView's "Save Data" and older
/// Abaqus/CalculiX converters write it, with `U` as VECTORS or inside a FIELD attribute.
fn legacy_vtk(point_data: &str) -> String {
    format!(
        "# vtk DataFile Version 3.0\nsnapshot\nASCII\nDATASET UNSTRUCTURED_GRID\n\
         POINTS 4 double\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n\
         CELLS 1 5\n4 0 1 2 3\nCELL_TYPES 1\n10\n\
         POINT_DATA 4\n{point_data}"
    )
}

#[test]
fn legacy_vtk_vectors_and_field_attributes() {
    let dir = tempfile::tempdir().unwrap();
    let values = "0 0 0\n0.1 0 0\n0 0.2 0\n0 0 -0.3\n";
    let vectors = write(
        dir.path(),
        "vectors.vtk",
        &legacy_vtk(&format!("VECTORS U double\n{values}")),
    );
    let field = write(
        dir.path(),
        "field.vtk",
        &legacy_vtk(&format!(
            "FIELD FieldData 2\nT 1 4 double\n20 20 20 20\nU 3 4 double\n{values}"
        )),
    );
    let want = vec![[0.0; 3], [0.1, 0.0, 0.0], [0.0, 0.2, 0.0], [0.0, 0.0, -0.3]];
    for file in [&vectors, &field] {
        let (mesh, snaps) = read_vtk(std::slice::from_ref(file), "U").unwrap();
        assert_eq!(mesh.blocks[0].element_type, ElementType::Tet4);
        assert_eq!(mesh.nodes[[3, 2]], 1.0);
        let column: Vec<[f64; 3]> = (0..4)
            .map(|k| [0, 1, 2].map(|c| snaps.matrix[(3 * k + c, 0)]))
            .collect();
        assert_eq!(column, want, "{}", file.display());
    }
    let e = read_vtk(&[field], "T").unwrap_err().to_string();
    assert!(
        e.contains("field.vtk: point data `T` has 1 components, expected 3"),
        "{e}"
    );
}

#[test]
fn gzipped_results_read_like_plain_ones() {
    let dir = tempfile::tempdir().unwrap();
    let gz = dir.path().join("tiny.frd.gz");
    let mut encoder = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::default(),
    );
    std::io::Write::write_all(&mut encoder, &std::fs::read(data("tiny.frd")).unwrap()).unwrap();
    encoder.finish().unwrap();
    let plain = read_frd(&data("tiny.frd")).unwrap();
    let zipped = read_frd(&gz).unwrap();
    assert_eq!(zipped.part, plain.part);
    assert_eq!(
        zipped
            .displacements
            .iter()
            .map(|s| &s.values)
            .collect::<Vec<_>>(),
        plain
            .displacements
            .iter()
            .map(|s| &s.values)
            .collect::<Vec<_>>()
    );
    assert_eq!(fem::kind(&gz), "frd");
}
