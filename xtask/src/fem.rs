//! `cargo xtask fem <case>`: regenerates the shipped FEM data with CalculiX (`ccx`, Debian's
//! calculix-ccx), which reads Abaqus-style decks. Each case writes its deck into
//! `data/fem/<case>/`, runs `ccx` there, and keeps the deck and the results the tests and
//! pipelines use (`.frd` displacements, `.dat` reaction totals).
//!
//! Cases:
//! - `sphere`: case (a), the paper's mode-extraction run: a linear elastic sphere (radius 10 mm,
//!   E = 1000 MPa, nu = 0.3) squeezed by six rigid walls, as an octant against three rigid plates
//!   with surface-to-surface penalty contact, 20 increments (10 up to a wall displacement of 1 %
//!   of the radius, 10 more up to 16.5 %: just beyond the paper's 16 %, see data/fem/README.md).
//!   `make.py` meshes it with gmsh (Python package `gmsh`) and writes the deck; ccx solves it
//!   in about 7 minutes on 2 cores; `make.py scalars` tabulates the
//!   reactions and energies from `sphere.dat`; the `.frd` is kept gzipped (`sphere.frd.gz`).
//! - `ellipsoid`: the second CalculiX case of the readers' tests, laid out as a user's run: an
//!   octant of an ellipsoid (semi-axes 12, 9, 7 mm) pressed along x by one rigid plate (a C3D8 in
//!   the deck), `*NODE FILE` for the grain's node set only; `make.py post` tabulates the plate's
//!   reaction and the strain energy, writes Abaqus-style reports of three increments, and converts
//!   the results to VTK with ccx2paraview (Python packages `ccx2paraview` and `vtk`); ccx solves
//!   it in seconds.
//! - `pair`: two different deformable grains pressed against each other between two rigid plates,
//!   as a quarter model (symmetry planes x = 0 and y = 0): a capsule (radius 5 mm, height 16 mm,
//!   E = 1000 MPa, nu = 0.3) standing on a fixed plate, an ellipsoid (semi-axes 8, 6, 5 mm,
//!   E = 2000 MPa, nu = 0.25) on its top pole, and a top plate (a C3D8 like the bottom one) moving
//!   down by 1.2 mm in 20 increments; three surface-to-surface penalty contacts. `make.py post`
//!   tabulates each grain's strain energy and the plates' forces; ccx solves it in about 2 minutes.
//! - `squeeze`: a linear elastic sphere (radius 10 mm, E = 1000 MPa, nu = 0.25, the ball's)
//!   pressed between two rigid plates along z, as an octant against one plate moving 0.3 mm
//!   down in 20 increments, NLGEOM, penalty contact, C3D10 refined to 0.15 mm at the pole; `make.py
//!   post` tabulates the plate's force (`squeeze_plate.csv`); then the same without NLGEOM
//!   (`squeeze_linear_plate.csv`), and both with a second plate along x moving half as far
//!   (`two_plates.csv`, `two_linear_plates.csv`). No displacements are written: the tables are the reference of
//!   the deformable grains' contact checks, which build their grain from another mesh
//!   (data/fem/ball). About 20 minutes each on one core.
//! - `egg`: a linear elastic ellipsoid (semi-axes 10, 8, 6 mm, E = 1000 MPa, nu = 0.3) pressed
//!   between two rigid plates along each of its axes in turn, and by two pairs at once along
//!   (0.6, 0, +-0.8) (`xz`: oblique, their couples cancel), as an octant against one plate
//!   moving 0.2 mm in 20 increments, small strain, penalty contact, C3D10 refined to 0.15 mm at
//!   the loaded point; `make.py post <label>` tabulates the plate's force
//!   (`egg_<label>_plate.csv`).
//!   The grains built from it take their modes from another mesh (`whole.inp`, uniform size 2).
//! - `beam`: a linear elastic cuboid beam in three-point bending, meshed here as a structured
//!   C3D20 grid (exact geometry; a structured hex mesh needs no mesher), on rollers along two
//!   bottom lines 1 mm in from its ends (span 38 mm), pushed down along its top mid-span line; its centre is held in x and y
//!   (by symmetry it moves only down), which removes the rigid translations.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use grain::ElementType;

