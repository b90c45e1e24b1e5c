//! Mesh readers and mesh checks: every refused input names its problem.

use std::path::{Path, PathBuf};

use levelset_bake::input::read_surface;
use levelset_bake::{Closure, MeshError, Primitive, TriangleMesh};
use nalgebra::Point3;

fn cube() -> TriangleMesh {
    Primitive::Cuboid { half: [0.5; 3] }.surface_mesh(1.0)
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

pub(crate) fn ascii_stl(mesh: &TriangleMesh) -> String {
    let mut s = String::from("solid cube\n");
    for f in 0..mesh.triangles.len() {
        s.push_str("  facet normal 0 0 0\n    outer loop\n");
        for p in mesh.corners(f) {
            s.push_str(&format!("      vertex {} {} {}\n", p.x, p.y, p.z));
        }
        s.push_str("    endloop\n  endfacet\n");
    }
    s + "endsolid cube\n"
}

fn binary_stl(mesh: &TriangleMesh) -> Vec<u8> {
    let mut b = vec![0u8; 80];
    b.extend((mesh.triangles.len() as u32).to_le_bytes());
    for f in 0..mesh.triangles.len() {
        b.extend([0f32; 3].iter().flat_map(|x| x.to_le_bytes()));
        for p in mesh.corners(f) {
            b.extend(p.iter().flat_map(|&x| (x as f32).to_le_bytes()));
        }
        b.extend([0u8; 2]);
    }
    b
}

fn same_surface(a: &TriangleMesh, b: &TriangleMesh) {
    assert_eq!(a.triangles.len(), b.triangles.len());
    for f in 0..a.triangles.len() {
        assert_eq!(a.corners(f), b.corners(f), "triangle {f}");
    }
    assert!((a.area() - b.area()).abs() < 1e-12);
}

#[test]
fn stl_obj_and_vtk_read_the_same_cube() {
    let dir = tempfile::tempdir().unwrap();
    let mesh = cube();
    let ascii = read_surface(
        &write(dir.path(), "a.stl", ascii_stl(&mesh).as_bytes()),
        None,
    )
    .unwrap();
    let binary = read_surface(&write(dir.path(), "b.STL", &binary_stl(&mesh)), None).unwrap();
    same_surface(&ascii, &mesh);
    same_surface(&binary, &mesh);
    assert_eq!(ascii.vertices.len(), 8, "STL vertices are welded");
    assert_eq!(ascii.check().unwrap(), Closure::Closed);

    // OBJ with quads (split into fans), a negative index, texture/normal indices and comments.
    let obj = "# cube\nv -0.5 -0.5 -0.5\nv 0.5 -0.5 -0.5\nv 0.5 0.5 -0.5\nv -0.5 0.5 -0.5\n\
               v -0.5 -0.5 0.5\nv 0.5 -0.5 0.5\nv 0.5 0.5 0.5\nv -0.5 0.5 0.5\nvn 0 0 1\n\
               f 1 4 3 2\nf 5 6 7 8\nf 1/1 2/1 6/1 5/1\nf 2//1 3//1 7//1 6//1\nf 3 4 8 7\nf 4 1 5 -1\n";
    let obj = read_surface(&write(dir.path(), "c.obj", obj.as_bytes()), None).unwrap();
    assert_eq!((obj.vertices.len(), obj.triangles.len()), (8, 12));
    assert_eq!(obj.check().unwrap(), Closure::Closed);
    assert!((obj.area() - 6.0).abs() < 1e-15);

    // VTK polydata, XML and legacy.
    use vtkio::model::*;
    let piece = PolyDataPiece {
        points: IOBuffer::from(
            mesh.vertices
                .iter()
                .flat_map(|p| [p.x, p.y, p.z])
                .collect::<Vec<f64>>(),
        ),
        polys: Some(VertexNumbers::XML {
            connectivity: mesh.triangles.iter().flatten().map(|&i| i as u64).collect(),
            offsets: (1..=mesh.triangles.len() as u64).map(|k| 3 * k).collect(),
        }),
        ..Default::default()
    };
    let vtk = Vtk {
        version: Version::new_xml(1, 0),
        title: String::new(),
        byte_order: ByteOrder::LittleEndian,
        data: DataSet::inline(piece),
        file_path: None,
    };
    let path = dir.path().join("d.vtp");
    vtk.export(&path).unwrap();
    same_surface(&read_surface(&path, None).unwrap(), &mesh);
    // Legacy ASCII polydata as ParaView and meshio write it.
    let mut legacy = format!(
        "# vtk DataFile Version 4.2\ncube\nASCII\nDATASET POLYDATA\nPOINTS {} double\n",
        mesh.vertices.len()
    );
    for p in &mesh.vertices {
        legacy.push_str(&format!("{} {} {}\n", p.x, p.y, p.z));
    }
    legacy.push_str(&format!(
        "POLYGONS {} {}\n",
        mesh.triangles.len(),
        4 * mesh.triangles.len()
    ));
    for t in &mesh.triangles {
        legacy.push_str(&format!("3 {} {} {}\n", t[0], t[1], t[2]));
    }
    same_surface(
        &read_surface(&write(dir.path(), "e.vtk", legacy.as_bytes()), None).unwrap(),
        &mesh,
    );
}

fn err(dir: &Path, name: &str, text: &str) -> String {
    read_surface(&write(dir, name, text.as_bytes()), None)
        .unwrap_err()
        .to_string()
}

#[test]
fn malformed_files_are_named_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let e = err(
        d,
        "a.stl",
        "solid x\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 zero\n",
    );
    assert!(
        e.contains("a.stl: line 5: vertex: `zero` is not a finite number"),
        "{e}"
    );
    // Found by the fuzz campaign (issue #14): `1e999` read as infinity, and a binary STL's
    // NaN, were accepted as vertices.
    let e = err(
        d,
        "i.stl",
        "solid x\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 1e999\n",
    );
    assert!(
        e.contains("i.stl: line 5: vertex: `1e999` is not a finite number"),
        "{e}"
    );
    // Found by mutating inputs (issue #14): bytes that are not UTF-8, reported without a place.
    let e = read_surface(&write(d, "u.obj", b"v 0 0 0\nv 1 \xff 0\n"), None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("u.obj: line 2, column 5: not UTF-8 text (byte 0xff)"),
        "{e}"
    );
    let e = read_surface(&write(d, "u.stl", b"solid x\n\xfe"), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("u.stl") && e.contains("line 2, column 1"), "{e}");
    let mut nan = binary_stl(&cube());
    nan[84 + 12..84 + 16].copy_from_slice(&f32::NAN.to_le_bytes());
    let e = read_surface(&write(d, "nan.stl", &nan), None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("nan.stl") && e.contains("expected finite coordinates"),
        "{e}"
    );
    let e = err(
        d,
        "b.stl",
        "solid x\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nendloop\n",
    );
    assert!(
        e.contains("b.stl: line 3: facet loop has 2 vertices, expected 3"),
        "{e}"
    );
    let e = err(d, "c.stl", "not an stl");
    assert!(
        e.contains("c.stl: line 1: an ASCII STL starts with `solid`"),
        "{e}"
    );
    let mut truncated = binary_stl(&cube());
    truncated.truncate(200);
    let e = read_surface(&write(d, "d.stl", &truncated), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("d.stl") && e.contains("not a binary STL"), "{e}");
    let e = err(d, "e.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 4\n");
    assert!(
        e.contains("e.obj: line 4: face index 4 does not name one of the 3 vertices"),
        "{e}"
    );
    let e = err(d, "f.obj", "v 0 0\n");
    assert!(
        e.contains("f.obj: line 1: vertex: expected 3 numbers, found 2"),
        "{e}"
    );
    let e = err(d, "g.ply", "ply");
    assert!(e.contains("g.ply: unknown geometry format"), "{e}");
    let e = read_surface(Path::new("/nonexistent/h.stl"), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("/nonexistent/h.stl"), "{e}");
}

