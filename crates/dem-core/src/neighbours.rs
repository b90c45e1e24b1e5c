//! Neighbour lists with a skin (Verlet 1967; the `neighbor` skin of LAMMPS, the `verletDist`
//! of YADE): the broad phase's search ([`broad::neighbours_of_first`], or
//! [`periodic_neighbours`] in a periodic cell) made on reaches grown by half a skin `s`, and
//! kept over the steps until a grain has moved, or its reach has grown, by half the skin. Each
//! step filters the kept list by the exact test `|X_j + H n - X_i| < r_i + r_j`, so the pairs
//! are those a fresh search would find: the skin changes the cost of a step, not its result
//! (docs/performance.md, "The neighbour list").
//!
//! Why a kept list is complete. A pair `(i, j, n)` not listed was at least `r_i0 + r_j0 + s`
//! apart at the build. Since then the centres have moved by `d_i` and `d_j`, the reaches (a
//! deformable grain's follows its amplitudes) have grown by `g_i` and `g_j`, and the cell's
//! vectors have changed by `dH`, which moves an image `n` (`|n_k| <= 1` for centres wrapped in a
//! cell wider than two reaches) by at most `sum_k |dH e_k|`. The pair overlaps now only if
//! `d_i + g_i + d_j + g_j + sum_k |dH e_k| >= s`, which the rebuild test
//! `2 max_i (d_i + g_i) + sum_k |dH e_k| >= s` catches a step before.
//!
//! In a run decomposed over processes, each keeps the list of its own grains, in global ids
//! (its ghosts are renumbered at every exchange), and the processes search together, when the
//! test fails in any of them. Each grain's travel is measured by its owner, and the ghosts are
//! sent for reaches grown by half the skin, so that a process's search holds every partner its
//! grains may meet before the next. A grain that migrates takes its share of the list with it
//! ([`NeighbourList::hand_over`], [`NeighbourList::take_over`]): its centre and reach at the
//! search and its listed pairs, so that each process keeps what the last search would have
//! listed for the grains it owns now. Before, every migration made every process search again:
//! 37 searches in 1,000 steps of the MPI bench's scene on 2 processes instead of 5, and half its
//! broad phase (docs/mpi.md, "Scaling").
//!
//! Cost: the test and the filter are `O(N + listed pairs)` per step, and a decomposed run adds
//! one collective maximum; a build is the cell-list search, `O(N)` with a larger constant. A skin
//! of zero builds at every step.

use std::collections::HashMap;

use nalgebra::{Matrix3, Vector3};

use crate::broad;
use crate::cell::{Cell, Wrapped, periodic_neighbours, reshifted, wrap_of};

/// A grain partner: its index among the bodies held and the image `n` of it that is met.
pub type Partner = (u32, [i32; 3]);

/// A grain's share of a kept list, which goes with it to another process
/// ([`NeighbourList::hand_over`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Share {
    /// Its centre at the build (moved with its wraps since).
    pub centre: Vector3<f64>,
    /// Its reach at the build.
    pub reach: f64,
    /// Every partner of a pair listed with it, by global id, with the image of the partner
    /// that is met from it; sorted.
    pub partners: Vec<Partner>,
}

/// The bodies a list is kept for: those a process holds, the first `searching` its own.
pub struct Bodies<'a> {
    /// Centres.
    pub centres: &'a [Vector3<f64>],
    /// Reaches.
    pub radii: &'a [f64],
    /// Global ids.
    pub ids: &'a [u32],
    /// How many search (the owned grains, first).
    pub searching: usize,
}

