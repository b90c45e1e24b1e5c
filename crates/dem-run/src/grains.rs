//! The grains a scene places one by one: `[[grains]]` entries ([`GrainSpec`]) and regular
//! lattices of them (`[[lattices]]`, [`Lattice`]); a random packing (crate::packing) writes its
//! grains as the same entries. Below the scene parser, so that the packing generator and the
//! builder read them without it.

use std::path::PathBuf;

use dem_core::body::{Dof, NodeRole};
use dem_core::error::KeyError;
use dem_core::modal::ModesSpec;
use dem_core::motion::Motion;
use serde::{Deserialize, Serialize};

/// `[[grains]]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrainSpec {
    /// The grain bundle directory (relative to the scene file).
    pub bundle: PathBuf,
    /// The bundle's scale factor `s`: the same grain `s` times larger, of the same material
    /// ([`grain::GrainBundle::scaled`]; default 1).
    #[serde(default = "unit_scale", skip_serializing_if = "is_unit_scale")]
    pub scale: f64,
    /// The frame `position` and `orientation` place ([`Frame`]; default: the grain's own).
    #[serde(default, skip_serializing_if = "Frame::is_local")]
    pub frame: Frame,
    /// Centre of mass (`frame = "input"`: the origin of the mesh's frame).
    pub position: [f64; 3],
    /// Orientation, unit quaternion `(w, x, y, z)`, local to global (`frame = "input"`: the
    /// rotation of the mesh's axes).
    #[serde(default = "identity_quaternion")]
    pub orientation: [f64; 4],
    /// Velocity of the centre of mass.
    #[serde(default)]
    pub velocity: [f64; 3],
    /// Angular velocity (global frame).
    #[serde(default)]
    pub angular_velocity: [f64; 3],
    /// Prescribed motion (the grain is then moved, not integrated; its angular velocity stays).
    pub motion: Option<Motion>,
    /// Its modes (deformable bundles only; absent: active, semi-Lagrangian, at rest).
    pub modes: Option<ModesSpec>,
    /// Its node role in grain pairs (default: the `[contact] nodes` rule).
    pub nodes: Option<NodeRole>,
    /// Degrees of freedom held at their initial values (free grains only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hold: Vec<Dof>,
}

/// The frame a grain entry's `position` and `orientation` place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Frame {
    /// The grain's own frame (docs/formats.md): `position` is its centre of mass, `orientation`
    /// turns its principal axes of inertia.
    #[default]
    Local,
    /// The frame of the mesh it was baked from (the bundle's `input_frame`, the FEM model's
    /// frame): `position` is where that frame's origin goes and `orientation` turns its axes,
    /// so that a point `x` of the mesh goes to `position + R(orientation) x`. At the origin
    /// with no orientation, the grain sits where its FEM mesh was. `velocity` stays the centre
    /// of mass's.
    Input,
}

impl Frame {
    fn is_local(&self) -> bool {
        *self == Frame::Local
    }
}

impl GrainSpec {
    /// The same entry in the grain's own frame (`frame = "local"`), given the bundle's
    /// `input_frame` (from the mesh's frame to the grain's: `x_l = R_in x + t`, at the bundle's
    /// scale). With `x_g = p + R_q x` asked for, the body's rotation is `R_q R_in^T` and its
    /// centre `p - R_q R_in^T t`.
    pub fn in_local_frame(&self, input: &grain::RigidTransform) -> GrainSpec {
        use nalgebra::{Matrix3, Quaternion, Rotation3, UnitQuaternion, Vector3};
        if self.frame == Frame::Local {
            return self.clone();
        }
        let r = input.rotation;
        // The bundle holds a proper rotation (grain.json's contract): taken as it is.
        let r_in = Rotation3::from_matrix_unchecked(Matrix3::from_fn(|i, j| r[i][j]));
        let [w, x, y, z] = self.orientation;
        let q = UnitQuaternion::from_quaternion(Quaternion::new(w, x, y, z));
        let body = q * UnitQuaternion::from_rotation_matrix(&r_in.inverse());
        let centre = Vector3::from(self.position) - body * Vector3::from(input.translation);
        GrainSpec {
            frame: Frame::Local,
            position: centre.into(),
            orientation: [body.w, body.i, body.j, body.k],
            ..self.clone()
        }
    }
}

fn unit_scale() -> f64 {
    1.0
}

fn is_unit_scale(s: &f64) -> bool {
    *s == 1.0
}

/// Refuses a scale factor that is not finite and positive.
pub(crate) fn check_scale(s: f64, key: &str) -> Result<(), KeyError> {
    if s.is_finite() && s > 0.0 {
        Ok(())
    } else {
        Err(KeyError::new(
            key.to_string(),
            format!("a finite scale factor > 0, got {s}"),
        ))
    }
}

fn identity_quaternion() -> [f64; 4] {
    [1.0, 0.0, 0.0, 0.0]
}

/// `[[lattices]]`: a box lattice of identical grains, in x-major order (z fastest).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lattice {
    /// The grain bundle directory (relative to the scene file).
    pub bundle: PathBuf,
    /// The bundle's scale factor (as for a single grain).
    #[serde(default = "unit_scale", skip_serializing_if = "is_unit_scale")]
    pub scale: f64,
    /// Centre of the first grain.
    pub origin: [f64; 3],
    /// Grains along x, y, z.
    pub counts: [usize; 3],
    /// Centre-to-centre distances along x, y, z.
    pub spacing: [f64; 3],
    /// Initial velocity of every grain.
    #[serde(default)]
    pub velocity: [f64; 3],
    /// Their modes (as for a single grain).
    pub modes: Option<ModesSpec>,
    /// Degrees of freedom held (as for a single grain).
    #[serde(default)]
    pub hold: Vec<Dof>,
}
