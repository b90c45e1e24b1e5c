//! Modal mass and stiffness against closed forms: polynomial fields the elements reproduce
//! exactly (integrals computed by hand below), and the analytic bending mode of docs/physics.md
//! section 2 on a beam.

use grain::ElementType;
use mode_extract::{Elastic, ModalError, modal_matrices};
use ndarray::Array3;

const MATERIAL: Elastic = Elastic {
    youngs_modulus: 210.0,
    poisson_ratio: 0.3,
    density: 7.8,
};

fn fields(mesh: &grain::FemMesh, f: &[&dyn Fn(f64, f64, f64) -> [f64; 3]]) -> Array3<f64> {
    Array3::from_shape_fn((f.len(), mesh.nodes.nrows(), 3), |(a, n, c)| {
        f[a](mesh.nodes[[n, 0]], mesh.nodes[[n, 1]], mesh.nodes[[n, 2]])[c]
    })
}

fn close(got: f64, exact: f64) {
    assert!(
        (got - exact).abs() <= 1e-12 * exact.abs().max(1.0),
        "{got} vs {exact}"
    );
}

#[test]
fn quadratic_fields_on_c3d10_match_closed_forms() {
    let (a, b, c) = (2.0, 1.5, 0.8);
    let mesh = fem::box_mesh(ElementType::Tet10, [0.0; 3], [a, b, c], [3, 2, 2]);
    // u1 = (xz, 0, -x^2/2): strain diag(z, 0, 0); u2 = (0, y, 0): strain diag(0, 1, 0).
    let phi = fields(
        &mesh,
        &[&|x, _, z| [x * z, 0.0, -x * x / 2.0], &|_, y, _| {
            [0.0, y, 0.0]
        }],
    );
    let (m, k) = modal_matrices(&mesh, &phi, &MATERIAL).unwrap();
    let (lambda, mu) = MATERIAL.lame();
    let rho = MATERIAL.density;
    close(k[[0, 0]], (lambda + 2.0 * mu) * a * b * c.powi(3) / 3.0);
    close(k[[1, 1]], (lambda + 2.0 * mu) * a * b * c);
    close(k[[0, 1]], lambda * a * b * c * c / 2.0);
    close(
        m[[0, 0]],
        rho * (a.powi(3) * b * c.powi(3) / 9.0 + a.powi(5) * b * c / 20.0),
    );
    close(m[[1, 1]], rho * a * b.powi(3) * c / 3.0);
    close(m[[0, 1]], 0.0);
    assert_eq!(m[[1, 0]], m[[0, 1]]);
}

#[test]
fn bilinear_field_on_c3d8_matches_closed_forms() {
    let (a, b, c) = (1.2, 0.7, 2.0);
    for t in [
        ElementType::Hex8,
        ElementType::Hex8Reduced,
        ElementType::Hex20,
    ] {
        let mesh = fem::box_mesh(t, [0.0; 3], [a, b, c], [2, 3, 2]);
        // u = (xz, 0, 0): strain with e_xx = z and e_xz = x/2.
        let phi = fields(&mesh, &[&|x, _, z| [x * z, 0.0, 0.0]]);
        let (m, k) = modal_matrices(&mesh, &phi, &MATERIAL).unwrap();
        let (lambda, mu) = MATERIAL.lame();
        close(
            k[[0, 0]],
            (lambda + 2.0 * mu) * a * b * c.powi(3) / 3.0 + mu * a.powi(3) * b * c / 3.0,
        );
        close(
            m[[0, 0]],
            MATERIAL.density * a.powi(3) * b * c.powi(3) / 9.0,
        );
    }
}

#[test]
fn analytic_bending_mode_on_a_c3d20_beam_matches_beam_theory() {
    // docs/physics.md section 2: u_x = z (pi/L) cos(pi x/L), u_z = -sin(pi x/L), z from the mid-plane.
    // K = (lambda + 2 mu) pi^4 b h^3 / (24 L^3), M = rho b h L/2 [1 + (pi h / L)^2 / 12].
    let (l, b, h) = (20.0, 1.0, 1.0);
    let mesh = fem::box_mesh(
        ElementType::Hex20,
        [0.0, -b / 2.0, -h / 2.0],
        [l, b / 2.0, h / 2.0],
        [40, 1, 2],
    );
    let k_pi = std::f64::consts::PI / l;
    let phi = fields(
        &mesh,
        &[&|x, _, z| [z * k_pi * (k_pi * x).cos(), 0.0, -(k_pi * x).sin()]],
    );
    let (m, k) = modal_matrices(&mesh, &phi, &MATERIAL).unwrap();
    let (lambda, mu) = MATERIAL.lame();
    let k_exact =
        (lambda + 2.0 * mu) * std::f64::consts::PI.powi(4) * b * h.powi(3) / (24.0 * l.powi(3));
    let m_exact =
        MATERIAL.density * b * h * l / 2.0 * (1.0 + (std::f64::consts::PI * h / l).powi(2) / 12.0);
    assert!(
        (k[[0, 0]] / k_exact - 1.0).abs() < 0.005,
        "K {} vs {k_exact}",
        k[[0, 0]]
    );
    assert!(
        (m[[0, 0]] / m_exact - 1.0).abs() < 0.005,
        "M {} vs {m_exact}",
        m[[0, 0]]
    );
}

#[test]
fn inverted_elements_are_refused_by_name() {
    let mut mesh = fem::box_mesh(ElementType::Tet4, [0.0; 3], [1.0; 3], [1, 1, 1]);
    let row: Vec<u64> = mesh.blocks[0].connectivity.row(2).to_vec();
    mesh.blocks[0].connectivity[[2, 1]] = row[2];
    mesh.blocks[0].connectivity[[2, 2]] = row[1];
    let phi = fields(&mesh, &[&|x, _, _| [x, 0.0, 0.0]]);
    let e = modal_matrices(&mesh, &phi, &MATERIAL).unwrap_err();
    assert!(
        matches!(
            e,
            ModalError::Inverted {
                block: 0,
                element: 2,
                kind: "C3D4",
                ..
            }
        ),
        "{e}"
    );
}
