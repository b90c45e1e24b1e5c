//! `frame = "input"` (dem_run::grains::Frame): a grain placed by the frame of the mesh it was
//! baked from lands where that mesh, moved as asked, is; checked on a brick whose mesh is turned
//! and off-centre in its own frame, so that its principal frame differs from it on every axis.

use std::path::Path;

use levelset_bake::{BakeOptions, Extent, NodeChoice, OpenMesh, TriangleMesh, bake_mesh};
use nalgebra::{Point3, Rotation3, UnitQuaternion, Vector3};

use crate::common;

/// The brick: `[1, 3] x [-2, -1.5] x [0.5, 1.5]`, turned by `turn` about the origin.
const LO: [f64; 3] = [1.0, -2.0, 0.5];
const HI: [f64; 3] = [3.0, -1.5, 1.5];

fn turn() -> Rotation3<f64> {
    Rotation3::from_axis_angle(
        &nalgebra::Unit::new_normalize(Vector3::new(1.0, 2.0, 3.0)),
        0.7,
    )
}

/// The brick's surface, 12 outward triangles, in the mesh's frame.
fn brick_mesh() -> TriangleMesh {
    let corner = |i: usize| {
        let c = [0, 1, 2].map(|k| if i >> k & 1 == 1 { HI[k] } else { LO[k] });
        turn() * Point3::from(c)
    };
    // Faces by corner bits (x = 1, y = 2, z = 4), counter-clockwise seen from outside.
    let quads = [
        [0, 4, 6, 2], // x = lo
        [1, 3, 7, 5], // x = hi
        [0, 1, 5, 4], // y = lo
        [2, 6, 7, 3], // y = hi
        [0, 2, 3, 1], // z = lo
        [4, 5, 7, 6], // z = hi
    ];
    TriangleMesh {
        vertices: (0..8).map(corner).collect(),
        triangles: quads
            .iter()
            .flat_map(|q| [[q[0], q[1], q[2]], [q[0], q[2], q[3]]])
            .collect(),
    }
}

fn bake(dir: &Path) {
    let options = BakeOptions {
        spacing: 0.05,
        pad_cells: 2,
        extent: Extent::Full,
        nodes: NodeChoice::Count(400),
        density: 1.0,
        units: "test".into(),
        open: OpenMesh::Refuse,
        allow_unresolved: false,
    };
    bake_mesh(&brick_mesh(), Path::new("brick.stl"), &options)
        .unwrap()
        .bundle
        .write(&dir.join("brick.grain"))
        .unwrap();
}

#[test]
fn a_grain_placed_in_its_mesh_frame_lands_where_the_mesh_moved_as_asked_is() {
    let dir = tempfile::tempdir().unwrap();
    bake(dir.path());
    let p = Vector3::new(10.0, -4.0, 7.0);
    let q = UnitQuaternion::from_axis_angle(
        &nalgebra::Unit::new_normalize(Vector3::new(-1.0, 0.5, 2.0)),
        2.1,
    );
    let text = format!(
        "[run]\ndt = 1e-4\nsteps = 1\n[contact]\nlaw = \"linear-springs\"\nkn = 1\n\
         [[grains]]\nbundle = \"brick.grain\"\nframe = \"input\"\nposition = [{}, {}, {}]\n\
         orientation = [{}, {}, {}, {}]\n",
        p.x, p.y, p.z, q.w, q.i, q.j, q.k
    );
    let sim = common::simulation(dir.path(), &text);
    let body = &sim.world.bodies[0];
    let shape = &sim.world.shapes[body.shape];
    // Back in the brick's own axis-aligned coordinates, x = R0^T R_q^T (x_g - p), every surface
    // node lies on the brick's faces (the nodes are placed on the mesh's triangles, the mass
    // properties are the mesh's exact ones: both to rounding), and the centre of mass at the
    // brick's centre.
    let back = |x_g: Vector3<f64>| turn().inverse() * (q.inverse() * (x_g - p));
    let size = 2.0;
    let mut farthest: f64 = 0.0;
    for node in &shape.nodes {
        let x = back(body.position + body.orientation * node);
        // Distance to the box surface from inside or outside.
        let inside = (0..3)
            .map(|k| (x[k] - LO[k]).min(HI[k] - x[k]))
            .fold(f64::INFINITY, f64::min);
        let outside = (0..3)
            .map(|k| (LO[k] - x[k]).max(x[k] - HI[k]).max(0.0))
            .map(|d| d * d)
            .sum::<f64>()
            .sqrt();
        farthest = farthest.max(if outside > 0.0 { outside } else { inside.abs() });
    }
    assert!(
        farthest < 1e-3 * size,
        "a node {farthest:e} off the brick's faces"
    );
    let centre = back(body.position);
    let expected = Vector3::from([0, 1, 2].map(|k| 0.5 * (LO[k] + HI[k])));
    assert!(
        (centre - expected).norm() < 1e-9 * size,
        "centre of mass at {centre} in the brick's frame, not {expected}"
    );
    // The grain's own frame is not the mesh's: without `frame`, the same numbers put the
    // centre at p, which the input frame does not (the brick's centre is off the origin).
    assert!((body.position - p).norm() > 1.0);
}
