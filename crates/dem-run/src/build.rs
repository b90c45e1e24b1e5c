//! The scene-to-world build: a checked [`Scene`] and its bundles become a [`Simulation`], its
//! grains placed (single grains, then lattices, in the scene's order), their modal states read
//! and checked against their bundles, its walls made, and its initial forces and time step
//! evaluated. What a scene cannot honour is refused with its key (docs/hardening.md).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nalgebra::{Matrix3, Vector3};

use crate::body::{Body, Drive, Shape};
use crate::cell::Cell;
use crate::checkpoint::ShapeSource;
use crate::law::Histories;
use crate::ledger::{Dissipation, Ledger};
use crate::modal::{InternalLaw, Modes};
use crate::packing::Generated;
use crate::scene::{CellSpec, GrainSpec, KeyError, ModesSpec, Scene, SceneError, TimeStep, held};
use crate::sim::{Simulation, Timings};
use crate::wall::Wall;

/// The most a wall may move in one step, in radii of the smallest grain.
pub const WALL_STEP: f64 = 0.1;

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
    if spec.levelset == crate::levelset::LevelSetUpdate::Precomputed && !modal.has_samples() {
        return fail(
            "levelset",
            "\"precomputed\" needs level sets baked at sampled amplitudes (levelset-bake --samples); this bundle has none for some mode".into(),
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
    if let crate::modal::ModalDamping::Matrix(rows) = &spec.damping
        && (rows.len() != a
            || rows.iter().any(|r| r.len() != a)
            || !crate::modal::definite(&nalgebra::DMatrix::from_fn(a, a, |i, j| rows[i][j]), true))
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
        spec.levelset,
        spec.damping.clone(),
    )))
}

impl Simulation {
    /// Builds the initial state of a scene (`path`: the scene file, for relative bundle paths
    /// and messages) and evaluates the initial forces.
    pub fn from_scene(scene: &Scene, path: &Path) -> Result<Simulation, SceneError> {
        Simulation::build(scene, path).map(|(sim, _)| sim)
    }

