//! The compact history store shared by many contacts (docs/jaeger.md section 7; Kuhn 2011, Section 3.3
//! and Fig. 7).
//!
//! A contact's equivalent history is a stack of legs. Its most recent [`HELD_LEGS`] legs at most
//! live in the contact's own [`ContactState`], each with its normal force; the legs below them
//! live in one arena shared by all contacts, as 24-byte entries: the leg's end indentation
//! `zeta*` (`f64`) and its slope `p` (2 x `f64`).
//!
//! Why legs are held in the state: an elastic step (the common case) pushes a leg and a slip step
//! usually removes one or two, all near the top. Held in the state, which a host keeps in an
//! array it walks in order, those steps read and write memory the processor streams in ahead, and
//! the leg below the top comes with its normal force, so examining it takes no square root. When
//! a push finds the state full, the oldest [`HELD_LEGS`]` / 2` held legs move to the arena
//! together; when a removal leaves fewer than two, up to [`HELD_LEGS`]` / 2` legs come back
//! from it. A contact whose history goes up and down within a few legs never touches the arena.
//! (With the top leg alone in the state, every elastic step wrote one arena slot somewhere in
//! the arena: one cache line per contact and step that the caches did not hold.)
//!
//! Layout of the arena: it is cut into chunks of [`LEGS_PER_CHUNK`] consecutive entries, each
//! with a `u32` link kept apart (4 bytes per chunk). A contact's legs fill a chunk from its first
//! slot up; a push onto a full chunk takes a fresh chunk whose link names the leg below its first
//! slot, and a removal that empties a chunk returns it to the free list. So a contact's legs below
//! its held ones sit next to each other and move to and from the state as one stream. (A free
//! list of single slots, the first layout, scattered each contact's legs through the whole arena,
//! so that with histories of hundreds of legs nearly every leg read missed the caches.) Chunk 0
//! holds the origin `(0, 0, 0)` in its slot 0, which every history starts from; its link heads
//! the list of free chunks.
//!
//! Kuhn stores `N* = N(zeta*)` and a link per entry (36 bytes). Here the arena's entries leave
//! `N*` out and it is recomputed from `zeta*` when a leg returns to the state (a square root),
//! which saves 8 of those bytes and cannot disagree with `zeta*`, and the link is one per chunk.
//!
//! Push and pop are O(1) (amortized: a move between state and arena carries [`HELD_LEGS`]` / 2`
//! legs, and happens at most once per that many pushes or pops). Chunks freed by one contact are
//! reused by the next contact that needs one, so once the arena has grown to the simulation's
//! working size a step allocates nothing. When no chunk is free a push grows the arena (`Vec`
//! doubling: amortized O(1), so the memory follows the peak total history). Each contact holds at
//! most one partly filled chunk, so the memory is the legs' plus less than one chunk per contact.
//! A host that prefers a hard memory bound checks [`HistoryStore::fill`] and calls
//! [`HistoryStore::straighten`] on its contacts, Kuhn's emergency measure (docs/jaeger.md
//! section 5, last paragraph).

use crate::params::ContactParams;

/// End of the free list.
const NONE: u32 = u32::MAX;

/// The most legs a [`ContactState`] holds itself (an even number, at least 4): the history's
/// most recent ones. Half of them move to or from the arena at a time. (On the bench's
/// histories 8 was faster than 4: the crate's README, "Performance".)
pub const HELD_LEGS: usize = 8;

/// Legs moved between a state and the arena at once.
const MOVED: usize = HELD_LEGS / 2;

/// A leg held in a contact's state: its end `zeta*`, the normal force `N(zeta*)` there, and its
/// slope, in Kuhn's half units.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct HeldLeg {
    /// `zeta*`: half indentation at the leg's end.
    pub(crate) zeta: f64,
    /// `N(zeta*)`.
    pub(crate) normal: f64,
    /// `p = dT/dN` along the leg.
    pub(crate) slope: [f64; 2],
}

/// The origin of every history, as a leg: `zeta* = 0`, `N = 0`, no slope.
const ORIGIN: HeldLeg = HeldLeg {
    zeta: 0.0,
    normal: 0.0,
    slope: [0.0; 2],
};

