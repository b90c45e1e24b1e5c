//! The scene-to-world build: a checked [`Scene`] and its bundles become a [`Simulation`], its
//! grains placed (single grains, then lattices, in the scene's order), their modal states read
//! and checked against their bundles, its walls made, and its initial forces and time step
//! evaluated. What a scene cannot honour is refused with its key (docs/hardening.md).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nalgebra::Vector3;

use dem_core::body::{
    Body, Dof, Drive, FARTHEST, NodeRole, Shape, ShapeSource, held, largest_radius,
    smallest_radius, too_far,
};
use dem_core::cell::{Cell, CellSpec, check_cell};
use dem_core::error::KeyError;
use dem_core::law::Histories;
use dem_core::levelset::registry;
use dem_core::modal::{InternalLaw, Modes, ModesSpec};
use dem_core::sim::{Parameters, Simulation, World};
use dem_core::timestep::check_wall_steps;
use dem_core::wall::{Wall, behind_wall};

use crate::grains::GrainSpec;
use crate::packing::Generated;
use crate::scene::{SKIN_DEFAULT, SKIN_LARGEST, Scene, SceneError, TimeStep};

/// A grain's modal state from its scene entry, checked against its bundle: `Ok(None)` when the
/// grain runs rigid.
fn modes_of(spec: Option<&ModesSpec>, shape: &Shape, key: &str) -> Result<Option<Modes>, KeyError> {
    let fail = |k: &str, m: String| Err(KeyError::new(format!("{key}.{k}"), m));
    let Some(modal) = &shape.modal else {
        return match spec {
            Some(_) => Err(KeyError::new(
                key.to_string(),
                "the bundle is rigid (no modes): a deformable option needs a deformable bundle"
                    .into(),
            )),
            None => Ok(None),
        };
    };
    let default = ModesSpec::default();
    let spec = spec.unwrap_or(&default);
    if !spec.active {
        return Ok(None);
    }
    let a = modal.count;
    let vector = |k: &str, v: &Option<Vec<f64>>| match v {
        None => Ok(vec![0.0; a]),
        Some(v) if v.len() == a => Ok(v.clone()),
        Some(v) => Err(KeyError::new(
            format!("{key}.{k}"),
            format!("one value per mode ({a}), got {}", v.len()),
        )),
    };
    let eps = vector("amplitudes", &spec.amplitudes)?;
    let rate = vector("rates", &spec.rates)?;
    let update = registry::entry(&spec.levelset, &format!("{key}.levelset"))?;
    if update.samples && !modal.has_samples() {
        return fail(
            "levelset",
            format!(
                "\"{}\" needs level sets baked at sampled amplitudes (levelset-bake --samples); this bundle has none for some mode",
                update.name
            ),
        );
    }
    if let InternalLaw::Table(t) = &modal.law {
        let (lo, hi) = t.range();
        if eps[0] < lo || eps[0] > hi {
            return fail(
                "amplitudes",
                format!(
                    "amplitude {} is outside the internal-force table's range [{lo}, {hi}]",
                    eps[0]
                ),
            );
        }
    }
    if let dem_core::modal::ModalDamping::Matrix(rows) = &spec.damping
        && (rows.len() != a
            || rows.iter().any(|r| r.len() != a)
            || !dem_core::modal::definite(
                &nalgebra::DMatrix::from_fn(a, a, |i, j| rows[i][j]),
                true,
            ))
    {
        return fail(
            "damping.matrix",
            format!(
                "a symmetric, positive semi-definite {a} x {a} matrix (one row per mode; negative damping feeds energy in)"
            ),
        );
    }
    Ok(Some(Modes::new(
        eps,
        rate,
        spec.levelset.clone(),
        spec.damping.clone(),
    )))
}

/// Builds the initial state of a scene (`path`: the scene file, for relative bundle paths
/// and messages) and evaluates the initial forces.
pub fn from_scene(scene: &Scene, path: &Path) -> Result<Simulation, SceneError> {
    with_packings(scene, path).map(|built| built.sim)
}

/// A built scene: the simulation, its packings as generated (one per `[[packings]]`, in order),
/// and what the run should tell the user about the scene before it starts.
pub struct Built {
    /// The initial state.
    pub sim: Simulation,
    /// The packings.
    pub packings: Vec<Generated>,
    /// Warnings, each naming its scene key.
    pub warnings: Vec<String>,
}

