//! The `levelset-bake` command line: a thin layer over the `levelset_bake` library.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use levelset_bake::{
    BakeError, BakeOptions, BendingMode, DEFAULT_PAD, Damping, Extent, ModalMass, ModeRequest,
    ModeSource, NodeChoice, OpenMesh, Primitive, Samples, Segmentation, VoxelImage, bake_image,
    bake_mesh, bake_primitive, input, summary,
};

#[derive(Parser)]
#[command(
    version,
    about = "Grain bundles (signed distance grid, surface nodes, mass properties) from meshes and primitives",
    subcommand_required = true
)]
struct Cli {
    #[command(subcommand)]
    shape: Shape,
}

#[derive(Subcommand)]
enum Shape {
    /// A closed triangle surface (.stl ASCII or binary, .obj, .vtp or .vtk polydata), or the
    /// boundary of a FEM volume mesh (.inp Abaqus/CalculiX deck, .vtu, .vtk unstructured grid).
    #[command(allow_negative_numbers = true)]
    Mesh {
        /// The geometry file.
        file: PathBuf,
        /// For decks: the element set of the grain (default: every solid element).
        #[arg(long)]
        elset: Option<String>,
        /// For decks: a node or element defined twice, the last definition replaces the earlier
        /// (refused without this flag).
        #[arg(long)]
        keep_last_definition: bool,
        /// Open meshes: `refuse` (default) or `winding` (sign by the generalized winding number).
        #[arg(long, default_value = "refuse", value_parser = parse_open)]
        open: OpenMesh,
        #[command(flatten)]
        common: Common,
    },
    /// A segmented CT image: a 3-D .npy array; voxel (i, j, k) is centred at voxel * (i, j, k).
    #[command(allow_negative_numbers = true)]
    Image {
        /// The .npy file (any integer, float or bool type).
        file: PathBuf,
        /// Voxel edge length (length units).
        #[arg(long)]
        voxel: f64,
        /// Solid where the value is >= this (default 0.5, for 0/1 masks).
        #[arg(long, conflicts_with = "label")]
        threshold: Option<f64>,
        /// Solid where the value equals this label.
        #[arg(long)]
        label: Option<i64>,
        #[command(flatten)]
        common: Common,
    },
    /// A sphere centred at the origin.
    #[command(allow_negative_numbers = true)]
    Sphere {
        /// Radius.
        #[arg(long)]
        radius: f64,
        #[command(flatten)]
        common: Common,
    },
    /// A box centred at the origin, sides along x, y, z.
    #[command(allow_negative_numbers = true)]
    Box {
        /// Full side lengths along x, y, z.
        #[arg(long, num_args = 3, value_names = ["X", "Y", "Z"])]
        size: Vec<f64>,
        #[command(flatten)]
        common: Common,
    },
    /// A circular cylinder along z, centred at the origin.
    #[command(allow_negative_numbers = true)]
    Cylinder {
        /// Radius.
        #[arg(long)]
        radius: f64,
        /// Full height.
        #[arg(long)]
        height: f64,
        #[command(flatten)]
        common: Common,
    },
    /// An ellipsoid centred at the origin, axes along x, y, z.
    #[command(allow_negative_numbers = true)]
    Ellipsoid {
        /// Semi-axes along x, y, z.
        #[arg(long, num_args = 3, value_names = ["A", "B", "C"])]
        semi_axes: Vec<f64>,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Args)]
struct Common {
    /// Grid spacing (length units).
    #[arg(long)]
    spacing: f64,
    /// Grid nodes of padding around the grain on every side.
    #[arg(long, default_value_t = DEFAULT_PAD)]
    pad: usize,
    /// Exact distances only within this many cells of the surface (default: everywhere).
    #[arg(long)]
    band: Option<f64>,
    /// Surface nodes: `vertices`, `spacing=H` or `count=N`.
    #[arg(long, default_value = "vertices", value_parser = parse_nodes)]
    nodes: NodeChoice,
    /// Density (mass / length^3).
    #[arg(long, default_value_t = 1.0)]
    density: f64,
    /// Free-text unit system, recorded in grain.json.
    #[arg(long, default_value = "unspecified")]
    units: String,
    /// Bake a grid that does not hold its shape (its solid's volume more than 5 % from the
    /// geometry's: a spacing coarser than the thinnest part, nested or self-intersecting
    /// surfaces; the grain's grid or a precomputed level set's) with a warning instead of
    /// refusing it.
    #[arg(long)]
    allow_unresolved_grid: bool,
    /// Output bundle directory (written atomically).
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    deform: DeformArgs,
}

