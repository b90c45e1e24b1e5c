//! Grains from segmented CT images: a 3-D `.npy` array, a segmentation rule and a voxel size.
//!
//! Conventions: voxel `(i, j, k)` of the array (C order) has its centre at `voxel * (i, j, k)` in
//! the input frame. A voxel is solid when its value is >= the threshold, or equal to the label.
//!
//! Signed distance: the exact Euclidean distance transform of Felzenszwalb and Huttenlocher
//! (Theory of Computing 8, 2012), separable and linear in the voxel count, gives for every voxel
//! centre the distance to the nearest centre of the other phase. The surface is taken halfway
//! between unlike neighbours, so `phi = d_out - voxel/2` outside and `-(d_in - voxel/2)` inside.
//! This is the usual LS-DEM construction from X-ray tomography; it is within about half a voxel
//! of the true surface distance near the surface (the staircase of the voxelization itself is
//! the limit), and then resampled trilinearly onto the grain's grid.
//!
//! Mass properties are integrated over the voxels (exact for the voxelized solid: each solid
//! voxel is a cube of side `voxel`).

use std::path::Path;

use grain::{GridSpec, LevelSetGrid};
use nalgebra::{Matrix3, Point3, Vector3};
use ndarray::ArrayD;
use ndarray_npy::ReadNpyError;

use crate::error::BakeError;
use crate::mass::MassProperties;

/// How solid voxels are told from the rest.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Segmentation {
    /// Solid where the value is >= this.
    Threshold(f64),
    /// Solid where the value equals this label.
    Label(i64),
}

/// A segmented image: which voxels are solid.
#[derive(Debug, Clone, PartialEq)]
pub struct VoxelImage {
    /// Array dimensions.
    pub dims: [usize; 3],
    /// Voxel edge length (length units).
    pub voxel: f64,
    /// Solid flags in C order.
    pub solid: Vec<bool>,
}

fn read_any(path: &Path) -> Result<ArrayD<f64>, BakeError> {
    macro_rules! attempt {
        ($($t:ty),*) => {$(
            match ndarray_npy::read_npy::<_, ArrayD<$t>>(path) {
                Ok(a) => return Ok(a.mapv(|v| v as f64)),
                Err(ReadNpyError::Io(e)) => return Err(BakeError::io(path, e)),
                Err(_) => {}
            }
        )*};
    }
    attempt!(f64, f32, u8, u16, u32, i8, i16, i32, i64, u64);
    match ndarray_npy::read_npy::<_, ArrayD<bool>>(path) {
        Ok(a) => Ok(a.mapv(|v| if v { 1.0 } else { 0.0 })),
        Err(e) => Err(BakeError::input(
            path,
            format!("cannot read a numeric .npy array: {e}"),
        )),
    }
}

impl VoxelImage {
    /// Reads and segments a 3-D `.npy` image.
    pub fn read(path: &Path, voxel: f64, rule: Segmentation) -> Result<Self, BakeError> {
        if !(voxel.is_finite() && voxel > 0.0) {
            return Err(BakeError::parameter(
                "--voxel",
                format!("must be finite and > 0, got {voxel}"),
            ));
        }
        // The header first: a shape the file cannot fill, or an image this machine cannot hold
        // as numbers, is refused before anything is allocated for it.
        let header = grain::read_npy_header(path)?;
        let elements = header.shape.iter().product::<usize>();
        let needed = elements.saturating_mul(size_of::<f64>() + size_of::<bool>());
        if needed > grain::memory::available() {
            return Err(BakeError::input(
                path,
                format!(
                    "an image of shape {:?} needs about {:.1} GB to segment, more than the memory available to this process",
                    header.shape,
                    needed as f64 / 1e9
                ),
            ));
        }
        let array = read_any(path)?;
        let dims: [usize; 3] = array.shape().try_into().map_err(|_| {
            BakeError::input(
                path,
                format!("expected a 3-D array, found shape {:?}", array.shape()),
            )
        })?;
        let solid: Vec<bool> = array
            .as_standard_layout()
            .iter()
            .map(|&v| match rule {
                Segmentation::Threshold(t) => v >= t,
                Segmentation::Label(l) => v == l as f64,
            })
            .collect();
        let count = solid.iter().filter(|&&s| s).count();
        if count == 0 {
            return Err(BakeError::input(
                path,
                "no voxel is solid under the segmentation rule",
            ));
        }
        Ok(VoxelImage { dims, voxel, solid })
    }

    fn index(&self, i: usize, j: usize, k: usize) -> usize {
        (i * self.dims[1] + j) * self.dims[2] + k
    }

    /// Mass properties of the voxelized solid (per unit density).
    pub fn mass_properties(&self) -> MassProperties {
        let v = self.voxel;
        let [_, ny, nz] = self.dims;
        let (mut count, mut first, mut second) = (0usize, Vector3::zeros(), Matrix3::zeros());
        for (n, _) in self.solid.iter().enumerate().filter(|(_, s)| **s) {
            let p = Vector3::new(
                (n / (ny * nz)) as f64,
                ((n / nz) % ny) as f64,
                (n % nz) as f64,
            ) * v;
            count += 1;
            first += p;
            second += p * p.transpose();
        }
        let cube = v * v * v;
        let volume = count as f64 * cube;
        let c = first / count as f64;
        // Point masses at the centres, plus each cube's own second moment v^2/12 per axis.
        let s = (second - c * c.transpose() * count as f64) * cube
            + Matrix3::identity() * (volume * v * v / 12.0);
        MassProperties {
            volume,
            center: Point3::from(c),
            inertia: Matrix3::identity() * s.trace() - s,
        }
    }