/// [`from_scene`], with the scene's packings and warnings ([`Built`]).
pub fn with_packings(scene: &Scene, path: &Path) -> Result<Built, SceneError> {
    /// How far from the origin, in its own radii, a grain may be placed.
    /// The closest a lattice may place its grains, in their radii.
    const CLOSEST: f64 = 1e-3;
    let key_error = |e: KeyError| SceneError::key(path, e);
    let mut library = Library {
        dir: path.parent().unwrap_or(Path::new(".")),
        scene: path,
        bundles: HashMap::new(),
        shapes: Vec::new(),
        sources: Vec::new(),
        frames: Vec::new(),
        by_key: HashMap::new(),
    };
    let mut placed = Placed::default();
    for (i, g) in scene.grains.iter().enumerate() {
        let shape = library.shape(
            &g.bundle,
            g.scale,
            format!("grains[{i}].bundle"),
            format!("grains[{i}].scale"),
        )?;
        let g = g.in_local_frame(&library.frames[shape]);
        placed.grain(&g, format!("grains[{i}]"), shape);
    }
    // Each lattice's index, spacing, counts and shape, for the check below.
    let mut spacings = Vec::new();
    for (i, l) in scene.lattices.iter().enumerate() {
        let shape = library.shape(
            &l.bundle,
            l.scale,
            format!("lattices[{i}].bundle"),
            format!("lattices[{i}].scale"),
        )?;
        // Its farthest grains are at its two extreme corners.
        let far =
            [0, 1, 2].map(|d| l.origin[d] + l.counts[d].saturating_sub(1) as f64 * l.spacing[d]);
        for corner in [l.origin, far] {
            placed
                .places
                .push((format!("lattices[{i}].origin"), corner, shape));
        }
        spacings.push((i, l.spacing, l.counts, shape));
        for a in 0..l.counts[0] {
            for b in 0..l.counts[1] {
                for c in 0..l.counts[2] {
                    let offset = [a, b, c];
                    let position = [0, 1, 2].map(|d| l.origin[d] + offset[d] as f64 * l.spacing[d]);
                    placed.bodies.push(Body::new(
                        shape,
                        position,
                        [1.0, 0.0, 0.0, 0.0],
                        l.velocity,
                        [0.0; 3],
                        free_drive(&l.hold),
                    ));
                    placed
                        .modal_specs
                        .push((l.modes.clone(), format!("lattices[{i}].modes")));
                    placed.node_roles.push(None);
                }
            }
        }
    }
    let walls: Vec<Wall> = scene.walls.iter().map(Wall::from_spec).collect();
    let mut class_shapes = Vec::new();
    for (i, p) in scene.packings.iter().enumerate() {
        // The classes' scales come from the sizes, or from the grading curve.
        let scales = if p.sieve.is_some() { "sieve" } else { "sizes" };
        class_shapes.push(
            (p.classes().iter())
                .map(|c| {
                    let bundle = &p.bundles[c.ingredient].bundle;
                    library.shape(
                        bundle,
                        c.scale,
                        format!("packings[{i}].bundles[{}].bundle", c.ingredient),
                        format!("packings[{i}].{scales}"),
                    )
                })
                .collect::<Result<Vec<_>, _>>()?,
        );
    }
    // The cell against every grain of the scene, before the packings place grains in it.
    let cell = scene.cell.as_ref().map(|c| c.cell());
    if let (Some(spec), Some(cell)) = (&scene.cell, &cell) {
        check_cell_reach(spec, cell, smallest_radius(&library.shapes)).map_err(key_error)?;
        check_cell(cell, largest_radius(&library.shapes)).map_err(key_error)?;
    }
    let mut packed = Vec::new();
    for (i, (p, class_shapes)) in scene.packings.iter().zip(&class_shapes).enumerate() {
        let key = format!("packings[{i}]");
        let generated = crate::packing::generate(
            p,
            &key,
            &library.shapes,
            class_shapes,
            &placed.bodies,
            &walls,
            cell.as_ref(),
        )
        .map_err(key_error)?;
        for g in &generated.grains {
            placed.grain(&g.spec, format!("{key}.bundles[{}]", g.ingredient), g.shape);
        }
        packed.push(generated);
    }
    let Placed {
        mut bodies,
        modal_specs,
        node_roles,
        places,
    } = placed;
    let (shapes, sources) = (library.shapes, library.sources);
    for (key, position, shape) in &places {
        if let Some(message) = too_far(position, &shapes[*shape]) {
            return Err(key_error(KeyError::new(key.clone(), message)));
        }
    }
    // Grains of a lattice closer than CLOSEST of their radius lie on top of each other (the
    // fuzz campaign's 1e-320), and the first step runs for minutes; even plates stacked
    // along their thickness are farther apart.
    for (i, spacing, counts, shape) in spacings {
        let r = shapes[shape].bounding_radius;
        if let Some(d) = (0..3).find(|&d| counts[d] > 1 && spacing[d] < CLOSEST * r) {
            return Err(key_error(KeyError::new(
                format!("lattices[{i}].spacing"),
                format!(
                    "{:e} along {} puts the grains on top of each other: at least {CLOSEST:e} times their radius {r:e} expected",
                    spacing[d],
                    ["x", "y", "z"][d]
                ),
            )));
        }
    }
    let mut warnings: Vec<String> = Vec::new();
    // Once per shape, not per grain of a lattice.
    let dilations: Vec<bool> = (shapes.iter())
        .map(|s| (s.modal.as_ref()).is_some_and(|m| m.paths.is_uniform_dilation(&s.nodes)))
        .collect();
    for (b, (spec, key)) in bodies.iter_mut().zip(&modal_specs) {
        b.modes = modes_of(spec.as_ref(), &shapes[b.shape], key).map_err(key_error)?;
        for warning in [
            turning_loading(b, &shapes[b.shape], dilations[b.shape], key),
            frozen_modes(b, key),
        ]
        .into_iter()
        .flatten()
        {
            if !warnings.contains(&warning) {
                warnings.push(warning);
            }
        }
    }
    if let Some(cell) = &cell {
        // The affine field and the wraps of a deforming cell would move a held coordinate.
        if cell.deforms()
            && let Some(i) = bodies
                .iter()
                .position(|b| matches!(b.drive, Drive::Held { .. }))
        {
            return Err(key_error(KeyError::new(
                places[i].0.replace(".position", ".hold"),
                "a held grain in a deforming cell (its velocity_gradient or servo): the cell's affine motion would move its held coordinates; hold nothing, or keep the cell at rest".into(),
            )));
        }
        // Free grains start in the cell: one placed outside is its image inside, its
        // unwrapped position where the scene put it.
        for b in bodies.iter_mut().filter(|b| b.is_free()) {
            (b.position, b.image) = cell.into_cell(&b.position);
        }
    }
    let law = scene.contact.law.clone();
    law.check(&shapes, &bodies, walls.len())
        .map_err(key_error)?;
    if !law.couples()
        && let Some((_, (_, key))) = (bodies.iter().zip(&modal_specs))
            .find(|(b, _)| b.modes.is_some() && shapes[b.shape].flexibility.is_some())
    {
        warnings.push(format!(
            "{}: the grain's bundle has a residual flexibility, which only law = \"hertz-patches\" uses: with law = \"{}\" its contacts are not coupled through its body (docs/physics.md section 2)",
            key.trim_end_matches(".modes"),
            law.name()
        ));
    }
    for (i, (_, key)) in modal_specs.iter().enumerate() {
        if let Some(message) = behind_wall(&bodies[i], &walls) {
            return Err(key_error(KeyError::new(
                key.trim_end_matches(".modes").to_string(),
                message,
            )));
        }
    }
    // A skin beyond the grains' size lists pairs far out of reach: at 1e5 grains, more than
    // memory holds.
    let largest = largest_radius(&shapes);
    if let Some(skin) = scene.run.skin
        && skin > SKIN_LARGEST * largest
    {
        return Err(key_error(KeyError::new(
            "run.skin".into(),
            format!(
                "at most {SKIN_LARGEST} x the largest grain's bounding radius ({:e}), got {skin:e}: a larger skin lists pairs far out of reach",
                SKIN_LARGEST * largest
            ),
        )));
    }
    let world = World {
        shapes,
        sources,
        bodies,
        walls,
        cell,
        histories: Histories::new(),
        node_roles,
        step: 0,
        time: 0.0,
    };
    let parameters = Parameters {
        law,
        local_damping: scene.contact.local_damping,
        gravity: Vector3::from(scene.run.gravity),
        dt: 0.0,
        skin: (scene.run.skin)
            .unwrap_or_else(|| SKIN_DEFAULT * dem_core::body::smallest_radius(&world.shapes)),
    };
    let mut sim = Simulation::new(world, parameters);
    sim.parameters.dt = match scene.run.dt {
        TimeStep::Fixed(dt) => dt,
        TimeStep::Auto(_) => scene.run.safety * sim.critical_step(),
    };
    check_wall_steps(
        &sim.world.shapes,
        &sim.world.walls,
        sim.world.cell.as_ref(),
        sim.parameters.dt,
    )
    .map_err(key_error)?;
    Ok(Built {
        sim,
        packings: packed,
        warnings,
    })
}