    /// [`Simulation::from_scene`], with the scene's packings as generated (one per
    /// `[[packings]]`, in order).
    pub fn build(scene: &Scene, path: &Path) -> Result<(Simulation, Vec<Generated>), SceneError> {
        /// How far from the origin, in its own radii, a grain may be placed.
        /// The closest a lattice may place its grains, in their radii.
        const CLOSEST: f64 = 1e-3;
        let key_error = |KeyError { key, message }: KeyError| SceneError::Key {
            path: path.to_path_buf(),
            key,
            message,
        };
        let mut library = Library {
            dir: path.parent().unwrap_or(Path::new(".")),
            scene: path,
            bundles: HashMap::new(),
            shapes: Vec::new(),
            sources: Vec::new(),
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
            placed.grain(g, format!("grains[{i}]"), shape);
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
            let far = [0, 1, 2]
                .map(|d| l.origin[d] + l.counts[d].saturating_sub(1) as f64 * l.spacing[d]);
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
                        let position =
                            [0, 1, 2].map(|d| l.origin[d] + offset[d] as f64 * l.spacing[d]);
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
        for (b, (spec, key)) in bodies.iter_mut().zip(&modal_specs) {
            b.modes = modes_of(spec.as_ref(), &shapes[b.shape], key).map_err(key_error)?;
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
        law.check(&shapes, &bodies).map_err(key_error)?;
        let mut sim = Simulation {
            shapes,
            sources,
            ids: (0..bodies.len() as u32).collect(),
            shape_ids: bodies.iter().map(|b| b.shape).collect(),
            owned: bodies.len(),
            bodies,
            walls,
            histories: Histories::new(),
            law,
            node_roles,
            local_damping: scene.contact.local_damping,
            gravity: Vector3::from(scene.run.gravity),
            dt: 0.0,
            step: 0,
            time: 0.0,
            contacts: 0,
            node_tests: 0,
            node_candidates: 0,
            contact_energy: 0.0,
            records: Vec::new(),
            ledger: Ledger::default(),
            excursions: Vec::new(),
            fault: None,
            servo_fault: None,
            timings: Timings::default(),
            dissipation: Dissipation::default(),
            largest_contact: (0.0, 0.0),
            sample_sums: Default::default(),
            cell,
            largest_reach: 0.0,
            ghost_reach: 0.0,
            processes: None,
        };
        for (i, (_, key)) in modal_specs.iter().enumerate() {
            if let Some(message) = behind_wall(&sim.bodies[i], &sim.walls) {
                return Err(key_error(KeyError::new(
                    key.trim_end_matches(".modes").to_string(),
                    message,
                )));
            }
        }
        // The initial forces, with node records for a first output; no time has passed, so no
        // shear increment and no dissipation.
        sim.evaluate_forces(true, 0.0, &mut std::time::Instant::now());
        for b in &mut sim.bodies {
            if let (Some(m), Some(modal)) = (&mut b.modes, &sim.shapes[b.shape].modal) {
                m.set_damping_force(modal);
            }
        }
        let e = sim.energies();
        sim.ledger = Ledger {
            initial: e.total(),
            initial_gravity: e.gravity,
            ..Ledger::default()
        };
        sim.dt = match scene.run.dt {
            TimeStep::Fixed(dt) => dt,
            TimeStep::Auto(_) => scene.run.safety * sim.critical_step(),
        };
        sim.check_wall_steps().map_err(key_error)?;
        Ok((sim, packed))
    }

    /// Refuses a wall that moves a good part of a grain per step at the step `dt`: it overruns
    /// its contacts, and the grains meet it deep inside, with forces of no physical meaning.
    /// The same for a deforming periodic cell, whose velocity gradient `L` moves two grains in
    /// contact, their centres `l` apart, by `L l dt` per step relative to each other
    /// (crate::cell: the grains follow the affine field, the images the cell): at most
    /// `|L| 2 r_max dt`, `|L|` the largest singular value of `L` (its largest stretch), over the
    /// gradients its servo may set ([`Cell::extreme_gradients`]). A cell held below this also
    /// keeps `det(I + L dt) > 0`, so it never turns inside out (`|L dt| < 1`). The error is the
    /// scene key (`walls[i].motion`, `walls[i].servo.max_speed`, `cell.velocity_gradient`,
    /// `cell.servo.max_rate`) and the reason.
    pub fn check_wall_steps(&self) -> Result<(), KeyError> {
        let smallest = smallest_radius(&self.shapes);
        for (w, wall) in self.walls.iter().enumerate() {
            let (speed, key) = match (&wall.motion, &wall.servo) {
                (Some(m), _) => (m.largest_speed(), "motion"),
                (None, Some(s)) => (s.max_speed, "servo.max_speed"),
                (None, None) => (0.0, ""),
            };
            if speed * self.dt > WALL_STEP * smallest {
                return Err(KeyError::new(
                    format!("walls[{w}].{key}"),
                    format!(
                        "it moves {:e} per step (speed {speed:e}, dt {:e}), more than {WALL_STEP} of the smallest grain's radius {smallest:e}: lower its speed or the step",
                        speed * self.dt,
                        self.dt
                    ),
                ));
            }
        }
        let Some(cell) = &self.cell else {
            return Ok(());
        };
        // The largest singular value, from L scaled to at most 1 (it is linear in the scale).
        let stretch = |l: &Matrix3<f64>| {
            let scale = l.amax();
            if scale == 0.0 {
                return 0.0;
            }
            scale * (l / scale).svd(false, false).singular_values.max()
        };
        let apart = 2.0 * largest_radius(&self.shapes);
        let fastest = (cell.extreme_gradients().into_iter())
            .map(|l| (stretch(&l), l))
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .expect("one gradient at least");
        let moved = fastest.0 * apart * self.dt;
        if moved <= WALL_STEP * smallest {
            return Ok(());
        }
        let prescribed = stretch(&cell.loading.velocity_gradient) * apart * self.dt;
        let key = if prescribed > WALL_STEP * smallest {
            "cell.velocity_gradient"
        } else {
            "cell.servo.max_rate"
        };
        // Over the step the cell is (I + s L dt) H, s from 0 to 1: it goes flat where
        // det(I + s L dt) = 0, at a real eigenvalue of L dt of -1 or less (det(I + L dt) <= 0
        // is one case; two such eigenvalues keep it positive).
        let flat = (fastest.1 * self.dt)
            .complex_eigenvalues()
            .iter()
            .filter(|e| e.im == 0.0 && e.re <= -1.0)
            .map(|e| e.re)
            .fold(f64::INFINITY, f64::min);
        let inverted = if flat.is_finite() {
            format!(
                " (L dt has the eigenvalue {flat:e} <= -1: the cell goes flat within the step, and inside out past it; det(I + L dt) = {:e})",
                (Matrix3::identity() + fastest.1 * self.dt).determinant()
            )
        } else {
            String::new()
        };
        Err(KeyError::new(
            key.into(),
            format!(
                "it moves grains in contact, up to {apart:e} apart (twice the largest bounding radius), by up to {moved:e} per step relative to each other (L's largest stretch {:e}, dt {:e}), more than {WALL_STEP} of the smallest grain's radius {smallest:e}{inverted}: lower the rate or the step",
                fastest.0, self.dt
            ),
        ))
    }
}

/// The largest bounding radius of `shapes`.
pub(crate) fn largest_radius(shapes: &[Arc<Shape>]) -> f64 {
    shapes.iter().map(|s| s.bounding_radius).fold(0.0, f64::max)
}

/// The smallest bounding radius of `shapes`.
fn smallest_radius(shapes: &[Arc<Shape>]) -> f64 {
    (shapes.iter())
        .map(|s| s.bounding_radius)
        .fold(f64::INFINITY, f64::min)
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

/// Refuses a cell narrower than twice the largest grain's diameter across a periodic axis, the
/// grains reaching `largest` from their centres (crate::cell): a pair could meet through two
/// images, or a grain its own. A deformed cell with a servo may have been compressed there
/// towards a stress its grains do not carry at any width they fit in: the message gives the
/// servo's targets and the stresses carried.
pub(crate) fn check_cell(cell: &Cell, largest: f64) -> Result<(), KeyError> {
    let widths = cell.widths();
    let Some(k) = (0..3).find(|&k| cell.periodic[k] && widths[k] < 4.0 * largest) else {
        return Ok(());
    };
    let servo = match &cell.loading.servo {
        Some(servo) if cell.rate != Matrix3::zeros() => {
            let carried = [0, 1, 2].map(|k| format!("{:e}", -cell.measured.stress[(k, k)]));
            let asked = servo.pressure.map(|p| format!("{p:e}"));
            format!(
                ", or a servo target the grains carry (its servo asks for the pressures [{}]; they carry [{}])",
                asked.join(", "),
                carried.join(", ")
            )
        }
        _ => String::new(),
    };
    Err(KeyError::new(
        "cell".into(),
        format!(
            "{:e} across periodic axis {} (a_{}), less than twice the largest grain's diameter {:e}: a larger cell{servo}",
            widths[k],
            k + 1,
            k + 1,
            4.0 * largest
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
        let shape = if scale == 1.0 {
            Shape::from_bundle(b)
        } else {
            Shape::from_bundle(
                &b.scaled(scale)
                    .map_err(|e| refuse(&scale_key, e.to_string()))?,
            )
        }
        .map_err(|e| refuse(&key, e.to_string()))?;
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
    node_roles: Vec<Option<crate::scene::NodeRole>>,
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

/// Why `body`'s centre is behind one of `walls`, if it is: the wall would launch it.
pub(crate) fn behind_wall(body: &Body, walls: &[Wall]) -> Option<String> {
    walls.iter().enumerate().find_map(|(w, wall)| {
        let (d, _) = wall.distance(&body.position);
        (d < 0.0).then(|| {
            format!(
                "a grain's centre is {:e} behind walls[{w}] (a wall's inside is where its normal points): the wall would launch it",
                -d
            )
        })
    })
}

/// Beyond this many of its radii from the origin, f64 resolves less than about 2e-8 of a grain:
/// its contact geometry would be rounding noise, and a lattice's grains would fall onto each
/// other (found by the fuzz campaign: an origin of 1e308 put 3,000 grains on one point, and the
/// first step ran for minutes).
pub(crate) const FARTHEST: f64 = 1e8;

/// Why a grain of `shape` at `position` is too far from the origin ([`FARTHEST`]), if it is.
pub(crate) fn too_far(position: &[f64; 3], shape: &Shape) -> Option<String> {
    let r = shape.bounding_radius;
    position.iter().any(|x| x.abs() > FARTHEST * r).then(|| {
        format!(
            "the grain would sit at {position:?}, more than {FARTHEST:e} times its radius {r:e} from the origin, where floating point cannot resolve it; move the scene nearer the origin"
        )
    })
}

/// The drive of a free grain holding `hold`.
fn free_drive(hold: &[crate::scene::Dof]) -> Drive {
    if hold.is_empty() {
        return Drive::Free;
    }
    let (translation, rotation) = held(hold);
    Drive::Held {
        translation,
        rotation,
    }
}
