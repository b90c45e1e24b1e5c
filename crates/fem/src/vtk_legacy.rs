//! Where a legacy `.vtk` file stops parsing. vtkio's legacy reader (nom parsers) reports only a
//! parser's name ("Parse error: Tag"); its parser, called here directly, also returns the input
//! it stopped at, which gives the line and what was expected there.

/// The line, column and text where vtkio's legacy parser stops on `bytes`, or `None` when it
/// does not (the file parses, and vtkio's own error is about something else).
pub fn locate_error(bytes: &[u8]) -> Option<String> {
    let ends_early = "the file ends before the data its counts announce";
    let e = match vtkio::parser::parse_be(bytes) {
        Ok(_) => return None,
        // The parser as a whole reports running out of input at its start.
        Err(nom::Err::Error(e) | nom::Err::Failure(e))
            if e.code == nom::error::ErrorKind::Complete =>
        {
            return Some(ends_early.into());
        }
        Err(nom::Err::Error(e) | nom::Err::Failure(e)) => e,
        Err(nom::Err::Incomplete(_)) => return Some(ends_early.into()),
    };
    let (line, column) = grain::text::line_column(bytes, bytes.len() - e.input.len());
    let found: String = String::from_utf8_lossy(e.input)
        .split(['\n', '\r'])
        .next()
        .unwrap_or("")
        .chars()
        .take(40)
        .collect();
    let expected = match e.code {
        nom::error::ErrorKind::Tag => "a keyword of the format",
        nom::error::ErrorKind::Digit | nom::error::ErrorKind::Float => "a number",
        nom::error::ErrorKind::MapRes => "a number of the array's type",
        nom::error::ErrorKind::Eof => "the end of the file",
        _ => "what the legacy format has here",
    };
    Some(if e.input.is_empty() {
        format!("line {line}: the file ends where the legacy VTK format expects {expected}")
    } else {
        format!(
            "line {line}, column {column}: the legacy VTK format expects {expected}, found `{found}`"
        )
    })
}
