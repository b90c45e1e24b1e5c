//! Volume meshes from VTK unstructured grids (`.vtu`, or legacy `.vtk`), through vtkio; and, for
//! the snapshots after the first, the points and one point array alone, decoded here where the
//! arrays are inline binary ([`read_vtu_points_field`]).

use std::path::Path;

use grain::{ElementType, FemMesh};
use vtkio::model::{Attribute, CellType, DataSet, UnstructuredGridPiece, VertexNumbers, Vtk};

use crate::InputError;
use crate::part::Blocks;

/// One 3-vector per mesh point.
type PointVectors = Vec<[f64; 3]>;

/// The element type of a VTK cell type (VTK and Abaqus share the node order of these).
fn element_type(cell: CellType) -> Option<ElementType> {
    match cell {
        CellType::Tetra => Some(ElementType::Tet4),
        CellType::QuadraticTetra => Some(ElementType::Tet10),
        CellType::Hexahedron => Some(ElementType::Hex8),
        CellType::QuadraticHexahedron => Some(ElementType::Hex20),
        _ => None,
    }
}

/// Reads the first piece of an unstructured grid. Cells of other types are refused, naming the
/// first one.
pub fn read_vtu_mesh(path: &Path) -> Result<FemMesh, InputError> {
    read_vtu(path, None).map(|(mesh, _)| mesh)
}

/// Reads an unstructured grid and the point-data vector named `field` (3 components; a data
/// array, or an array of a legacy FIELD attribute). Raw appended binary data is refused with
/// advice: vtkio cannot read it.
pub fn read_vtu_field(path: &Path, field: &str) -> Result<(FemMesh, Vec<[f64; 3]>), InputError> {
    let (mesh, values) = read_vtu(path, Some(field))?;
    Ok((mesh, values.expect("asked for")))
}

/// The points (`3 n` coordinates, point after point) and the point-data vector `field` of an
/// unstructured grid, leaving its cells undecoded: what a snapshot after the first needs, the
/// mesh being the first one's.
///
/// Why not vtkio alone: it decodes every array of a file, and for a snapshot the cells are most
/// of it (18 MB of connectivity against 2.5 MB of displacement for 100,000 nodes of tets). The
/// common case, an XML `.vtu` in little-endian order whose two arrays are inline `binary` (base64,
/// raw or in zlib or LZ4 blocks: VTK's default and this workspace's writer), is decoded here, those
/// two arrays only. Anything else (ASCII or appended arrays, legacy `.vtk`, a malformed array)
/// goes through [`read_vtu_field`], whose messages say what is wrong. Both paths give the same
/// values, bit for bit (tested).
pub fn read_vtu_points_field(
    path: &Path,
    field: &str,
) -> Result<(Vec<f64>, PointVectors), InputError> {
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("vtu"))
    {
        let bytes = std::fs::read(path).map_err(|source| InputError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        if let Some((points, values)) = inline::points_and_field(&bytes, field) {
            finite(&points, "the points").map_err(|m| InputError::file(path, m))?;
            finite(&values, &format!("array `{field}`")).map_err(|m| InputError::file(path, m))?;
            let values = values.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
            return Ok((points, values));
        }
    }
    let (mesh, values) = read_vtu_field(path, field)?;
    Ok((mesh.nodes.iter().copied().collect(), values))
}

/// Reads a VTK file (XML or legacy) through vtkio, with the checks vtkio 0.7 lacks.
///
/// Before vtkio sees an XML file, it is checked for what vtkio panics on instead of refusing (an
/// inline binary array whose header claims more than it holds, a piece without points or inside
/// another), for what it refuses without saying where (text that is not UTF-8, XML that is not
/// well formed, a count attribute that is not a number, a topology section without its
/// arrays), and for what it silently drops (an inline binary array whose base64, zlib or LZ4
/// data does not decode); ASCII numbers are checked against their type, and no array may appear
/// twice. A legacy file vtkio refuses is located by line (`vtk_legacy`). The error
/// names the file and the array or line. Legacy cell lists are checked by [`vtk_cells`]. Cost:
/// every inline array is decoded once more than vtkio alone would.
pub fn import_vtk(path: &Path) -> Result<Vtk, InputError> {
    let bytes = std::fs::read(path).map_err(|source| InputError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let fail = |message: String| InputError::file(path, message);
    // vtkio's choice: `.vtk` is legacy, any other extension XML.
    let legacy = path.extension().is_some_and(|e| e == "vtk");
    if !legacy {
        inline::check_arrays(&bytes).map_err(fail)?;
    }
    Vtk::import(path).map_err(|e| {
        let found = legacy.then(|| crate::vtk_legacy::locate_error(&bytes));
        fail(
            found
                .flatten()
                .unwrap_or_else(|| format!("cannot read VTK: {}", vtkio_message(&e))),
        )
    })
}

/// vtkio's error in words: its XML errors print their cause in Debug form, whose own Display is
/// used here instead.
fn vtkio_message(e: &vtkio::Error) -> String {
    use vtkio::xml::Error as X;
    match e {
        vtkio::Error::XML(x) => match x {
            X::XML(e) => format!("not well-formed XML: {e}"),
            X::Base64Decode(e) => format!("an array is not base64: {e}"),
            X::Validation(e) => e.to_string(),
            X::Model(e) => e.to_string(),
            X::IO(e) => e.to_string(),
            X::Deserialization(e) => e.to_string(),
            other => other.to_string(),
        },
        other => other.to_string(),
    }
}

/// Refuses a non-finite value of a point array (three components per point), naming the point.
fn finite(values: &[f64], what: &str) -> Result<(), String> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}: point {}, component {} is {}; expected finite numbers",
            i / 3,
            i % 3,
            values[i]
        )),
    }
}

/// The inline-binary decoder of [`read_vtu_points_field`], after the VTK XML format
/// (<https://docs.vtk.org/en/latest/design_documents/VTKFileFormats.html>): an array is base64 of
/// a header of `header_type` integers and the data. Uncompressed, the header is the byte count;
/// compressed, it is `[nb][nu][np][nc_1]...[nc_nb]` (block count, block size, last partial
/// block's size or 0, compressed sizes), encoded apart from the concatenated blocks. Every
/// function answers `None` where the case is not its own, never an error.
mod inline {
    use base64::Engine as _;
    use base64::engine::{GeneralPurpose, general_purpose};
    use quick_xml::events::{BytesStart, Event};

