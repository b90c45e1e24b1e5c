//! The compact history store shared by many contacts (JAEGER.md section 7; Kuhn 2011, Section 3.3
//! and Fig. 7).
//!
//! One arena holds the legs of every contact's equivalent history, 28 bytes per entry: the leg's
//! end indentation `zeta*` (`f64`), its slope `p` (2 x `f64`) and a `u32` link, packed together
//! so that reading a leg touches one cache line. A contact is a [`ContactState`]: the index of
//! its top leg, a copy of that leg's `zeta*` (an elastic step, the common case, then reads
//! nothing from the arena), and its previous tangential force. Each leg links to the one below
//! it; slot 0 is the origin `(0, 0, 0)` that every history starts from, and the origin's link
//! heads the list of free slots.
//!
//! Kuhn also stores `N* = N(zeta*)` per entry (36 bytes). Here it is recomputed from `zeta*`
//! when needed (a square root), which saves 8 of those bytes and cannot disagree with `zeta*`.
//!
//! Push and pop are O(1). Slots freed by one contact are reused by the next push of any contact,
//! so once the arena has grown to the simulation's working size a step allocates nothing. When
//! the free list is empty a push grows the arena (`Vec` doubling: amortized O(1), so the memory
//! follows the peak total history). A host that prefers a hard memory bound checks
//! [`HistoryStore::fill`] and calls [`HistoryStore::straighten`] on its contacts, Kuhn's
//! emergency measure (JAEGER.md section 5, last paragraph).

use crate::params::ContactParams;

/// End of the free list.
const NONE: u32 = u32::MAX;

/// Per-contact state kept by the host alongside its contact (56 bytes). Besides the history's
/// head it keeps a copy of the top leg (its end, the normal force there, its slope), so that an
/// elastic step reads nothing from the shared arena and a slip step one entry fewer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContactState {
    /// Top leg of the history; 0 (the origin) for a contact with no history.
    pub(crate) head: u32,
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
            head: 0,
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
        assert!(end <= NONE as usize, "history store exceeds 2^32 entries");
        let old_free = self.entries[0].link;
        self.entries.extend((start + 1..=end).map(|next| Entry {
            zeta: 0.0,
            slope: [0.0; 2],
            link: if next == end { old_free } else { next as u32 },
        }));
        self.entries[0].link = start as u32;
    }

    /// Legs in use, over all contacts.
    pub fn len(&self) -> usize {
        self.used
    }

    /// Whether no contact has any history.
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

    /// Number of legs in a contact's history (walks the list: O(length)).
    pub fn history_len(&self, state: &ContactState) -> usize {
        self.legs(state).count()
    }

    /// A contact's equivalent history, from the most recent leg down to the first (JAEGER.md
    /// section 3.2), in the public units: each leg ends at a TOTAL overlap and has a slope
    /// `p = dT/dN` (local frame).
    pub fn history(&self, state: &ContactState) -> Vec<Leg> {
        self.legs(state)
            .map(|k| Leg {
                overlap: 2.0 * self.zeta(k),
                slope: self.slope(k),
            })
            .collect()
    }

    /// The legs of a contact from the top down: slot indices.
    fn legs(&self, state: &ContactState) -> impl Iterator<Item = usize> + '_ {
        let mut k = state.head as usize;
        std::iter::from_fn(move || {
            (k != 0).then(|| {
                let here = k;
                k = self.below(k);
                here
            })
        })
    }

    /// `zeta*` of slot `k`.
    #[inline]
    pub(crate) fn zeta(&self, k: usize) -> f64 {
        self.entries[k].zeta
    }

    /// Slope of slot `k`.
    #[inline]
    pub(crate) fn slope(&self, k: usize) -> [f64; 2] {
        self.entries[k].slope
    }

    /// The leg below slot `k` (0: the origin).
    #[inline]
    pub(crate) fn below(&self, k: usize) -> usize {
        self.entries[k].link as usize
    }

    /// Moves the end of a contact's top leg back to `zeta` (where the normal force is `normal`),
    /// keeping its slope (Kuhn's slide-back, Fig. 3 line 55).
    #[inline]
    pub(crate) fn slide_top(&mut self, state: &mut ContactState, zeta: f64, normal: f64) {
        self.entries[state.head as usize].zeta = zeta;
        state.zeta = zeta;
        state.normal = normal;
    }

    /// Replaces a contact's top leg by one ending at `zeta` (normal force `normal`) with slope `p`
    /// (the merge of JAEGER.md section 5).
    #[inline]
    pub(crate) fn replace_top(&mut self, state: &mut ContactState, zeta: f64, normal: f64, p: [f64; 2]) {
        let top = &mut self.entries[state.head as usize];
        top.zeta = zeta;
        top.slope = p;
        state.zeta = zeta;
        state.normal = normal;
        state.slope = p;
    }

    /// Pushes a leg ending at `zeta` (normal force `normal`) with slope `p` onto a contact's
    /// history.
    #[inline]
    pub(crate) fn push(&mut self, state: &mut ContactState, zeta: f64, normal: f64, p: [f64; 2]) {
        if self.entries[0].link == NONE {
            self.grow(self.capacity());
        }
        let s = self.entries[0].link as usize;
        self.entries[0].link = self.entries[s].link;
        self.entries[s] = Entry {
            zeta,
            slope: p,
            link: state.head,
        };
        state.head = s as u32;
        state.zeta = zeta;
        state.normal = normal;
        state.slope = p;
        self.used += 1;
    }

    /// Pops the top leg of a contact's history (which must have one); `normal` is the normal
    /// force at the end of the leg that becomes the top.
    #[inline]
    pub(crate) fn pop(&mut self, state: &mut ContactState, normal: f64) {
        let s = state.head as usize;
        debug_assert!(s != 0, "pop of an empty history");
        let below = self.entries[s].link;
        let top = self.entries[below as usize];
        state.head = below;
        state.zeta = top.zeta;
        state.normal = normal;
        state.slope = top.slope;
        self.entries[s].link = self.entries[0].link;
        self.entries[0].link = s as u32;
        self.used -= 1;
    }

    /// Forgets a contact's history (loss of contact, or the contact is deleted): its legs return
    /// to the free list and its force is zeroed.
    pub fn release(&mut self, state: &mut ContactState) {
        while state.head != 0 {
            self.pop(state, 0.0);
        }
        *state = ContactState::new();
    }

    /// Kuhn's emergency "straighten" (DEMPLA `stratn`): replaces each history by one leg from the
    /// origin to the current indentation with slope `T / N`, which keeps every contact's force
    /// and frees all its other legs. The contacts forget their past, so later forces differ from
    /// the exact ones: this is a memory bound, not an approximation of known size.
    pub fn straighten<'a>(&mut self, contacts: impl IntoIterator<Item = (&'a ContactParams, &'a mut ContactState)>) {
        for (params, state) in contacts {
            if state.head == 0 {
                continue;
            }
            let (zeta, n, t) = (state.zeta, state.normal, state.tangential);
            self.release(state);
            let p = if n > 0.0 { [t[0] / n, t[1] / n] } else { [0.0; 2] };
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
