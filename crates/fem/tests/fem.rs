//! Decks, VTK meshes, boundaries and point location on structured box meshes of every element type.

use std::collections::HashMap;

use fem::{Deck, Locator, boundary, read_vtu_mesh};
use grain::{ElementType, FemMesh};
use nalgebra::{Point3, Vector3};

const SIZE: [f64; 3] = [2.0, 1.0, 0.5];

fn box_mesh(t: ElementType, n: [usize; 3]) -> FemMesh {
    fem::box_mesh(t, [0.0; 3], SIZE, n)
}

#[test]
fn boundary_of_every_element_type_is_the_closed_outward_box_surface() {
    for t in ElementType::ALL {
        let mesh = box_mesh(t, [3, 2, 2]);
        let b = boundary(&mesh);
        let p = |i: u32| {
            Vector3::new(
                mesh.nodes[[i as usize, 0]],
                mesh.nodes[[i as usize, 1]],
                mesh.nodes[[i as usize, 2]],
            )
        };
        let (mut area, mut volume) = (0.0, 0.0);
        let mut directed = HashMap::new();
        for tri in &b.triangles {
            let [a, c, d] = tri.map(p);
            area += 0.5 * (c - a).cross(&(d - a)).norm();
            volume += a.dot(&c.cross(&d)) / 6.0;
            for k in 0..3 {
                *directed.entry((tri[k], tri[(k + 1) % 3])).or_insert(0) += 1;
            }
        }
        let expected_area = 2.0 * (SIZE[0] * SIZE[1] + SIZE[1] * SIZE[2] + SIZE[0] * SIZE[2]);
        assert!((area - expected_area).abs() < 1e-12, "{t:?}: area {area}");
        assert!(
            (volume - SIZE.iter().product::<f64>()).abs() < 1e-12,
            "{t:?}: volume {volume} (outward?)"
        );
        // Closed and consistently oriented: every directed edge once, and its reverse once.
        for (&(a, c), &count) in &directed {
            assert_eq!(count, 1, "{t:?}");
            assert_eq!(
                directed.get(&(c, a)),
                Some(&1),
                "{t:?}: open edge ({a}, {c})"
            );
        }
    }
}

#[test]
fn located_points_interpolate_polynomial_fields_and_their_gradients_exactly() {
    for t in ElementType::ALL {
        let mesh = box_mesh(t, [2, 2, 1]);
        let quadratic = t.node_count() > 8 || t == ElementType::Tet10;
        // A field the elements reproduce exactly: linear, or quadratic for quadratic elements
        // (hex20 spans x^2 but not x^2 y^2; x^2 + y z is in every complete quadratic space).
        let f = |x: &Vector3<f64>| {
            let q = if quadratic {
                x.x * x.x + x.y * x.z
            } else {
                0.0
            };
            Vector3::new(1.0 + 2.0 * x.x - x.y + q, 0.5 * x.z, -x.x + 3.0 * x.y)
        };
        let field: Vec<[f64; 3]> = (0..mesh.nodes.nrows())
            .map(|i| {
                f(&Vector3::new(
                    mesh.nodes[[i, 0]],
                    mesh.nodes[[i, 1]],
                    mesh.nodes[[i, 2]],
                ))
                .into()
            })
            .collect();
        let locator = Locator::new(&mesh);
        for s in 0..50 {
            let u = [
                (s * 37 % 50) as f64 / 50.0,
                (s * 11 % 50) as f64 / 50.0,
                (s * 23 % 50) as f64 / 50.0,
            ];
            let p = Point3::new(SIZE[0] * u[0], SIZE[1] * u[1], SIZE[2] * u[2]);
            let at = locator.locate(&p, 1e-10).expect("inside the box");
            assert!(at.outside <= 1e-10, "{t:?} {p}");
            let (v, g) = locator.interpolate_with_gradient(&at, &field);
            assert!(
                (v - f(&p.coords)).norm() < 1e-12,
                "{t:?} at {p}: {v} vs {}",
                f(&p.coords)
            );
            // The gradient of f, written out: column j is df/dx_j.
            let (dq_x, dq_y, dq_z) = if quadratic {
                (2.0 * p.x, p.z, p.y)
            } else {
                (0.0, 0.0, 0.0)
            };
            let exact = nalgebra::Matrix3::new(
                2.0 + dq_x,
                -1.0 + dq_y,
                dq_z,
                0.0,
                0.0,
                0.5,
                -1.0,
                3.0,
                0.0,
            );
            assert!((g - exact).norm() < 1e-11, "{t:?} at {p}: {g} vs {exact}");
        }
    }
}

