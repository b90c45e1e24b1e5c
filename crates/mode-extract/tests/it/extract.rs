//! End to end on real CalculiX output (tests/data/tiny.*: a 2 x 1 x 1 block of two C3D8, bottom
//! fixed, top pushed down 0.01 with no lateral movement, in 3 increments): uniaxial strain,
//! whose modal stiffness and mass have closed forms.

use std::path::{Path, PathBuf};
use std::process::Command;

use grain::{ModesBundle, Normalization};
use mode_extract::modes::Keep;
use mode_extract::{ExtractOptions, Method, extract};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn options(method: Method, normalization: Normalization) -> ExtractOptions {
    ExtractOptions {
        mesh: Some(data("tiny.inp")),
        method,
        normalization,
        units: "mm, N, s".into(),
        ..ExtractOptions::new(vec![data("tiny.frd")])
    }
}

#[test]
fn uniaxial_strain_mode_has_the_closed_form_stiffness_and_mass() {
    // Normalized so that eps is the downward displacement of the top: u = (0, 0, -z).
    let control = Normalization::Control {
        node_set: "TOP".into(),
        direction: [0.0, 0.0, -1.0],
    };
    let b = extract(&options(Method::Single, control)).unwrap();
    // Uniaxial strain: K = (lambda + 2 mu) A / H with A = 2, H = 1 (the deck's E = 210000,
    // nu = 0.3); M = rho * integral z^2 dV = 2 rho / 3.
    let (e, nu, rho) = (210000.0, 0.3, 7.85e-9);
    let p_modulus = e * (1.0 - nu) / ((1.0 + nu) * (1.0 - 2.0 * nu));
    assert!(
        (b.stiffness[[0, 0]] / (2.0 * p_modulus) - 1.0).abs() < 1e-12,
        "{}",
        b.stiffness[[0, 0]]
    );
    assert!(
        (b.mass[[0, 0]] / (2.0 * rho / 3.0) - 1.0).abs() < 1e-12,
        "{}",
        b.mass[[0, 0]]
    );
    // The coordinates are the top's displacement at each increment: 0.34, 0.68, 1.0 x 0.01.
    for (s, f) in [0.34, 0.68, 1.0].iter().enumerate() {
        assert!(
            (b.coords[[s, 0]] - 0.01 * f).abs() < 1e-14,
            "{}",
            b.coords[[s, 0]]
        );
    }
    assert!(b.info.reconstruction.as_ref().unwrap().train.displacement < 1e-12);
    assert_eq!(b.info.sources.len(), 2);
    assert_eq!(b.info.sources[1].sha256.len(), 64);
}

#[test]
fn held_out_snapshots_are_reconstructed_and_reported() {
    let mut o = options(Method::Svd(Keep::Count(1)), Normalization::UnitL2);
    o.holdout = 0.34;
    let b = extract(&o).unwrap();
    assert_eq!(
        b.info
            .snapshots
            .iter()
            .map(|s| s.holdout)
            .collect::<Vec<_>>(),
        vec![false, true, false]
    );
    assert!(
        b.info
            .reconstruction
            .as_ref()
            .unwrap()
            .holdout
            .as_ref()
            .unwrap()
            .displacement
            < 1e-12
    );
    // The coordinates stay in input order (the held-out middle one is computed apart): they
    // grow with the top's displacement, 0.34, 0.68, 1.0 x 0.01.
    for (s, f) in [0.34, 0.68, 1.0].iter().enumerate() {
        let ratio = b.coords[[s, 0]] / b.coords[[2, 0]];
        assert!((ratio - f).abs() < 1e-12, "snapshot {s}: {ratio}");
    }
    // The same snapshot held out by name (its increment in the .frd) gives the same report.
    let step = b.info.snapshots[1]
        .id
        .split_once(".frd ")
        .unwrap()
        .1
        .to_string();
    assert!(step.starts_with("increment 2 step time "), "{step}");
    let named = ExtractOptions {
        holdout: 0.0,
        holdout_snapshots: vec![step],
        ..o.clone()
    };
    assert_eq!(extract(&named).unwrap().info, b.info);
    let both = ExtractOptions {
        holdout: 0.34,
        ..named.clone()
    };
    let e = extract(&both).unwrap_err().to_string();
    assert!(
        e.contains("--holdout-snapshots: give either it or --holdout"),
        "{e}"
    );
    for (names, message) in [
        (
            vec!["step time 9".to_string()],
            "no snapshot is named `step time 9`",
        ),
        (
            vec!["tiny.frd".to_string()],
            "every snapshot would be held out",
        ),
    ] {
        let e = extract(&ExtractOptions {
            holdout: 0.0,
            holdout_snapshots: names,
            ..o.clone()
        });
        match e {
            Err(e) => assert!(
                e.to_string().contains(message) && !message.is_empty(),
                "{e}"
            ),
            Ok(_) => panic!("{message}"),
        }
    }
    // Unit L2 with a positive largest component.
    let norm: f64 = b.phi.iter().map(|x| x * x).sum::<f64>().sqrt();
    assert!((norm - 1.0).abs() < 1e-12);
}