/// The kept list and the state it was built at; [`NeighbourList::update`] brings it to the
/// current step.
#[derive(Default)]
pub struct NeighbourList {
    /// Whether the list may be kept (false: build at the next update).
    valid: bool,
    /// The skin it was built with.
    skin: f64,
    /// The ids of the bodies that searched, in their order then.
    searchers: Vec<u32>,
    /// Per searcher: centre and reach at the build.
    built: Vec<Built>,
    /// The cell's vectors `H` at the build.
    vectors: Option<Matrix3<f64>>,
    /// Each searcher's partners within the grown reaches at the build, by global id, sorted,
    /// searcher after searcher (`listed_start[k]..listed_start[k + 1]`).
    listed: Vec<Partner>,
    listed_start: Vec<usize>,
    /// The partners that overlap at the last update, by index among the bodies held, in the
    /// same layout.
    current: Vec<Partner>,
    current_start: Vec<usize>,
    /// By global id: the index among the bodies held during an update (`NONE` otherwise).
    slots: Vec<u32>,
    /// Builds since the list was made.
    builds: u64,
}

const NONE: u32 = u32::MAX;

/// A searcher's centre and reach at the build.
type Built = (Vector3<f64>, f64);

impl NeighbourList {
    /// The wraps `moved` (global id and `m`, the body moved by `X -> X - H m`, sorted by id, as
    /// [`crate::cell::wrap`] gives them): the list follows them as [`crate::cell::reshift`] does
    /// the histories (each listed image `n - m` where the body searches, `n + m` where it is the
    /// partner) and its build centres `X_0 - H_0 m`, so that it is kept: every pair's vector
    /// `X_j + H n - X_i`, now and at the build, is unchanged.
    pub fn wrapped(&mut self, moved: &[Wrapped]) {
        let Some(h0) = self.vectors.filter(|_| self.valid && !moved.is_empty()) else {
            return;
        };
        for (k, &id) in self.searchers.iter().enumerate() {
            let mi = wrap_of(moved, id);
            if mi != [0; 3] {
                self.built[k].0 -= h0 * Vector3::from(mi.map(f64::from));
            }
            let listed = &mut self.listed[self.listed_start[k]..self.listed_start[k + 1]];
            let mut changed = false;
            for (j, n) in listed.iter_mut() {
                let mj = wrap_of(moved, *j);
                if mi != [0; 3] || mj != [0; 3] {
                    *n = reshifted(*n, mi, mj);
                    changed = true;
                }
            }
            if changed {
                listed.sort_unstable();
            }
        }
    }

    /// The grains `leaving` (global ids, each a searcher here) leave this process's list, which
    /// keeps every pair of its remaining grains: a pair listed under a leaver whose other grain
    /// stays is listed under that one instead. Each leaver's share goes with it, for
    /// [`NeighbourList::take_over`] in the process it migrates to: its centre and reach at the
    /// build, and every partner of a pair listed with it (under it or under another searcher).
    /// `None` for every leaver when the list is to be built at the next update anyway.
    ///
    /// Cost: `O(listed pairs)`, at a step with migrants only.
    pub fn hand_over(&mut self, leaving: &[u32]) -> Vec<Option<Share>> {
        if !self.valid || leaving.is_empty() {
            return vec![None; leaving.len()];
        }
        let mut lists = self.lists();
        let index: HashMap<u32, usize> = (self.searchers.iter().enumerate())
            .map(|(k, &id)| (id, k))
            .collect();
        let mut shares: HashMap<u32, Vec<Partner>> = leaving
            .iter()
            .map(|id| (*id, lists[index[id]].clone()))
            .collect();
        // The pairs listed under other searchers, seen from the leaver: the image reversed.
        for (k, list) in lists.iter().enumerate() {
            for &(j, n) in list {
                if let Some(share) = shares.get_mut(&j) {
                    share.push((self.searchers[k], n.map(|v| -v)));
                }
            }
        }
        // A pair under a leaver whose other grain stays goes under that grain.
        for id in leaving {
            for (j, n) in std::mem::take(&mut lists[index[id]]) {
                if let Some(&k) = index.get(&j).filter(|_| !shares.contains_key(&j)) {
                    let back = (*id, n.map(|v| -v));
                    let at = lists[k].partition_point(|p| *p < back);
                    lists[k].insert(at, back);
                }
            }
        }
        let out = leaving
            .iter()
            .map(|id| {
                let mut partners = shares.remove(id).expect("a leaver's share");
                partners.sort_unstable();
                let (centre, reach) = self.built[index[id]];
                Some(Share {
                    centre,
                    reach,
                    partners,
                })
            })
            .collect();
        let mut stay = vec![true; self.searchers.len()];
        for id in leaving {
            stay[index[id]] = false;
        }
        let mut k = 0..;
        self.searchers
            .retain(|_| stay[k.next().expect("a searcher")]);
        let mut k = 0..;
        self.built.retain(|_| stay[k.next().expect("a searcher")]);
        let lists: Vec<Vec<Partner>> = (lists.into_iter().zip(&stay))
            .filter_map(|(l, &s)| s.then_some(l))
            .collect();
        self.set_lists(lists);
        out
    }

