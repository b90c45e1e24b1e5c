//! The coupling of a grain's contacts through its body (docs/physics.md section 2, "Contacts
//! anywhere"): each contact's overlap is corrected by what the grain's residual flexibility
//! ([`crate::flexibility`]) makes of the loads of the last step.
//!
//! A contact `p` of a grain with flexibility `G`, at local point `x_p`, whose normal force was
//! `F_p` (the contact law's elastic part), has its overlap raised by
//!
//! `e_p = -( sum_{q != p} G(x_p, x_q) F_q + G_own(x_p) F_p )`
//!
//! (an inward displacement of the surface lowers the overlap), the sum over the grain's other
//! contacts `q` of the last step, and both grains' parts added for a grain pair. The modes carry
//! the rest of the body's response as dynamic degrees of freedom, and the contact law Hertz's
//! local flattening; `G` is the static remainder (the mode-acceleration method), lagged by one
//! step: a new contact has no correction in its first step.
//!
//! The correction stores the energy `-e_p F_p / 2` (the complementary energy
//! `F^T G F / 2` shared among the contacts); the contact laws add it to the pair's energy.

use nalgebra::Vector3;
use rayon::prelude::*;

use crate::cell::Cell;
use crate::cloud::Weights;
use crate::law::{PairHistory, PairKey, Partner};
use crate::view::View;

/// The overlap corrections `e_p` of `pairs` (keys and view indices, `u32::MAX` for a wall) from
/// their histories of the last step `olds` (module docs); all zero if no grain has a
/// flexibility.
pub fn offsets(
    views: &[View],
    cell: Option<&Cell>,
    pairs: &[(PairKey, [u32; 2])],
    olds: &[Option<PairHistory>],
) -> Vec<f64> {
    let mut offsets = vec![0.0; pairs.len()];
    // A grain whose modes are off is rigid: its flexibility (what the modes leave out) is not
    // its body's.
    let flexible = |v: &View| v.is_deformable() && v.shape.flexibility.is_some();
    if !views.iter().any(flexible) {
        return offsets;
    }
    // Each flexible grain's loads of the last step: the pair, the force, the local point.
    let mut loads: Vec<Vec<(usize, f64, Vector3<f64>)>> = vec![Vec::new(); views.len()];
    for (i, ((key, [a, b]), old)) in pairs.iter().zip(olds).enumerate() {
        let Some(load) = old.as_ref().and_then(|h| h.load()) else {
            continue;
        };
        let x = views[*a as usize].position + Vector3::from(load.point);
        let mut add = |v: usize, shift: Vector3<f64>| {
            let view = &views[v];
            if flexible(view) {
                let local = view.rotation.transpose() * (x - view.position - shift);
                loads[v].push((i, load.force, local));
            }
        };
        add(*a as usize, Vector3::zeros());
        if let Partner::Body(_) = key.b {
            let shift = match cell {
                Some(c) => c.vectors * Vector3::from(key.shift.map(f64::from)),
                None => Vector3::zeros(),
            };
            add(*b as usize, shift);
        }
    }
    // Per grain (in parallel), each contact's weights once, then its correction from the
    // others'; added in the grains' order, as a serial pass would, so that the sums do not
    // depend on the thread count.
    let parts: Vec<Vec<(usize, f64)>> = (loads.par_iter().enumerate())
        .map(|(v, list)| {
            let Some(g) = views[v]
                .shape
                .flexibility
                .as_ref()
                .filter(|_| flexible(&views[v]))
            else {
                return Vec::new();
            };
            let weights: Vec<Weights> = list.iter().map(|(_, _, x)| g.weights(x)).collect();
            // `G` is symmetric (the bundle's check, to 1e-12 of its scale): each pair of
            // contacts takes `G(x_p, x_q)` once and serves both, each sum still adding its terms
            // in the list's order. Two entries of one pair (a grain against its own periodic
            // image) do not load each other.
            let mut others = vec![0.0; list.len()];
            for (p, &(i, f_p, _)) in list.iter().enumerate() {
                for (q, &(j, f_q, _)) in list.iter().enumerate().skip(p + 1) {
                    if i != j {
                        let between = g.between(&weights[p], &weights[q]);
                        others[p] += between * f_q;
                        others[q] += between * f_p;
                    }
                }
            }
            (list.iter().zip(&weights).zip(others))
                .map(|((&(i, force, _), wx), others)| (i, others + g.own(wx) * force))
                .collect()
        })
        .collect();
    for (i, e) in parts.into_iter().flatten() {
        offsets[i] -= e;
    }
    offsets
}
