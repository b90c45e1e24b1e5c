//! Material and geometry of a contact, validated once, with the constants the kernel uses.
//!
//! Public conventions (docs/jaeger.md, preface): the API takes TOTAL quantities of a sphere pair — the
//! normal overlap `delta = r1 + r2 - |x2 - x1|` and the relative tangential displacement of the
//! contact points — plus the radii `r1`, `r2`, the shear modulus `G`, Poisson's ratio `nu` and the
//! friction coefficient `mu` of two spheres of the SAME material. Internally the kernel works in
//! Kuhn's half quantities (`zeta = delta / 2`, `xi = u / 2`, docs/jaeger.md section 1); [`half`] is
//! the one place that converts.

/// Why contact parameters were refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParamError {
    /// A parameter is NaN or infinite.
    #[error("{name} must be finite, got {value}")]
    NonFinite {
        /// The parameter.
        name: &'static str,
        /// Its value.
        value: f64,
    },
    /// A radius is zero or negative.
    #[error("radius {name} must be > 0, got {value}")]
    Radius {
        /// `r1` or `r2`.
        name: &'static str,
        /// Its value.
        value: f64,
    },
    /// The shear modulus is zero or negative.
    #[error("shear modulus G must be > 0, got {0}")]
    ShearModulus(f64),
    /// Poisson's ratio is outside the open interval (-1, 0.5).
    #[error("Poisson's ratio nu must lie in (-1, 0.5), got {0}")]
    PoissonRatio(f64),
    /// The friction coefficient is negative.
    #[error("friction coefficient mu must be >= 0, got {0}")]
    Friction(f64),
    /// Finite parameters whose combination is not: the radius `R` or the Hertz constant
    /// `Ebar sqrt(R)` overflows or underflows floating point.
    #[error(
        "the parameters give R = {radius:e} and Ebar sqrt(R) = {hertz:e}, outside floating point (expected both finite and > 0): check the units of the radii and G"
    )]
    Range {
        /// Kuhn's `R = 2 r1 r2 / (r1 + r2)`.
        radius: f64,
        /// `Ebar sqrt(R)`.
        hertz: f64,
    },
    /// The approximation parameter is negative or not finite.
    #[error("approximation parameter must be finite and >= 0, got {0}")]
    Approximation(f64),
}

/// `Ebar sqrt(R)` with `Ebar = 8 G / (3 (1 - nu))`: `N = hertz * zeta^(3/2)` in Kuhn's half
/// units (docs/jaeger.md section 1).
fn hertz(shear_modulus: f64, poisson_ratio: f64, radius: f64) -> f64 {
    8.0 / 3.0 * shear_modulus / (1.0 - poisson_ratio) * radius.sqrt()
}

/// Validated parameters of a contact between two spheres of one material.
///
/// Read back from a checkpoint (`serde` feature), the parameters pass the checks of
/// [`ContactParams::new`] again and the derived constants must be the ones they give, to
/// rounding (`1e-14` relative; the values read are kept).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "ParamsForm"))]
pub struct ContactParams {
    r1: f64,
    /// Infinite against a plane: written as `null` (JSON has no infinity) and read back.
    #[cfg_attr(feature = "serde", serde(with = "plane_radius"))]
    r2: f64,
    shear_modulus: f64,
    poisson_ratio: f64,
    friction: f64,
    /// `Ebar sqrt(R)`: `N = hertz * zeta^(3/2)` (docs/jaeger.md section 1).
    hertz: f64,
    /// `R = 2 r1 r2 / (r1 + r2)`, Kuhn's radius (twice Johnson's `R*`).
    radius: f64,
    /// `kappa = (2 - nu) / (2 (1 - nu))` (docs/jaeger.md section 2).
    kappa: f64,
    /// Kuhn's `pdif`: merge threshold on slope differences (docs/jaeger.md section 5); 0 = exact.
    approximation: f64,
}

/// An infinite radius (a plane) as `None` in serialized form, since JSON has no infinity.
#[cfg(feature = "serde")]
mod plane_radius {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(r: &f64, s: S) -> Result<S::Ok, S::Error> {
        r.is_finite().then_some(*r).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
    }
}

