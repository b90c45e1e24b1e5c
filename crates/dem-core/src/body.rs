//! Grains in the solver: a shape shared by every instance of one bundle, and each instance's
//! state (docs/physics.md section 1): pose, velocities and, for a deformable grain, its modal state
//! ([`crate::modal`]).

use std::path::PathBuf;
use std::sync::Arc;

use grain::{GrainBundle, LevelSetGrid, Material};
use nalgebra::{Point3, Quaternion, UnitQuaternion, Vector3};
use serde::{Deserialize, Serialize};

use crate::curvature::Curvature;
use crate::error::ShapeError;
use crate::flexibility::Flexibility;
use crate::lanes::Quad;
use crate::modal::{ModalShape, Modes};
use crate::motion::Motion;

/// What every instance of one grain bundle shares: the level set, the surface nodes and the
/// mass properties, all in the grain's local frame (principal axes, origin at the centre of
/// mass). Held behind an `Arc`: an instance costs its state only.
#[derive(Debug)]
pub struct Shape {
    /// Signed distance, negative inside (`phi`).
    pub levelset: LevelSetGrid,
    /// Surface node positions `x0_k`, grouped by cluster (see [`Cluster`]): a node's index is
    /// its place in this list, not in the bundle's.
    pub nodes: Vec<Vector3<f64>>,
    /// Spatial clusters of the nodes and the tree above them, so that the narrow phase skips
    /// the clusters far from the other body.
    pub clusters: Clusters,
    /// Surface area carried by each node `a_k` (they sum to the surface area).
    pub areas: Vec<f64>,
    /// The largest `a_k`.
    pub largest_area: f64,
    /// Volume `V` (of the reference shape).
    pub volume: f64,
    /// Mass `m`.
    pub mass: f64,
    /// Principal moments of inertia `I_1, I_2, I_3` (local x, y, z).
    pub moments: [f64; 3],
    /// Radius of a sphere about the centre of mass enclosing the grain: the farthest node plus
    /// one grid spacing (the surface between nodes may reach slightly farther). The grain's
    /// size (time step, packings, defaults); the contact search takes [`Shape::reach`] where
    /// that holds ([`crate::view::View::reach_within`]).
    pub bounding_radius: f64,
    /// The contact search's radius about the centre of mass: it holds every node, and every
    /// point where the level set is at most `m` lies within `reach + m`, for any `m` up to one
    /// grid spacing ([`grain::LevelSetGrid::reach`], derived from the grid).
    pub reach: f64,
    /// The farthest node's distance from each principal axis (local x, y, z) plus one grid
    /// spacing: the lever arm of a contact force about that axis (the time step's rotational
    /// inertia, [`crate::timestep`]).
    pub axis_reach: [f64; 3],
    /// Nodes per unit surface area (for the `finer` node-role rule).
    pub node_density: f64,
    /// The radius, if the grain is a sphere: every node at that distance from the centre to
    /// 1e-6 relative.
    pub sphere_radius: Option<f64>,
    /// The level set's largest change along a grid edge per unit length (1 for an exact
    /// distance): its Lipschitz constant in the 1-norm, which bounds how far a displacement
    /// can move the interpolated value (the semi-Lagrangian early-out).
    pub lipschitz: f64,
    /// The modes, for a deformable bundle.
    pub modal: Option<ModalShape>,
    /// The unit outward normal at each node (the level set's gradient), reference shape.
    pub normals: Vec<Vector3<f64>>,
    /// The surface's curvature at the nodes and near them ([`Curvature`]).
    pub curvature: Curvature,
    /// The material the bundle's modes were made with (none for a rigid bundle).
    pub material: Option<Material>,
    /// The body's residual flexibility beyond its modes, if the bundle has one.
    pub flexibility: Option<Flexibility>,
}

