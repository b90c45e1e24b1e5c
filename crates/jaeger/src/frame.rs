//! The contact frame (docs/jaeger.md section 6; Kuhn 2011, eqs. (12)-(15)): a unit quaternion per
//! contact whose local z axis is the contact normal, so that the tangential history, stored in
//! local xy coordinates, is carried along when the pair tumbles (tilt of the normal) or twirls
//! (spin about the normal) without re-projecting it.
//!
//! The update is the finite-rotation form of Kuhn's increments. Kuhn adds the first-order
//! rotation vector `n x dn + 1/2 ((dtheta_1 + dtheta_2) . n) n`; here the frame is turned by
//! the exact twist about the old normal (the twist part of the mean spin's rotation, by
//! swing-twist decomposition) followed by the shortest rotation taking the old normal onto the
//! new one. To first order the two agree; for a pair that moves as one rigid body the update
//! is exact for any step size, and the frame's z axis equals the new normal to round-off, so
//! no drift accumulates.
//!
//! Quaternions are four `f64` (scalar first) with the few products needed written out here,
//! so that the crate needs no linear-algebra dependency.

type Quat = [f64; 4];
type Vec3 = [f64; 3];

fn dot(a: Vec3, b: Vec3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn cross(a: Vec3, b: Vec3) -> Vec3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn unit(v: Vec3) -> Vec3 {
    let n = dot(v, v).sqrt();
    [v[0] / n, v[1] / n, v[2] / n]
}

/// Hamilton product `a b`.
fn mul(a: Quat, b: Quat) -> Quat {
    [
        a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
        a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
        a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
        a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0],
    ]
}

fn normalize(q: Quat) -> Quat {
    let n = (q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]).sqrt();
    [q[0] / n, q[1] / n, q[2] / n, q[3] / n]
}

/// Rotates `v` by the unit quaternion `q` (`q v q*`).
fn rotate(q: Quat, v: Vec3) -> Vec3 {
    let u = [q[1], q[2], q[3]];
    let t = cross(u, v);
    let t = [2.0 * t[0], 2.0 * t[1], 2.0 * t[2]];
    let c = cross(u, t);
    [
        v[0] + q[0] * t[0] + c[0],
        v[1] + q[0] * t[1] + c[1],
        v[2] + q[0] * t[2] + c[2],
    ]
}

fn conj(q: Quat) -> Quat {
    [q[0], -q[1], -q[2], -q[3]]
}

/// The shortest rotation taking unit `a` onto unit `b`. For `a . b < 0` the direct formula loses
/// accuracy (its scalar part `1 + a . b` cancels), so the rotation is built as a half turn taking
/// `a` to `-a` followed by the short arc from `-a` to `b`: still a rotation taking `a` onto `b`,
/// accurate to round-off, though not the shortest one (only the initial frame uses that case).
fn shortest_arc(a: Vec3, b: Vec3) -> Quat {
    let arc = |a: Vec3| {
        let c = cross(a, b);
        normalize([1.0 + dot(a, b), c[0], c[1], c[2]])
    };
    if dot(a, b) >= 0.0 {
        return arc(a);
    }
    let helper = if a[0].abs() < 0.9 {
        [1.0, 0.0, 0.0]
    } else {
        [0.0, 1.0, 0.0]
    };
    let axis = unit(cross(a, helper));
    mul(arc([-a[0], -a[1], -a[2]]), [0.0, axis[0], axis[1], axis[2]])
}

/// The quaternion of a rotation vector (axis times angle in radians).
fn from_rotation_vector(theta: Vec3) -> Quat {
    let angle = dot(theta, theta).sqrt();
    if angle == 0.0 {
        return [1.0, 0.0, 0.0, 0.0];
    }
    let s = (0.5 * angle).sin() / angle;
    [
        (0.5 * angle).cos(),
        s * theta[0],
        s * theta[1],
        s * theta[2],
    ]
}

/// The twist of `q` about the unit axis `n` (swing-twist decomposition `q = swing twist`).
fn twist(q: Quat, n: Vec3) -> Quat {
    let along = dot([q[1], q[2], q[3]], n);
    if q[0] == 0.0 && along == 0.0 {
        // A half turn about an axis normal to n has no twist.
        return [1.0, 0.0, 0.0, 0.0];
    }
    normalize([q[0], along * n[0], along * n[1], along * n[2]])
}

/// The local frame of one contact: z along the contact normal, x and y spanning the tangent
/// plane. Stores one unit quaternion (32 bytes): the normal is the frame's own z axis.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ContactFrame {
    /// Local-to-global rotation (Kuhn's `conj(Q)`), scalar first.
    to_global: Quat,
}

impl ContactFrame {
    /// The frame of a new contact with unit normal `normal` (global frame): the shortest rotation
    /// taking the normal onto the local z axis (docs/jaeger.md section 6.2). `normal` is normalized
    /// here; it must be finite and non-zero.
    pub fn new(normal: [f64; 3]) -> Self {
        ContactFrame {
            to_global: shortest_arc([0.0, 0.0, 1.0], unit(normal)),
        }
    }

    /// The contact normal: the frame's z axis in global coordinates.
    pub fn normal(&self) -> [f64; 3] {
        rotate(self.to_global, [0.0, 0.0, 1.0])
    }

    /// Carries the frame through one step (docs/jaeger.md section 6.3-6.4): `normal` is the new unit
    /// normal (global), `spin1` and `spin2` the two particles' rotation vectors over the step
    /// (global, radians). The frame twirls by the twist of their mean about the old normal, then
    /// tilts along the shortest arc to the new normal.
    pub fn update(&mut self, normal: [f64; 3], spin1: [f64; 3], spin2: [f64; 3]) {
        let old = self.normal();
        let mean = [
            0.5 * (spin1[0] + spin2[0]),
            0.5 * (spin1[1] + spin2[1]),
            0.5 * (spin1[2] + spin2[2]),
        ];
        let twirl = twist(from_rotation_vector(mean), old);
        let tilt = shortest_arc(old, unit(normal));
        self.to_global = normalize(mul(mul(tilt, twirl), self.to_global));
    }

