//! Wavefront OBJ: `v x y z [w]` and `f i j k ...` lines (indices 1-based, negative ones relative
//! to the end, `i/t/n` forms accepted); polygons are split into triangle fans. Everything else
//! (normals, texture coordinates, groups, materials) is ignored.

use std::path::Path;

use nalgebra::Point3;

use super::fields::numbers;
use crate::error::BakeError;
use crate::surface::TriangleMesh;

pub(super) fn read(path: &Path) -> Result<TriangleMesh, BakeError> {
    let bytes = std::fs::read(path).map_err(|e| BakeError::io(path, e))?;
    let text = grain::text::utf8_text(bytes).map_err(|e| BakeError::input(path, e.to_string()))?;
    let mut vertices = Vec::new();
    let mut triangles = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let line = i + 1;
        let mut fields = l.split_whitespace();
        match fields.next() {
            Some("v") => {
                let c = numbers(path, line, "vertex", fields, 3)?;
                vertices.push(Point3::new(c[0], c[1], c[2]));
            }
            Some("f") => {
                let ids = fields
                    .map(|f| {
                        let first = f.split('/').next().unwrap_or("");
                        let k: i64 = first
                            .parse()
                            .map_err(|_| BakeError::parse(path, line, format!("face index `{f}` is not an integer")))?;
                        let n = vertices.len() as i64;
                        let index = if k < 0 { n + k } else { k - 1 };
                        if k == 0 || index < 0 || index >= n {
                            return Err(BakeError::parse(
                                path,
                                line,
                                format!("face index {k} does not name one of the {n} vertices defined so far"),
                            ));
                        }
                        Ok(index as u32)
                    })
                    .collect::<Result<Vec<u32>, _>>()?;
                if ids.len() < 3 {
                    return Err(BakeError::parse(
                        path,
                        line,
                        format!("a face needs 3 or more vertices, got {}", ids.len()),
                    ));
                }
                triangles.extend((1..ids.len() - 1).map(|k| [ids[0], ids[k], ids[k + 1]]));
            }
            _ => {}
        }
    }
    Ok(TriangleMesh {
        vertices,
        triangles,
    })
}
