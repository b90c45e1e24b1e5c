//! Every VTK writer, read back with vtkio (an independent reader) and compared value by value.

use std::path::PathBuf;

use grain::vtk::{PointData, PvdEntry, read_pvd, write_pvd, write_vti, write_vtp, write_vtu};
use grain::{ElementBlock, ElementType, FemMesh, GridSpec};
use ndarray::{Array2, array};
use vtkio::model::{
    Attribute, CellType, DataSet, Extent, ImageDataPiece, PolyDataPiece, UnstructuredGridPiece,
    VertexNumbers, Vtk,
};

fn point_array(attributes: &[Attribute], name: &str) -> (u32, Vec<f64>) {
    let found = attributes.iter().find(|a| a.name() == name);
    match found {
        Some(Attribute::DataArray(d)) => (
            d.elem.num_comp(),
            d.data.clone().into_vec::<f64>().expect("f64 data"),
        ),
        other => panic!("no data array {name}: {other:?}"),
    }
}

#[test]
fn vti_round_trip_keeps_values_at_their_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.vti");
    let spec = GridSpec {
        origin: [-1.0, 0.5, 2.0],
        spacing: 0.25,
        dims: [3, 4, 5],
    };
    // Value encodes its node, so a transposed layout cannot pass.
    let phi: Vec<f64> = (0..spec.len()).map(|n| n as f64 * 1.000_000_1).collect();
    let vectors: Vec<f64> = (0..3 * spec.len()).map(|n| -(n as f64) / 7.0).collect();
    write_vti(
        &path,
        &spec,
        &[
            PointData::Scalars("phi", &phi),
            PointData::Vectors("mode0", &vectors),
        ],
    )
    .unwrap();

    let vtk = Vtk::import(&path).unwrap();
    let DataSet::ImageData {
        extent,
        origin,
        spacing,
        pieces,
        ..
    } = vtk.data
    else {
        panic!("not image data")
    };
    assert_eq!(extent, Extent::Ranges([0..=2, 0..=3, 0..=4]));
    assert_eq!(origin, [-1.0, 0.5, 2.0]);
    assert_eq!(spacing, [0.25; 3]);
    let piece: ImageDataPiece = pieces
        .into_iter()
        .next()
        .unwrap()
        .into_loaded_piece_data(None)
        .unwrap();
    let (c, read_phi) = point_array(&piece.data.point, "phi");
    assert_eq!(c, 1);
    let (c, read_vec) = point_array(&piece.data.point, "mode0");
    assert_eq!(c, 3);
    // VTK orders points x fastest.
    let [nx, ny, nz] = spec.dims;
    for k in 0..nz {
        for j in 0..ny {
            for i in 0..nx {
                let p = i + nx * (j + ny * k);
                let q = spec.index(i, j, k);
                assert_eq!(read_phi[p], phi[q]);
                assert_eq!(read_vec[3 * p..3 * p + 3], vectors[3 * q..3 * q + 3]);
            }
        }
    }
}

#[test]
fn vtp_round_trip_keeps_points_and_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("n.vtp");
    let points = vec![0.0, 1.0, 2.0, 3.5, -4.25, 1e-9, 1.0 / 3.0, 2.0 / 3.0, 1.0];
    let area = vec![0.1, 0.2, 0.7];
    let force = vec![1.0, 0.0, -1.0, 2.0, 2.0, 2.0, -0.5, 0.25, 1e6];
    write_vtp(
        &path,
        &points,
        &[
            PointData::Scalars("area", &area),
            PointData::Vectors("force", &force),
        ],
    )
    .unwrap();

    let piece: PolyDataPiece = Vtk::import(&path).unwrap().data.try_into().unwrap();
    assert_eq!(piece.points.into_vec::<f64>().unwrap(), points);
    assert_eq!(
        piece.verts.unwrap().into_xml(),
        (vec![0, 1, 2], vec![1, 2, 3])
    );
    assert_eq!(point_array(&piece.data.point, "area"), (1, area));
    assert_eq!(point_array(&piece.data.point, "force"), (3, force));
}