    /// The grains `arriving` (global ids, with the shares [`NeighbourList::hand_over`] gave)
    /// join this process's list, whose searchers become `owned` (this process's grains, in
    /// their order): each pair of an arrival is listed once, under the arrival unless it is
    /// listed already under its other grain. The list is then what a build at the last one
    /// would have listed for these grains (every pair within the grown reaches then), and is
    /// kept by the same test. An arrival without a share, or grains `owned` that are neither
    /// searchers nor arrivals, make the next update build it.
    pub fn take_over(&mut self, owned: &[u32], mut arriving: Vec<(u32, Option<Share>)>) {
        if !self.valid || (arriving.is_empty() && owned == self.searchers) {
            return;
        }
        arriving.sort_unstable_by_key(|(id, _)| *id);
        // Per searcher: its partners, its centre and reach at the build.
        let mut lists: HashMap<u32, (Vec<Partner>, Built)> = (self.searchers.iter().copied())
            .zip(self.lists().into_iter().zip(self.built.iter().copied()))
            .collect();
        for (id, share) in arriving {
            let Some(share) = share else {
                self.valid = false;
                return;
            };
            let partners = (share.partners.into_iter())
                .filter(|&(j, n)| {
                    let seen = (id, n.map(|v| -v));
                    lists
                        .get(&j)
                        .is_none_or(|(list, _)| list.binary_search(&seen).is_err())
                })
                .collect();
            lists.insert(id, (partners, (share.centre, share.reach)));
        }
        let mut ordered = Vec::with_capacity(owned.len());
        let mut built = Vec::with_capacity(owned.len());
        for id in owned {
            let Some((list, b)) = lists.remove(id) else {
                self.valid = false;
                return;
            };
            ordered.push(list);
            built.push(b);
        }
        self.searchers = owned.to_vec();
        self.built = built;
        self.set_lists(ordered);
    }

    /// The listed partners, searcher by searcher.
    fn lists(&self) -> Vec<Vec<Partner>> {
        (self.listed_start.windows(2))
            .map(|w| self.listed[w[0]..w[1]].to_vec())
            .collect()
    }

    /// The listed partners from `lists`, searcher by searcher.
    fn set_lists(&mut self, lists: Vec<Vec<Partner>>) {
        self.listed_start = std::iter::once(0)
            .chain(lists.iter().scan(0, |n, p| {
                *n += p.len();
                Some(*n)
            }))
            .collect();
        self.listed = lists.into_iter().flatten().collect();
    }

    /// How many times the list was built.
    pub fn builds(&self) -> u64 {
        self.builds
    }

    /// The list at the `bodies`' state, with a skin `skin` (a length, `>= 0`): built again if
    /// the rebuild test (module docs) asks for it here or, by `anywhere` (whether a flag holds
    /// in any process, called once), in another process, then filtered. The result is read
    /// with [`NeighbourList::partners`].
    pub fn update(
        &mut self,
        bodies: &Bodies,
        cell: Option<&Cell>,
        skin: f64,
        anywhere: &dyn Fn(bool) -> bool,
    ) {
        if anywhere(!self.keeps(bodies, cell, skin)) {
            self.build(bodies, cell, skin);
        }
        self.filter(bodies, cell);
    }

