//! The periodic cell (`[cell]`, docs/experiments.md section 4): a parallelepiped of cell vectors
//! `a_1, a_2, a_3` (the columns of `H`) from `origin`, periodic along the vectors chosen.
//!
//! ```toml
//! [cell]
//! origin = [0, 0, 0]
//! size = [10, 10, 10]                # an orthorhombic cell, or its three vectors:
//! # vectors = [[10, 0, 0], [2, 10, 0], [0, 0, 10]]   # a_1, a_2, a_3 (rows here)
//! periodic = [true, true, true]      # along a_1, a_2, a_3 (default: all)
//! ```
//!
//! A grain's images are the grain displaced by `H n` for integer `n` (zero along the axes that
//! are not periodic). A pair of grains meets across the cell's faces as grain `a` and the image
//! `H s` of grain `b` ([`crate::law::PairKey::shift`]); its contact history stays with the pair
//! (the key's shift follows the grains as they are wrapped). Grains are kept in the cell: a free
//! grain whose centre leaves it through a periodic face comes back through the opposite face
//! (`X -> X - H m`), its pairs' shifts corrected, and its image count (`Body::image`, LAMMPS's
//! image flags) updated, so that its unwrapped position `X + H image` is continuous.
//!
//! Along each periodic axis the cell must be at least twice the largest grain's diameter across
//! (the distance between its faces `V / |a_j x a_k|` at least `4 r_max`, YADE's rule): then a
//! pair meets through one image at most, and no grain meets its own.

use nalgebra::{Matrix3, Vector3};
use serde::{Deserialize, Serialize};

use crate::scene::KeyError;

/// `[cell]` in a scene.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellSpec {
    /// The corner the cell vectors start from.
    #[serde(default)]
    pub origin: [f64; 3],
    /// An orthorhombic cell's edges along x, y, z (exclusive with `vectors`).
    pub size: Option<[f64; 3]>,
    /// The cell vectors `a_1, a_2, a_3` (exclusive with `size`).
    pub vectors: Option<[[f64; 3]; 3]>,
    /// Which cell vectors are periodic.
    #[serde(default = "all_periodic")]
    pub periodic: [bool; 3],
}

fn all_periodic() -> [bool; 3] {
    [true; 3]
}

/// The cell of a simulation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// The corner.
    pub origin: Vector3<f64>,
    /// `H`: the cell vectors as columns.
    pub vectors: Matrix3<f64>,
    /// Which cell vectors are periodic.
    pub periodic: [bool; 3],
}

impl CellSpec {
    /// The checks serde cannot make.
    pub fn check(&self) -> Result<(), KeyError> {
        let fail = |k: &str, m: String| Err(KeyError::new(format!("cell.{k}"), m));
        if !self.origin.iter().all(|x| x.is_finite()) {
            return fail(
                "origin",
                format!("finite numbers expected, got {:?}", self.origin),
            );
        }
        let h = match (self.size, self.vectors) {
            (Some(_), Some(_)) | (None, None) => {
                return fail("size", "give `size` or `vectors`, one of the two".into());
            }
            (Some(size), None) => {
                if !size.iter().all(|x| x.is_finite() && *x > 0.0) {
                    return fail("size", format!("three edges > 0, got {size:?}"));
                }
                Matrix3::from_diagonal(&Vector3::from(size))
            }
            (None, Some(v)) => {
                if !v.iter().flatten().all(|x| x.is_finite()) {
                    return fail("vectors", "finite numbers expected".into());
                }
                Matrix3::from_columns(&v.map(Vector3::from))
            }
        };
        let volume = h.determinant();
        if !(volume.is_finite() && volume > 0.0) {
            return fail(
                "vectors",
                format!(
                    "three independent vectors, right-handed (a_1 . (a_2 x a_3) > 0), got the volume {volume}"
                ),
            );
        }
        Ok(())
    }

    /// The cell (the spec checked).
    pub fn cell(&self) -> Cell {
        let vectors = match (self.size, self.vectors) {
            (Some(size), _) => Matrix3::from_diagonal(&Vector3::from(size)),
            (None, Some(v)) => Matrix3::from_columns(&v.map(Vector3::from)),
            (None, None) => unreachable!("checked: size or vectors"),
        };
        Cell {
            origin: Vector3::from(self.origin),
            vectors,
            periodic: self.periodic,
        }
    }
}

impl Cell {
    /// The displacement `H n` of image `n`.
    #[inline]
    pub fn shift(&self, n: [i32; 3]) -> Vector3<f64> {
        self.vectors * Vector3::new(n[0] as f64, n[1] as f64, n[2] as f64)
    }

    /// The volume `det H`.
    pub fn volume(&self) -> f64 {
        self.vectors.determinant()
    }

    /// The distance between the two faces across each cell vector, `V / |a_j x a_k|`.
    pub fn widths(&self) -> [f64; 3] {
        let v = self.volume();
        let a = |k: usize| self.vectors.column(k).into_owned();
        [0, 1, 2].map(|k| v / a((k + 1) % 3).cross(&a((k + 2) % 3)).norm())
    }

    /// The fractional coordinates `H^-1 (x - origin)`.
    pub fn fractional(&self, x: &Vector3<f64>) -> Vector3<f64> {
        self.vectors
            .try_inverse()
            .expect("a cell of positive volume")
            * (x - self.origin)
    }

    /// The image `m` that brings `x` into the cell along its periodic axes (`x - H m` inside).
    pub fn wrap(&self, x: &Vector3<f64>) -> [i32; 3] {
        let s = self.fractional(x);
        [0, 1, 2].map(|k| {
            if self.periodic[k] {
                s[k].floor() as i32
            } else {
                0
            }
        })
    }
}