/// A point outside a mesh of curved elements is located in none of them: Newton's iterates
/// for a point far from an element can end anywhere, inside the reference element too, and
/// were taken as a location (a point 4.7 mm outside data/fem/ball's ball of radius 10 got the
/// field of an element on its surface: the fold of the modes' continuation that issue 35
/// reported). Over a grid of spacing 0.4 around the ball, no point more than 0.1 outside the
/// sphere is located in an element (before the fix, one was), and every point more than 0.1
/// inside it is.
#[test]
fn points_outside_a_curved_mesh_are_located_in_no_element() {
    let deck =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/fem/ball/ball.inp");
    let mesh = Deck::read(&deck).unwrap().part(None).unwrap().mesh;
    let locator = Locator::new(&mesh);
    let (mut claimed, mut missed) = (0, 0);
    for i in -40..=40 {
        for j in -40..=40 {
            for k in -40..=40 {
                let p = Point3::new(i as f64, j as f64, k as f64) * 0.4 + Vector3::repeat(0.013);
                let r = p.coords.norm();
                let found = locator
                    .locate(&p, 1e-9)
                    .is_some_and(|at| at.outside <= 1e-9);
                claimed += usize::from(found && r > 10.1);
                missed += usize::from(!found && r < 9.9);
            }
        }
    }
    assert_eq!((claimed, missed), (0, 0));
}

#[test]
fn vtu_meshes_read_back() {
    let dir = tempfile::tempdir().unwrap();
    for t in [ElementType::Tet10, ElementType::Hex20, ElementType::Hex8] {
        let mesh = box_mesh(t, [2, 1, 1]);
        let path = dir.path().join("m.vtu");
        grain::vtk::write_vtu(&path, &mesh, &[]).unwrap();
        assert_eq!(read_vtu_mesh(&path).unwrap(), mesh);
    }
}

const DECK: &str = "*Heading
 grain and plate
** a comment
*Include, input=nodes.inp
*Node, nset=EXTRA
 100, 5., 5., 5.
*Element, type=C3D20R, elset=GRAIN
 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
 16, 17, 18, 19, 20
*Element, type=R3D4, elset=PLATE
 2, 1, 2, 3, 4
*Nset, nset=BOTTOM, generate
 1, 4, 1
*Nset, nset=SOME
 BOTTOM, 100
*Elset, elset=ALL
 GRAIN, PLATE
*Material, name=Steel
*Elastic
 210000., 0.3
*Density
 7.85E-09
*Step
*Static
*End Step
";

fn hex20_nodes() -> String {
    let nat = fem::shape::node_coordinates(ElementType::Hex20);
    let mut s = String::from("*NODE\n");
    for (i, p) in nat.iter().enumerate() {
        s.push_str(&format!("{}, {}, {}, {}\n", i + 1, p.x, p.y, p.z));
    }
    s
}