    /// How many partners the last update kept, over all bodies.
    pub fn partner_count(&self) -> usize {
        self.current.len()
    }

    /// Body `i`'s partners whose reaches overlap at the last update, sorted by global id (none
    /// for a body that does not search).
    pub fn partners(&self, i: usize) -> &[Partner] {
        match self.current_start.get(i + 1) {
            Some(&end) => &self.current[self.current_start[i]..end],
            None => &[],
        }
    }

    /// Whether the list built before holds every pair of this process's grains that overlaps
    /// now (the other processes' grains: their own test).
    fn keeps(&self, bodies: &Bodies, cell: Option<&Cell>, skin: f64) -> bool {
        let own = ..bodies.searching;
        if !self.valid
            || skin <= 0.0
            || skin != self.skin
            || bodies.ids[own] != self.searchers[..]
            || cell.map(|c| c.vectors).is_some() != self.vectors.is_some()
        {
            return false;
        }
        let travel = (bodies.centres[own].iter().zip(&bodies.radii[own]))
            .zip(&self.built)
            .map(|((x, &r), (x0, r0))| (x - x0).norm() + (r - r0).max(0.0))
            .fold(0.0, f64::max);
        let strain = match (cell, &self.vectors) {
            (Some(c), Some(h0)) => (c.vectors - h0).column_iter().map(|e| e.norm()).sum(),
            _ => 0.0,
        };
        // NaN positions fail the test and rebuild (the run then stops on them).
        2.0 * travel + strain < skin
    }

    fn build(&mut self, bodies: &Bodies, cell: Option<&Cell>, skin: f64) {
        let Bodies {
            centres,
            radii,
            ids,
            searching,
        } = *bodies;
        let grown: Vec<f64> = radii.iter().map(|r| r + 0.5 * skin).collect();
        let mut found: Vec<Vec<Partner>> = match cell {
            None => broad::neighbours_of_first(centres, &grown, searching)
                .into_iter()
                .map(|js| js.into_iter().map(|j| (j, [0; 3])).collect())
                .collect(),
            Some(cell) => periodic_neighbours(cell, centres, &grown, searching),
        };
        found.truncate(searching);
        for partners in &mut found {
            for p in partners.iter_mut() {
                p.0 = ids[p.0 as usize];
            }
            partners.sort_unstable();
        }
        self.set_lists(found);
        self.searchers = ids[..searching].to_vec();
        self.built = (centres[..searching].iter().copied())
            .zip(radii[..searching].iter().copied())
            .collect();
        self.vectors = cell.map(|c| c.vectors);
        (self.valid, self.skin) = (true, skin);
        self.builds += 1;
    }