    /// The local tangential components `(x, y)` of a global vector (its normal part is dropped).
    pub fn to_local(&self, v: [f64; 3]) -> [f64; 2] {
        let l = rotate(conj(self.to_global), v);
        [l[0], l[1]]
    }

    /// The global vector of local tangential components `(x, y)`.
    pub fn to_global(&self, t: [f64; 2]) -> [f64; 3] {
        rotate(self.to_global, [t[0], t[1], 0.0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Vec3, b: Vec3, tol: f64) -> bool {
        (0..3).all(|i| (a[i] - b[i]).abs() <= tol)
    }

    /// A fixed sequence of pseudo-random numbers in [-1, 1).
    fn sequence(n: usize) -> Vec<f64> {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_xorshift::XorShiftRng::seed_from_u64(11);
        (0..n).map(|_| rng.random_range(-1.0..1.0)).collect()
    }

    #[test]
    fn new_frame_maps_the_normal_to_local_z() {
        for n in [
            [0.0, 0.0, 1.0],
            [0.0, 0.0, -1.0],
            [1.0, 2.0, -3.0],
            [1e-9, 0.0, -1.0],
            [0.0, 1.0, 0.0],
        ] {
            let f = ContactFrame::new(n);
            let u = unit(n);
            assert!(close(f.normal(), u, 1e-15), "{n:?}: {:?}", f.normal());
            // A tangential vector survives the round trip; a normal one has no tangential part.
            let t = cross(u, [0.3, -0.7, 0.2]);
            assert!(close(f.to_global(f.to_local(t)), t, 1e-15));
            let l = f.to_local(u);
            assert!(l[0].abs() < 1e-15 && l[1].abs() < 1e-15);
        }
    }

    #[test]
    fn glued_pair_carries_its_tangential_force_through_tumbling_and_twirling() {
        // Both spheres turn by the same finite rotation each step: the pair is one rigid body,
        // so the global force must be the initial one rotated by the accumulated rotation.
        let r = sequence(3 * 2000);
        let n0 = unit([0.2, -0.5, 0.8]);
        let mut frame = ContactFrame::new(n0);
        let t_local = [0.37, -1.25];
        let t0 = frame.to_global(t_local);
        let mut total: Quat = [1.0, 0.0, 0.0, 0.0];
        for step in r.chunks(3) {
            let spin = [0.3 * step[0], 0.3 * step[1], 0.3 * step[2]];
            total = normalize(mul(from_rotation_vector(spin), total));
            frame.update(rotate(total, n0), spin, spin);
        }
        let t = frame.to_global(t_local);
        assert!(
            close(t, rotate(total, t0), 1e-12),
            "{t:?} vs {:?}",
            rotate(total, t0)
        );
        assert!(close(frame.normal(), rotate(total, n0), 1e-12));
    }

    #[test]
    fn opposite_spins_do_not_twirl_and_a_common_spin_does() {
        let n = [0.0, 0.0, 1.0];
        let mut f = ContactFrame::new(n);
        let before = f.to_global([1.0, 0.0]);
        f.update(n, [0.0, 0.0, 0.4], [0.0, 0.0, -0.4]);
        assert!(close(f.to_global([1.0, 0.0]), before, 1e-15));
        f.update(n, [0.0, 0.0, 0.4], [0.0, 0.0, 0.4]);
        assert!(close(
            f.to_global([1.0, 0.0]),
            [0.4f64.cos(), 0.4f64.sin(), 0.0],
            1e-15
        ));
    }

    #[test]
    fn small_steps_agree_with_kuhns_first_order_increment() {
        // Kuhn eqs. (13)-(15): P_new = P + 1/2 (0, dw) P with dw = n x dn + 1/2 ((s1 + s2).n) n.
        let n0 = unit([0.1, 0.4, 0.9]);
        let f0 = ContactFrame::new(n0);
        for h in [1e-3, 1e-4] {
            let (s1, s2) = ([0.2 * h, -0.3 * h, 0.5 * h], [0.1 * h, 0.4 * h, 0.2 * h]);
            let n1 = unit([0.1 + h, 0.4 - 2.0 * h, 0.9]);
            let mut ours = f0;
            ours.update(n1, s1, s2);
            let dn = [n1[0] - n0[0], n1[1] - n0[1], n1[2] - n0[2]];
            let tilt = cross(n0, dn);
            let s = 0.5 * dot([s1[0] + s2[0], s1[1] + s2[1], s1[2] + s2[2]], n0);
            let dw = [
                tilt[0] + s * n0[0],
                tilt[1] + s * n0[1],
                tilt[2] + s * n0[2],
            ];
            let inc = mul([0.0, 0.5 * dw[0], 0.5 * dw[1], 0.5 * dw[2]], f0.to_global);
            let kuhn = normalize([
                f0.to_global[0] + inc[0],
                f0.to_global[1] + inc[1],
                f0.to_global[2] + inc[2],
                f0.to_global[3] + inc[3],
            ]);
            let diff = (0..4)
                .map(|i| (kuhn[i] - ours.to_global[i]).abs())
                .fold(0.0, f64::max);
            // Second order in the step: the difference falls 100-fold per 10-fold smaller step.
            assert!(diff < 5.0 * h * h, "h = {h}: {diff}");
        }
    }
}
