//! The sums over a deformable grain's mode columns, written once in four `f64` lanes ([`Quad`])
//! and run on the processor's AVX2 registers where it has them (x86-64-v3, detected at run time
//! by the `pulp` crate, on which faer's dispatch is built), else on four scalars: the same operations
//! lane by lane, so the same bits on every machine. Rust neither fuses a product and a sum into
//! one rounding nor reorders sums, and each kernel's order of operations is its code's, on both
//! paths (test `the_kernels_give_the_same_bits_in_avx2_and_in_scalars`).
//!
//! The columns are what [`crate::path::Paths`] stores per node: one per linear mode, one per
//! point of a path, in `f32` ([`Stored`]: each value converted exactly to `f64` as it is
//! loaded, so the arithmetic is `f64` throughout). Explicit lanes rather than the compiler's
//! vectorizer: compiled for AVX2, the same loops in plain arrays came out as pairs of rows in
//! 128-bit registers with shuffles between them, and a surface node's three sums over 20
//! columns took 263 instructions where the lanes take 135 (docs/performance.md, "The column
//! sums in explicit lanes").
//!
//! Cost of each kernel, per call: `C / 4` vector steps of one load per row and one product and
//! one sum per row, then the rows' reductions and the `C mod 4` last columns in scalars. Below
//! four columns the sums are not dispatched ([`Wide::for_columns`]): they do not fill a lane, and
//! [`rows`] takes them in one scalar pass.

/// Four `f64` lanes: a vector register, or four scalars.
pub trait Quad: Copy {
    /// The four values.
    type V: Copy;
    /// Runs `f` compiled for this instruction set (`f` must be `#[inline(always)]`, or it is
    /// compiled for the baseline and called).
    fn run<R>(self, f: impl FnOnce() -> R) -> R;
    /// `x` in every lane.
    fn splat(self, x: f64) -> Self::V;
    /// Four values into the lanes.
    fn load(self, x: [f64; 4]) -> Self::V;
    /// Four `f32` values into the lanes, each converted exactly.
    fn load_f32(self, x: [f32; 4]) -> Self::V;
    /// The lanes' values.
    fn store(self, v: Self::V) -> [f64; 4];
    /// Lane by lane, `a + b`, rounded once.
    fn add(self, a: Self::V, b: Self::V) -> Self::V;
    /// Lane by lane, `a - b`, rounded once.
    fn sub(self, a: Self::V, b: Self::V) -> Self::V;
    /// Lane by lane, `a b`, rounded once.
    fn mul(self, a: Self::V, b: Self::V) -> Self::V;
    /// Lane by lane, `a < b` (false where either is NaN), as bits: bit `i` for lane `i`.
    fn less(self, a: Self::V, b: Self::V) -> u32;
}

/// Four scalars: the path of a processor without AVX2, and of grains of fewer than four columns.
#[derive(Debug, Clone, Copy)]
pub struct Plain;

impl Quad for Plain {
    type V = [f64; 4];
    #[inline(always)]
    fn run<R>(self, f: impl FnOnce() -> R) -> R {
        f()
    }
    #[inline(always)]
    fn splat(self, x: f64) -> [f64; 4] {
        [x; 4]
    }
    #[inline(always)]
    fn load(self, x: [f64; 4]) -> [f64; 4] {
        x
    }
    #[inline(always)]
    fn load_f32(self, x: [f32; 4]) -> [f64; 4] {
        x.map(f64::from)
    }
    #[inline(always)]
    fn store(self, v: [f64; 4]) -> [f64; 4] {
        v
    }
    #[inline(always)]
    fn add(self, a: [f64; 4], b: [f64; 4]) -> [f64; 4] {
        std::array::from_fn(|i| a[i] + b[i])
    }
    #[inline(always)]
    fn sub(self, a: [f64; 4], b: [f64; 4]) -> [f64; 4] {
        std::array::from_fn(|i| a[i] - b[i])
    }
    #[inline(always)]
    fn mul(self, a: [f64; 4], b: [f64; 4]) -> [f64; 4] {
        std::array::from_fn(|i| a[i] * b[i])
    }
    #[inline(always)]
    fn less(self, a: [f64; 4], b: [f64; 4]) -> u32 {
        let mut bits = 0;
        for i in 0..4 {
            bits |= u32::from(a[i] < b[i]) << i;
        }
        bits
    }
}

