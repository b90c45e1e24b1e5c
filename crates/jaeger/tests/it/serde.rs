//! Checkpoints: a contact serialized mid-history and read back continues bit for bit.
#![cfg(feature = "serde")]

use jaeger::{ContactFrame, ContactParams, JaegerContact};

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