/// Modes that make the grain deformable (docs/physics.md sections 1, 2, 5).
#[derive(Args)]
struct DeformArgs {
    /// A modes bundle (mode-extract's output) on the grain's FEM mesh, same coordinates.
    #[arg(long, conflicts_with = "bending_mode")]
    modes: Option<PathBuf>,
    /// The analytic bending mode (docs/physics.md Eq. 51) of a beam of this length, centred.
    #[arg(long)]
    bending_mode: Option<f64>,
    /// Beam axis of the bending mode (local frame).
    #[arg(long, default_value = "x", value_parser = parse_axis)]
    bending_axis: usize,
    /// Deflection direction of the bending mode (local frame).
    #[arg(long, default_value = "z", value_parser = parse_axis)]
    bending_direction: usize,
    /// Amplitudes at which to precompute level sets (comma-separated, increasing), or `path`
    /// alone: at the amplitudes of a path mode's snapshots; the undeformed surface (amplitude 0)
    /// is added.
    #[arg(long, allow_hyphen_values = true, value_parser = str::parse::<Samples>)]
    samples: Option<Samples>,
    /// Modal mass of the bending mode (default: the closed form for a box), or of the one mode
    /// of a --modes bundle (instead of its own).
    #[arg(long)]
    modal_mass: Option<f64>,
    /// Every modal mass of a --modes bundle times this factor: selective mass scaling for
    /// quasi-static loading (the modes' frequencies divided by its square root, their static
    /// response unchanged; the grain's own mass and inertia are not scaled).
    #[arg(long, requires = "modes", conflicts_with = "modal_mass")]
    modal_mass_scale: Option<f64>,
    /// With --modes (one mode): the internal force from this CSV table (`eps,force`, the
    /// `energy` column optional) instead of the bundle's; K becomes its tangent at the last row.
    #[arg(long, requires = "modes")]
    internal_force: Option<PathBuf>,
    /// Multiplies the --internal-force table's eps (a table in units of a length, such as the
    /// paper's in units of the sphere radius).
    #[arg(long, requires = "internal_force", default_value_t = 1.0)]
    table_eps_scale: f64,
    /// Modal stiffness of the bending mode (default: the closed form for a box, from
    /// --youngs-modulus and --poisson).
    #[arg(long, conflicts_with = "modes")]
    modal_stiffness: Option<f64>,
    /// Young's modulus, for the bending mode's closed-form stiffness.
    #[arg(long, conflicts_with = "modes")]
    youngs_modulus: Option<f64>,
    /// Poisson's ratio, for the bending mode's closed-form stiffness.
    #[arg(long, conflicts_with = "modes")]
    poisson: Option<f64>,
    /// Modal damping C = VALUE * identity.
    #[arg(long, conflicts_with = "damping_beta")]
    modal_damping: Option<f64>,
    /// Stiffness-proportional modal damping C = BETA * K.
    #[arg(long)]
    damping_beta: Option<f64>,
}

fn parse_axis(s: &str) -> Result<usize, String> {
    match s {
        "x" => Ok(0),
        "y" => Ok(1),
        "z" => Ok(2),
        _ => Err(format!("expected x, y or z, got `{s}`")),
    }
}

impl DeformArgs {
    fn request(&self) -> ModeRequest {
        let source = match (&self.modes, self.bending_mode) {
            (Some(dir), _) => ModeSource::Bundle {
                dir: dir.clone(),
                mass: match (self.modal_mass, self.modal_mass_scale) {
                    (Some(m), _) => ModalMass::Given(m),
                    (None, Some(f)) => ModalMass::Scaled(f),
                    (None, None) => ModalMass::Bundle,
                },
                table: self
                    .internal_force
                    .clone()
                    .map(|path| (path, self.table_eps_scale)),
            },
            (None, Some(length)) => ModeSource::Bending {
                mode: BendingMode {
                    length,
                    axis: self.bending_axis,
                    direction: self.bending_direction,
                    start: -0.5 * length,
                },
                mass: self.modal_mass,
                stiffness: self.modal_stiffness,
                youngs_modulus: self.youngs_modulus,
                poisson: self.poisson,
            },
            (None, None) => ModeSource::None,
        };
        let damping = match (self.modal_damping, self.damping_beta) {
            (Some(c), _) => Damping::Constant(c),
            (None, Some(beta)) => Damping::StiffnessProportional(beta),
            (None, None) => Damping::Constant(0.0),
        };
        ModeRequest {
            source,
            samples: self.samples.clone().unwrap_or(Samples::At(Vec::new())),
            damping,
        }
    }
}