#[cfg(target_arch = "x86_64")]
impl Quad for pulp::x86::V3 {
    type V = pulp::f64x4;
    #[inline(always)]
    fn run<R>(self, f: impl FnOnce() -> R) -> R {
        self.vectorize(f)
    }
    #[inline(always)]
    fn splat(self, x: f64) -> pulp::f64x4 {
        self.splat_f64x4(x)
    }
    #[inline(always)]
    fn load(self, x: [f64; 4]) -> pulp::f64x4 {
        pulp::cast(x)
    }
    #[inline(always)]
    fn load_f32(self, x: [f32; 4]) -> pulp::f64x4 {
        self.convert_f32x4_to_f64x4(pulp::cast(x))
    }
    #[inline(always)]
    fn store(self, v: pulp::f64x4) -> [f64; 4] {
        pulp::cast(v)
    }
    #[inline(always)]
    fn add(self, a: pulp::f64x4, b: pulp::f64x4) -> pulp::f64x4 {
        self.add_f64x4(a, b)
    }
    #[inline(always)]
    fn sub(self, a: pulp::f64x4, b: pulp::f64x4) -> pulp::f64x4 {
        self.sub_f64x4(a, b)
    }
    #[inline(always)]
    fn mul(self, a: pulp::f64x4, b: pulp::f64x4) -> pulp::f64x4 {
        self.mul_f64x4(a, b)
    }
    #[inline(always)]
    fn less(self, a: pulp::f64x4, b: pulp::f64x4) -> u32 {
        // `_CMP_LT_OQ`: false for NaN, as `<`.
        self.avx
            ._mm256_movemask_pd(pulp::cast(self.cmp_lt_f64x4(a, b))) as u32
    }
}

/// Four lanes held in `Q`'s register: what grain's interpolations of a cell run on
/// ([`grain::FourLanes`]) in the vector unit, each operation `Q`'s, lane by lane, so the bits of
/// [`grain::Lanes`]'s (docs/performance.md, "The cell's interpolations in the vector unit").
#[derive(Clone, Copy)]
pub struct InLanes<Q: Quad> {
    q: Q,
    v: Q::V,
}

impl<Q: Quad> InLanes<Q> {
    /// The lanes `x` in `q`'s register.
    #[inline(always)]
    pub fn new(q: Q, x: grain::Lanes) -> Self {
        InLanes { q, v: q.load(x.0) }
    }
}

impl<Q: Quad> std::ops::Add for InLanes<Q> {
    type Output = Self;
    #[inline(always)]
    fn add(self, b: Self) -> Self {
        InLanes {
            q: self.q,
            v: self.q.add(self.v, b.v),
        }
    }
}

impl<Q: Quad> std::ops::Sub for InLanes<Q> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, b: Self) -> Self {
        InLanes {
            q: self.q,
            v: self.q.sub(self.v, b.v),
        }
    }
}

impl<Q: Quad> std::ops::Mul<f64> for InLanes<Q> {
    type Output = Self;
    #[inline(always)]
    fn mul(self, w: f64) -> Self {
        InLanes {
            q: self.q,
            v: self.q.mul(self.v, self.q.splat(w)),
        }
    }
}

impl<Q: Quad> grain::FourLanes for InLanes<Q> {
    #[inline(always)]
    fn lanes(self) -> grain::Lanes {
        grain::Lanes(self.q.store(self.v))
    }
    #[inline(always)]
    fn like(self, x: grain::Lanes) -> Self {
        InLanes::new(self.q, x)
    }
}

/// A stored value the kernels read: `f64`, or `f32` (a deformable grain's mode fields,
/// [`crate::path::Paths`]), converted exactly to `f64` before any arithmetic, so that the sums
/// are those of the stored values in `f64` on both paths.
pub trait Stored: Copy {
    /// The value.
    fn get(self) -> f64;
    /// Four values into the lanes of `q`.
    fn lanes<Q: Quad>(q: Q, x: [Self; 4]) -> Q::V;
}

impl Stored for f64 {
    #[inline(always)]
    fn get(self) -> f64 {
        self
    }
    #[inline(always)]
    fn lanes<Q: Quad>(q: Q, x: [f64; 4]) -> Q::V {
        q.load(x)
    }
}