/// Per-contact state kept by the host alongside its contact (280 bytes): the history's most
/// recent legs (at most [`HELD_LEGS`]), the arena index of the leg below them, and the previous
/// tangential force.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ContactState {
    /// The held legs, the oldest first: `legs[..len]`, the top leg last.
    pub(crate) legs: [HeldLeg; HELD_LEGS],
    /// Number of held legs; 0 when the history is empty (the "top" is the origin itself).
    pub(crate) len: u32,
    /// Arena index of the leg below `legs[0]` (0: the origin). When fewer than two legs are held
    /// it is the origin, except in a state read from a checkpoint of the one-top-leg layout.
    pub(crate) below: u32,
    /// The previous step's tangential force, local frame (Kuhn's `T_old`).
    pub(crate) tangential: [f64; 2],
}

impl ContactState {
    /// A contact with no history (not touching, or just touching).
    pub const fn new() -> Self {
        ContactState {
            legs: [ORIGIN; HELD_LEGS],
            len: 0,
            below: 0,
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
        self.len != 0
    }

    /// Number of legs held in the state (at most [`HELD_LEGS`]); the arena holds the rest of the
    /// history.
    pub fn held_legs(&self) -> usize {
        self.len as usize
    }

    /// The top leg: its end is the previous step's half indentation and normal force. The origin
    /// when the history is empty.
    #[inline]
    pub(crate) fn top(&self) -> HeldLeg {
        match self.len {
            0 => ORIGIN,
            n => self.legs[n as usize - 1],
        }
    }

    /// The top leg, to edit (the history must have one).
    #[inline]
    pub(crate) fn top_mut(&mut self) -> &mut HeldLeg {
        &mut self.legs[self.len as usize - 1]
    }
}

impl Default for ContactState {
    fn default() -> Self {
        Self::new()
    }
}

/// Reading a [`ContactState`] back (`serde` feature). The state's own layout is read from a map
/// (JSON and the other self-describing formats) or from a sequence of its fields in order (the
/// compact formats, which carry no names). A map may also hold the one-top-leg layout of builds
/// before 2026-11-28 (the top leg's `zeta`, `normal` and `slope` beside `below`, `NONE` for an
/// empty history), whose arena is this one's. Errors name the field that is missing, unknown or
/// out of range.
#[cfg(feature = "serde")]
mod serde_form {
    use super::{ContactState, HELD_LEGS, HeldLeg, NONE};
    use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
    use std::fmt;

    /// The fields of this build's layout, in the order it writes them.
    const FIELDS: &[&str] = &["legs", "len", "below", "tangential"];

    #[derive(serde::Deserialize)]
    #[serde(field_identifier, rename_all = "lowercase")]
    enum Field {
        Legs,
        Len,
        Below,
        Tangential,
        // The one-top-leg layout's own fields.
        Zeta,
        Normal,
        Slope,
    }

    /// The state in this build's layout, refused if `len` exceeds [`HELD_LEGS`] or an empty
    /// history claims arena legs.
    fn held(
        legs: [HeldLeg; HELD_LEGS],
        len: u32,
        below: u32,
        tangential: [f64; 2],
    ) -> Result<ContactState, String> {
        if len as usize > HELD_LEGS || (len == 0 && below != 0) {
            return Err(format!(
                "contact state holds {len} legs over arena slot {below}: at most {HELD_LEGS}, \
                 and none only over the origin (slot 0)"
            ));
        }
        Ok(ContactState {
            legs,
            len,
            below,
            tangential,
        })
    }

    struct StateVisitor;

