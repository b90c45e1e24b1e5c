//! Spatial domain decomposition (docs/mpi.md): which process owns a grain, and which
//! processes hold a copy of it (a ghost). The geometry only: the processes' exchanges are
//! `crate::mpi`'s (feature `mpi`), behind the [`Processes`] interface the step calls.
//!
//! **Frame.** Subdomains are cut in fractional coordinates `s = F^-1 (X - o)`: a periodic
//! cell's (`F = H`, its vectors as columns, `o` its origin; they follow the cell as it
//! deforms), or without a cell the box of the grains' initial centres (`F` diagonal). A grain
//! outside the box along an axis that is not periodic belongs to the end subdomain there.
//!
//! **Grid.** `d_1 x d_2 x d_3 = P` subdomains ([`Grid::new`]: the factorization with the least
//! cut area), the process of subdomain `c` is `(c_1 d_2 + c_2) d_3 + c_3` (the row-major order
//! of an MPI Cartesian topology). The cuts along each axis are the quantiles of the grains'
//! initial fractional coordinates ([`Grid::balanced`]): each slab starts with about as many
//! grains as the others, in a loose or graded packing as in a uniform one (LAMMPS's `balance
//! shift`), and moves to their current quantiles every `--rebalance` steps
//! ([`Grid::rebalance`]).
//!
//! **Ghosts.** A grain at `s` is copied to every subdomain whose slabs meet
//! `[s_k - h_k, s_k + h_k]` along each axis `k` (its periodic images included), where
//! `h_k = rho |row_k(F^-1)|` is how far a ball of radius `rho` about the grain reaches in `s_k`.
//! With `rho` at least the largest sum of two grains' reaches, every pair that touches a grain
//! a process owns has both its grains held there, ghosts or owned ([`Grid::holders`]).

use nalgebra::{Matrix3, Vector3};

use crate::body::Body;
use crate::cell::{Cell, Wrapped};
use crate::law::Histories;
use crate::modal::Excursion;
use crate::wall::Wall;

/// The frame of the decomposition: `s = F^-1 (X - o)` (module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// `o`.
    pub origin: Vector3<f64>,
    /// `F^-1`.
    pub inverse: Matrix3<f64>,
    /// Whether each axis is periodic (`s` wraps).
    pub periodic: [bool; 3],
}

impl Frame {
    /// The frame of a periodic cell.
    pub fn of_cell(cell: &crate::cell::Cell) -> Frame {
        Frame {
            origin: cell.origin,
            inverse: cell
                .vectors
                .try_inverse()
                .expect("a cell of positive volume"),
            periodic: cell.periodic,
        }
    }

    /// The box of `centres` (an axis along which they all lie in one plane gets a unit extent).
    pub fn of_box(centres: &[Vector3<f64>]) -> Frame {
        let (lo, hi) = if centres.is_empty() {
            (Vector3::zeros(), Vector3::repeat(1.0))
        } else {
            crate::broad::bounding_box(centres)
        };
        let extent = (hi - lo).map(|e| if e > 0.0 { e } else { 1.0 });
        Frame {
            origin: lo,
            inverse: Matrix3::from_diagonal(&extent.map(|e| 1.0 / e)),
            periodic: [false; 3],
        }
    }

    /// The fractional coordinates of `x`.
    pub fn fractional(&self, x: &Vector3<f64>) -> Vector3<f64> {
        self.inverse * (x - self.origin)
    }

    /// `h_k = rho |row_k(F^-1)|` (module docs).
    pub fn halo(&self, rho: f64) -> [f64; 3] {
        [0, 1, 2].map(|k| rho * self.inverse.row(k).norm())
    }

    /// The lengths of the frame's edges, `|F e_k|`.
    fn extents(&self) -> [f64; 3] {
        let f = self.inverse.try_inverse().unwrap_or_else(Matrix3::identity);
        [0, 1, 2].map(|k| f.column(k).norm())
    }
}