impl Stored for f32 {
    #[inline(always)]
    fn get(self) -> f64 {
        f64::from(self)
    }
    #[inline(always)]
    fn lanes<Q: Quad>(q: Q, x: [f32; 4]) -> Q::V {
        q.load_f32(x)
    }
}

/// The vector unit the sums run on where the processor has one: AVX2 (x86-64-v3) on x86-64.
#[cfg(target_arch = "x86_64")]
pub type Unit = pulp::x86::V3;
/// No vector unit is used on other processors: the sums run in [`Plain`] lanes.
#[cfg(not(target_arch = "x86_64"))]
pub type Unit = Plain;

/// The environment variable that, set to `1`, makes a run take the baseline's code where it
/// would choose AVX2: the same bits, for checking that they are (test
/// `cli::the_baseline_code_and_avx2_give_the_same_bits`) or for timing the difference.
pub const BASELINE_CODE: &str = "DEM_BASELINE_CODE";

/// The processor's vector unit, if it has one ([`Wide::detect`]).
#[derive(Debug, Clone, Copy)]
pub struct Wide(Option<Unit>);

impl Wide {
    /// The unit of this processor (AVX2 present), or none; none where the environment sets
    /// [`BASELINE_CODE`] to `1`. Detected once per process: the narrow phase asks at every
    /// side of a pair.
    pub fn detect() -> Wide {
        static WIDE: std::sync::OnceLock<Wide> = std::sync::OnceLock::new();
        *WIDE.get_or_init(|| {
            #[cfg(target_arch = "x86_64")]
            if std::env::var_os(BASELINE_CODE).is_none_or(|v| v != "1") {
                return Wide(pulp::x86::V3::try_new());
            }
            Wide(None)
        })
    }

    /// The unit, where the processor has one.
    #[inline(always)]
    pub fn unit(self) -> Option<Unit> {
        self.0
    }

    /// The unit for sums over `columns` columns: none below four, where the sums do not fill a
    /// lane and the call would cost more than it saves.
    #[inline(always)]
    pub fn for_columns(self, columns: usize) -> Option<Unit> {
        if columns >= 4 { self.0 } else { None }
    }
}

/// Runs `$body` with `$q` the vector unit `$unit` (an `Option<Unit>`, [`Wide`]) compiled for
/// it, or [`Plain`] lanes where it is `None`: one body, compiled for both. With
/// [`Wide::unit`] the node loop and the deformable level sets' queries (semi-Lagrangian,
/// precomputed, the contact velocity's pull-back), whatever their columns.
macro_rules! in_unit {
    ($unit:expr, |$q:ident| $body:expr) => {
        match $unit {
            Some($q) => $crate::lanes::Quad::run(
                $q,
                #[inline(always)]
                || $body,
            ),
            None => {
                let $q = $crate::lanes::Plain;
                $body
            }
        }
    };
}
pub(crate) use in_unit;

/// [`in_unit`] with the vector unit of `$wide` for `$columns` columns ([`Wide::for_columns`]).
macro_rules! in_lanes {
    ($wide:expr, $columns:expr, |$q:ident| $body:expr) => {
        $crate::lanes::in_unit!($wide.for_columns($columns), |$q| $body)
    };
}
pub(crate) use in_lanes;

