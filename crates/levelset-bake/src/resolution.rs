//! How well a level-set grid holds the geometry it was computed from ([`Resolution`]): data
//! below the bake and its errors, which both name a resolution (the bake measures it,
//! `bake::resolution`).

/// The largest relative difference between the volume of a grid's solid (`phi < 0`) and the
/// volume the geometry encloses that a bake accepts. A resolved grid differs by a fraction of a
/// cell layer (at most about `A h / (16 V)`, [`crate::mass::grid_mass_properties`]: 3.75 % for a sphere 10
/// cells across; measured 6.7 % at 6 cells, 13 % at 4, 40 % at 2); a shape thinner than the
/// spacing, a grid without a node inside, or closed surfaces that are nested or intersect
/// themselves (whose enclosed volume counts some parts twice) differ by tens of per cent. So a
/// grain needs about 8 cells across its thinnest part (docs/hardening.md).
pub const MAX_VOLUME_MISMATCH: f64 = 0.05;

/// How well a level-set grid holds the geometry it was computed from: the volumes the two
/// enclose, and how deep inside the deepest grid node lies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Resolution {
    /// The volume the geometry encloses (length^3).
    pub volume: f64,
    /// The volume of the grid's solid `phi < 0` ([`crate::mass::grid_mass_properties`]).
    pub grid_volume: f64,
    /// The largest `-phi` over the grid nodes (length; negative when no node is inside).
    pub depth: f64,
    /// The grid spacing.
    pub spacing: f64,
}

impl Resolution {
    /// `|V_grid / V - 1|`.
    pub fn mismatch(&self) -> f64 {
        (self.grid_volume / self.volume - 1.0).abs()
    }

    /// Whether the grid holds the shape ([`MAX_VOLUME_MISMATCH`]).
    pub fn holds(&self) -> bool {
        self.mismatch() <= MAX_VOLUME_MISMATCH
    }
}

impl std::fmt::Display for Resolution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the grid's solid (phi < 0) has volume {:.4e}, the surface encloses {:.4e} ({:.1} % apart, at most {:.0} % accepted); ",
            self.grid_volume,
            self.volume,
            100.0 * self.mismatch(),
            100.0 * MAX_VOLUME_MISMATCH
        )?;
        if self.depth <= 0.0 {
            write!(f, "no grid node lies inside the shape")?;
        } else {
            write!(
                f,
                "the deepest grid node lies {:.3e} inside, at spacing {:.3e}",
                self.depth, self.spacing
            )?;
        }
        write!(
            f,
            ": a spacing well below the shape's thinnest part resolves it; closed surfaces that are nested or intersect themselves give the same mismatch"
        )
    }
}