/// Nodes `range` of a shape, all within `radius` of `centre` (local frame): a cluster of at
/// most [`CLUSTER_NODES`], or an entry of the tree above the clusters ([`Clusters`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Cluster {
    /// Centre of the nodes' bounding sphere.
    pub centre: Vector3<f64>,
    /// Its radius.
    pub radius: f64,
    /// The nodes, as indices into [`Shape::nodes`].
    pub range: std::ops::Range<usize>,
}

/// The nodes' clusters (the leaves, of at most [`CLUSTER_NODES`] nodes) and the k-d tree above
/// them, every entry the bounding sphere of its nodes, in depth-first order: a subtree's
/// entries follow its root, so that a search skips a subtree whose sphere is out of reach in
/// one jump (a bounding-volume hierarchy walked without a stack).
///
/// Cost of [`Clusters::near`]: one sphere test per entry visited; for a body of `n` nodes
/// touched on a patch, about `2 log2(n / CLUSTER_NODES)` entries above the patch's clusters,
/// where a flat list tests all `n / CLUSTER_NODES` clusters (docs/performance.md, "A tree over
/// the clusters, and nodes filtered four at a time").
#[derive(Debug, Clone, PartialEq)]
pub struct Clusters {
    /// The entries, each with the index of the entry after its subtree (`i + 1` for a leaf)
    /// and, for a leaf, the first of its chunks in `lanes`.
    entries: Vec<(Cluster, usize, usize)>,
    /// The leaves' nodes in structure-of-arrays chunks of four, leaf after leaf: rows x, y, z,
    /// the lanes past a leaf's last node `+inf` (no ball holds them). What
    /// [`Leaf::within`] reads, four nodes a vector load each.
    lanes: Vec<NodeLanes>,
}

/// Four nodes' coordinates, row by row (`[x; 4], [y; 4], [z; 4]`).
type NodeLanes = [[f64; 4]; 3];

/// A cluster found by [`Clusters::near`], with its nodes' coordinates in chunks of four.
#[derive(Debug, Clone, Copy)]
pub struct Leaf<'a> {
    /// The cluster.
    pub cluster: &'a Cluster,
    /// Its nodes, four at a time ([`Clusters`]).
    lanes: &'a [NodeLanes],
}

impl Clusters {
    /// The tree of k-d subtree `ranges` (depth-first, each with the index after its subtree)
    /// over `nodes`, already in the tree's order.
    fn new(nodes: &[Vector3<f64>], ranges: Vec<(std::ops::Range<usize>, usize)>) -> Clusters {
        let mut lanes = Vec::new();
        let entries = (ranges.into_iter().enumerate())
            .map(|(i, (range, skip))| {
                let members = &nodes[range.clone()];
                let centre = members.iter().sum::<Vector3<f64>>() / members.len() as f64;
                let radius = (members.iter())
                    .map(|x| (x - centre).norm())
                    .fold(0.0, f64::max);
                // A leaf's nodes, four at a time.
                let first = lanes.len();
                if skip == i + 1 {
                    for chunk in members.chunks(4) {
                        let mut l = [[f64::INFINITY; 4]; 3];
                        for (j, x) in chunk.iter().enumerate() {
                            for a in 0..3 {
                                l[a][j] = x[a];
                            }
                        }
                        lanes.push(l);
                    }
                }
                let cluster = Cluster {
                    centre,
                    radius,
                    range,
                };
                (cluster, skip, first)
            })
            .collect();
        Clusters { entries, lanes }
    }

