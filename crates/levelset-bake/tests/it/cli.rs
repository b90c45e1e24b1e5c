//! The command line end to end: bundles written, read back through the shared crate, checked
//! against exact geometry; refused inputs named.

use std::process::Command;

use grain::GrainBundle;
use levelset_bake::Primitive;
use nalgebra::{Matrix3, Point3, Rotation3, Vector3};

fn bake(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_levelset-bake"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn sphere_bundle_is_exact_and_summarized() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.grain");
    let (ok, stdout, stderr) = bake(&[
        "sphere",
        "--radius",
        "10",
        "--spacing",
        "1",
        "--density",
        "2",
        "--units",
        "voxel",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("s.grain: volume 4.188790e3, mass 8.377580e3"),
        "{stdout}"
    );
    let g = GrainBundle::read(&out).unwrap();
    let spec = g.levelset.spec();
    assert_eq!(spec.dims, [27; 3]);
    assert_eq!(spec.origin, [-13.0; 3]);
    for (n, &v) in g.levelset.values().iter().enumerate() {
        let p = spec.node(n / 729, (n / 27) % 27, n % 27);
        assert!((v - (p.coords.norm() - 10.0)).abs() < 1e-12);
    }
    let area: f64 = g.node_areas.iter().sum();
    assert!((area / (400.0 * std::f64::consts::PI) - 1.0).abs() < 1e-12);
    for p in g.nodes.rows() {
        assert!((p[0].hypot(p[1]).hypot(p[2]) - 10.0).abs() < 1e-12);
    }
    let m = 2.0 * 4.0 / 3.0 * std::f64::consts::PI * 1000.0;
    assert!((g.properties.mass / m - 1.0).abs() < 1e-15);
    assert!((g.properties.principal_moments[0] / (0.4 * m * 100.0) - 1.0).abs() < 1e-14);
    assert_eq!(g.properties.units, "voxel");
}