    /// The listed pairs whose reaches overlap now: the cell list's test
    /// (`|X_j - X_i|^2 < (r_j + r_i)^2`, the same operations), at the image `n`. A listed
    /// partner no longer held here is out of reach of this process's grains (it left the
    /// ghosts' halo).
    fn filter(&mut self, bodies: &Bodies, cell: Option<&Cell>) {
        let (centres, radii, ids) = (bodies.centres, bodies.radii, bodies.ids);
        let most = ids.iter().copied().max().map_or(0, |m| m as usize + 1);
        if self.slots.len() < most {
            self.slots.resize(most, NONE);
        }
        for (i, &id) in ids.iter().enumerate() {
            self.slots[id as usize] = i as u32;
        }
        self.current.clear();
        self.current_start.clear();
        self.current_start.push(0);
        for i in 0..bodies.searching {
            let listed = &self.listed[self.listed_start[i]..self.listed_start[i + 1]];
            self.current.extend(listed.iter().filter_map(|&(id, n)| {
                let j = self.slots.get(id as usize).copied().unwrap_or(NONE);
                if j == NONE {
                    return None;
                }
                let mut y = centres[j as usize];
                if n != [0; 3] {
                    y += cell.expect("image shifts come from a cell").shift(n);
                }
                ((y - centres[i]).norm_squared() < (radii[j as usize] + radii[i]).powi(2))
                    .then_some((j, n))
            }));
            self.current_start.push(self.current.len());
        }
        for &id in ids {
            self.slots[id as usize] = NONE;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A jittered lattice with mixed radii, its corner at the origin.
    fn lattice() -> (Vec<Vector3<f64>>, Vec<f64>) {
        let (mut centres, mut radii) = (Vec::new(), Vec::new());
        for i in 0..6 {
            for j in 0..5 {
                for k in 0..5 {
                    let s = (i * 31 + j * 17 + k * 7) as f64;
                    centres.push(Vector3::new(
                        i as f64 * 1.9 + 0.3 * s.sin() + 0.5,
                        j as f64 * 2.1 + 0.3 * (1.7 * s).cos() + 0.5,
                        k as f64 * 2.0 + 0.2 * (0.3 * s).sin() + 0.5,
                    ));
                    radii.push(0.8 + 0.3 * (0.9 * s).cos().abs());
                }
            }
        }
        (centres, radii)
    }

    /// Every body held and searching, its id its index.
    fn one_process<'a>(x: &'a [Vector3<f64>], r: &'a [f64], ids: &'a [u32]) -> Bodies<'a> {
        Bodies {
            centres: x,
            radii: r,
            ids,
            searching: x.len(),
        }
    }

    /// The step-th small random move of body `b`.
    fn jitter(step: usize, b: usize) -> (Vector3<f64>, f64) {
        let t = (step * 150 + b) as f64;
        let dx = Vector3::new((1.3 * t).sin(), (2.9 * t).cos(), (0.7 * t).sin()) * 0.01;
        (dx, 1.0 + 0.002 * (0.37 * t).sin())
    }

    /// The same lattice in a periodic cell sheared at every step, bodies wrapped back into it
    /// (and the list told, as the step does): at every step, the pairs and images of a fresh
    /// search ([`periodic_neighbours`], the reference), with far fewer builds.
    #[test]
    fn a_kept_list_follows_a_sheared_periodic_cell() {
        let (mut x, mut r) = lattice();
        let ids: Vec<u32> = (0..x.len() as u32).collect();
        let mut cell = crate::cell::CellSpec {
            origin: [0.0; 3],
            size: Some([11.4, 10.5, 10.0]),
            vectors: None,
            periodic: [true, true, false],
            velocity_gradient: None,
            servo: None,
        }
        .cell();
        let mut list = NeighbourList::default();
        let (mut images, mut wraps) = (0, 0);
        for step in 0..200 {
            cell.vectors[(0, 1)] += 0.004;
            let mut moved = Vec::new();
            for (b, (x, r)) in x.iter_mut().zip(&mut r).enumerate() {
                let (dx, growth) = jitter(step, b);
                *x += dx * 3.0;
                *r *= growth;
                let m = cell.wrap(x);
                if m != [0; 3] {
                    *x -= cell.shift(m);
                    moved.push((b as u32, m));
                }
            }
            wraps += moved.len();
            list.wrapped(&moved);
            list.update(&one_process(&x, &r, &ids), Some(&cell), 0.4, &|f| f);
            let fresh = periodic_neighbours(&cell, &x, &r, x.len());
            for (i, partners) in fresh.iter().enumerate() {
                assert_eq!(list.partners(i), partners, "step {step}, body {i}");
                images += partners.iter().filter(|p| p.1 != [0; 3]).count();
            }
        }
        assert!(
            images > 1000 && wraps > 20,
            "{images} images, {wraps} wraps"
        );
        // Moves of at most 0.03 sqrt(3), reaches growing by 0.0022, the shear 0.004 a step:
        // kept at least 3 steps after a build, wraps or not.
        assert!(list.builds() <= 67, "{} builds", list.builds());
    }

