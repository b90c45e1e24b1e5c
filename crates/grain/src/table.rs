//! The tabulated internal force of a one-mode grain: `internal_force.csv`, columns `eps,force,energy`,
//! and its interpolant [`TableLaw`] (the force between and beyond the rows, with the energy and
//! tangent stiffness that go with it).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::atomic::write_file_atomically;
use crate::error::{FormatError, Result};

/// Generalized internal force `F_int(eps)` and strain energy `U(eps)` sampled at increasing
/// modal amplitudes (docs/physics.md section 7). Units: `eps` in the mode's amplitude units, `force`
/// in force units (generalized force conjugate to `eps`), `energy` in force x length.
#[derive(Clone, Debug, PartialEq)]
pub struct ForceTable {
    /// Modal amplitudes, strictly increasing.
    pub eps: Vec<f64>,
    /// `F_int` at each amplitude.
    pub force: Vec<f64>,
    /// `U` at each amplitude.
    pub energy: Vec<f64>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Row {
    eps: f64,
    force: f64,
    #[serde(default)]
    energy: Option<f64>,
}

/// Why a [`ForceTable`] is refused: the row (1-based, header excluded) where there is one, and
/// what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}{message}", row.map_or(String::new(), |r| format!("row {r}: ")))]
pub struct TableError {
    /// The row.
    pub row: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl TableError {
    fn at(row: usize, message: String) -> Self {
        TableError {
            row: Some(row),
            message,
        }
    }
}

impl ForceTable {
    /// Checks lengths (at least 2 rows, equal columns), finiteness and that `eps` increases
    /// strictly; the error names the row.
    pub fn validate(&self) -> Result<(), TableError> {
        let n = self.eps.len();
        if n < 2 || self.force.len() != n || self.energy.len() != n {
            return Err(TableError {
                row: None,
                message: format!(
                    "need at least 2 rows and equal columns, got eps {n}, force {}, energy {}",
                    self.force.len(),
                    self.energy.len()
                ),
            });
        }
        for i in 0..n {
            if ![self.eps[i], self.force[i], self.energy[i]]
                .iter()
                .all(|x| x.is_finite())
            {
                return Err(TableError::at(i + 1, "non-finite value".into()));
            }
            if i > 0 && self.eps[i] <= self.eps[i - 1] {
                return Err(TableError::at(
                    i + 1,
                    format!(
                        "eps {} does not increase (previous {})",
                        self.eps[i],
                        self.eps[i - 1]
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The largest difference between a table's energies and the integral of its forces
    /// ([`ForceTable::from_forces`]) that [`ForceTable::check_physics`] accepts, relative to the
    /// largest energy: a table computed from FEM (by either of mode-extract's fits) agrees to a
    /// fraction of this; a column of other units or another grain's does not.
    pub const ENERGY_TOLERANCE: f64 = 0.05;

    /// Checks that a valid table describes a restoring force with its energy: each force has
    /// the sign of its amplitude (`F eps >= 0`: a force pushing away from `eps = 0` would deform
    /// the grain by itself, a negative stiffness), and the energies are the integral of the
    /// forces within [`ForceTable::ENERGY_TOLERANCE`] (else the run's energy ledger and its
    /// dynamics disagree). The message names the row (1-based) and both values.
    pub fn check_physics(&self) -> Result<(), TableError> {
        let largest = self.force.iter().fold(0.0f64, |m, f| m.max(f.abs()));
        for (i, (&e, &f)) in self.eps.iter().zip(&self.force).enumerate() {
            if e * f < 0.0 && f.abs() > 1e-9 * largest {
                return Err(TableError::at(
                    i + 1,
                    format!(
                        "force {f:e} at eps {e:e} pushes away from eps = 0 (a restoring force has the sign of eps): the grain would deform by itself"
                    ),
                ));
            }
        }
        let integral = ForceTable::from_forces(self.eps.clone(), self.force.clone()).energy;
        let scale = integral.iter().fold(0.0f64, |m, u| m.max(u.abs()));
        for (i, (&u, &v)) in self.energy.iter().zip(&integral).enumerate() {
            if (u - v).abs() > ForceTable::ENERGY_TOLERANCE * scale {
                return Err(TableError::at(
                    i + 1,
                    format!(
                        "energy {u:e}, but the integral of the forces from eps = 0 is {v:e} (more than {} % of the largest energy apart): the energy column contradicts the force",
                        100.0 * ForceTable::ENERGY_TOLERANCE
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A table of forces alone, its energies the exact integrals from 0 of the monotone cubic
    /// interpolant ([`TableLaw`]), so that `U(0) = 0`. Panics on an invalid table (fewer than 2
    /// rows, non-increasing or non-finite values): validate first.
    pub fn from_forces(eps: Vec<f64>, force: Vec<f64>) -> ForceTable {
        let mut table = ForceTable {
            energy: vec![0.0; eps.len()],
            eps,
            force,
        };
        let law = TableLaw::new(&table, TableInterpolation::MonotoneCubic);
        table.energy = table.eps.iter().map(|&e| law.energy(e)).collect();
        table
    }

    /// Reads and validates a table; errors name the file and line. The `energy` column may be
    /// left out (in every row): the energies are then those of [`ForceTable::from_forces`].
    pub fn read_csv(path: &Path) -> Result<ForceTable> {
        let mut reader = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .comment(Some(b'#'))
            .from_path(path)
            .map_err(|e| csv_error(path, e))?;
        let mut table = ForceTable {
            eps: vec![],
            force: vec![],
            energy: vec![],
        };
        let mut missing = Vec::new();
        for row in reader.deserialize::<Row>() {
            let row = row.map_err(|e| csv_error(path, e))?;
            table.eps.push(row.eps);
            table.force.push(row.force);
            missing.push(row.energy.is_none());
            table.energy.push(row.energy.unwrap_or(0.0));
        }
        let invalid =
            |e: TableError| FormatError::invalid(path, "internal force table", e.to_string());
        let forces_only = missing.iter().all(|&m| m);
        if let Some(row) = missing.iter().position(|&m| m).filter(|_| !forces_only) {
            return Err(invalid(TableError::at(
                row + 1,
                "no energy (give the energy column in every row, or in none)".into(),
            )));
        }
        table.validate().map_err(invalid)?;
        if forces_only {
            table = ForceTable::from_forces(table.eps, table.force);
        }
        Ok(table)
    }

    /// Writes the table atomically (full precision: values round-trip exactly).
    pub fn write_csv(&self, path: &Path) -> Result<()> {
        self.validate()
            .map_err(|e| FormatError::invalid(path, "internal force table", e.to_string()))?;
        write_file_atomically(path, |w| {
            let mut writer = csv::Writer::from_writer(w);
            for i in 0..self.eps.len() {
                writer
                    .serialize(Row {
                        eps: self.eps[i],
                        force: self.force[i],
                        energy: Some(self.energy[i]),
                    })
                    .map_err(std::io::Error::other)?;
            }
            writer.flush()
        })
    }
}

fn csv_error(path: &Path, e: csv::Error) -> FormatError {
    let line = e
        .position()
        .map(|p| format!("line {}: ", p.line()))
        .unwrap_or_default();
    FormatError::Parse {
        path: path.to_path_buf(),
        message: format!("{line}{e} (expected columns eps,force[,energy])"),
    }
}

/// Fritsch-Carlson slopes of the monotone piecewise cubic Hermite interpolant through
/// `(x_i, y_i)` (x strictly increasing, at least 2 points): harmonic means of neighbouring
/// secants where they agree in sign, zero at extrema, one-sided three-point formulas at the ends
/// (limited). Fritsch and Carlson, SIAM J. Numer. Anal. 17 (1980); the end formula is
/// Moler's (Numerical Computing with MATLAB, `pchip`).
pub fn monotone_slopes(x: &[f64], y: &[f64]) -> Vec<f64> {
    let n = x.len();
    let h: Vec<f64> = x.windows(2).map(|w| w[1] - w[0]).collect();
    let delta: Vec<f64> = (0..n - 1).map(|i| (y[i + 1] - y[i]) / h[i]).collect();
    if n == 2 {
        return vec![delta[0]; 2];
    }
    let mut d = vec![0.0; n];
    for i in 1..n - 1 {
        if delta[i - 1] * delta[i] > 0.0 {
            let (w1, w2) = (2.0 * h[i] + h[i - 1], h[i] + 2.0 * h[i - 1]);
            d[i] = (w1 + w2) / (w1 / delta[i - 1] + w2 / delta[i]);
        }
    }
    let end = |h0: f64, h1: f64, d0: f64, d1: f64| {
        let s = ((2.0 * h0 + h1) * d0 - h0 * d1) / (h0 + h1);
        if s * d0 <= 0.0 {
            0.0
        } else if d0 * d1 <= 0.0 && s.abs() > 3.0 * d0.abs() {
            3.0 * d0
        } else {
            s
        }
    };
    d[0] = end(h[0], h[1], delta[0], delta[1]);
    d[n - 1] = end(h[n - 2], h[n - 3], delta[n - 2], delta[n - 3]);
    d
}

/// Exact integrals of the cubic Hermite interpolant of `(x_i, y_i)` with slopes `d_i`, from
/// `x_0` to each `x_i` (the integral of one piece is `h (y_i + y_i+1) / 2 + h^2 (d_i - d_i+1) / 12`).
pub fn hermite_integrals(x: &[f64], y: &[f64], d: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0];
    for i in 0..x.len() - 1 {
        let h = x[i + 1] - x[i];
        let piece = 0.5 * h * (y[i] + y[i + 1]) + h * h / 12.0 * (d[i] - d[i + 1]);
        out.push(out[i] + piece);
    }
    out
}

/// The force of a [`ForceTable`] as a function of `eps`, with the energy and the tangent
/// stiffness that belong to it:
/// - `force(eps)`: the table's interpolation ([`TableInterpolation`]) of the force column;
///   beyond the first or last row, the straight line with the end slope of the interpolant
///   (so the force stays continuous with a continuous tangent);
/// - `energy(eps)`: the exact integral of that force from `eps = 0`, so `U(0) = 0` and
///   `dU/d eps = F` everywhere (the table's own energy column is not used: it may come from
///   another fit and need not be the integral of the interpolated force);
/// - `tangent(eps) = dF/d eps`.
///
/// Cost: a binary search over the rows and a cubic per call.
#[derive(Clone, Debug, PartialEq)]
pub struct TableLaw {
    eps: Vec<f64>,
    force: Vec<f64>,
    /// Slope of the force at each row (Hermite slopes; for linear interpolation unused).
    slopes: Vec<f64>,
    cubic: bool,
    /// Integral of the force from the first row to each row.
    integral: Vec<f64>,
    /// Integral from the first row to `eps = 0`.
    at_zero: f64,
}

impl TableLaw {
    /// The interpolant of a validated table.
    pub fn new(table: &ForceTable, interpolation: TableInterpolation) -> TableLaw {
        let (x, y) = (&table.eps, &table.force);
        let cubic = interpolation == TableInterpolation::MonotoneCubic;
        let slopes = if cubic {
            monotone_slopes(x, y)
        } else {
            vec![0.0; x.len()]
        };
        let integral = if cubic {
            hermite_integrals(x, y, &slopes)
        } else {
            let mut out = vec![0.0];
            for i in 0..x.len() - 1 {
                out.push(out[i] + 0.5 * (x[i + 1] - x[i]) * (y[i] + y[i + 1]));
            }
            out
        };
        let mut law = TableLaw {
            eps: x.clone(),
            force: y.clone(),
            slopes,
            cubic,
            integral,
            at_zero: 0.0,
        };
        law.at_zero = law.integral_from_start(0.0);
        law
    }

    /// The first and last tabulated amplitudes.
    pub fn range(&self) -> (f64, f64) {
        (self.eps[0], self.eps[self.eps.len() - 1])
    }

    /// The interval holding `e` (the first or last one beyond the range), its start and width,
    /// and the local coordinate `t` (outside `[0, 1]` beyond the range).
    fn piece(&self, e: f64) -> (usize, f64, f64) {
        let n = self.eps.len();
        let i = self.eps.partition_point(|&x| x <= e).clamp(1, n - 1) - 1;
        let h = self.eps[i + 1] - self.eps[i];
        (i, h, (e - self.eps[i]) / h)
    }

    /// The end slope used beyond the range on the side of row `i` (0 or last).
    fn end_slope(&self, i: usize) -> f64 {
        if self.cubic {
            self.slopes[i]
        } else {
            let j = if i == 0 { 0 } else { i - 1 };
            (self.force[j + 1] - self.force[j]) / (self.eps[j + 1] - self.eps[j])
        }
    }

    /// Beyond the range: `Some(row)` of the end it continues.
    fn beyond(&self, e: f64) -> Option<usize> {
        let (lo, hi) = self.range();
        if e < lo {
            Some(0)
        } else if e > hi {
            Some(self.eps.len() - 1)
        } else {
            None
        }
    }

    /// `F_int(eps)`.
    pub fn force(&self, e: f64) -> f64 {
        if let Some(r) = self.beyond(e) {
            return self.force[r] + self.end_slope(r) * (e - self.eps[r]);
        }
        let (i, h, t) = self.piece(e);
        let (y0, y1) = (self.force[i], self.force[i + 1]);
        if !self.cubic {
            return y0 + t * (y1 - y0);
        }
        let (d0, d1) = (self.slopes[i], self.slopes[i + 1]);
        let t2 = t * t;
        let t3 = t2 * t;
        (2.0 * t3 - 3.0 * t2 + 1.0) * y0
            + (t3 - 2.0 * t2 + t) * h * d0
            + (-2.0 * t3 + 3.0 * t2) * y1
            + (t3 - t2) * h * d1
    }

    /// `dF_int / d eps` at `eps`.
    pub fn tangent(&self, e: f64) -> f64 {
        if let Some(r) = self.beyond(e) {
            return self.end_slope(r);
        }
        let (i, h, t) = self.piece(e);
        let (y0, y1) = (self.force[i], self.force[i + 1]);
        if !self.cubic {
            return (y1 - y0) / h;
        }
        let (d0, d1) = (self.slopes[i], self.slopes[i + 1]);
        let t2 = t * t;
        ((6.0 * t2 - 6.0 * t) * (y0 - y1)) / h
            + (3.0 * t2 - 4.0 * t + 1.0) * d0
            + (3.0 * t2 - 2.0 * t) * d1
    }

    /// The largest tangent stiffness over the tabulated range (and its extensions), exact: the
    /// tangent of a cubic piece is a quadratic, largest at an end or at its vertex.
    pub fn max_tangent(&self) -> f64 {
        let mut best = f64::NEG_INFINITY;
        for i in 0..self.eps.len() - 1 {
            let (a, b) = (self.eps[i], self.eps[i + 1]);
            best = best.max(self.tangent(a)).max(self.tangent(b));
            if self.cubic {
                // d/dt of the tangent: (12 t - 6) (y0 - y1) / h + (6 t - 4) d0 + (6 t - 2) d1.
                let (h, y0, y1) = (b - a, self.force[i], self.force[i + 1]);
                let (d0, d1) = (self.slopes[i], self.slopes[i + 1]);
                let slope = 12.0 * (y0 - y1) / h + 6.0 * (d0 + d1);
                let at0 = -6.0 * (y0 - y1) / h - 4.0 * d0 - 2.0 * d1;
                if slope != 0.0 {
                    let t = -at0 / slope;
                    if t > 0.0 && t < 1.0 {
                        best = best.max(self.tangent(a + t * h));
                    }
                }
            }
        }
        best.max(self.end_slope(0))
            .max(self.end_slope(self.eps.len() - 1))
    }

    /// Integral of the force from the first row to `e`.
    fn integral_from_start(&self, e: f64) -> f64 {
        if let Some(r) = self.beyond(e) {
            let dx = e - self.eps[r];
            return self.integral[r] + self.force[r] * dx + 0.5 * self.end_slope(r) * dx * dx;
        }
        let (i, h, t) = self.piece(e);
        let (y0, y1) = (self.force[i], self.force[i + 1]);
        let piece = if self.cubic {
            let (d0, d1) = (self.slopes[i], self.slopes[i + 1]);
            let (t2, t3, t4) = (t * t, t * t * t, t * t * t * t);
            h * ((0.5 * t4 - t3 + t) * y0
                + (0.25 * t4 - 2.0 / 3.0 * t3 + 0.5 * t2) * h * d0
                + (-0.5 * t4 + t3) * y1
                + (0.25 * t4 - t3 / 3.0) * h * d1)
        } else {
            h * (t * y0 + 0.5 * t * t * (y1 - y0))
        };
        self.integral[i] + piece
    }

    /// `U(eps) = integral from 0 to eps of F_int`.
    pub fn energy(&self, e: f64) -> f64 {
        self.integral_from_start(e) - self.at_zero
    }
}

/// Interpolation of a tabulated internal force.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TableInterpolation {
    /// Piecewise linear force (piecewise quadratic energy).
    Linear,
    /// Monotone piecewise cubic (Fritsch-Carlson) force.
    MonotoneCubic,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(eps: &[f64], force: impl Fn(f64) -> f64) -> ForceTable {
        ForceTable {
            eps: eps.to_vec(),
            force: eps.iter().map(|&e| force(e)).collect(),
            energy: vec![0.0; eps.len()],
        }
    }

    /// A table read without its energy column gets the exact integral of its interpolant:
    /// for linear data `F = 3 eps + 1` that is `3/2 eps^2 + eps` (closed form); a column given
    /// in some rows only is refused with the row.
    #[test]
    fn a_table_of_forces_alone_gets_its_exact_energies() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("forces.csv");
        std::fs::write(&path, "# comment\neps,force\n-1,-2\n0,1\n0.5,2.5\n2,7\n").unwrap();
        let t = ForceTable::read_csv(&path).unwrap();
        for (e, u) in t.eps.iter().zip(&t.energy) {
            assert!((u - (1.5 * e * e + e)).abs() < 1e-14, "{e}: {u}");
        }
        std::fs::write(&path, "eps,force,energy\n0,0,0\n1,1,\n").unwrap();
        let e = ForceTable::read_csv(&path).unwrap_err().to_string();
        assert!(e.contains("row 2: no energy"), "{e}");
    }

    #[test]
    fn linear_data_is_reproduced_with_its_exact_energy_inside_and_beyond_the_range() {
        // F = 3 eps + 1 on uneven rows: both interpolations are exact, the energy is
        // 3/2 eps^2 + eps from 0, the tangent 3, also beyond the rows (end-slope extension).
        let t = table(&[-0.2, 0.1, 0.25, 0.3, 0.6, 1.0], |e| 3.0 * e + 1.0);
        for interpolation in [
            TableInterpolation::Linear,
            TableInterpolation::MonotoneCubic,
        ] {
            let law = TableLaw::new(&t, interpolation);
            for e in [-0.5, -0.2, 0.0, 0.05, 0.27, 0.6, 0.99, 1.0, 1.7] {
                assert!((law.force(e) - (3.0 * e + 1.0)).abs() < 1e-14, "{e}");
                assert!((law.energy(e) - (1.5 * e * e + e)).abs() < 1e-14, "{e}");
                assert!((law.tangent(e) - 3.0).abs() < 1e-13, "{e}");
            }
            assert!((law.max_tangent() - 3.0).abs() < 1e-13);
        }
    }

    #[test]
    fn energy_is_the_integral_of_the_force_and_tangent_its_derivative() {
        // Hertz-like rows, F = eps^1.5: check dU/deps = F and dF/deps = tangent by central
        // differences (an independent derivative of the same interpolant), and the exact
        // largest tangent against a dense scan.
        let rows: Vec<f64> = (0..=12).map(|i| (i as f64 / 12.0).powi(2)).collect();
        let t = table(&rows, |e| e.powf(1.5));
        for interpolation in [
            TableInterpolation::Linear,
            TableInterpolation::MonotoneCubic,
        ] {
            let law = TableLaw::new(&t, interpolation);
            let h = 1e-6;
            let mut scan: f64 = 0.0;
            for k in 1..2000 {
                let e = -0.1 + 1.2 * k as f64 / 2000.0;
                let du = (law.energy(e + h) - law.energy(e - h)) / (2.0 * h);
                assert!(
                    (du - law.force(e)).abs() < 1e-8,
                    "{e}: {du} {}",
                    law.force(e)
                );
                scan = scan.max(law.tangent(e));
                if rows.iter().all(|r| (r - e).abs() > 2.0 * h) {
                    let df = (law.force(e + h) - law.force(e - h)) / (2.0 * h);
                    assert!((df - law.tangent(e)).abs() < 1e-6, "{e}");
                }
            }
            assert!(law.max_tangent() >= scan - 1e-12);
            assert!(law.max_tangent() <= scan * (1.0 + 1e-3));
            assert_eq!(law.energy(0.0), 0.0);
        }
    }
}
