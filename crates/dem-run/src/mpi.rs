//! The processes of a decomposed run over MPI (feature `mpi`; docs/mpi.md): [`Mpi`] implements
//! [`dem_core::domain::Processes`]; rsmpi over the system's MPI library moves the bytes,
//! [`dem_core::domain`] says where they go. The runner is [`crate::run::run_mpi`].
//!
//! Every exchange is one `MPI_Alltoallv` over the Cartesian communicator of the grid (counts
//! first, by `MPI_Alltoall`): a grain goes straight to each process that needs it, whatever
//! the subdomains' widths (a halo wider than a neighbour's subdomain, a diagonal neighbour, a
//! periodic image), with no staged forwarding.
//!
//! - **Migration** (a grain whose centre left the subdomain): the whole body and the
//!   histories of the pairs it is the first grain of (their new owner computes them), as JSON
//!   (exact: the workspace reads f64 back bit for bit), with the velocity change of a wrap this
//!   step and its share of the neighbour list.
//! - **Ghosts**, every step: per grain its id, image, pose, velocities, amplitudes and rates
//!   (`17 + 2m` numbers); the rest of a ghost (its shape, drive, level-set update) is the
//!   scene's, which every process read.
//! - **Parcels** ([`Processes::to_owners`]), every step: a pair that crosses a cut is computed
//!   by its first grain's owner ("Newton on"), which sends its second grain's side (force,
//!   torque, generalized forces, contact, node records) to that grain's owner. A law that
//!   couples a grain's contacts through its body sends the pair's load the same way, and gets
//!   back the second grain's part of the correction.
//! - **Sums**: the walls' forces from each process's wall pairs gathered and summed in key
//!   order, other sums gathered and added in process order (`MPI_Allgatherv`: every process
//!   gets the same bits), maxima by `MPI_Allreduce`.

use std::sync::Arc;
use std::time::Instant;

use ::mpi::datatype::{Partition, PartitionMut};
use ::mpi::topology::CartesianCommunicator;
use ::mpi::traits::*;
use nalgebra::{Quaternion, UnitQuaternion, Vector3};

use dem_core::body::Body;
use dem_core::cell::{Cell, Wrapped};
use dem_core::domain::{Frame, Grid, Holding, Parcels, Processes, Traffic, WallTerm};
use dem_core::law::{ContactLaw, PairKey, Partner};
use dem_core::modal::Excursion;
use dem_core::neighbours::Share;
use dem_core::wall::Wall;

/// Numbers per ghost before its amplitudes and rates.
const GHOST_HEAD: usize = 17;

/// A decomposed run's processes over MPI.
pub struct Mpi {
    comm: CartesianCommunicator,
    rank: usize,
    grid: Grid,
    /// The frame of a run without a cell: the box of the grains' initial centres.
    frame: Option<Frame>,
    /// Every grain as the scene (or checkpoint) gave it: the static parts of its ghosts.
    templates: Vec<Body>,
    /// Surface nodes per grain (a migrant history's check).
    nodes: Vec<usize>,
    /// Modes per grain (the length of a ghost's record; a template's is a read of 608 bytes,
    /// a cache miss per ghost).
    modes: Vec<usize>,
    law: Arc<dyn ContactLaw>,
    /// Every how many steps the cuts move to the grains' quantiles again (0: never).
    rebalance: u64,
    /// What crossed so far.
    pub traffic: Traffic,
    /// The owner of each ghost held this step, by grain id.
    owners: std::collections::HashMap<u32, usize>,
    /// The same, in the order of the ghosts held (after the grains owned): what tells an
    /// exchange that brings the same ghosts, without a lookup per ghost; both are rebuilt
    /// together when the ghosts change.
    ghost_owners: Vec<usize>,
}

/// How a migrant travels.
#[derive(serde::Serialize, serde::Deserialize)]
struct Migrant {
    id: u32,
    body: Body,
    histories: Vec<(PairKey, serde_json::Value)>,
    remapped: Option<Vector3<f64>>,
    excursions: Vec<Excursion>,
    load: Option<dem_core::ledger::Load>,
    /// Its share of the neighbour list.
    neighbours: Option<Share>,
}