#[test]
fn mesh_checks_refuse_bad_surfaces_with_the_place_named() {
    let good = cube();
    assert_eq!(
        TriangleMesh {
            vertices: vec![],
            triangles: vec![]
        }
        .check(),
        Err(MeshError::Empty)
    );

    let mut m = good.clone();
    m.vertices[3].y = f64::NAN;
    assert_eq!(m.check(), Err(MeshError::NonFinite { vertex: 3 }));

    let mut m = good.clone();
    m.triangles[5] = [1, 1, 2];
    assert_eq!(m.check(), Err(MeshError::Degenerate { face: 5 }));
    let mut m = good.clone();
    let p = m.vertices[0];
    m.vertices.push(p + (m.vertices[1] - p) * 0.5);
    let n = m.vertices.len() as u32 - 1;
    m.triangles.push([0, 1, n]); // collinear: zero area
    assert!(matches!(m.check(), Err(MeshError::Degenerate { face: 12 })));

    // An unused vertex far away was reported as "triangle 0 is degenerate" (its distance set
    // the degeneracy scale; issue #23): now it is named.
    let mut m = good.clone();
    m.vertices.push(Point3::new(1e9, 0.0, 0.0));
    let e = m.check().unwrap_err();
    assert_eq!(
        e,
        MeshError::UnusedVertex {
            vertex: 8,
            unused: 1
        }
    );
    assert!(
        e.to_string().contains("vertex 8 belongs to no triangle"),
        "{e}"
    );

    let mut m = good.clone();
    m.triangles[4].swap(1, 2);
    let e = m.check().unwrap_err();
    assert!(matches!(e, MeshError::Orientation { .. }), "{e}");
    assert!(e.to_string().contains("inconsistent orientation"));

    let mut m = good.clone();
    let t = m.triangles[0];
    m.vertices.push(Point3::new(3.0, 3.0, 3.0));
    let far = m.vertices.len() as u32 - 1;
    m.triangles.push([t[1], t[0], far]); // a third triangle on edge (t0, t1)
    let e = m.check().unwrap_err();
    assert!(matches!(e, MeshError::NonManifoldEdge { .. }), "{e}");

    let mut m = good.clone();
    m.triangles.pop();
    let closure = m.check().unwrap();
    assert!(
        matches!(closure, Closure::Open { count: 3, .. }),
        "{closure:?}"
    );
    let e = closure.require_closed().unwrap_err().to_string();
    assert!(
        e.contains("open: 3 boundary edges") && e.contains("--open winding"),
        "{e}"
    );

    let mut m = good;
    m.triangles.push([0, 1, 99]);
    assert_eq!(
        m.check(),
        Err(MeshError::BadIndex {
            face: 12,
            vertex: 99,
            count: 8
        })
    );
}
