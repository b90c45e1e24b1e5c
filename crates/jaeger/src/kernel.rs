//! One step of Jäger's algorithm (docs/jaeger.md section 4; Kuhn 2011, Figs. 2 and 3): the new normal
//! and tangential force of a contact from its new indentation and tangential displacement
//! increment, with the edits to its equivalent history. Internally in Kuhn's half units.

use crate::params::{ContactParams, half};
use crate::store::{ContactState, HeldLeg, HistoryStore};

/// The force on the contact, in the contact's local frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContactForce {
    /// Hertz normal force `N >= 0` (compressive).
    pub normal: f64,
    /// Tangential force `T` (local x, y), pointing along the accumulated relative tangential
    /// displacement: the host applies it against that movement on the body it was measured for.
    pub tangential: [f64; 2],
}

/// Relative tolerance of the kernel's comparisons (Kuhn's `tol`; docs/jaeger.md section 4.8).
const TOL: f64 = 1e-12;

#[inline]
fn dot(a: [f64; 2], b: [f64; 2]) -> f64 {
    a[0] * b[0] + a[1] * b[1]
}

#[inline]
fn axpy(a: f64, x: [f64; 2], y: [f64; 2]) -> [f64; 2] {
    [y[0] + a * x[0], y[1] + a * x[1]]
}

#[inline]
fn scale(a: f64, x: [f64; 2]) -> [f64; 2] {
    [a * x[0], a * x[1]]
}

/// `mu x / |x|`, or zero for a zero vector (a slip direction that does not exist). Scaled by
/// the larger component first, so that any finite `x` gives a unit direction (`|x|^2` overflows
/// for displacements past 1e154, and the direction came out zero).
#[inline]
fn toward(mu: f64, x: [f64; 2]) -> [f64; 2] {
    let largest = x[0].abs().max(x[1].abs());
    if largest > 0.0 {
        let u = scale(1.0 / largest, x);
        scale(mu / dot(u, u).sqrt(), u)
    } else {
        [0.0; 2]
    }
}

/// The apex on an elastic leg (docs/jaeger.md section 4.2; Kuhn 2011, eqs. (5)-(6), Fig. 3 line
/// 37): `zeta_s = zeta - u`, `u` the positive root of the slip cone's
/// `f(u) = |e + p u|^2 - mu^2 u^2 = c + 2 b u - a u^2` (`c = |e|^2 > 0`, `b = e . p`,
/// `a = mu^2 - |p|^2 > 0` on an elastic leg); or `z_j`, the end of the leg below, wherever the
/// apex lies at or below it and the leg goes whole. `f` is positive at 0 and has one positive
/// root, so that is exactly where `u_j = zeta - z_j <= 0` or `f(u_j) >= 0`, decided without
/// the root: a removal then takes no square root or division.
///
/// The root `u = (b + sqrt(b^2 + a c)) / a = c / (sqrt(b^2 + a c) - b)` in the form whose terms
/// do not cancel: the first for `b > 0`, the second for `b <= 0`. Both stay accurate as
/// `|p| -> mu` (`a -> 0`), where `u` grows without bound for `b > 0` and tends to `c / (2 |b|)`
/// otherwise. (The kernel took the second form for every `b` before, which cancels for
/// `b > 0` and `a c << b^2`: a relative error of about `eps b^2 / (a c)`.)
#[inline]
fn elastic_apex(zeta: f64, z_j: f64, c: f64, b: f64, a: f64) -> f64 {
    let u_j = zeta - z_j;
    if u_j <= 0.0 || c + u_j * (2.0 * b - a * u_j) >= 0.0 {
        return z_j;
    }
    let root = (b * b + a * c).sqrt();
    zeta - if b > 0.0 {
        (b + root) / a
    } else {
        c / (root - b)
    }
}

