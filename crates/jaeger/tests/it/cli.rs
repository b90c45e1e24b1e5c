//! `jaeger replay`: the command line gives the library's numbers, and names the line of bad input.

use std::process::Command;

use jaeger::{ContactParams, JaegerContact, SpringState};

fn replay(args: &[&str], input: &str) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.csv");
    std::fs::write(&path, input).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_jaeger"))
        .arg("replay")
        .arg(&path)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

const MATERIAL: [&str; 8] = ["--r1", "1.5", "--r2", "0.5", "-G", "2.0", "--nu", "0.3"];

fn history() -> (String, Vec<(f64, f64, f64)>) {
    let rows: Vec<(f64, f64, f64)> = (0..200)
        .map(|i| {
            let t = i as f64 * 0.05;
            (
                1e-3 * (0.6 + 0.5 * (0.7 * t).sin()),
                2e-4 * t.sin(),
                1e-4 * (1.3 * t).cos() - 1e-4,
            )
        })
        .collect();
    let mut csv = String::from("delta,ux,uy\n");
    for (d, x, y) in &rows {
        csv.push_str(&format!("{d:?},{x:?},{y:?}\n"));
    }
    (csv, rows)
}

fn parse(out: &str) -> Vec<Vec<f64>> {
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("fn,tx,ty,history_len"));
    lines
        .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
        .collect()
}

#[test]
fn replay_prints_the_library_forces_exactly() {
    let (csv, rows) = history();
    let params = ContactParams::new(1.5, 0.5, 2.0, 0.3, 0.4).unwrap();
    for model in ["jaeger", "baseline"] {
        let mut args = MATERIAL.to_vec();
        args.extend(["--mu", "0.4", "--model", model]);
        let (code, out, err) = replay(&args, &csv);
        assert_eq!(code, 0, "{err}");
        let got = parse(&out);
        assert_eq!(got.len(), rows.len());
        let mut contact = JaegerContact::new(params);
        let mut spring = SpringState::default();
        let mut prev = (rows[0].1, rows[0].2);
        for (row, &(d, x, y)) in got.iter().zip(&rows) {
            let du = [x - prev.0, y - prev.1];
            prev = (x, y);
            let (f, legs) = if model == "jaeger" {
                (contact.step(d, du), contact.history_len())
            } else {
                (spring.step(&params, d, du), 0)
            };
            assert_eq!(
                row,
                &vec![f.normal, f.tangential[0], f.tangential[1], legs as f64],
                "{model}"
            );
        }
    }
}

#[test]
fn replay_writes_its_output_file() {
    let (csv, _) = history();
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("forces.csv");
    let mut args = MATERIAL.to_vec();
    args.extend([
        "--mu",
        "0.4",
        "--approximation",
        "0.1",
        "--out",
        out_path.to_str().unwrap(),
    ]);
    let (code, out, err) = replay(&args, &csv);
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    assert_eq!(
        parse(&std::fs::read_to_string(&out_path).unwrap()).len(),
        200
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "a temporary file was left"
    );
}

#[test]
fn bad_input_is_named_with_its_line() {
    let mut args = MATERIAL.to_vec();
    args.extend(["--mu", "0.4"]);
    let (code, _, err) = replay(&args, "delta,ux,uy\n1e-3,0,0\n1e-3,0.1,oops\n");
    assert_ne!(code, 0);
    assert!(
        err.contains("history.csv: line 3: column `uy`: `oops` is not a finite number"),
        "{err}"
    );
    let (code, _, err) = replay(&args, "delta,ux\n1e-3,0\n");
    assert_ne!(code, 0);
    assert!(err.contains("line 1: no column `uy`"), "{err}");
    let (code, _, err) = replay(&args, "delta,ux,uy\n1e-3,0\n");
    assert_ne!(code, 0);
    assert!(
        err.contains("history.csv: line 2: 2 fields, the header has 3"),
        "{err}"
    );
    let mut bad = MATERIAL.to_vec();
    bad.extend(["--mu", "-0.1"]);
    let (code, _, err) = replay(&bad, "delta,ux,uy\n");
    assert_ne!(code, 0);
    assert!(
        err.contains("friction coefficient mu must be >= 0, got -0.1"),
        "{err}"
    );
}

/// Found by mutating inputs (issue #14): finite but huge movements printed `inf` and `NaN` rows
/// with exit code 0. Refused now, naming the line; nothing is written.
#[test]
fn movements_that_overflow_are_refused_with_their_line() {
    for model in ["jaeger", "baseline"] {
        let mut args = MATERIAL.to_vec();
        args.extend(["--mu", "0.4", "--model", model]);
        let (code, out, err) = replay(&args, "delta,ux,uy\n1e-3,0,0\n1e308,0,0\n");
        assert_ne!(code, 0);
        assert!(out.is_empty(), "{out}");
        assert!(
            err.contains(
                "history.csv: line 3: delta 1e308, ux 0e0, uy 0e0: the force is not finite"
            ) && err.contains("delta^(3/2) = inf"),
            "{err}"
        );
        let (code, _, err) = replay(&args, "delta,ux,uy\n1e-3,1e308,0\n1e-3,-1e308,0\n");
        assert_ne!(code, 0);
        assert!(
            err.contains("line 3: delta 1e-3, ux -1e308, uy 0e0: the displacement since the previous row is not finite"),
            "{err}"
        );
    }
}

/// Issue #23: a radius of 1e300 with an ordinary movement overflowed the force, and the message
/// blamed the movement. Parameters whose combination leaves floating point are refused as
/// parameters; a stiffness that overflows only with the overlap names both factors.
#[test]
fn parameters_out_of_range_are_blamed_not_the_movement() {
    let run = |r1: &str, g: &str, input: &str| {
        let args = ["--r1", r1, "-G", g, "--nu", "0.3", "--mu", "0.4"];
        replay(&args, input)
    };
    let ordinary = "delta,ux,uy\n1e-3,0,0\n2e-3,1e-4,0\n";
    let (code, _, err) = run("1e-320", "1e9", ordinary);
    assert_ne!(code, 0);
    assert!(err.contains("the parameters give R = "), "{err}");
    let (code, _, err) = run("1", "1e308", ordinary);
    assert_ne!(code, 0);
    assert!(
        err.contains("Ebar sqrt(R) = inf") && err.contains("check the units"),
        "{err}"
    );
    // The radius alone, at 1e300, is an ordinary contact.
    let (code, _, err) = run("1e300", "1e9", ordinary);
    assert_eq!(code, 0, "{err}");
    // A finite stiffness that overflows only with the overlap: both factors named.
    let (code, _, err) = run("1", "1e300", "delta,ux,uy\n1e-3,0,0\n1e10,0,0\n");
    assert_ne!(code, 0);
    assert!(
        err.contains("line 3: delta 1e10")
            && err.contains("4/3 E* sqrt(R*) = 1.34687")
            && err.contains("delta^(3/2) = 1e15"),
        "{err}"
    );
}