/// The `R` rows of `C` values at the start of `record`, each summed with `weights` (`C`
/// values): per row, four lane sums over the columns' chunks of four from `+0.0`, then
/// `(s_0 + s_1) + (s_2 + s_3)` plus the last `C mod 4` terms summed in order. The rows go in
/// one pass over the columns, each chunk of weights loaded once for all rows. Fewer than four
/// columns (a grain of one to three modes): the terms in column order from `+0.0`, the rows
/// side by side, in one scalar pass (the lanes would cost ten times the arithmetic: a
/// one-column grid node took 172 instructions, docs/performance.md); the same bits as the
/// lanes would give, whose empty sums add `+0.0` to the rest.
#[inline(always)]
pub fn rows<const R: usize, Q: Quad, T: Stored>(q: Q, record: &[T], weights: &[f64]) -> [f64; R] {
    let c = weights.len();
    let record = &record[..R * c];
    match c {
        0 => return [0.0; R],
        1 => return few_rows::<R, 1, T>(record, weights),
        2 => return few_rows::<R, 2, T>(record, weights),
        3 => return few_rows::<R, 3, T>(record, weights),
        _ => {}
    }
    let (w4, w_rest) = weights.as_chunks::<4>();
    let n = w4.len();
    let rows = chunked_rows::<R, T>(record, c, n);
    let mut lanes = [q.splat(0.0); R];
    for (m, w) in w4.iter().enumerate() {
        let w = q.load(*w);
        for (lane, row) in lanes.iter_mut().zip(&rows) {
            *lane = q.add(*lane, q.mul(T::lanes(q, row.0[m]), w));
        }
    }
    let mut sums = [0.0; R];
    for ((sum, lane), row) in sums.iter_mut().zip(&lanes).zip(&rows) {
        let rest: f64 = (row.1.iter().zip(w_rest)).map(|(a, b)| a.get() * b).sum();
        let lane = q.store(*lane);
        *sum = (lane[0] + lane[1]) + (lane[2] + lane[3]) + rest;
    }
    sums
}

/// `acc[j] += x[j] w` for each of `acc`'s columns (`x` at least as long).
#[inline(always)]
pub fn add_scaled<Q: Quad, T: Stored>(q: Q, acc: &mut [f64], x: &[T], w: f64) {
    let x = &x[..acc.len()];
    let (a4, a_rest) = acc.as_chunks_mut::<4>();
    let (x4, x_rest) = x.as_chunks::<4>();
    let wv = q.splat(w);
    for (a, x) in a4.iter_mut().zip(x4) {
        *a = q.store(q.add(q.load(*a), q.mul(T::lanes(q, *x), wv)));
    }
    for (a, x) in a_rest.iter_mut().zip(x_rest) {
        *a += x.get() * w;
    }
}

/// `acc[j] += sum_r record_r[j] w_r` for each of `acc`'s `C` columns, the `R` rows of `record`
/// (`R` rows of `C` values) in order: `((record_0 w_0 + record_1 w_1) + ...)`, then added.
/// Fewer than four columns: the same sums without the rows' chunking, whose setup cost about
/// 100 instructions a call whatever the columns (docs/performance.md).
#[inline(always)]
pub fn add_weighted_rows<const R: usize, Q: Quad, T: Stored>(
    q: Q,
    acc: &mut [f64],
    record: &[T],
    w: &[f64; R],
) {
    let c = acc.len();
    let record = &record[..R * c];
    match c {
        0 => return,
        1 => return add_few_weighted_rows::<R, 1, T>(acc, record, w),
        2 => return add_few_weighted_rows::<R, 2, T>(acc, record, w),
        3 => return add_few_weighted_rows::<R, 3, T>(acc, record, w),
        _ => {}
    }
    let (a4, a_rest) = acc.as_chunks_mut::<4>();
    let n = a4.len();
    let rows = chunked_rows::<R, T>(record, c, n);
    // In a loop: `array::map` and `array::from_fn` can be left out of line, a call per kernel
    // (docs/performance.md, "Few columns with fixed bounds, and every node loop in AVX2").
    let mut wv = [q.splat(0.0); R];
    for (v, w) in wv.iter_mut().zip(w) {
        *v = q.splat(*w);
    }
    for (m, a) in a4.iter_mut().enumerate() {
        let mut sum = q.mul(T::lanes(q, rows[0].0[m]), wv[0]);
        for r in 1..R {
            sum = q.add(sum, q.mul(T::lanes(q, rows[r].0[m]), wv[r]));
        }
        *a = q.store(q.add(q.load(*a), sum));
    }
    for (j, a) in a_rest.iter_mut().enumerate() {
        let mut sum = rows[0].1[j].get() * w[0];
        for r in 1..R {
            sum += rows[r].1[j].get() * w[r];
        }
        *a += sum;
    }
}

/// The `R` rows of `c` values at the start of `record`, each as its first `n` chunks of four
/// and the rest.
#[inline(always)]
fn chunked_rows<const R: usize, T>(record: &[T], c: usize, n: usize) -> [(&[[T; 4]], &[T]); R] {
    let mut rows: [(&[[T; 4]], &[T]); R] = [(&[], &[]); R];
    for (r, row) in rows.iter_mut().enumerate() {
        let (chunks, rest) = record[r * c..(r + 1) * c].as_chunks::<4>();
        *row = (&chunks[..n], rest);
    }
    rows
}