/// The warning for a grain whose deformation is one FEM loading's (one mode, or a path through
/// a run's snapshots) and that is free to turn (docs/physics.md section 1): its mode is fixed in
/// its body, so a contact that meets it away from its run's loaded points, or after it has
/// turned, meets a rigid body (the penalty contact alone), and its amplitude can leave its
/// data. `key` is the grain's `modes` key; the warning names its `hold`. Not for a shape whose
/// modes are a uniform dilation (`dilation`, [`dem_core::path::Paths::is_uniform_dilation`]),
/// which turns with the grain and answers a contact anywhere.
fn turning_loading(body: &Body, shape: &Shape, dilation: bool, key: &str) -> Option<String> {
    let modal = shape.modal.as_ref()?;
    body.modes.as_ref()?;
    let one_loading =
        (modal.count == 1 || modal.paths.modes.iter().any(|p| p.range.is_some())) && !dilation;
    let turns = match &body.drive {
        Drive::Free => true,
        Drive::Held { rotation, .. } => !rotation,
        Drive::Prescribed { .. } => false,
    };
    (one_loading && turns).then(|| {
        format!(
            "{}: a grain with one deformation mode (one FEM loading's) is free to turn: its mode stays fixed in the grain, so a contact away from its FEM run's loaded points, or after it turns, meets it as a rigid body; hold = [\"rotation\"] keeps it as its FEM run loaded it, or build its modes from its mesh (mode-extract --free; docs/physics.md section 2)",
            key.replace(".modes", ".hold")
        )
    })
}

