//! Numbers in the text formats' fields, each error naming the file and line.

use std::path::Path;

use crate::error::BakeError;

/// Parses `n` whitespace-separated numbers from `fields`, naming `what` in the error.
pub(crate) fn numbers<'a>(
    path: &Path,
    line: usize,
    what: &str,
    mut fields: impl Iterator<Item = &'a str>,
    n: usize,
) -> Result<Vec<f64>, BakeError> {
    (0..n)
        .map(|i| {
            let field = fields.next().ok_or_else(|| {
                BakeError::parse(
                    path,
                    line,
                    format!("{what}: expected {n} numbers, found {i}"),
                )
            })?;
            field
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| {
                    BakeError::parse(
                        path,
                        line,
                        format!("{what}: `{field}` is not a finite number"),
                    )
                })
        })
        .collect()
}