/// [`ContactParams`] as a checkpoint holds them, before they are checked.
#[cfg(feature = "serde")]
#[derive(serde::Deserialize)]
#[serde(rename = "ContactParams")]
struct ParamsForm {
    r1: f64,
    #[serde(with = "plane_radius")]
    r2: f64,
    shear_modulus: f64,
    poisson_ratio: f64,
    friction: f64,
    hertz: f64,
    radius: f64,
    kappa: f64,
    approximation: f64,
}

#[cfg(feature = "serde")]
impl TryFrom<ParamsForm> for ContactParams {
    type Error = String;

    fn try_from(f: ParamsForm) -> Result<Self, String> {
        let p = if f.r2.is_infinite() {
            ContactParams::against_plane(f.r1, f.shear_modulus, f.poisson_ratio, f.friction)
        } else {
            ContactParams::new(f.r1, f.r2, f.shear_modulus, f.poisson_ratio, f.friction)
        };
        let p = p
            .and_then(|p| p.with_approximation(f.approximation))
            .map_err(|e| e.to_string())?;
        // The constants read are kept, so that a run continues bit for bit; they may differ
        // from this build's formulas in the last bits (builds before 2026-11-24 formed `R` as
        // `2 r1 r2 / (r1 + r2)`), not more.
        let mut read = p;
        for (name, value, derived, field) in [
            ("hertz", f.hertz, p.hertz, &mut read.hertz),
            ("radius", f.radius, p.radius, &mut read.radius),
            ("kappa", f.kappa, p.kappa, &mut read.kappa),
        ] {
            let close = (value - derived).abs() <= 1e-14 * derived.abs();
            if !close {
                return Err(format!(
                    "contact parameters hold {name} = {value:e}, but r1, r2, G and nu give \
                     {derived:e}"
                ));
            }
            *field = value;
        }
        Ok(read)
    }
}

impl ContactParams {
    /// Checks and stores the parameters: radii `r1, r2 > 0` and shear modulus `G > 0` (any
    /// consistent units), `-1 < nu < 0.5`, `mu >= 0`, all finite.
    pub fn new(
        r1: f64,
        r2: f64,
        shear_modulus: f64,
        poisson_ratio: f64,
        friction: f64,
    ) -> Result<Self, ParamError> {
        for (name, value) in [
            ("r1", r1),
            ("r2", r2),
            ("G", shear_modulus),
            ("nu", poisson_ratio),
            ("mu", friction),
        ] {
            if !value.is_finite() {
                return Err(ParamError::NonFinite { name, value });
            }
        }
        for (name, value) in [("r1", r1), ("r2", r2)] {
            if value <= 0.0 {
                return Err(ParamError::Radius { name, value });
            }
        }
        if shear_modulus <= 0.0 {
            return Err(ParamError::ShearModulus(shear_modulus));
        }
        if !(poisson_ratio > -1.0 && poisson_ratio < 0.5) {
            return Err(ParamError::PoissonRatio(poisson_ratio));
        }
        if friction < 0.0 {
            return Err(ParamError::Friction(friction));
        }
        // The harmonic form: r1 r2 and r1 + r2 overflow for radii near f64::MAX.
        let radius = 2.0 / (1.0 / r1 + 1.0 / r2);
        let hertz = hertz(shear_modulus, poisson_ratio, radius);
        if !(radius.is_finite() && radius > 0.0 && hertz.is_finite() && hertz > 0.0) {
            return Err(ParamError::Range { radius, hertz });
        }
        Ok(ContactParams {
            r1,
            r2,
            shear_modulus,
            poisson_ratio,
            friction,
            hertz,
            radius,
            kappa: (2.0 - poisson_ratio) / (2.0 * (1.0 - poisson_ratio)),
            approximation: 0.0,
        })
    }

