//! The compact history store shared by many contacts (docs/jaeger.md section 7; Kuhn 2011, Section 3.3
//! and Fig. 7).
//!
//! A contact's equivalent history is a stack of legs. Its top leg (the one the next step works
//! on) lives in the contact's [`ContactState`]; the legs below it live in one arena shared by all
//! contacts, as 24-byte entries: the leg's end indentation `zeta*` (`f64`) and its slope `p`
//! (2 x `f64`).
//!
//! Layout: the arena is cut into chunks of [`LEGS_PER_CHUNK`] consecutive entries, each with a
//! `u32` link kept apart (4 bytes per chunk). A contact's legs fill a chunk from its first slot
//! up; a push onto a full chunk takes a fresh chunk whose link names the leg below its first slot,
//! and a pop that empties a chunk returns it to the free list. So a contact's most recent legs sit
//! next to each other: a push writes beside the slot the last push wrote, and a slip step that
//! removes legs reads them downwards through consecutive memory. (A free list of single slots,
//! the first layout, scattered each contact's legs through the whole arena, so that with
//! histories of hundreds of legs nearly every push and every leg read missed the caches.)
//! Chunk 0 holds the origin `(0, 0, 0)` in its slot 0, which every history starts from; its link
//! heads the list of free chunks.
//!
//! Why the top leg is kept apart: an elastic step (the common case) then reads nothing from the
//! arena and writes one slot, and a slip step reads one arena entry per leg it examines.
//!
//! Kuhn stores `N* = N(zeta*)` and a link per entry (36 bytes). Here `N*` is recomputed from
//! `zeta*` when needed (a square root), which saves 8 of those bytes and cannot disagree with
//! `zeta*`, and the link is one per chunk.
//!
//! Push and pop are O(1). Chunks freed by one contact are reused by the next contact that needs
//! one, so once the arena has grown to the simulation's working size a step allocates nothing.
//! When no chunk is free a push grows the arena (`Vec` doubling: amortized O(1), so the memory
//! follows the peak total history). Each contact holds at most one partly filled chunk, so the
//! memory is the legs' plus less than one chunk per contact. A host that prefers a hard memory
//! bound checks [`HistoryStore::fill`] and calls [`HistoryStore::straighten`] on its contacts,
//! Kuhn's emergency measure (docs/jaeger.md section 5, last paragraph).

use crate::params::ContactParams;

/// End of the free list.
const NONE: u32 = u32::MAX;

/// Per-contact state kept by the host alongside its contact (56 bytes): the top leg of the
/// history, the arena index of the leg below it, and the previous tangential force.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ContactState {
    /// Arena index of the leg below the top (0: the origin); [`NONE`] when the history is empty
    /// and the "top" is the origin itself.
    pub(crate) below: u32,
    /// `zeta*` of the top leg (0 at the origin): the previous step's half indentation.
    pub(crate) zeta: f64,
    /// `N(zeta*)` of the top leg: the previous step's normal force.
    pub(crate) normal: f64,
    /// Slope of the top leg.
    pub(crate) slope: [f64; 2],
    /// The previous step's tangential force, local frame (Kuhn's `T_old`).
    pub(crate) tangential: [f64; 2],
}

impl ContactState {
    /// A contact with no history (not touching, or just touching).
    pub const fn new() -> Self {
        ContactState {
            below: NONE,
            zeta: 0.0,
            normal: 0.0,
            slope: [0.0; 2],
            tangential: [0.0; 2],
        }
    }

    /// The tangential force of the last step, local frame (force units).
    pub fn tangential_force(&self) -> [f64; 2] {
        self.tangential
    }

    /// Whether the contact has a history (at least one leg): it touched at its last step.
    #[inline]
    pub fn has_legs(&self) -> bool {
        self.below != NONE
    }
}

impl Default for ContactState {
    fn default() -> Self {
        Self::new()
    }
}

/// One leg of an equivalent history, as [`HistoryStore::history`] reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Leg {
    /// TOTAL overlap at the end of the leg (length).
    pub overlap: f64,
    /// Slope `p = dT/dN` along the leg (local x, y); `|p| = mu` on slip legs, `< mu` on elastic ones.
    pub slope: [f64; 2],
}

/// One arena slot: a leg below the top of some contact's history.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
struct Entry {
    /// `zeta*_k`: half indentation at the end of leg k (Kuhn's units).
    zeta: f64,
    /// `p_k`: slope of leg k, `dT/dN` along it (force-ratio units).
    slope: [f64; 2],
}

