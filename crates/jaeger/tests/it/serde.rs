//! Checkpoints: a contact serialized mid-history and read back continues bit for bit.
#![cfg(feature = "serde")]

use jaeger::{ContactFrame, ContactParams, ContactState, HistoryStore, JaegerContact};

#[test]
fn a_contact_read_back_from_json_continues_bit_for_bit() {
    let params = ContactParams::new(1.0, 2.0, 30e3, 0.25, 0.4).unwrap();
    let mut contact = JaegerContact::new(params);
    let mut frame = ContactFrame::new([0.0, 0.3, 1.0]);
    let path = |k: usize| {
        let t = k as f64;
        (
            1e-3 * (1.0 + 0.3 * (0.2 * t).sin()),
            [2e-5 * (0.7 * t).cos(), 1e-5 * (1.3 * t).sin()],
        )
    };
    for k in 0..50 {
        let (delta, du) = path(k);
        contact.step(delta, du);
        frame.update([0.01 * k as f64, 0.3, 1.0], [1e-3, 0.0, 2e-3], [0.0; 3]);
    }
    assert!(contact.history_len() > 2);
    let text = serde_json::to_string(&(&contact, &frame)).unwrap();
    let (mut copy, mut copy_frame): (JaegerContact, ContactFrame) =
        serde_json::from_str(&text).unwrap();
    assert_eq!(copy_frame, frame);
    for k in 50..120 {
        let (delta, du) = path(k);
        assert_eq!(copy.step(delta, du), contact.step(delta, du), "step {k}");
        frame.update(
            [0.0, 0.01 * k as f64, 1.0],
            [0.0, 1e-3, 0.0],
            [2e-3, 0.0, 0.0],
        );
        copy_frame.update(
            [0.0, 0.01 * k as f64, 1.0],
            [0.0, 1e-3, 0.0],
            [2e-3, 0.0, 0.0],
        );
        assert_eq!(copy_frame, frame);
    }
}

/// A contact checkpointed by the build before the contact state held several legs (its state
/// then held the top leg alone: `below`, `zeta`, `normal`, `slope`, `tangential`) is read by
/// this build and continues as that build continued it, bit for bit. The file holds the old
/// build's checkpoint after 60 steps of `path` (52 legs, most of them in the arena) and the 40
/// forces that build computed next, as their bits.
#[test]
fn a_checkpoint_of_the_one_top_leg_layout_continues_bit_for_bit() {
    let path = |k: usize| {
        let t = k as f64;
        (
            1e-3 * (1.0 + 0.01 * t + 0.05 * (0.3 * t).sin() * (t / 60.0)),
            [2e-6 * (0.7 * t).cos(), 1e-6 * (1.3 * t).sin()],
        )
    };
    let file: serde_json::Value =
        serde_json::from_str(include_str!("one_top_leg_checkpoint.json")).unwrap();
    let mut contact: JaegerContact = serde_json::from_value(file["contact"].clone()).unwrap();
    assert_eq!(contact.history_len(), 52);
    let forces: Vec<[u64; 3]> = serde_json::from_value(file["forces_bits"].clone()).unwrap();
    assert_eq!(forces.len(), 40);
    for (k, bits) in (60..).zip(forces) {
        let (delta, du) = path(k);
        let f = contact.step(delta, du);
        let f_bits = [
            f.normal.to_bits(),
            f.tangential[0].to_bits(),
            f.tangential[1].to_bits(),
        ];
        assert_eq!(f_bits, bits, "step {k}");
    }
}

#[test]
fn a_state_holding_more_legs_than_it_can_is_refused() {
    let params = ContactParams::new(1.0, 2.0, 30e3, 0.25, 0.4).unwrap();
    let mut contact = JaegerContact::new(params);
    contact.step(1e-3, [0.0; 2]);
    let mut text = serde_json::to_value(&contact).unwrap();
    text["state"]["len"] = serde_json::json!(jaeger::HELD_LEGS + 1);
    let err = serde_json::from_value::<JaegerContact>(text).unwrap_err();
    assert!(err.to_string().contains("at most"), "{err}");
}

#[test]
fn a_sphere_against_a_plane_has_kuhns_radius_twice_its_own() {
    let plane = ContactParams::against_plane(1.5, 30e3, 0.25, 0.4).unwrap();
    // Hertz: N = 4/3 E* sqrt(R*) delta^(3/2) with R* = r and E* = G / (1 - nu) (same material).
    let delta: f64 = 1e-3;
    let e_star = 30e3 / (1.0 - 0.25);
    let exact = 4.0 / 3.0 * e_star * 1.5f64.sqrt() * delta.powf(1.5);
    assert!((plane.normal_force(delta) / exact - 1.0).abs() < 1e-14);
    assert_eq!(plane.effective_radius(), 1.5);
    assert!(plane.radii().1.is_infinite());
}

