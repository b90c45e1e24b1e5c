//! Surface nodes: the points that test contact against other grains' level sets, each carrying
//! the surface area it represents (docs/physics.md section 4: area-weighted node tractions).

use std::collections::HashMap;

use nalgebra::Point3;
use rayon::prelude::*;

use crate::sdf::DistanceField;
use crate::surface::TriangleMesh;

/// Surface nodes with their areas.
#[derive(Debug, Clone, PartialEq)]
pub struct SurfaceNodes {
    /// Positions.
    pub positions: Vec<Point3<f64>>,
    /// Area carried by each node; the areas sum to the surface area.
    pub areas: Vec<f64>,
}

impl SurfaceNodes {
    /// The mesh vertices, each with a third of the area of every triangle around it (the
    /// barycentric dual area): the areas sum to the mesh area exactly.
    pub fn vertices(mesh: &TriangleMesh) -> Self {
        let mut areas = vec![0.0; mesh.vertices.len()];
        for (f, tri) in mesh.triangles.iter().enumerate() {
            let third = mesh.scaled_normal(f).norm() / 6.0;
            for &v in tri {
                areas[v as usize] += third;
            }
        }
        SurfaceNodes {
            positions: mesh.vertices.clone(),
            areas,
        }
    }

    /// Nodes about `spacing` apart, independent of the mesh's own vertices: the points of the
    /// cubic lattice of side `spacing` through the origin of the grain's frame (its centre of
    /// mass) that lie within half a cell diagonal of the surface are projected onto it
    /// (closest point), and projections closer than `spacing / 2` to an earlier one are
    /// dropped. A lattice through the centre keeps the symmetries of a symmetric grain (a
    /// sphere whose radius is a multiple of the spacing gets nodes exactly at its six poles,
    /// where walls touch it). Each node's area is the area of the part of the surface closer
    /// to it than to any other node, integrated over a fine subdivision of the triangles
    /// (sub-triangles of side `spacing / 8` or less): the areas sum to the mesh area exactly.
    pub fn resample(mesh: &TriangleMesh, field: &DistanceField, spacing: f64) -> Self {
        let (lo, hi) = mesh.bounds().expect("a checked mesh has vertices");
        let first = lo.map(|e| (e / spacing).floor() as i64 - 1);
        let n =
            (hi.map(|e| (e / spacing).ceil() as i64 + 1) - first).map(|x| x.max(1) as usize + 1);
        let half_diagonal = 0.5 * 3f64.sqrt() * spacing;
        let candidates: Vec<Point3<f64>> = (0..n.x * n.y * n.z)
            .into_par_iter()
            .filter_map(|c| {
                let (i, j, k) = (c / (n.y * n.z), (c / n.z) % n.y, c % n.z);
                let point = Point3::new(
                    (first.x + i as i64) as f64 * spacing,
                    (first.y + j as i64) as f64 * spacing,
                    (first.z + k as i64) as f64 * spacing,
                );
                let (closest, distance) = field.closest_point(&point);
                (distance <= half_diagonal).then_some(closest)
            })
            .collect();
        let mut accepted = BucketGrid::new(0.5 * spacing);
        let mut positions = Vec::new();
        for p in candidates {
            if accepted
                .nearest_within(&positions, &p, 0.5 * spacing)
                .is_none()
            {
                accepted.insert(&p, positions.len());
                positions.push(p);
            }
        }
        let areas = voronoi_areas(mesh, &positions, spacing);
        SurfaceNodes { positions, areas }
    }
}

/// Areas of the surface's Voronoi cells around `nodes`, by assigning the centroid of each piece of
/// a uniform subdivision of every triangle to its nearest node.
fn voronoi_areas(mesh: &TriangleMesh, nodes: &[Point3<f64>], spacing: f64) -> Vec<f64> {
    let mut grid = BucketGrid::new(spacing);
    for (i, p) in nodes.iter().enumerate() {
        grid.insert(p, i);
    }
    let pieces: Vec<(usize, f64)> = (0..mesh.triangles.len())
        .into_par_iter()
        .flat_map_iter(|f| {
            let [a, b, c] = mesh.corners(f);
            let longest = (b - a).norm().max((c - b).norm()).max((a - c).norm());
            let k = ((8.0 * longest / spacing).ceil() as usize).max(1);
            let piece_area = 0.5 * (b - a).cross(&(c - a)).norm() / (k * k) as f64;
            let (u, v) = ((b - a) / k as f64, (c - a) / k as f64);
            let grid = &grid;
            (0..k).flat_map(move |i| {
                (0..k - i).flat_map(move |j| {
                    let base = a + u * i as f64 + v * j as f64;
                    // The upright piece, and the inverted one next to it when there is one.
                    let mut out = vec![base + (u + v) / 3.0];
                    if i + j + 1 < k {
                        out.push(base + (u + v) * (2.0 / 3.0));
                    }
                    out.into_iter().map(move |centroid| {
                        let nearest = grid
                            .nearest(nodes, &centroid)
                            .expect("nodes cover the surface");
                        (nearest, piece_area)
                    })
                })
            })
        })
        .collect();
    let mut areas = vec![0.0; nodes.len()];
    for (node, area) in pieces {
        areas[node] += area;
    }
    areas
}

/// Points hashed into cubic buckets, for nearest-neighbour queries among points roughly one
/// bucket apart. (Twenty lines; a k-d tree crate would be more than this needs.)
struct BucketGrid {
    size: f64,
    buckets: HashMap<[i64; 3], Vec<usize>>,
}

impl BucketGrid {
    fn new(size: f64) -> Self {
        BucketGrid {
            size,
            buckets: HashMap::new(),
        }
    }

    fn key(&self, p: &Point3<f64>) -> [i64; 3] {
        [0, 1, 2].map(|d| (p[d] / self.size).floor() as i64)
    }

    fn insert(&mut self, p: &Point3<f64>, id: usize) {
        let key = self.key(p);
        self.buckets.entry(key).or_default().push(id);
    }

    /// The nearest point within `radius` (searching the buckets that radius reaches).
    fn nearest_within(
        &self,
        points: &[Point3<f64>],
        p: &Point3<f64>,
        radius: f64,
    ) -> Option<usize> {
        let reach = (radius / self.size).ceil() as i64;
        let key = self.key(p);
        let mut best: Option<(f64, usize)> = None;
        for dx in -reach..=reach {
            for dy in -reach..=reach {
                for dz in -reach..=reach {
                    let Some(ids) = self.buckets.get(&[key[0] + dx, key[1] + dy, key[2] + dz])
                    else {
                        continue;
                    };
                    for &id in ids {
                        let d = (points[id] - p).norm();
                        if d <= radius && best.is_none_or(|(bd, bid)| (d, id) < (bd, bid)) {
                            best = Some((d, id));
                        }
                    }
                }
            }
        }
        best.map(|(_, id)| id)
    }

    /// The nearest point, widening the search until one is found and no closer one can exist.
    fn nearest(&self, points: &[Point3<f64>], p: &Point3<f64>) -> Option<usize> {
        let mut radius = self.size;
        for _ in 0..64 {
            if let Some(id) = self.nearest_within(points, p, radius) {
                return Some(id);
            }
            radius *= 2.0;
        }
        None
    }
}