impl Mpi {
    /// The decomposition of `sim` (a whole scene, built or restored the same in every
    /// process) over the processes of `world`: the grid ([`Grid::balanced`] on the grains'
    /// centres), its Cartesian communicator, and `sim` cut down to the grains this process owns
    /// and its ghosts.
    ///
    /// Every `rebalance` steps (0: never) the cuts move to the quantiles of the grains' current
    /// positions ([`Grid::balanced`] on every grain, gathered), and the grains go to their new
    /// owners by the migration.
    pub fn decompose(
        world: &impl Communicator,
        sim: &mut dem_core::sim::Simulation,
        rebalance: u64,
    ) {
        let size = world.size() as usize;
        let centres: Vec<Vector3<f64>> = sim.world.bodies.iter().map(|b| b.position).collect();
        let (frame, box_frame) = match &sim.world.cell {
            Some(cell) => (Frame::of_cell(cell), None),
            None => {
                let f = Frame::of_box(&centres);
                (f.clone(), Some(f))
            }
        };
        let s: Vec<Vector3<f64>> = centres.iter().map(|x| frame.fractional(x)).collect();
        let grid = Grid::balanced(size, &frame, &s);
        let dims: Vec<::mpi::Count> = grid.dims.iter().map(|&d| d as ::mpi::Count).collect();
        let comm = world
            .create_cartesian_communicator(&dims, &grid.periodic, false)
            .expect("every process is in the grid");
        let rank = comm.rank() as usize;
        debug_assert_eq!(
            comm.rank_to_coordinates(comm.rank()),
            grid.coordinates(rank).map(|x| x as ::mpi::Count).to_vec(),
            "the grid's process order is the Cartesian topology's"
        );
        let nodes = (sim.world.bodies.iter())
            .map(|b| sim.world.shapes[b.shape].nodes.len())
            .collect();
        let mut mpi = Mpi {
            comm,
            rank,
            grid,
            frame: box_frame,
            templates: sim.world.bodies.clone(),
            nodes,
            modes: (sim.world.bodies.iter())
                .map(|b| b.modes.as_ref().map_or(0, |m| m.eps.len()))
                .collect(),
            law: sim.parameters.law.clone(),
            rebalance,
            traffic: Traffic::default(),
            owners: std::collections::HashMap::new(),
            ghost_owners: Vec::new(),
        };
        // Keep what this process owns: its grains, their pairs' histories, and the ledger's
        // initial energy in the first process only (the run's ledger is the processes' sum).
        let mine: Vec<bool> = s.iter().map(|x| mpi.grid.owner(x) == rank).collect();
        // The grains' reach at this state (a restored checkpoint's deformable grains may reach
        // farther than the scene's).
        let views = dem_core::sim::views(&sim.world.bodies, &sim.world.shapes);
        let law = sim.parameters.law.as_ref();
        sim.last.largest_reach = dem_core::sim::search_radii(&views, law, &sim.world.shapes).1;
        drop(views);
        let bodies = std::mem::take(&mut sim.world.bodies);
        let (ids, bodies): (Vec<u32>, Vec<Body>) = (0..bodies.len() as u32)
            .zip(bodies)
            .filter(|(i, _)| mine[*i as usize])
            .unzip();
        sim.partition.owned = ids.len();
        sim.partition.ids = ids;
        sim.world.bodies = bodies;
        sim.world.histories.retain(|(k, _)| mine[k.a as usize]);
        // The whole scene's evaluation, which every process made: its node records and
        // excursions of the grains this process owns; its sums over pairs, and the ledger's
        // initial energy, in the first process only (the run's are the processes' sums).
        sim.last.records.retain(|r| mine[r.body as usize]);
        sim.totals.excursions.retain(|x| mine[x.grain]);
        if rank != 0 {
            let l = &mut sim.totals.ledger;
            (l.initial, l.initial_gravity) = (0.0, 0.0);
            (l.work, l.local, l.viscous, l.modal, l.friction) = (0.0, 0.0, 0.0, 0.0, 0.0);
            (sim.last.contacts, sim.last.contact_energy) = (0, 0.0);
            let t = &mut sim.totals;
            (t.node_tests, t.node_queries, t.node_candidates) = (0, 0, 0);
        }
        let reach = dem_core::sim::GHOST_MARGIN * sim.last.largest_reach;
        let holding = Holding {
            bodies: &mut sim.world.bodies,
            ids: &mut sim.partition.ids,
            owned: &mut sim.partition.owned,
            histories: &mut sim.world.histories,
            remapped: &mut Vec::new(),
            excursions: &mut sim.totals.excursions,
            loads: &mut Vec::new(),
            neighbours: &mut sim.last.neighbours,
        };
        // For reaches grown by half the neighbour list's skin, as the step's exchanges.
        let halo = reach + 0.5 * sim.parameters.skin;
        let frame = mpi.frame(sim.world.cell.as_ref());
        mpi.ghosts(holding, &frame, frame.halo(2.0 * halo), None);
        sim.partition.ghost_reach = reach;
        sim.partition.processes = Some(Box::new(mpi));
    }

