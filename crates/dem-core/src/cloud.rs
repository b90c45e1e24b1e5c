//! Points of a grain's surface with a smooth lookup between them: the one neighbour search that
//! the surface's curvature ([`crate::curvature`]) and its residual flexibility
//! ([`crate::flexibility`]) share.
//!
//! A point `y` near the surface takes the values at the points within `r` of it, weighted by
//! `(1 - d^2 / r^2)^2` and normalised ([`Cloud::weights`]): continuous in `y`, so that a value
//! looked up between points does not jump from point to point. Cost: the points sorted into
//! cells of size `r` of a dense grid over their box (cells twice as large, and again, while
//! that makes more than 4 cells per point); a lookup reads 27 cells.

use nalgebra::Vector3;
use smallvec::SmallVec;

/// Points and their cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Cloud {
    /// The smoothing radius `r`.
    pub radius: f64,
    /// The points.
    pub points: Vec<Vector3<f64>>,
    /// The grid's corner, cell side (`r`, or larger for a sparse cloud) and cell counts.
    origin: Vector3<f64>,
    side: f64,
    dims: [i64; 3],
    /// Cell `c`'s points are `members[start[c]..start[c + 1]]`, by increasing index.
    start: Vec<u32>,
    members: Vec<u32>,
}

/// A lookup's points and normalised weights.
pub type Weights = SmallVec<[(usize, f64); 64]>;

impl Cloud {
    /// The cloud of `points` with smoothing radius `radius > 0`.
    pub fn new(points: Vec<Vector3<f64>>, radius: f64) -> Cloud {
        let (lo, hi) = points.iter().fold(
            (
                Vector3::repeat(f64::INFINITY),
                Vector3::repeat(f64::NEG_INFINITY),
            ),
            |(lo, hi), x| (lo.inf(x), hi.sup(x)),
        );
        let extent = if points.is_empty() {
            Vector3::zeros()
        } else {
            hi - lo
        };
        // Cells of side r, doubled while that makes more than 4 per point (a few points far
        // apart, or spread along a line or a plane).
        let cap = (4 * points.len().max(1)) as f64;
        let count = |side: f64| {
            (0..3)
                .map(|d| (extent[d] / side).floor() + 1.0)
                .product::<f64>()
        };
        let mut side = radius;
        while count(side) > cap {
            side *= 2.0;
        }
        let dims = [0, 1, 2].map(|d| (extent[d] / side).floor() as i64 + 1);
        let mut cloud = Cloud {
            radius,
            origin: if points.is_empty() {
                Vector3::zeros()
            } else {
                lo
            },
            side,
            dims,
            start: Vec::new(),
            members: Vec::with_capacity(points.len()),
            points,
        };
        // A counting sort of the points by cell, stable: each cell lists its points by index.
        let cells: Vec<usize> = (cloud.points.iter())
            .map(|x| cloud.index(cloud.cell(x)).expect("a point lies in its box"))
            .collect();
        let mut start = vec![0u32; (dims[0] * dims[1] * dims[2]) as usize + 1];
        for c in &cells {
            start[c + 1] += 1;
        }
        for c in 1..start.len() {
            start[c] += start[c - 1];
        }
        let mut fill = start.clone();
        cloud.members.resize(cloud.points.len(), 0);
        for (k, c) in cells.iter().enumerate() {
            cloud.members[fill[*c] as usize] = k as u32;
            fill[*c] += 1;
        }
        cloud.start = start;
        cloud
    }

    /// The cell of point `x` (possibly outside the grid).
    fn cell(&self, x: &Vector3<f64>) -> [i64; 3] {
        [0, 1, 2].map(|d| ((x[d] - self.origin[d]) / self.side).floor() as i64)
    }

    /// The index of cell `c`, if it is in the grid.
    fn index(&self, c: [i64; 3]) -> Option<usize> {
        let inside = (0..3).all(|d| (0..self.dims[d]).contains(&c[d]));
        inside.then(|| ((c[0] * self.dims[1] + c[1]) * self.dims[2] + c[2]) as usize)
    }

