//! The registry of contact laws: the name `[contact] law` gives, and how each law reads its own
//! keys (LAMMPS's style registry). Adding a law is one file and one line in [`LAWS`].

use std::sync::Arc;

use serde::de::DeserializeOwned;

use super::{
    ContactLaw, area_tractions, hertz_jaeger, hertz_mindlin, hertz_patches, linear_springs,
};
use crate::error::KeyError;
use crate::wall::WallSpec;

/// The laws, one line each: the name `[contact] law` gives, and how its keys are read.
pub const LAWS: &[(&str, Reader)] = &[
    ("linear-springs", read::<linear_springs::LinearSprings>),
    ("area-tractions", read::<area_tractions::AreaTractions>),
    ("hertz-jaeger", read::<hertz_jaeger::HertzJaeger>),
    ("hertz-mindlin", read::<hertz_mindlin::HertzMindlin>),
    ("hertz-patches", read::<hertz_patches::HertzPatches>),
];

/// Reads the keys of the law it is registered for (its name, the `[contact]` table without
/// `law` and `local_damping`, the scene's walls).
pub type Reader = fn(&str, toml::Table, &[WallSpec]) -> Result<Arc<dyn ContactLaw>, KeyError>;

/// The law named `name` with its keys `table`, checked (keys named `contact.<key>`); `walls` are
/// the scene's, for laws that meet some kinds only.
pub fn from_table(
    name: &str,
    table: toml::Table,
    walls: &[WallSpec],
) -> Result<Arc<dyn ContactLaw>, KeyError> {
    match LAWS.iter().find(|(n, _)| *n == name) {
        Some((name, reader)) => reader(name, table, walls),
        None => Err(KeyError::new(
            "contact.law".into(),
            format!(
                "unknown variant `{name}`, expected one of {}",
                LAWS.iter()
                    .map(|(n, _)| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

/// The reader of law `L`: its keys deserialized (errors at `contact.<key>`, the law named),
/// then its checks.
fn read<L: ContactLaw + DeserializeOwned + 'static>(
    name: &str,
    table: toml::Table,
    walls: &[WallSpec],
) -> Result<Arc<dyn ContactLaw>, KeyError> {
    let law: L = serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
        let path = e.path().to_string();
        let message = e.into_inner().message().trim().to_string();
        // A missing key is reported at its table; name the key itself.
        let key = match message.strip_prefix("missing field `") {
            Some(rest) if path == "." => rest.split('`').next().unwrap_or_default(),
            _ => &path,
        };
        KeyError::new(
            format!("contact.{key}"),
            format!("{message} (law = \"{name}\")"),
        )
    })?;
    law.check_scene(walls)?;
    Ok(Arc::new(law))
}