    impl<'de> Visitor<'de> for StateVisitor {
        type Value = ContactState;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a contact state (legs, len, below, tangential)")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ContactState, A::Error> {
            let legs = seq
                .next_element()?
                .ok_or_else(|| de::Error::invalid_length(0, &self))?;
            let len = seq
                .next_element()?
                .ok_or_else(|| de::Error::invalid_length(1, &self))?;
            let below = seq
                .next_element()?
                .ok_or_else(|| de::Error::invalid_length(2, &self))?;
            let tangential = seq
                .next_element()?
                .ok_or_else(|| de::Error::invalid_length(3, &self))?;
            held(legs, len, below, tangential).map_err(de::Error::custom)
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ContactState, A::Error> {
            let mut legs = None;
            let mut len = None;
            let mut below = None;
            let mut tangential = None;
            let mut zeta = None;
            let mut normal = None;
            let mut slope = None;
            fn set<'de, A: MapAccess<'de>, T: serde::Deserialize<'de>>(
                map: &mut A,
                slot: &mut Option<T>,
                name: &'static str,
            ) -> Result<(), A::Error> {
                if slot.is_some() {
                    return Err(de::Error::duplicate_field(name));
                }
                *slot = Some(map.next_value()?);
                Ok(())
            }
            while let Some(key) = map.next_key()? {
                match key {
                    Field::Legs => set(&mut map, &mut legs, "legs")?,
                    Field::Len => set(&mut map, &mut len, "len")?,
                    Field::Below => set(&mut map, &mut below, "below")?,
                    Field::Tangential => set(&mut map, &mut tangential, "tangential")?,
                    Field::Zeta => set(&mut map, &mut zeta, "zeta")?,
                    Field::Normal => set(&mut map, &mut normal, "normal")?,
                    Field::Slope => set(&mut map, &mut slope, "slope")?,
                }
            }
            let below: u32 = below.ok_or_else(|| de::Error::missing_field("below"))?;
            let tangential = tangential.ok_or_else(|| de::Error::missing_field("tangential"))?;
            let ours = legs.is_some() || len.is_some();
            let theirs = [
                ("zeta", zeta.is_some()),
                ("normal", normal.is_some()),
                ("slope", slope.is_some()),
            ]
            .into_iter()
            .find_map(|(name, there)| there.then_some(name));
            let legacy_zeta = match (zeta, theirs) {
                (Some(zeta), _) if !ours => zeta,
                (None, Some(_)) if !ours => return Err(de::Error::missing_field("zeta")),
                (_, Some(name)) => {
                    return Err(de::Error::custom(format!(
                        "contact state mixes this build's layout (legs, len) with the \
                         one-top-leg layout's field `{name}`"
                    )));
                }
                (_, None) => {
                    let legs = legs.ok_or_else(|| de::Error::missing_field("legs"))?;
                    let len = len.ok_or_else(|| de::Error::missing_field("len"))?;
                    return held(legs, len, below, tangential).map_err(de::Error::custom);
                }
            };
            // The one-top-leg layout.
            let mut state = ContactState {
                tangential,
                ..ContactState::new()
            };
            let normal = normal.ok_or_else(|| de::Error::missing_field("normal"))?;
            let slope = slope.ok_or_else(|| de::Error::missing_field("slope"))?;
            if below != NONE {
                state.legs[0] = HeldLeg {
                    zeta: legacy_zeta,
                    normal,
                    slope,
                };
                state.len = 1;
                state.below = below;
            }
            Ok(state)
        }
    }

    impl<'de> serde::Deserialize<'de> for ContactState {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_struct("ContactState", FIELDS, StateVisitor)
        }
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
///
/// Read back from a checkpoint (`serde` feature), the arena's own structure is checked (chunk
/// count, free list, counters); whether the contact states read beside it fit it is
/// [`HistoryStore::check_states`]'s question.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "StoreForm"))]
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

/// A [`HistoryStore`] as a checkpoint holds it, before its structure is checked.
#[cfg(feature = "serde")]
#[derive(serde::Deserialize)]
#[serde(rename = "HistoryStore")]
struct StoreForm {
    entries: Vec<Entry>,
    links: Vec<u32>,
    used: usize,
    chunks_used: usize,
}

#[cfg(feature = "serde")]
impl TryFrom<StoreForm> for HistoryStore {
    type Error = StoreError;

    fn try_from(form: StoreForm) -> Result<Self, StoreError> {
        let store = HistoryStore {
            entries: form.entries,
            links: form.links,
            used: form.used,
            chunks_used: form.chunks_used,
        };
        let chunks = store.links.len();
        // Chunk 0 and at least one more, as every store is built (the arena grows by doubling
        // the chunks past chunk 0).
        if chunks < 2 || store.entries.len() != chunks * LEGS_PER_CHUNK {
            return Err(StoreError(format!(
                "history store has {} entries and {chunks} chunk links: expected {LEGS_PER_CHUNK} \
                 entries per link, and at least two links",
                store.entries.len()
            )));
        }
        let free = store.free_chunks()?;
        let in_use = chunks - 1 - free.iter().filter(|&&f| f).count();
        if store.chunks_used != in_use || store.used > in_use * LEGS_PER_CHUNK {
            return Err(StoreError(format!(
                "history store counts {} chunks and {} legs in use, but its free list leaves \
                 {in_use} chunks (at most {} legs)",
                store.chunks_used,
                store.used,
                in_use * LEGS_PER_CHUNK
            )));
        }
        Ok(store)
    }
}

/// Why a history store, or contact states beside it, were refused: a checkpoint that does not
/// describe a store this crate could have built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct StoreError(String);

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

