//! What the two bundles' manifests share: reading and writing a manifest (schema first), the
//! record of a grain's internal force ([`InternalForce`]) and the checks of its matrices.

use std::path::Path;

use ndarray::Array2;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::atomic::write_file_atomically;
use crate::error::{FormatError, Result};
use crate::polynomial::{EnergyPolynomial, Monomial};
use crate::table::{ForceTable, TableInterpolation};

/// How a grain's generalized internal force `F_int(eps)` is computed (docs/physics.md section 2).
#[derive(Clone, Debug, PartialEq)]
pub enum InternalForce {
    /// `F_int = K eps` with the bundle's modal stiffness `K` (Eq. 3).
    Linear,
    /// One mode only: a table of `F_int` and `U` against `eps` (Section 4.2 of the paper),
    /// stored as the bundle's `internal_force.csv`.
    Table {
        /// How values between rows are interpolated.
        interpolation: TableInterpolation,
        /// The samples.
        table: ForceTable,
    },
    /// Any number of modes: `F_int = grad U` of a polynomial strain energy, stored inline in
    /// the manifest.
    Polynomial(EnergyPolynomial),
}

/// The manifest's record of an [`InternalForce`]: the table itself lives in a CSV file.
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub(crate) enum InternalForceEntry {
    Linear,
    Table { interpolation: TableInterpolation },
    Polynomial { terms: Vec<Monomial> },
}

const FORCE_TABLE_FILE: &str = "internal_force.csv";

/// A tabulated law describes exactly one mode.
fn check_table_modes(dir: &Path, modes: usize) -> Result<()> {
    if modes == 1 {
        Ok(())
    } else {
        Err(FormatError::invalid(
            dir,
            "internal_force",
            format!("a tabulated law needs exactly 1 mode, the bundle has {modes}"),
        ))
    }
}

/// Writes the table of a tabulated law into the bundle directory; returns the manifest entry.
pub(crate) fn write_internal_force(
    dir: &Path,
    law: &InternalForce,
    modes: usize,
) -> Result<InternalForceEntry> {
    if matches!(law, InternalForce::Table { .. }) {
        check_table_modes(dir, modes)?;
    }
    Ok(match law {
        InternalForce::Linear => InternalForceEntry::Linear,
        InternalForce::Table {
            interpolation,
            table,
        } => {
            table.write_csv(&dir.join(FORCE_TABLE_FILE))?;
            InternalForceEntry::Table {
                interpolation: *interpolation,
            }
        }
        InternalForce::Polynomial(p) => {
            check_polynomial(dir, p, modes)?;
            InternalForceEntry::Polynomial {
                terms: p.terms.clone(),
            }
        }
    })
}

/// Every term of a polynomial law has one exponent per mode and a finite coefficient.
fn check_polynomial(dir: &Path, p: &EnergyPolynomial, modes: usize) -> Result<()> {
    for (i, t) in p.terms.iter().enumerate() {
        if t.powers.len() != modes {
            return Err(FormatError::invalid(
                dir,
                format!("internal_force.terms[{i}].powers"),
                format!("one exponent per mode ({modes}), found {}", t.powers.len()),
            ));
        }
        if !t.coefficient.is_finite() {
            return Err(FormatError::invalid(
                dir,
                format!("internal_force.terms[{i}].coefficient"),
                format!("a finite number, found {}", t.coefficient),
            ));
        }
    }
    Ok(())
}

/// Reads the law a manifest entry names (a table is only allowed for one mode).
pub(crate) fn read_internal_force(
    dir: &Path,
    entry: InternalForceEntry,
    modes: usize,
) -> Result<InternalForce> {
    Ok(match entry {
        InternalForceEntry::Linear => InternalForce::Linear,
        InternalForceEntry::Table { interpolation } => {
            check_table_modes(dir, modes)?;
            InternalForce::Table {
                interpolation,
                table: ForceTable::read_csv(&dir.join(FORCE_TABLE_FILE))?,
            }
        }
        InternalForceEntry::Polynomial { terms } => {
            let p = EnergyPolynomial { terms };
            check_polynomial(dir, &p, modes)?;
            InternalForce::Polynomial(p)
        }
    })
}