    /// A sphere of radius `r` against a flat surface of the same material (`r2` infinite, so
    /// Kuhn's `R = 2 r`), with the checks of [`ContactParams::new`].
    pub fn against_plane(
        r: f64,
        shear_modulus: f64,
        poisson_ratio: f64,
        friction: f64,
    ) -> Result<Self, ParamError> {
        // Any finite second radius passes the checks; then the limit r2 -> infinity is set.
        let mut p = ContactParams::new(r, r, shear_modulus, poisson_ratio, friction)?;
        p.r2 = f64::INFINITY;
        p.radius = 2.0 * r;
        p.hertz = hertz(shear_modulus, poisson_ratio, p.radius);
        if !(p.radius.is_finite() && p.hertz.is_finite()) {
            return Err(ParamError::Range {
                radius: p.radius,
                hertz: p.hertz,
            });
        }
        Ok(p)
    }

    /// The same parameters with the approximate history of Kuhn's Section 3.1 (docs/jaeger.md
    /// section 5): after an elastic step, consecutive elastic legs whose slopes `p = dT/dN`
    /// differ by less than `pdif` in norm are merged into one. `pdif` is ABSOLUTE, in units of
    /// `dT/dN` like `mu` itself (as in Kuhn's DEMPLA code): `pdif = 0.1` with `mu = 0.5` is a
    /// tolerance of 20 % of `mu`. `0` (the default) keeps the exact history; `pdif > 2 mu` merges
    /// every pair of elastic legs.
    pub fn with_approximation(mut self, pdif: f64) -> Result<Self, ParamError> {
        if !(pdif.is_finite() && pdif >= 0.0) {
            return Err(ParamError::Approximation(pdif));
        }
        self.approximation = pdif;
        Ok(self)
    }

    /// Kuhn's `pdif` (0: exact history).
    pub fn approximation(&self) -> f64 {
        self.approximation
    }

    /// The radii `(r1, r2)`.
    pub fn radii(&self) -> (f64, f64) {
        (self.r1, self.r2)
    }

    /// Shear modulus `G`.
    pub fn shear_modulus(&self) -> f64 {
        self.shear_modulus
    }

    /// Poisson's ratio `nu`.
    pub fn poisson_ratio(&self) -> f64 {
        self.poisson_ratio
    }

    /// Friction coefficient `mu`.
    pub fn friction(&self) -> f64 {
        self.friction
    }

    /// Ratio of the initial normal to the initial tangential stiffness,
    /// `kappa = (2 - nu) / (2 (1 - nu))` (Kuhn's `theta`, docs/jaeger.md section 2).
    pub fn kappa(&self) -> f64 {
        self.kappa
    }

    /// Effective radius `R* = r1 r2 / (r1 + r2)` (Johnson's).
    pub fn effective_radius(&self) -> f64 {
        self.radius / 2.0
    }

    /// Effective modulus `E* = G / (1 - nu)` of two identical materials.
    pub fn effective_modulus(&self) -> f64 {
        self.shear_modulus / (1.0 - self.poisson_ratio)
    }

    /// Hertz normal force for a TOTAL overlap `delta`:
    /// `N = 4/3 E* sqrt(R*) delta^(3/2)` for `delta > 0`, else 0 (docs/jaeger.md section 1).
    pub fn normal_force(&self, delta: f64) -> f64 {
        self.normal_force_half(half(delta))
    }

    /// Hertz contact radius `a = sqrt(R* delta)` for a total overlap `delta > 0`, else 0.
    pub fn contact_radius(&self, delta: f64) -> f64 {
        if delta > 0.0 {
            (self.radius * half(delta)).sqrt()
        } else {
            0.0
        }
    }

    /// `N(zeta) = Ebar sqrt(R) zeta^(3/2)` in Kuhn's half indentation (docs/jaeger.md section 1).
    #[inline]
    pub(crate) fn normal_force_half(&self, zeta: f64) -> f64 {
        if zeta > 0.0 {
            self.hertz * zeta * zeta.sqrt()
        } else {
            0.0
        }
    }
}