/// The grid of subdomains: processes per axis and the cuts between slabs (module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    /// Subdomains along each axis, `d_k`.
    pub dims: [usize; 3],
    /// Per axis, the `d_k - 1` inner cuts in fractional coordinates, increasing: slab `c` is
    /// `[cut_{c-1}, cut_c)`, the first from `0` (`-inf` off a periodic axis), the last to `1`
    /// (`+inf`).
    pub cuts: [Vec<f64>; 3],
    /// Whether each axis is periodic.
    pub periodic: [bool; 3],
}

impl Grid {
    /// `processes` subdomains of equal widths in `frame`, in the factorization
    /// `d_1 d_2 d_3 = processes` that cuts the least area (the frame's faces weighted by their
    /// cuts: `d_k - 1` planes across a bounded axis, `d_k` across a periodic one divided at
    /// all); ties go to the most subdomains along x, then along y.
    pub fn new(processes: usize, frame: &Frame) -> Grid {
        let l = frame.extents();
        let face = [l[1] * l[2], l[2] * l[0], l[0] * l[1]];
        let mut best: Option<(f64, [usize; 3])> = None;
        for d1 in (1..=processes)
            .rev()
            .filter(|d| processes.is_multiple_of(*d))
        {
            let rest = processes / d1;
            for d2 in (1..=rest).rev().filter(|d| rest.is_multiple_of(*d)) {
                let dims = [d1, d2, rest / d2];
                let area: f64 = (0..3)
                    .map(|k| {
                        let planes = match (frame.periodic[k], dims[k]) {
                            (_, 1) => 0,
                            (true, d) => d,
                            (false, d) => d - 1,
                        };
                        planes as f64 * face[k]
                    })
                    .sum();
                if best.is_none_or(|(a, _)| area < a) {
                    best = Some((area, dims));
                }
            }
        }
        let dims = best.map_or([1, 1, 1], |(_, d)| d);
        Grid {
            dims,
            cuts: [0, 1, 2].map(|k| (1..dims[k]).map(|c| c as f64 / dims[k] as f64).collect()),
            periodic: frame.periodic,
        }
    }

    /// [`Grid::new`]'s grid with its cuts moved to the quantiles of `s` (the grains'
    /// fractional coordinates), so that each slab along an axis holds about as many grains.
    pub fn balanced(processes: usize, frame: &Frame, s: &[Vector3<f64>]) -> Grid {
        let mut grid = Grid::new(processes, frame);
        grid.rebalance(s);
        grid
    }

    /// Moves the cuts to the quantiles of `s` (the grains' fractional coordinates), keeping
    /// the grid's subdomains per axis (and so the processes' layout).
    pub fn rebalance(&mut self, s: &[Vector3<f64>]) {
        if s.is_empty() {
            return;
        }
        for k in 0..3 {
            let mut along: Vec<f64> = s.iter().map(|x| x[k]).collect();
            along.sort_unstable_by(f64::total_cmp);
            let d = self.dims[k];
            self.cuts[k] = (1..d)
                .map(|c| {
                    let i = (c * along.len() / d).min(along.len() - 1);
                    // Halfway between the neighbouring grains (a grain on the cut would belong
                    // to the slab above).
                    let below = along[i.saturating_sub(1)];
                    let cut = 0.5 * (below + along[i]);
                    if self.periodic[k] {
                        cut.clamp(0.0, 1.0)
                    } else {
                        cut
                    }
                })
                .collect();
            for c in 1..self.cuts[k].len() {
                self.cuts[k][c] = self.cuts[k][c].max(self.cuts[k][c - 1]);
            }
        }
    }

    /// Processes in the grid.
    pub fn processes(&self) -> usize {
        self.dims.iter().product()
    }

    /// The process of subdomain `c`.
    pub fn rank(&self, c: [usize; 3]) -> usize {
        (c[0] * self.dims[1] + c[1]) * self.dims[2] + c[2]
    }

    /// The slab along axis `k` holding fractional coordinate `x` (wrapped on a periodic axis).
    fn slab(&self, k: usize, x: f64) -> usize {
        let x = if self.periodic[k] { wrapped(x) } else { x };
        self.cuts[k].partition_point(|&c| c <= x)
    }