#[test]
fn rotated_box_mesh_is_baked_in_its_principal_frame() {
    let dir = tempfile::tempdir().unwrap();
    let half = [2.0, 1.0, 0.5];
    let rotation = Rotation3::from_euler_angles(0.5, -0.2, 0.8);
    let shift = Vector3::new(3.0, -1.0, 2.0);
    let mut mesh = Primitive::Cuboid { half }.surface_mesh(10.0);
    mesh.transform(rotation.matrix(), &shift);
    let mut obj = String::new();
    for v in &mesh.vertices {
        obj.push_str(&format!("v {:?} {:?} {:?}\n", v.x, v.y, v.z));
    }
    for t in &mesh.triangles {
        obj.push_str(&format!("f {} {} {}\n", t[0] + 1, t[1] + 1, t[2] + 1));
    }
    let file = dir.path().join("box.obj");
    std::fs::write(&file, obj).unwrap();
    let out = dir.path().join("box.grain");
    let (ok, _, stderr) = bake(&[
        "mesh",
        file.to_str().unwrap(),
        "--spacing",
        "0.25",
        "--nodes",
        "spacing=0.3",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    let g = GrainBundle::read(&out).unwrap();
    // The recorded transform takes the input box to the axis-aligned box at the origin.
    let f = &g.properties.input_frame;
    let r = Matrix3::from_fn(|i, j| f.rotation[i][j]);
    let t = Vector3::from(f.translation);
    let p = Primitive::Cuboid { half };
    for v in &mesh.vertices {
        let local = Point3::from(r * v.coords + t);
        assert!(p.signed_distance(&local).abs() < 1e-9, "{local}");
    }
    // The level set is the exact box distance in the local frame.
    let spec = g.levelset.spec().clone();
    let [_, ny, nz] = spec.dims;
    for (n, &v) in g.levelset.values().iter().enumerate() {
        let q = spec.node(n / (ny * nz), (n / nz) % ny, n % nz);
        assert!((v - p.signed_distance(&q)).abs() < 1e-9 * spec.spacing);
    }
    assert!((g.properties.volume - 8.0).abs() < 1e-10);
    let area: f64 = g.node_areas.iter().sum();
    assert!((area - 28.0).abs() < 1e-9, "{area}");
}

#[test]
fn refused_inputs_name_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.grain");
    let out = out.to_str().unwrap();
    let (ok, _, e) = bake(&["sphere", "--radius", "-1", "--spacing", "1", "--out", out]);
    assert!(
        !ok && e.contains("radius: must be finite and > 0, got [-1.0]"),
        "{e}"
    );
    let (ok, _, e) = bake(&["sphere", "--radius", "1", "--spacing", "0", "--out", out]);
    assert!(
        !ok && e.contains("--spacing: must be finite and > 0"),
        "{e}"
    );
    let (ok, _, e) = bake(&[
        "sphere",
        "--radius",
        "1",
        "--spacing",
        "0.1",
        "--band",
        "0.5",
        "--out",
        out,
    ]);
    assert!(!ok && e.contains("--band: must be at least 1 cell"), "{e}");
    // An open mesh: one triangle removed from a box.
    let mut mesh = Primitive::Cuboid { half: [1.0; 3] }.surface_mesh(10.0);
    mesh.triangles.pop();
    let mut obj = String::new();
    for v in &mesh.vertices {
        obj.push_str(&format!("v {} {} {}\n", v.x, v.y, v.z));
    }
    for t in &mesh.triangles {
        obj.push_str(&format!("f {} {} {}\n", t[0] + 1, t[1] + 1, t[2] + 1));
    }
    let file = dir.path().join("open.obj");
    std::fs::write(&file, obj).unwrap();
    let (ok, _, e) = bake(&[
        "mesh",
        file.to_str().unwrap(),
        "--spacing",
        "0.25",
        "--out",
        out,
    ]);
    assert!(
        !ok && e.contains("open.obj: the mesh is open: 3 boundary edges"),
        "{e}"
    );
    // ... which the winding number signs.
    let (ok, stdout, e) = bake(&[
        "mesh",
        file.to_str().unwrap(),
        "--spacing",
        "0.25",
        "--open",
        "winding",
        "--out",
        out,
    ]);
    assert!(ok, "{e}");
    let g = GrainBundle::read(std::path::Path::new(out)).unwrap();
    assert!((g.properties.volume / 8.0 - 1.0).abs() < 0.05, "{stdout}");
    assert!(!std::path::Path::new(&dir.path().join("never.grain")).exists());
}

#[test]
fn fem_decks_and_volume_meshes_are_baked_from_their_boundary() {
    // One C3D20 element filling [-1, 1]^3 (its nodes at their natural coordinates), next to a
    // rigid element that must be left out by choosing the grain's element set.
    let dir = tempfile::tempdir().unwrap();
    let nat = fem::shape::node_coordinates(grain::ElementType::Hex20);
    let mut deck = String::from("*Node\n");
    for (i, p) in nat.iter().enumerate() {
        deck.push_str(&format!("{}, {}, {}, {}\n", i + 1, p.x, p.y, p.z));
    }
    deck.push_str("*Element, type=C3D20, elset=GRAIN\n1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,\n16, 17, 18, 19, 20\n");
    deck.push_str("*Element, type=R3D4, elset=WALL\n2, 1, 2, 3, 4\n");
    let file = dir.path().join("cube.inp");
    std::fs::write(&file, deck).unwrap();
    let out = dir.path().join("cube.grain");
    let args = [
        "mesh",
        file.to_str().unwrap(),
        "--spacing",
        "0.25",
        "--out",
        out.to_str().unwrap(),
    ];
    let (ok, _, e) = bake(&args);
    assert!(
        !ok && e.contains("cube.inp: line 26: element 2 has type R3D4"),
        "{e}"
    );
    let (ok, _, e) = bake(&[&args[..], &["--elset", "grain"]].concat());
    assert!(ok, "{e}");
    let g = GrainBundle::read(&out).unwrap();
    assert!((g.properties.volume - 8.0).abs() < 1e-12);
    // 8 corners, 12 mid-edges: the boundary vertices are exactly the element's 20 nodes.
    assert_eq!(g.node_count(), 20);
    assert!((g.node_areas.sum() - 24.0).abs() < 1e-12);
    let cube = Primitive::Cuboid { half: [1.0; 3] };
    let spec = g.levelset.spec().clone();
    let [_, ny, nz] = spec.dims;
    for (n, &v) in g.levelset.values().iter().enumerate() {
        let q = spec.node(n / (ny * nz), (n / nz) % ny, n % nz);
        assert!(
            (v - cube.signed_distance(&q)).abs() < 1e-12,
            "{q}: {v} vs {}",
            cube.signed_distance(&q)
        );
    }
    // The same element as a .vtu volume mesh.
    let fem_mesh = fem::Deck::read(&file)
        .unwrap()
        .part(Some("GRAIN"))
        .unwrap()
        .mesh;
    let vtu = dir.path().join("cube.vtu");
    grain::vtk::write_vtu(&vtu, &fem_mesh, &[]).unwrap();
    let (ok, _, e) = bake(&[
        "mesh",
        vtu.to_str().unwrap(),
        "--spacing",
        "0.25",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(ok, "{e}");
    assert!((GrainBundle::read(&out).unwrap().properties.volume - 8.0).abs() < 1e-12);
}

/// Found by mutating inputs (issue #14): a stray far-away vertex asked for a grid of tens of
/// gigabytes, which aborted the process ("memory allocation failed", exit 134) or overflowed a
/// capacity (a panic) with `--open winding`. Now refused with the grid's size and the flag,
/// whatever the format the vertex comes in (STL, OBJ, a VTU volume mesh's surface).
#[test]
fn a_stray_far_away_vertex_is_refused_with_the_grid_size() {
    let dir = tempfile::tempdir().unwrap();
    let mut mesh = Primitive::Cuboid { half: [0.5; 3] }.surface_mesh(1.0);
    mesh.vertices[0] = Point3::new(-1e6, -0.5, -0.5);
    let stl = dir.path().join("spike.stl");
    std::fs::write(&stl, crate::inputs::ascii_stl(&mesh)).unwrap();
    let obj = dir.path().join("spike.obj");
    let mut text = String::new();
    for v in &mesh.vertices {
        text += &format!("v {} {} {}\n", v.x, v.y, v.z);
    }
    for t in &mesh.triangles {
        text += &format!("f {} {} {}\n", t[0] + 1, t[1] + 1, t[2] + 1);
    }
    std::fs::write(&obj, text).unwrap();
    // A box of tetrahedra whose corner node 0 (at the origin) is pulled out along -x: its
    // elements stretch, none turns inside out.
    let mut volume = fem::box_mesh(grain::ElementType::Tet4, [0.0; 3], [1.0; 3], [2, 2, 2]);
    assert_eq!(volume.nodes.row(0).to_vec(), [0.0; 3]);
    volume.nodes[[0, 0]] = -1e6;
    let vtu = dir.path().join("spike.vtu");
    grain::vtk::write_vtu(&vtu, &volume, &[]).unwrap();
    let out = dir.path().join("spike.grain");
    for (path, open) in [
        (&stl, "refuse"),
        (&stl, "winding"),
        (&obj, "refuse"),
        (&vtu, "refuse"),
    ] {
        let (ok, _, stderr) = bake(&[
            "mesh",
            path.to_str().unwrap(),
            "--spacing",
            "0.01",
            "--open",
            open,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(!ok);
        assert!(
            stderr.contains(path.to_str().unwrap())
                && stderr.contains("--spacing")
                && stderr.contains("would have 100000")
                && stderr.contains("nodes and need about")
                && stderr.contains("stray far-away vertices"),
            "{stderr}"
        );
        assert!(!out.exists());
    }
}

/// Found by mutating inputs (issue #14): a `.npy` header declaring a shape its file cannot fill
/// was allocated before the size was known (exit 134). Now refused from the header.
#[test]
fn an_image_header_larger_than_its_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut dict =
        "{'descr': '|u1', 'fortran_order': False, 'shape': (3000, 3000, 3000), }".to_string();
    while !(10 + dict.len() + 1).is_multiple_of(64) {
        dict.push(' ');
    }
    dict.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((dict.len() as u16).to_le_bytes());
    bytes.extend(dict.as_bytes());
    bytes.extend([1u8; 1000]);
    let path = dir.path().join("ct.npy");
    std::fs::write(&path, bytes).unwrap();
    let out = dir.path().join("ct.grain");
    let (ok, _, stderr) = bake(&[
        "image",
        path.to_str().unwrap(),
        "--voxel",
        "1",
        "--threshold",
        "1",
        "--spacing",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!ok);
    assert!(
        stderr.contains("ct.npy")
            && stderr.contains("[3000, 3000, 3000]")
            && stderr.contains("holds 1000 bytes"),
        "{stderr}"
    );
}

/// Issue #23: a deck that defines a node twice (the second definition moves it) is refused,
/// naming both lines and `--keep-last-definition`; with the flag the grain is baked from the
/// last definition: a unit cube whose corner (1, 1, 1) is defined first at (2, 2, 2).
#[test]
fn a_deck_node_defined_twice_is_refused_unless_the_last_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let deck = dir.path().join("cube.inp");
    let mut text = String::from("*Node\n");
    for (i, [x, y, z]) in [
        [0, 0, 0],
        [1, 0, 0],
        [1, 1, 0],
        [0, 1, 0],
        [0, 0, 1],
        [1, 0, 1],
        [2, 2, 2],
        [0, 1, 1],
    ]
    .iter()
    .enumerate()
    {
        text.push_str(&format!("{}, {x}, {y}, {z}\n", i + 1));
    }
    text.push_str("*Element, type=C3D8\n1, 1, 2, 3, 4, 5, 6, 7, 8\n*Node\n7, 1, 1, 1\n");
    std::fs::write(&deck, text).unwrap();
    let out = dir.path().join("cube.grain");
    let args = |extra: &'static [&'static str]| {
        let mut a = vec![
            "mesh",
            deck.to_str().unwrap(),
            "--spacing",
            "0.25",
            "--out",
            out.to_str().unwrap(),
        ];
        a.extend(extra);
        a
    };
    let (ok, _, stderr) = bake(&args(&[]));
    assert!(!ok);
    assert!(
        stderr.contains("line 13: node 7 is defined again")
            && stderr.contains("line 8)")
            && stderr.contains("--keep-last-definition"),
        "{stderr}"
    );
    let (ok, _, stderr) = bake(&args(&["--keep-last-definition"]));
    assert!(ok, "{stderr}");
    let volume = GrainBundle::read(&out).unwrap().properties.volume;
    assert!((volume - 1.0).abs() < 1e-9, "{volume}");
}

/// Issue #23: surface nodes are bounded like the grid: a spacing or a count that would give more
/// than 1e7 nodes is refused with the count it implies (it ran out of memory before).
#[test]
fn node_counts_past_the_limit_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.grain");
    let sphere = |nodes: &str| {
        bake(&[
            "sphere",
            "--radius",
            "10",
            "--spacing",
            "1",
            "--nodes",
            nodes,
            "--out",
            out.to_str().unwrap(),
        ])
    };
    // Area 4 pi 100 = 1257: spacing 1e-2 gives 1.26e7 nodes, count 2e7 asks for them.
    for (nodes, count) in [("spacing=1e-2", "1.257e7"), ("count=20000000", "2.000e7")] {
        let (ok, _, stderr) = sphere(nodes);
        assert!(!ok);
        assert!(
            stderr.contains(&format!("--nodes: about {count} nodes"))
                && stderr.contains("at most 1e7 per grain"),
            "{nodes}: {stderr}"
        );
    }
    let (ok, _, stderr) = sphere("spacing=0.5");
    assert!(ok, "{stderr}");
}

/// Issue #23: a grid that cannot hold its shape was baked as if it did (a level set positive
/// everywhere, or missing a thin plate, while grain.json reported the geometry's volume; nested
/// or self-intersecting surfaces gave volumes counted twice). The grid's solid volume is now
/// compared with the geometry's ([`levelset_bake::MAX_VOLUME_MISMATCH`]). Two nested outward
/// spheres enclose (by the divergence theorem) the outer ball plus the inner one (+22 %); two
/// overlapping ones count their lens, pi (4R + d)(2R - d)^2 / 12, twice (+18.5 % of the union).
#[test]
fn grids_that_cannot_hold_the_shape_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g.grain");
    let o = out.to_str().unwrap();
    let refused = |args: &[&str], expected: &str| {
        let (ok, _, stderr) = bake(&[args, &["--out", o]].concat());
        assert!(!ok, "{args:?} was baked");
        assert!(
            stderr.contains(expected) && stderr.contains("--allow-unresolved-grid"),
            "{args:?}: {stderr}"
        );
        assert!(!out.exists());
    };
    // A sphere two cells across: 40 % of its volume is missing from the grid.
    refused(
        &["sphere", "--radius", "1", "--spacing", "1"],
        "(40.3 % apart",
    );
    // A plate thinner than the spacing, between two layers of nodes: no node inside.
    refused(
        &["box", "--size", "4", "4", "0.2", "--spacing", "0.5"],
        "no grid node lies inside the shape",
    );
    let (ok, _, stderr) = bake(&[
        "sphere",
        "--radius",
        "1",
        "--spacing",
        "1",
        "--allow-unresolved-grid",
        "--out",
        o,
    ]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("warning: the grain: the grid's solid") && stderr.contains("40.3 %"),
        "{stderr}"
    );

    // Two closed spheres in one mesh, each oriented outward: nested, and overlapping.
    let sphere = |radius: f64, x: f64| {
        let mut m = Primitive::Sphere { radius }.surface_mesh(0.1);
        m.transform(&Matrix3::identity(), &Vector3::new(x, 0.0, 0.0));
        m
    };
    let union = |a: levelset_bake::TriangleMesh, b: levelset_bake::TriangleMesh| {
        let n = a.vertices.len() as u32;
        levelset_bake::TriangleMesh {
            vertices: [a.vertices, b.vertices].concat(),
            triangles: (a.triangles.into_iter())
                .chain(b.triangles.iter().map(|t| t.map(|v| v + n)))
                .collect(),
        }
    };
    for (name, mesh) in [
        ("nested", union(sphere(1.0, 0.0), sphere(0.6, 0.0))),
        ("overlapping", union(sphere(1.0, 0.0), sphere(1.0, 1.0))),
    ] {
        let stl = dir.path().join(format!("{name}.stl"));
        std::fs::write(&stl, crate::inputs::ascii_stl(&mesh)).unwrap();
        let (ok, _, stderr) = bake(&[
            "mesh",
            stl.to_str().unwrap(),
            "--spacing",
            "0.1",
            "--out",
            o,
        ]);
        assert!(!ok, "{name} was baked");
        assert!(
            stderr.contains("nested or intersect themselves")
                && stderr.contains("--allow-unresolved-grid"),
            "{name}: {stderr}"
        );
    }
}

/// Issue #23: under an address-space limit (`ulimit -v`) a grid the process cannot hold aborted
/// in the allocator (exit 134). Refused now with its need, before anything is allocated; the
/// same grid bakes without the limit (see the other tests for what a bake writes).
#[cfg(target_os = "linux")]
#[test]
fn a_grid_beyond_an_address_space_limit_is_refused_by_its_need() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("big.grain");
    let o = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit -v 400000 && exec {} sphere --radius 40 --spacing 0.5 --out {}",
            env!("CARGO_BIN_EXE_levelset-bake"),
            out.display()
        ))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("167 x 167 x 167 nodes and need about 0.2 GB")
            && stderr.contains("available to this process"),
        "{stderr}"
    );
    assert!(!out.exists());
}

