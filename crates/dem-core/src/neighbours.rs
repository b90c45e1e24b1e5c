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
//! Cost: the test and the filter are `O(N + listed pairs)` per step; a build is the cell-list
//! search, `O(N)` with a larger constant. A skin of zero builds at every step.

use nalgebra::{Matrix3, Vector3};

use crate::broad;
use crate::cell::{Cell, periodic_neighbours};

/// A grain partner: its index among the bodies and the image `n` of it that is met.
pub type Partner = (u32, [i32; 3]);

/// The kept list and the state it was built at; [`NeighbourList::update`] brings it to the
/// current step.
#[derive(Default)]
pub struct NeighbourList {
    /// Whether the list may be kept (false: build at the next update).
    valid: bool,
    /// The skin it was built with.
    skin: f64,
    /// How many bodies searched.
    searching: usize,
    /// Per body: centre and reach at the build.
    built: Vec<(Vector3<f64>, f64)>,
    /// The cell's vectors `H` at the build.
    vectors: Option<Matrix3<f64>>,
    /// The partners within the grown reaches at the build, body after body (`listed_start[i]..
    /// listed_start[i + 1]`).
    listed: Vec<Partner>,
    listed_start: Vec<usize>,
    /// The partners that overlap at the last update, in the same layout.
    current: Vec<Partner>,
    current_start: Vec<usize>,
    /// Builds since the list was made.
    builds: u64,
}

impl NeighbourList {
    /// The wraps `moved` (body index and `m`, the body moved by `X -> X - H m`; as
    /// [`crate::cell::wrap`] gives them in one process, where ids are indices): the list follows
    /// them as [`crate::cell::reshift`] does the histories (each listed image `n - m` where the
    /// body searches, `n + m` where it is the partner) and its build centres `X_0 - H_0 m`, so
    /// that it is kept: every pair's vector `X_j + H n - X_i`, now and at the build, is unchanged.
    pub fn wrapped(&mut self, moved: &[(u32, [i32; 3])]) {
        let Some(h0) = self.vectors.filter(|_| self.valid && !moved.is_empty()) else {
            return;
        };
        let mut by = vec![[0; 3]; self.built.len()];
        for &(b, m) in moved {
            let Some(x0) = self.built.get_mut(b as usize) else {
                self.valid = false;
                return;
            };
            x0.0 -= h0 * Vector3::from(m.map(f64::from));
            by[b as usize] = m;
        }
        for i in 0..self.built.len() {
            let listed = &mut self.listed[self.listed_start[i]..self.listed_start[i + 1]];
            let mut changed = false;
            for (j, n) in listed.iter_mut() {
                let (mi, mj) = (by[i], by[*j as usize]);
                if mi != [0; 3] || mj != [0; 3] {
                    *n = [0, 1, 2].map(|k| n[k] - mi[k] + mj[k]);
                    changed = true;
                }
            }
            if changed {
                listed.sort_unstable();
            }
        }
    }

    /// How many times the list was built.
    pub fn builds(&self) -> u64 {
        self.builds
    }

    /// The list at the bodies' `centres` and `radii` (reaches), the first `searching` of them
    /// searching (as [`broad::neighbours_of_first`]), with a skin `skin` (a length, `>= 0`):
    /// built again if the rebuild test (module docs) asks for it, then filtered. The result
    /// is read with [`NeighbourList::partners`].
    pub fn update(
        &mut self,
        centres: &[Vector3<f64>],
        radii: &[f64],
        searching: usize,
        cell: Option<&Cell>,
        skin: f64,
    ) {
        if !self.keeps(centres, radii, searching, cell, skin) {
            self.build(centres, radii, searching, cell, skin);
        }
        self.filter(centres, radii, cell);
    }

    /// Body `i`'s partners `j > i` whose reaches overlap at the last update, sorted (none for a
    /// body that does not search).
    pub fn partners(&self, i: usize) -> &[Partner] {
        &self.current[self.current_start[i]..self.current_start[i + 1]]
    }

    /// Whether the list built before holds every pair that overlaps now.
    fn keeps(
        &self,
        centres: &[Vector3<f64>],
        radii: &[f64],
        searching: usize,
        cell: Option<&Cell>,
        skin: f64,
    ) -> bool {
        if !self.valid
            || skin <= 0.0
            || skin != self.skin
            || searching != self.searching
            || centres.len() != self.built.len()
            || cell.map(|c| c.vectors).is_some() != self.vectors.is_some()
        {
            return false;
        }
        let travel = (centres.iter().zip(radii).zip(&self.built))
            .map(|((x, &r), (x0, r0))| (x - x0).norm() + (r - r0).max(0.0))
            .fold(0.0, f64::max);
        let strain = match (cell, &self.vectors) {
            (Some(c), Some(h0)) => (c.vectors - h0).column_iter().map(|e| e.norm()).sum(),
            _ => 0.0,
        };
        // NaN positions fail the test and rebuild (the run then stops on them).
        2.0 * travel + strain < skin
    }

    fn build(
        &mut self,
        centres: &[Vector3<f64>],
        radii: &[f64],
        searching: usize,
        cell: Option<&Cell>,
        skin: f64,
    ) {
        let grown: Vec<f64> = radii.iter().map(|r| r + 0.5 * skin).collect();
        let found: Vec<Vec<Partner>> = match cell {
            None => broad::neighbours_of_first(centres, &grown, searching)
                .into_iter()
                .map(|js| js.into_iter().map(|j| (j, [0; 3])).collect())
                .collect(),
            Some(cell) => periodic_neighbours(cell, centres, &grown, searching),
        };
        self.listed_start = std::iter::once(0)
            .chain(found.iter().scan(0, |n, p| {
                *n += p.len();
                Some(*n)
            }))
            .collect();
        self.listed = found.into_iter().flatten().collect();
        self.built = centres.iter().copied().zip(radii.iter().copied()).collect();
        self.vectors = cell.map(|c| c.vectors);
        (self.valid, self.skin, self.searching) = (true, skin, searching);
        self.builds += 1;
    }

    /// The listed pairs whose reaches overlap now: the cell list's test
    /// (`|X_j - X_i|^2 < (r_j + r_i)^2`, the same operations), at the image `n`.
    fn filter(&mut self, centres: &[Vector3<f64>], radii: &[f64], cell: Option<&Cell>) {
        self.current.clear();
        self.current_start.clear();
        self.current_start.push(0);
        for i in 0..centres.len() {
            let listed = &self.listed[self.listed_start[i]..self.listed_start[i + 1]];
            self.current.extend(listed.iter().filter(|&&(j, n)| {
                let mut y = centres[j as usize];
                if n != [0; 3] {
                    y += cell.expect("image shifts come from a cell").shift(n);
                }
                (y - centres[i]).norm_squared() < (radii[j as usize] + radii[i]).powi(2)
            }));
            self.current_start.push(self.current.len());
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
            list.update(&x, &r, x.len(), Some(&cell), 0.4);
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

    /// Bodies on a jittered lattice, moving in small random steps: at every step, whatever the
    /// skin, the list gives exactly the pairs of a fresh cell-list search (the reference), and a
    /// skin keeps the list over many steps.
    #[test]
    fn a_kept_list_gives_the_fresh_search_pairs_at_every_step() {
        let (centres, radii) = lattice();
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
                list.update(&x, &r, x.len(), None, skin);
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
