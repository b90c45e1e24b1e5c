//! VTK files that ParaView opens: `.vti` (a grid with point data, e.g. a level set), `.vtp` (a point
//! cloud with scalar and vector data), `.vtu` (a FEM mesh with point data) and `.pvd` (a time
//! series collection of any of them).
//!
//! The XML files are encoded by vtkio (binary, LZ4-compressed, 64-bit headers, Float64 data) and
//! written atomically. LZ4, not zlib: vtkio starts a fresh zlib encoder for every 32 KiB block,
//! and clearing its state dominated the writing (50 `.vtu` files of 104k nodes took 66 s with zlib,
//! 8.7 s with LZ4, in `cargo bench -p mode-extract`). ParaView reads LZ4 since 5.6 (VTK 8.2). `.pvd` is a five-element XML format that vtkio does not cover; it is written
//! and read here with quick-xml.
//!
//! Array layout: the pipeline stores grids in C order of `(nx, ny, nz)` (`k` fastest, like
//! `levelset.npy`); VTK image data is `x` fastest. [`write_vti`] takes C-ordered data and reorders
//! it, so callers never think about it. VTK image origin and spacing are single precision in
//! vtkio's model: fine for viewing; the bundle's JSON and `.npy` files remain the exact record.

use std::io::Write;
use std::path::{Path, PathBuf};

use quick_xml::events::Event;
use vtkio::model::{
    Attribute, Attributes, ByteOrder, CellType, Cells, DataSet, Extent, IOBuffer, ImageDataPiece,
    Piece, PolyDataPiece, UnstructuredGridPiece, Version, VertexNumbers, Vtk,
};
use vtkio::xml::Compressor;

use crate::atomic::write_file_atomically;
use crate::error::{FormatError, Result};
use crate::grid::GridSpec;
use crate::mesh::FemMesh;

/// A named point-data array.
#[derive(Clone, Copy, Debug)]
pub enum PointData<'a> {
    /// One value per point.
    Scalars(&'a str, &'a [f64]),
    /// Three values per point, flat `[x0, y0, z0, x1, ...]`.
    Vectors(&'a str, &'a [f64]),
}

impl PointData<'_> {
    fn components(&self) -> usize {
        match self {
            PointData::Scalars(..) => 1,
            PointData::Vectors(..) => 3,
        }
    }

    fn name(&self) -> &str {
        match self {
            PointData::Scalars(n, _) | PointData::Vectors(n, _) => n,
        }
    }

    fn values(&self) -> &[f64] {
        match self {
            PointData::Scalars(_, v) | PointData::Vectors(_, v) => v,
        }
    }

    /// The vtkio attribute, with values reordered by `order` (VTK point `p` takes our point
    /// `order(p)`).
    fn attribute(&self, n_points: usize, order: impl Fn(usize) -> usize) -> Attribute {
        let c = self.components();
        let values = self.values();
        let mut data = Vec::with_capacity(n_points * c);
        for p in 0..n_points {
            let q = order(p);
            data.extend_from_slice(&values[q * c..(q + 1) * c]);
        }
        match self {
            PointData::Scalars(name, _) => Attribute::scalars(*name, 1).with_data(data),
            PointData::Vectors(name, _) => Attribute::vectors(*name).with_data(data),
        }
    }
}

fn check_lengths(path: &Path, n_points: usize, data: &[PointData]) -> Result<()> {
    for d in data {
        let expected = n_points * d.components();
        if d.values().len() != expected {
            return Err(FormatError::invalid(
                path,
                d.name(),
                format!(
                    "expected {expected} values for {n_points} points, got {}",
                    d.values().len()
                ),
            ));
        }
    }
    Ok(())
}