#[test]
fn vtu_round_trip_keeps_mesh_cells_and_point_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.vtu");
    let nodes = Array2::from_shape_fn((10, 3), |(i, d)| (i * 3 + d) as f64 / 9.0);
    let mesh = FemMesh {
        nodes,
        blocks: vec![
            ElementBlock {
                element_type: ElementType::Tet4,
                connectivity: array![[0u64, 1, 2, 3]],
            },
            ElementBlock {
                element_type: ElementType::Tet10,
                connectivity: array![[0u64, 1, 2, 3, 4, 5, 6, 7, 8, 9]],
            },
            ElementBlock {
                element_type: ElementType::Hex8Reduced,
                connectivity: array![[9u64, 8, 7, 6, 5, 4, 3, 2]],
            },
        ],
    };
    let u: Vec<f64> = (0..30).map(|n| (n as f64).sqrt()).collect();
    write_vtu(&path, &mesh, &[PointData::Vectors("U", &u)]).unwrap();

    let piece: UnstructuredGridPiece = Vtk::import(&path).unwrap().data.try_into().unwrap();
    assert_eq!(
        piece.points.into_vec::<f64>().unwrap(),
        mesh.nodes.iter().copied().collect::<Vec<_>>()
    );
    assert_eq!(
        piece.cells.types,
        vec![
            CellType::Tetra,
            CellType::QuadraticTetra,
            CellType::Hexahedron
        ]
    );
    let (connectivity, offsets) = piece.cells.cell_verts.into_xml();
    let expected: Vec<u64> = mesh
        .blocks
        .iter()
        .flat_map(|b| b.connectivity.iter().copied())
        .collect();
    assert_eq!(connectivity, expected);
    assert_eq!(offsets, vec![4, 14, 22]);
    assert_eq!(point_array(&piece.data.point, "U"), (3, u));
}

#[test]
fn pvd_round_trip_lists_files_that_vtkio_opens() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("vtk")).unwrap();
    let mut entries = vec![];
    for (step, time) in [(0, 0.0), (10, 2.5e-4), (20, 1.0 / 3.0)] {
        let file = PathBuf::from(format!("vtk/nodes_{step:06}.vtp"));
        let x = [time, 0.0, 0.0];
        write_vtp(&dir.path().join(&file), &x, &[]).unwrap();
        entries.push(PvdEntry { time, file });
    }
    let pvd = dir.path().join("run.pvd");
    write_pvd(&pvd, &entries).unwrap();
    let read = read_pvd(&pvd).unwrap();
    assert_eq!(read, entries);
    for e in &read {
        let piece: PolyDataPiece = Vtk::import(dir.path().join(&e.file))
            .unwrap()
            .data
            .try_into()
            .unwrap();
        assert_eq!(
            piece.points.into_vec::<f64>().unwrap(),
            vec![e.time, 0.0, 0.0]
        );
        assert!(matches!(piece.verts, Some(VertexNumbers::XML { .. })));
    }
}