    /// The clusters (leaves) whose sphere, and every sphere above it, passes `reaches`, in the
    /// nodes' order. A subtree is skipped when its root's sphere fails: `reaches` must pass a
    /// sphere that holds a node which could touch, as a test of the centre's distance to the
    /// other side against the radius does (the narrow phase's [`crate::law::surface::Surface::reaches`]).
    #[inline(always)]
    pub fn near<'a>(
        &'a self,
        mut reaches: impl FnMut(&Cluster) -> bool + 'a,
    ) -> impl Iterator<Item = Leaf<'a>> + 'a {
        let mut i = 0;
        std::iter::from_fn(move || {
            while let Some((cluster, skip, first)) = self.entries.get(i) {
                if !reaches(cluster) {
                    i = *skip;
                } else {
                    i += 1;
                    if *skip == i {
                        let chunks = cluster.range.len().div_ceil(4);
                        return Some(Leaf {
                            cluster,
                            lanes: &self.lanes[*first..*first + chunks],
                        });
                    }
                }
            }
            None
        })
    }

    /// Every cluster, in the nodes' order.
    pub fn leaves(&self) -> impl Iterator<Item = Leaf<'_>> {
        self.near(|_| true)
    }
}

impl Leaf<'_> {
    /// The nodes of the cluster within the ball of radius `radius` about `centre` (local
    /// frame), as bits: bit `i` for node `range.start + i` (at most 32 nodes). A filter in
    /// front of the exact tests, which take the distance in the other body's frame (the same
    /// terms through another rotation): the ball is grown by a relative `1e-12`, which covers
    /// that rounding while the giver is less than about a thousand times the ball's radius,
    /// and beyond it the reach's slack (its Taylor bound's, [`grain::LevelSetGrid::reach`])
    /// holds the nodes that touch. Four nodes at a time from the chunks kept
    /// in structure-of-arrays form, in the lanes of `q` (the same bits in any unit;
    /// docs/performance.md, "A tree over the clusters, and nodes filtered four at a time" and
    /// "Allocations of a deformable view, a grid's corner records, clusters in
    /// structure-of-arrays chunks").
    #[inline(always)]
    pub fn within<Q: Quad>(&self, q: Q, centre: &Vector3<f64>, radius: f64) -> u32 {
        const { assert!(CLUSTER_NODES <= 32) };
        debug_assert!(self.cluster.range.len() <= 32, "a leaf's nodes");
        let r2 = q.splat(radius * radius * (1.0 + 1e-12));
        let c = [q.splat(centre.x), q.splat(centre.y), q.splat(centre.z)];
        let mut bits = 0;
        for (chunk, first) in self.lanes.iter().zip((0..).step_by(4)) {
            // Written out: `array::map` can be left out of line (docs/performance.md).
            let x = q.sub(q.load(chunk[0]), c[0]);
            let y = q.sub(q.load(chunk[1]), c[1]);
            let z = q.sub(q.load(chunk[2]), c[2]);
            let d2 = q.add(q.add(q.mul(x, x), q.mul(y, y)), q.mul(z, z));
            bits |= q.less(d2, r2) << first;
        }
        bits
    }
}