const EMPTY: Entry = Entry {
    zeta: 0.0,
    slope: [0.0; 2],
};

/// Bytes of one history entry (the links are one `u32` per [`LEGS_PER_CHUNK`] entries).
pub const BYTES_PER_ENTRY: usize = size_of::<Entry>();

/// Consecutive arena slots per chunk (a power of two). Eight 24-byte entries are three cache
/// lines; a contact wastes at most seven slots.
pub const LEGS_PER_CHUNK: usize = 8;

/// [`LEGS_PER_CHUNK`] as an arena index.
const CHUNK: u32 = LEGS_PER_CHUNK as u32;

/// The arena of history legs for any number of contacts. See the [module docs](self).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct HistoryStore {
    /// Chunk `c` is `entries[c * CHUNK..(c + 1) * CHUNK]`.
    entries: Vec<Entry>,
    /// Per chunk: for a chunk in use, the slot of the leg below its first slot (0: the origin);
    /// for a free chunk, the next free chunk. `links[0]` heads the free list.
    links: Vec<u32>,
    /// Legs held in the arena.
    used: usize,
    /// Chunks in use (chunk 0 excluded).
    chunks_used: usize,
}

impl HistoryStore {
    /// An arena with room for `capacity` legs (rounded up to whole chunks) before it first grows.
    pub fn with_capacity(capacity: usize) -> Self {
        let mut store = HistoryStore {
            entries: vec![EMPTY; LEGS_PER_CHUNK],
            links: vec![NONE],
            used: 0,
            chunks_used: 0,
        };
        store.grow(capacity.div_ceil(LEGS_PER_CHUNK).max(1));
        store
    }

    /// Appends `extra` free chunks and threads them onto the free list.
    fn grow(&mut self, extra: usize) {
        let start = self.links.len();
        let end = start + extra;
        assert!(
            end * LEGS_PER_CHUNK < NONE as usize,
            "history store exceeds 2^32 entries"
        );
        let old_free = self.links[0];
        self.entries.resize(end * LEGS_PER_CHUNK, EMPTY);
        self.links
            .extend((start + 1..=end).map(|next| if next == end { old_free } else { next as u32 }));
        self.links[0] = start as u32;
    }

    /// Legs held in the arena, over all contacts (each contact's top leg is in its state).
    pub fn len(&self) -> usize {
        self.used
    }

    /// Whether the arena holds no leg.
    pub fn is_empty(&self) -> bool {
        self.used == 0
    }

    /// Slots allocated (used, free, or unused in a contact's partly filled chunk), excluding
    /// chunk 0.
    pub fn capacity(&self) -> usize {
        self.entries.len() - LEGS_PER_CHUNK
    }

    /// Fraction of the allocated slots that hold a leg.
    pub fn fill(&self) -> f64 {
        self.used as f64 / self.capacity() as f64
    }

    /// Bytes of the chunks in use (entries and links), the history memory the contacts hold
    /// beyond their [`ContactState`]s; the arena's free chunks are not counted.
    pub fn bytes_in_use(&self) -> usize {
        self.chunks_used * (LEGS_PER_CHUNK * BYTES_PER_ENTRY + size_of::<u32>())
    }

    /// Bytes the arena has allocated (entries and links, free chunks included).
    pub fn bytes_allocated(&self) -> usize {
        self.entries.capacity() * BYTES_PER_ENTRY + self.links.capacity() * size_of::<u32>()
    }

    /// Number of legs in a contact's history, its top leg included (walks the list: O(length)).
    pub fn history_len(&self, state: &ContactState) -> usize {
        self.history_iter(state).count()
    }

    /// A contact's equivalent history, from the most recent leg down to the first (docs/jaeger.md
    /// section 3.2), in the public units: each leg ends at a TOTAL overlap and has a slope
    /// `p = dT/dN` (local frame).
    pub fn history(&self, state: &ContactState) -> Vec<Leg> {
        self.history_iter(state).collect()
    }