    /// Number of legs in a contact's history, its held legs included (walks the arena's list:
    /// O(length)).
    pub fn history_len(&self, state: &ContactState) -> usize {
        self.history_iter(state).count()
    }

    /// A contact's equivalent history, from the most recent leg down to the first (docs/jaeger.md
    /// section 3.2), in the public units: each leg ends at a TOTAL overlap and has a slope
    /// `p = dT/dN` (local frame).
    pub fn history(&self, state: &ContactState) -> Vec<Leg> {
        self.history_iter(state).collect()
    }

    fn history_iter<'a>(&'a self, state: &'a ContactState) -> impl Iterator<Item = Leg> + 'a {
        let held = state.legs[..state.len as usize]
            .iter()
            .rev()
            .map(|leg| (leg.zeta, leg.slope));
        let mut k = state.below;
        let below = std::iter::from_fn(move || {
            (k != 0).then(|| {
                let e = self.entries[k as usize];
                k = self.below(k);
                (e.zeta, e.slope)
            })
        });
        held.chain(below).map(|(zeta, slope)| Leg {
            overlap: 2.0 * zeta,
            slope,
        })
    }

    /// The leg `depth` legs below a contact's top (0: the top), with its normal force; the origin
    /// past the first leg. Held legs are read from the state; a leg in the arena costs the walk
    /// to it and a square root.
    #[inline]
    pub(crate) fn leg(
        &self,
        params: &ContactParams,
        state: &ContactState,
        depth: usize,
    ) -> HeldLeg {
        let held = state.len as usize;
        if depth < held {
            return state.legs[held - 1 - depth];
        }
        let mut k = state.below;
        for _ in held..depth {
            if k == 0 {
                return ORIGIN;
            }
            k = self.below(k);
        }
        if k == 0 {
            return ORIGIN;
        }
        let e = self.entries[k as usize];
        HeldLeg {
            zeta: e.zeta,
            normal: params.normal_force_half(e.zeta),
            slope: e.slope,
        }
    }

    /// Whether the leg below a contact's top leg is the origin (its history has one leg).
    #[inline]
    pub(crate) fn on_origin(state: &ContactState) -> bool {
        state.len <= 1 && state.below == 0
    }

    /// The leg below arena slot `k` (not the origin; 0: the origin).
    #[inline]
    fn below(&self, k: u32) -> u32 {
        debug_assert!(k != 0, "the origin has no leg below");
        if !k.is_multiple_of(CHUNK) {
            k - 1
        } else {
            self.links[(k / CHUNK) as usize]
        }
    }

    /// Marks the free chunks (chunk 0 is never free), walking the free list; refuses a list
    /// that leaves the arena or meets a chunk twice.
    fn free_chunks(&self) -> Result<Vec<bool>, StoreError> {
        let mut free = vec![false; self.links.len()];
        let mut c = self.links[0];
        while c != NONE {
            let ok = c != 0 && (c as usize) < free.len() && !free[c as usize];
            if !ok {
                return Err(StoreError(format!(
                    "history store's free list names chunk {c}: expected a chunk in 1..{} not \
                     named before",
                    free.len()
                )));
            }
            free[c as usize] = true;
            c = self.links[c as usize];
        }
        Ok(free)
    }

