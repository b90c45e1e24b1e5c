//! Closed-form references of the suites' checks, written here rather than taken from the code
//! under test (levelset-bake, mode-extract), so that a check compares two independent
//! computations.

use std::f64::consts::PI;

/// The bending mode of a simply supported beam per unit amplitude (docs/physics.md section 2,
/// the paper's Eq. 51) at a point `x`: with `s = x[axis] - start` the coordinate along the beam
/// from one support, `z = x[direction]` the coordinate across it from the mid-plane and `L` the
/// span `length`, `u_axis = z (pi/L) cos(pi s/L)`, `u_direction = -sin(pi s/L)`, the third
/// component 0. Beyond the supports (`s < 0` or `s > L`) the formula continues the sine.
pub fn bending_mode(
    x: [f64; 3],
    length: f64,
    axis: usize,
    direction: usize,
    start: f64,
) -> [f64; 3] {
    let k = PI / length;
    let s = x[axis] - start;
    let mut u = [0.0; 3];
    u[axis] = x[direction] * k * (k * s).cos();
    u[direction] = -(k * s).sin();
    u
}

/// The modal assurance criterion of two nodal vector fields (Allemang and Brown, "A correlation
/// coefficient for modal vector analysis", Proc. IMAC 1, 1982; Allemang, "The modal assurance
/// criterion - twenty years of use and abuse", Sound and Vibration 37(8), 2003):
/// `MAC(a, b) = (a . b)^2 / ((a . a)(b . b))`, 1 for the same shape at any scale or sign, 0 for
/// orthogonal shapes. The inner product is the plain Euclidean one over the nodes' three
/// components (no mass weighting: every node counts alike, so a refined region weighs more),
/// the definition mode-extract's `modes::mac` uses too.
pub fn mac(a: &[[f64; 3]], b: &[[f64; 3]]) -> f64 {
    let dot = |x: &[[f64; 3]], y: &[[f64; 3]]| -> f64 {
        x.iter()
            .zip(y)
            .map(|(p, q)| p[0] * q[0] + p[1] * q[1] + p[2] * q[2])
            .sum()
    };
    dot(a, b).powi(2) / (dot(a, a) * dot(b, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bending_mode_vanishes_at_the_supports_and_deflects_the_middle_by_one() {
        // A span of 38 from x = 1 along x, deflection along z.
        let u = |x: [f64; 3]| bending_mode(x, 38.0, 0, 2, 1.0);
        for end in [1.0, 39.0] {
            assert!(u([end, 0.5, 0.0])[2].abs() < 1e-15);
        }
        let mid = u([20.0, 0.5, 0.0]);
        assert!((mid[2] + 1.0).abs() < 1e-15 && mid[0].abs() < 1e-15 && mid[1] == 0.0);
        // The axial part is the rotation of the cross-section: -z du_z/ds, largest at a support.
        let top = u([1.0, 0.0, 2.0]);
        assert!((top[0] - 2.0 * PI / 38.0).abs() < 1e-15);
        // Plane sections stay normal to the axis: u_s = -z du_z/ds everywhere.
        let (x, z, h) = (13.0, -1.5, 1e-6);
        let slope = (u([x + h, 0.0, 0.0])[2] - u([x - h, 0.0, 0.0])[2]) / (2.0 * h);
        assert!((u([x, 0.0, z])[0] + z * slope).abs() < 1e-9);
    }

    #[test]
    fn mac_is_one_for_a_scaled_shape_and_zero_for_an_orthogonal_one() {
        let a = [[1.0, 2.0, 0.0], [0.0, -1.0, 3.0]];
        let scaled = a.map(|v| v.map(|c| -2.5 * c));
        assert!((mac(&a, &scaled) - 1.0).abs() < 1e-15);
        let orthogonal = [[2.0, -1.0, 0.0], [0.0, 0.0, 0.0]];
        assert_eq!(mac(&a, &orthogonal), 0.0);
        // cos^2 of the angle between the stacked vectors: (1, 0) against (1, 1) gives 1/2.
        assert!((mac(&[[1.0, 0.0, 0.0]], &[[1.0, 1.0, 0.0]]) - 0.5).abs() < 1e-15);
    }
}