    /// The signed distance at voxel centres, on a grid padded by `pad` voxels (see the module
    /// docs), in the input frame.
    pub fn signed_distance(&self, pad: usize) -> LevelSetGrid {
        let dims = self.dims.map(|n| n + 2 * pad);
        let spec = GridSpec {
            origin: [-(pad as f64) * self.voxel; 3],
            spacing: self.voxel,
            dims,
        };
        let padded = |i: usize, j: usize, k: usize| {
            let (a, b, c) = (
                i.wrapping_sub(pad),
                j.wrapping_sub(pad),
                k.wrapping_sub(pad),
            );
            a < self.dims[0]
                && b < self.dims[1]
                && c < self.dims[2]
                && self.solid[self.index(a, b, c)]
        };
        let mut solid = vec![false; spec.len()];
        for i in 0..dims[0] {
            for j in 0..dims[1] {
                for k in 0..dims[2] {
                    solid[spec.index(i, j, k)] = padded(i, j, k);
                }
            }
        }
        let to_solid = squared_edt(dims, &solid, true);
        let to_void = squared_edt(dims, &solid, false);
        let half = 0.5 * self.voxel;
        let values = solid
            .iter()
            .zip(to_solid.iter().zip(&to_void))
            .map(|(&s, (&ds, &dv))| {
                if s {
                    -(dv.sqrt() * self.voxel - half)
                } else {
                    ds.sqrt() * self.voxel - half
                }
            })
            .collect();
        LevelSetGrid::new(spec, values).expect("a padded image is a valid grid")
    }
}

/// Squared distance (in voxels) from every voxel to the nearest voxel whose flag equals `target`
/// (0 on those voxels), by three passes of the 1-D lower-envelope transform.
fn squared_edt(dims: [usize; 3], flags: &[bool], target: bool) -> Vec<f64> {
    let far = ((dims[0] + dims[1] + dims[2]) as f64).powi(2) + 1.0;
    let mut d: Vec<f64> = flags
        .iter()
        .map(|&f| if f == target { 0.0 } else { far })
        .collect();
    let strides = [dims[1] * dims[2], dims[2], 1];
    let mut line = Vec::new();
    let mut out = Vec::new();
    for axis in 0..3 {
        let n = dims[axis];
        let (a, b) = match axis {
            0 => (1, 2),
            1 => (0, 2),
            _ => (0, 1),
        };
        for u in 0..dims[a] {
            for v in 0..dims[b] {
                let base = u * strides[a] + v * strides[b];
                line.clear();
                line.extend((0..n).map(|t| d[base + t * strides[axis]]));
                lower_envelope(&line, &mut out);
                for t in 0..n {
                    d[base + t * strides[axis]] = out[t];
                }
            }
        }
    }
    d
}

/// 1-D squared distance transform of a sampled function `f`: `out[q] = min_p (q - p)^2 + f[p]`
/// (Felzenszwalb and Huttenlocher's algorithm, O(n)).
fn lower_envelope(f: &[f64], out: &mut Vec<f64>) {
    let n = f.len();
    out.clear();
    out.resize(n, 0.0);
    let mut v = vec![0usize; n];
    let mut z = vec![0.0f64; n + 1];
    let mut k = 0;
    z[0] = f64::NEG_INFINITY;
    z[1] = f64::INFINITY;
    for q in 1..n {
        let qf = q as f64;
        let mut s;
        loop {
            let p = v[k] as f64;
            s = ((f[q] + qf * qf) - (f[v[k]] + p * p)) / (2.0 * qf - 2.0 * p);
            if s <= z[k] && k > 0 {
                k -= 1;
            } else {
                break;
            }
        }
        if s <= z[k] {
            // k == 0 and the new parabola dominates the first one everywhere.
            v[0] = q;
            z[1] = f64::INFINITY;
            continue;
        }
        k += 1;
        v[k] = q;
        z[k] = s;
        z[k + 1] = f64::INFINITY;
    }
    let mut k = 0;
    for (q, o) in out.iter_mut().enumerate() {
        while z[k + 1] < q as f64 {
            k += 1;
        }
        let d = q as f64 - v[k] as f64;
        *o = d * d + f[v[k]];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edt_is_exact_against_brute_force() {
        let dims = [7, 9, 5];
        let n = dims.iter().product::<usize>();
        let flags: Vec<bool> = (0..n).map(|i| (i * 7919) % 23 == 0).collect();
        let d = squared_edt(dims, &flags, true);
        for (a, &got) in d.iter().enumerate() {
            let pa = [a / 45, (a / 5) % 9, a % 5];
            let brute = (0..n)
                .filter(|&b| flags[b])
                .map(|b| {
                    let pb = [b / 45, (b / 5) % 9, b % 5];
                    (0..3)
                        .map(|i| (pa[i] as f64 - pb[i] as f64).powi(2))
                        .sum::<f64>()
                })
                .fold(f64::INFINITY, f64::min);
            assert_eq!(got, brute, "voxel {pa:?}");
        }
    }
}