impl HistoryStore {
    /// Advances one contact by one step and returns its force.
    ///
    /// - `delta`: the TOTAL normal overlap now, `r1 + r2 - |x2 - x1|` (length); `delta <= 0` is
    ///   loss of contact: the history is released and the force is zero;
    /// - `du`: the TOTAL relative tangential displacement of the contact points during this step,
    ///   in the contact's local frame (length).
    ///
    /// Inputs must be finite (checked in debug builds); a NaN overlap counts as no contact.
    ///
    /// Any step size is exact (Cattaneo-Mindlin-Deresiewicz for straight steps in
    /// (indentation, displacement) space). Cost: O(1) for elastic steps, O(legs removed) for slip
    /// steps; no allocation unless the store has to grow.
    pub fn step(
        &mut self,
        params: &ContactParams,
        state: &mut ContactState,
        delta: f64,
        du: [f64; 2],
    ) -> ContactForce {
        debug_assert!(
            delta.is_finite() && du.iter().all(|x| x.is_finite()),
            "non-finite contact movement: delta {delta}, du {du:?}"
        );
        let zeta = half(delta);
        let dxi = [half(du[0]), half(du[1])];
        if zeta <= 0.0 || zeta.is_nan() {
            // Loss of contact (Fig. 2, lines 4-6).
            self.release(state);
            return ContactForce {
                normal: 0.0,
                tangential: [0.0; 2],
            };
        }
        let n = params.normal_force_half(zeta);
        let top = state.top();
        let (z_top, n_top) = (top.zeta, top.normal);
        let dz = zeta - z_top;
        if dz == 0.0 && dxi == [0.0; 2] {
            // No movement (line 10).
            return ContactForce {
                normal: n_top,
                tangential: state.tangential,
            };
        }
        let (mu, kappa) = (params.friction(), params.kappa());

        // 4.1: elastic (stick) step, Jäger's first case of eq. (4).
        let dxi2 = dot(dxi, dxi);
        if dz > 0.0 && dxi2 < (mu * kappa * dz).powi(2) {
            let p = if dxi2 == 0.0 {
                [0.0; 2]
            } else {
                scale(1.0 / (kappa * dz), dxi)
            };
            let t = axpy(n - n_top, p, state.tangential); // eq. (8), line 18
            self.push(state, zeta, n, p);
            state.tangential = t;
            if params.approximation() > 0.0 {
                self.merge(params, state);
            }
            return ContactForce {
                normal: n,
                tangential: t,
            };
        }

        // 4.2: slip in an annulus. Search down the history for the apex zeta_s of the new slip leg.
        let tol_z = TOL * zeta.max(z_top);
        let tol_f = TOL * n.max(n_top);
        let mut dxi = dxi; // measured from the point (z_old, n_old) of the path
        let mut t_old = state.tangential;
        let mut n_old = n_top;
        let (mut z_s, mut n_s) = (zeta, n);
        let mut p_top = [0.0; 2];
        while state.has_legs() {
            let HeldLeg {
                zeta: z_i,
                normal: n_i,
                slope,
            } = state.top();
            let below = self.leg(params, state, 1);
            let (z_j, n_j) = (below.zeta, below.normal);
            p_top = slope;
            // Offset of the new end point from the top leg extended to zeta (line 24).
            let e = axpy(-(zeta - z_i), p_top, scale(1.0 / kappa, dxi));
            let e2 = dot(e, e);
            let p2 = dot(p_top, p_top);
            if e2 <= tol_z * tol_z {
                z_s = zeta; // (a) on the leg's line
            } else if (mu * mu - p2).abs() < TOL {
                // (b) a slip leg: continued loading past its start, or unloading inside its cone.
                let o = axpy(z_i - z_j, p_top, scale(1.0 / kappa, dxi));
                if dot(o, o) > (mu * (zeta - z_j)).powi(2) {
                    z_s = z_j;
                } else {
                    z_s = zeta + e2 / (2.0 * dot(e, p_top)); // eq. (7), line 34
                }
            } else {
                // (c) an elastic leg.
                z_s = elastic_apex(zeta, z_j, e2, dot(e, p_top), mu * mu - p2);
            }
            if z_s >= z_i {
                // The apex cannot lie beyond the top point except at exact equality (docs/jaeger.md
                // 11.6): take the top point itself.
                z_s = z_i;
                n_s = n_i;
                break;
            }
            n_s = if z_s <= z_j {
                // The leg goes (N is monotone, so N(zeta_s) <= n_j): its normal force is not
                // needed (a slip leg cut back to its start is this case, at equality).
                n_j
            } else if z_s >= tol_z {
                params.normal_force_half(z_s)
            } else {
                // Apex below zero: every remaining leg goes (line 43).
                -1.0 / (TOL * n.max(n_old))
            };
            // Elimination (lines 47-55): cut leg i back to the apex or remove it.
            let z_cut = z_s.max(z_j);
            n_old = n_s.max(n_j);
            t_old = axpy(-(n_i - n_old), p_top, t_old);
            dxi = axpy(kappa * (z_i - z_cut), p_top, dxi);
            if n_s <= n_j + tol_f {
                self.pop(params, state);
            } else {
                // Slide back, keeping the slope (line 55).
                let top = state.top_mut();
                top.zeta = z_s;
                top.normal = n_s;
                break;
            }
        }

        let t = if !state.has_legs() {
            // 4.3: gross sliding, T = mu N along the accumulated movement.
            let p = toward(mu, dxi);
            self.push(state, zeta, n, p);
            scale(n, p)
        } else if zeta - z_s <= tol_z {
            // 4.5: the slip annulus has zero width (pure normal unloading of a history with no
            // tangential content): the history is already cut at zeta; push nothing.
            axpy(-(n_old - n_s), p_top, t_old)
        } else {
            // 4.4 and 4.6: the new slip leg from the apex, of slope exactly mu.
            let p = toward(mu, dxi);
            self.push(state, zeta, n, p);
            axpy(-(n_old - n_s), p_top, axpy(n - n_s, p, t_old)) // eq. (8), line 67
        };
        state.tangential = t;
        ContactForce {
            normal: n,
            tangential: t,
        }
    }

