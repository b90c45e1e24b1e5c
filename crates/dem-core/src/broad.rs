//! Broad phase: the grain pairs whose bounding spheres overlap, in O(N) with a cell list; all
//! pairs of a step at once ([`neighbours`]), or one grain at a time against those placed before
//! ([`CellList`]).
//!
//! Cells are cubes of edge at least `2 r_max` (the largest bounding radius), so overlapping
//! spheres have centres in the same or adjacent cells: one [`CellList`] over the box of the
//! centres, each body looking in the 27 cells around its own, bodies in parallel (rayon). Each
//! body's neighbours come out sorted, whatever the thread count: the narrow phase and the
//! force reduction follow this order.

use nalgebra::Vector3;
use rayon::prelude::*;

/// For each body `i`, the bodies `j > i` with `|X_i - X_j| < r_i + r_j`, sorted.
pub fn neighbours(centres: &[Vector3<f64>], radii: &[f64]) -> Vec<Vec<u32>> {
    neighbours_of_first(centres, radii, centres.len())
}

/// [`neighbours`] of the first `searching` bodies only (the others' lists are empty): a
/// periodic cell's grains among their ghosts, whose pairs among themselves repeat the grains'.
pub fn neighbours_of_first(
    centres: &[Vector3<f64>],
    radii: &[f64],
    searching: usize,
) -> Vec<Vec<u32>> {
    let n = centres.len();
    let r_max = radii.iter().copied().fold(0.0, f64::max);
    if n < 2 || r_max <= 0.0 {
        return vec![Vec::new(); n];
    }
    let (lo, hi) = bounding_box(centres);
    let mut list = CellList::new(lo, hi, 2.0 * r_max, n);
    for (x, &r) in centres.iter().zip(radii) {
        list.insert(x, r);
    }
    (0..n)
        .into_par_iter()
        .map(|i| {
            if i >= searching {
                return Vec::new();
            }
            let mut found: Vec<u32> = (list.near(&centres[i], radii[i]))
                .filter(|&j| j > i)
                .map(|j| j as u32)
                .collect();
            found.sort_unstable();
            found
        })
        .collect()
}

/// The smallest box `lo..hi` holding `points` (empty: `lo` all `+inf`, `hi` all `-inf`).
pub fn bounding_box(points: &[Vector3<f64>]) -> (Vector3<f64>, Vector3<f64>) {
    let lo = (points.iter()).fold(Vector3::repeat(f64::INFINITY), |a, x| a.inf(x));
    let hi = (points.iter()).fold(Vector3::repeat(f64::NEG_INFINITY), |a, x| a.sup(x));
    (lo, hi)
}

/// The incremental form: a cell list (the linked cells of molecular dynamics) that bodies join
/// one at a time, each queried before it joins (the packing generator, dem-run's `packing`). Bodies
/// are binned by their centres in cubes of side `cell` (at least the largest sum of two
/// bounding radii) over a box, centres outside it binned in its nearest cell, so that the bodies that may
/// touch a grain are in the (up to) 27 cells about its own. Each entry keeps the body's centre
/// and bounding radius, so that the bounding-sphere filter reads the list alone. A dense list,
/// not a hash map: at 10^5 grains the map's scattered buckets made each grain cost twice as much
/// as at 10^4.
pub struct CellList {
    origin: Vector3<f64>,
    cell: f64,
    dims: [usize; 3],
    /// The last body binned in each cell (`NONE`: none).
    head: Vec<u32>,
    /// Per body: the body binned before it in its cell.
    next: Vec<u32>,
    /// Per body: centre and bounding radius.
    spheres: Vec<(Vector3<f64>, f64)>,
}

const NONE: u32 = u32::MAX;

impl CellList {
    /// Cells of at least `cell` over the box `lo..hi`, no more than `4 * bodies + 64` of them.
    pub fn new(lo: Vector3<f64>, hi: Vector3<f64>, cell: f64, bodies: usize) -> CellList {
        let extent = hi - lo;
        let limit = 4.0 * bodies as f64 + 64.0;
        let mut cell = cell.max((extent.iter().product::<f64>() / limit).cbrt());
        let count = |cell: f64| [0, 1, 2].map(|d| (extent[d] / cell).ceil().max(1.0));
        // A flat or far-flung box (centres found by fuzzing at 1e300 apart along one axis) has
        // too many cells along its long axes for its volume: larger cells, until they fit.
        // Centres beyond the cells are binned at the box's faces, which costs tests, never
        // misses a pair.
        while count(cell).iter().product::<f64>() > limit {
            let over = count(cell).iter().product::<f64>() / limit;
            cell *= over.cbrt().max(1.25);
        }
        let dims = count(cell).map(|n| n as usize);
        CellList {
            origin: lo,
            cell,
            dims,
            head: vec![NONE; dims.iter().product()],
            next: Vec::with_capacity(bodies),
            spheres: Vec::with_capacity(bodies),
        }
    }

    fn cell_of(&self, x: &Vector3<f64>) -> [usize; 3] {
        [0, 1, 2].map(|d| {
            let k = ((x[d] - self.origin[d]) / self.cell).floor();
            k.clamp(0.0, (self.dims[d] - 1) as f64) as usize
        })
    }