/// A contact whose history reaches the arena: 40 loading steps turning their tangential
/// direction, so every step adds an elastic leg, then an unloading that removes 14 of them and
/// frees the chunk that held the newest.
fn contact_with_arena_legs() -> JaegerContact {
    let params = ContactParams::new(1.0, 2.0, 30e3, 0.25, 0.4).unwrap();
    let mut contact = JaegerContact::new(params);
    let delta = |k: usize| 1e-3 * (1.0 + 0.02 * k as f64);
    for k in 0..40 {
        let a = 0.9 * k as f64;
        contact.step(delta(k), [1e-6 * a.cos(), 1e-6 * a.sin()]);
    }
    contact.step(delta(24) + 1e-7, [0.0; 2]);
    let store = contact.parts().0;
    assert!(
        store.len() > jaeger::LEGS_PER_CHUNK,
        "the arena holds over a chunk"
    );
    assert!(
        store.len() + jaeger::LEGS_PER_CHUNK < store.capacity(),
        "and free chunks"
    );
    contact
}

/// A compact format, which writes no field names and cannot be asked what comes next
/// (postcard), reads back a contact, and a store with its states, that continue bit for bit.
#[test]
fn a_format_without_field_names_reads_checkpoints_back() {
    let mut contact = contact_with_arena_legs();
    let bytes = postcard::to_allocvec(&contact).unwrap();
    let mut copy: JaegerContact = postcard::from_bytes(&bytes).unwrap();
    for k in 0..30 {
        let du = [-2e-6 * (k as f64).cos(), 1e-6];
        assert_eq!(copy.step(1e-3, du), contact.step(1e-3, du), "step {k}");
    }
    let (store, state) = contact.parts();
    let bytes = postcard::to_allocvec(&(store, [state])).unwrap();
    let (store, states): (HistoryStore, [ContactState; 1]) = postcard::from_bytes(&bytes).unwrap();
    store.check_states(&states).unwrap();
}

/// What serde refuses in a contact state is named: the missing field, the unknown one, a mix of
/// the two layouts.
#[test]
fn a_malformed_state_is_refused_with_the_field_named() {
    let contact = contact_with_arena_legs();
    let good = serde_json::to_value(&contact).unwrap();
    let refused = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut text = good.clone();
        edit(&mut text);
        serde_json::from_value::<JaegerContact>(text)
            .unwrap_err()
            .to_string()
    };
    let err = refused(&|t| drop(t["state"].as_object_mut().unwrap().remove("len")));
    assert!(err.contains("missing field `len`"), "{err}");
    let err = refused(&|t| t["state"]["lenght"] = serde_json::json!(3));
    assert!(err.contains("unknown field `lenght`"), "{err}");
    let err = refused(&|t| t["state"]["zeta"] = serde_json::json!(1e-4));
    assert!(err.contains("mixes") && err.contains("`zeta`"), "{err}");
    let err = refused(&|t| {
        let state = t["state"].as_object_mut().unwrap();
        state.remove("legs");
        state.remove("len");
        state.insert("normal".into(), serde_json::json!(1.0));
    });
    assert!(err.contains("missing field `zeta`"), "{err}");
}

/// A state whose arena index `below` names a slot the store does not hold for it is refused when
/// read, not at its next step (where it panicked, or took another contact's legs): a slot past
/// the arena, in chunk 0 (the origin's), in a free chunk, or below a partly filled chunk.
#[test]
fn a_state_naming_a_slot_the_store_does_not_hold_for_it_is_refused() {
    let contact = contact_with_arena_legs();
    let good = serde_json::to_value(&contact).unwrap();
    let below = good["state"]["below"].as_u64().unwrap();
    let capacity = contact.parts().0.capacity() as u64;
    let chunk = jaeger::LEGS_PER_CHUNK as u64;
    let free = good["store"]["links"][0].as_u64().unwrap();
    for (slot, expected) in [
        (capacity + chunk, "expected a slot in"),
        (3, "expected a slot in"),
        (free * chunk + chunk - 1, "free list"),
        (below - 1, "reach"),
    ] {
        let mut text = good.clone();
        text["state"]["below"] = serde_json::json!(slot);
        let err = serde_json::from_value::<JaegerContact>(text)
            .unwrap_err()
            .to_string();
        assert!(err.contains(expected), "slot {slot}: {err}");
    }
    // The store's own structure: a free list that loops, counters that disagree with it.
    let mut text = good.clone();
    text["store"]["links"][free as usize] = serde_json::json!(free);
    let err = serde_json::from_value::<JaegerContact>(text)
        .unwrap_err()
        .to_string();
    assert!(err.contains("free list names chunk"), "{err}");
    let mut text = good.clone();
    text["store"]["chunks_used"] = serde_json::json!(0);
    let err = serde_json::from_value::<JaegerContact>(text)
        .unwrap_err()
        .to_string();
    assert!(err.contains("chunks and"), "{err}");
}

