//! `.npy` arrays of a bundle: read with the shape the manifest implies, written atomically.

use std::path::Path;

use ndarray::{Array, ArrayD, Dimension};
use ndarray_npy::{ReadableElement, WritableElement, WriteNpyExt};

use crate::atomic::write_file_atomically;
use crate::error::{FormatError, Result};

/// Reads `dir/file` and checks that its shape is `expected` (from the manifest) and, for floats,
/// that every value is finite. `array` is the array's name in error messages.
pub(crate) fn read_array<A, D>(dir: &Path, file: &str, expected: &[usize]) -> Result<Array<A, D>>
where
    A: ReadableElement + Checked,
    D: Dimension,
{
    let path = dir.join(file);
    let array: ArrayD<A> = ndarray_npy::read_npy(&path).map_err(|e| match e {
        ndarray_npy::ReadNpyError::Io(source) => FormatError::Io {
            path: path.clone(),
            source,
        },
        other => FormatError::Npy {
            path: path.clone(),
            message: other.to_string(),
        },
    })?;
    if array.shape() != expected {
        return Err(FormatError::Shape {
            path,
            array: file.trim_end_matches(".npy").to_string(),
            expected: expected.to_vec(),
            found: array.shape().to_vec(),
        });
    }
    if let Some((index, _)) = array.indexed_iter().find(|(_, v)| !v.is_valid()) {
        return Err(FormatError::invalid(
            &path,
            file.trim_end_matches(".npy"),
            format!("{} at index {:?}", A::INVALID, index.slice()),
        ));
    }
    array
        .into_dimensionality::<D>()
        .map_err(|e| FormatError::Npy {
            path,
            message: e.to_string(),
        })
}

/// Writes `array` to `dir/file` as a little-endian, C-ordered `.npy` file.
pub(crate) fn write_array<A, D>(dir: &Path, file: &str, array: &Array<A, D>) -> Result<()>
where
    A: WritableElement + Clone,
    D: Dimension,
{
    let path = dir.join(file);
    write_file_atomically(&path, |w| {
        array
            .as_standard_layout()
            .write_npy(w)
            .map_err(std::io::Error::other)
    })
}

/// Element types whose values are checked on read.
pub(crate) trait Checked {
    /// What an invalid value is called in the error message.
    const INVALID: &'static str;
    /// Whether the value is acceptable.
    fn is_valid(&self) -> bool;
}

impl Checked for f64 {
    const INVALID: &'static str = "non-finite value";
    fn is_valid(&self) -> bool {
        self.is_finite()
    }
}

impl Checked for u64 {
    const INVALID: &'static str = "invalid value";
    fn is_valid(&self) -> bool {
        true
    }
}