#[test]
fn decks_are_read_with_sets_materials_includes_and_continuations() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("nodes.inp"), hex20_nodes()).unwrap();
    let path = dir.path().join("job.inp");
    std::fs::write(&path, DECK).unwrap();
    let deck = Deck::read(&path).unwrap();
    assert_eq!(deck.node_labels.len(), 21);
    assert_eq!(deck.node_sets["BOTTOM"], vec![1, 2, 3, 4]);
    assert_eq!(deck.node_sets["SOME"], vec![1, 2, 3, 4, 100]);
    assert_eq!(deck.element_sets["ALL"], vec![1, 2]);
    assert_eq!(deck.materials[0].name, "STEEL");
    assert_eq!(deck.materials[0].elastic, Some((210000.0, 0.3)));
    assert_eq!(deck.materials[0].density, Some(7.85e-9));
    // Where they were read, for a tool to name (issue #33).
    assert_eq!(deck.materials[0].elastic_at, Some((path.clone(), 20)));
    assert_eq!(deck.materials[0].density_at, Some((path.clone(), 22)));
    let part = deck.part(Some("grain")).unwrap();
    assert_eq!(part.node_labels, (1..=20).collect::<Vec<i64>>());
    let mesh = part.mesh;
    assert_eq!(mesh.blocks.len(), 1);
    assert_eq!(mesh.blocks[0].element_type, ElementType::Hex20Reduced);
    assert_eq!(
        mesh.blocks[0].connectivity.row(0).to_vec(),
        (0..20).collect::<Vec<u64>>()
    );
    // The whole deck includes the rigid plate: refused, naming it.
    let e = deck.part(None).unwrap_err().to_string();
    assert!(
        e.contains("job.inp: line 11: element 2 has type R3D4"),
        "{e}"
    );
    let e = deck.part(Some("nope")).unwrap_err().to_string();
    assert!(
        e.contains("no element set `nope` (sets: ALL, GRAIN, PLATE)"),
        "{e}"
    );
}

#[test]
fn bad_decks_name_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let check = |text: &str, expect: &str| {
        let path = dir.path().join("bad.inp");
        std::fs::write(&path, text).unwrap();
        let e = match Deck::read(&path) {
            Err(e) => e.to_string(),
            Ok(deck) => deck.part(None).unwrap_err().to_string(),
        };
        assert!(e.contains(expect), "{e} does not contain {expect}");
    };
    check(
        "*Node\n1, 0., 0., x\n",
        "bad.inp: line 2: node: `x` is not a finite number",
    );
    // Found by mutating inputs (issue #14): Rust parses `NaN` and `inf`, and they went on.
    check(
        "*Node\n1, 0., NaN, 0.\n",
        "bad.inp: line 2: node: `NaN` is not a finite number",
    );
    check(
        "*Node\n1, 0., 0.\n",
        "line 2: a node needs a label and 3 coordinates",
    );
    check(
        "*Node\n1,0,0,0\n*Element, type=C3D4\n1, 1, 2, 3, 4\n",
        "line 4: element 1 refers to node 2, which is not defined",
    );
    check(
        "*Element, type=C3D4\n1, 1, 2, 3, 4, 5\n",
        "line 2: element 1 of type C3D4 lists 5 nodes, expected 4",
    );
    check(
        "*Element, type=C3D20\n1, 1, 2, 3\n*Node\n",
        "line 2: element 1 has 3 nodes",
    );
    check(
        "*Nset, nset=A\nB\n",
        "line 2: `B` is neither a label nor a set defined above",
    );
    check("*Include, input=missing.inp\n", "missing.inp");
    check(
        "*Part, name=A\n*End Part\n*Part, name=B\n",
        "line 3: a second *Part",
    );
    check("*Node\n1,0,0,0\n", "bad.inp: no solid elements");
    // Issue #23: ranges that would make terabytes of labels, or none.
    check(
        "*Nset, nset=A, generate\n1, 9000000000000, 1\n",
        "line 2: GENERATE 1, 9000000000000, 1: expected first <= last and at most 100000000 labels, got 9000000000000",
    );
    check(
        "*Elset, elset=A, generate\n-9223372036854775807, 9223372036854775807\n",
        "at most 100000000 labels, got 18446744073709551615",
    );
    check(
        "*Nset, nset=A, generate\n10, 1\n",
        "line 2: GENERATE 10, 1, 1: expected first <= last",
    );
}

