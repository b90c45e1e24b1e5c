//! The compact history store shared by many contacts (docs/jaeger.md section 7; Kuhn 2011, Section 3.3
//! and Fig. 7).
//!
//! A contact's equivalent history is a stack of legs. Its top leg (the one the next step works
//! on) lives in the contact's [`ContactState`]; the legs below it live in one arena shared by all
//! contacts, 28 bytes per entry: the leg's end indentation `zeta*` (`f64`), its slope `p`
//! (2 x `f64`) and a `u32` link to the leg below, packed together so that reading a leg touches
//! one cache line. Slot 0 of the arena is the origin `(0, 0, 0)` that every history starts from;
//! its link heads the list of free slots.
//!
//! Why the top leg is kept apart: an elastic step (the common case) then reads nothing from the
//! arena and writes one slot, and a slip step reads one arena entry per leg it examines. With
//! histories of hundreds of legs per contact the arena is far larger than the caches, so each
//! arena read is a likely cache miss; Kuhn's layout reads the top entry as well.
//!
//! Kuhn also stores `N* = N(zeta*)` per entry (36 bytes). Here it is recomputed from `zeta*`
//! when needed (a square root), which saves 8 of those bytes and cannot disagree with `zeta*`.
//!
//! Push and pop are O(1). Slots freed by one contact are reused by the next push of any contact,
//! so once the arena has grown to the simulation's working size a step allocates nothing. When
//! the free list is empty a push grows the arena (`Vec` doubling: amortized O(1), so the memory
//! follows the peak total history). A host that prefers a hard memory bound checks
//! [`HistoryStore::fill`] and calls [`HistoryStore::straighten`] on its contacts, Kuhn's
//! emergency measure (docs/jaeger.md section 5, last paragraph).

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

    /// Whether the history has at least one leg.
    #[inline]
    pub(crate) fn has_legs(&self) -> bool {
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

/// One arena slot. Packed to 28 bytes (4-byte alignment): unaligned `f64` loads cost nothing
/// extra on the targets we build for, and fields are only ever copied, never borrowed.
#[derive(Debug, Clone, Copy)]
#[repr(C, packed(4))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
struct Entry {
    /// `zeta*_k`: half indentation at the end of leg k (Kuhn's units).
    zeta: f64,
    /// `p_k`: slope of leg k, `dT/dN` along it (force-ratio units).
    slope: [f64; 2],
    /// For a used slot, the leg below; for a free slot, the next free slot (the origin's link
    /// heads the free list).
    link: u32,
}

/// Bytes of one history entry, links included.
pub const BYTES_PER_ENTRY: usize = size_of::<Entry>();

/// The arena of history legs for any number of contacts. See the [module docs](self).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct HistoryStore {
    entries: Vec<Entry>,
    used: usize,
}

impl HistoryStore {
    /// An arena with room for `capacity` legs before it first grows.
    pub fn with_capacity(capacity: usize) -> Self {
        let origin = Entry {
            zeta: 0.0,
            slope: [0.0; 2],
            link: NONE,
        };
        let mut store = HistoryStore {
            entries: vec![origin],
            used: 0,
        };
        store.grow(capacity.max(1));
        store
    }

    /// Appends `extra` free slots and threads them onto the free list.
    fn grow(&mut self, extra: usize) {
        let start = self.entries.len();
        let end = start + extra;
        assert!(end < NONE as usize, "history store exceeds 2^32 entries");
        let old_free = self.entries[0].link;
        self.entries.extend((start + 1..=end).map(|next| Entry {
            zeta: 0.0,
            slope: [0.0; 2],
            link: if next == end { old_free } else { next as u32 },
        }));
        self.entries[0].link = start as u32;
    }

    /// Legs held in the arena, over all contacts (each contact's top leg is in its state).
    pub fn len(&self) -> usize {
        self.used
    }

    /// Whether the arena holds no leg.
    pub fn is_empty(&self) -> bool {
        self.used == 0
    }

    /// Slots allocated (used or free), excluding the origin.
    pub fn capacity(&self) -> usize {
        self.entries.len() - 1
    }

    /// Fraction of the allocated slots in use.
    pub fn fill(&self) -> f64 {
        self.used as f64 / self.capacity() as f64
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
        let mut k = if state.has_legs() {
            state.below as usize
        } else {
            0
        };
        let below = std::iter::from_fn(move || {
            (k != 0).then(|| {
                let e = self.entries[k];
                k = e.link as usize;
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

    /// The leg below arena slot `k` (0: the origin).
    #[inline]
    pub(crate) fn below(&self, k: u32) -> u32 {
        self.entries[k as usize].link
    }

    /// Slope of arena slot `k`.
    #[inline]
    pub(crate) fn slope(&self, k: u32) -> [f64; 2] {
        self.entries[k as usize].slope
    }

    /// Pushes a leg ending at `zeta` (normal force `normal`) with slope `p` onto a contact's
    /// history: the previous top moves into the arena.
    #[inline]
    pub(crate) fn push(&mut self, state: &mut ContactState, zeta: f64, normal: f64, p: [f64; 2]) {
        if state.has_legs() {
            if self.entries[0].link == NONE {
                self.grow(self.capacity());
            }
            let s = self.entries[0].link;
            self.entries[0].link = self.entries[s as usize].link;
            self.entries[s as usize] = Entry {
                zeta: state.zeta,
                slope: state.slope,
                link: state.below,
            };
            state.below = s;
            self.used += 1;
        } else {
            state.below = 0;
        }
        state.zeta = zeta;
        state.normal = normal;
        state.slope = p;
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
        state.below = e.link;
        state.zeta = e.zeta;
        state.normal = normal;
        state.slope = e.slope;
        self.entries[s as usize].link = self.entries[0].link;
        self.entries[0].link = s;
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