/// Beam geometry and material (units: mm, N, MPa).
const LENGTH: f64 = 40.0;
const WIDTH: f64 = 4.0;
const HEIGHT: f64 = 4.0;
const CELLS: [usize; 3] = [40, 2, 4];
const YOUNGS: f64 = 1000.0;
const POISSON: f64 = 0.3;
const DENSITY: f64 = 1.0e-9;
/// The supports' distance from the beam's ends: an overhang, so that a DEM support cylinder under
/// the support line sits under the bottom face, not under an edge that slides off it as the
/// beam's ends turn.
const OVERHANG: f64 = 1.0;
/// Prescribed mid-span deflection (small: the problem is linear).
const DEFLECTION: f64 = 0.01;

/// Runs a case by name.
pub fn run(case: &str, root: &Path) -> Result<()> {
    if Command::new("ccx").arg("-v").output().is_err() {
        bail!("CalculiX is missing: `apt-get install calculix-ccx` (it provides `ccx`)");
    }
    match case {
        "beam" => beam(&root.join("data/fem/beam")),
        "sphere" => gmsh_case(&root.join("data/fem/sphere"), "sphere", "scalars"),
        "ellipsoid" => gmsh_case(&root.join("data/fem/ellipsoid"), "ellipsoid", "post"),
        "pair" => gmsh_case(&root.join("data/fem/pair"), "pair", "post"),
        "squeeze" => {
            let dir = root.join("data/fem/squeeze");
            gmsh_case(&dir, "squeeze", "post")?;
            // The same mesh and loading without NLGEOM (its deck is the committed one but for
            // its *STEP line), and the two-axis squeeze with and without: their decks are made
            // again by make.py, not kept.
            for (job, variant) in [
                ("squeeze_linear", &["linear"][..]),
                ("two", &["two"]),
                ("two_linear", &["two", "linear"]),
            ] {
                gmsh_variant(&dir, job, variant)?;
                std::fs::remove_file(dir.join(format!("{job}.inp")))?;
            }
            Ok(())
        }
        "egg" => {
            // One deck per loading, made again by make.py, not kept (the tables are the
            // result).
            let dir = root.join("data/fem/egg");
            for label in ["x", "y", "z", "xz"] {
                let job = format!("egg_{label}");
                gmsh_variant(&dir, &job, &[label])?;
                std::fs::remove_file(dir.join(format!("{job}.inp")))?;
            }
            Ok(())
        }
        _ => {
            bail!("unknown FEM case `{case}` (cases: sphere, ellipsoid, pair, squeeze, egg, beam)")
        }
    }
}

fn beam(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let mesh = fem::box_mesh(
        ElementType::Hex20,
        [0.0, -WIDTH / 2.0, -HEIGHT / 2.0],
        [LENGTH, WIDTH / 2.0, HEIGHT / 2.0],
        CELLS,
    );
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    let mut deck = String::from(
        "*HEADING\nThree-point bending of a cuboid beam (made by cargo xtask fem beam)\n*NODE, NSET=NALL\n",
    );
    let (mut left, mut right, mut top, mut pin) = (vec![], vec![], vec![], vec![]);
    for i in 0..mesh.nodes.nrows() {
        let (x, y, z) = (mesh.nodes[[i, 0]], mesh.nodes[[i, 1]], mesh.nodes[[i, 2]]);
        deck.push_str(&format!("{}, {x:.12}, {y:.12}, {z:.12}\n", i + 1));
        let bottom = close(z, -HEIGHT / 2.0);
        if bottom && close(x, OVERHANG) {
            left.push(i + 1);
        }
        // The centre of the beam: by symmetry it moves only down; fixing x and y there removes
        // the rigid translations without changing the solution.
        if close(x, LENGTH / 2.0) && close(y, 0.0) && close(z, 0.0) {
            pin.push(i + 1);
        }
        if bottom && close(x, LENGTH - OVERHANG) {
            right.push(i + 1);
        }
        if close(z, HEIGHT / 2.0) && close(x, LENGTH / 2.0) {
            top.push(i + 1);
        }
    }
    deck.push_str("*ELEMENT, TYPE=C3D20, ELSET=BEAM\n");
    for (e, row) in mesh.blocks[0].connectivity.rows().into_iter().enumerate() {
        let ids: Vec<String> = row.iter().map(|n| (n + 1).to_string()).collect();
        deck.push_str(&format!(
            "{}, {},\n{}\n",
            e + 1,
            ids[..15].join(", "),
            ids[15..].join(", ")
        ));
    }
    let set = |name: &str, ids: &[usize]| {
        let mut s = format!("*NSET, NSET={name}\n");
        for chunk in ids.chunks(12) {
            s.push_str(
                &chunk
                    .iter()
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            );
            s.push('\n');
        }
        s
    };
    deck.push_str(&set("LEFT", &left));
    deck.push_str(&set("RIGHT", &right));
    deck.push_str(&set("LOAD", &top));
    deck.push_str(&set("PIN", &pin));
    deck.push_str(&format!(
        "*MATERIAL, NAME=SOFT\n*ELASTIC\n{YOUNGS}, {POISSON}\n*DENSITY\n{DENSITY:e}\n\
         *SOLID SECTION, ELSET=BEAM, MATERIAL=SOFT\n\
         *STEP\n*STATIC\n\
         *BOUNDARY\nLEFT, 3, 3, 0.\nRIGHT, 3, 3, 0.\nPIN, 1, 2, 0.\nLOAD, 3, 3, {}\n\
         *NODE FILE\nU\n*NODE PRINT, NSET=LOAD, TOTALS=ONLY\nRF\n*END STEP\n",
        -DEFLECTION
    ));
    // y is fixed on one support node too, which removes the rotation about z (the solution is
    // symmetric about y = 0, where uy vanishes anyway).
    let on_axis = left
        .iter()
        .find(|&&n| close(mesh.nodes[[n - 1, 1]], 0.0))
        .context("a support node on y = 0")?;
    let deck = deck.replace(
        "PIN, 1, 2, 0.\n",
        &format!("PIN, 1, 2, 0.\n{on_axis}, 2, 2, 0.\n"),
    );
    std::fs::write(dir.join("beam.inp"), deck)?;
    println!(
        "wrote {} ({} nodes, {} C3D20)",
        dir.join("beam.inp").display(),
        mesh.nodes.nrows(),
        mesh.blocks[0].connectivity.nrows()
    );
    let status = Command::new("ccx")
        .args(["-i", "beam"])
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .status()?;
    if !status.success() {
        bail!("ccx failed on {}", dir.join("beam.inp").display());
    }
    for junk in ["beam.cvg", "beam.sta", "beam.12d", "spooles.out"] {
        let _ = std::fs::remove_file(dir.join(junk));
    }
    println!(
        "ccx wrote {} and {}",
        dir.join("beam.frd").display(),
        dir.join("beam.dat").display()
    );
    Ok(())
}

