//! Prescribed motions of grains and walls: a constant velocity, or a piecewise linear
//! displacement-time table.

use nalgebra::Vector3;
use serde::{Deserialize, Serialize};

use crate::error::KeyError;

/// A prescribed motion (grains or walls): a constant velocity, or a piecewise linear
/// displacement-time table `[[t, dx, dy, dz], ...]` (held at its last row after its end).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "lowercase")]
pub enum Motion {
    /// Constant velocity.
    Velocity([f64; 3]),
    /// Displacement from the initial position against time.
    Table(Vec<[f64; 4]>),
}

impl Motion {
    /// The largest speed along the motion (a table's, over its segments).
    pub fn largest_speed(&self) -> f64 {
        match self {
            Motion::Velocity(v) => Vector3::from(*v).norm(),
            Motion::Table(rows) => rows
                .windows(2)
                .map(|w| {
                    let d = Vector3::new(w[1][1] - w[0][1], w[1][2] - w[0][2], w[1][3] - w[0][3]);
                    d.norm() / (w[1][0] - w[0][0])
                })
                .fold(0.0, f64::max),
        }
    }

    /// Displacement from the start at time `t` (time since the start of the run).
    pub fn displacement(&self, t: f64) -> [f64; 3] {
        match self {
            Motion::Velocity(v) => v.map(|c| c * t),
            Motion::Table(rows) => {
                let k = rows.partition_point(|r| r[0] <= t);
                if k == 0 {
                    return [rows[0][1], rows[0][2], rows[0][3]];
                }
                if k == rows.len() {
                    let r = rows[k - 1];
                    return [r[1], r[2], r[3]];
                }
                let (a, b) = (rows[k - 1], rows[k]);
                let s = (t - a[0]) / (b[0] - a[0]);
                [1, 2, 3].map(|c| a[c] + s * (b[c] - a[c]))
            }
        }
    }

    /// Refuses non-finite numbers, an empty table and table times that do not increase;
    /// `key` names the motion in the error.
    pub fn check(&self, key: &str) -> Result<(), KeyError> {
        match self {
            Motion::Velocity(v) if !v.iter().all(|x| x.is_finite()) => Err(KeyError::new(
                format!("{key}.velocity"),
                format!("finite numbers expected, got {v:?}"),
            )),
            Motion::Table(rows) => {
                if rows.is_empty() {
                    return Err(KeyError::new(
                        format!("{key}.table"),
                        "at least one row".into(),
                    ));
                }
                for (r, row) in rows.iter().enumerate() {
                    if !row.iter().all(|x| x.is_finite()) {
                        return Err(KeyError::new(
                            format!("{key}.table[{r}]"),
                            format!("finite numbers expected, got {row:?}"),
                        ));
                    }
                    if r > 0 && row[0] <= rows[r - 1][0] {
                        return Err(KeyError::new(
                            format!("{key}.table[{r}]"),
                            format!("times must increase: {} follows {}", row[0], rows[r - 1][0]),
                        ));
                    }
                }
                Ok(())
            }
            Motion::Velocity(_) => Ok(()),
        }
    }
}
