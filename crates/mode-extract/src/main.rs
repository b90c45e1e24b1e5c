//! The `mode-extract` command line: a thin layer over the `mode_extract` library.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use grain::Normalization;
use mode_extract::mirror::mirror;
use mode_extract::modes::Keep;
use mode_extract::{
    ExtractError, ExtractOptions, FreeOptions, MaterialOptions, Method, extract, fit_warning,
    free_bundle, summary,
};

/// Deformation modes, modal mass and stiffness from FEM snapshots, or the free-free modes of a
/// mesh (--free), written as a modes bundle.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// Snapshot files: CalculiX .frd; VTK .vtu/.vtk/.pvd; or Abaqus .rpt / CSV tables (with --mesh).
    #[arg(long, num_args = 1.., required_unless_present = "free")]
    snapshots: Vec<PathBuf>,
    /// No snapshots: the N lowest free-free elastic modes of the --mesh deck's grain, from its
    /// mass and stiffness (mass-normalized, linear internal force).
    #[arg(long, value_name = "N", group = "method", requires = "mesh", conflicts_with_all = ["snapshots", "scalars", "mirror", "remove_rigid", "holdout", "holdout_snapshots", "normalize", "energy_orthogonalize"])]
    free: Option<usize>,
    /// With --free: also the residual flexibility between the mesh's surface nodes (what the
    /// modes leave out of the response to a contact load).
    #[arg(long, requires = "free")]
    flexibility: bool,
    /// The flexibility's load patch radius (default: four median boundary edges).
    #[arg(long, requires = "flexibility")]
    patch_radius: Option<f64>,
    /// The Abaqus/CalculiX deck of the mesh (needed for tables; also gives node sets and material).
    #[arg(long)]
    mesh: Option<PathBuf>,
    /// The grain's element set in the deck.
    #[arg(long)]
    elset: Option<String>,
    /// A node or element the deck defines twice: the last definition replaces the earlier
    /// (refused without this flag).
    #[arg(long)]
    keep_last_definition: bool,
    /// Displacement point-data name in VTK files.
    #[arg(long, default_value = "U")]
    field: String,
    /// Keep this many SVD modes.
    #[arg(long, group = "method")]
    modes: Option<usize>,
    /// Keep the SVD modes capturing this fraction of the snapshot energy.
    #[arg(long, group = "method")]
    energy: Option<f64>,
    /// One mode: the snapshot at the largest deformation. The grain then follows the run's own
    /// snapshots: its shape at each snapshot's amplitude is that snapshot's (a path mode), so
    /// the DEM reproduces the run to its last increment.
    #[arg(long, group = "method")]
    single: bool,
    /// One mode only: scale the mode linearly with its amplitude (Eq. 1) instead of following
    /// the snapshots (no path).
    #[arg(long)]
    linear: bool,
    /// Difference modes, pruned below this relative tolerance.
    #[arg(long, group = "method")]
    difference: Option<f64>,
    /// Mode scaling: unit-max, unit-l2, mass; control=NSET:DX,DY,DZ (eps equals the mean
    /// displacement of the deck's node set NSET along the direction); or boundary=NAME (eps
    /// equals the loaded boundary's displacement, column displacement_NAME of --scalars).
    #[arg(long, default_value = "unit-max", value_parser = parse_normalization)]
    normalize: Normalization,
    /// Rotate the modes so that M and K are diagonal.
    #[arg(long)]
    energy_orthogonalize: bool,
    /// Young's modulus (default: the deck's *Elastic).
    #[arg(long)]
    youngs_modulus: Option<f64>,
    /// Poisson's ratio (default: the deck's *Elastic).
    #[arg(long)]
    poisson: Option<f64>,
    /// Density (default: the deck's *Density).
    #[arg(long)]
    density: Option<f64>,
    /// Fraction of snapshots held out of the fit for the out-of-sample check.
    #[arg(long, default_value_t = 0.0)]
    holdout: f64,
    /// Snapshots held out by name instead, comma-separated: file names (`s03.vtu`) or stems,
    /// paths, or `.frd` increments (`3`, `increment 3`, `step time 0.5`).
    #[arg(long, value_delimiter = ',')]
    holdout_snapshots: Vec<String>,
    /// Free-text unit system, recorded in modes.json.
    #[arg(long, default_value = "unspecified")]
    units: String,
    /// Per-snapshot scalars CSV (columns snapshot, strain_energy, force_<b>, displacement_<b>):
    /// fits the internal force: a table for one mode, a polynomial energy for several. Each
    /// row's `snapshot` names its snapshot: a file name or stem, or a .frd increment number.
    #[arg(long)]
    scalars: Option<PathBuf>,
    /// Pair the scalars' rows with the snapshots in order, ignoring (or without) the
    /// `snapshot` column.
    #[arg(long, requires = "scalars")]
    scalars_by_position: bool,
    /// Total degree of the polynomial energy fitted when there are several modes (2 to 6).
    #[arg(long, default_value_t = 3)]
    degree: u32,
    /// Mirror the FEM part across these coordinate planes to the whole grain, e.g. `xyz` for an
    /// octant model (symmetric modes; M, K and the tabulated force double per plane).
    #[arg(long, value_parser = parse_planes)]
    mirror: Option<Planes>,
    /// Remove the rigid motion (translation and linearized rotation about the centre of mass, in
    /// the mass inner product) from the modes and the path, after mirroring: for grains that
    /// move in their FEM run (pushed along, or carried by another grain)
    #[arg(long)]
    remove_rigid: bool,
    /// Output bundle directory (written atomically).
    #[arg(long)]
    out: PathBuf,
}