fn export(path: &Path, data: DataSet) -> Result<()> {
    let vtk = Vtk {
        version: Version::new_xml(1, 0),
        title: String::new(),
        byte_order: ByteOrder::LittleEndian,
        data,
        file_path: None,
    };
    let vtk_error = |e: &dyn std::fmt::Display| FormatError::Vtk {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let xml = vtk
        .try_into_xml_format(Compressor::LZ4, 1)
        .map_err(|e| vtk_error(&e))?;
    let mut bytes = Vec::new();
    xml.write(&mut bytes).map_err(|e| vtk_error(&e))?;
    write_file_atomically(path, |w| w.write_all(&bytes))
}

/// Writes a regular grid with point data in C order of `(nx, ny, nz)` (see the module docs).
pub fn write_vti(path: &Path, spec: &GridSpec, data: &[PointData]) -> Result<()> {
    let n = spec.len();
    check_lengths(path, n, data)?;
    let [nx, ny, _] = spec.dims;
    // VTK point p = i + nx (j + ny k)  <-  our index (i ny + j) nz + k.
    let order = |p: usize| spec.index(p % nx, (p / nx) % ny, p / (nx * ny));
    let extent = Extent::Ranges([
        0..=(spec.dims[0] as i32 - 1),
        0..=(spec.dims[1] as i32 - 1),
        0..=(spec.dims[2] as i32 - 1),
    ]);
    let attributes = Attributes {
        point: data.iter().map(|d| d.attribute(n, order)).collect(),
        cell: vec![],
    };
    export(
        path,
        DataSet::ImageData {
            extent: extent.clone(),
            origin: spec.origin.map(|x| x as f32),
            spacing: [spec.spacing as f32; 3],
            meta: None,
            pieces: vec![Piece::Inline(Box::new(ImageDataPiece {
                extent,
                data: attributes,
            }))],
        },
    )
}

/// Writes a point cloud (one vertex cell per point, so ParaView renders it directly).
/// `points` is flat `[x0, y0, z0, x1, ...]`.
pub fn write_vtp(path: &Path, points: &[f64], data: &[PointData]) -> Result<()> {
    if !points.len().is_multiple_of(3) {
        return Err(FormatError::invalid(
            path,
            "points",
            "length is not a multiple of 3",
        ));
    }
    let n = points.len() / 3;
    check_lengths(path, n, data)?;
    let piece = PolyDataPiece {
        points: IOBuffer::from(points.to_vec()),
        verts: Some(VertexNumbers::XML {
            connectivity: (0..n as u64).collect(),
            offsets: (1..=n as u64).collect(),
        }),
        data: Attributes {
            point: data.iter().map(|d| d.attribute(n, |p| p)).collect(),
            cell: vec![],
        },
        ..Default::default()
    };
    export(path, DataSet::inline(piece))
}

/// Writes a parallel polydata file (`.pvtp`): the pieces `sources` (`.vtp` files written by
/// [`write_vtp`], paths relative to the `.pvtp`'s directory), whose point data are `data`'s
/// names and kinds (values unused), for ParaView to open as one data set. Written by hand:
/// vtkio reads `.pvtp` but does not write it.
pub fn write_pvtp(path: &Path, sources: &[PathBuf], data: &[PointData]) -> Result<()> {
    let mut xml = String::from(
        "<?xml version=\"1.0\"?>\n\
         <VTKFile type=\"PPolyData\" version=\"0.1\" byte_order=\"LittleEndian\">\n  <PPolyData GhostLevel=\"0\">\n    <PPointData>\n",
    );
    for d in data {
        xml.push_str(&format!(
            "      <PDataArray type=\"Float64\" Name=\"{}\" NumberOfComponents=\"{}\"/>\n",
            quick_xml::escape::escape(d.name()),
            d.components()
        ));
    }
    xml.push_str(
        "    </PPointData>\n    <PPoints>\n      <PDataArray type=\"Float64\" NumberOfComponents=\"3\"/>\n    </PPoints>\n",
    );
    for source in sources {
        let file = source.to_string_lossy();
        xml.push_str(&format!(
            "    <Piece Source=\"{}\"/>\n",
            quick_xml::escape::escape(file.as_ref())
        ));
    }
    xml.push_str("  </PPolyData>\n</VTKFile>\n");
    write_file_atomically(path, |w| w.write_all(xml.as_bytes()))
}

/// Writes line segments (a wireframe): `points` flat `[x0, y0, z0, x1, ...]`, each segment a
/// pair of point indices.
pub fn write_lines(path: &Path, points: &[f64], segments: &[[u64; 2]]) -> Result<()> {
    let n = (points.len() / 3) as u64;
    if !points.len().is_multiple_of(3) || segments.iter().flatten().any(|&p| p >= n) {
        return Err(FormatError::invalid(
            path,
            "lines",
            "points not in threes, or a segment's end not among the points",
        ));
    }
    let piece = PolyDataPiece {
        points: IOBuffer::from(points.to_vec()),
        lines: Some(VertexNumbers::XML {
            connectivity: segments.iter().flatten().copied().collect(),
            offsets: (1..=segments.len() as u64).map(|k| 2 * k).collect(),
        }),
        ..Default::default()
    };
    export(path, DataSet::inline(piece))
}

/// Writes a FEM mesh with point data (connectivity in Abaqus order, which VTK shares).
pub fn write_vtu(path: &Path, mesh: &FemMesh, data: &[PointData]) -> Result<()> {
    let n = mesh.nodes.nrows();
    check_lengths(path, n, data)?;
    let mut connectivity = Vec::new();
    let mut offsets = Vec::new();
    let mut types: Vec<CellType> = Vec::new();
    for block in &mesh.blocks {
        for row in block.connectivity.rows() {
            connectivity.extend(row.iter().copied());
            offsets.push(connectivity.len() as u64);
            types.push(block.element_type.vtk_cell_type());
        }
    }
    let piece = UnstructuredGridPiece {
        points: IOBuffer::from(
            mesh.nodes
                .as_standard_layout()
                .iter()
                .copied()
                .collect::<Vec<f64>>(),
        ),
        cells: Cells {
            cell_verts: VertexNumbers::XML {
                connectivity,
                offsets,
            },
            types,
        },
        data: Attributes {
            point: data.iter().map(|d| d.attribute(n, |p| p)).collect(),
            cell: vec![],
        },
    };
    export(path, DataSet::inline(piece))
}

/// One entry of a `.pvd` collection: a file (relative to the `.pvd`) at a time.
#[derive(Clone, Debug, PartialEq)]
pub struct PvdEntry {
    /// The `timestep` attribute (time units of the run).
    pub time: f64,
    /// The data file, relative to the `.pvd`'s directory.
    pub file: PathBuf,
}

/// Writes a `.pvd` collection (ParaView opens it as a time series).
pub fn write_pvd(path: &Path, entries: &[PvdEntry]) -> Result<()> {
    let mut xml = String::from(
        "<?xml version=\"1.0\"?>\n\
         <VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"LittleEndian\">\n  <Collection>\n",
    );
    for e in entries {
        if !e.time.is_finite() {
            return Err(FormatError::invalid(path, "timestep", "non-finite time"));
        }
        let file = e.file.to_string_lossy();
        let file = quick_xml::escape::escape(file.as_ref());
        // `{:?}` prints the shortest decimal that reads back to the same f64.
        xml.push_str(&format!(
            "    <DataSet timestep=\"{:?}\" group=\"\" part=\"0\" file=\"{file}\"/>\n",
            e.time
        ));
    }
    xml.push_str("  </Collection>\n</VTKFile>\n");
    write_file_atomically(path, |w| w.write_all(xml.as_bytes()))
}

/// Reads a `.pvd` collection: the `DataSet` entries in file order (a missing `timestep` reads
/// as the entry's position, as ParaView does).
pub fn read_pvd(path: &Path) -> Result<Vec<PvdEntry>> {
    let bytes = std::fs::read(path).map_err(|e| FormatError::io(path, e))?;
    let text = crate::text::utf8_text(bytes).map_err(|e| FormatError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let mut reader = quick_xml::Reader::from_str(&text);
    let parse_error = |message: String| FormatError::Parse {
        path: path.to_path_buf(),
        message,
    };
    let mut entries = Vec::new();
    let mut collection = false;
    loop {
        let event = reader
            .read_event()
            .map_err(|e| parse_error(format!("byte {}: {e}", reader.buffer_position())))?;
        match event {
            Event::Start(e) | Event::Empty(e) => match e.name().as_ref() {
                b"Collection" => collection = true,
                b"DataSet" => {
                    let mut time = None;
                    let mut file = None;
                    for attr in e.attributes() {
                        let attr = attr.map_err(|e| parse_error(e.to_string()))?;
                        let value = attr
                            .unescape_value()
                            .map_err(|e| parse_error(e.to_string()))?
                            .into_owned();
                        match attr.key.as_ref() {
                            b"timestep" => {
                                time = Some(
                                    value
                                        .trim()
                                        .parse::<f64>()
                                        .ok()
                                        .filter(|t| t.is_finite())
                                        .ok_or_else(|| {
                                            parse_error(format!(
                                                "DataSet entry {}: timestep `{value}` is not a finite number",
                                                entries.len() + 1
                                            ))
                                        })?,
                                )
                            }
                            b"file" => file = Some(PathBuf::from(value)),
                            _ => {}
                        }
                    }
                    let file = file.ok_or_else(|| {
                        parse_error(format!("DataSet entry {} has no `file`", entries.len() + 1))
                    })?;
                    entries.push(PvdEntry {
                        time: time.unwrap_or(entries.len() as f64),
                        file,
                    });
                }
                _ => {}
            },
            Event::Eof => break,
            _ => {}
        }
    }
    if !collection {
        return Err(parse_error(
            "not a VTK collection (no <Collection> element)".into(),
        ));
    }
    Ok(entries)
}