impl Shape {
    /// The shape of a bundle, with its modal data if it is deformable. The nodes are sorted
    /// into clusters of at most [`CLUSTER_NODES`]: the leaves of a k-d tree that halves each
    /// box at the median of its longest side, so that clusters are compact on any shape (a
    /// slender beam, a sphere with dense FEM nodes at its poles).
    ///
    /// Refused ([`ShapeError`]): no surface node, modal matrices that are not definite. The body
    /// itself (mass, moments, nodes on the level set) is checked where bundles are read,
    /// `grain::GrainBundle::read`.
    pub fn from_bundle(b: &GrainBundle) -> Result<Shape, ShapeError> {
        if b.nodes.nrows() == 0 {
            return Err(ShapeError::NoNodes);
        }
        let bundle_nodes: Vec<Vector3<f64>> = b
            .nodes
            .rows()
            .into_iter()
            .map(|r| Vector3::new(r[0], r[1], r[2]))
            .collect();
        let farthest = bundle_nodes.iter().map(|n| n.norm()).fold(0.0, f64::max);
        let mut order: Vec<usize> = (0..bundle_nodes.len()).collect();
        let mut ranges = Vec::new();
        kd_tree(&bundle_nodes, &mut order, 0, &mut ranges);
        let nodes: Vec<Vector3<f64>> = order.iter().map(|&k| bundle_nodes[k]).collect();
        let areas: Vec<f64> = order.iter().map(|&k| b.node_areas[k]).collect();
        let clusters = Clusters::new(&nodes, ranges);
        let area: f64 = areas.iter().sum();
        let nearest = nodes.iter().map(|n| n.norm()).fold(f64::INFINITY, f64::min);
        let sphere_radius =
            (farthest > 0.0 && farthest - nearest <= 1e-6 * farthest).then_some(farthest);
        let modal = match &b.deformation {
            None => None,
            Some(d) => Some(ModalShape::new(d, &order, &b.levelset)?),
        };
        let normals: Vec<Vector3<f64>> = (nodes.iter())
            .map(|x| {
                b.levelset
                    .value_and_gradient(&Point3::from(*x))
                    .1
                    .normalize()
            })
            .collect();
        let curvature = Curvature::new(&nodes, &normals, &areas, &b.levelset);
        let material = b.deformation.as_ref().and_then(|d| d.material.clone());
        let flexibility = match (
            b.deformation.as_ref().and_then(|d| d.flexibility.as_ref()),
            &material,
        ) {
            (None, _) => None,
            (Some(f), Some(m)) => Some(Flexibility::new(f, m)),
            (Some(_), None) => return Err(ShapeError::Flexibility),
        };
        let h = b.levelset.spec().spacing;
        let axis_reach = [0, 1, 2].map(|i| {
            let (j, k) = ((i + 1) % 3, (i + 2) % 3);
            let far = nodes.iter().map(|n| n[j].hypot(n[k])).fold(0.0, f64::max);
            far + h
        });
        Ok(Shape {
            largest_area: areas.iter().copied().fold(0.0, f64::max),
            curvature,
            normals,
            material,
            flexibility,
            axis_reach,
            lipschitz: edge_lipschitz(&b.levelset),
            modal,
            sphere_radius,
            bounding_radius: farthest + h,
            reach: farthest.max(b.levelset.reach(&Point3::origin(), h)),
            node_density: nodes.len() as f64 / area,
            levelset: b.levelset.clone(),
            nodes,
            clusters,
            areas,
            volume: b.properties.volume,
            mass: b.properties.mass,
            moments: b.properties.principal_moments,
        })
    }
}

/// The most nodes in a cluster: 8 tests fewer nodes than 32 and made the settle bench's rigid
/// step 1.1-1.3 x faster (docs/performance.md, "Clusters of 8 nodes").
pub const CLUSTER_NODES: usize = 8;

/// Sorts `order` (indices into `nodes`, starting at `offset` in the shape's list) into a k-d
/// tree whose leaves hold at most [`CLUSTER_NODES`], appending each subtree's range of the
/// sorted list in depth-first order with the index of the entry after it ([`Clusters`]). The
/// split is at the median along the longest side of the bounding box; ties go by index, so the
/// order is deterministic.
fn kd_tree(
    nodes: &[Vector3<f64>],
    order: &mut [usize],
    offset: usize,
    tree: &mut Vec<(std::ops::Range<usize>, usize)>,
) {
    let entry = tree.len();
    tree.push((offset..offset + order.len(), entry + 1));
    if order.len() <= CLUSTER_NODES {
        return;
    }
    let (lo, hi) = order.iter().fold(
        (
            Vector3::repeat(f64::INFINITY),
            Vector3::repeat(f64::NEG_INFINITY),
        ),
        |(lo, hi), &k| (lo.inf(&nodes[k]), hi.sup(&nodes[k])),
    );
    let axis = (hi - lo).imax();
    let half = order.len() / 2;
    order.select_nth_unstable_by(half, |&i, &j| {
        nodes[i][axis].total_cmp(&nodes[j][axis]).then(i.cmp(&j))
    });
    let (left, right) = order.split_at_mut(half);
    kd_tree(nodes, left, offset, tree);
    kd_tree(nodes, right, offset + half, tree);
    tree[entry].1 = tree.len();
}