/// Issue #33: an oversized --pad was blamed on --spacing (2^32), or overflowed the grid's size
/// arithmetic (a panic from 2^63 on); a CT image's padding, `--pad` nodes at `--spacing` in
/// voxels, asked for hundreds of GB (an abort) or overflowed. Refused now, naming --pad, with
/// the grid or padded image it would make and, for the grid, the largest pad that fits.
#[test]
fn an_oversized_pad_is_refused_naming_pad() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.grain");
    let out = out.to_str().unwrap();
    // A sphere of radius 5 at spacing 0.5: a box of 20 cells, 21 nodes a side.
    for (pad, grid) in [
        ("4294967296", "8589934613 x 8589934613 x 8589934613"),
        ("18446744073709551615", "3.689e19 x 3.689e19 x 3.689e19"),
    ] {
        let (ok, _, stderr) = bake(&[
            "sphere",
            "--radius",
            "5",
            "--spacing",
            "0.5",
            "--pad",
            pad,
            "--out",
            out,
        ]);
        assert!(!ok);
        let prefix = format!(
            "levelset-bake: --pad: {pad} nodes on every side of the grain's 21 x 21 x 21 nodes make a grid of {grid} nodes"
        );
        assert!(stderr.starts_with(&prefix), "{stderr}");
        // Whatever the machine, the default pad fits.
        let most: usize = stderr.split("at most ").nth(1).unwrap()[..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(most >= 3, "{stderr}");
    }
    // A 12-voxel cube image, voxels of 2^-10: 3 nodes at spacing 1 pad it by 3 x 1024 voxels and
    // the margin of 2, 3074, to 6160 a side (5.8e12 bytes at 25 a voxel); a pad of 2^32 nodes is
    // the grid's to refuse first.
    let image = dir.path().join("cube.npy");
    let mut text = b"\x93NUMPY\x01\x00".to_vec();
    let header = "{'descr': '|u1', 'fortran_order': False, 'shape': (12, 12, 12), }";
    let header = format!("{header:<117}\n");
    text.extend((header.len() as u16).to_le_bytes());
    text.extend(header.as_bytes());
    text.extend([1u8; 12 * 12 * 12]);
    std::fs::write(&image, text).unwrap();
    let image = image.to_str().unwrap();
    for (voxel, pad, expected) in [
        (
            "0.0009765625",
            "3",
            "levelset-bake: --pad: the image of 12 x 12 x 12 voxels, padded by 3074 voxels of 9.765625e-4 on every side (--pad 3 nodes at --spacing 1e0), is 6160 x 6160 x 6160 voxels",
        ),
        (
            "1e-300",
            "3",
            "levelset-bake: --pad: the image of 12 x 12 x 12 voxels, padded by 3.000e300 voxels",
        ),
        (
            "1",
            "4294967296",
            "levelset-bake: --pad: 4294967296 nodes on every side of the grain's",
        ),
    ] {
        let (ok, _, stderr) = bake(&[
            "image",
            image,
            "--voxel",
            voxel,
            "--spacing",
            "1",
            "--pad",
            pad,
            "--out",
            out,
        ]);
        assert!(!ok && stderr.starts_with(expected), "{stderr}");
    }
}

