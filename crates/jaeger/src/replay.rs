//! `jaeger replay` (the `cli` feature): reading a movement history and replaying it through the
//! law, in the library so that the command line and the project's fuzz campaign run the same code.

use std::path::Path;

use crate::{ContactForce, ContactParams, JaegerContact, SpringState};

/// The contact law of a replay.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Model {
    /// Jäger's algorithm (exact Cattaneo-Mindlin-Deresiewicz).
    Jaeger,
    /// Hertz with an incremental Mindlin spring capped by Coulomb friction.
    Baseline,
}

/// One row of the input (columns found by name, so their order does not matter).
pub struct Movement {
    /// Its line in the file.
    pub line: u64,
    /// TOTAL normal overlap.
    pub delta: f64,
    /// TOTAL relative tangential displacement, contact frame x.
    pub ux: f64,
    /// The same, y.
    pub uy: f64,
}

/// Why a replay was refused: the input (its path, `-` for standard input), the line where there
/// is one, and what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{input}: {}{message}", line.map_or(String::new(), |l| format!("line {l}: ")))]
pub struct ReplayError {
    /// The input.
    pub input: String,
    /// Its line (1-based, the header is line 1).
    pub line: Option<u64>,
    /// What is wrong.
    pub message: String,
}

/// Reads a movement history (CSV `delta,ux,uy`; `-` for standard input). Every value must be a
/// finite number; the error names the file, the line and the column.
pub fn read_movements(input: &Path) -> Result<Vec<Movement>, ReplayError> {
    let name = input.display().to_string();
    let error = |line: Option<u64>, message: String| ReplayError {
        input: name.clone(),
        line,
        message,
    };
    let reader: Box<dyn std::io::Read> = if name == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(input).map_err(|e| error(None, e.to_string()))?)
    };
    let mut csv = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .comment(Some(b'#'))
        .from_reader(reader);
    // csv's own messages repeat the position in its Debug form; these say line and field.
    let csv_error = |e: csv::Error| match e.kind() {
        csv::ErrorKind::UnequalLengths {
            pos,
            expected_len,
            len,
        } => error(
            pos.as_ref().map(|p| p.line()),
            format!("{len} fields, the header has {expected_len} (expected delta,ux,uy)"),
        ),
        csv::ErrorKind::Utf8 { pos, err } => error(
            pos.as_ref().map(|p| p.line()),
            format!(
                "field {}: not UTF-8 text (at its byte {})",
                err.field() + 1,
                err.valid_up_to() + 1
            ),
        ),
        _ => error(None, e.to_string()),
    };
    let header = csv.headers().map_err(csv_error)?.clone();
    let column = |c: &str| {
        header.iter().position(|h| h == c).ok_or_else(|| {
            error(
                Some(1),
                format!("no column `{c}` (expected header delta,ux,uy)"),
            )
        })
    };
    let (id, ix, iy) = (column("delta")?, column("ux")?, column("uy")?);
    let mut rows = Vec::new();
    for record in csv.records() {
        let record = record.map_err(csv_error)?;
        let line = record.position().map_or(0, |p| p.line());
        let field = |i: usize, c: &str| -> Result<f64, ReplayError> {
            let text = record.get(i).unwrap_or("");
            text.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| {
                    error(
                        Some(line),
                        format!("column `{c}`: `{text}` is not a finite number"),
                    )
                })
        };
        rows.push(Movement {
            line,
            delta: field(id, "delta")?,
            ux: field(ix, "ux")?,
            uy: field(iy, "uy")?,
        });
    }
    Ok(rows)
}

/// The forces of `movements` under `model` as CSV `fn,tx,ty,history_len` (`name`: the input, for
/// messages). A row whose displacement increment or force overflows is refused with its line:
/// no non-finite number is written.
pub fn replay(
    params: &ContactParams,
    model: Model,
    movements: &[Movement],
    name: &str,
) -> Result<String, ReplayError> {
    let mut contact = JaegerContact::new(*params);
    let mut spring = SpringState::default();
    let mut out = String::from("fn,tx,ty,history_len\n");
    let mut previous = movements.first().map_or([0.0; 2], |m| [m.ux, m.uy]);
    for m in movements {
        let du = [m.ux - previous[0], m.uy - previous[1]];
        previous = [m.ux, m.uy];
        // Finite inputs can still overflow (a step of 2e308, a force beyond f64).
        let overflow = |what: String| ReplayError {
            input: name.to_string(),
            line: Some(m.line),
            message: format!("delta {:e}, ux {:e}, uy {:e}: {what}", m.delta, m.ux, m.uy),
        };
        if !du.iter().all(|x| x.is_finite()) {
            return Err(overflow(
                "the displacement since the previous row is not finite: the movement is too large for floating point".into(),
            ));
        }
        let (f, legs): (ContactForce, usize) = match model {
            Model::Jaeger => (contact.step(m.delta, du), contact.history_len()),
            Model::Baseline => (spring.step(params, m.delta, du), 0),
        };
        // The force is N = 4/3 E* sqrt(R*) delta^(3/2) times at most 1 + mu: name both factors,
        // either can be the one out of range.
        if !(f.normal.is_finite() && f.tangential.iter().all(|x| x.is_finite())) {
            return Err(overflow(format!(
                "the force is not finite: 4/3 E* sqrt(R*) = {:e} (from the radii, G and nu) times delta^(3/2) = {:e} overflows floating point",
                4.0 / 3.0 * params.effective_modulus() * params.effective_radius().sqrt(),
                m.delta.powf(1.5)
            )));
        }
        // `{:?}` prints the shortest decimal that reads back to the same f64.
        out.push_str(&format!(
            "{:?},{:?},{:?},{legs}\n",
            f.normal, f.tangential[0], f.tangential[1]
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the fuzz campaign (issue #14): text that is not UTF-8 was reported in csv's Debug
    /// form; now by line and field.
    #[test]
    fn text_that_is_not_utf8_is_located() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("moves.csv");
        for (bytes, expected) in [
            (
                &b"delta,ux,uy\n1e-3,0,0\n1e-3,0\xff,0\n"[..],
                "line 3: field 2: not UTF-8",
            ),
            (&b"delta,u\xffx,uy\n"[..], "line 1: field 2: not UTF-8"),
        ] {
            std::fs::write(&path, bytes).unwrap();
            let e = read_movements(&path).err().unwrap().to_string();
            assert!(e.starts_with(&path.display().to_string()), "{e}");
            assert!(e.contains(expected), "{e}");
        }
    }
}