    fn frame(&self, cell: Option<&Cell>) -> Frame {
        match (cell, &self.frame) {
            (Some(c), _) => Frame::of_cell(c),
            (None, Some(f)) => f.clone(),
            (None, None) => unreachable!("a run without a cell has the box frame"),
        }
    }

    /// Sends `parts[r]` to process `r`, receives what each sent; `T` plain numbers.
    fn all_to_all<T: Equivalence + Default + Clone>(&self, parts: Vec<Vec<T>>) -> Vec<Vec<T>> {
        let counts: Vec<::mpi::Count> = parts.iter().map(|p| p.len() as ::mpi::Count).collect();
        let mut incoming = vec![0 as ::mpi::Count; counts.len()];
        self.comm.all_to_all_into(&counts[..], &mut incoming[..]);
        let mut send: Vec<T> = parts.concat();
        let mut recv = buffer(incoming.iter().map(|&n| n as usize).sum());
        // An empty Vec<u8> points at address 1, which OpenMPI reads as MPI_IN_PLACE.
        send.reserve(1);
        {
            let (so, ro) = (offsets(&counts), offsets(&incoming));
            let out = Partition::new(&send[..], &counts[..], &so[..]);
            let mut into = PartitionMut::new(&mut recv[..], &incoming[..], &ro[..]);
            self.comm.all_to_all_varcount_into(&out, &mut into);
        }
        split(&recv, incoming.iter().map(|&n| n as usize))
    }

    /// Every process's `mine`, concatenated in process order.
    fn all_gather<T: Equivalence + Default + Clone>(&self, mine: &[T]) -> Vec<T> {
        let count = mine.len() as ::mpi::Count;
        let mut counts = vec![0 as ::mpi::Count; self.comm.size() as usize];
        self.comm.all_gather_into(&count, &mut counts[..]);
        let offsets = offsets(&counts);
        let mut all = buffer(counts.iter().map(|&n| n as usize).sum());
        let mut mine = mine.to_vec();
        mine.reserve(1);
        let mine = &mine[..];
        {
            let mut into = PartitionMut::new(&mut all[..], &counts[..], &offsets[..]);
            self.comm.all_gather_varcount_into(mine, &mut into);
        }
        all
    }

    /// The owned grains' fractional coordinates, and those that the ghosts' halo `halo` takes
    /// out of this subdomain (the others stay in it, alone: [`Grid::alone`]).
    fn locate(&self, bodies: &[Body], frame: &Frame, halo: [f64; 3]) -> Located {
        let alone = self.grid.alone(self.grid.coordinates(self.rank), halo);
        let fractional: Vec<Vector3<f64>> = bodies
            .iter()
            .map(|b| frame.fractional(&b.position))
            .collect();
        let near = (0..fractional.len())
            .filter(|&i| !alone.holds(&fractional[i]))
            .collect();
        Located { fractional, near }
    }