    /// Calls `f(k, distance squared)` for every point within `reach` of `y`, in a fixed order.
    pub fn near(&self, y: &Vector3<f64>, reach: f64, mut f: impl FnMut(usize, f64)) {
        let span = (reach / self.side).ceil() as i64;
        let c = self.cell(y);
        for i in -span..=span {
            for j in -span..=span {
                for l in -span..=span {
                    let at = [
                        c[0].saturating_add(i),
                        c[1].saturating_add(j),
                        c[2].saturating_add(l),
                    ];
                    let Some(cell) = self.index(at) else {
                        continue;
                    };
                    let members =
                        &self.members[self.start[cell] as usize..self.start[cell + 1] as usize];
                    for &k in members {
                        let d2 = (self.points[k as usize] - y).norm_squared();
                        if d2 < reach * reach {
                            f(k as usize, d2);
                        }
                    }
                }
            }
        }
    }

    /// Whether a point lies within `r` of `y`.
    pub fn reaches(&self, y: &Vector3<f64>) -> bool {
        let mut found = false;
        self.near(y, self.radius, |_, _| found = true);
        found
    }

    /// The points within `r` of `y` with their weights `(1 - d^2 / r^2)^2`, normalised to sum
    /// to 1 (module docs); the nearest point alone if none is within `r` (none for an empty
    /// cloud).
    pub fn weights(&self, y: &Vector3<f64>) -> Weights {
        let r2 = self.radius * self.radius;
        let mut out = Weights::new();
        self.near(y, self.radius, |k, d2| {
            out.push((k, (1.0 - d2 / r2).powi(2)))
        });
        let total: f64 = out.iter().map(|w| w.1).sum();
        if total > 0.0 {
            for w in &mut out {
                w.1 /= total;
            }
            return out;
        }
        (self.points.iter().enumerate())
            .map(|(k, x)| (k, (x - y).norm_squared()))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(k, _)| (k, 1.0))
            .into_iter()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lookup_finds_exactly_the_points_within_reach() {
        // A jittered lattice against a brute-force search, reaches below and above the radius.
        let points: Vec<Vector3<f64>> = (0..1000)
            .map(|i| {
                let (a, b, c) = (i % 10, (i / 10) % 10, i / 100);
                let jitter = ((i * 7919) % 13) as f64 * 0.01;
                Vector3::new(a as f64 + jitter, b as f64 * 0.7, c as f64 * 1.3 - jitter)
            })
            .collect();
        let cloud = Cloud::new(points.clone(), 0.9);
        for (y, reach) in [
            (Vector3::new(4.2, 3.1, 6.0), 0.9),
            (Vector3::new(-0.5, 0.0, 0.0), 2.5),
            (Vector3::new(9.4, 6.3, 11.7), 1.7),
        ] {
            let mut found = Vec::new();
            cloud.near(&y, reach, |k, _| found.push(k));
            found.sort();
            let expected: Vec<usize> = (0..points.len())
                .filter(|&k| (points[k] - y).norm_squared() < reach * reach)
                .collect();
            assert_eq!(found, expected, "{y}, reach {reach}");
        }
    }

    #[test]
    fn points_along_a_line_far_apart_keep_the_grid_small() {
        // Two points 10 apart with a radius of 1e-9 would be 1e10 cells of side r along the
        // line: the cells grow until there are at most 4 per point.
        let cloud = Cloud::new(vec![Vector3::zeros(), Vector3::new(10.0, 0.0, 0.0)], 1e-9);
        assert!(cloud.start.len() <= 9, "{} cells", cloud.start.len() - 1);
        let mut found = Vec::new();
        cloud.near(&Vector3::new(10.0, 0.0, 0.0), 1e-9, |k, _| found.push(k));
        assert_eq!(found, vec![1]);
        // A query far outside the grid finds nothing (and does not overflow).
        cloud.near(&Vector3::repeat(1e300), 1e-9, |_, _| {
            panic!("nothing there")
        });
    }
}
