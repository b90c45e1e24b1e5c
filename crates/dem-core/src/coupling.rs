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
use crate::domain::{Parcels, Processes};
use crate::law::{PairHistory, PairKey, Partner};
use crate::view::View;

/// The overlap corrections `e_p` of `pairs` (keys and view indices, `u32::MAX` for a wall; `ids`
/// the views' grains) from
/// their histories of the last step `olds` (module docs); all zero if no grain has a
/// flexibility.
///
/// Each process computes the parts of the grains it owns (the first `owned` views). A grain's
/// part needs the loads of all its pairs, and a pair is computed by its first grain's owner
/// (docs/mpi.md, "Newton on"): a process sends the loads of its pairs with a flexible ghost to
/// the ghost's owner (`processes`, [`Processes::to_owners`]), which returns the ghost's parts.
/// A grain's loads are taken in the order of their pairs' keys, and a pair's correction is
/// `0 - e_a - e_b`, its first grain's part first: the bits of a run in one process, whatever
/// the decomposition.
pub fn offsets(
    (views, ids, cell, owned): (&[View], &[u32], Option<&Cell>, usize),
    pairs: &[(PairKey, [u32; 2])],
    olds: &[Option<PairHistory>],
    mut processes: Option<&mut dyn Processes>,
) -> Vec<f64> {
    let mut offsets = vec![0.0; pairs.len()];
    // A grain whose modes are off is rigid: its flexibility (what the modes leave out) is not
    // its body's.
    let flexible = |v: &View| v.is_deformable() && v.shape.flexibility.is_some();
    let any = views.iter().any(flexible);
    // Every process decides alike: the exchanges below are collective.
    let any = match &processes {
        Some(p) => p.max(f64::from(u8::from(any))) > 0.0,
        None => any,
    };
    if !any {
        return offsets;
    }
    let shift = |key: &PairKey| match cell {
        Some(c) => c.vectors * Vector3::from(key.shift.map(f64::from)),
        None => Vector3::zeros(),
    };
    // The loads of this process's pairs on a flexible ghost, to its owner: the point, global,
    // and the force.
    let mut out = Parcels::default();
    for ((key, [a, b]), old) in pairs.iter().zip(olds) {
        let (Some(load), Partner::Body(j)) = (old.as_ref().and_then(|h| h.load()), key.b) else {
            continue;
        };
        if *b as usize >= owned && flexible(&views[*b as usize]) {
            let x = views[*a as usize].position + Vector3::from(load.point);
            out.push(j, *key, x.iter().copied().chain([load.force]));
        }
    }
    let theirs = match processes.as_mut() {
        Some(p) => p.to_owners(out),
        None => Parcels::default(),
    };
    // Each owned flexible grain's loads of the last step, in key order: this process's pairs
    // (index `i`) and those computed elsewhere (index `pairs.len() + k`, on their second grain).
    // A load at `x` (global) on side `side` of pair `i`, on view `v` seen across `shift`.
    let mut loads: Vec<Vec<Load>> = vec![Vec::new(); owned];
    let mut add =
        |(pair, side): (usize, usize), v: usize, (x, force): (Vector3<f64>, f64), shift| {
            let view = &views[v];
            if v < owned && flexible(view) {
                let local = view.rotation.transpose() * (x - view.position - shift);
                let load = Load {
                    pair,
                    side,
                    force,
                    local,
                };
                loads[v].push(load);
            }
        };
    let mut k = 0;
    let mut theirs_before = |until: Option<&PairKey>, add: &mut Add| {
        while k < theirs.len() && until.is_none_or(|key| theirs.keys[k] < *key) {
            let (grain, key, x) = theirs.get(k);
            let v = (ids[..owned].binary_search(&grain)).expect("a load goes to its grain's owner");
            let at = Vector3::new(x[0], x[1], x[2]);
            add((pairs.len() + k, 1), v, (at, x[3]), shift(&key));
            k += 1;
        }
    };
    for (i, ((key, [a, b]), old)) in pairs.iter().zip(olds).enumerate() {
        theirs_before(Some(key), &mut add);
        let Some(load) = old.as_ref().and_then(|h| h.load()) else {
            continue;
        };
        let x = views[*a as usize].position + Vector3::from(load.point);
        add((i, 0), *a as usize, (x, load.force), Vector3::zeros());
        if let Partner::Body(_) = key.b {
            add((i, 1), *b as usize, (x, load.force), shift(key));
        }
    }
    theirs_before(None, &mut add);
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
    // The parts of the pairs computed elsewhere, back to their first grains' owners.
    let mut back = Parcels::default();
    for (i, side, e) in parts.into_iter().flatten() {
        match i.checked_sub(pairs.len()) {
            None => sides[i][side] = Some(e),
            Some(k) => {
                let (_, key, _) = theirs.get(k);
                back.push(key.a, key, [e]);
            }
        }
    }
    if let Some(p) = processes {
        let back = p.to_owners(back);
        for k in 0..back.len() {
            let (_, key, e) = back.get(k);
            if let Ok(i) = pairs.binary_search_by_key(&key, |c| c.0) {
                sides[i][1] = Some(e[0]);
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

/// What adds a load to a grain's list in [`offsets`]: its pair and side, its view, its point
/// (global) and force, the pair's image shift.
type Add<'a> = dyn FnMut((usize, usize), usize, (Vector3<f64>, f64), Vector3<f64>) + 'a;

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