/// The largest `|phi(n') - phi(n)| / h` over neighbouring grid nodes `n, n'`.
fn edge_lipschitz(grid: &LevelSetGrid) -> f64 {
    let spec = grid.spec();
    let [nx, ny, nz] = spec.dims;
    let v = grid.values();
    let mut largest: f64 = 0.0;
    for i in 0..nx {
        for j in 0..ny {
            for k in 0..nz {
                let n = spec.index(i, j, k);
                if i + 1 < nx {
                    largest = largest.max((v[n + ny * nz] - v[n]).abs());
                }
                if j + 1 < ny {
                    largest = largest.max((v[n + nz] - v[n]).abs());
                }
                if k + 1 < nz {
                    largest = largest.max((v[n + 1] - v[n]).abs());
                }
            }
        }
    }
    largest / spec.spacing
}

/// How a body moves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Drive {
    /// By the forces on it (Newton-Euler).
    Free,
    /// By the forces on it, some degrees of freedom held at their initial values (scene `hold`):
    /// the held translation components and, if `rotation`, the orientation; their velocities
    /// stay zero.
    Held {
        /// Held centre-of-mass coordinates x, y, z.
        translation: [bool; 3],
        /// Whether the orientation is held.
        rotation: bool,
    },
    /// By a prescribed displacement from `origin`; its angular velocity stays constant.
    Prescribed {
        /// Position at time 0.
        origin: [f64; 3],
        /// The motion.
        motion: Motion,
    },
}

/// The state of one grain instance. Frames: `position`, `velocity`, `force` and `torque` are
/// global; `angular_velocity` is in the body (principal) frame, where Euler's equations are
/// integrated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Body {
    /// Index of its shape in the simulation's shape list.
    pub shape: usize,
    /// Centre of mass `X`.
    pub position: Vector3<f64>,
    /// Orientation `q` (local to global).
    pub orientation: UnitQuaternion<f64>,
    /// Velocity of the centre of mass.
    pub velocity: Vector3<f64>,
    /// Angular velocity, body frame.
    pub angular_velocity: Vector3<f64>,
    /// Total force of the last evaluation (contacts, gravity, damping), global.
    pub force: Vector3<f64>,
    /// Total torque about the centre of mass of the last evaluation, global.
    pub torque: Vector3<f64>,
    /// Free or prescribed.
    pub drive: Drive,
    /// Modal state, for a grain whose deformation is on (a prescribed grain keeps its
    /// amplitudes).
    pub modes: Option<Modes>,
    /// How many cell vectors it was wrapped back by in a periodic cell: its unwrapped position
    /// is `position + H image` (crate::cell; LAMMPS's image flags).
    #[serde(default, skip_serializing_if = "is_origin")]
    pub image: [i32; 3],
}

fn is_origin(n: &[i32; 3]) -> bool {
    *n == [0; 3]
}

impl Body {
    /// A body at rest orientation `q = (w, x, y, z)`, angular velocity given in the global frame.
    pub fn new(
        shape: usize,
        position: [f64; 3],
        orientation: [f64; 4],
        velocity: [f64; 3],
        angular_velocity: [f64; 3],
        drive: Drive,
    ) -> Body {
        let [w, x, y, z] = orientation;
        let q = UnitQuaternion::from_quaternion(Quaternion::new(w, x, y, z));
        Body {
            shape,
            position: Vector3::from(position),
            orientation: q,
            velocity: Vector3::from(velocity),
            angular_velocity: q.inverse_transform_vector(&Vector3::from(angular_velocity)),
            force: Vector3::zeros(),
            torque: Vector3::zeros(),
            drive,
            modes: None,
            image: [0; 3],
        }
    }

    /// Global position of a local point.
    #[inline]
    pub fn to_global(&self, local: &Vector3<f64>) -> Vector3<f64> {
        self.position + self.orientation.transform_vector(local)
    }

