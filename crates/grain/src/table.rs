//! The tabulated internal force of a one-mode grain: `internal_force.csv`, columns `eps,force,energy`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::atomic::write_file_atomically;
use crate::error::{FormatError, Result};

/// Generalized internal force `F_int(eps)` and strain energy `U(eps)` sampled at increasing
/// modal amplitudes (PHYSICS.md section 7). Units: `eps` in the mode's amplitude units, `force`
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
    energy: f64,
}

impl ForceTable {
    /// Checks lengths (at least 2 rows, equal columns), finiteness and that `eps` increases
    /// strictly; the message names the row (1-based, header excluded).
    pub fn validate(&self) -> Result<(), String> {
        let n = self.eps.len();
        if n < 2 || self.force.len() != n || self.energy.len() != n {
            return Err(format!(
                "need at least 2 rows and equal columns, got eps {n}, force {}, energy {}",
                self.force.len(),
                self.energy.len()
            ));
        }
        for i in 0..n {
            if ![self.eps[i], self.force[i], self.energy[i]]
                .iter()
                .all(|x| x.is_finite())
            {
                return Err(format!("row {}: non-finite value", i + 1));
            }
            if i > 0 && self.eps[i] <= self.eps[i - 1] {
                return Err(format!(
                    "row {}: eps {} does not increase (previous {})",
                    i + 1,
                    self.eps[i],
                    self.eps[i - 1]
                ));
            }
        }
        Ok(())
    }

    /// Reads and validates a table; errors name the file and line.
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
        for row in reader.deserialize::<Row>() {
            let row = row.map_err(|e| csv_error(path, e))?;
            table.eps.push(row.eps);
            table.force.push(row.force);
            table.energy.push(row.energy);
        }
        table
            .validate()
            .map_err(|m| FormatError::invalid(path, "internal force table", m))?;
        Ok(table)
    }

    /// Writes the table atomically (full precision: values round-trip exactly).
    pub fn write_csv(&self, path: &Path) -> Result<()> {
        self.validate()
            .map_err(|m| FormatError::invalid(path, "internal force table", m))?;
        write_file_atomically(path, |w| {
            let mut writer = csv::Writer::from_writer(w);
            for i in 0..self.eps.len() {
                writer
                    .serialize(Row {
                        eps: self.eps[i],
                        force: self.force[i],
                        energy: self.energy[i],
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
        message: format!("{line}{e} (expected columns eps,force,energy)"),
    }
}