    /// The subdomain of process `rank` ([`Grid::rank`]'s inverse).
    pub fn coordinates(&self, rank: usize) -> [usize; 3] {
        let d = self.dims;
        [rank / (d[1] * d[2]), rank / d[2] % d[1], rank % d[2]]
    }

    /// The grains that subdomain `c` holds alone with halo `h`: [`Grid::holders`]' first test,
    /// made once for the grains of one subdomain.
    pub fn alone(&self, c: [usize; 3], h: [f64; 3]) -> Alone {
        let bounds = [0, 1, 2].map(|k| {
            let periodic = self.periodic[k];
            let lower = match c[k] {
                0 if periodic => 0.0,
                0 => f64::NEG_INFINITY,
                _ => self.cuts[k][c[k] - 1],
            };
            let upper = match self.cuts[k].get(c[k]) {
                Some(&cut) => cut,
                None if periodic => 1.0,
                None => f64::INFINITY,
            };
            (lower, upper)
        });
        Alone {
            bounds,
            h,
            periodic: self.periodic,
            divided: self.dims.map(|d| d > 1),
        }
    }

    /// The process owning a grain at fractional coordinates `s`.
    pub fn owner(&self, s: &Vector3<f64>) -> usize {
        self.rank([0, 1, 2].map(|k| self.slab(k, s[k])))
    }

    /// The processes that hold a grain at `s` with halo `h` ([`Frame::halo`]): its owner and
    /// every process whose subdomain meets the box `s +- h` or one of its periodic images;
    /// sorted. No allocation for a grain whose box stays in at most eight subdomains (every
    /// grain, unless the subdomains are thinner than the halo).
    pub fn holders(&self, s: &Vector3<f64>, h: [f64; 3]) -> Holders {
        // Most grains are deep inside their subdomain: their owner alone holds them.
        let own = [0, 1, 2].map(|k| self.slab(k, s[k]));
        if self.alone(own, h).holds(s) {
            return smallvec::smallvec![self.rank(own)];
        }
        self.reached(s, h)
    }

    /// [`Grid::holders`] past its first test, for a grain its owner does not hold alone
    /// ([`Grid::alone`]): the subdomains the box `s +- h` and its periodic images meet.
    pub fn reached(&self, s: &Vector3<f64>, h: [f64; 3]) -> Holders {
        // Per axis, the slabs met: `count` of them from `first`, on around a periodic axis
        // (each once). Lists of slabs sorted and deduplicated cost about 66 ns a grain, half
        // of the ghosts' packing (docs/mpi.md, "Scaling").
        let mut wraps = false;
        let spans = [0, 1, 2].map(|k| {
            let d = self.dims[k];
            if d == 1 {
                (0, 1)
            } else if self.periodic[k] && 2.0 * h[k] >= 1.0 {
                (0, d)
            } else if self.periodic[k] {
                let (lo, hi) = (wrapped(s[k] - h[k]), wrapped(s[k] + h[k]));
                let (a, b) = (self.slab(k, lo), self.slab(k, hi));
                let count = if lo <= hi { b - a + 1 } else { d - a + b + 1 };
                wraps |= a + count > d;
                (a, count.min(d))
            } else {
                let a = self.slab(k, s[k] - h[k]);
                (a, self.slab(k, s[k] + h[k]) - a + 1)
            }
        });
        let mut ranks = Holders::new();
        let [(a, na), (b, nb), (c, nc)] = spans;
        for i in a..a + na {
            for j in b..b + nb {
                for l in c..c + nc {
                    let d = self.dims;
                    ranks.push(self.rank([i % d[0], j % d[1], l % d[2]]));
                }
            }
        }
        // In row-major order unless an axis went around.
        if wraps {
            ranks.sort_unstable();
        }
        ranks
    }
}

/// The grains a subdomain holds alone ([`Grid::alone`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Alone {
    /// Per axis, the subdomain's slab `[lower, upper)` (fractional; wrapped on a periodic axis).
    bounds: [(f64, f64); 3],
    /// The halo.
    h: [f64; 3],
    periodic: [bool; 3],
    /// Whether the axis is cut (more than one slab).
    divided: [bool; 3],
}