#[test]
fn command_line_writes_a_bundle_and_names_bad_options() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tiny.modes");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_mode-extract"))
            .args(args)
            .output()
            .unwrap()
    };
    let r = run(&[
        "--snapshots",
        data("tiny.frd").to_str().unwrap(),
        "--mesh",
        data("tiny.inp").to_str().unwrap(),
        "--single",
        "--normalize",
        "control=TOP:0,0,-1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let b = ModesBundle::read(&out).unwrap();
    assert_eq!(b.mode_count(), 1);
    assert!(String::from_utf8_lossy(&r.stdout).contains("1 modes from 3 snapshots on 12 nodes"));
    let r = run(&[
        "--snapshots",
        data("tiny.frd").to_str().unwrap(),
        "--normalize",
        "control=TOP:0,0,-1",
        "--youngs-modulus",
        "1",
        "--poisson",
        "0.3",
        "--density",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    let e = String::from_utf8_lossy(&r.stderr);
    assert!(
        !r.status.success() && e.contains("--normalize control: needs --mesh"),
        "{e}"
    );
    let r = run(&[
        "--snapshots",
        data("two_blocks.rpt").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let e = String::from_utf8_lossy(&r.stderr);
    assert!(
        !r.status.success()
            && e.contains("two_blocks.rpt: report and CSV tables need the deck (--mesh)"),
        "{e}"
    );
    let r = run(&[
        "--snapshots",
        data("tiny.frd").to_str().unwrap(),
        "--energy",
        "2",
        "--youngs-modulus",
        "1",
        "--poisson",
        "0.3",
        "--density",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    let e = String::from_utf8_lossy(&r.stderr);
    assert!(
        !r.status.success() && e.contains("--energy 2: a fraction in (0, 1]"),
        "{e}"
    );
    // Issue #23: a direction that is not a direction is named as written, not as Rust's debug
    // form of the numbers it became.
    for dir in ["NaN,0,0", "0,0,0", "inf,0,1"] {
        let control = format!("control=TOP:{dir}");
        let r = run(&[
            "--snapshots",
            data("tiny.frd").to_str().unwrap(),
            "--mesh",
            data("tiny.inp").to_str().unwrap(),
            "--single",
            "--normalize",
            &control,
            "--out",
            out.to_str().unwrap(),
        ]);
        let e = String::from_utf8_lossy(&r.stderr);
        assert!(
            !r.status.success()
                && e.contains(&format!(
                    "control direction `{dir}`: three finite numbers, not all zero, expected"
                )),
            "{e}"
        );
    }
}

#[test]
fn reaction_force_fit_tabulates_calculix_reactions() {
    // The reactions CalculiX printed for the top (tests/data/tiny.dat) make the table; the block
    // is geometrically nonlinear (NLGEOM) but nearly linear at 1 % strain, so the fitted slope is
    // within 2 % of the modal stiffness.
    let control = Normalization::Control {
        node_set: "TOP".into(),
        direction: [0.0, 0.0, -1.0],
    };
    let mut o = options(Method::Single, control);
    o.scalars = Some(data("tiny_scalars.csv"));
    let b = extract(&o).unwrap();
    let grain::InternalForce::Table { table, .. } = &b.internal_force else {
        panic!("a table")
    };
    assert_eq!(table.eps.len(), 4);
    for (e, f) in [(0.0034, 1912.515), (0.0068, 3805.489), (0.01, 5569.321)] {
        let k = table
            .eps
            .iter()
            .position(|x| (x - e).abs() < 1e-12)
            .unwrap();
        assert!((table.force[k] - f).abs() < 1e-9 * f, "{}", table.force[k]);
    }
    let fit = b.info.fit.as_ref().unwrap();
    assert!(
        (fit.slope_over_stiffness - 1.0).abs() < 0.02,
        "{}",
        fit.slope_over_stiffness
    );
    assert_eq!(fit.energy_vs_force, None);
    // Energy is the exact integral of the monotone cubic: positive and increasing.
    assert!(table.energy.windows(2).all(|w| w[1] > w[0]));
    let e = extract(&ExtractOptions {
        scalars: Some(data("tiny.inp")),
        degree: 3,
        ..options(Method::Single, Normalization::UnitMax)
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("tiny.inp"), "{e}");
}

/// Found by mutating inputs (issue #14): checks on the modes and on the mesh ("no usable
/// snapshot", an inverted element) named no file. The snapshots and the mesh's file now lead
/// their messages.
#[test]
fn mode_and_mesh_failures_name_their_files() {
    let dir = tempfile::tempdir().unwrap();
    let zeros: String = "node,u1,u2,u3\n".to_string()
        + &(1..=12).map(|n| format!("{n},0,0,0\n")).collect::<String>();
    let tables: Vec<PathBuf> = (0..2)
        .map(|i| {
            let p = dir.path().join(format!("zero{i}.csv"));
            std::fs::write(&p, &zeros).unwrap();
            p
        })
        .collect();
    let o = ExtractOptions {
        mesh: Some(data("tiny.inp")),
        ..ExtractOptions::new(tables)
    };
    let e = extract(&o).unwrap_err().to_string();
    assert!(
        e.contains(
            "zero0.csv (and 1 more snapshots): no usable snapshot: every displacement is zero"
        ),
        "{e}"
    );
    // The second element's nodes listed bottom face last: inside out.
    let deck = std::fs::read_to_string(data("tiny.inp")).unwrap().replace(
        "2, 2, 9, 10, 3, 6, 11, 12, 7",
        "2, 6, 11, 12, 7, 2, 9, 10, 3",
    );
    let inverted = dir.path().join("inverted.inp");
    std::fs::write(&inverted, deck).unwrap();
    let o = ExtractOptions {
        mesh: Some(inverted.clone()),
        ..options(Method::Single, Normalization::UnitMax)
    };
    let e = extract(&o).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "{}: element 1 of block 0 (C3D8) is inverted",
            inverted.display()
        )),
        "{e}"
    );
}

/// Issue #33: a run that loads then unloads was sorted by amplitude into one zigzag path (the
/// unloading shapes, here with a lateral set `u_x = b z`, between the loading ones). Its one mode
/// follows the snapshots in order, so the increments must grow: refused, naming the two where
/// the amplitude turns back and what to do.
#[test]
fn a_run_that_loads_then_unloads_is_refused_where_it_turns_back() {
    let dir = tempfile::tempdir().unwrap();
    // The block's nodes (tests/data/tiny.inp): x in {0, 1, 2}, y and z in {0, 1}.
    let nodes: Vec<[f64; 3]> = [
        [0, 0, 0],
        [1, 0, 0],
        [1, 1, 0],
        [0, 1, 0],
        [0, 0, 1],
        [1, 0, 1],
        [1, 1, 1],
        [0, 1, 1],
        [2, 0, 0],
        [2, 1, 0],
        [2, 0, 1],
        [2, 1, 1],
    ]
    .map(|x| x.map(f64::from))
    .to_vec();
    // u = (b z, 0, -a z): with unit-max scaling the mode is (0, 0, -z) and eps is a.
    let run = [
        ("load1", 0.0034, 0.0),
        ("load2", 0.0068, 0.0),
        ("peak", 0.01, 0.0),
        ("unload1", 0.008, 4e-4),
        ("unload2", 0.005, 6e-4),
    ];
    let snapshots: Vec<PathBuf> = run
        .iter()
        .map(|&(name, a, b)| {
            let mut csv = String::from("node,u1,u2,u3\n");
            for (n, x) in nodes.iter().enumerate() {
                csv.push_str(&format!("{},{:e},0,{:e}\n", n + 1, b * x[2], -a * x[2]));
            }
            let path = dir.path().join(format!("{name}.csv"));
            std::fs::write(&path, csv).unwrap();
            path
        })
        .collect();
    let o = ExtractOptions {
        mesh: Some(data("tiny.inp")),
        method: Method::Single,
        ..ExtractOptions::new(snapshots)
    };
    let e = extract(&o).unwrap_err().to_string();
    assert!(
        e.starts_with("--snapshots: the amplitude does not grow from `")
            && e.contains("peak.csv` (eps 1e-2) to the next snapshot, `")
            && e.contains("unload1.csv` (eps 8e-3)")
            && e.contains("--holdout-snapshots")
            && e.contains("(--linear)"),
        "{e}"
    );
    // The loading alone makes the path, in order.
    let loading = ExtractOptions {
        holdout_snapshots: vec!["unload1".into(), "unload2".into()],
        ..o.clone()
    };
    let b = extract(&loading).unwrap();
    let amplitudes = &b.path.as_ref().unwrap().amplitudes;
    for (got, want) in amplitudes.iter().zip([0.0034, 0.0068, 0.01]) {
        assert!((got - want).abs() < 1e-15, "{amplitudes:?}");
    }
    assert_eq!(amplitudes.len(), 3);
    // A linear mode needs no order, unless a force table is fitted over the amplitudes.
    let linear = ExtractOptions {
        linear: true,
        ..o.clone()
    };
    assert!(extract(&linear).unwrap().path.is_none());
    let scalars = dir.path().join("scalars.csv");
    let mut csv = String::from("snapshot,strain_energy\n");
    for (name, a, _) in run {
        csv.push_str(&format!("{name},{:e}\n", 1e6 * a * a));
    }
    std::fs::write(&scalars, csv).unwrap();
    let e = extract(&ExtractOptions {
        scalars: Some(scalars),
        ..linear
    })
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("unload1.csv` (eps 8e-3)") && !e.contains("--linear"),
        "{e}"
    );
}

/// Issue #33: a density of 1e-310 made a subnormal modal mass, 1e308 on a larger grain an
/// infinite one, and so did E for the stiffness; both were reported as "a rigid motion". They
/// are refused, naming the option or the deck's line the constant came from. The block's
/// uniaxial mode has `M = 2 rho / 3` and `K = 2 (lambda + 2 mu)` (see above): with rho = 1e-310
/// and E = 1e308, `M` is below the normal range and `K` above it.
#[test]
fn a_density_or_modulus_that_takes_the_modal_matrices_out_of_range_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let deck = std::fs::read_to_string(data("tiny.inp")).unwrap();
    let light = dir.path().join("light.inp");
    std::fs::write(&light, deck.replace("\n7.85E-9\n", "\n1e-310\n")).unwrap();
    let stiff = dir.path().join("stiff.inp");
    std::fs::write(&stiff, deck.replace("\n210000., 0.3\n", "\n1e308, 0.3\n")).unwrap();
    let refused = |o: ExtractOptions| extract(&o).unwrap_err().to_string();
    let single = || options(Method::Single, Normalization::UnitMax);
    let e = refused(ExtractOptions {
        material: mode_extract::MaterialOptions {
            density: Some(1e-310),
            ..Default::default()
        },
        ..single()
    });
    assert!(
        e.starts_with("--density: 1e-310 makes mode 0's modal mass 6.6")
            && e.contains("which is not a normal floating-point number"),
        "{e}"
    );
    let e = refused(ExtractOptions {
        mesh: Some(light.clone()),
        ..single()
    });
    assert!(
        e.starts_with(&format!(
            "{}: line 27: *Density 1e-310 makes mode 0's modal mass 6.6",
            light.display()
        )),
        "{e}"
    );
    let e = refused(ExtractOptions {
        material: mode_extract::MaterialOptions {
            youngs_modulus: Some(1e308),
            poisson_ratio: Some(0.3),
            ..Default::default()
        },
        ..single()
    });
    assert!(
        e.starts_with("--youngs-modulus: 1e308 makes mode 0's modal stiffness inf"),
        "{e}"
    );
    let e = refused(ExtractOptions {
        mesh: Some(stiff.clone()),
        ..single()
    });
    assert!(
        e.starts_with(&format!(
            "{}: line 25: *Elastic 1e308 makes mode 0's modal stiffness inf",
            stiff.display()
        )),
        "{e}"
    );
}
