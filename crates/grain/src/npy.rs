//! `.npy` arrays of a bundle: read with the shape the manifest implies, written atomically.

use std::path::Path;

use ndarray::{Array, ArrayD, Dimension};
use ndarray_npy::{ReadableElement, WritableElement, WriteNpyExt};

use crate::atomic::write_file_atomically;
use crate::error::{FormatError, Result};

/// What a `.npy` file's header declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyHeader {
    /// The numpy type string, e.g. `<f8`.
    pub descr: String,
    /// Bytes per element.
    pub item_size: usize,
    /// The array's shape.
    pub shape: Vec<usize>,
}

/// Reads and checks a `.npy` file's header without reading its data: the magic string, the
/// dictionary's `descr` and `shape`, and that the file holds at least the data the shape declares
/// (so that no reader allocates for a shape the file cannot fill). The error
/// ([`FormatError::Npy`]) names the file and says what is wrong.
pub fn read_npy_header(path: &Path) -> Result<NpyHeader> {
    header(path).map_err(|message| FormatError::Npy {
        path: path.to_path_buf(),
        message,
    })
}

fn header(path: &Path) -> std::result::Result<NpyHeader, String> {
    use std::io::{Read, Seek};
    let mut file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let file_len = file.metadata().map_err(|e| e.to_string())?.len();
    let mut start = Vec::with_capacity(12);
    (&mut file)
        .take(12)
        .read_to_end(&mut start)
        .map_err(|e| e.to_string())?;
    let read = start.len();
    if read < 10 || &start[..6] != b"\x93NUMPY" {
        return Err("not a .npy file (no \\x93NUMPY magic string at its start)".into());
    }
    let (header_len, data_start) = match start[6] {
        1 => (u64::from(u16::from_le_bytes([start[8], start[9]])), 10),
        2 | 3 if read == 12 => (
            u64::from(u32::from_le_bytes([
                start[8], start[9], start[10], start[11],
            ])),
            12,
        ),
        v => return Err(format!("unsupported .npy format version {v}")),
    };
    let data_start = data_start + header_len;
    if data_start > file_len {
        return Err(format!(
            "the header claims {header_len} bytes but the file has {file_len} in all"
        ));
    }
    let mut header = vec![0u8; header_len as usize];
    file.seek(std::io::SeekFrom::Start(data_start - header_len))
        .and_then(|_| file.read_exact(&mut header))
        .map_err(|e| e.to_string())?;
    let header = std::str::from_utf8(&header).map_err(|_| "the header is not text".to_string())?;
    let value = |key: &str| -> std::result::Result<&str, String> {
        let at = header
            .find(&format!("'{key}'"))
            .ok_or_else(|| format!("the header has no '{key}' entry: {}", header.trim()))?;
        let rest = header[at + key.len() + 2..].trim_start();
        Ok(rest.strip_prefix(':').unwrap_or(rest).trim_start())
    };
    let descr = value("descr")?;
    let descr = descr
        .strip_prefix('\'')
        .and_then(|d| d.split('\'').next())
        .ok_or_else(|| format!("'descr' is not a simple type string: {}", header.trim()))?;
    let item_size: usize = descr
        .get(2..)
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("unsupported element type '{descr}'"))?;
    let shape = value("shape")?;
    let shape = shape
        .strip_prefix('(')
        .and_then(|s| s.split(')').next())
        .ok_or_else(|| format!("'shape' is not a tuple: {}", header.trim()))?;
    let shape = shape
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| {
            d.parse::<usize>()
                .map_err(|_| format!("'shape' holds '{d}', not a size"))
        })
        .collect::<std::result::Result<Vec<usize>, String>>()?;
    let needed = shape
        .iter()
        .try_fold(item_size as u64, |n, &d| n.checked_mul(d as u64));
    let available = file_len - data_start;
    match needed {
        Some(n) if n <= available => Ok(NpyHeader {
            descr: descr.to_string(),
            item_size,
            shape,
        }),
        _ => Err(format!(
            "the header declares shape {shape:?} of '{descr}' ({}), but the file holds {available} bytes of data",
            needed.map_or("more than 2^64 bytes".to_string(), |n| format!("{n} bytes"))
        )),
    }
}