    /// Standard base64 that, like vtkio, accepts nonzero trailing bits: a compressed array's
    /// header is decoded from a prefix of its encoding.
    const BASE64: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        general_purpose::PAD.with_decode_allow_trailing_bits(true),
    );

    #[derive(Clone, Copy, PartialEq)]
    enum Compressor {
        None,
        Zlib,
        Lz4,
    }

    #[derive(Clone, Copy, PartialEq)]
    enum Section {
        Points,
        PointData,
        Other,
    }

    /// How one file encodes its arrays (the `VTKFile` element's attributes).
    #[derive(Clone, Copy)]
    struct Encoding {
        header_bytes: usize,
        compressor: Compressor,
    }

    fn attribute(e: &BytesStart, key: &str) -> Option<String> {
        let a = e.try_get_attribute(key).ok()??;
        a.unescape_value().ok().map(|v| v.into_owned())
    }

    /// How a file encodes its arrays (its `VTKFile` element), if this decoder takes it: little
    /// endian, UInt32 or UInt64 headers, no compressor, zlib or LZ4.
    fn encoding_of(e: &BytesStart) -> Option<Encoding> {
        if attribute(e, "byte_order")? != "LittleEndian" {
            return None;
        }
        let header_bytes = match attribute(e, "header_type").as_deref() {
            None | Some("UInt32") => 4,
            Some("UInt64") => 8,
            Some(_) => return None,
        };
        let compressor = match attribute(e, "compressor").as_deref() {
            None => Compressor::None,
            Some("vtkZLibDataCompressor") => Compressor::Zlib,
            Some("vtkLZ4DataCompressor") => Compressor::Lz4,
            Some(_) => return None,
        };
        Some(Encoding {
            header_bytes,
            compressor,
        })
    }

    /// The points and the 3-component point array `field` of the first piece.
    pub(super) fn points_and_field(xml: &[u8], field: &str) -> Option<(Vec<f64>, Vec<f64>)> {
        let mut reader = quick_xml::Reader::from_reader(xml);
        let mut encoding = None;
        let mut section = Section::Other;
        // The array whose text comes next, if wanted: (is the points array, is Float32).
        let mut wanted: Option<(bool, bool)> = None;
        let (mut points, mut values) = (None, None);
        while points.is_none() || values.is_none() {
            match reader.read_event().ok()? {
                Event::Start(e) => match e.name().as_ref() {
                    b"VTKFile" => {
                        if attribute(&e, "type")? != "UnstructuredGrid" {
                            return None;
                        }
                        encoding = Some(encoding_of(&e)?);
                    }
                    b"Points" => section = Section::Points,
                    b"PointData" => section = Section::PointData,
                    b"DataArray" => {
                        let is_points = section == Section::Points && points.is_none();
                        let is_field = section == Section::PointData
                            && attribute(&e, "Name").as_deref() == Some(field);
                        if is_points || is_field {
                            if attribute(&e, "format")? != "binary"
                                || attribute(&e, "NumberOfComponents")? != "3"
                            {
                                return None;
                            }
                            let float32 = match attribute(&e, "type")?.as_str() {
                                "Float32" => true,
                                "Float64" => false,
                                _ => return None,
                            };
                            wanted = Some((is_points, float32));
                        }
                    }
                    _ => {}
                },
                Event::Text(text) => {
                    if let Some((is_points, float32)) = wanted.take() {
                        let data = decode(text.trim_ascii(), encoding?, float32)?;
                        if is_points {
                            points = Some(data);
                        } else {
                            values = Some(data);
                        }
                    }
                }
                Event::End(e) => match e.name().as_ref() {
                    b"Points" | b"PointData" => section = Section::Other,
                    // The first piece is the grid (as for vtkio's reader).
                    b"Piece" => return None,
                    _ => wanted = None,
                },
                Event::Eof => return None,
                _ => {}
            }
        }
        let (points, values) = (points?, values?);
        (points.len() == values.len() && points.len() % 3 == 0).then_some((points, values))
    }

    /// Characters of the base64 encoding of `bytes` bytes.
    fn base64_len(bytes: usize) -> usize {
        bytes.div_ceil(3) * 4
    }

    /// The header integers at the front of `bytes`.
    fn integers(bytes: &[u8], size: usize) -> impl Iterator<Item = usize> + '_ {
        bytes.chunks_exact(size).map(move |c| {
            let mut b = [0u8; 8];
            b[..size].copy_from_slice(c);
            u64::from_le_bytes(b) as usize
        })
    }

    /// Where an inline binary array's bytes are, from its header, checked against its text
    /// without allocating for what the header claims.
    enum Layout {
        /// Uncompressed: the whole decoded text, `count` bytes after the header.
        Plain { count: usize },
        /// Compressed blocks: sizes in and out, the data's start in the text.
        Blocks {
            block_size: usize,
            total: usize,
            compressed: Vec<usize>,
            start: usize,
        },
    }

    /// The layout of an array's base64 `text`, or what is wrong with it.
    fn layout(text: &[u8], encoding: Encoding) -> Result<Layout, String> {
        let h = encoding.header_bytes;
        let short = |what: &str, claimed: usize| {
            format!(
                "its header claims {what} of {claimed} bytes, but the array's text holds {} bytes of base64",
                text.len()
            )
        };
        if encoding.compressor == Compressor::None {
            let head = BASE64
                .decode(text.get(..base64_len(h)).ok_or("no header")?)
                .map_err(|e| format!("not base64: {e}"))?;
            let count = integers(&head[..h.min(head.len())], h)
                .next()
                .ok_or("no header")?;
            let needed = count.checked_add(h).map(base64_len);
            if needed.is_none_or(|n| n > text.len()) {
                return Err(short("data", count));
            }
            return Ok(Layout::Plain { count });
        }
        let first = BASE64
            .decode(text.get(..base64_len(h)).ok_or("no header")?)
            .map_err(|e| format!("its header is not base64: {e}"))?;
        let blocks = integers(&first, h).next().ok_or("no header")?;
        let header_len = blocks
            .checked_add(3)
            .and_then(|n| n.checked_mul(h))
            .filter(|&n| base64_len(n) <= text.len())
            .ok_or_else(|| {
                format!("its header claims {blocks} compressed blocks, more than its text holds")
            })?;
        let header = BASE64
            .decode(&text[..base64_len(header_len)])
            .map_err(|e| format!("its header is not base64: {e}"))?;
        let header = header
            .get(..header_len)
            .ok_or("its header is shorter than its block count says")?;
        let mut header = integers(header, h).skip(1);
        let (block_size, last_size) = (header.next().unwrap_or(0), header.next().unwrap_or(0));
        let compressed: Vec<usize> = header.collect();
        let sum = compressed
            .iter()
            .try_fold(0usize, |a, &b| a.checked_add(b))
            .unwrap_or(usize::MAX);
        let start = base64_len(header_len);
        if base64_len(sum) > text.len() - start {
            return Err(short("compressed data", sum));
        }
        let total = match last_size {
            0 => block_size.checked_mul(blocks),
            _ => blocks
                .checked_sub(1)
                .and_then(|b| block_size.checked_mul(b))
                .and_then(|n| n.checked_add(last_size)),
        };
        // No compressor VTK uses expands data more than about 1032 times (zlib's limit).
        match total {
            Some(t) if t <= sum.saturating_mul(1100).saturating_add(1 << 16) => {
                Ok(Layout::Blocks {
                    block_size,
                    total: t,
                    compressed,
                    start,
                })
            }
            _ => Err(format!(
                "its header claims {blocks} blocks of {block_size} bytes from {sum} compressed bytes, more than any compression gives"
            )),
        }
    }

    /// Checks an XML VTK file as [`super::import_vtk`] says: its text, its structure, and every
    /// array, decoded. The error names the array. Arrays of an encoding this decoder does not
    /// take (another byte order or compressor) are left to vtkio.
    pub(super) fn check_arrays(xml: &[u8]) -> Result<(), String> {
        let text_end = xml
            .windows(b"<AppendedData".len())
            .position(|w| w == b"<AppendedData")
            .unwrap_or(xml.len());
        // vtkio would misread raw appended data.
        let appended = xml[text_end..].split(|&b| b == b'>').next().unwrap_or(&[]);
        if appended.windows(14).any(|w| w == b"encoding=\"raw\"") {
            return Err("raw appended binary data cannot be read; save the file with \"Encode appended data\" (ParaView) or as ASCII/inline binary".into());
        }
        grain::text::utf8_str(&xml[..text_end]).map_err(|e| e.to_string())?;
        let mut reader = quick_xml::Reader::from_reader(xml);
        // The open elements, to name one left open at the end.
        let mut open: Vec<String> = Vec::new();
        let mut encoding = None;
        let mut section = String::new();
        // The array whose text comes next: its name, type, format and the value count the
        // piece implies (with what it is).
        let mut array: Option<Pending> = None;
        // The arrays of the current piece, by section and name; whether it has points; its
        // point and cell counts.
        let mut seen = std::collections::HashSet::new();
        let (mut pieces, mut has_points, mut in_piece) = (0, false, false);
        let (mut points, mut cells) = (None, None);
        loop {
            let event = reader.read_event().map_err(|e| {
                format!(
                    "not well-formed XML at byte {}: {e}",
                    reader.buffer_position()
                )
            })?;
            if let Event::Start(e) | Event::Empty(e) = &event {
                let element = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                for a in e.attributes() {
                    let a = a.map_err(|bad| {
                        format!(
                            "not well-formed XML at byte {}: {bad}",
                            reader.buffer_position()
                        )
                    })?;
                    // Counts vtkio parses (it reports a bad one without saying which).
                    let key = String::from_utf8_lossy(a.key.as_ref());
                    let count = key.starts_with("NumberOf") || key == "offset";
                    if count
                        && std::str::from_utf8(&a.value)
                            .map_or(true, |v| v.trim().parse::<u32>().is_err())
                    {
                        return Err(format!(
                            "`{element}` has {key}=\"{}\", expected a count",
                            String::from_utf8_lossy(&a.value)
                        ));
                    }
                }
                if matches!(event, Event::Start(_)) {
                    open.push(element);
                }
            }
            match event {
                Event::Start(e) => match e.name().as_ref() {
                    // Binary arrays of an encoding this decoder does not take are left to
                    // vtkio; the structure is checked all the same.
                    b"VTKFile" => encoding = encoding_of(&e),
                    b"DataArray" => {
                        let name = attribute(&e, "Name").unwrap_or_else(|| section.clone());
                        for key in ["type", "format"] {
                            if attribute(&e, key).is_none() {
                                return Err(format!("array `{name}` has no `{key}` attribute"));
                            }
                        }
                        if !seen.insert((section.clone(), name.clone())) {
                            return Err(format!("array `{name}` appears twice in `{section}`"));
                        }
                        let components: usize = attribute(&e, "NumberOfComponents")
                            .and_then(|c| c.trim().parse().ok())
                            .unwrap_or(1);
                        let per = |n: Option<usize>, of: &str| {
                            n.and_then(|n| {
                                Some((
                                    n.checked_mul(components)?,
                                    format!("{n} {of} x {components} components"),
                                ))
                            })
                        };
                        let expected = match (section.as_str(), name.as_str()) {
                            ("Points" | "PointData", _) => per(points, "points"),
                            ("CellData", _) | ("Cells" | "Polys", "offsets" | "types") => {
                                per(cells, "cells")
                            }
                            _ => None,
                        };
                        array = Some(Pending {
                            name,
                            kind: attribute(&e, "type").unwrap_or_default(),
                            format: attribute(&e, "format").unwrap_or_default(),
                            expected,
                        });
                    }
                    b"Piece" => {
                        if in_piece {
                            return Err(format!("a piece inside piece {pieces}"));
                        }
                        in_piece = true;
                        seen.clear();
                        has_points = false;
                        let count =
                            |key: &str| attribute(&e, key).and_then(|c| c.trim().parse().ok());
                        points = count("NumberOfPoints");
                        cells = count("NumberOfCells").or_else(|| count("NumberOfPolys"));
                    }
                    b"Points" => {
                        has_points = true;
                        section = "Points".into();
                    }
                    other => section = String::from_utf8_lossy(other).into_owned(),
                },
                Event::Text(text) => {
                    let Some(Pending {
                        name,
                        kind,
                        format,
                        expected,
                    }) = array.take()
                    else {
                        continue;
                    };
                    let text = text.trim_ascii();
                    let what = |m: String| format!("array `{name}` ({kind}, {format}): {m}");
                    let count = match format.as_str() {
                        "binary" => match encoding {
                            Some(encoding) => {
                                let bytes = match layout(text, encoding).map_err(what)? {
                                    Layout::Plain { count } => count,
                                    Layout::Blocks { total, .. } => total,
                                };
                                decode_bytes(text, encoding).map_err(what)?;
                                type_size(&kind).map(|size| bytes / size)
                            }
                            None => None,
                        },
                        "ascii" => {
                            check_ascii(text, &kind).map_err(what)?;
                            Some(
                                text.split(u8::is_ascii_whitespace)
                                    .filter(|t| !t.is_empty())
                                    .count(),
                            )
                        }
                        _ => None,
                    };
                    if let (Some(n), Some((e, of))) = (count, expected) {
                        // Offsets may carry a leading zero.
                        let fits = n == e || (name == "offsets" && n == e + 1);
                        if !fits {
                            return Err(what(format!(
                                "holds {n} values, the piece's {of} make {e}"
                            )));
                        }
                    }
                }
                Event::End(e) => {
                    array = None;
                    open.pop();
                    let topology = matches!(
                        e.name().as_ref(),
                        b"Cells" | b"Verts" | b"Lines" | b"Strips" | b"Polys"
                    );
                    if topology {
                        for needed in ["connectivity", "offsets"] {
                            if !seen.contains(&(section.clone(), needed.to_string())) {
                                return Err(format!("`{section}` has no array `{needed}`"));
                            }
                        }
                    }
                    if e.name().as_ref() == b"Piece" {
                        if !has_points {
                            return Err(format!("piece {pieces} has no `Points`"));
                        }
                        in_piece = false;
                        pieces += 1;
                    }
                }
                Event::Eof => {
                    return match open.last() {
                        Some(name) => Err(format!(
                            "not well-formed XML: `<{name}>` is not closed before the end of the file"
                        )),
                        None => Ok(()),
                    };
                }
                _ => {}
            }
        }
    }

    /// A `DataArray` whose text comes next.
    struct Pending {
        name: String,
        /// Its VTK type.
        kind: String,
        format: String,
        /// The value count its piece implies, and what makes it.
        expected: Option<(usize, String)>,
    }

    /// Bytes per value of a VTK data type.
    fn type_size(kind: &str) -> Option<usize> {
        Some(match kind {
            "Int8" | "UInt8" => 1,
            "Int16" | "UInt16" => 2,
            "Int32" | "UInt32" | "Float32" => 4,
            "Int64" | "UInt64" | "Float64" => 8,
            _ => return None,
        })
    }

    /// Every value of an ASCII integer array within its type's range, of a floating-point array
    /// a number.
    fn check_ascii(text: &[u8], kind: &str) -> Result<(), String> {
        let tokens = || {
            text.split(u8::is_ascii_whitespace)
                .filter(|t| !t.is_empty())
                .map(String::from_utf8_lossy)
                .enumerate()
        };
        if matches!(kind, "Float32" | "Float64") {
            if let Some((i, token)) = tokens().find(|(_, t)| t.parse::<f64>().is_err()) {
                return Err(format!("value {i} is `{token}`, not a number"));
            }
            return Ok(());
        }
        let range: (i128, i128) = match kind {
            "Int8" => (i8::MIN.into(), i8::MAX.into()),
            "UInt8" => (0, u8::MAX.into()),
            "Int16" => (i16::MIN.into(), i16::MAX.into()),
            "UInt16" => (0, u16::MAX.into()),
            "Int32" => (i32::MIN.into(), i32::MAX.into()),
            "UInt32" => (0, u32::MAX.into()),
            "Int64" => (i64::MIN.into(), i64::MAX.into()),
            "UInt64" => (0, u64::MAX.into()),
            _ => return Ok(()),
        };
        for (i, token) in tokens() {
            match token.parse::<i128>() {
                Ok(v) if (range.0..=range.1).contains(&v) => {}
                _ => {
                    return Err(format!(
                        "value {i} is `{token}`, not an integer in [{}, {}]",
                        range.0, range.1
                    ));
                }
            }
        }
        Ok(())
    }

    /// One array's values from its base64 text.
    fn decode(text: &[u8], encoding: Encoding, float32: bool) -> Option<Vec<f64>> {
        let bytes = decode_bytes(text, encoding).ok()?;
        Some(if float32 {
            bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")) as f64)
                .collect()
        } else {
            bytes
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect()
        })
    }

    /// One array's bytes from its base64 text, or what is wrong with them.
    fn decode_bytes(text: &[u8], encoding: Encoding) -> Result<Vec<u8>, String> {
        let not_base64 = |e: base64::DecodeError| format!("its data is not base64: {e}");
        Ok(match layout(text, encoding)? {
            Layout::Plain { count } => {
                let h = encoding.header_bytes;
                let mut all = BASE64.decode(text).map_err(not_base64)?;
                all.drain(..h.min(all.len()));
                if all.len() < count {
                    return Err(format!(
                        "its header claims {count} bytes, its data holds {}",
                        all.len()
                    ));
                }
                all.truncate(count);
                all
            }
            Layout::Blocks {
                block_size,
                total,
                compressed,
                start,
            } => {
                let end = start + base64_len(compressed.iter().sum());
                let data = BASE64
                    .decode(text.get(start..end).ok_or("its data is cut short")?)
                    .map_err(not_base64)?;
                let mut out = vec![0u8; total];
                let mut from = 0;
                for (i, (block, chunk)) in compressed
                    .iter()
                    .zip(out.chunks_mut(block_size.max(1)))
                    .enumerate()
                {
                    let bad = |why: String| format!("compressed block {i}: {why}");
                    let input = data
                        .get(from..from + block)
                        .ok_or_else(|| bad("cut short".into()))?;
                    from += block;
                    let written = match encoding.compressor {
                        Compressor::Lz4 => lz4_flex::block::decompress_into(input, chunk)
                            .map_err(|e| bad(format!("not LZ4 data ({e})")))?,
                        _ => {
                            let mut z = flate2::read::ZlibDecoder::new(input);
                            std::io::Read::read_exact(&mut z, chunk)
                                .map_err(|e| bad(format!("not zlib data ({e})")))?;
                            chunk.len()
                        }
                    };
                    if written != chunk.len() {
                        return Err(bad(format!(
                            "holds {written} bytes, the header says {}",
                            chunk.len()
                        )));
                    }
                }
                out
            }
        })
    }
}

