//! Text files as the readers take them: UTF-8, and when not, where the first bad byte is. A
//! byte-order mark at the start (Windows editors write one) is dropped: it is not content, and
//! before a deck's first keyword it hid the keyword.

/// Where a file stops being UTF-8 text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: not UTF-8 text (byte 0x{byte:02x})")]
pub struct NotUtf8 {
    /// 1-based line of the first bad byte.
    pub line: usize,
    /// 1-based column (in bytes) of the first bad byte.
    pub column: usize,
    /// The byte.
    pub byte: u8,
}

/// `bytes` as text, or where its first byte that is not UTF-8 is.
pub fn utf8_text(mut bytes: Vec<u8>) -> Result<String, NotUtf8> {
    if bytes.starts_with(BOM) {
        bytes.drain(..BOM.len());
    }
    String::from_utf8(bytes).map_err(|e| locate(e.as_bytes(), e.utf8_error()))
}

/// [`utf8_text`] without taking the bytes.
pub fn utf8_str(bytes: &[u8]) -> Result<&str, NotUtf8> {
    let bytes = bytes.strip_prefix(BOM).unwrap_or(bytes);
    std::str::from_utf8(bytes).map_err(|e| locate(bytes, e))
}

/// The UTF-8 byte-order mark.
const BOM: &[u8] = b"\xef\xbb\xbf";

/// Where the first bad byte is.
fn locate(bytes: &[u8], e: std::str::Utf8Error) -> NotUtf8 {
    let at = e.valid_up_to();
    let (line, column) = line_column(bytes, at);
    NotUtf8 {
        line,
        column,
        byte: bytes[at],
    }
}

/// The 1-based line and column (in bytes) of byte `at` of `bytes`.
pub fn line_column(bytes: &[u8], at: usize) -> (usize, usize) {
    let line_start = bytes[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    (
        1 + bytes[..at].iter().filter(|&&b| b == b'\n').count(),
        1 + at - line_start,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_byte_order_mark_is_dropped() {
        assert_eq!(
            utf8_text(b"\xef\xbb\xbf*Node\n".to_vec()).unwrap(),
            "*Node\n"
        );
        assert_eq!(utf8_str(b"\xef\xbb\xbf*Node\n").unwrap(), "*Node\n");
        // Only at the start.
        assert_eq!(utf8_text(b"a\xef\xbb\xbf".to_vec()).unwrap(), "a\u{feff}");
    }

    #[test]
    fn the_first_bad_byte_is_located() {
        assert_eq!(utf8_text(b"ok\n".to_vec()).unwrap(), "ok\n");
        let e = utf8_text(b"a\nbc\xffd\n".to_vec()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 2, column 3: not UTF-8 text (byte 0xff)"
        );
    }
}
