//! Quantities an input sets by a factor, such as a grain's mass by its density or a scaled
//! grain's moments of inertia by its scale, must be normal `f64`s: a value that underflows to
//! zero or to a subnormal (below 2.2e-308, where its digits are lost) or overflows to infinity
//! is no usable mass, and failed later as something else (issue #33: the moments of a grain
//! scaled by 1e-65 underflowed, and the run diverged "for too large a step").

/// Quantities proportional to a power of a factor.
#[derive(Debug, Clone, Copy)]
pub struct Derived<'a> {
    /// What they are, for messages ("principal moments").
    pub name: &'a str,
    /// The power of the factor they go with.
    pub power: i32,
    /// Their values at factor 1 (a zero stays zero at any factor, and is not checked).
    pub values: &'a [f64],
}

/// What a value out of range is not, for messages.
pub const NOT_NORMAL: &str =
    "which is not a normal floating-point number (their magnitudes run from 2.2e-308 to 1.8e308)";

/// A factor that takes a quantity out of the normal `f64`s.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "{factor:e} makes the {name} {value}, {NOT_NORMAL}: here it must lie between about {low:.3e} and {high:.3e}"
)]
pub struct OutOfRange {
    /// The factor.
    pub factor: f64,
    /// The first quantity it takes out of range.
    pub name: String,
    /// That quantity's value at the factor, as a decimal (it may be beyond the `f64`s).
    pub value: String,
    /// The smallest factor that keeps every quantity normal.
    pub low: f64,
    /// The largest.
    pub high: f64,
}

/// `x factor^power`, one factor at a time: every partial product lies between `x` and the
/// result, so a normal result keeps its digits (`factor.powi(5)` alone may underflow first).
pub fn times_power(x: f64, factor: f64, power: i32) -> f64 {
    (0..power).fold(x, |v, _| v * factor)
}

/// Refuses a `factor` (finite, positive) that takes a nonzero value of `quantities` out of the
/// normal `f64`s ([`times_power`]), naming the first such quantity and the factors that keep
/// them all normal.
pub fn check(factor: f64, quantities: &[Derived]) -> Result<(), OutOfRange> {
    let (mut low, mut high) = (0.0f64, f64::INFINITY);
    let mut first = None;
    for q in quantities {
        let root = 1.0 / f64::from(q.power);
        for &x in q.values.iter().filter(|x| **x != 0.0) {
            // The roots apart: `f64::MAX / x` overflows for `x < 1`.
            let x_root = x.abs().powf(root);
            low = low.max(f64::MIN_POSITIVE.powf(root) / x_root);
            high = high.min(f64::MAX.powf(root) / x_root);
            if first.is_none() && !times_power(x, factor, q.power).is_normal() {
                first = Some((q.name, x, q.power));
            }
        }
    }
    // The factor is a number of its own: a normal one too.
    let (low, high) = (low.max(f64::MIN_POSITIVE), high.min(f64::MAX));
    match first {
        None => Ok(()),
        Some((name, x, power)) => Err(OutOfRange {
            factor,
            name: name.into(),
            value: decimal(x, factor, power),
            low,
            high,
        }),
    }
}

/// `x factor^power` in scientific notation with three digits, by logarithms, so that a value
/// beyond the `f64`s is written as it would be.
fn decimal(x: f64, factor: f64, power: i32) -> String {
    let exponent = x.abs().log10() + f64::from(power) * factor.log10();
    if !exponent.is_finite() {
        return format!("{:e}", times_power(x, factor, power));
    }
    let mut e = exponent.floor();
    let mut mantissa = 10f64.powf(exponent - e);
    if mantissa >= 9.995 {
        (mantissa, e) = (mantissa / 10.0, e + 1.0);
    }
    let sign = if x < 0.0 { "-" } else { "" };
    format!("{sign}{mantissa:.2}e{e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bounds and the value written are those of the closed forms: `x s^p` normal for
    /// `s` in `[(2^-1022 / x)^(1/p), (f64::MAX / x)^(1/p)]`.
    #[test]
    fn a_factor_out_of_range_names_the_quantity_its_value_and_the_range() {
        let moments = [2.0, 8.0];
        let q = [
            Derived {
                name: "mass",
                power: 3,
                values: &[1.0],
            },
            Derived {
                name: "moments",
                power: 5,
                values: &moments,
            },
        ];
        assert_eq!(check(1e-60, &q), Ok(()));
        let e = check(1e-65, &q).unwrap_err();
        assert_eq!(e.name, "moments");
        assert_eq!(e.value, "2.00e-325");
        // The moment 2 bounds the scale from below, 8 from above; the mass, not at all.
        let low = (f64::MIN_POSITIVE / 2.0).powf(0.2);
        let high = (f64::MAX / 8.0).powf(0.2);
        assert!((e.low / low - 1.0).abs() < 1e-15 && (e.high / high - 1.0).abs() < 1e-15);
        assert!(e.to_string().starts_with(
            "1e-65 makes the moments 2.00e-325, which is not a normal floating-point number"
        ));
        let e = check(1e62, &q).unwrap_err();
        assert_eq!((e.name.as_str(), e.value.as_str()), ("moments", "2.00e310"));
        assert_eq!(decimal(-9.996, 1.0, 1), "-1.00e1");
        // Below 1, the upper bound (computed from logarithms here) is past f64::MAX / x.
        let small = [Derived {
            name: "moment",
            power: 5,
            values: &[0.05],
        }];
        let e = check(1e62, &small).unwrap_err();
        let high = 10f64.powf((f64::MAX.log10() - 0.05f64.log10()) / 5.0);
        assert!((e.high / high - 1.0).abs() < 1e-12, "{e}");
        // A factor is a normal number itself: a volume of 2 would allow a density of 1.1e-308, a
        // subnormal; one of 0.5, a density of 3.6e308.
        let volume = |v| Derived {
            name: "mass",
            power: 1,
            values: std::slice::from_ref(v),
        };
        let e = check(1e-308, &[volume(&2.0)]).unwrap_err();
        assert_eq!((e.low, e.high), (f64::MIN_POSITIVE, f64::MAX / 2.0));
        let e = check(1e-308, &[volume(&0.5)]).unwrap_err();
        assert_eq!((e.low, e.high), (2.0 * f64::MIN_POSITIVE, f64::MAX));
        assert_eq!(
            check(f64::INFINITY, &[volume(&0.5)]).unwrap_err().value,
            "inf"
        );
        // Multiplied one factor at a time: 1e10 x (1e-63)^5 keeps its digits, 1e10 x 1e-315
        // (the fifth power first, a subnormal) does not.
        let off = |v: f64| (v / 1e-305 - 1.0).abs();
        assert!(off(times_power(1e10, 1e-63, 5)) < 1e-14);
        assert!(off(1e10 * 1e-63f64.powi(5)) > 1e-9);
    }
}