    fn history_iter(&self, state: &ContactState) -> impl Iterator<Item = Leg> + '_ {
        let top = state.has_legs().then_some((state.zeta, state.slope));
        let mut k = if state.has_legs() { state.below } else { 0 };
        let below = std::iter::from_fn(move || {
            (k != 0).then(|| {
                let e = self.entries[k as usize];
                k = self.below(k);
                (e.zeta, e.slope)
            })
        });
        top.into_iter().chain(below).map(|(zeta, slope)| Leg {
            overlap: 2.0 * zeta,
            slope,
        })
    }

    /// `zeta*` of arena slot `k` (0 for the origin).
    #[inline]
    pub(crate) fn zeta(&self, k: u32) -> f64 {
        self.entries[k as usize].zeta
    }

    /// The leg below arena slot `k` (not the origin; 0: the origin).
    #[inline]
    pub(crate) fn below(&self, k: u32) -> u32 {
        debug_assert!(k != 0, "the origin has no leg below");
        if !k.is_multiple_of(CHUNK) {
            k - 1
        } else {
            self.links[(k / CHUNK) as usize]
        }
    }

    /// Slope of arena slot `k`.
    #[inline]
    pub(crate) fn slope(&self, k: u32) -> [f64; 2] {
        self.entries[k as usize].slope
    }

    /// Pushes a leg ending at `zeta` (normal force `normal`) with slope `p` onto a contact's
    /// history: the previous top moves into the arena, in the slot after the contact's last one
    /// or in a fresh chunk.
    #[inline]
    pub(crate) fn push(&mut self, state: &mut ContactState, zeta: f64, normal: f64, p: [f64; 2]) {
        if state.has_legs() {
            let s = state.below;
            let slot = if s != 0 && !(s + 1).is_multiple_of(CHUNK) {
                s + 1
            } else {
                self.take_chunk(s)
            };
            self.entries[slot as usize] = Entry {
                zeta: state.zeta,
                slope: state.slope,
            };
            state.below = slot;
            self.used += 1;
        } else {
            state.below = 0;
        }
        state.zeta = zeta;
        state.normal = normal;
        state.slope = p;
    }

    /// Takes a free chunk (growing the arena if none is) to continue the list whose top is slot
    /// `below`; returns the chunk's first slot.
    fn take_chunk(&mut self, below: u32) -> u32 {
        if self.links[0] == NONE {
            self.grow(self.links.len() - 1);
        }
        let c = self.links[0];
        self.links[0] = self.links[c as usize];
        self.links[c as usize] = below;
        self.chunks_used += 1;
        c * CHUNK
    }

    /// Pops a contact's top leg (it must have one); the leg below becomes the top. `normal` is
    /// the normal force at that leg's end.
    #[inline]
    pub(crate) fn pop(&mut self, state: &mut ContactState, normal: f64) {
        debug_assert!(state.has_legs(), "pop of an empty history");
        let s = state.below;
        if s == 0 {
            state.below = NONE;
            state.zeta = 0.0;
            state.normal = 0.0;
            state.slope = [0.0; 2];
            return;
        }
        let e = self.entries[s as usize];
        state.below = self.below(s);
        state.zeta = e.zeta;
        state.normal = normal;
        state.slope = e.slope;
        if s.is_multiple_of(CHUNK) {
            // The chunk is empty now: back to the free list.
            let c = (s / CHUNK) as usize;
            self.links[c] = self.links[0];
            self.links[0] = c as u32;
            self.chunks_used -= 1;
        }
        self.used -= 1;
    }

    /// Forgets a contact's history (loss of contact, or the contact is deleted): its legs return
    /// to the free list and its force is zeroed.
    pub fn release(&mut self, state: &mut ContactState) {
        while state.has_legs() {
            self.pop(state, 0.0);
        }
        *state = ContactState::new();
    }

    /// Kuhn's emergency "straighten" (DEMPLA `stratn`): replaces each history by one leg from the
    /// origin to the current indentation with slope `T / N`, which keeps every contact's force
    /// and frees all its other legs. The contacts forget their past, so later forces differ from
    /// the exact ones: this is a memory bound, not an approximation of known size.
    pub fn straighten<'a>(
        &mut self,
        contacts: impl IntoIterator<Item = (&'a ContactParams, &'a mut ContactState)>,
    ) {
        for (params, state) in contacts {
            if !state.has_legs() {
                continue;
            }
            let (zeta, t) = (state.zeta, state.tangential);
            let n = params.normal_force_half(zeta);
            self.release(state);
            let p = if n > 0.0 {
                [t[0] / n, t[1] / n]
            } else {
                [0.0; 2]
            };
            self.push(state, zeta, n, p);
            state.tangential = t;
        }
    }
}

impl Default for HistoryStore {
    fn default() -> Self {
        Self::with_capacity(64)
    }
}