/// States sharing one store: a state that reaches another's chunk, or a set of states that
/// leaves some chunk unreached, is refused, naming the state.
#[test]
fn states_that_do_not_partition_the_store_are_refused() {
    let params = ContactParams::new(1.0, 2.0, 30e3, 0.25, 0.4).unwrap();
    let mut store = HistoryStore::default();
    let mut states = [ContactState::new(); 3];
    for k in 0..40 {
        for (i, state) in states.iter_mut().enumerate() {
            let a = 0.9 * k as f64 + i as f64;
            store.step(
                &params,
                state,
                1e-3 * (1.0 + 0.02 * k as f64),
                [1e-6 * a.cos(), 1e-6 * a.sin()],
            );
        }
    }
    store.check_states(&states).unwrap();
    let err = store.check_states(&states[..2]).unwrap_err().to_string();
    assert!(err.contains("no contact state reaches it"), "{err}");
    let mut shared = states;
    shared[2] = shared[0];
    let err = store.check_states(&shared).unwrap_err().to_string();
    assert!(
        err.contains("contact state 2") && err.contains("contact state 0 too"),
        "{err}"
    );
}

/// Contact parameters read back pass `ContactParams::new`'s checks again, and their derived
/// constants must be the ones the material gives.
#[test]
fn parameters_read_back_are_checked_again() {
    let params = ContactParams::new(1.0, 2.0, 30e3, 0.25, 0.4).unwrap();
    let good = serde_json::to_value(params).unwrap();
    let mut text = good.clone();
    text["poisson_ratio"] = serde_json::json!(0.7);
    let err = serde_json::from_value::<ContactParams>(text).unwrap_err();
    assert!(err.to_string().contains("Poisson"), "{err}");
    let mut text = good;
    text["hertz"] = serde_json::json!(1.0);
    let err = serde_json::from_value::<ContactParams>(text).unwrap_err();
    assert!(err.to_string().contains("hertz"), "{err}");
    // Builds before 2026-11-24 formed R = 2 r1 r2 / (r1 + r2), which differs from today's
    // harmonic form in the last bits for these radii: their checkpoints are read, and keep the
    // constants they were written with, so a run continues as it would have.
    let (r1, r2) = (0.013, 0.0071);
    let params = ContactParams::new(r1, r2, 1e4, 0.25, 0.4).unwrap();
    let old_radius = 2.0 * r1 * r2 / (r1 + r2);
    assert_ne!(old_radius, params.effective_radius() * 2.0);
    let old_hertz = 8.0 / 3.0 * 1e4 / 0.75 * old_radius.sqrt();
    let mut text = serde_json::to_value(params).unwrap();
    text["radius"] = serde_json::json!(old_radius);
    text["hertz"] = serde_json::json!(old_hertz);
    let read: ContactParams = serde_json::from_value(text).unwrap();
    let zeta = 1e-3f64;
    let expected = old_hertz * (zeta * zeta.sqrt());
    assert_eq!(read.normal_force(2e-3).to_bits(), expected.to_bits());
}

/// A store of chunk 0 alone, which no build makes, is refused (it panicked at the first push
/// that needed a chunk).
#[test]
fn a_store_without_a_chunk_past_the_origin_is_refused() {
    let mut text = serde_json::to_value(JaegerContact::new(
        ContactParams::new(1.0, 2.0, 30e3, 0.25, 0.4).unwrap(),
    ))
    .unwrap();
    let origin = serde_json::json!({ "zeta": 0.0, "slope": [0.0, 0.0] });
    text["store"] = serde_json::json!({
        "entries": vec![origin; jaeger::LEGS_PER_CHUNK],
        "links": [u32::MAX],
        "used": 0,
        "chunks_used": 0,
    });
    let err = serde_json::from_value::<JaegerContact>(text).unwrap_err();
    assert!(err.to_string().contains("at least two links"), "{err}");
}
