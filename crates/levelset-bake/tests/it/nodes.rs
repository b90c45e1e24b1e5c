//! Surface nodes: positions on the surface, areas summing to the surface area.

use levelset_bake::{DistanceField, Primitive, Signing, SurfaceNodes};

#[test]
fn vertex_nodes_carry_the_whole_area() {
    let mesh = Primitive::Cuboid {
        half: [1.0, 0.5, 0.25],
    }
    .surface_mesh(0.2);
    let nodes = SurfaceNodes::vertices(&mesh);
    let total: f64 = nodes.areas.iter().sum();
    assert!(
        (total - 8.0 * (0.5 + 0.125 + 0.25)).abs() < 1e-12,
        "{total}"
    );
    assert_eq!(nodes.positions.len(), mesh.vertices.len());
}

#[test]
fn resampled_nodes_are_uniform_on_the_surface_and_carry_its_area() {
    let sphere = Primitive::Sphere { radius: 1.0 };
    let mesh = sphere.surface_mesh(0.04);
    let field = DistanceField::new(&mesh, Signing::PseudoNormal);
    let spacing = 0.15;
    let nodes = SurfaceNodes::resample(&mesh, &field, spacing);
    let total: f64 = nodes.areas.iter().sum();
    // Exactly the mesh area (a partition of the triangles), within 1 % of the sphere's.
    assert!((total / mesh.area() - 1.0).abs() < 1e-12);
    assert!((total / sphere.area() - 1.0).abs() < 0.01, "{total}");
    // On the surface, no two closer than spacing / 2, and about one node per spacing^2.
    for p in &nodes.positions {
        assert!(field.closest_point(p).1 < 1e-12);
    }
    let n = nodes.positions.len();
    for a in 0..n {
        for b in a + 1..n {
            assert!((nodes.positions[a] - nodes.positions[b]).norm() >= 0.5 * spacing);
        }
    }
    let per_node = total / n as f64;
    assert!(
        per_node > 0.3 * spacing * spacing && per_node < 1.5 * spacing * spacing,
        "{per_node}"
    );
    // Every node owns some area, none a disproportionate share.
    let largest = nodes.areas.iter().copied().fold(0.0, f64::max);
    assert!(
        nodes.areas.iter().all(|&a| a > 0.0) && largest < 4.0 * per_node,
        "{largest} vs {per_node}"
    );
}

/// The resampling lattice passes through the grain's origin: a cuboid whose half sides are
/// multiples of the spacing gets a node at the centre of each face (where a wall pressing it
/// first touches), and a node set symmetric under each coordinate reflection, like the cuboid.
#[test]
fn resampled_nodes_keep_the_symmetry_of_a_centred_grain() {
    let half = [1.0, 0.5, 0.5];
    let mesh = Primitive::Cuboid { half }.surface_mesh(0.1);
    let field = DistanceField::new(&mesh, Signing::PseudoNormal);
    let nodes = SurfaceNodes::resample(&mesh, &field, 0.25);
    let has = |q: [f64; 3]| {
        nodes
            .positions
            .iter()
            .any(|p| (0..3).all(|d| (p[d] - q[d]).abs() < 1e-12))
    };
    for d in 0..3 {
        for s in [-1.0, 1.0] {
            let mut centre = [0.0; 3];
            centre[d] = s * half[d];
            assert!(has(centre), "no node at the face centre {centre:?}");
        }
    }
    for p in &nodes.positions {
        for d in 0..3 {
            let mut mirror = [p.x, p.y, p.z];
            mirror[d] = -mirror[d];
            assert!(has(mirror), "{p} has no mirror image across axis {d}");
        }
    }
}