    /// The approximate history (docs/jaeger.md section 5; Kuhn Fig. 6): after an elastic step, merge
    /// the top leg into the one below while both are elastic and their slopes differ by less than
    /// `pdif`. The merged slope is the `N`-weighted mean, so the force is kept exactly.
    fn merge(&mut self, params: &ContactParams, state: &mut ContactState) {
        let mu = params.friction();
        let pdif2 = params.approximation().powi(2);
        loop {
            if !state.has_legs() || Self::on_origin(state) {
                return;
            }
            let (top, j) = (state.top(), self.leg(params, state, 1));
            let (n_i, p_i, p_j) = (top.normal, top.slope, j.slope);
            let d = [p_j[0] - p_i[0], p_j[1] - p_i[1]];
            if !(dot(p_j, p_j) < mu * mu - (TOL * n_i).powi(2) && dot(d, d) < pdif2) {
                return;
            }
            let n_j = j.normal;
            let n_k = self.leg(params, state, 2).normal;
            let w = 1.0 / (n_i - n_k);
            let merged = [
                w * (p_i[0] * (n_i - n_j) + p_j[0] * (n_j - n_k)),
                w * (p_i[1] * (n_i - n_j) + p_j[1] * (n_j - n_k)),
            ];
            self.pop(params, state);
            *state.top_mut() = HeldLeg {
                zeta: top.zeta,
                normal: n_i,
                slope: merged,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::elastic_apex;
    use proptest::prelude::*;

    proptest! {
        /// The apex's sign test against the root computed in long double precision's stead
        /// (the root refined by two Newton steps on `f` from the kernel's, whose error then
        /// falls far below the tolerance; an independent reference for the sign): the leg goes
        /// whole where the root lies below its end, and otherwise the root is the kernel's to
        /// a few rounding errors, `|p|` near `mu` (`a` down to 1e-9) and `|e|^2` small against `(e . p)^2`
        /// (`c` log-uniform down to 1e-12) included.
        #[test]
        fn the_elastic_apex_goes_below_the_leg_exactly_where_the_root_does(
            zeta in 0.1f64..2.0,
            z_j in 0.0f64..2.0,
            log_c in -12.0f64..0.0,
            b in -1.0f64..1.0,
            log_a in -9.0f64..0.0,
        ) {
            let (a, c) = (10f64.powf(log_a), 10f64.powf(log_c));
            // `f` and `f'` in the expanded form, and two Newton steps from the textbook root.
            let f = |u: f64| c + u * (2.0 * b - a * u);
            let mut u = (b + (b * b + a * c).sqrt()) / a;
            for _ in 0..2 {
                u -= f(u) / (2.0 * b - 2.0 * a * u);
            }
            let root = zeta - u;
            let z_s = elastic_apex(zeta, z_j, c, b, a);
            let scale = zeta.max(1.0).max(u.abs());
            if root <= z_j - 1e-12 * scale {
                prop_assert_eq!(z_s, z_j);
            } else if root >= z_j + 1e-12 * scale {
                prop_assert!((z_s - root).abs() <= 1e-13 * scale, "{z_s} against {root}");
            }
        }
    }
}