impl Alone {
    /// Whether a grain at `s` in the subdomain lies with its halo inside it, along every axis
    /// that is cut: `s +- h` (wrapped on a periodic axis) within the slab.
    #[inline]
    pub fn holds(&self, s: &Vector3<f64>) -> bool {
        (0..3).all(|k| {
            let x = if self.periodic[k] {
                wrapped(s[k])
            } else {
                s[k]
            };
            let (lower, upper) = self.bounds[k];
            !self.divided[k] || (x - self.h[k] >= lower && x + self.h[k] < upper)
        })
    }
}

/// `x - floor(x)`, in `[0, 1)`; the same value without the call to `floor` (the baseline
/// x86-64 has no instruction for it: a call to the C library's) for an `x` already there, as
/// the centres of grains wrapped into a cell are (three calls a grain and exchange before).
#[inline]
fn wrapped(x: f64) -> f64 {
    if (0.0..1.0).contains(&x) {
        x
    } else {
        x - x.floor()
    }
}

/// The processes holding a grain ([`Grid::holders`]).
pub type Holders = smallvec::SmallVec<[usize; 8]>;

/// What a process holds that the exchanges change: its bodies (owned first, then ghosts),
/// their global ids, how many it owns, and its contact histories (in global ids).
pub struct Holding<'a> {
    /// Owned bodies, then ghosts.
    pub bodies: &'a mut Vec<Body>,
    /// Their global ids.
    pub ids: &'a mut Vec<u32>,
    /// How many are owned.
    pub owned: &'a mut usize,
    /// The contact histories.
    pub histories: &'a mut Histories,
    /// The velocity changes of the step's wraps, by grain id, booked at the step's end by the
    /// grain's owner (crate::sim::wrap).
    pub remapped: &'a mut Vec<(u32, Vector3<f64>)>,
    /// The amplitudes that went beyond their models' ranges (they move with their grains).
    pub excursions: &'a mut Vec<Excursion>,
    /// The prescribed grains' loads at the step's start, by grain id, for the ledger's work
    /// (crate::ledger::boundary_loads; they move with their grains).
    pub loads: &'a mut Vec<(u32, crate::ledger::Load)>,
    /// The neighbour list of the grains owned (their shares move with them:
    /// [`crate::neighbours::NeighbourList::hand_over`]).
    pub neighbours: &'a mut crate::neighbours::NeighbourList,
}

/// What crossed between processes, counted over the run (the communication model's inputs:
/// docs/mpi.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Traffic {
    /// Exchanges (steps).
    pub exchanges: u64,
    /// Grains sent to a new owner.
    pub migrants: u64,
    /// Bytes of the migrants sent.
    pub migrant_bytes: u64,
    /// Ghost copies sent.
    pub ghosts: u64,
    /// Bytes of the ghosts sent.
    pub ghost_bytes: u64,
    /// Rebalances of the cuts.
    #[serde(default)]
    pub rebalances: u64,
    /// Bytes of the parcels sent to the ghosts' owners ([`Processes::to_owners`]): the forces
    /// of the pairs across the cuts, the coupling's loads and parts.
    #[serde(default)]
    pub parcel_bytes: u64,
}

/// A decomposed run's processes as summary.json reports them.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Decomposition {
    /// The grid of subdomains, `d_1 x d_2 x d_3`.
    pub grid: [usize; 3],
    /// The grains each process owns at the end.
    pub owned: Vec<usize>,
    /// What the processes sent each other in the invocation, summed over them (`exchanges`
    /// and `rebalances`: the first process's).
    pub traffic: Traffic,
}

/// A wall pair's contribution to its wall: the pair's first grain (global id), the wall, the
/// force on the wall and the pair's normal stiffness.
pub type WallTerm = (u32, u32, Vector3<f64>, f64);