    /// Local coordinates of a global point.
    #[inline]
    pub fn to_local(&self, global: &Vector3<f64>) -> Point3<f64> {
        Point3::from(
            self.orientation
                .inverse_transform_vector(&(global - self.position)),
        )
    }

    /// Angular velocity in the global frame.
    pub fn spin(&self) -> Vector3<f64> {
        self.orientation.transform_vector(&self.angular_velocity)
    }

    /// Velocity of the material point at global position `x`.
    #[inline]
    pub fn point_velocity(&self, spin: &Vector3<f64>, x: &Vector3<f64>) -> Vector3<f64> {
        self.velocity + spin.cross(&(x - self.position))
    }

    /// Whether its pose, velocities and amplitudes are finite numbers.
    pub fn is_finite(&self) -> bool {
        [self.position, self.velocity, self.angular_velocity]
            .iter()
            .all(|v| v.iter().all(|x| x.is_finite()))
            && self.orientation.coords.iter().all(|x| x.is_finite())
            && self
                .modes
                .as_ref()
                .is_none_or(|m| m.eps.iter().chain(&m.rate).all(|x| x.is_finite()))
    }

    /// Whether the forces move it.
    pub fn is_free(&self) -> bool {
        matches!(self.drive, Drive::Free | Drive::Held { .. })
    }
}

/// Shapes loaded once per bundle path.
pub type Shapes = Vec<Arc<Shape>>;

/// A grain's own node role (`nodes = "give"` or `"receive"` on `[[grains]]`), the paper's
/// master/slave choice. It decides a pair when the partner does not claim the same role; pairs
/// of two grains with the same role, or none, follow `[contact] nodes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeRole {
    /// Its surface nodes are tested against the partner's level set.
    Give,
    /// Its level set receives the partner's nodes.
    Receive,
}

/// `hold = [...]` of a free grain or a lattice: degrees of freedom held at their initial values,
/// among `"x"`, `"y"`, `"z"` (the centre of mass's global coordinates) and `"rotation"` (the
/// orientation); the others, and the modes, follow the forces. The constraint forces do no work.
///
/// These are the constraints of the FEM model a DEM run reproduces: an octant between symmetry
/// planes cannot turn, a beam pinned at its centre cannot slide. Free, a deformable grain with a
/// body-fixed mode can move into states the FEM model excludes: between frictionless walls a
/// compacted sphere relieves its load by turning its flattened poles away from the walls, and a
/// beam on frictionless supports slides off sideways as its ends turn (docs/validation.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dof {
    /// The centre of mass's x.
    X,
    /// The centre of mass's y.
    Y,
    /// The centre of mass's z.
    Z,
    /// The orientation.
    Rotation,
}

/// The held degrees of freedom as masks: translation per axis, rotation.
pub fn held(hold: &[Dof]) -> ([bool; 3], bool) {
    (
        [Dof::X, Dof::Y, Dof::Z].map(|d| hold.contains(&d)),
        hold.contains(&Dof::Rotation),
    )
}

/// What a shape was made from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShapeSource {
    /// The bundle as the scene names it (for messages: a moved bundle is the same grain).
    pub bundle: PathBuf,
    /// [`grain::bundle_digest`] of the bundle.
    pub digest: String,
    /// The scale factor `s` the scene applies to it.
    pub scale: f64,
}

/// Beyond this many of its radii from the origin, f64 resolves less than about 2e-8 of a grain:
/// its contact geometry would be rounding noise, and a lattice's grains would fall onto each
/// other (found by the fuzz campaign: an origin of 1e308 put 3,000 grains on one point, and the
/// first step ran for minutes).
pub const FARTHEST: f64 = 1e8;

/// Why a grain of `shape` at `position` is too far from the origin ([`FARTHEST`]), if it is.
pub fn too_far(position: &[f64; 3], shape: &Shape) -> Option<String> {
    let r = shape.bounding_radius;
    position.iter().any(|x| x.abs() > FARTHEST * r).then(|| {
        format!(
            "the grain would sit at {position:?}, more than {FARTHEST:e} times its radius {r:e} from the origin, where floating point cannot resolve it; move the scene nearer the origin"
        )
    })
}