/// Reads a manifest: first the `schema` field alone (so that a file of another version gets a
/// version error, not a confusing field error), then the whole document. Versions `oldest` to
/// `schema` are read (a newer version's format is a superset of the older ones').
pub(crate) fn read_manifest<T: DeserializeOwned>(
    path: &Path,
    oldest: u64,
    schema: u64,
) -> Result<T> {
    let bytes = std::fs::read(path).map_err(|e| FormatError::io(path, e))?;
    let text = crate::text::utf8_text(bytes).map_err(|e| FormatError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    #[derive(Deserialize)]
    struct Version {
        schema: Option<u64>,
    }
    let parse_error = |e: serde_json::Error| FormatError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let version: Version = serde_json::from_str(&text).map_err(parse_error)?;
    match version.schema {
        None => Err(FormatError::Parse {
            path: path.to_path_buf(),
            message: format!("missing integer field `schema` (expected {schema})"),
        }),
        Some(found) if !(oldest..=schema).contains(&found) => Err(FormatError::SchemaVersion {
            path: path.to_path_buf(),
            found,
            oldest,
            expected: schema,
        }),
        Some(_) => serde_json::from_str(&text).map_err(parse_error),
    }
}

/// Writes a manifest as pretty JSON, atomically.
pub(crate) fn write_manifest<T: Serialize>(path: &Path, manifest: &T) -> Result<()> {
    write_file_atomically(path, |w| {
        serde_json::to_writer_pretty(&mut *w, manifest).map_err(std::io::Error::other)?;
        std::io::Write::write_all(w, b"\n")
    })
}

/// Checks that a square matrix is symmetric to round-off (relative 1e-12 of its largest entry).
pub(crate) fn check_symmetric(path: &Path, field: &str, m: &Array2<f64>) -> Result<()> {
    let scale = m.iter().fold(0.0f64, |a, x| a.max(x.abs()));
    for ((i, j), &v) in m.indexed_iter() {
        if (v - m[[j, i]]).abs() > 1e-12 * scale {
            return Err(FormatError::invalid(
                path,
                field,
                format!(
                    "not symmetric: [{i},{j}] = {v} but [{j},{i}] = {}",
                    m[[j, i]]
                ),
            ));
        }
    }
    Ok(())
}

/// Isotropic linear elastic material of the FEM model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Material {
    /// Young's modulus `E` (stress units).
    pub youngs_modulus: f64,
    /// Poisson's ratio `nu`.
    pub poisson_ratio: f64,
    /// Density `rho` (mass / length^3).
    pub density: f64,
}

impl Material {
    /// Refuses a material no elastic solid has: `E > 0`, `-1 < nu < 1/2`, `rho > 0`, all
    /// finite (the error names `field.<key>` in `path`).
    pub fn check(&self, path: &Path, field: &str) -> Result<()> {
        let invalid = |key: &str, v: f64, expected: &str| {
            FormatError::invalid(
                path,
                format!("{field}.{key}"),
                format!("{expected}, got {v}"),
            )
        };
        if !(self.youngs_modulus.is_finite() && self.youngs_modulus > 0.0) {
            return Err(invalid(
                "youngs_modulus",
                self.youngs_modulus,
                "a modulus > 0",
            ));
        }
        if !(self.poisson_ratio > -1.0 && self.poisson_ratio < 0.5) {
            return Err(invalid(
                "poisson_ratio",
                self.poisson_ratio,
                "a ratio in (-1, 0.5)",
            ));
        }
        if !(self.density.is_finite() && self.density > 0.0) {
            return Err(invalid("density", self.density, "a density > 0"));
        }
        Ok(())
    }
}

/// A residual flexibility's entry in a manifest: its point count and load patches' radius (the
/// matrix and points are `.npy` files).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FlexibilityEntry {
    pub(crate) surface_nodes: usize,
    pub(crate) patch_radius: f64,
}

/// Refuses a patch radius that is not a positive length (`field` of `manifest`).
pub(crate) fn check_patch_radius(manifest: &Path, field: &str, radius: f64) -> Result<()> {
    if radius > 0.0 && radius.is_finite() {
        return Ok(());
    }
    Err(FormatError::invalid(
        manifest,
        field,
        format!("{radius}, not a positive length"),
    ))
}

/// Converts a JSON-friendly nested matrix to an ndarray, checking it is `n x n`.
pub(crate) fn square_matrix(
    path: &Path,
    field: &str,
    rows: &[Vec<f64>],
    n: usize,
) -> Result<Array2<f64>> {
    if rows.len() != n || rows.iter().any(|r| r.len() != n) {
        return Err(FormatError::invalid(
            path,
            field,
            format!("expected a {n} x {n} matrix (one row per mode)"),
        ));
    }
    if rows.iter().flatten().any(|x| !x.is_finite()) {
        return Err(FormatError::invalid(path, field, "non-finite entry"));
    }
    let m = Array2::from_shape_fn((n, n), |(i, j)| rows[i][j]);
    check_symmetric(path, field, &m)?;
    Ok(m)
}

/// The inverse of [`square_matrix`].
pub(crate) fn nested_rows(m: &Array2<f64>) -> Vec<Vec<f64>> {
    m.rows().into_iter().map(|r| r.to_vec()).collect()
}
