//! A single contact that owns its history: the simplest way to use the law.

use crate::kernel::ContactForce;
use crate::params::ContactParams;
use crate::store::{ContactState, HistoryStore};

/// One contact with its own small history store. For many contacts, share one [`HistoryStore`]
/// and keep a [`ContactState`] per contact instead (same results, bit for bit).
///
/// Read back from a checkpoint (`serde` feature), the state is checked against the store
/// ([`HistoryStore::check_states`]).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "ContactForm"))]
pub struct JaegerContact {
    params: ContactParams,
    store: HistoryStore,
    state: ContactState,
}

/// A [`JaegerContact`] as a checkpoint holds it, before its state is checked against its store.
#[cfg(feature = "serde")]
#[derive(serde::Deserialize)]
#[serde(rename = "JaegerContact")]
struct ContactForm {
    params: ContactParams,
    store: HistoryStore,
    state: ContactState,
}

#[cfg(feature = "serde")]
impl TryFrom<ContactForm> for JaegerContact {
    type Error = crate::store::StoreError;

    fn try_from(form: ContactForm) -> Result<Self, Self::Error> {
        form.store.check_states([&form.state])?;
        Ok(JaegerContact {
            params: form.params,
            store: form.store,
            state: form.state,
        })
    }
}

impl JaegerContact {
    /// A contact with no history.
    pub fn new(params: ContactParams) -> Self {
        JaegerContact {
            params,
            store: HistoryStore::with_capacity(16),
            state: ContactState::new(),
        }
    }

    /// Advances the contact: `delta` is the TOTAL normal overlap now, `du` the TOTAL relative
    /// tangential displacement of this step in the local frame. See [`HistoryStore::step`].
    pub fn step(&mut self, delta: f64, du: [f64; 2]) -> ContactForce {
        self.store.step(&self.params, &mut self.state, delta, du)
    }

    /// Number of legs in the equivalent history. O(1): the store holds this contact's legs
    /// only, so they are its count plus the legs its state holds (walking the list instead made a replay of
    /// many nested reversals quadratic, issue #23).
    pub fn history_len(&self) -> usize {
        self.store.len() + self.state.held_legs()
    }

    /// The parameters.
    pub fn params(&self) -> &ContactParams {
        &self.params
    }

    /// The store and state, for inspection.
    pub fn parts(&self) -> (&HistoryStore, &ContactState) {
        (&self.store, &self.state)
    }
}