fn parse_open(s: &str) -> Result<OpenMesh, String> {
    match s {
        "refuse" => Ok(OpenMesh::Refuse),
        "winding" => Ok(OpenMesh::Winding),
        _ => Err(format!("expected `refuse` or `winding`, got `{s}`")),
    }
}

fn parse_nodes(s: &str) -> Result<NodeChoice, String> {
    let bad = || format!("expected `vertices`, `spacing=H` or `count=N`, got `{s}`");
    match s.split_once('=') {
        None if s == "vertices" => Ok(NodeChoice::Vertices),
        Some(("spacing", v)) => v.parse().map(NodeChoice::Spacing).map_err(|_| bad()),
        Some(("count", v)) => v.parse().map(NodeChoice::Count).map_err(|_| bad()),
        _ => Err(bad()),
    }
}

impl Common {
    fn options(&self, open: OpenMesh) -> BakeOptions {
        BakeOptions {
            spacing: self.spacing,
            pad_cells: self.pad,
            extent: self
                .band
                .map_or(Extent::Full, |cells| Extent::NarrowBand { cells }),
            nodes: self.nodes,
            density: self.density,
            units: self.units.clone(),
            open,
            allow_unresolved: self.allow_unresolved_grid,
        }
    }
}

fn run(cli: Cli) -> Result<(), BakeError> {
    let cuboid = match &cli.shape {
        Shape::Box { size, .. } => Some([0.5 * size[0], 0.5 * size[1], 0.5 * size[2]]),
        _ => None,
    };
    let (grain, common) = match &cli.shape {
        Shape::Mesh {
            file,
            elset,
            keep_last_definition,
            open,
            common,
        } => {
            let redefinition = if *keep_last_definition {
                fem::Redefinition::KeepLast
            } else {
                fem::Redefinition::Refuse
            };
            let mesh = input::read_surface_with(file, elset.as_deref(), redefinition)?;
            (bake_mesh(&mesh, file, &common.options(*open))?, common)
        }
        Shape::Image {
            file,
            voxel,
            threshold,
            label,
            common,
        } => {
            let rule = match label {
                Some(l) => Segmentation::Label(*l),
                None => Segmentation::Threshold(threshold.unwrap_or(0.5)),
            };
            let image = VoxelImage::read(file, *voxel, rule)?;
            (
                bake_image(&image, &common.options(OpenMesh::Refuse))?,
                common,
            )
        }
        Shape::Sphere { radius, common } => (
            bake_primitive(
                &Primitive::Sphere { radius: *radius },
                &common.options(OpenMesh::Refuse),
            )?,
            common,
        ),
        Shape::Box { size, common } => (
            bake_primitive(
                &Primitive::Cuboid {
                    half: [0.5 * size[0], 0.5 * size[1], 0.5 * size[2]],
                },
                &common.options(OpenMesh::Refuse),
            )?,
            common,
        ),
        Shape::Cylinder {
            radius,
            height,
            common,
        } => (
            bake_primitive(
                &Primitive::Cylinder {
                    radius: *radius,
                    half_height: 0.5 * height,
                },
                &common.options(OpenMesh::Refuse),
            )?,
            common,
        ),
        Shape::Ellipsoid { semi_axes, common } => (
            bake_primitive(
                &Primitive::Ellipsoid {
                    semi_axes: [semi_axes[0], semi_axes[1], semi_axes[2]],
                },
                &common.options(OpenMesh::Refuse),
            )?,
            common,
        ),
    };
    let mut grain = grain;
    common
        .deform
        .request()
        .apply(&mut grain, common.density, cuboid)?;
    for (what, resolution) in &grain.unresolved {
        eprintln!(
            "levelset-bake: warning: {what}: {resolution} (baked as --allow-unresolved-grid asks)"
        );
    }
    for note in &grain.notes {
        eprintln!("levelset-bake: note: {note}");
    }
    grain.bundle.write(&common.out)?;
    println!(
        "{}",
        summary(&common.out.display().to_string(), &grain.bundle)
    );
    Ok(())
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("levelset-bake: {e}");
            ExitCode::FAILURE
        }
    }
}
