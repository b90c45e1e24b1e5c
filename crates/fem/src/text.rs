//! Text input shared by the readers: gunzipped when the name ends in `.gz` (large FEM results are
//! shipped compressed), UTF-8 checked with the line of the first bad byte.

use std::path::Path;

use crate::InputError;

/// The text of `path`.
pub fn read_text(path: &Path) -> Result<String, InputError> {
    let io = |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    };
    let bytes = std::fs::read(path).map_err(io)?;
    let bytes = if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"))
    {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut out)
            .map_err(io)?;
        out
    } else {
        bytes
    };
    grain::text::utf8_text(bytes).map_err(|e| {
        InputError::line(
            path,
            e.line,
            format!(
                "column {}: not UTF-8 text (byte 0x{:02x})",
                e.column, e.byte
            ),
        )
    })
}

/// The extension that tells a file's kind (lower case), looking through a trailing `.gz`.
pub fn kind(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    name.rsplit_once('.')
        .map(|(_, e)| e.to_string())
        .unwrap_or_default()
}

/// What the readers parse numbers into: reals must be finite (Rust parses `NaN` and `inf`,
/// which no FEM input should hold), integers as they are.
pub(crate) trait Number: std::str::FromStr {
    /// Whether the value is acceptable input.
    fn acceptable(&self) -> bool;
}

impl Number for f64 {
    fn acceptable(&self) -> bool {
        self.is_finite()
    }
}

macro_rules! integers {
    ($($t:ty),*) => {$(
        impl Number for $t {
            fn acceptable(&self) -> bool {
                true
            }
        }
    )*};
}
integers!(i64, u64, usize, u32, i32);

/// `s` as a `T`, if it is one and acceptable.
pub(crate) fn number<T: Number>(s: &str) -> Option<T> {
    s.parse::<T>().ok().filter(Number::acceptable)
}