/// Kuhn's half quantities from total ones: `zeta = delta / 2`, `xi = u / 2` (docs/jaeger.md section 1).
#[inline]
pub(crate) fn half(total: f64) -> f64 {
    0.5 * total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hertz_force_equals_johnsons_form() {
        // Johnson, Contact Mechanics, eq. 4.23: P = 4/3 E* R*^(1/2) d^(3/2),
        // E* = E / (2 (1 - nu^2)) = G / (1 - nu) for two equal materials, R* = r1 r2 / (r1 + r2).
        let (r1, r2, g, nu) = (1.5, 0.5, 29e9, 0.15);
        let p = ContactParams::new(r1, r2, g, nu, 0.4).unwrap();
        let e = 2.0 * g * (1.0 + nu);
        let e_star = e / (2.0 * (1.0 - nu * nu));
        let r_star = r1 * r2 / (r1 + r2);
        let d = 1e-4;
        let johnson = 4.0 / 3.0 * e_star * r_star.sqrt() * d * d.sqrt();
        assert!((p.normal_force(d) / johnson - 1.0).abs() < 1e-14);
        assert!((p.contact_radius(d) - (r_star * d).sqrt()).abs() < 1e-18);
        assert_eq!(p.normal_force(0.0), 0.0);
        assert_eq!(p.normal_force(-1.0), 0.0);
        // docs/jaeger.md section 2 examples.
        assert!(
            (ContactParams::new(1.0, 1.0, 1.0, 0.15, 0.4)
                .unwrap()
                .kappa()
                - 1.088235294117647)
                .abs()
                < 1e-15
        );
        assert!(
            (ContactParams::new(1.0, 1.0, 1.0, 0.25, 0.4)
                .unwrap()
                .kappa()
                - 7.0 / 6.0)
                .abs()
                < 1e-15
        );
    }

    /// A plane's infinite radius survives a JSON round trip (JSON has no infinity): a host's
    /// checkpoint of a sphere-plane contact reads back.
    #[cfg(feature = "serde")]
    #[test]
    fn plane_parameters_round_trip_through_json() {
        let p = ContactParams::against_plane(0.5, 1e4, 0.25, 0.4).unwrap();
        let text = serde_json::to_string(&p).unwrap();
        assert!(text.contains("\"r2\":null"), "{text}");
        assert_eq!(serde_json::from_str::<ContactParams>(&text).unwrap(), p);
        let q = ContactParams::new(0.5, 0.7, 1e4, 0.25, 0.4).unwrap();
        let text = serde_json::to_string(&q).unwrap();
        assert_eq!(serde_json::from_str::<ContactParams>(&text).unwrap(), q);
    }

    #[test]
    fn bad_parameters_are_typed_errors() {
        let ok = (1.0, 1.0, 1.0, 0.3, 0.5);
        type Args = (f64, f64, f64, f64, f64);
        let cases: [(Args, ParamError); 8] = [
            (
                (0.0, 1.0, 1.0, 0.3, 0.5),
                ParamError::Radius {
                    name: "r1",
                    value: 0.0,
                },
            ),
            (
                (1.0, -2.0, 1.0, 0.3, 0.5),
                ParamError::Radius {
                    name: "r2",
                    value: -2.0,
                },
            ),
            ((1.0, 1.0, 0.0, 0.3, 0.5), ParamError::ShearModulus(0.0)),
            ((1.0, 1.0, 1.0, 0.5, 0.5), ParamError::PoissonRatio(0.5)),
            ((1.0, 1.0, 1.0, -1.0, 0.5), ParamError::PoissonRatio(-1.0)),
            ((1.0, 1.0, 1.0, 0.3, -0.1), ParamError::Friction(-0.1)),
            (
                (1.0, f64::INFINITY, 1.0, 0.3, 0.5),
                ParamError::NonFinite {
                    name: "r2",
                    value: f64::INFINITY,
                },
            ),
            (
                (1.0, 1.0, 1.0, 0.3, f64::NAN),
                ParamError::Friction(f64::NAN),
            ),
        ];
        assert!(ContactParams::new(ok.0, ok.1, ok.2, ok.3, ok.4).is_ok());
        for ((r1, r2, g, nu, mu), expected) in cases {
            let got = ContactParams::new(r1, r2, g, nu, mu).unwrap_err();
            // NaN != NaN: compare the messages instead of the values.
            if mu.is_nan() {
                assert!(
                    matches!(got, ParamError::NonFinite { name: "mu", .. }),
                    "{got}"
                );
            } else {
                assert_eq!(got, expected);
            }
        }
    }
}