/// The processes of a decomposed run, as the step sees them: the exchanges and the global
/// sums it needs. Implemented over MPI by `crate::mpi` (feature `mpi`); a run in one process
/// has none.
pub trait Processes: Send {
    /// This process's rank, 0 to `size - 1`.
    fn rank(&self) -> usize;
    /// The number of processes.
    fn size(&self) -> usize;
    /// Every process's wraps (each sorted by id), merged and sorted.
    fn all_wrapped(&self, mine: Vec<Wrapped>) -> Vec<Wrapped>;
    /// Migration (grains whose centres left this process's subdomain go to their new owner,
    /// with their pairs' histories), then the ghosts, for grains reaching `reach` at most (over
    /// every process), in the frame of `cell` if there is one. The owned grains stay sorted by
    /// id. Returns the seconds spent waiting for the slowest process (a barrier first, so that
    /// the imbalance is not counted as communication), in the migration and in the ghosts'
    /// exchange.
    fn exchange(&mut self, holding: Holding, cell: Option<&Cell>, reach: f64) -> [f64; 3];
    /// The walls' forces and stiffnesses from every process's wall terms (each sorted by
    /// pair), summed in the order of the pairs' keys: the bits of a run in one process.
    fn sum_walls(&self, mine: Vec<WallTerm>, walls: &mut [Wall]);
    /// What this process sent so far.
    fn traffic(&self) -> Traffic;
    /// The grid of subdomains.
    fn grid(&self) -> [usize; 3];
    /// Every process's bytes, in process order (every process gets them all).
    fn all_bytes(&self, mine: Vec<u8>) -> Vec<Vec<u8>>;
    /// Every process's bytes, in process order, in the first process (`None` in the others).
    fn gather_bytes(&self, mine: Vec<u8>) -> Option<Vec<Vec<u8>>>;
    /// Sums `values` over the processes: every process gets the same sums.
    fn sum(&self, values: &mut [f64]);
    /// The largest `value` over the processes.
    fn max(&self, value: f64) -> f64;
    /// Sends each parcel of `mine` to the process that owns its grain (a ghost here), and
    /// returns the parcels the other processes sent here, sorted by key (each names the grain
    /// owned here it is for): a pair's forces on its second grain, computed by its first
    /// grain's owner ([`crate::sim`]'s reduction), and the coupling's loads and parts
    /// ([`crate::coupling::offsets`]).
    fn to_owners(&mut self, mine: Parcels) -> Parcels;
}

/// Numbers about pairs that cross a cut, each for the owner of one of the pair's grains: parcel
/// `k` is about the pair `keys[k]`, for the owner of grain `grains[k]`, and holds
/// `values[ends[k - 1]..ends[k]]` (from 0 for the first). What [`Processes::to_owners`] carries.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parcels {
    /// The grain (global id) whose owner each parcel is for.
    pub grains: Vec<u32>,
    /// Each parcel's pair.
    pub keys: Vec<crate::law::PairKey>,
    /// Where each parcel's numbers end in `values`.
    pub ends: Vec<usize>,
    /// The parcels' numbers, one after the other.
    pub values: Vec<f64>,
}

impl Parcels {
    /// Adds a parcel for `grain`'s owner about `key`.
    pub fn push(
        &mut self,
        grain: u32,
        key: crate::law::PairKey,
        values: impl IntoIterator<Item = f64>,
    ) {
        self.grains.push(grain);
        self.keys.push(key);
        self.values.extend(values);
        self.ends.push(self.values.len());
    }