    /// The grains whose centres left this process's subdomain, to their owners; where the
    /// grains owned are ([`Mpi::locate`], for the ghosts' `halo`) if no grain left or came.
    fn migrate(&mut self, h: &mut Holding, frame: &Frame, halo: [f64; 3]) -> Option<Located> {
        let size = self.comm.size() as usize;
        let owned = *h.owned;
        // A grain alone in the subdomain with the halo stays; the others are tested with no
        // halo, and those outside located.
        let located = self.locate(&h.bodies[..owned], frame, halo);
        let here = self.grid.alone(self.grid.coordinates(self.rank), [0.0; 3]);
        let leaving: Vec<(usize, usize)> = (located.near.iter())
            .map(|&i| (i, &located.fractional[i]))
            .filter(|(_, s)| !here.holds(s))
            .map(|(i, s)| (i, self.grid.owner(s)))
            .filter(|&(_, owner)| owner != self.rank)
            .collect();
        let mut parts: Vec<Vec<u8>> = vec![Vec::new(); size];
        // The migration is collective: every process takes part, most with nothing to send.
        let shares =
            (h.neighbours).hand_over(&leaving.iter().map(|&(i, _)| h.ids[i]).collect::<Vec<_>>());
        for (&(i, owner), share) in leaving.iter().zip(shares) {
            let id = h.ids[i];
            // The pairs it computes: those it is the first grain of.
            let histories = (h.histories.iter())
                .filter(|(k, _)| k.a == id)
                .map(|(k, hist)| (*k, hist.save()))
                .collect();
            let remapped = h.remapped.iter().find(|(r, _)| *r == id).map(|r| r.1);
            let excursions = (h.excursions.iter())
                .filter(|x| x.grain == id as usize)
                .copied()
                .collect();
            let load = h.loads.iter().find(|(r, _)| *r == id).map(|r| r.1);
            let migrant = Migrant {
                id,
                body: h.bodies[i].clone(),
                histories,
                remapped,
                excursions,
                load,
                neighbours: share,
            };
            let part = &mut parts[owner];
            let json = serde_json::to_vec(&migrant).expect("a migrant serializes");
            part.extend((json.len() as u64).to_le_bytes());
            part.extend(json);
        }
        self.traffic.migrants += leaving.len() as u64;
        self.traffic.migrant_bytes += parts.iter().map(|p| p.len() as u64).sum::<u64>();
        let arrived = self.all_to_all(parts);
        if leaving.is_empty() && arrived.iter().all(|a| a.is_empty()) {
            return Some(located);
        }
        // Drop the leavers (ghosts go too: the ghost exchange follows).
        h.bodies.truncate(owned);
        h.ids.truncate(owned);
        let gone: Vec<u32> = leaving.iter().map(|&(i, _)| h.ids[i]).collect();
        h.remapped.retain(|(r, _)| !gone.contains(r));
        h.excursions.retain(|x| !gone.contains(&(x.grain as u32)));
        h.loads.retain(|(r, _)| !gone.contains(r));
        // In place, in id order: moving every grain's body through new lists cost more than
        // the migrants themselves.
        let mut stays = vec![true; owned];
        for &(i, _) in &leaving {
            stays[i] = false;
        }
        let mut k = 0..;
        h.ids.retain(|_| stays[k.next().expect("a grain's index")]);
        let mut k = 0..;
        h.bodies
            .retain(|_| stays[k.next().expect("a grain's index")]);
        let mut incoming = Vec::new();
        for bytes in arrived {
            let mut rest = &bytes[..];
            while !rest.is_empty() {
                let (len, tail) = rest.split_at(8);
                let len = u64::from_le_bytes(len.try_into().expect("8 bytes")) as usize;
                let (json, tail) = tail.split_at(len);
                rest = tail;
                let m: Migrant = serde_json::from_slice(json).expect("a migrant reads back");
                incoming.push(m);
            }
        }
        let mut shares = Vec::with_capacity(incoming.len());
        for m in incoming {
            shares.push((m.id, m.neighbours));
            for (key, saved) in m.histories {
                if h.histories.binary_search_by_key(&key, |e| e.0).is_err() {
                    let nodes = |i: u32| self.nodes[i as usize];
                    let history = (self.law.load(&key, saved, &nodes))
                        .expect("a migrant's history loads as it was saved");
                    let at = h.histories.partition_point(|e| e.0 < key);
                    h.histories.insert(at, (key, history));
                }
            }
            if let Some(dv) = m.remapped {
                h.remapped.push((m.id, dv));
            }
            h.excursions.extend(m.excursions);
            h.loads.extend(m.load.map(|load| (m.id, load)));
            let at = h.ids.partition_point(|&id| id < m.id);
            h.ids.insert(at, m.id);
            h.bodies.insert(at, m.body);
        }
        *h.owned = h.ids.len();
        h.neighbours.take_over(h.ids, shares);
        h.histories
            .retain(|(k, _)| h.ids.binary_search(&k.a).is_ok());
        None
    }

