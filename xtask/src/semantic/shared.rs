//! What the semantic campaign's tools share: the verdict of a case, the class of a refusal's
//! message, and the random draws of grains and laws.

use std::path::Path;

use levelset_bake::{BakeOptions, Extent, NodeChoice, OpenMesh, Primitive, bake_primitive};
use rand::RngExt;
use rand_xorshift::XorShiftRng;

/// What a tool made of one case.
pub(super) enum Verdict {
    Refused(String),
    Accepted,
    Failed(String),
}

/// A refusal's class: its first 90 characters with every number written `#`.
pub(super) fn class(message: &str) -> String {
    let mut out = String::new();
    let mut in_number = false;
    for c in message.chars() {
        let numeric = c.is_ascii_digit() || (in_number && matches!(c, '.' | 'e' | 'E' | '-' | '+'));
        if numeric && !in_number {
            out.push('#');
        } else if !numeric {
            out.push(c);
        }
        in_number = numeric;
    }
    out.chars().take(90).collect()
}

/// A number spread evenly in log scale over `[lo, hi]`.
pub(super) fn log_uniform(rng: &mut XorShiftRng, lo: f64, hi: f64) -> f64 {
    (rng.random_range(lo.ln()..hi.ln())).exp()
}

/// Bakes the campaign's sphere of `radius` (grid spacing 0.1, 200 nodes, density 1000, SI) into
/// the bundle `path`: the grain of the `run` and `rundir` tools.
pub(super) fn bake_ball(path: &Path, radius: f64) -> Result<(), String> {
    let options = BakeOptions {
        spacing: 0.1,
        pad_cells: 2,
        extent: Extent::Full,
        nodes: NodeChoice::Count(200),
        density: 1000.0,
        units: "SI".into(),
        open: OpenMesh::Refuse,
        allow_unresolved: false,
    };
    bake_primitive(&Primitive::Sphere { radius }, &options)
        .map_err(|e| e.to_string())
        .and_then(|b| b.bundle.write(path).map_err(|e| e.to_string()))
}

/// A contact law at random, as the lines of a scene's `[contact]`: linear springs, Hertz-Mindlin
/// with restitution or Hertz-Jäger, with random coefficients.
pub(super) fn draw_law(rng: &mut XorShiftRng) -> String {
    match rng.random_range(0..3) {
        0 => format!(
            "law = \"linear-springs\"\nkn = {:e}\nks = {:e}\nfriction = {}\nnormal_damping = {:e}",
            log_uniform(rng, 1e3, 1e6),
            log_uniform(rng, 1e2, 1e6),
            rng.random_range(0.0..1.0),
            log_uniform(rng, 1e-3, 1e2)
        ),
        1 => format!(
            "law = \"hertz-mindlin\"\nshear_modulus = {:e}\npoisson_ratio = {}\nfriction = {}\nrestitution = {}",
            log_uniform(rng, 1e5, 1e8),
            rng.random_range(0.0..0.45),
            rng.random_range(0.0..1.0),
            rng.random_range(0.3..1.0)
        ),
        _ => format!(
            "law = \"hertz-jaeger\"\nshear_modulus = {:e}\npoisson_ratio = {}\nfriction = {}",
            log_uniform(rng, 1e5, 1e8),
            rng.random_range(0.0..0.45),
            rng.random_range(0.0..1.0)
        ),
    }
}