fn parse_normalization(s: &str) -> Result<Normalization, String> {
    match s {
        "unit-max" => Ok(Normalization::UnitMax),
        "unit-l2" => Ok(Normalization::UnitL2),
        "mass" => Ok(Normalization::Mass),
        _ if s.starts_with("boundary=") && s.len() > "boundary=".len() => {
            Ok(Normalization::Boundary {
                name: s["boundary=".len()..].to_string(),
            })
        }
        _ => {
            let bad = || {
                format!(
                    "expected unit-max, unit-l2, mass, control=NSET:DX,DY,DZ or boundary=NAME, got `{s}`"
                )
            };
            let rest = s.strip_prefix("control=").ok_or_else(bad)?;
            let (set, dir) = rest.split_once(':').ok_or_else(bad)?;
            let d: Vec<f64> = dir
                .split(',')
                .map(|x| x.trim().parse::<f64>())
                .collect::<Result<_, _>>()
                .map_err(|_| bad())?;
            let norm = d.iter().map(|x| x * x).sum::<f64>().sqrt();
            if d.len() != 3 {
                return Err(bad());
            }
            if !(norm.is_finite() && norm > 0.0) {
                return Err(format!(
                    "control direction `{dir}`: three finite numbers, not all zero, expected"
                ));
            }
            Ok(Normalization::Control {
                node_set: set.to_string(),
                direction: [d[0] / norm, d[1] / norm, d[2] / norm],
            })
        }
    }
}

/// Symmetry planes by axis index (0, 1, 2 for x = 0, y = 0, z = 0).
#[derive(Clone)]
struct Planes(Vec<usize>);

fn parse_planes(s: &str) -> Result<Planes, String> {
    let mut axes = Vec::new();
    for c in s.chars() {
        let axis = "xyz"
            .find(c.to_ascii_lowercase())
            .ok_or_else(|| format!("expected planes among x, y, z (e.g. `xyz`), got `{s}`"))?;
        if axes.contains(&axis) {
            return Err(format!("plane `{c}` given twice in `{s}`"));
        }
        axes.push(axis);
    }
    Ok(Planes(axes))
}

fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    let material = MaterialOptions {
        youngs_modulus: cli.youngs_modulus,
        poisson_ratio: cli.poisson,
        density: cli.density,
    };
    let redefinition = if cli.keep_last_definition {
        fem::Redefinition::KeepLast
    } else {
        fem::Redefinition::Refuse
    };
    if let Some(modes) = cli.free {
        let options = FreeOptions {
            mesh: cli.mesh.expect("clap requires --mesh with --free"),
            element_set: cli.elset,
            redefinition,
            modes,
            flexibility: cli.flexibility.then_some(cli.patch_radius),
            material,
            units: cli.units,
        };
        let bundle = free_bundle(&options).map_err(|e| e.to_string())?;
        bundle.write(&cli.out)?;
        println!("{}", summary(&cli.out.display().to_string(), &bundle));
        return Ok(());
    }
    let method = match (cli.modes, cli.energy, cli.single, cli.difference) {
        (Some(k), ..) => Method::Svd(Keep::Count(k)),
        (_, Some(f), ..) => Method::Svd(Keep::Energy(f)),
        (_, _, true, _) => Method::Single,
        (_, _, _, Some(t)) => Method::Difference(t),
        _ => Method::Svd(Keep::Energy(0.999)),
    };
    let options = ExtractOptions {
        snapshots: cli.snapshots,
        mesh: cli.mesh,
        element_set: cli.elset,
        redefinition,
        field: cli.field,
        method,
        normalization: cli.normalize,
        energy_orthogonalize: cli.energy_orthogonalize,
        material,
        holdout: cli.holdout,
        holdout_snapshots: cli.holdout_snapshots,
        units: cli.units,
        scalars: cli.scalars,
        scalars_pairing: if cli.scalars_by_position {
            eprintln!(
                "mode-extract: the scalars' rows are paired with the snapshots in order (--scalars-by-position)"
            );
            fem::Pairing::Position
        } else {
            fem::Pairing::Label
        },
        degree: cli.degree,
        linear: cli.linear,
    };
    let mut bundle = extract(&options).map_err(|e: ExtractError| e.to_string())?;
    if let Some(Planes(axes)) = &cli.mirror {
        bundle = mirror(&bundle, axes)?;
    }
    if cli.remove_rigid {
        bundle = mode_extract::rigid::remove_rigid(&bundle)?;
    }
    bundle.write(&cli.out)?;
    println!("{}", summary(&cli.out.display().to_string(), &bundle));
    if let Some(warning) = bundle
        .info
        .fit
        .as_ref()
        .and_then(|f| fit_warning(f, &bundle.info.normalization))
    {
        eprintln!("mode-extract: warning: {warning}");
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mode-extract: {e}");
            ExitCode::FAILURE
        }
    }
}
