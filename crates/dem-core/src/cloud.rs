//! Points of a grain's surface with a smooth lookup between them: the one neighbour search that
//! the surface's curvature ([`crate::curvature`]) and its residual flexibility
//! ([`crate::flexibility`]) share.
//!
//! A point `y` near the surface takes the values at the points within `r` of it, weighted by
//! `(1 - d^2 / r^2)^2` and normalised ([`Cloud::weights`]): continuous in `y`, so that a value
//! looked up between points does not jump from point to point. Cost: a hash of the points in
//! cells of size `r`; a lookup reads 27 cells.

use std::collections::HashMap;

use nalgebra::Vector3;
use smallvec::SmallVec;

/// Points and their hash.
#[derive(Debug, Clone, PartialEq)]
pub struct Cloud {
    /// The smoothing radius `r`.
    pub radius: f64,
    /// The points.
    pub points: Vec<Vector3<f64>>,
    cells: HashMap<[i64; 3], Vec<u32>>,
}

/// A lookup's points and normalised weights.
pub type Weights = SmallVec<[(usize, f64); 32]>;

impl Cloud {
    /// The cloud of `points` with smoothing radius `radius > 0`.
    pub fn new(points: Vec<Vector3<f64>>, radius: f64) -> Cloud {
        let mut cloud = Cloud {
            radius,
            points,
            cells: HashMap::new(),
        };
        for (k, x) in cloud.points.iter().enumerate() {
            let cell = cloud.cell(x);
            cloud.cells.entry(cell).or_default().push(k as u32);
        }
        cloud
    }

    /// The hash cell of point `x`.
    fn cell(&self, x: &Vector3<f64>) -> [i64; 3] {
        [0, 1, 2].map(|d| (x[d] / self.radius).floor() as i64)
    }

    /// Calls `f(k, distance squared)` for every point within `reach` of `y`, in a fixed order.
    pub fn near(&self, y: &Vector3<f64>, reach: f64, mut f: impl FnMut(usize, f64)) {
        let span = (reach / self.radius).ceil() as i64;
        let c = self.cell(y);
        for i in -span..=span {
            for j in -span..=span {
                for l in -span..=span {
                    let Some(members) = self.cells.get(&[c[0] + i, c[1] + j, c[2] + l]) else {
                        continue;
                    };
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