    /// The ghosts: each owned grain to the processes whose subdomains it reaches within the
    /// halo `halo` ([`Frame::halo`] of twice the largest reach) in `frame`; `located`: where
    /// the grains owned are, if the migration found them ([`Mpi::locate`]).
    fn ghosts(&mut self, h: Holding, frame: &Frame, halo: [f64; 3], located: Option<Located>) {
        let size = self.comm.size() as usize;
        let owned = *h.owned;
        let Located { fractional, near } =
            located.unwrap_or_else(|| self.locate(&h.bodies[..owned], frame, halo));
        let mut parts: Vec<Vec<f64>> = vec![Vec::new(); size];
        // The grains this process holds alone were left out on their coordinates alone: the
        // bodies, 608 bytes each, are read for those that go out.
        for i in near {
            let (b, id) = (&h.bodies[i], h.ids[i]);
            for r in self.grid.reached(&fractional[i], halo) {
                if r == self.rank {
                    continue;
                }
                let p = &mut parts[r];
                let q = b.orientation.coords;
                p.push(f64::from(id));
                p.extend(b.image.map(f64::from));
                p.extend(b.position.iter());
                p.extend(q.iter());
                p.extend(b.velocity.iter());
                p.extend(b.angular_velocity.iter());
                if let Some(m) = &b.modes {
                    p.extend(&m.eps);
                    p.extend(&m.rate);
                }
                self.traffic.ghosts += 1;
            }
        }
        self.traffic.ghost_bytes += 8 * parts.iter().map(|p| p.len() as u64).sum::<u64>();
        let arrived = self.all_to_all(parts);
        // Each arrival's owner, id and record, in the order of their owners and, within each,
        // of its grains (by id).
        let mut records = Vec::with_capacity(h.ids.len() - owned);
        for (owner, part) in arrived.iter().enumerate() {
            let mut rest = &part[..];
            while !rest.is_empty() {
                let id = rest[0] as u32;
                let m = self.modes[id as usize];
                let (x, tail) = rest.split_at(GHOST_HEAD + 2 * m);
                rest = tail;
                records.push((owner, id, x));
            }
        }
        let held = self.ghost_owners.len() == h.ids.len() - owned
            && (h.ids[owned..].iter().zip(&self.ghost_owners))
                .map(|(&id, &owner)| (owner, id))
                .eq(records.iter().map(|&(owner, id, _)| (owner, id)));
        if held {
            // The same ghosts as last step, from the same owners (most steps): updated where
            // they are. A map of the held ghosts by id, and their moves in and out of it, took
            // a fifth of the exchange (docs/mpi.md, "Scaling").
            for (b, (_, _, x)) in h.bodies[owned..].iter_mut().zip(&records) {
                ghost_state(b, x);
            }
            return;
        }
        // Last step's ghosts are reused where they come again (their static parts).
        let mut old: std::collections::HashMap<u32, Body> = (h.ids.drain(owned..))
            .zip(h.bodies.drain(owned..))
            .collect();
        self.owners.clear();
        self.ghost_owners.clear();
        for (owner, id, x) in records {
            let mut b = old
                .remove(&id)
                .unwrap_or_else(|| self.templates[id as usize].clone());
            ghost_state(&mut b, x);
            self.owners.insert(id, owner);
            self.ghost_owners.push(owner);
            h.ids.push(id);
            h.bodies.push(b);
        }
    }
}

/// Where a process's grains are ([`Mpi::locate`]).
struct Located {
    /// The fractional coordinates of the grains owned.
    fractional: Vec<Vector3<f64>>,
    /// The grains owned (indices) that a ghosts' halo takes out of the subdomain.
    near: Vec<usize>,
}

/// A ghost's state from its record (the layout [`Mpi::ghosts`] sends).
fn ghost_state(b: &mut Body, x: &[f64]) {
    b.image = [x[1], x[2], x[3]].map(|v| v as i32);
    b.position = Vector3::new(x[4], x[5], x[6]);
    b.orientation = UnitQuaternion::new_unchecked(Quaternion::new(x[10], x[7], x[8], x[9]));
    b.velocity = Vector3::new(x[11], x[12], x[13]);
    b.angular_velocity = Vector3::new(x[14], x[15], x[16]);
    if let Some(modes) = &mut b.modes {
        let m = modes.eps.len();
        modes.eps.copy_from_slice(&x[GHOST_HEAD..GHOST_HEAD + m]);
        modes.rate.copy_from_slice(&x[GHOST_HEAD + m..]);
    }
}