    /// Checks that `states` are all the contact states that share this store, as a checkpoint
    /// read back must be before any of them steps: each state's arena legs lie in chunks in use,
    /// full below its newest chunk, reached by no other state, and together the states hold
    /// every leg of the arena. A state that fails is named by its position in `states`.
    ///
    /// Cost: O(chunks of the arena + legs of the states). A host that deserializes its states
    /// and the store separately calls it once after reading them; [`JaegerContact`](crate::JaegerContact)
    /// calls it when read back. Without it, a state naming a slot the arena does not hold for
    /// it would panic or corrupt other contacts' histories at its next step.
    pub fn check_states<'a>(
        &self,
        states: impl IntoIterator<Item = &'a ContactState>,
    ) -> Result<(), StoreError> {
        let free = self.free_chunks()?;
        let mut owner: Vec<Option<usize>> = vec![None; self.links.len()];
        let mut legs = 0;
        for (i, state) in states.into_iter().enumerate() {
            let mut k = state.below;
            let mut newest = true;
            while k != 0 {
                let c = (k / CHUNK) as usize;
                let refused = |why: String| {
                    Err(StoreError(format!(
                        "contact state {i} reaches arena slot {k}: {why}"
                    )))
                };
                if c == 0 || c >= self.links.len() {
                    return refused(format!(
                        "expected a slot in {CHUNK}..{} (the arena's chunks past chunk 0)",
                        self.entries.len()
                    ));
                }
                if free[c] {
                    return refused(format!("its chunk {c} is on the free list"));
                }
                if let Some(j) = owner[c] {
                    return refused(format!("its chunk {c} is reached by contact state {j} too"));
                }
                if !newest && !(k + 1).is_multiple_of(CHUNK) {
                    return refused(format!(
                        "expected the last slot of chunk {c}: only a contact's newest chunk is \
                         partly filled"
                    ));
                }
                owner[c] = Some(i);
                legs += (k % CHUNK) as usize + 1;
                newest = false;
                k = self.links[c];
            }
        }
        if let Some(c) = (1..self.links.len()).find(|&c| !free[c] && owner[c].is_none()) {
            return Err(StoreError(format!(
                "arena chunk {c} is in use but no contact state reaches it: pass every state \
                 that shares the store"
            )));
        }
        if legs != self.used {
            return Err(StoreError(format!(
                "the contact states reach {legs} arena legs, but the store counts {}",
                self.used
            )));
        }
        Ok(())
    }

    /// Pushes a leg ending at `zeta` (normal force `normal`, which must be `N(zeta)`) with slope
    /// `p` onto a contact's history. A full state first moves its oldest held legs to the arena.
    #[inline]
    pub(crate) fn push(&mut self, state: &mut ContactState, zeta: f64, normal: f64, p: [f64; 2]) {
        if state.len as usize == HELD_LEGS {
            self.spill(state);
        }
        state.legs[state.len as usize] = HeldLeg {
            zeta,
            normal,
            slope: p,
        };
        state.len += 1;
    }

    /// Moves a full state's [`MOVED`] oldest legs to the arena, each in the slot after the
    /// contact's last one or in a fresh chunk, and the rest down.
    fn spill(&mut self, state: &mut ContactState) {
        for leg in &state.legs[..MOVED] {
            let s = state.below;
            let slot = if s != 0 && !(s + 1).is_multiple_of(CHUNK) {
                s + 1
            } else {
                self.take_chunk(s)
            };
            self.entries[slot as usize] = Entry {
                zeta: leg.zeta,
                slope: leg.slope,
            };
            state.below = slot;
        }
        self.used += MOVED;
        state.legs.copy_within(MOVED.., 0);
        state.len -= MOVED as u32;
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

    /// Returns chunk `c` to the free list.
    fn free_chunk(&mut self, c: u32) {
        self.links[c as usize] = self.links[0];
        self.links[0] = c;
        self.chunks_used -= 1;
    }

    /// Pops a contact's top leg (it must have one); the leg below becomes the top. When fewer
    /// than two legs remain held, up to [`MOVED`] legs come back from the arena, each with its
    /// normal force recomputed.
    #[inline]
    pub(crate) fn pop(&mut self, params: &ContactParams, state: &mut ContactState) {
        debug_assert!(state.has_legs(), "pop of an empty history");
        state.len -= 1;
        if state.len < 2 && state.below != 0 {
            self.refill(params, state);
        }
    }

    /// Brings up to [`MOVED`] legs back from the arena under the held ones.
    fn refill(&mut self, params: &ContactParams, state: &mut ContactState) {
        let mut back = [ORIGIN; MOVED];
        let mut m = 0;
        while m < MOVED && state.below != 0 {
            let s = state.below;
            let e = self.entries[s as usize];
            back[m] = HeldLeg {
                zeta: e.zeta,
                normal: params.normal_force_half(e.zeta),
                slope: e.slope,
            };
            state.below = self.below(s);
            if s.is_multiple_of(CHUNK) {
                // The chunk is empty now.
                self.free_chunk(s / CHUNK);
            }
            m += 1;
        }
        self.used -= m;
        let held = state.len as usize;
        state.legs.copy_within(..held, m);
        for (i, leg) in back[..m].iter().enumerate() {
            state.legs[m - 1 - i] = *leg;
        }
        state.len += m as u32;
    }

    /// Forgets a contact's history (loss of contact, or the contact is deleted): its arena
    /// chunks return to the free list and its force is zeroed.
    pub fn release(&mut self, state: &mut ContactState) {
        let mut s = state.below;
        while s != 0 {
            let c = s / CHUNK;
            self.used -= (s % CHUNK) as usize + 1;
            s = self.links[c as usize];
            self.free_chunk(c);
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
            let (zeta, t) = (state.top().zeta, state.tangential);
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
