//! Broad phase: the grain pairs whose bounding spheres overlap, in O(N) with a cell list.
//!
//! Cells are cubes of edge `2 r_max` (the largest bounding radius), so overlapping spheres have
//! centres in the same or adjacent cells. Bodies are bucketed by sorting their cell keys, and
//! each body looks in the 27 cells around its own (9 runs of 3 cells in key order), bodies in
//! parallel (rayon). Each body's neighbours come out sorted, whatever the thread count: the
//! narrow phase and the force reduction follow this order.

use nalgebra::Vector3;
use rayon::prelude::*;

/// For each body `i`, the bodies `j > i` with `|X_i - X_j| < r_i + r_j`, sorted.
pub fn neighbours(centres: &[Vector3<f64>], radii: &[f64]) -> Vec<Vec<u32>> {
    let n = centres.len();
    let r_max = radii.iter().copied().fold(0.0, f64::max);
    if n < 2 || r_max <= 0.0 {
        return vec![Vec::new(); n];
    }
    let edge = 2.0 * r_max;
    let cell = |x: &Vector3<f64>| -> [i64; 3] { [0, 1, 2].map(|d| (x[d] / edge).floor() as i64) };
    let cells: Vec<[i64; 3]> = centres.iter().map(cell).collect();
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_unstable_by_key(|&i| (cells[i as usize], i));
    let sorted_keys: Vec<[i64; 3]> = order.iter().map(|&i| cells[i as usize]).collect();
    let of = |i: usize| -> Vec<u32> {
        let c = cells[i];
        let mut found = Vec::new();
        // Keys sort x, then y, then z: the three cells stacked along z around (x+dx, y+dy) are
        // one contiguous run, found by one binary search.
        for dx in -1..=1 {
            for dy in -1..=1 {
                // Saturating: a centre beyond 2^63 cells (found by fuzzing a scene) must not
                // overflow; such far cells merge, which costs tests, never misses a pair.
                let (x, y) = (c[0].saturating_add(dx), c[1].saturating_add(dy));
                let (below, above) = (c[2].saturating_sub(1), c[2].saturating_add(1));
                let start = sorted_keys.partition_point(|k| *k < [x, y, below]);
                for (&j, _) in order[start..]
                    .iter()
                    .zip(&sorted_keys[start..])
                    .take_while(|(_, k)| **k <= [x, y, above])
                {
                    let j = j as usize;
                    if j > i {
                        let reach = radii[i] + radii[j];
                        if (centres[i] - centres[j]).norm_squared() < reach * reach {
                            found.push(j as u32);
                        }
                    }
                }
            }
        }
        found.sort_unstable();
        found
    };
    (0..n).into_par_iter().map(of).collect()
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

    /// Found by the fuzz campaign (issue #14): a centre beyond 2^63 cells overflowed the cell
    /// arithmetic. Far centres now saturate; the near pair is still found, none is invented.
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
    }
}