    fn linear(&self, [i, j, k]: [usize; 3]) -> usize {
        (i * self.dims[1] + j) * self.dims[2] + k
    }

    /// Bins body `spheres.len()` (bodies are binned in index order).
    pub fn insert(&mut self, x: &Vector3<f64>, radius: f64) {
        let c = self.linear(self.cell_of(x));
        self.next.push(self.head[c]);
        self.head[c] = self.spheres.len() as u32;
        self.spheres.push((*x, radius));
    }

    /// The bodies whose bounding spheres meet the sphere of `radius` about `x`.
    pub fn near(&self, x: &Vector3<f64>, radius: f64) -> impl Iterator<Item = usize> + '_ {
        let centre = self.cell_of(x);
        let range =
            move |d: usize| centre[d].saturating_sub(1)..=(centre[d] + 1).min(self.dims[d] - 1);
        let x = *x;
        range(0)
            .flat_map(move |i| range(1).flat_map(move |j| range(2).map(move |k| [i, j, k])))
            .flat_map(move |c| {
                let mut b = self.head[self.linear(c)];
                std::iter::from_fn(move || {
                    (b != NONE).then(|| {
                        let here = b as usize;
                        b = self.next[here];
                        here
                    })
                })
            })
            .filter(move |&b| {
                let (y, r) = self.spheres[b];
                (y - x).norm_squared() < (r + radius).powi(2)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_list_finds_exactly_the_brute_force_pairs() {
        // A jittered lattice with mixed radii, including negative coordinates.
        let mut centres = Vec::new();
        let mut radii = Vec::new();
        for i in 0..7 {
            for j in 0..6 {
                for k in 0..5 {
                    let s = (i * 31 + j * 17 + k * 7) as f64;
                    centres.push(Vector3::new(
                        i as f64 * 1.9 - 6.0 + 0.3 * s.sin(),
                        j as f64 * 2.1 - 3.0 + 0.3 * (1.7 * s).cos(),
                        k as f64 * 2.0 + 0.2 * (0.3 * s).sin(),
                    ));
                    radii.push(0.8 + 0.3 * (0.9 * s).cos().abs());
                }
            }
        }
        let mut brute = Vec::new();
        for i in 0..centres.len() {
            for j in i + 1..centres.len() {
                if (centres[i] - centres[j]).norm() < radii[i] + radii[j] {
                    brute.push((i as u32, j as u32));
                }
            }
        }
        assert!(brute.len() > 100);
        let found: Vec<(u32, u32)> = neighbours(&centres, &radii)
            .into_iter()
            .enumerate()
            .flat_map(|(i, js)| js.into_iter().map(move |j| (i as u32, j)))
            .collect();
        assert_eq!(found, brute);
    }

    #[test]
    fn incremental_cell_list_finds_exactly_the_brute_force_neighbours() {
        // Scattered centres with mixed radii, some outside the list's box (binned at its
        // faces), each queried before it joins.
        let (mut centres, mut radii) = (Vec::new(), Vec::new());
        for i in 0..400 {
            let s = i as f64;
            centres.push(Vector3::new(
                9.0 * (0.37 * s).sin(),
                9.0 * (0.91 * s + 1.0).sin(),
                9.0 * (1.73 * s + 2.0).sin(),
            ));
            radii.push(0.5 + 0.4 * (0.57 * s).cos().abs());
        }
        let r_max = radii.iter().copied().fold(0.0, f64::max);
        let mut list = CellList::new(
            Vector3::repeat(-6.0),
            Vector3::repeat(6.0),
            2.0 * r_max,
            400,
        );
        let mut pairs = 0;
        for i in 0..centres.len() {
            let mut found: Vec<usize> = list.near(&centres[i], radii[i]).collect();
            found.sort_unstable();
            let brute: Vec<usize> = (0..i)
                .filter(|&j| (centres[i] - centres[j]).norm() < radii[i] + radii[j])
                .collect();
            assert_eq!(found, brute, "body {i}");
            pairs += brute.len();
            list.insert(&centres[i], radii[i]);
        }
        assert!(pairs > 100, "{pairs}");
    }

    /// Found by the fuzz campaign (issue #14): a centre beyond 2^63 cells overflowed the cell
    /// arithmetic. The cell list's cells grow with the box (at most about 4 per body): far
    /// centres share cells with near ones; the near pair is still found, none is invented.
    #[test]
    fn far_away_centres_do_not_overflow_the_cells() {
        let centres = [
            Vector3::new(1e300, -1e300, 1e300),
            Vector3::new(0.0, 0.0, 0.0),
            Vector3::new(1.5, 0.0, 0.0),
            Vector3::new(-1e300, 1e300, -1e300),
        ];
        let found = neighbours(&centres, &[1.0; 4]);
        assert_eq!(found, vec![vec![], vec![2], vec![], vec![]]);
        // Far apart along one axis only (the box flat): the cells' count stays bounded.
        let line = centres.map(|x| Vector3::new(x.x, 0.0, 0.0));
        assert_eq!(neighbours(&line, &[1.0; 4]), found);
    }
}