/// The largest bounding radius of `shapes`.
pub fn largest_radius(shapes: &[Arc<Shape>]) -> f64 {
    shapes.iter().map(|s| s.bounding_radius).fold(0.0, f64::max)
}

/// The smallest bounding radius of `shapes`.
pub fn smallest_radius(shapes: &[Arc<Shape>]) -> f64 {
    (shapes.iter())
        .map(|s| s.bounding_radius)
        .fold(f64::INFINITY, f64::min)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `n` nodes on an ellipsoid of semi-axes `axes`, spread by the golden angle.
    fn ellipsoid_nodes(n: usize, axes: [f64; 3]) -> Vec<Vector3<f64>> {
        let golden = std::f64::consts::PI * (3.0 - 5f64.sqrt());
        (0..n)
            .map(|k| {
                let z = 1.0 - (2 * k + 1) as f64 / n as f64;
                let (r, t) = ((1.0 - z * z).sqrt(), golden * k as f64);
                Vector3::new(axes[0] * r * t.cos(), axes[1] * r * t.sin(), axes[2] * z)
            })
            .collect()
    }

    proptest! {
        /// The tree against brute force (every node's distance to the ball's centre): its
        /// leaves are the nodes in order, at most `CLUSTER_NODES` each; a search returns every
        /// cluster holding a node inside the ball, only clusters the flat test passes, and skips
        /// no cluster the flat test passes unless none of its nodes is inside; a cluster's bits
        /// hold every node inside and none farther than the rounding's allowance.
        #[test]
        fn a_search_of_the_tree_finds_every_node_inside_a_ball(
            n in 1usize..700,
            axes in prop::array::uniform3(0.2f64..5.0),
            centre in prop::array::uniform3(-6.0f64..6.0),
            radius in 0.0f64..4.0,
        ) {
            let points = ellipsoid_nodes(n, axes);
            let mut order: Vec<usize> = (0..n).collect();
            let mut ranges = Vec::new();
            kd_tree(&points, &mut order, 0, &mut ranges);
            let nodes: Vec<Vector3<f64>> = order.iter().map(|&k| points[k]).collect();
            let clusters = Clusters::new(&nodes, ranges);
            let centre = Vector3::from(centre);
            let inside = |x: &Vector3<f64>| (x - centre).norm() < radius;
            let reaches = |c: &Cluster| (c.centre - centre).norm() < c.radius + radius;

            let leaves: Vec<&Cluster> = clusters.leaves().map(|l| l.cluster).collect();
            let covered: Vec<usize> = leaves.iter().flat_map(|c| c.range.clone()).collect();
            prop_assert_eq!(covered, (0..n).collect::<Vec<_>>());
            prop_assert!(leaves.iter().all(|c| c.range.len() <= CLUSTER_NODES));

            let found: Vec<Leaf> = clusters.near(reaches).collect();
            for c in &leaves {
                let holds = nodes[c.range.clone()].iter().any(inside);
                let is_found = found.iter().any(|f| f.cluster.range == c.range);
                prop_assert!(!holds || is_found, "a cluster with a node inside was skipped");
                prop_assert!(!is_found || reaches(c), "a cluster the flat test rejects was found");
            }
            for leaf in &found {
                let (bits, c) = (leaf.within(crate::lanes::Plain, &centre, radius), leaf.cluster);
                for (i, x) in nodes[c.range.clone()].iter().enumerate() {
                    let kept = bits >> i & 1 == 1;
                    prop_assert!(!inside(x) || kept, "node {i} inside was dropped");
                    prop_assert!(
                        !kept || (x - centre).norm() <= radius * (1.0 + 1e-12),
                        "node {i} far outside was kept"
                    );
                }
            }
        }
    }
}