fn read_vtu(
    path: &Path,
    field: Option<&str>,
) -> Result<(FemMesh, Option<PointVectors>), InputError> {
    let fail = |message: String| InputError::file(path, message);
    let vtk = import_vtk(path)?;
    let piece: UnstructuredGridPiece = match vtk.data {
        DataSet::UnstructuredGrid { pieces, .. } => pieces
            .into_iter()
            .next()
            .ok_or_else(|| fail("unstructured grid without pieces".into()))?
            .into_loaded_piece_data(path.parent())
            .map_err(|e| fail(format!("cannot load piece: {e}")))?,
        _ => return Err(fail("expected an unstructured grid (a volume mesh)".into())),
    };
    let coords: Vec<f64> = piece
        .points
        .cast_into()
        .ok_or_else(|| fail("point coordinates are not numbers".into()))?;
    finite(&coords, "the points").map_err(fail)?;
    let n = coords.len() / 3;
    let cells = vtk_cells(path, piece.cells.cell_verts)?;
    if cells.len() != piece.cells.types.len() {
        return Err(fail(format!(
            "{} cells for {} cell types in array `types`",
            cells.len(),
            piece.cells.types.len()
        )));
    }
    let mut blocks = Blocks::default();
    for (cell, (ids, &kind)) in cells.iter().zip(&piece.cells.types).enumerate() {
        let t = element_type(kind)
            .ok_or_else(|| fail(format!("cell {cell} has VTK type {kind:?}; supported: tetra, quadratic tetra, hexahedron, quadratic hexahedron")))?;
        if ids.len() != t.node_count() || ids.iter().any(|&i| i as usize >= n) {
            return Err(fail(format!(
                "cell {cell} has bad connectivity {ids:?} for {} points",
                n
            )));
        }
        blocks.push(t, ids);
    }
    if blocks.is_empty() {
        return Err(fail("no cells".into()));
    }
    let values = match field {
        None => None,
        Some(name) => {
            let values = point_vectors(&piece.data.point, name, n).map_err(fail)?;
            finite(values.as_flattened(), &format!("array `{name}`")).map_err(fail)?;
            Some(values)
        }
    };
    let mut coords = coords;
    coords.truncate(3 * n);
    let mesh = blocks.into_mesh(coords);
    Ok((mesh, values))
}

