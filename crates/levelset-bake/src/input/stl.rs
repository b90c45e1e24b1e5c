//! STL, ASCII and binary. Binary is recognized by its size (84 + 50 n bytes for n triangles);
//! anything else must be ASCII (`solid ... facet normal ... outer loop / vertex x y z (x3) / endloop
//! ... endfacet ... endsolid`). Facet normals are ignored: orientation comes from vertex order.

use std::path::Path;

use nalgebra::Point3;

use super::fields::numbers;
use crate::error::BakeError;
use crate::surface::TriangleMesh;

pub(super) fn read(path: &Path) -> Result<TriangleMesh, BakeError> {
    let bytes = std::fs::read(path).map_err(|e| BakeError::io(path, e))?;
    if bytes.len() >= 84 {
        let n = u32::from_le_bytes(bytes[80..84].try_into().expect("4 bytes")) as usize;
        if bytes.len() == 84 + 50 * n {
            return Ok(binary(&bytes[84..], n));
        }
    }
    let size = bytes.len();
    let text = grain::text::utf8_text(bytes).map_err(|e| {
        BakeError::input(
            path,
            format!(
                "not a binary STL (size {size} is not 84 + 50 x the triangle count in the header) and not ASCII text: {e}"
            ),
        )
    })?;
    ascii(path, &text)
}

fn binary(body: &[u8], n: usize) -> TriangleMesh {
    let f = |b: &[u8], k: usize| {
        f32::from_le_bytes(b[4 * k..4 * k + 4].try_into().expect("4 bytes")) as f64
    };
    TriangleMesh::from_soup((0..n).map(|t| {
        let rec = &body[50 * t..50 * t + 50];
        // Floats 0-2: normal (ignored); 3-11: the three vertices.
        [0, 1, 2].map(|v| Point3::new(f(rec, 3 + 3 * v), f(rec, 4 + 3 * v), f(rec, 5 + 3 * v)))
    }))
}

fn ascii(path: &Path, text: &str) -> Result<TriangleMesh, BakeError> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim()));
    match lines.next() {
        Some((_, l)) if l.starts_with("solid") => {}
        _ => {
            return Err(BakeError::parse(
                path,
                1,
                "an ASCII STL starts with `solid`",
            ));
        }
    }
    let mut soup = Vec::new();
    let mut loop_vertices: Option<(usize, Vec<Point3<f64>>)> = None;
    let mut last_line = 1;
    for (line, l) in lines {
        last_line = line;
        let mut fields = l.split_whitespace();
        match fields.next() {
            Some("outer") => loop_vertices = Some((line, Vec::with_capacity(3))),
            Some("vertex") => {
                let Some((_, vs)) = loop_vertices.as_mut() else {
                    return Err(BakeError::parse(
                        path,
                        line,
                        "`vertex` outside `outer loop`",
                    ));
                };
                let c = numbers(path, line, "vertex", fields, 3)?;
                vs.push(Point3::new(c[0], c[1], c[2]));
            }
            Some("endloop") => match loop_vertices.take() {
                Some((_, vs)) if vs.len() == 3 => soup.push([vs[0], vs[1], vs[2]]),
                Some((start, vs)) => {
                    return Err(BakeError::parse(
                        path,
                        start,
                        format!("facet loop has {} vertices, expected 3", vs.len()),
                    ));
                }
                None => {
                    return Err(BakeError::parse(
                        path,
                        line,
                        "`endloop` without `outer loop`",
                    ));
                }
            },
            Some("facet") | Some("endfacet") | Some("endsolid") | Some("solid") | None => {}
            Some(other) => {
                return Err(BakeError::parse(
                    path,
                    line,
                    format!("unexpected `{other}` in an ASCII STL"),
                ));
            }
        }
    }
    if let Some((start, _)) = loop_vertices {
        return Err(BakeError::parse(
            path,
            start,
            format!("`outer loop` not closed before the end (line {last_line})"),
        ));
    }
    Ok(TriangleMesh::from_soup(soup))
}