/// Reads `dir/file` and checks that its shape is `expected` (from the manifest) and, for floats,
/// that every value is finite. `array` is the array's name in error messages. The header is
/// checked first ([`read_npy_header`]), so a shape that differs from the manifest's or that the
/// file cannot fill is refused before anything is allocated for it.
pub(crate) fn read_array<A, D>(dir: &Path, file: &str, expected: &[usize]) -> Result<Array<A, D>>
where
    A: ReadableElement + Checked,
    D: Dimension,
{
    let path = dir.join(file);
    let header = read_npy_header(&path)?;
    if header.shape != expected {
        return Err(FormatError::Shape {
            path,
            array: file.trim_end_matches(".npy").to_string(),
            expected: expected.to_vec(),
            found: header.shape,
        });
    }
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

/// Writes `array` to `dir/file` as a little-endian, C-ordered `.npy` file; a non-finite value
/// is refused (nothing non-finite is written), naming the array and the index.
pub(crate) fn write_array<A, D>(dir: &Path, file: &str, array: &Array<A, D>) -> Result<()>
where
    A: WritableElement + Clone + Checked,
    D: Dimension,
{
    let path = dir.join(file);
    if let Some(i) = array.iter().position(|v| !v.is_valid()) {
        return Err(FormatError::invalid(
            &path,
            file.trim_end_matches(".npy"),
            format!(
                "{} at flat index {i} (C order) of shape {:?}, not written",
                A::INVALID,
                array.shape()
            ),
        ));
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A `.npy` file with `header` (the dictionary) and `data` bytes.
    fn npy(dir: &Path, header: &str, data: &[u8]) -> std::path::PathBuf {
        let mut dict = header.to_string();
        while !(10 + dict.len() + 1).is_multiple_of(64) {
            dict.push(' ');
        }
        dict.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        bytes.extend_from_slice(dict.as_bytes());
        bytes.extend_from_slice(data);
        let path = dir.join("a.npy");
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn headers_are_read_and_checked_against_the_file_size() {
        let dir = tempfile::tempdir().unwrap();
        let ok = npy(
            dir.path(),
            "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }",
            &[0; 48],
        );
        let h = read_npy_header(&ok).unwrap();
        assert_eq!(
            (h.descr.as_str(), h.item_size, h.shape),
            ("<f8", 8, vec![2, 3])
        );
        // What numpy writes for a 1-D array and for a scalar.
        let one = npy(
            dir.path(),
            "{'descr': '|u1', 'fortran_order': False, 'shape': (5,), }",
            &[0; 5],
        );
        assert_eq!(read_npy_header(&one).unwrap().shape, vec![5]);
        // The two headers that made readers allocate tens of gigabytes or abort.
        for (shape, needed) in [
            ("(3000, 3000, 3000)", "216000000000 bytes"),
            ("(4294967296, 1, 1)", "34359738368 bytes"),
        ] {
            let path = npy(
                dir.path(),
                &format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}, }}"),
                &[0; 64],
            );
            let e = read_npy_header(&path).unwrap_err().to_string();
            assert!(e.contains(needed) && e.contains("holds 64 bytes"), "{e}");
        }
        let huge = npy(
            dir.path(),
            "{'descr': '<f8', 'fortran_order': False, 'shape': (18446744073709551615, 2), }",
            &[],
        );
        assert!(
            read_npy_header(&huge)
                .unwrap_err()
                .to_string()
                .contains("more than 2^64 bytes")
        );
        let truncated = npy(
            dir.path(),
            "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }",
            &[0; 47],
        );
        assert!(
            read_npy_header(&truncated)
                .unwrap_err()
                .to_string()
                .contains("holds 47 bytes")
        );
        std::fs::write(dir.path().join("b.npy"), b"\x93NUMPY\x01\x00\xff\xff{").unwrap();
        let e = read_npy_header(&dir.path().join("b.npy"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("claims 65535 bytes"), "{e}");
        std::fs::write(dir.path().join("c.npy"), b"PK\x03\x04").unwrap();
        assert!(
            read_npy_header(&dir.path().join("c.npy"))
                .unwrap_err()
                .to_string()
                .contains("magic")
        );
        let negative = npy(
            dir.path(),
            "{'descr': '<f8', 'fortran_order': False, 'shape': (-1, 3), }",
            &[],
        );
        assert!(
            read_npy_header(&negative)
                .unwrap_err()
                .to_string()
                .contains("'-1', not a size")
        );
    }
}