/// The cells of a VTK vertex list, each its point indices, checked on the way: a legacy list
/// (`n i_1 ... i_n` per cell) must hold exactly its cell count of non-empty cells (vtkio's own
/// conversion asserts, and underflows on a count larger than the list); XML offsets (a leading
/// zero allowed) must be in order and within the connectivity. The error names the file
/// `path` and says what is wrong.
pub fn vtk_cells(path: &Path, numbers: VertexNumbers) -> Result<Vec<Vec<u64>>, InputError> {
    cells(numbers).map_err(|message| InputError::file(path, message))
}

fn cells(numbers: VertexNumbers) -> Result<Vec<Vec<u64>>, String> {
    match numbers {
        VertexNumbers::Legacy {
            num_cells,
            vertices,
        } => {
            let mut cells = Vec::new();
            let mut k = 0;
            while k < vertices.len() {
                let count = vertices[k] as usize;
                let ids = vertices
                    .get(k + 1..k + 1 + count)
                    .filter(|_| count > 0)
                    .ok_or_else(|| {
                        format!(
                            "CELLS: cell {} has {count} points, and {} values remain in the list",
                            cells.len(),
                            vertices.len() - k - 1
                        )
                    })?;
                cells.push(ids.iter().map(|&i| u64::from(i)).collect());
                k += 1 + count;
            }
            if cells.len() != num_cells as usize {
                return Err(format!(
                    "CELLS: the header says {num_cells} cells, the list holds {}",
                    cells.len()
                ));
            }
            Ok(cells)
        }
        VertexNumbers::XML {
            connectivity,
            offsets,
        } => {
            let ends = match offsets.first() {
                Some(0) => &offsets[1..],
                _ => &offsets[..],
            };
            let mut start = 0usize;
            ends.iter()
                .enumerate()
                .map(|(cell, &end)| {
                    let end = usize::try_from(end)
                        .ok()
                        .filter(|&e| e >= start && e <= connectivity.len())
                        .ok_or_else(|| {
                            format!(
                                "array `offsets`: cell {cell} ends at {end}, expected between the previous cell's end {start} and the connectivity's length {}",
                                connectivity.len()
                            )
                        })?;
                    let ids = connectivity[start..end].to_vec();
                    start = end;
                    Ok(ids)
                })
                .collect()
        }
    }
}