/// A case meshed by its `make.py` (gmsh): the deck, ccx, then `make.py <post>` (tables from
/// the `.dat`, and whatever else the case makes from the results); the `.frd` is kept gzipped.
fn gmsh_case(dir: &Path, job: &str, post: &str) -> Result<()> {
    run_case(dir, job, &[], &[post])
}

/// A variant of a case (`make.py <variant...>` writes `<job>.inp`, `make.py post <variant...>`
/// its tables).
fn gmsh_variant(dir: &Path, job: &str, variant: &[&str]) -> Result<()> {
    run_case(dir, job, variant, &[&["post"], variant].concat())
}

fn run_case(dir: &Path, job: &str, make: &[&str], post: &[&str]) -> Result<()> {
    let python = |args: &[&str]| -> Result<()> {
        let status = Command::new("python3")
            .args(args)
            .current_dir(dir)
            .status()
            .context("cannot run python3")?;
        if !status.success() {
            bail!(
                "`python3 {}` failed in {} (are the gmsh and ccx2paraview packages installed? `pip install gmsh ccx2paraview vtk`)",
                args.join(" "),
                dir.display()
            );
        }
        Ok(())
    };
    python(&["-c", "import gmsh"])?;
    python(&[&["make.py"], make].concat())?;
    let status = Command::new("ccx")
        .args(["-i", job])
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .status()?;
    if !status.success() {
        bail!("ccx failed on {}", dir.join(format!("{job}.inp")).display());
    }
    python(&[&["make.py"], post].concat())?;
    // A deck without `*NODE FILE` (squeeze: its tables are the result) leaves an .frd without
    // results: not kept.
    let frd = std::fs::read(dir.join(format!("{job}.frd")))?;
    if frd.windows(5).any(|w| w == b"DISP ") {
        let mut gz = flate2::write::GzEncoder::new(
            std::fs::File::create(dir.join(format!("{job}.frd.gz")))?,
            flate2::Compression::best(),
        );
        std::io::Write::write_all(&mut gz, &frd)?;
        gz.finish()?;
    }
    for junk in ["frd", "cvg", "sta", "12d"] {
        let _ = std::fs::remove_file(dir.join(format!("{job}.{junk}")));
    }
    let _ = std::fs::remove_file(dir.join("spooles.out"));
    println!("wrote the results in {}", dir.display());
    Ok(())
}