/// Issue #23: a label defined twice is refused, naming both definitions and the option that
/// allows it; with that option the last definition replaces the earlier one (one element, the
/// node at its last position), never both assembled.
#[test]
fn labels_defined_twice_are_refused_or_replaced_by_the_last() {
    use fem::Redefinition;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("twice.inp");
    let nodes = "*Node\n1, 0, 0, 0\n2, 1, 0, 0\n3, 0, 1, 0\n4, 0, 0, 1\n";
    let tet = "*Element, type=C3D4\n1, 1, 2, 3, 4\n";
    let read = |text: String, r: Redefinition| {
        std::fs::write(&path, text).unwrap();
        Deck::read_with(&path, r)
    };
    // A node moved by a second definition.
    let text = format!("{nodes}{tet}*Node\n4, 0, 0, 2\n");
    let e = read(text.clone(), Redefinition::Refuse)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("twice.inp: line 9: node 4 is defined again (first at")
            && e.contains("twice.inp line 5)")
            && e.contains("--keep-last-definition"),
        "{e}"
    );
    let deck = read(text, Redefinition::KeepLast).unwrap();
    assert_eq!(deck.node_labels, [1, 2, 3, 4]);
    assert_eq!(deck.node_coords[3], [0.0, 0.0, 2.0]);
    // An element listed twice (a second *Element block with the same label).
    let text = format!("{nodes}{tet}*Element, type=C3D4\n1, 1, 3, 2, 4\n");
    let e = read(text.clone(), Redefinition::Refuse)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("twice.inp: line 9: element 1 is defined again (first at")
            && e.contains("line 7)"),
        "{e}"
    );
    let part = read(text, Redefinition::KeepLast)
        .unwrap()
        .part(None)
        .unwrap();
    assert_eq!(part.mesh.blocks[0].connectivity.nrows(), 1);
    assert_eq!(
        part.mesh.blocks[0].connectivity.row(0).to_vec(),
        [0, 2, 1, 3]
    );
}

/// Issue #23: a `.frd` that lists a node twice in its node block or in a `DISP` block is
/// refused, naming both lines (the last value used to win silently).
#[test]
fn frd_blocks_that_list_a_node_twice_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let node =
        |n: i64, x: [f64; 3]| format!(" -1{n:>10}{:>12.5E}{:>12.5E}{:>12.5E}\n", x[0], x[1], x[2]);
    let frd = |nodes: &[(i64, [f64; 3])], disp: &[(i64, [f64; 3])]| {
        let mut s = String::from(
            "    1C\n    2C                             4                                     1\n",
        );
        for &(n, x) in nodes {
            s.push_str(&node(n, x));
        }
        s.push_str(
            " -3\n    3C                             1                                     1\n",
        );
        s.push_str(
            " -1         1    3    0    1\n -2         1         2         3         4\n -3\n",
        );
        s.push_str("  100CL  101 1.000000000         4                     0    1           1\n");
        s.push_str(" -4  DISP        4    1\n -5  D1          1    2    1    0\n");
        for &(n, u) in disp {
            s.push_str(&node(n, u));
        }
        s.push_str(" -3\n 9999\n");
        s
    };
    let corners = [
        (1, [0.0, 0.0, 0.0]),
        (2, [1.0, 0.0, 0.0]),
        (3, [0.0, 1.0, 0.0]),
        (4, [0.0, 0.0, 1.0]),
    ];
    let u = [0.1, 0.0, 0.0];
    let path = dir.path().join("r.frd");
    let read = |text: String| {
        std::fs::write(&path, text).unwrap();
        fem::read_frd(&path)
    };
    let ok = read(frd(&corners, &[(1, u), (2, u), (3, u), (4, u)])).unwrap();
    assert_eq!(ok.displacements[0].labels, [1, 2, 3, 4]);
    let mut twice = corners.to_vec();
    twice.push((2, [5.0, 0.0, 0.0]));
    let e = read(frd(&twice, &[(1, u)])).unwrap_err().to_string();
    assert!(
        e.contains("r.frd: line 7: node 2 is listed again in the node block (first at line 4)"),
        "{e}"
    );
    let e = read(frd(&corners, &[(1, u), (2, u), (1, [0.2, 0.0, 0.0])]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("r.frd: line 17: node 1 is listed again in the DISP block")
            && e.contains("(first at line 15)"),
        "{e}"
    );
}