    /// How many parcels.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Parcel `k`: its grain, its pair and its numbers.
    pub fn get(&self, k: usize) -> (u32, crate::law::PairKey, &[f64]) {
        let start = if k == 0 { 0 } else { self.ends[k - 1] };
        (
            self.grains[k],
            self.keys[k],
            &self.values[start..self.ends[k]],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit_frame(periodic: [bool; 3]) -> Frame {
        Frame {
            origin: Vector3::zeros(),
            inverse: Matrix3::identity(),
            periodic,
        }
    }

    #[test]
    fn grid_factorizations_cut_the_least_area() {
        // A slab-shaped box 4 x 1 x 1: four processes cut it across x.
        let frame = Frame {
            origin: Vector3::zeros(),
            inverse: Matrix3::from_diagonal(&Vector3::new(0.25, 1.0, 1.0)),
            periodic: [false; 3],
        };
        assert_eq!(Grid::new(4, &frame).dims, [4, 1, 1]);
        // A cube: 8 processes as 2 x 2 x 2; 2 as 2 x 1 x 1 (ties cut x first).
        assert_eq!(Grid::new(8, &unit_frame([false; 3])).dims, [2, 2, 2]);
        assert_eq!(Grid::new(2, &unit_frame([true; 3])).dims, [2, 1, 1]);
        assert_eq!(Grid::new(7, &unit_frame([true; 3])).processes(), 7);
    }

    /// Every subdomain a ball of radius `rho` about a grain reaches, by brute force over a
    /// fine lattice of points of the ball, is among the holders, and the owner too.
    #[test]
    fn holders_cover_every_subdomain_the_halo_reaches() {
        for periodic in [[false; 3], [true; 3], [true, false, true]] {
            let frame = Frame {
                origin: Vector3::new(-1.0, 0.5, 2.0),
                // A sheared cell.
                inverse: Matrix3::new(1.0, 0.3, 0.0, 0.0, 1.0, 0.0, 0.1, 0.0, 1.0)
                    .try_inverse()
                    .unwrap(),
                periodic,
            };
            let grid = Grid::new(12, &frame);
            // A halo that reaches other subdomains from every grain of the periodic frames, one
            // thin enough that some grains are held by their owner alone, and one that goes
            // around a periodic axis past the slab it started from.
            let mut alone = 0;
            for rho in [0.21, 0.02, 0.45] {
                let h = frame.halo(rho);
                for i in 0..40 {
                    let t = i as f64;
                    let x = frame.origin
                        + Vector3::new(
                            1.3 * (0.37 * t).sin().abs(),
                            1.1 * (0.91 * t + 1.0).sin().abs(),
                            0.99 * (1.73 * t + 2.0).sin().abs(),
                        );
                    let s = frame.fractional(&x);
                    let holders = grid.holders(&s, h);
                    let owner = grid.owner(&s);
                    assert!(holders.contains(&owner));
                    assert!(
                        holders.is_sorted_by(|a, b| a < b),
                        "{holders:?}: sorted, once each"
                    );
                    // The test of the grains a process holds alone, made once for its
                    // subdomain.
                    let c = grid.coordinates(owner);
                    assert_eq!(grid.rank(c), owner);
                    let by_itself = grid.alone(c, h).holds(&s);
                    alone += usize::from(by_itself);
                    for a in -4..=4 {
                        for b in -4..=4 {
                            for c in -4..=4 {
                                let d = Vector3::new(a as f64, b as f64, c as f64) * (rho / 4.0);
                                if d.norm() > rho {
                                    continue;
                                }
                                let reached = grid.owner(&frame.fractional(&(x + d)));
                                assert!(holders.contains(&reached), "{x:?} + {d:?}: {reached}");
                                assert!(!by_itself || reached == owner, "{x:?} + {d:?}");
                            }
                        }
                    }
                }
            }
            // Both kinds of grain met.
            assert!((1..120).contains(&alone), "{periodic:?}: {alone} alone");
        }
    }

    #[test]
    fn balanced_cuts_split_a_graded_sample_evenly() {
        // Grains crowded towards x = 0 (s_x = u^3 for u uniform), y spread by the golden ratio,
        // independent of x.
        let s: Vec<Vector3<f64>> = (0..1000)
            .map(|i| {
                let u = (i as f64 + 0.5) / 1000.0;
                let y = (i as f64 * 0.618_033_988_749_895).fract();
                Vector3::new(u.powi(3), y, 0.5)
            })
            .collect();
        let grid = Grid::balanced(4, &unit_frame([false; 3]), &s);
        assert_eq!(grid.dims, [2, 2, 1]);
        let mut count = vec![0; 4];
        for x in &s {
            count[grid.owner(x)] += 1;
        }
        // Each axis is split at its median: the quadrants hold a quarter each, up to the
        // sampling of y against x.
        assert!(count.iter().all(|&c| (235..=265).contains(&c)), "{count:?}");
        // Equal widths would put 794 grains (u < 0.5^(1/3)) in the first two quadrants.
        assert_eq!(count[0] + count[1], 500);
    }
}
