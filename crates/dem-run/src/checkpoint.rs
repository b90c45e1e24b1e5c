//! Checkpoints: the file (`checkpoint/step_<step>.json`, [`Checkpoint`]) that carries a run's
//! state and the identity of its experiment ([`dem_core::state`]), and the scene's settings it
//! was written with, so that a restart lists what changed (the run directory and its files:
//! [`mod@crate::run`], [`crate::rundir`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use dem_core::state::{Identity, State};
use serde::{Deserialize, Serialize};

/// The checkpoint format version (3: the experiment's [`Identity`]; 2, without it, is read
/// with a warning).
pub const CHECKPOINT_SCHEMA: u64 = 3;

/// A checkpoint file: JSON (numbers round-trip f64 exactly).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// [`CHECKPOINT_SCHEMA`].
    pub schema: u64,
    /// Length of history.csv when it was written.
    pub history_bytes: u64,
    /// The time step (kept: an automatic step is not recomputed on restart).
    pub dt: f64,
    /// The step and time the run's `steps` or `duration` count from: 0 but in a stage
    /// (`run.stage`), where they are those of the checkpoint the stage started from.
    #[serde(default)]
    pub origin: (u64, f64),
    /// What the experiment is made of (none in schema 2).
    #[serde(default)]
    pub identity: Option<Identity>,
    /// The scene's settings when it was written ([`settings`]), for a restart to list what
    /// changed.
    #[serde(default)]
    pub settings: Option<serde_json::Value>,
    /// The state.
    pub state: State,
}

impl Checkpoint {
    /// Reads a checkpoint file; errors are the file's (the line and column of bad JSON).
    pub fn read(path: &Path) -> Result<Checkpoint, String> {
        let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
        let text = grain::text::utf8_text(bytes).map_err(|e| e.to_string())?;
        let c: Checkpoint = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        if c.schema != CHECKPOINT_SCHEMA && c.schema != 2 {
            return Err(format!(
                "checkpoint schema {}, this build reads 2 and {CHECKPOINT_SCHEMA}",
                c.schema
            ));
        }
        if c.identity.is_none() && c.schema == CHECKPOINT_SCHEMA {
            return Err(format!(
                "checkpoint schema {CHECKPOINT_SCHEMA} without its `identity`"
            ));
        }
        Ok(c)
    }
}

/// The settings of a scene's text that a continuation may change (every table but the
/// grains: `[run]`, `[output]`, `[contact]`, `[[walls]]`, `[cell]`, `[stop]`), as written;
/// `None` for text that is not TOML.
pub fn settings(scene_text: &str) -> Option<serde_json::Value> {
    let mut t: toml::Table = scene_text.parse().ok()?;
    for grains in ["grains", "lattices", "packings"] {
        t.remove(grains);
    }
    serde_json::to_value(t).ok()
}

/// The settings that differ from `then` to `now`, each as `key: then -> now` (keys as paths,
/// `walls[1].motion.velocity`; a setting given in one only is `unset` in the other).
pub fn changes(then: &serde_json::Value, now: &serde_json::Value) -> Vec<String> {
    fn flatten(key: String, v: &serde_json::Value, out: &mut BTreeMap<String, String>) {
        let join = |k: &str| match key.is_empty() {
            true => k.to_string(),
            false => format!("{key}.{k}"),
        };
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    flatten(join(k), x, out);
                }
            }
            serde_json::Value::Array(items) if items.iter().any(|x| x.is_object()) => {
                for (i, x) in items.iter().enumerate() {
                    flatten(format!("{key}[{i}]"), x, out);
                }
            }
            other => {
                out.insert(key, other.to_string());
            }
        }
    }
    let (mut a, mut b) = (BTreeMap::new(), BTreeMap::new());
    flatten(String::new(), then, &mut a);
    flatten(String::new(), now, &mut b);
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    let unset = "unset".to_string();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| {
            let (x, y) = (a.get(k).unwrap_or(&unset), b.get(k).unwrap_or(&unset));
            format!("{k}: {x} -> {y}")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A restart lists the settings changed since its checkpoint: the time step, a law
    /// coefficient, a wall's motion, a stop condition added; the grains are not settings.
    #[test]
    fn the_changed_settings_are_listed_by_key() {
        let then = settings(
            "[run]\ndt = 4e-4\nsteps = 10\n[contact]\nlaw = \"linear-springs\"\nfriction = 0.4\n\
             [[grains]]\nbundle = \"a.grain\"\nposition = [0, 0, 0]\n\
             [[walls]]\nkind = \"plane\"\n[[walls]]\nkind = \"plane\"\nmotion = { velocity = [0, 0, 1] }\n",
        )
        .unwrap();
        let now = settings(
            "[run]\ndt = 2e-4\nsteps = 10\n[contact]\nlaw = \"linear-springs\"\nfriction = 0.4\n\
             [[grains]]\nbundle = \"b.grain\"\nposition = [1, 0, 0]\n\
             [[walls]]\nkind = \"plane\"\n[[walls]]\nkind = \"plane\"\nmotion = { velocity = [0, 0, 2] }\n\
             [stop]\nunbalanced = 0.01\n",
        )
        .unwrap();
        assert_eq!(
            changes(&then, &now),
            [
                "run.dt: 0.0004 -> 0.0002",
                "stop.unbalanced: unset -> 0.01",
                "walls[1].motion.velocity: [0,0,1] -> [0,0,2]",
            ]
        );
        assert!(changes(&then, &then).is_empty());
    }
}