/// `match_points`: a "grain" of two tetrahedra and a "plate" tetrahedron whose corner sits on the
/// grain's corner (two nodes at one place), written by "another program" with the points
/// reversed, rounded to single precision and shifted by 1e-7 of the size, and the cells in
/// another order. Every grain node finds its own point (not the plate's coincident one), and a
/// node of an element the other mesh lacks finds none.
#[test]
fn points_are_matched_element_by_element_across_meshes() {
    use ndarray::{Array2, array};
    let grain_nodes = array![
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, 0.0, 1.0],
        [1.0, 1.0, 1.0],
    ];
    let plate_nodes = array![
        [1.0, 1.0, 1.0],
        [2.0, 1.0, 1.0],
        [1.0, 2.0, 1.0],
        [1.0, 1.0, 2.0]
    ];
    let tets = |rows: &[[u64; 4]]| grain::ElementBlock {
        element_type: ElementType::Tet4,
        connectivity: Array2::from_shape_fn((rows.len(), 4), |(i, j)| rows[i][j]),
    };
    let part = fem::Part {
        mesh: FemMesh {
            nodes: grain_nodes.clone(),
            blocks: vec![tets(&[[0, 1, 2, 3], [1, 2, 3, 4]])],
        },
        node_labels: vec![1, 2, 3, 4, 5],
    };
    // The other mesh: plate nodes 0-3, then the grain's reversed (grain node k at 8 - k).
    let mut all: Vec<[f64; 3]> = (0..4)
        .map(|i| [0, 1, 2].map(|c| plate_nodes[[i, c]]))
        .collect();
    all.extend((0..5).rev().map(|i| [0, 1, 2].map(|c| grain_nodes[[i, c]])));
    let other = FemMesh {
        nodes: Array2::from_shape_fn((9, 3), |(i, c)| (all[i][c] as f32) as f64 + 1e-7),
        blocks: vec![tets(&[[0, 1, 2, 3], [7, 6, 5, 4]])],
    };
    let points = fem::match_points(&part, &other);
    // The first grain tetrahedron is missing from the other mesh: node 0 is only in it. Node 4
    // at (1, 1, 1) is point 4, not the plate's coincident point 0.
    assert_eq!(
        points,
        vec![None, Some(7), Some(6), Some(5), Some(4)],
        "grain node k is point 8 - k where its element exists"
    );
    let with_both = FemMesh {
        blocks: vec![tets(&[[0, 1, 2, 3], [7, 6, 5, 4], [8, 7, 6, 5]])],
        ..other
    };
    assert_eq!(
        fem::match_points(&part, &with_both),
        vec![Some(8), Some(7), Some(6), Some(5), Some(4)]
    );
}

/// Issue #23: a deck saved with a byte-order mark (Windows editors) reads as without it: the
/// mark hid the first keyword, `*Node`.
#[test]
fn a_byte_order_mark_before_the_first_keyword_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let text = "*Node\n1, 0, 0, 0\n2, 1, 0, 0\n3, 0, 1, 0\n4, 0, 0, 1\n*Element, type=C3D4\n1, 1, 2, 3, 4\n";
    let plain = dir.path().join("plain.inp");
    let marked = dir.path().join("marked.inp");
    std::fs::write(&plain, text).unwrap();
    std::fs::write(
        &marked,
        [b"\xef\xbb\xbf".as_slice(), text.as_bytes()].concat(),
    )
    .unwrap();
    let mesh = |p: &std::path::Path| Deck::read(p).unwrap().part(None).unwrap().mesh;
    assert_eq!(mesh(&marked), mesh(&plain));
}