/// Where each part of `counts` starts in a buffer holding them in turn.
fn offsets(counts: &[::mpi::Count]) -> Vec<::mpi::Count> {
    counts
        .iter()
        .scan(0, |at, &n| {
            let here = *at;
            *at += n;
            Some(here)
        })
        .collect()
}

/// `all` cut into parts of `lengths`, in turn.
fn split<T: Clone>(all: &[T], lengths: impl Iterator<Item = usize>) -> Vec<Vec<T>> {
    let mut rest = all;
    lengths
        .map(|n| {
            let (part, tail) = rest.split_at(n);
            rest = tail;
            part.to_vec()
        })
        .collect()
}

/// `n` default values in an allocation: never the dangling pointer of an empty `Vec`, which
/// for bytes is address 1, OpenMPI's `MPI_IN_PLACE`.
fn buffer<T: Default + Clone>(n: usize) -> Vec<T> {
    let mut b = Vec::with_capacity(n.max(1));
    b.resize(n, T::default());
    b
}

// SAFETY: MPI is initialized at thread level `MPI_THREAD_SERIALIZED` or higher (the caller of
// `Mpi::decompose` checks it: docs/mpi.md), at which any thread may call MPI as long as the calls
// do not overlap. A run steps its simulation on one thread at a time (the rayon workers inside
// a step make no MPI call), so the communicator moves with the simulation to the thread that
// runs it, and is never used from two at once.
#[allow(unsafe_code)]
unsafe impl Send for Mpi {}

