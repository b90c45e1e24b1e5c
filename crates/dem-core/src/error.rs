//! The errors every layer may return: a refused key of a model's specification ([`KeyError`])
//! and a bundle that cannot be a grain's shape ([`ShapeError`]). They sit at the bottom so that
//! a model refuses its own parameters without knowing the file they came from (the scene parser
//! above adds the file).

/// A key of a specification that is refused, and why: `key` is its path in the scene
/// (`grains[2].position`); the scene parser adds the file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct KeyError {
    /// The key's path, e.g. `grains[2].position`.
    pub key: String,
    /// What was expected.
    pub message: String,
}

impl KeyError {
    /// Key `key` refused for `message`.
    pub fn new(key: String, message: String) -> Self {
        KeyError { key, message }
    }
}

/// Why a bundle cannot be a grain's shape.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ShapeError {
    /// The bundle has no surface node.
    #[error("the grain has no surface nodes")]
    NoNodes,
    /// `M` is not positive definite.
    #[error("the modal mass is not positive definite")]
    Mass,
    /// `K` is not symmetric positive definite.
    #[error(
        "the modal stiffness is not symmetric positive definite (a mode with zero or negative stiffness is no deformation mode)"
    )]
    Stiffness,
    /// `C` is not symmetric positive semi-definite.
    #[error(
        "the modal damping is not symmetric positive semi-definite (it would feed energy into the modes)"
    )]
    Damping,
    /// A flexibility without the material it was made with.
    #[error(
        "the bundle has a residual flexibility but no material (the half space's compliance needs E and nu): bake it again from its modes bundle"
    )]
    Flexibility,
    /// A mode field's value beyond the `f32` range the solver keeps the fields in.
    #[error(
        "a mode field holds {0:e}, beyond the magnitude 3.4e38 the solver keeps mode fields to (f32): the field's units are wrong"
    )]
    FieldRange(f64),
}

/// Refuses `values` (key `key`) unless every number is finite.
pub fn check_finite(key: &str, values: &[f64]) -> Result<(), KeyError> {
    if values.iter().all(|x| x.is_finite()) {
        return Ok(());
    }
    Err(KeyError::new(
        key.into(),
        format!("finite numbers expected, got {values:?}"),
    ))
}

/// Refuses a direction (key `key`) that has no finite, non-zero length.
pub fn check_direction(key: &str, direction: &[f64; 3]) -> Result<(), KeyError> {
    let norm = direction.iter().map(|x| x * x).sum::<f64>().sqrt();
    if norm.is_finite() && norm > 0.0 {
        return Ok(());
    }
    Err(KeyError::new(
        key.into(),
        format!("a non-zero direction, got {direction:?}"),
    ))
}