#[test]
fn pvd_reader_accepts_paraview_files_and_refuses_others() {
    let dir = tempfile::tempdir().unwrap();
    let pvd = dir.path().join("p.pvd");
    // As ParaView writes it (attribute order, no group, a comment, file name with &amp;).
    std::fs::write(
        &pvd,
        r#"<?xml version="1.0"?>
<!-- made by ParaView -->
<VTKFile type="Collection" version="1.0" byte_order="LittleEndian" header_type="UInt64">
  <Collection>
    <DataSet timestep="1e-3" part="0" file="a&amp;b_0.vtu"/>
    <DataSet file="c_1.vtu" timestep=" 2"></DataSet>
  </Collection>
</VTKFile>"#,
    )
    .unwrap();
    assert_eq!(
        read_pvd(&pvd).unwrap(),
        vec![
            PvdEntry {
                time: 1e-3,
                file: "a&b_0.vtu".into()
            },
            PvdEntry {
                time: 2.0,
                file: "c_1.vtu".into()
            },
        ]
    );
    std::fs::write(
        &pvd,
        r#"<VTKFile><Collection><DataSet timestep="x" file="a.vtu"/></Collection></VTKFile>"#,
    )
    .unwrap();
    let e = read_pvd(&pvd).unwrap_err().to_string();
    assert!(
        e.contains("p.pvd") && e.contains("DataSet entry 1: timestep `x` is not a finite number"),
        "{e}"
    );
    // Found by the fuzz campaign (issue #14): `NaN` and `1e999` were accepted as times.
    std::fs::write(
        &pvd,
        r#"<VTKFile><Collection><DataSet timestep="1e999" file="a.vtu"/></Collection></VTKFile>"#,
    )
    .unwrap();
    let e = read_pvd(&pvd).unwrap_err().to_string();
    assert!(e.contains("timestep `1e999` is not a finite number"), "{e}");
    std::fs::write(&pvd, "<VTKFile type=\"UnstructuredGrid\"></VTKFile>").unwrap();
    let e = read_pvd(&pvd).unwrap_err().to_string();
    assert!(
        e.contains("p.pvd") && e.contains("not a VTK collection"),
        "{e}"
    );
}

#[test]
fn writers_refuse_arrays_of_the_wrong_length() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("n.vtp");
    let e = write_vtp(&path, &[0.0; 6], &[PointData::Vectors("force", &[1.0; 5])]).unwrap_err();
    assert!(
        e.to_string()
            .contains("`force`: expected 6 values for 2 points, got 5"),
        "{e}"
    );
    assert!(!path.exists());
}

#[test]
fn pvtp_round_trip_lists_its_pieces_and_their_arrays() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = ([0.0, 1.0, 2.0], [3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    let mut sources = Vec::new();
    for (k, points) in [&a[..], &b[..]].into_iter().enumerate() {
        let n = points.len() / 3;
        let grain: Vec<f64> = (0..n).map(|i| (10 * k + i) as f64).collect();
        let force = vec![0.5; 3 * n];
        let name = format!("nodes_{k}.vtp");
        let data = [
            PointData::Scalars("grain", &grain),
            PointData::Vectors("force", &force),
        ];
        write_vtp(&dir.path().join(&name), points, &data).unwrap();
        sources.push(PathBuf::from(name));
    }
    let path = dir.path().join("nodes.pvtp");
    let names = [
        PointData::Scalars("grain", &[]),
        PointData::Vectors("force", &[]),
    ];
    grain::vtk::write_pvtp(&path, &sources, &names).unwrap();
    // vtkio 0.7 reads a .pvtp's pieces but not its PPointData arrays (it looks for DataArray
    // elements there): the arrays' declarations are checked in the text.
    let text = std::fs::read_to_string(&path).unwrap();
    for line in [
        r#"<PDataArray type="Float64" Name="grain" NumberOfComponents="1"/>"#,
        r#"<PDataArray type="Float64" Name="force" NumberOfComponents="3"/>"#,
    ] {
        assert!(text.contains(line), "{text}");
    }
    let mut vtk = Vtk::import(&path).unwrap();
    let DataSet::PolyData { pieces, .. } = &vtk.data else {
        panic!("not poly data")
    };
    assert_eq!(pieces.len(), 2);
    // vtkio loads the pieces the .pvtp names: the points of each come back.
    vtk.load_all_pieces().unwrap();
    let DataSet::PolyData { pieces, .. } = vtk.data else {
        unreachable!()
    };
    let points: Vec<Vec<f64>> = pieces
        .into_iter()
        .map(|p| {
            let p: PolyDataPiece = p.into_loaded_piece_data(None).unwrap();
            p.points.into_vec::<f64>().unwrap()
        })
        .collect();
    assert_eq!(points, [a.to_vec(), b.to_vec()]);
}