    /// A process's view of the lattice: it owns the bodies of id below 60, held first and in
    /// id order, and holds the others as ghosts in an order that changes at every step (as an
    /// exchange renumbers them); a third of the ghosts are not held at some steps (out of the
    /// halo). At every step, by global ids, the pairs of a fresh search of what is held (the
    /// reference), with far fewer builds.
    #[test]
    fn a_kept_list_follows_renumbered_ghosts() {
        let (mut x, mut r) = lattice();
        let owned = 60;
        let mut list = NeighbourList::default();
        let mut total = 0;
        for step in 0..200 {
            for (b, (x, r)) in x.iter_mut().zip(&mut r).enumerate() {
                let (dx, growth) = jitter(step, b);
                *x += dx;
                *r *= growth;
            }
            let mut ghosts: Vec<u32> = (owned..x.len() as u32)
                .filter(|&g| !(g as usize + step).is_multiple_of(3) || step.is_multiple_of(2))
                .collect();
            let k = step * 7 % ghosts.len();
            ghosts.rotate_left(k);
            let ids: Vec<u32> = (0..owned).chain(ghosts).collect();
            let held: Vec<Vector3<f64>> = ids.iter().map(|&i| x[i as usize]).collect();
            let reach: Vec<f64> = ids.iter().map(|&i| r[i as usize]).collect();
            let bodies = Bodies {
                centres: &held,
                radii: &reach,
                ids: &ids,
                searching: owned as usize,
            };
            list.update(&bodies, None, 0.3, &|f| f);
            let fresh = broad::neighbours_of_first(&held, &reach, owned as usize);
            for (i, js) in fresh.iter().enumerate() {
                let mut want: Vec<u32> = js.iter().map(|&j| ids[j as usize]).collect();
                want.sort_unstable();
                let kept: Vec<u32> = list.partners(i).iter().map(|p| ids[p.0 as usize]).collect();
                assert_eq!(kept, want, "step {step}, body {i}");
                total += want.len();
            }
        }
        assert!(total > 5_000, "{total}");
        assert!(list.builds() <= 40, "{} builds", list.builds());
    }

