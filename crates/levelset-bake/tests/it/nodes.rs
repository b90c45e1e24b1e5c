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