/// `C` (one to three) columns as fixed arrays: `R` rows of `C` values.
#[inline(always)]
fn few<const R: usize, const C: usize, T>(record: &[T]) -> &[[T; C]; R] {
    record.as_chunks::<C>().0[..R]
        .try_into()
        .expect("a record of R rows of C values")
}

/// [`rows`] of `C` (one to three) columns: the terms in column order from `+0.0`, the rows side
/// by side, in one scalar pass with fixed bounds (the same sums with the count known only at
/// run time took 100 instructions a grid node of one column, docs/performance.md).
#[inline(always)]
fn few_rows<const R: usize, const C: usize, T: Stored>(record: &[T], weights: &[f64]) -> [f64; R] {
    let record = few::<R, C, T>(record);
    let weights: &[f64; C] = weights.try_into().expect("C weights");
    let mut sums = [0.0; R];
    for (j, w) in weights.iter().enumerate() {
        for (sum, row) in sums.iter_mut().zip(record) {
            *sum += row[j].get() * w;
        }
    }
    sums
}

/// [`add_weighted_rows`] of `C` (one to three) columns, with fixed bounds as [`few_rows`].
#[inline(always)]
fn add_few_weighted_rows<const R: usize, const C: usize, T: Stored>(
    acc: &mut [f64],
    record: &[T],
    w: &[f64; R],
) {
    let record = few::<R, C, T>(record);
    let acc: &mut [f64; C] = acc.try_into().expect("C columns");
    for (j, a) in acc.iter_mut().enumerate() {
        let mut sum = record[0][j].get() * w[0];
        for r in 1..R {
            sum += record[r][j].get() * w[r];
        }
        *a += sum;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernels give the same bits in AVX2 (x86-64-v3, what [`Wide`] dispatches to) as in
    /// scalars, on values of mixed signs and magnitudes over 1e16, where a fused rounding of
    /// the terms changes the last bits (checked here). That the dispatched code is AVX2 code
    /// shows in its instruction counts (docs/performance.md) and in `objdump -d` of the binary
    /// (`ymm` registers in pulp's `vectorize` instances); this test compares the bits.
    /// [`add_weighted_rows`] of `R` rows added to `acc`, in scalars and in AVX2.
    #[cfg(target_arch = "x86_64")]
    fn weighted_rows_both<const R: usize, T: Stored>(
        v3: pulp::x86::V3,
        acc: &[f64],
        record: &[T],
        w: &[f64; R],
    ) -> (Vec<f64>, Vec<f64>) {
        let (mut scalar, mut wide) = (acc.to_vec(), acc.to_vec());
        add_weighted_rows(Plain, &mut scalar, record, w);
        v3.run(
            #[inline(always)]
            || add_weighted_rows(v3, &mut wide, record, w),
        );
        (scalar, wide)
    }

    /// Every kernel on `record` (values of type `T`, 7 rows of `weights.len()` columns) in
    /// scalars and in AVX2, compared bit for bit.
    #[cfg(target_arch = "x86_64")]
    fn kernels_both<T: Stored>(
        v3: pulp::x86::V3,
        record: &[T],
        weights: &[f64],
        w: &[f64; 7],
        kind: &str,
    ) {
        let c = weights.len();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let scalar: [f64; 7] = rows(Plain, record, weights);
        let wide: [f64; 7] = v3.run(
            #[inline(always)]
            || rows(v3, record, weights),
        );
        assert_eq!(bits(&scalar), bits(&wide), "7 rows of {kind}, {c} columns");
        let scalar: [f64; 3] = rows(Plain, record, weights);
        let wide: [f64; 3] = v3.run(
            #[inline(always)]
            || rows(v3, record, weights),
        );
        assert_eq!(bits(&scalar), bits(&wide), "3 rows of {kind}, {c} columns");
        let (scalar, wide) = weighted_rows_both(v3, weights, record, w);
        assert_eq!(
            bits(&scalar),
            bits(&wide),
            "7 weighted rows of {kind}, {c} columns"
        );
        // A node force's three rows.
        let (scalar, wide) = weighted_rows_both(v3, weights, record, &[w[0], w[1], w[2]]);
        assert_eq!(
            bits(&scalar),
            bits(&wide),
            "3 weighted rows of {kind}, {c} columns"
        );
        let (mut scalar, mut wide) = (weights.to_vec(), weights.to_vec());
        add_scaled(Plain, &mut scalar, record, w[0]);
        v3.run(
            #[inline(always)]
            || add_scaled(v3, &mut wide, record, w[0]),
        );
        assert_eq!(bits(&scalar), bits(&wide), "scaled {kind}, {c} columns");
    }

    /// A fixed linear congruential sequence from `seed`: values from 1e-8 to 1e8, either sign.
    #[cfg(target_arch = "x86_64")]
    fn spread_values(seed: u64) -> impl FnMut() -> f64 {
        let mut state = seed;
        move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let unit = (state >> 11) as f64 / (1u64 << 53) as f64;
            let sign = if state & 1 == 0 { 1.0 } else { -1.0 };
            sign * 10f64.powf(16.0 * unit - 8.0)
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_kernels_give_the_same_bits_in_avx2_and_in_scalars() {
        let Some(v3) = pulp::x86::V3::try_new() else {
            eprintln!("this processor has no AVX2: the sums take the scalar path only");
            return;
        };
        let mut next = spread_values(0x2545_f491_4f6c_dd1d);
        let mut fused_differs = false;
        for c in 1..=23 {
            let record: Vec<f64> = (0..7 * c).map(|_| next()).collect();
            let weights: Vec<f64> = (0..c).map(|_| next()).collect();
            let w: [f64; 7] = std::array::from_fn(|_| next());
            kernels_both(v3, &record, &weights, &w, "f64");
            // Records of f32 values (a grain's mode fields), converted in the lanes.
            let single: Vec<f32> = record.iter().map(|x| *x as f32).collect();
            kernels_both(v3, &single, &weights, &w, "f32");
            // The data tell a fused rounding apart: the same sums through `mul_add` differ.
            let sums = |step: fn(f64, f64, f64) -> f64| -> Vec<f64> {
                (0..7)
                    .map(|r| {
                        let row = &record[r * c..(r + 1) * c];
                        row.iter()
                            .zip(&weights)
                            .fold(0.0, |s, (a, b)| step(s, *a, *b))
                    })
                    .collect()
            };
            fused_differs |= sums(|s, a, b| a.mul_add(b, s)) != sums(|s, a, b| s + a * b);
        }
        assert!(fused_differs, "the data do not tell a fused rounding apart");
    }

    /// Four lanes in AVX2's register ([`InLanes`]) give [`grain::Lanes`]'s sums, differences and
    /// products to the bit, so a cell's interpolation in either (grain's generic `trilinear`,
    /// the same operations in the same order) gives the same bits; the run's own check is
    /// `cli::the_baseline_code_and_avx2_give_the_same_bits`.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn four_lanes_in_avx2_are_plain_lanes_to_the_bit() {
        use grain::{FourLanes, Lanes};
        let Some(v3) = pulp::x86::V3::try_new() else {
            eprintln!("this processor has no AVX2: the lanes take the scalar path only");
            return;
        };
        let mut next = spread_values(0x9e37_79b9_7f4a_7c15);
        let bits = |x: Lanes| x.0.map(f64::to_bits);
        for _ in 0..1000 {
            let (a, b) = (
                Lanes(std::array::from_fn(|_| next())),
                Lanes(std::array::from_fn(|_| next())),
            );
            let w = next();
            let (wa, wb) = (InLanes::new(v3, a), InLanes::new(v3, b));
            assert_eq!(bits((wa + wb).lanes()), bits(a + b));
            assert_eq!(bits((wa - wb).lanes()), bits(a - b));
            assert_eq!(bits((wa * w).lanes()), bits(a * w));
            assert_eq!(bits(wa.like(b).lanes()), bits(b));
        }
    }

    /// The lanes' comparison gives `<`'s bits in AVX2 and in scalars, lane by lane: ties,
    /// signed zeros, infinities and NaN (false either side) included.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_comparison_gives_the_same_bits_in_avx2_and_in_scalars() {
        let Some(v3) = pulp::x86::V3::try_new() else {
            eprintln!("this processor has no AVX2: the comparison takes the scalar path only");
            return;
        };
        let specials = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1e-300,
        ];
        let mut next = spread_values(0x51_7cc1_b727_220a);
        for i in 0..2000 {
            let pick = |k: usize, x: f64| {
                if k.is_multiple_of(3) {
                    specials[k % 8]
                } else {
                    x
                }
            };
            let a: [f64; 4] = std::array::from_fn(|j| pick(i + j, next()));
            let b: [f64; 4] = std::array::from_fn(|j| pick(i * 5 + 2 * j, a[j] + next() * 0.25));
            let expected = (0..4).fold(0, |m, j| m | (u32::from(a[j] < b[j]) << j));
            assert_eq!(Plain.less(a, b), expected, "{a:?} < {b:?}");
            let wide = v3.vectorize(|| v3.less(v3.load(a), v3.load(b)));
            assert_eq!(wide, expected, "{a:?} < {b:?} in AVX2");
        }
    }

    /// The column-wise kernels give, column by column, the expressions they stand for written
    /// out (`acc + ((r_0 w_0 + r_1 w_1) + r_2 w_2)`, `acc + x w`), to the bit.
    #[test]
    fn the_column_kernels_are_their_expressions_to_the_bit() {
        let value = |i: usize| ((i * 7919) % 101) as f64 * 0.37 - 17.0 + 1e-9 * i as f64;
        for c in 1..=11 {
            let record: Vec<f64> = (0..3 * c).map(value).collect();
            let start: Vec<f64> = (0..c).map(|j| value(5 * j + 3)).collect();
            let w = [0.3, -1.7, 2.9];
            let mut acc = start.clone();
            add_weighted_rows(Plain, &mut acc, &record, &w);
            for j in 0..c {
                let expected =
                    start[j] + (record[j] * w[0] + record[c + j] * w[1] + record[2 * c + j] * w[2]);
                assert_eq!(acc[j].to_bits(), expected.to_bits(), "{c} columns, {j}");
            }
            let mut acc = start.clone();
            add_scaled(Plain, &mut acc, &record, w[1]);
            for j in 0..c {
                let expected = start[j] + record[j] * w[1];
                assert_eq!(acc[j].to_bits(), expected.to_bits(), "{c} columns, {j}");
            }
        }
    }

    /// The rows of a record summed with few columns in one pass give the lanes' sums to the
    /// bit (signed zeros included): the rows' own order, and their sums' starting zero.
    #[test]
    fn rows_in_one_pass_equal_the_lane_sums_to_the_bit() {
        let values = [0.3, -0.0, 1e-17, -2.5, 0.0, 7.25, -1e3, 3.0 / 7.0];
        // The lanes' arithmetic for any number of columns, written out.
        let lane_sum = |row: &[f64], weights: &[f64]| -> f64 {
            let n = 4 * (row.len() / 4);
            let mut lanes = [0.0; 4];
            for (j, (a, b)) in row[..n].iter().zip(weights).enumerate() {
                lanes[j % 4] += a * b;
            }
            let rest: f64 = (row[n..].iter().zip(&weights[n..]))
                .map(|(a, b)| a * b)
                .sum();
            (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + rest
        };
        for c in 1..=6 {
            // Row 0 sums to 1 or 0 by the order of its terms, row 1 (all -0.0) to a zero
            // whose sign the sum's starting zero decides; the others mix the values above.
            let row = |r: usize, j: usize| match r {
                0 => [1.0, 1e16, -1e16, 0.5, 0.25, 2.0][j],
                1 => -0.0,
                _ => values[(r * 5 + j * 3 + c) % 8],
            };
            let record: Vec<f64> = (0..7 * c).map(|i| row(i / c, i % c)).collect();
            for weights in [
                vec![1.0; c],
                (0..c).map(|j| values[(j * 3 + 1) % 8] - 0.1).collect(),
            ] {
                let sums: [f64; 7] = rows(Plain, &record, &weights);
                for (r, sum) in sums.iter().enumerate() {
                    let lanes = lane_sum(&record[r * c..(r + 1) * c], &weights);
                    assert_eq!(sum.to_bits(), lanes.to_bits(), "{c} columns, row {r}");
                }
            }
        }
    }
}
