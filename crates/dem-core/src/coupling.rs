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
use crate::domain::Processes;
use crate::law::{PairHistory, PairKey, Partner};
use crate::view::View;

/// The overlap corrections `e_p` of `pairs` (keys and view indices, `u32::MAX` for a wall) from
/// their histories of the last step `olds` (module docs); all zero if no grain has a
/// flexibility.
///
/// Each process computes the parts of the grains it owns (the first `owned` views), whose
/// pairs it holds all of; a pair with a ghost takes the ghost's part from the ghost's owner
/// (`processes`, [`Processes::to_owners`]). A pair's correction is `0 - e_a - e_b`, its first
/// grain's part first: the bits of a run in one process, whatever the decomposition.
pub fn offsets(
    (views, cell, owned): (&[View], Option<&Cell>, usize),
    pairs: &[(PairKey, [u32; 2])],
    olds: &[Option<PairHistory>],
    processes: Option<&mut dyn Processes>,
) -> Vec<f64> {
    let mut offsets = vec![0.0; pairs.len()];
    // A grain whose modes are off is rigid: its flexibility (what the modes leave out) is not
    // its body's.
    let flexible = |v: &View| v.is_deformable() && v.shape.flexibility.is_some();
    let any = views.iter().any(flexible);
    // Every process decides alike: the exchange below is collective.
    let any = match &processes {
        Some(p) => p.max(f64::from(u8::from(any))) > 0.0,
        None => any,
    };
    if !any {
        return offsets;
    }
    // Each owned flexible grain's loads of the last step.
    let mut loads: Vec<Vec<Load>> = vec![Vec::new(); owned];
    for (i, ((key, [a, b]), old)) in pairs.iter().zip(olds).enumerate() {
        let Some(load) = old.as_ref().and_then(|h| h.load()) else {
            continue;
        };
        let x = views[*a as usize].position + Vector3::from(load.point);
        let mut add = |side: usize, v: usize, shift: Vector3<f64>| {
            let view = &views[v];
            if v < owned && flexible(view) {
                let local = view.rotation.transpose() * (x - view.position - shift);
                loads[v].push(Load {
                    pair: i,
                    side,
                    force: load.force,
                    local,
                });
            }
        };
        add(0, *a as usize, Vector3::zeros());
        if let Partner::Body(_) = key.b {
            let shift = match cell {
                Some(c) => c.vectors * Vector3::from(key.shift.map(f64::from)),
                None => Vector3::zeros(),
            };
            add(1, *b as usize, shift);
        }
    }
    // Per grain (in parallel), each contact's weights once, then its part from the others'
    // loads and its own.
    let parts: Vec<Vec<(usize, usize, f64)>> = (loads.par_iter().enumerate())
        .map(|(v, list)| match &views[v].shape.flexibility {
            Some(g) if !list.is_empty() => {
                let weights: Vec<Weights> = list.iter().map(|l| g.weights(&l.local)).collect();
                // `G` is symmetric (the bundle's check, to 1e-12 of its scale): each pair of
                // contacts takes `G(x_p, x_q)` once and serves both, each sum still adding its
                // terms in the list's order. Two entries of one pair (a grain against its own
                // periodic image) do not load each other.
                let mut others = vec![0.0; list.len()];
                for (p, lp) in list.iter().enumerate() {
                    for (q, lq) in list.iter().enumerate().skip(p + 1) {
                        if lp.pair != lq.pair {
                            let between = g.between(&weights[p], &weights[q]);
                            others[p] += between * lq.force;
                            others[q] += between * lp.force;
                        }
                    }
                }
                (list.iter().zip(&weights).zip(others))
                    .map(|((l, wx), others)| (l.pair, l.side, others + g.own(wx) * l.force))
                    .collect()
            }
            _ => Vec::new(),
        })
        .collect();
    let mut sides: Vec<[Option<f64>; 2]> = vec![[None; 2]; pairs.len()];
    for (i, side, e) in parts.into_iter().flatten() {
        sides[i][side] = Some(e);
    }
    if let Some(p) = processes {
        // A pair with a ghost: this process's part to the ghost's owner, the ghost's from it.
        let ghost_side = |[a, b]: [u32; 2]| {
            if a as usize >= owned {
                Some(0)
            } else if b != u32::MAX && b as usize >= owned {
                Some(1)
            } else {
                None
            }
        };
        let mine = (pairs.iter().zip(&sides))
            .filter_map(|((key, ends), side)| {
                let ghost = ghost_side(*ends)?;
                let id = match (ghost, key.b) {
                    (0, _) => key.a,
                    (_, Partner::Body(j)) => j,
                    (_, Partner::Wall(_)) => return None,
                };
                Some((id, *key, side[1 - ghost]?))
            })
            .collect();
        for (key, e) in p.to_owners(mine) {
            if let Ok(i) = pairs.binary_search_by_key(&key, |c| c.0)
                && let Some(ghost) = ghost_side(pairs[i].1)
            {
                sides[i][ghost] = Some(e);
            }
        }
    }
    for (offset, side) in offsets.iter_mut().zip(sides) {
        for e in side.into_iter().flatten() {
            *offset -= e;
        }
    }
    offsets
}

/// A load on a flexible grain in the last step.
#[derive(Clone)]
struct Load {
    /// The pair's index.
    pair: usize,
    /// The grain's side of the pair: 0 for the key's first grain.
    side: usize,
    /// The normal force `F` (the law's elastic part).
    force: f64,
    /// The contact point in the grain's frame.
    local: Vector3<f64>,
}