/// Issue #33: a density of 1e308 made an infinite mass (refused only by the bundle's writer,
/// as `properties.mass`), 1e-310 a subnormal one (baked); a Young's modulus of 1e308, -5 or
/// 1e-310 an infinite, negative or subnormal bending stiffness. Refused now, naming the flag,
/// the quantity and the range, from the closed forms: a sphere's volume `4/3 pi r^3` and
/// moments `2/5 m r^2`; a beam's bending mode `M = rho [(pi/L)^2 (L/2) (b h^3/12) + (L/2) b h]`
/// and `K = (lambda + 2 mu) (pi/L)^4 (L/2) (b h^3/12)`.
#[test]
fn a_density_or_modulus_that_takes_a_mass_or_stiffness_out_of_range_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("d.grain");
    let out = out.to_str().unwrap();
    let refused = |args: &[&str]| {
        let (ok, _, stderr) = bake(&[args, &["--out", out]].concat());
        assert!(!ok, "{args:?}");
        stderr
    };
    let volume = 4.0 / 3.0 * std::f64::consts::PI * 125.0;
    let e = refused(&[
        "sphere",
        "--radius",
        "5",
        "--spacing",
        "1",
        "--density",
        "1e308",
    ]);
    assert!(
        e.starts_with(&format!(
            "levelset-bake: --density: 1e308 makes the grain's mass {:.2}e310, which is not a normal floating-point number",
            volume / 100.0
        )) && e.contains(&format!(
            "here it must lie between about {:.3e} and {:.3e}",
            f64::MIN_POSITIVE,
            f64::MAX / (0.4 * volume * 25.0)
        )),
        "{e}"
    );
    let e = refused(&[
        "box",
        "--size",
        "2",
        "2",
        "2",
        "--spacing",
        "0.2",
        "--density",
        "1e-310",
    ]);
    assert!(
        e.starts_with("levelset-bake: --density: 1e-310 makes the grain's mass 8.00e-310"),
        "{e}"
    );
    // A 40 x 4 x 4 beam: at a density of 5e-311 its mass (640 rho) and moments are normal, its
    // bending mode's mass (322.6 rho) is not.
    let bending = |l: f64, b: f64, h: f64| {
        let k = std::f64::consts::PI / l;
        let second_moment = b * h.powi(3) / 12.0;
        let p_modulus = 0.7 / (1.3 * 0.4);
        (
            k * k * l / 2.0 * second_moment + l / 2.0 * b * h,
            p_modulus * k.powi(4) * l / 2.0 * second_moment,
        )
    };
    let beam = [
        "box",
        "--size",
        "40",
        "4",
        "4",
        "--spacing",
        "1",
        "--bending-mode",
        "40",
    ];
    let e = refused(
        &[
            &beam[..],
            &["--modal-stiffness", "1", "--density", "5e-311"],
        ]
        .concat(),
    );
    assert!(
        e.starts_with(&format!(
            "levelset-bake: --density: 5e-311 makes the bending mode's modal mass {:.2}e-308",
            bending(40.0, 4.0, 4.0).0 * 5e-311 / 1e-308
        )),
        "{e}"
    );
    // A 2 x 2 x 2 cube's bending stiffness, 10.9 E, leaves the normal numbers at both ends.
    let cube = [
        "box",
        "--size",
        "2",
        "2",
        "2",
        "--spacing",
        "0.2",
        "--bending-mode",
        "2",
    ];
    let stiffness = bending(2.0, 2.0, 2.0).1;
    for (modulus, expected) in [
        (
            "1e308",
            format!(
                "--youngs-modulus: 1e308 makes the bending mode's modal stiffness {:.2}e309",
                stiffness / 10.0
            ),
        ),
        (
            "1e-310",
            format!(
                "--youngs-modulus: 1e-310 makes the bending mode's modal stiffness {:.2}e-309",
                stiffness / 10.0
            ),
        ),
        (
            "-5",
            "--youngs-modulus/--poisson: need a finite E > 0 and -1 < nu < 0.5".to_string(),
        ),
    ] {
        let e = refused(
            &[
                &cube[..],
                &["--youngs-modulus", modulus, "--poisson", "0.3"],
            ]
            .concat(),
        );
        assert!(e.starts_with(&format!("levelset-bake: {expected}")), "{e}");
    }
}