/// The warning for a deformable grain with a prescribed motion: it keeps its amplitudes (its
/// modes answer no contact, and two prescribed grains do not meet). `key` is its `modes` key;
/// the warning names its `motion`.
fn frozen_modes(body: &Body, key: &str) -> Option<String> {
    body.modes.as_ref()?;
    matches!(body.drive, Drive::Prescribed { .. }).then(|| {
        format!(
            "{}: a grain with a prescribed motion keeps its amplitudes: its modes answer none of its contacts; free it (its hold) to let it deform, or say modes = {{ active = false }}",
            key.replace(".modes", ".motion")
        )
    })
}

/// Refuses a cell (`spec`, made `cell`) with a corner farther from the origin than floating
/// point resolves the smallest grain, of radius `smallest` ([`FARTHEST`], every grain's rule):
/// its grains' images across its faces would be rounding noise, and the image counts of grains
/// far from it would overflow.
fn check_cell_reach(spec: &CellSpec, cell: &Cell, smallest: f64) -> Result<(), KeyError> {
    let limit = FARTHEST * smallest;
    let far = (cell.corners().iter())
        .map(|c| c.amax())
        .fold(0.0, f64::max);
    if far <= limit {
        return Ok(());
    }
    let key = if Vector3::from(spec.origin).amax() > limit {
        "cell.origin"
    } else if spec.size.is_some() {
        "cell.size"
    } else {
        "cell.vectors"
    };
    Err(KeyError::new(
        key.into(),
        format!(
            "the cell reaches {far:e} from the origin, more than {FARTHEST:e} times the smallest grain's radius {smallest:e}, where floating point cannot resolve a grain or its images across the faces: a cell within [-{limit:e}, {limit:e}] on each axis"
        ),
    ))
}