impl Processes for Mpi {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.comm.size() as usize
    }

    fn all_wrapped(&self, mine: Vec<Wrapped>) -> Vec<Wrapped> {
        let flat: Vec<i64> = mine
            .iter()
            .flat_map(|(id, m)| [i64::from(*id), m[0].into(), m[1].into(), m[2].into()])
            .collect();
        let all = self.all_gather(&flat);
        let mut wrapped: Vec<Wrapped> = all
            .chunks_exact(4)
            .map(|c| (c[0] as u32, [c[1] as i32, c[2] as i32, c[3] as i32]))
            .collect();
        wrapped.sort_unstable();
        wrapped
    }

    fn exchange(&mut self, mut h: Holding, cell: Option<&Cell>, reach: f64) -> [f64; 3] {
        let clock = Instant::now();
        self.comm.barrier();
        let waited = clock.elapsed().as_secs_f64();
        self.traffic.exchanges += 1;
        let frame = self.frame(cell);
        if self.rebalance > 0 && self.traffic.exchanges.is_multiple_of(self.rebalance) {
            let mine: Vec<f64> = (h.bodies[..*h.owned].iter())
                .flat_map(|b| {
                    frame
                        .fractional(&b.position)
                        .iter()
                        .copied()
                        .collect::<Vec<_>>()
                })
                .collect();
            let s: Vec<Vector3<f64>> = (self.all_gather(&mine).chunks_exact(3))
                .map(Vector3::from_column_slice)
                .collect();
            // Every process gathers the same positions in the same order: the same cuts.
            self.grid.rebalance(&s);
            self.traffic.rebalances += 1;
        }
        let halo = frame.halo(2.0 * reach);
        let located = self.migrate(&mut h, &frame, halo);
        let migrated = clock.elapsed().as_secs_f64();
        self.ghosts(h, &frame, halo, located);
        [
            waited,
            migrated - waited,
            clock.elapsed().as_secs_f64() - migrated,
        ]
    }

    fn traffic(&self) -> Traffic {
        self.traffic
    }

    fn grid(&self) -> [usize; 3] {
        self.grid.dims
    }

    fn sum_walls(&self, mine: Vec<WallTerm>, walls: &mut [Wall]) {
        let flat: Vec<f64> = mine
            .iter()
            .flat_map(|(a, w, f, k)| [f64::from(*a), f64::from(*w), f.x, f.y, f.z, *k])
            .collect();
        let all = self.all_gather(&flat);
        let mut terms: Vec<&[f64]> = all.chunks_exact(6).collect();
        // The pairs' key order: by grain, then wall (each process's are sorted, and no grain
        // is two processes').
        terms.sort_by(|x, y| (x[0], x[1]).partial_cmp(&(y[0], y[1])).expect("ids"));
        for t in terms {
            let wall = &mut walls[t[1] as usize];
            wall.force += Vector3::new(t[2], t[3], t[4]);
            wall.stiffness += t[5];
        }
    }

    fn all_bytes(&self, mine: Vec<u8>) -> Vec<Vec<u8>> {
        let lengths = self.all_gather(&[mine.len() as u64]);
        let all = self.all_gather(&mine);
        split(&all, lengths.iter().map(|&n| n as usize))
    }

    fn gather_bytes(&self, mine: Vec<u8>) -> Option<Vec<Vec<u8>>> {
        let root = self.comm.process_at_rank(0);
        let length = mine.len() as ::mpi::Count;
        let mut mine = mine;
        mine.reserve(1);
        if self.rank != 0 {
            root.gather_into(&length);
            root.gather_varcount_into(&mine[..]);
            return None;
        }
        let mut lengths = vec![0 as ::mpi::Count; self.comm.size() as usize];
        root.gather_into_root(&length, &mut lengths[..]);
        let offsets = offsets(&lengths);
        let mut all = buffer(lengths.iter().map(|&n| n as usize).sum());
        {
            let mut into = PartitionMut::new(&mut all[..], &lengths[..], &offsets[..]);
            root.gather_varcount_into_root(&mine[..], &mut into);
        }
        Some(split(&all, lengths.iter().map(|&n| n as usize)))
    }

    fn sum(&self, values: &mut [f64]) {
        // Gathered and summed in process order, the same in every process: an `MPI_Allreduce`
        // need not give every process the same bits, and the cell's servo and the run's stop
        // decisions must agree everywhere.
        let all = self.all_gather(values);
        values.fill(0.0);
        for part in all.chunks_exact(values.len().max(1)) {
            for (v, x) in values.iter_mut().zip(part) {
                *v += x;
            }
        }
    }

    fn max(&self, value: f64) -> f64 {
        let mut largest = value;
        self.comm.all_reduce_into(
            &value,
            &mut largest,
            ::mpi::collective::SystemOperation::max(),
        );
        largest
    }

    fn to_owners(&mut self, mine: Parcels) -> Parcels {
        // Per parcel: its grain, the key's grains and image shift (a pair that crosses a cut is
        // between two grains), its count of numbers, the numbers.
        let mut parts: Vec<Vec<f64>> = vec![Vec::new(); self.comm.size() as usize];
        for k in 0..mine.len() {
            let (grain, key, values) = mine.get(k);
            let (Some(&owner), Partner::Body(b)) = (self.owners.get(&grain), key.b) else {
                unreachable!("a parcel goes to a ghost's owner, about a pair of grains")
            };
            let part = &mut parts[owner];
            part.extend([f64::from(grain), f64::from(key.a), f64::from(b)]);
            part.extend(key.shift.map(f64::from));
            part.push(values.len() as f64);
            part.extend(values);
        }
        self.traffic.parcel_bytes += 8 * parts.iter().map(|p| p.len() as u64).sum::<u64>();
        let mut arrived = Parcels::default();
        for part in self.all_to_all(parts) {
            let mut rest = &part[..];
            while let [grain, a, b, s0, s1, s2, n, tail @ ..] = rest {
                let key = PairKey {
                    a: *a as u32,
                    b: Partner::Body(*b as u32),
                    shift: [*s0, *s1, *s2].map(|v| v as i32),
                };
                let (values, tail) = tail.split_at(*n as usize);
                arrived.push(*grain as u32, key, values.iter().copied());
                rest = tail;
            }
        }
        // Each process's parcels in key order, the processes' one after the other: merged.
        let mut order: Vec<usize> = (0..arrived.len()).collect();
        order.sort_unstable_by_key(|&k| arrived.keys[k]);
        let mut sorted = Parcels::default();
        for k in order {
            let (grain, key, values) = arrived.get(k);
            sorted.push(grain, key, values.iter().copied());
        }
        sorted
    }
}