/// The point vectors named `name`, from a data array or a FIELD attribute's arrays.
fn point_vectors(attributes: &[Attribute], name: &str, n: usize) -> Result<Vec<[f64; 3]>, String> {
    let mut names = Vec::new();
    let mut found: Option<(u32, &vtkio::model::IOBuffer)> = None;
    for a in attributes {
        match a {
            Attribute::DataArray(d) => {
                names.push(d.name.clone());
                if d.name == name {
                    found = Some((d.elem.num_comp(), &d.data));
                }
            }
            Attribute::Field { data_array, .. } => {
                for f in data_array {
                    names.push(f.name.clone());
                    if f.name == name {
                        found = Some((f.elem, &f.data));
                    }
                }
            }
        }
    }
    let (components, data) = found
        .ok_or_else(|| format!("no point data `{name}` (point data: {})", names.join(", ")))?;
    if components != 3 {
        return Err(format!(
            "point data `{name}` has {components} components, expected 3"
        ));
    }
    let values: Vec<f64> = data
        .cast_into()
        .ok_or_else(|| format!("point data `{name}` is not numeric"))?;
    if values.len() != 3 * n {
        return Err(format!(
            "point data `{name}` has {} values for {n} points",
            values.len()
        ));
    }
    Ok(values.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use std::path::PathBuf;
    use vtkio::model::{IOBuffer, Piece};
    use vtkio::xml::Compressor;

    /// A Tet10 box of 4,913 nodes: its points and a 3-vector field span several 32 KiB
    /// compression blocks, the last one partial.
    fn snapshot(dir: &Path) -> PathBuf {
        let mesh = crate::box_mesh(ElementType::Tet10, [0.0; 3], [1.0, 2.0, 3.0], [8, 8, 8]);
        let u: Vec<f64> = mesh
            .nodes
            .iter()
            .enumerate()
            .map(|(i, x)| (x * 1.7 + i as f64).sin() * 1e-3)
            .collect();
        let path = dir.join("lz4.vtu");
        grain::vtk::write_vtu(&path, &mesh, &[grain::vtk::PointData::Vectors("U", &u)]).unwrap();
        path
    }

    /// The file at `from` written again by vtkio with `compressor`, its points as Float32 if asked.
    fn reencode(from: &Path, to: &Path, compressor: Compressor, float32: bool) {
        let mut vtk = Vtk::import(from).unwrap();
        if float32 {
            let DataSet::UnstructuredGrid { pieces, .. } = &mut vtk.data else {
                unreachable!("an unstructured grid")
            };
            let Piece::Inline(piece) = &mut pieces[0] else {
                unreachable!("inline data")
            };
            let p: Vec<f64> = piece.points.cast_into().unwrap();
            piece.points = IOBuffer::F32(p.iter().map(|&x| x as f32).collect());
        }
        let mut bytes = Vec::new();
        vtk.try_into_xml_format(compressor, 6)
            .unwrap()
            .write(&mut bytes)
            .unwrap();
        std::fs::write(to, bytes).unwrap();
    }

    /// The decoder here against vtkio's reading of the same file, bit for bit.
    fn assert_decoded_as_vtkio(path: &Path) {
        let bytes = std::fs::read(path).unwrap();
        let (points, values) = inline::points_and_field(&bytes, "U")
            .unwrap_or_else(|| panic!("{} not decoded inline", path.display()));
        let (mesh, field) = read_vtu_field(path, "U").unwrap();
        let reference: Vec<f64> = mesh.nodes.iter().copied().collect();
        assert_eq!(points, reference, "{}", path.display());
        assert_eq!(values, field.concat(), "{}", path.display());
        assert_eq!(
            read_vtu_points_field(path, "U").unwrap(),
            (reference, field)
        );
    }

    #[test]
    fn inline_arrays_decode_as_vtkio_reads_them() {
        let dir = tempfile::tempdir().unwrap();
        let lz4 = snapshot(dir.path());
        assert_decoded_as_vtkio(&lz4);
        for (name, compressor, float32) in [
            ("zlib.vtu", Compressor::ZLib, false),
            ("raw.vtu", Compressor::None, false),
            ("f32.vtu", Compressor::LZ4, true),
        ] {
            let path = dir.path().join(name);
            reencode(&lz4, &path, compressor, float32);
            assert_decoded_as_vtkio(&path);
        }
    }

    const POINTS: [f64; 12] = [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0];
    const U: [f64; 12] = [
        0.1, -0.2, 0.3, 4e-5, 5e-6, -6e-7, 7.0, 8.0, 9.0, -1.0, -2.0, -3.0,
    ];

    /// One tetra whose `U` and points arrays are given (as `format="..."` and their text), with
    /// UInt32 headers, which vtkio never writes.
    fn tetra_vtu(u: (&str, &str), points: (&str, &str)) -> String {
        format!(
            r#"<?xml version="1.0"?>
<VTKFile type="UnstructuredGrid" version="1.0" byte_order="LittleEndian" header_type="UInt32">
<UnstructuredGrid><Piece NumberOfPoints="4" NumberOfCells="1">
<PointData><DataArray type="Float64" Name="U" NumberOfComponents="3" format="{}">
{}
</DataArray></PointData>
<Points><DataArray type="Float64" NumberOfComponents="3" format="{}">{}</DataArray></Points>
<Cells>
<DataArray type="Int64" Name="connectivity" format="ascii">0 1 2 3</DataArray>
<DataArray type="Int64" Name="offsets" format="ascii">4</DataArray>
<DataArray type="UInt8" Name="types" format="ascii">10</DataArray>
</Cells></Piece></UnstructuredGrid></VTKFile>"#,
            u.0, u.1, points.0, points.1
        )
    }

    /// Base64 of a UInt32 byte count and the values, in one run, encoded here by hand.
    fn base64_uint32(v: &[f64]) -> String {
        let mut bytes = ((8 * v.len()) as u32).to_le_bytes().to_vec();
        bytes.extend(v.iter().flat_map(|x| x.to_le_bytes()));
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn uint32_headers_decode() {
        let xml = tetra_vtu(
            ("binary", &base64_uint32(&U)),
            ("binary", &base64_uint32(&POINTS)),
        );
        let (p, v) = inline::points_and_field(xml.as_bytes(), "U").unwrap();
        assert_eq!((p.as_slice(), v.as_slice()), (&POINTS[..], &U[..]));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("u32.vtu");
        std::fs::write(&path, &xml).unwrap();
        assert_decoded_as_vtkio(&path);
    }

    /// Found by mutating inputs (issue #14): arrays that made vtkio 0.7 panic (a compressed
    /// header claiming more than the array holds, an array cut short), ASCII values out of their
    /// type's range, offsets out of order or past the connectivity, a duplicated array. Each is
    /// refused with the file and the array named.
    #[test]
    fn malformed_arrays_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let text = std::fs::read_to_string(snapshot(dir.path())).unwrap();
        let start = text.find(r#"Name="U""#).unwrap();
        let body = start + text[start..].find('>').unwrap() + 1;
        let end = start + text[start..].find("</DataArray>").unwrap();
        let array = text[body..end].trim();
        // The LZ4 header of U (UInt64 integers): [blocks][block size][last size][compressed
        // sizes...], base64 apart from the data; the last compressed size made 2^40.
        let std64 = base64::engine::general_purpose::STANDARD;
        let first = std64.decode(&array[..12]).unwrap();
        let blocks = u64::from_le_bytes(first[..8].try_into().unwrap()) as usize;
        let header_len = (8 * (3 + blocks)).div_ceil(3) * 4;
        let mut claims = std64.decode(&array[..header_len]).unwrap();
        let last = claims.len() - 8;
        claims[last..].copy_from_slice(&(1u64 << 40).to_le_bytes());
        let inflated = format!(
            "{}{}{}",
            &text[..body],
            std64.encode(&claims) + &array[header_len..],
            &text[end..]
        );
        let cut = format!(
            "{}{}{}",
            &text[..body],
            &array[..array.len() / 2],
            &text[end..]
        );
        // Found by the fuzz campaign: four characters short, within a slack the first check
        // allowed.
        let short = format!(
            "{}{}{}",
            &text[..body],
            &array[..array.len() - 4],
            &text[end..]
        );
        let tetra = tetra_vtu(
            ("binary", &base64_uint32(&U)),
            ("binary", &base64_uint32(&POINTS)),
        );
        let cases = [
            ("inflated.vtu", inflated, "array `U` (Float64, binary): its header claims compressed data of"),
            ("cut.vtu", cut, "array `U` (Float64, binary): its header claims compressed data of"),
            ("short.vtu", short, "array `U` (Float64, binary): its header claims compressed data of"),
            (
                "types.vtu",
                tetra.replace(">10<", ">4294967296<"),
                "array `types` (UInt8, ascii): value 0 is `4294967296`, not an integer in [0, 255]",
            ),
            (
                "offsets.vtu",
                tetra
                    .replace("NumberOfCells=\"1\"", "NumberOfCells=\"2\"")
                    .replace(">0 1 2 3<", ">0 1 2 3 0 1 2 3<")
                    .replace(r#"format="ascii">4<"#, r#"format="ascii">9 8<"#)
                    .replace(">10<", ">10 10<"),
                "array `offsets`: cell 0 ends at 9, expected between the previous cell's end 0 and the connectivity's length 8",
            ),
            (
                "count.vtu",
                tetra.replace(">10<", ">10 10<"),
                "array `types` (UInt8, ascii): holds 2 values, the piece's 1 cells x 1 components make 1",
            ),
            (
                "twice.vtu",
                tetra.replace("<Cells>\n", "<Cells>\n<DataArray type=\"Int64\" Name=\"offsets\" format=\"ascii\">4</DataArray>\n"),
                "array `offsets` appears twice in `Cells`",
            ),
        ];
        for (name, xml, wanted) in cases {
            let path = dir.path().join(name);
            std::fs::write(&path, xml).unwrap();
            let e = read_vtu_mesh(&path).unwrap_err().to_string();
            assert!(e.contains(name) && e.contains(wanted), "{e}");
            // A later snapshot's reader takes the points and U only: the cells' faults are
            // the first snapshot's (the mesh) to find.
            if wanted.contains("array `U`") {
                let e = read_vtu_points_field(&path, "U").unwrap_err().to_string();
                assert!(e.contains(name) && e.contains(wanted), "{e}");
            }
        }
    }

    /// Found by mutating inputs (issue #14): a NaN decoded from a binary array went on into
    /// the modes ("reconstruction error NaN"). Refused, naming the array and the point, by both
    /// readers.
    #[test]
    fn non_finite_values_are_refused_with_their_point() {
        let dir = tempfile::tempdir().unwrap();
        let mut u = U;
        u[7] = f64::NAN;
        let xml = tetra_vtu(
            ("binary", &base64_uint32(&u)),
            ("binary", &base64_uint32(&POINTS)),
        );
        let path = dir.path().join("nan.vtu");
        std::fs::write(&path, &xml).unwrap();
        let wanted = "nan.vtu: array `U`: point 2, component 1 is NaN; expected finite numbers";
        let e = read_vtu_points_field(&path, "U").unwrap_err().to_string();
        assert!(e.contains(wanted), "{e}");
        let e = read_vtu_field(&path, "U").unwrap_err().to_string();
        assert!(e.contains(wanted), "{e}");
    }

    /// Found by the fuzz campaign (issue #14): legacy cell lists that made vtkio's conversion
    /// assert (a cell of 0 points) or underflow into a capacity overflow (more cells in the header
    /// than the list holds). Refused, saying what is wrong.
    #[test]
    fn malformed_legacy_cell_lists_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let legacy = "# vtk DataFile Version 3.0\nt\nASCII\nDATASET UNSTRUCTURED_GRID\nPOINTS 4 double\n0 0 0\n1 0 0\n0 1 0\n0 0 1\nCELLS 1 5\n4 0 1 2 3\nCELL_TYPES 1\n10\n";
        for (name, text, wanted) in [
            (
                "zero.vtk",
                legacy.replace("4 0 1 2 3", "0 0 1 2 3"),
                "CELLS: cell 0 has 0 points",
            ),
            (
                "more.vtk",
                legacy.replace("CELLS 1 5", "CELLS 9 5"),
                "CELLS: the header says 9 cells, the list holds 1",
            ),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            let e = read_vtu_mesh(&path).unwrap_err().to_string();
            assert!(e.contains(name) && e.contains(wanted), "{e}");
        }
        // Found by the fuzz campaign: a duplicated `<Piece>` line nests a piece without points.
        let path = dir.path().join("nested.vtu");
        let tetra = tetra_vtu(
            ("binary", &base64_uint32(&U)),
            ("binary", &base64_uint32(&POINTS)),
        );
        let piece = tetra.find("<Piece").unwrap();
        let end = piece + tetra[piece..].find('>').unwrap() + 1;
        std::fs::write(&path, format!("{}{}", &tetra[..end], &tetra[piece..])).unwrap();
        let e = read_vtu_mesh(&path).unwrap_err().to_string();
        assert!(e.contains("nested.vtu: a piece inside piece 0"), "{e}");
        // A piece without points (vtkio unwraps them).
        let path = dir.path().join("nopoints.vtu");
        let tetra = tetra_vtu(
            ("binary", &base64_uint32(&U)),
            ("binary", &base64_uint32(&POINTS)),
        );
        let start = tetra.find("<Points>").unwrap();
        let end = tetra.find("</Points>").unwrap() + "</Points>".len();
        std::fs::write(&path, format!("{}{}", &tetra[..start], &tetra[end..])).unwrap();
        let e = read_vtu_mesh(&path).unwrap_err().to_string();
        assert!(e.contains("nopoints.vtu: piece 0 has no `Points`"), "{e}");
    }

    /// What the inline decoder does not take goes to vtkio: its values, or its error.
    #[test]
    fn other_files_go_through_vtkio() {
        let dir = tempfile::tempdir().unwrap();
        // ASCII points: not decoded inline, read all the same.
        let ascii = POINTS.map(|x| x.to_string()).join(" ");
        let xml = tetra_vtu(("binary", &base64_uint32(&U)), ("ascii", &ascii));
        assert!(inline::points_and_field(xml.as_bytes(), "U").is_none());
        let path = dir.path().join("ascii.vtu");
        std::fs::write(&path, &xml).unwrap();
        let (p, v) = read_vtu_points_field(&path, "U").unwrap();
        assert_eq!((p.as_slice(), v.concat().as_slice()), (&POINTS[..], &U[..]));
        let lz4 = snapshot(dir.path());
        let text = std::fs::read_to_string(&lz4).unwrap();
        // A displacement array with characters that are not base64: no inline answer, and
        // vtkio's error names the file.
        let start = text.find(r#"Name="U""#).unwrap();
        let end = start + text[start..].find("</DataArray>").unwrap();
        let broken = format!("{}!!!!{}", &text[..end - 40], &text[end - 36..]);
        assert!(inline::points_and_field(broken.as_bytes(), "U").is_none());
        let path = dir.path().join("broken.vtu");
        std::fs::write(&path, broken).unwrap();
        let e = read_vtu_points_field(&path, "U").unwrap_err().to_string();
        assert!(
            e.contains("broken.vtu: array `U` (Float64, binary): its data is not base64"),
            "{e}"
        );
        // A field that is not there.
        let e = read_vtu_points_field(&lz4, "V").unwrap_err().to_string();
        assert!(e.contains("no point data `V`"), "{e}");
    }

    /// Found by reading the fuzz campaign's refusals (issue #14): what vtkio refuses, it reports
    /// in its parsers' Debug text with no place ("Parse error: Tag", "InvalidXml(NonDecodable(
    /// Some(Utf8Error { valid_up_to: 19900 ...", "IO(Custom { kind: InvalidInput, error: "corrupt
    /// deflate stream" })"). Each is said with its line or array now.
    #[test]
    fn vtkio_refusals_say_where() {
        let dir = tempfile::tempdir().unwrap();
        let tetra = tetra_vtu(
            ("binary", &base64_uint32(&U)),
            ("binary", &base64_uint32(&POINTS)),
        );
        let lz4 = std::fs::read_to_string(snapshot(dir.path())).unwrap();
        // The first LZ4 block of U starting with 0xff bytes: a literal run longer than the block.
        let start = lz4.find(r#"Name="U""#).unwrap();
        let body = start + lz4[start..].find('>').unwrap() + 1;
        let array = lz4[body..].trim_start();
        let body = lz4.len() - array.len();
        let first = base64::engine::general_purpose::STANDARD
            .decode(&array[..12])
            .unwrap();
        let blocks = u64::from_le_bytes(first[..8].try_into().unwrap()) as usize;
        let data = body + (8 * (3 + blocks)).div_ceil(3) * 4;
        let garbled = format!("{}////////{}", &lz4[..data], &lz4[data + 8..]);
        let legacy = "# vtk DataFile Version 3.0\nt\nASCII\nDATASET UNSTRUCTURED_GRID\nPOINTS 4 double\n0 0 0\n1 0 0\n0 1 0\n0 0 1\nCELLS 1 5\n4 0 1 2 3\nCELL_TYPES 1\n10\n";
        let mut utf8 = tetra.clone().into_bytes();
        utf8.insert(tetra.find("<Cells>").unwrap() + "<Cells>".len(), 0xff);
        let cases: [(&str, Vec<u8>, &str); 7] = [
            (
                "utf8.vtu",
                utf8,
                "line 8, column 8: not UTF-8 text (byte 0xff)",
            ),
            (
                "lz4.vtu",
                garbled.into_bytes(),
                "array `U` (Float64, binary): compressed block",
            ),
            (
                "open.vtu",
                tetra.replace("</VTKFile>", "").into_bytes(),
                "not well-formed XML: `<VTKFile>` is not closed before the end of the file",
            ),
            (
                "offsets.vtu",
                tetra
                    .replace(
                        "<DataArray type=\"Int64\" Name=\"offsets\" format=\"ascii\">4</DataArray>",
                        "",
                    )
                    .into_bytes(),
                "`Cells` has no array `offsets`",
            ),
            (
                "count.vtu",
                tetra
                    .replace("NumberOfPoints=\"4\"", "NumberOfPoints=\"four\"")
                    .into_bytes(),
                "`Piece` has NumberOfPoints=\"four\", expected a count",
            ),
            (
                "points.vtk",
                legacy.replace("0 0 1\n", "").into_bytes(),
                "line 9, column 1: the legacy VTK format expects a number, found `CELLS 1 5`",
            ),
            (
                "types.vtk",
                legacy
                    .replace("CELL_TYPES 1\n10", "CELL_TYPES 1\nten")
                    .into_bytes(),
                "line 13, column 1: the legacy VTK format expects a number, found `ten`",
            ),
        ];
        for (name, bytes, wanted) in cases {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            let e = read_vtu_mesh(&path).expect_err(name).to_string();
            assert!(e.contains(&format!("{name}: {wanted}")), "{e}");
        }
    }
}