    /// Two processes, each holding every body, own the bodies on either side of a cut that
    /// sweeps across the lattice, so that bodies migrate at most steps; each process's list
    /// hands its leavers' shares over to the other ([`NeighbourList::hand_over`],
    /// [`NeighbourList::take_over`]). At every step each process's pairs (those touching a body
    /// it owns, by global ids, each once) are a fresh search's (the reference), and migrations
    /// do not make the lists build again.
    #[test]
    fn kept_lists_follow_their_grains_across_processes() {
        let (mut x, mut r) = lattice();
        let n = x.len() as u32;
        let mut lists = [NeighbourList::default(), NeighbourList::default()];
        let side = |x: &Vector3<f64>, step: usize| {
            usize::from(x.x > 4.0 + 3.0 * (0.02 * step as f64).sin())
        };
        let mut owned: [Vec<u32>; 2] =
            [0, 1].map(|p| (0..n).filter(|&b| side(&x[b as usize], 0) == p).collect());
        let (mut migrants, mut total) = (0, 0);
        for step in 0..200 {
            for (b, (x, r)) in x.iter_mut().zip(&mut r).enumerate() {
                let (dx, growth) = jitter(step, b);
                *x += dx;
                *r *= growth;
            }
            let now: [Vec<u32>; 2] = [0, 1].map(|p| {
                (0..n)
                    .filter(|&b| side(&x[b as usize], step) == p)
                    .collect()
            });
            let leaving: [Vec<u32>; 2] = [0, 1].map(|p| {
                (owned[p].iter().copied())
                    .filter(|b| !now[p].contains(b))
                    .collect()
            });
            migrants += leaving[0].len() + leaving[1].len();
            let shares = [0, 1].map(|p| lists[p].hand_over(&leaving[p]));
            for (p, shares) in shares.into_iter().enumerate() {
                let arriving = leaving[p].iter().copied().zip(shares).collect();
                lists[1 - p].take_over(&now[1 - p], arriving);
            }
            owned = now;
            let held = [0, 1].map(|p| {
                let ids: Vec<u32> = (owned[p].iter().copied())
                    .chain(owned[1 - p].iter().copied())
                    .collect();
                let centres: Vec<Vector3<f64>> = ids.iter().map(|&i| x[i as usize]).collect();
                let reach: Vec<f64> = ids.iter().map(|&i| r[i as usize]).collect();
                (ids, centres, reach)
            });
            let bodies = |p: usize| Bodies {
                centres: &held[p].1,
                radii: &held[p].2,
                ids: &held[p].0,
                searching: owned[p].len(),
            };
            // The processes search together (the collective `anywhere`).
            let build = (0..2).any(|p| !lists[p].keeps(&bodies(p), None, 0.3));
            for p in 0..2 {
                lists[p].update(&bodies(p), None, 0.3, &|_| build);
                let ids = &held[p].0;
                let pairs = |partners: &dyn Fn(usize) -> Vec<u32>| {
                    let mut all: Vec<(u32, u32)> = (0..owned[p].len())
                        .flat_map(|i| {
                            partners(i)
                                .into_iter()
                                .map(move |j| (ids[i], ids[j as usize]))
                        })
                        .map(|(a, b)| (a.min(b), a.max(b)))
                        .collect();
                    all.sort_unstable();
                    all
                };
                let fresh = broad::neighbours_of_first(&held[p].1, &held[p].2, owned[p].len());
                let kept = pairs(&|i| lists[p].partners(i).iter().map(|q| q.0).collect());
                let want = pairs(&|i| fresh[i].clone());
                assert_eq!(kept, want, "step {step}, process {p}");
                total += want.len();
            }
        }
        assert!(
            migrants > 20 && total > 10_000,
            "{migrants} migrants, {total} pairs"
        );
        for list in &lists {
            assert!(list.builds() <= 40, "{} builds", list.builds());
        }
    }

    /// Bodies on a jittered lattice, moving in small random steps: at every step, whatever the
    /// skin, the list gives exactly the pairs of a fresh cell-list search (the reference), and a
    /// skin keeps the list over many steps.
    #[test]
    fn a_kept_list_gives_the_fresh_search_pairs_at_every_step() {
        let (centres, radii) = lattice();
        let ids: Vec<u32> = (0..centres.len() as u32).collect();
        for skin in [0.0, 0.1, 0.3] {
            let mut list = NeighbourList::default();
            let mut x = centres.clone();
            let mut r = radii.clone();
            let mut total = 0;
            for step in 0..200 {
                for (b, (x, r)) in x.iter_mut().zip(&mut r).enumerate() {
                    let (dx, growth) = jitter(step, b);
                    *x += dx;
                    *r *= growth;
                }
                list.update(&one_process(&x, &r, &ids), None, skin, &|f| f);
                let fresh = broad::neighbours(&x, &r);
                for (i, js) in fresh.iter().enumerate() {
                    let kept: Vec<u32> = list.partners(i).iter().map(|p| p.0).collect();
                    assert_eq!(&kept, js, "skin {skin}, step {step}, body {i}");
                    total += js.len();
                }
            }
            assert!(total > 20_000, "{total}");
            // A body moves at most 0.01 sqrt(3) and its reach grows at most 0.002 x 1.1 in a
            // step: the list is kept at least m steps after a build while 2 m (that) < skin.
            let most = 0.01 * 3f64.sqrt() + 0.0022;
            let kept = ((skin / (2.0 * most)).ceil() as u64).max(1);
            let builds = list.builds();
            assert!(
                builds <= 200u64.div_ceil(kept),
                "skin {skin}: {builds} builds"
            );
            assert_eq!(
                builds == 200,
                skin < 2.0 * most,
                "skin {skin}: {builds} builds"
            );
        }
    }
}