/// The shapes of a scene: each bundle read once, each bundle at each scale made a shape once.
struct Library<'a> {
    /// The scene file's directory, which bundle paths are relative to.
    dir: &'a Path,
    /// The scene file, for messages.
    scene: &'a Path,
    /// Each bundle read, with its digest.
    bundles: HashMap<PathBuf, (grain::GrainBundle, String)>,
    shapes: Vec<Arc<Shape>>,
    /// What each shape was made from.
    sources: Vec<ShapeSource>,
    /// Each shape's bundle's input frame (from its mesh's frame to its own, at its scale).
    frames: Vec<grain::RigidTransform>,
    /// Shape indices by bundle path and scale (its bits).
    by_key: HashMap<(PathBuf, u64), usize>,
}

impl Library<'_> {
    /// The index of the shape of `bundle` at `scale`, read and made if new (`key` names the
    /// bundle's scene key in errors, `scale_key` the scale's: issue #33, a scale the grain
    /// cannot take was reported under the bundle's key).
    fn shape(
        &mut self,
        bundle: &Path,
        scale: f64,
        key: String,
        scale_key: String,
    ) -> Result<usize, SceneError> {
        let full = self.dir.join(bundle);
        if let Some(&i) = self.by_key.get(&(full.clone(), scale.to_bits())) {
            return Ok(i);
        }
        let scene = self.scene;
        let (b, digest) = match self.bundles.entry(full.clone()) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let bundle_error = |source| SceneError::Bundle {
                    path: scene.to_path_buf(),
                    key: key.clone(),
                    source: Box::new(source),
                };
                let b = grain::GrainBundle::read(&full).map_err(bundle_error)?;
                e.insert((b, grain::bundle_digest(&full).map_err(bundle_error)?))
            }
        };
        let refuse = |key: &String, message: String| SceneError::Key {
            path: scene.to_path_buf(),
            key: key.clone(),
            message: format!("{}: {message}", full.display()),
        };
        let scaled;
        let b = if scale == 1.0 {
            &*b
        } else {
            scaled = b
                .scaled(scale)
                .map_err(|e| refuse(&scale_key, e.to_string()))?;
            &scaled
        };
        let shape = Shape::from_bundle(b).map_err(|e| refuse(&key, e.to_string()))?;
        self.frames.push(b.properties.input_frame.clone());
        self.shapes.push(Arc::new(shape));
        self.sources.push(ShapeSource {
            bundle: bundle.to_path_buf(),
            digest: digest.clone(),
            scale,
        });
        self.by_key
            .insert((full, scale.to_bits()), self.shapes.len() - 1);
        Ok(self.shapes.len() - 1)
    }
}

/// The bodies placed so far, with what the build checks of each.
#[derive(Default)]
struct Placed {
    bodies: Vec<Body>,
    /// Each body's modes table and its key.
    modal_specs: Vec<(Option<ModesSpec>, String)>,
    node_roles: Vec<Option<NodeRole>>,
    /// Where each grain (a lattice: its corners) was placed: its key, position and shape.
    places: Vec<(String, [f64; 3], usize)>,
}

impl Placed {
    /// Places grain `g` (scene key `key`, shape `shape`).
    fn grain(&mut self, g: &GrainSpec, key: String, shape: usize) {
        self.places
            .push((format!("{key}.position"), g.position, shape));
        let drive = match &g.motion {
            None => free_drive(&g.hold),
            Some(m) => Drive::Prescribed {
                origin: g.position,
                motion: m.clone(),
            },
        };
        self.bodies.push(Body::new(
            shape,
            g.position,
            g.orientation,
            g.velocity,
            g.angular_velocity,
            drive,
        ));
        self.modal_specs
            .push((g.modes.clone(), format!("{key}.modes")));
        self.node_roles.push(g.nodes);
    }
}

/// The drive of a free grain holding `hold`.
fn free_drive(hold: &[Dof]) -> Drive {
    if hold.is_empty() {
        return Drive::Free;
    }
    let (translation, rotation) = held(hold);
    Drive::Held {
        translation,
        rotation,
    }
}
