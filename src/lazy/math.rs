//! `exp`, `log`, `tanh` and `erf` in f32 from plain arithmetic and selects, without branches or
//! calls, so a loop over them vectorizes (libm's are a call per element). Each was checked over
//! every f32 against the f64 result (the first three once, offline; erf by an ignored test): their
//! bounds below are the worst cases found.
//!
//! Their polynomials use fused multiply-adds (`mul_add`), which round once on every CPU: the
//! kernels' AVX2 and AVX-512 builds get the instruction, and other builds call libm's `fmaf`,
//! slower but with the same bits. So every instruction set computes these alike.

/// Horner's rule over `coefficients`, highest degree first.
#[inline(always)]
fn polynomial<const N: usize>(x: f32, coefficients: [f32; N]) -> f32 {
    let mut p = coefficients[0];
    for &c in &coefficients[1..] {
        p = p.mul_add(x, c);
    }
    p
}

/// ln 2 split so that `k · LN2_HI` is exact for the `k` used here (9 significant bits) and
/// `LN2_HI + LN2_LO` = ln 2.
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;

/// 1.5·2^23: adding it rounds to an integer, which then sits in the low mantissa bits.
const EXP_SHIFTER: f32 = 12_582_912.0;

/// `e^x`, within 1.02 ulp (worst found: 1.010). Cody–Waite reduction `x = n·ln 2 + r`, `|r| <= ln 2
/// / 2`, Cephes' degree-7 polynomial for `e^r`, and `2^n` applied as two exact power-of-two factors
/// so subnormal results round once. `exp(±inf) = inf, 0`; NaN stays NaN; beyond ±88.7 it overflows
/// to inf or underflows to 0.
#[inline(always)]
pub(crate) fn exp_f32(x: f32) -> f32 {
    // e^x is inf or 0 in f32 well inside these; clamping keeps 2^n's exponents in range (a NaN
    // fails both comparisons and passes through).
    let x = x.clamp(-110.0, 100.0);
    let t = x.mul_add(std::f32::consts::LOG2_E, EXP_SHIFTER);
    let n = t - EXP_SHIFTER;
    let r = (-n).mul_add(LN2_LO, (-n).mul_add(LN2_HI, x));
    let p = polynomial(
        r,
        [
            1.987_569_2e-4,
            1.398_199_9e-3,
            8.333_452e-3,
            4.166_579_6e-2,
            1.666_666_5e-1,
            0.5,
        ],
    );
    let e = p.mul_add(r * r, r) + 1.0;
    // n as an integer, split in two halves, each a normal power of two for |n| <= 160.
    let ni = (t.to_bits() as i32).wrapping_sub(0x4B40_0000);
    let n1 = ni >> 1;
    let n2 = ni.wrapping_sub(n1);
    let s1 = f32::from_bits((n1.wrapping_add(127) as u32).wrapping_shl(23));
    let s2 = f32::from_bits((n2.wrapping_add(127) as u32).wrapping_shl(23));
    e * s1 * s2
}

/// Cephes' degree-8 polynomial of [`log_f32`], highest degree first.
const LOG_SERIES: [f32; 9] = [
    7.037_683_6e-2,
    -1.151_461e-1,
    1.167_699_9e-1,
    -1.242_014_1e-1,
    1.424_932_3e-1,
    -1.666_805_8e-1,
    2.000_071_4e-1,
    -2.499_999_4e-1,
    3.333_333e-1,
];

/// [`log_f32`] over 16 lanes with AVX-512F: the same operations in the same order on every lane,
/// the special cases chosen by masks, so bit-identical. The compiler's vectorization of the scalar
/// form took 0.45 ms per 1M values on one thread, these 0.40 (and a program with a log can now run
/// chunk by chunk).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) fn log_avx512(x: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    let c = _mm512_set1_ps;
    let (sub, mul, fma) = (_mm512_sub_ps, _mm512_mul_ps, _mm512_fmadd_ps);
    let subnormal = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, c(f32::MIN_POSITIVE));
    let scaled = _mm512_mask_mul_ps(x, subnormal, x, c(16_777_216.0));
    let bits = _mm512_castps_si512(scaled);
    let k = _mm512_srai_epi32::<23>(_mm512_sub_epi32(bits, _mm512_set1_epi32(0x3F35_04F3)));
    let m = _mm512_castsi512_ps(_mm512_sub_epi32(bits, _mm512_slli_epi32::<23>(k)));
    let e = sub(_mm512_cvtepi32_ps(k), _mm512_maskz_mov_ps(subnormal, c(24.0)));
    let f = sub(m, c(1.0));
    let z = mul(f, f);
    let p = polynomial_avx512(f, &LOG_SERIES);
    let y = fma(mul(f, z), p, fma(e, c(LN2_LO), mul(c(-0.5), z)));
    let ln = fma(e, c(LN2_HI), _mm512_add_ps(f, y));
    let finite_positive =
        _mm512_cmp_ps_mask::<_CMP_GT_OQ>(x, c(0.0)) & _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, c(f32::INFINITY));
    let zero = _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(x, c(0.0));
    let infinite = _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(x, c(f32::INFINITY));
    let special = _mm512_mask_mov_ps(c(f32::NAN), zero, c(f32::NEG_INFINITY));
    let special = _mm512_mask_mov_ps(special, infinite, x);
    _mm512_mask_mov_ps(special, finite_positive, ln)
}

/// [`log_f32`] over 8 lanes with AVX2 and FMA, operation for operation, the special cases
/// chosen by blends, so the bits are the same.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn log_avx2(x: std::arch::x86_64::__m256) -> std::arch::x86_64::__m256 {
    use std::arch::x86_64::*;
    let c = _mm256_set1_ps;
    let (sub, mul, fma) = (_mm256_sub_ps, _mm256_mul_ps, _mm256_fmadd_ps);
    let subnormal = _mm256_cmp_ps::<_CMP_LT_OQ>(x, c(f32::MIN_POSITIVE));
    let scaled = _mm256_blendv_ps(x, mul(x, c(16_777_216.0)), subnormal);
    let bits = _mm256_castps_si256(scaled);
    let k = _mm256_srai_epi32::<23>(_mm256_sub_epi32(bits, _mm256_set1_epi32(0x3F35_04F3)));
    let m = _mm256_castsi256_ps(_mm256_sub_epi32(bits, _mm256_slli_epi32::<23>(k)));
    // `k - 24` where scaled, else `k - 0`, as the scalar form subtracts.
    let e = sub(_mm256_cvtepi32_ps(k), _mm256_and_ps(subnormal, c(24.0)));
    let f = sub(m, c(1.0));
    let z = mul(f, f);
    let p = polynomial_avx2(f, &LOG_SERIES);
    let y = fma(mul(f, z), p, fma(e, c(LN2_LO), mul(c(-0.5), z)));
    let ln = fma(e, c(LN2_HI), _mm256_add_ps(f, y));
    let finite_positive = _mm256_and_ps(
        _mm256_cmp_ps::<_CMP_GT_OQ>(x, c(0.0)),
        _mm256_cmp_ps::<_CMP_LT_OQ>(x, c(f32::INFINITY)),
    );
    let special = _mm256_blendv_ps(
        c(f32::NAN),
        c(f32::NEG_INFINITY),
        _mm256_cmp_ps::<_CMP_EQ_OQ>(x, c(0.0)),
    );
    let special = _mm256_blendv_ps(special, x, _mm256_cmp_ps::<_CMP_EQ_OQ>(x, c(f32::INFINITY)));
    _mm256_blendv_ps(special, ln, finite_positive)
}

/// Horner's rule on 8 lanes, as [`polynomial`] computes it on one.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn polynomial_avx2(x: std::arch::x86_64::__m256, coefficients: &[f32]) -> std::arch::x86_64::__m256 {
    use std::arch::x86_64::*;
    let c = _mm256_set1_ps;
    (coefficients[1..].iter()).fold(c(coefficients[0]), |p, &k| _mm256_fmadd_ps(p, x, c(k)))
}

/// `magnitude.copysign(sign)` on 8 lanes: every bit of `magnitude` but the sign bit, and `sign`'s.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn copysign_avx2(
    magnitude: std::arch::x86_64::__m256,
    sign: std::arch::x86_64::__m256,
) -> std::arch::x86_64::__m256 {
    use std::arch::x86_64::*;
    let bit = _mm256_set1_ps(-0.0);
    _mm256_or_ps(_mm256_andnot_ps(bit, magnitude), _mm256_and_ps(bit, sign))
}

/// [`tanh_f32`] over 8 lanes with AVX2 and FMA, operation for operation.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn tanh_avx2(x: std::arch::x86_64::__m256) -> std::arch::x86_64::__m256 {
    use std::arch::x86_64::*;
    let c = _mm256_set1_ps;
    let (mul, fma) = (_mm256_mul_ps, _mm256_fmadd_ps);
    let a = _mm256_andnot_ps(c(-0.0), x);
    let z = mul(a, a);
    let small = fma(mul(polynomial_avx2(z, &TANH_SERIES), z), a, a);
    let large = _mm256_sub_ps(
        c(1.0),
        _mm256_div_ps(c(2.0), _mm256_add_ps(exp_avx2(mul(c(2.0), a)), c(1.0))),
    );
    // `a < 0.625` is false for NaN, which takes `large`, as the scalar form does.
    let chosen = _mm256_blendv_ps(large, small, _mm256_cmp_ps::<_CMP_LT_OQ>(a, c(0.625)));
    copysign_avx2(chosen, x)
}

/// [`erf_f32`] over 8 lanes with AVX2 and FMA, operation for operation.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn erf_avx2(x: std::arch::x86_64::__m256) -> std::arch::x86_64::__m256 {
    use std::arch::x86_64::*;
    let c = _mm256_set1_ps;
    // `min` returns its second operand when either is NaN: the NaN.
    let a = _mm256_min_ps(c(ERF_CLAMP), _mm256_andnot_ps(c(-0.0), x));
    let z = _mm256_mul_ps(a, a);
    let y = _mm256_div_ps(
        _mm256_mul_ps(a, polynomial_avx2(z, &ERF_P)),
        polynomial_avx2(z, &ERF_Q),
    );
    copysign_avx2(_mm256_min_ps(c(1.0), y), x)
}

/// [`gelu_f32`] over 8 lanes with AVX2 and FMA, operation for operation.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn gelu_avx2(x: std::arch::x86_64::__m256) -> std::arch::x86_64::__m256 {
    use std::arch::x86_64::*;
    let c = _mm256_set1_ps;
    let erf = erf_avx2(_mm256_mul_ps(x, c(std::f32::consts::FRAC_1_SQRT_2)));
    _mm256_mul_ps(x, _mm256_add_ps(_mm256_mul_ps(erf, c(0.5)), c(0.5)))
}

/// [`exp_f32`] over 16 lanes with AVX-512F, the same operations in the same order, except that
/// `2^n` is applied by one `vscalefps`, which rounds `e · 2^n` once as the two exact factors do:
/// the results are bit-identical (checked offline over every f32) in fewer instructions.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) fn exp_avx512(x: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    let c = _mm512_set1_ps;
    let (add, sub, mul, fma) = (_mm512_add_ps, _mm512_sub_ps, _mm512_mul_ps, _mm512_fmadd_ps);
    // min/max return their second operand when either is NaN, so a NaN `x` passes through.
    let x = _mm512_max_ps(c(-110.0), _mm512_min_ps(c(100.0), x));
    let t = fma(x, c(std::f32::consts::LOG2_E), c(12_582_912.0));
    let n = sub(t, c(12_582_912.0));
    // -(n·ln2) + x in one rounding each, as `(-n).mul_add(..)`: negation is exact.
    let r = _mm512_fnmadd_ps(n, c(LN2_LO), _mm512_fnmadd_ps(n, c(LN2_HI), x));
    let mut p = c(1.987_569_2e-4);
    for k in [1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 1.666_666_5e-1, 0.5] {
        p = fma(p, r, c(k));
    }
    let e = add(fma(p, mul(r, r), r), c(1.0));
    _mm512_scalef_ps(e, n)
}

/// [`exp_f32`]'s reduction and polynomial over 8 lanes: `t`, which holds `n` in its low
/// mantissa bits, and `e^r`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
fn exp_parts_avx2(x: std::arch::x86_64::__m256) -> (std::arch::x86_64::__m256, std::arch::x86_64::__m256) {
    use std::arch::x86_64::*;
    let c = _mm256_set1_ps;
    let t = _mm256_fmadd_ps(x, c(std::f32::consts::LOG2_E), c(EXP_SHIFTER));
    let n = _mm256_sub_ps(t, c(EXP_SHIFTER));
    let r = _mm256_fnmadd_ps(n, c(LN2_LO), _mm256_fnmadd_ps(n, c(LN2_HI), x));
    let mut p = c(1.987_569_2e-4);
    for k in [1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 1.666_666_5e-1, 0.5] {
        p = _mm256_fmadd_ps(p, r, c(k));
    }
    (
        t,
        _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), c(1.0)),
    )
}

/// Below this magnitude [`exp_avx2_in_range`] holds: `|n| <= 124` and `e^r` lies in [0.7, 1.42],
/// so `e^r · 2^n` is a normal f32 and one exponent add scales it exactly.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // Other CPUs use it in tests only.
pub(crate) const EXP_IN_RANGE: f32 = 86.0;

/// [`exp_avx2`] for lanes of magnitude below [`EXP_IN_RANGE`] (so not NaN), the same bits: there
/// the two exact power-of-two factors are one exponent add, and the clamp changes nothing. Six
/// fewer vector instructions, two of them multiplies (the ports a polynomial is bound by).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
pub(crate) fn exp_avx2_in_range(x: std::arch::x86_64::__m256) -> std::arch::x86_64::__m256 {
    use std::arch::x86_64::*;
    let (t, e) = exp_parts_avx2(x);
    // `t`'s bits are 0x4B40_0000 + n; shifted by 23, only n's remain, in the exponent field.
    let scale = _mm256_slli_epi32::<23>(_mm256_castps_si256(t));
    _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(e), scale))
}

/// Whether each of the `len` values at `values` has a magnitude below `bound` (a NaN has not):
/// their magnitudes' bits compared as integers, which order non-negative floats, NaN above
/// infinity.
///
/// # Safety
/// `values` must be valid for reading `len` values, a multiple of 8.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) unsafe fn all_below_avx2(values: *const f32, len: usize, bound: f32) -> bool {
    use std::arch::x86_64::*;
    debug_assert!(len.is_multiple_of(8));
    let magnitude = _mm256_set1_epi32(0x7FFF_FFFF);
    let mut widest = _mm256_setzero_si256();
    for k in (0..len).step_by(8) {
        // SAFETY: `k + 8 <= len` (the caller's promise).
        let bits = unsafe { _mm256_loadu_si256(values.add(k).cast()) };
        widest = _mm256_max_epu32(widest, _mm256_and_si256(bits, magnitude));
    }
    let over = _mm256_cmpgt_epi32(widest, _mm256_set1_epi32((bound.to_bits() - 1) as i32));
    _mm256_testz_si256(over, over) == 1
}

/// [`exp_f32`] over 8 lanes with AVX2 and FMA, operation for operation (the same fused
/// multiply-adds, the same two-step scaling), so the bits are the same.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn exp_avx2(x: std::arch::x86_64::__m256) -> std::arch::x86_64::__m256 {
    use std::arch::x86_64::*;
    let c = _mm256_set1_ps;
    // min/max return their second operand when either is NaN, so a NaN `x` passes through.
    let x = _mm256_max_ps(c(-110.0), _mm256_min_ps(c(100.0), x));
    let (t, e) = exp_parts_avx2(x);
    // n as an integer, split in two halves, each a normal power of two.
    let ni = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(0x4B40_0000));
    let n1 = _mm256_srai_epi32::<1>(ni);
    let n2 = _mm256_sub_epi32(ni, n1);
    let power = |h: __m256i| {
        _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(
            h,
            _mm256_set1_epi32(127),
        )))
    };
    _mm256_mul_ps(_mm256_mul_ps(e, power(n1)), power(n2))
}

/// `sigmoid` over 8 lanes with AVX2 and FMA, `1 / (1 + e^-x)` with `e^x` by `exp` (one of the two
/// forms of [`exp_avx2`], bit for bit the same where both hold), `-x` by flipping the sign bit as
/// scalar negation does.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
pub(crate) fn sigmoid_avx2(
    x: std::arch::x86_64::__m256,
    exp: unsafe fn(std::arch::x86_64::__m256) -> std::arch::x86_64::__m256,
) -> std::arch::x86_64::__m256 {
    use std::arch::x86_64::*;
    let one = _mm256_set1_ps(1.0);
    // SAFETY: `exp` needs AVX2 and FMA, which this function is compiled for.
    let e = unsafe { exp(_mm256_xor_ps(x, _mm256_set1_ps(-0.0))) };
    _mm256_div_ps(one, _mm256_add_ps(one, e))
}

/// `sigmoid` over 16 lanes with [`exp_avx512`]: `1 / (1 + e^-x)`, with `-x` by [`neg_avx512`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) fn sigmoid_avx512(x: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    let one = _mm512_set1_ps(1.0);
    _mm512_div_ps(one, _mm512_add_ps(one, exp_avx512(neg_avx512(x))))
}

/// Inputs at least this large take [`sqrt_avx512`]'s fast path: below it, `x - s²` for the
/// estimate `s` is subnormal and rounds too coarsely for the correction step.
#[cfg(target_arch = "x86_64")]
const SQRT_FAST_MIN: f32 = 7.888_609e-31; // 2^-100

/// `√x` over 16 lanes with AVX-512F, bit-identical to IEEE `sqrt` (`vsqrtps`), in about half its
/// time here: `vsqrtps` on 16 lanes takes 12 cycles on this CPU and keeps its own unit busy,
/// while this is an estimate and five fused multiply-adds. `vrsqrt14ps`' estimate `y` (14 bits)
/// gives `s = x·y ≈ √x` and `h = y/2 ≈ 1/(2√x)`; one Goldschmidt step refines both, and `s + (x -
/// s²)·h`, whose remainder the FMA computes exactly, rounds correctly. Checked offline over every
/// f32 from 2^-100 to the largest finite value; lanes outside (smaller, subnormal, zero, negative,
/// infinite, NaN) are computed by `vsqrtps` itself. Programs with enough other work per square
/// root use `vsqrtps` throughout (see `chunked`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) fn sqrt_avx512(x: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    let half = _mm512_set1_ps(0.5);
    let y = _mm512_rsqrt14_ps(x);
    let (s, h) = (_mm512_mul_ps(x, y), _mm512_mul_ps(half, y));
    let e = _mm512_fnmadd_ps(s, h, half);
    let (s, h) = (_mm512_fmadd_ps(s, e, s), _mm512_fmadd_ps(h, e, h));
    let s = _mm512_fmadd_ps(_mm512_fnmadd_ps(s, s, x), h, s);
    // Positive floats order as their bits do, and every other lane (negative, infinite, NaN) has
    // bits above the largest finite value's. So the range is one unsigned compare of the bits'
    // distance above the threshold's (lanes below it wrap around to huge distances), where two
    // float compares and a mask `and` did.
    let (low, high) = (SQRT_FAST_MIN.to_bits() as i32, f32::MAX.to_bits() as i32);
    let above_low = _mm512_sub_epi32(_mm512_castps_si512(x), _mm512_set1_epi32(low));
    let in_range = _mm512_cmple_epu32_mask(above_low, _mm512_set1_epi32(high - low));
    if in_range == 0xFFFF {
        s
    } else {
        _mm512_mask_sqrt_ps(s, !in_range, x)
    }
}

/// The natural logarithm, within 0.87 ulp (worst found: 0.862). `x = 2^k · m` with `m` in [√½, √2)
/// read from the bits (subnormals scaled up by 2^24 first), then `ln m = f - f²/2 + f³·P(f)` for `f
/// = m - 1` with Cephes' degree-8 `P`, and `k · ln 2` added in two parts. `log(0) = -inf`,
/// `log(inf) = inf`; negative inputs and NaN give NaN.
#[inline(always)]
pub(crate) fn log_f32(x: f32) -> f32 {
    let subnormal = x < f32::MIN_POSITIVE;
    let scaled = if subnormal { x * 16_777_216.0 } else { x };
    let bits = scaled.to_bits() as i32;
    // 0x3F35_04F3 is √½: k counts the binades above it, so m lands in [√½, √2).
    let k = bits.wrapping_sub(0x3F35_04F3) >> 23;
    let m = f32::from_bits(bits.wrapping_sub(k << 23) as u32);
    let e = k as f32 - if subnormal { 24.0 } else { 0.0 };
    let f = m - 1.0;
    let z = f * f;
    let p = polynomial(f, LOG_SERIES);
    let y = (f * z).mul_add(p, e.mul_add(LN2_LO, -0.5 * z));
    let ln = e.mul_add(LN2_HI, f + y);
    if x > 0.0 && x < f32::INFINITY {
        ln
    } else if x == 0.0 {
        f32::NEG_INFINITY
    } else if x == f32::INFINITY {
        x
    } else {
        f32::NAN
    }
}

/// The hyperbolic tangent, within 1.34 ulp (worst found: 1.330; glibc's `tanhf`: 2.189).
/// Below 0.625 in magnitude an odd polynomial (Cephes' coefficients), where `1 - 2/(e^{2|x|} + 1)`
/// would cancel; above, that formula with the sign of `x`. `tanh(±inf) = ±1`; NaN stays NaN.
#[inline(always)]
pub(crate) fn tanh_f32(x: f32) -> f32 {
    // Computed for |x|, then given x's sign (so -0 stays -0).
    let a = x.abs();
    let z = a * a;
    let small = (polynomial(z, TANH_SERIES) * z).mul_add(a, a);
    let large = 1.0 - 2.0 / (exp_f32(2.0 * a) + 1.0);
    (if a < 0.625 { small } else { large }).copysign(x)
}

/// `tanh`'s odd polynomial below 0.625 (Cephes), in `x²`.
const TANH_SERIES: [f32; 5] = [
    -5.704_988_7e-3,
    2.063_909e-2,
    -5.373_971_6e-2,
    1.333_144_2e-1,
    -3.333_328e-1,
];

/// [`tanh_f32`] over 16 lanes with AVX-512F: the same operations in the same order on every lane
/// (both forms, then each lane's by its `|x|`), with [`exp_avx512`], so bit-identical.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) fn tanh_avx512(x: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    let c = _mm512_set1_ps;
    let (mul, fma) = (_mm512_mul_ps, _mm512_fmadd_ps);
    let a = abs_avx512(x);
    let z = mul(a, a);
    let small = fma(mul(polynomial_avx512(z, &TANH_SERIES), z), a, a);
    let large = _mm512_sub_ps(
        c(1.0),
        _mm512_div_ps(c(2.0), _mm512_add_ps(exp_avx512(mul(c(2.0), a)), c(1.0))),
    );
    let chosen = _mm512_mask_blend_ps(_mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, c(0.625)), large, small);
    copysign_avx512(chosen, x)
}

/// Horner's rule over 16 lanes, as [`polynomial`] (one fused multiply-add per coefficient).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn polynomial_avx512(x: std::arch::x86_64::__m512, coefficients: &[f32]) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    let c = _mm512_set1_ps;
    (coefficients[1..].iter()).fold(c(coefficients[0]), |p, &k| _mm512_fmadd_ps(p, x, c(k)))
}

/// `-x` on 16 lanes: the sign bit flipped, as scalar negation does (a NaN keeps its payload).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) fn neg_avx512(x: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    _mm512_castsi512_ps(_mm512_xor_si512(
        _mm512_castps_si512(x),
        _mm512_set1_epi32(i32::MIN),
    ))
}

/// `|x|` on 16 lanes: the sign bit cleared, as `f32::abs` does.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) fn abs_avx512(x: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    _mm512_castsi512_ps(_mm512_andnot_si512(
        _mm512_set1_epi32(i32::MIN),
        _mm512_castps_si512(x),
    ))
}

/// `magnitude.copysign(sign)` on 16 lanes: every bit of `magnitude` but the sign bit, and `sign`'s.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn copysign_avx512(
    magnitude: std::arch::x86_64::__m512,
    sign: std::arch::x86_64::__m512,
) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    let bit = _mm512_set1_epi32(i32::MIN);
    let (bits, float) = (_mm512_castps_si512, _mm512_castsi512_ps);
    float(_mm512_or_si512(
        _mm512_andnot_si512(bit, bits(magnitude)),
        _mm512_and_si512(bit, bits(sign)),
    ))
}

/// The error function, as [`Tensor::erf`](crate::tensor::Tensor::erf) documents it: `x·P(x²)/Q(x²)`,
/// a rational approximation of degree 11 over 10 fitted (for this library) to erf's relative error
/// on `[0, 3.925]`, where it is below 2e-8 in exact arithmetic. Evaluated in f32, within 5.9 ulp
/// (worst over every f32: 5.894, at 3.737, where erf is `1 - 1.3e-7`: 3.5e-7 absolute), mostly the
/// roundings of the two polynomials' Horner steps. Beyond 3.925 erf rounds to ±1, so `|x|` is
/// clamped there, and the quotient, which can come out an ulp above 1, is clamped to 1. Odd by
/// construction (`|x|`, then `x`'s sign); `erf(±inf) = ±1`; NaN stays NaN. One formula for every
/// lane: the two-branch form it replaced (a series, and Abramowitz & Stegun 7.1.26 with an
/// exponential and a division) took twice the instructions and was within 5e-7 absolute.
#[inline(always)]
pub(crate) fn erf_f32(x: f32) -> f32 {
    // `min` written as the vector instruction computes it, so a NaN passes through.
    let min = |a: f32, b: f32| if b < a { b } else { a };
    let a = min(x.abs(), ERF_CLAMP);
    let z = a * a;
    let y = a * polynomial(z, ERF_P) / polynomial(z, ERF_Q);
    min(y, 1.0).copysign(x)
}

/// Where erf is 1 in f32 (`erfc(3.925) < 2^-25`), and the end of the fitted range.
const ERF_CLAMP: f32 = 3.925;
/// The numerator and denominator of [`erf_f32`]'s approximation, in `x²`, highest degree first.
/// `ERF_P`'s constant term is erf's slope at 0, 2/√π, as the fit left it: an ulp below the
/// nearest f32.
#[allow(clippy::approx_constant, reason = "a fitted coefficient, not the constant")]
const ERF_P: [f32; 6] = [
    2.046_006e-6,
    2.848_212_6e-4,
    3.771_956e-3,
    5.276_742_2e-2,
    1.905_811_9e-1,
    1.128_379_1,
];
const ERF_Q: [f32; 6] = [
    3.804_639e-5,
    1.163_697_3e-3,
    1.498_201e-2,
    1.141_773_3e-1,
    5.022_309e-1,
    1.0,
];

/// GELU, `x·Φ(x)` with `Φ(x) = erf(x/√2)·0.5 + 0.5` by [`erf_f32`]: the operations of the
/// composite it replaced (`Tensor::gelu`), in the same order, so the same bits.
#[inline(always)]
pub(crate) fn gelu_f32(x: f32) -> f32 {
    x * (erf_f32(x * std::f32::consts::FRAC_1_SQRT_2) * 0.5 + 0.5)
}

/// [`erf_f32`] over 16 lanes with AVX-512F: the same operations in the same order, so
/// bit-identical.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) fn erf_avx512(x: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    let c = _mm512_set1_ps;
    // `min` returns its second operand when either is NaN: the NaN.
    let a = _mm512_min_ps(c(ERF_CLAMP), abs_avx512(x));
    let z = _mm512_mul_ps(a, a);
    let y = _mm512_div_ps(
        _mm512_mul_ps(a, polynomial_avx512(z, &ERF_P)),
        polynomial_avx512(z, &ERF_Q),
    );
    copysign_avx512(_mm512_min_ps(c(1.0), y), x)
}

/// [`gelu_f32`] over 16 lanes with [`erf_avx512`]: the same operations, so bit-identical.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) fn gelu_avx512(x: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    let c = _mm512_set1_ps;
    let erf = erf_avx512(_mm512_mul_ps(x, c(std::f32::consts::FRAC_1_SQRT_2)));
    _mm512_mul_ps(x, _mm512_add_ps(_mm512_mul_ps(erf, c(0.5)), c(0.5)))
}

/// The error function in f64 for the reference evaluator, to about 1e-15:
/// `erf(x) = 2/√π · e^(-x²) · Σ 2ⁿ x^(2n+1) / (1·3·…·(2n+1))`, a series of positive terms (no
/// cancellation); `erfc(6) < 3e-17`, so ±1 beyond 6.
pub(crate) fn erf_f64(x: f64) -> f64 {
    let a = x.abs();
    if a.is_nan() || a > 6.0 {
        return if a.is_nan() { x } else { x.signum() };
    }
    let (mut term, mut sum, mut n) = (a, a, 0.0);
    while term > 1e-17 * sum {
        n += 1.0;
        term *= 2.0 * a * a / (2.0 * n + 1.0);
        sum += term;
    }
    (2.0 / std::f64::consts::PI.sqrt() * (-a * a).exp() * sum).copysign(x)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `got`'s distance from `exact` in units of the f32 spacing where `exact` lies: `2^(e - 23)`
    /// for `2^e <= |exact| < 2^(e + 1)`, the subnormal spacing below. (The gap above `exact as
    /// f32` is twice that where `exact` lies just below a power of two and rounds up to it, and
    /// would let errors up to a whole ulp pass a half-ulp bound there.)
    pub(crate) fn ulps(got: f32, exact: f64) -> f64 {
        let exponent = ((exact.abs().to_bits() >> 52) as i32 - 1023).max(-126);
        (got as f64 - exact).abs() / 2f64.powi(exponent - 23)
    }

    /// Every 97th f32 bit pattern of one sign (about 21 million inputs, every binade, subnormals
    /// included), for the finite results.
    fn sweep(negative: bool, mut check: impl FnMut(f32)) {
        let sign = if negative { 1 << 31 } else { 0 };
        for bits in (0..0x7F80_0000u32).step_by(97) {
            check(f32::from_bits(sign | bits));
        }
    }

    fn assert_within(name: &str, f: fn(f32) -> f32, exact: fn(f64) -> f64, bound: f64, x: f32) {
        let want = exact(x as f64);
        if want.is_finite() && (want as f32).is_finite() {
            let got = f(x);
            assert!(
                ulps(got, want) <= bound,
                "{name}({x:e}) = {got:e}, exact {want:e}"
            );
        }
    }

    #[test]
    fn exp_within_its_bound() {
        sweep(false, |x| assert_within("exp", exp_f32, f64::exp, 1.02, x));
        sweep(true, |x| assert_within("exp", exp_f32, f64::exp, 1.02, x));
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(-0.0), 1.0);
        assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32(89.0), f32::INFINITY);
        assert_eq!(exp_f32(-104.0), 0.0);
        assert_eq!(exp_f32(-1000.0), 0.0);
        assert!(exp_f32(f32::NAN).is_nan());
        // Subnormal results round once.
        assert_eq!(exp_f32(-95.0), (-95f64).exp() as f32);
    }

    /// `f` on 16 values.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    fn on_lanes(xs: &[f32], f: impl Fn(std::arch::x86_64::__m512) -> std::arch::x86_64::__m512) -> [f32; 16] {
        use std::arch::x86_64::*;
        assert_eq!(xs.len(), 16);
        let mut got = [0f32; 16];
        // SAFETY: both pointers cover 16 f32.
        unsafe { _mm512_storeu_ps(got.as_mut_ptr(), f(_mm512_loadu_ps(xs.as_ptr()))) };
        got
    }

    /// `lanes` (16 at a time) against `scalar` bit for bit (any NaN for a NaN), on ±0, ±∞, NaN, a
    /// subnormal, the function's own `specials`, and every 997th bit pattern (4.3 million values,
    /// both signs, every binade).
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn lanes_match(
        name: &str,
        lanes: unsafe fn(std::arch::x86_64::__m512) -> std::arch::x86_64::__m512,
        scalar: fn(f32) -> f32,
        specials: &[f32],
    ) {
        if !std::arch::is_x86_feature_detected!("avx512f") {
            return;
        }
        let mut batch = Vec::with_capacity(16);
        let check = |batch: &mut Vec<f32>| {
            // SAFETY: AVX-512F is available (checked above).
            let got = unsafe { on_lanes(batch, |x| lanes(x)) };
            for (&x, g) in batch.iter().zip(got) {
                let want = scalar(x);
                assert!(
                    g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
                    "{name}({x:e}) = {g:e}, scalar {want:e}"
                );
            }
            batch.clear();
        };
        let common = [0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1e-40];
        let sweep = (0..=u32::MAX).step_by(997).map(f32::from_bits);
        for x in common.into_iter().chain(specials.iter().copied()).chain(sweep) {
            batch.push(x);
            if batch.len() == 16 {
                check(&mut batch);
            }
        }
        batch.resize(16, 1.0);
        check(&mut batch);
    }

    /// Subnormals (scaled first), both sides of √½ and of the next binade's start, where `k`
    /// steps, 1, and the extremes.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn log_avx512_matches_log_f32_bit_for_bit() {
        let specials = [
            f32::from_bits(1),
            f32::MIN_POSITIVE,
            f32::from_bits(f32::MIN_POSITIVE.to_bits() - 1),
            f32::from_bits(0x3F35_04F2),
            f32::from_bits(0x3F35_04F3),
            f32::from_bits(0x3FB5_04F2),
            f32::from_bits(0x3FB5_04F3),
            1.0,
            f32::MAX,
            -f32::MIN_POSITIVE,
            -f32::NAN,
        ];
        lanes_match("log", log_avx512, log_f32, &specials);
    }

    /// Every 97th f32 bit pattern, the common specials and `specials`: `lanes` (AVX2 and FMA) is
    /// `scalar`, bit for bit.
    #[cfg(target_arch = "x86_64")]
    fn avx2_lanes_match(
        name: &str,
        lanes: unsafe fn(std::arch::x86_64::__m256) -> std::arch::x86_64::__m256,
        scalar: fn(f32) -> f32,
        specials: &[f32],
    ) {
        use std::arch::x86_64::*;
        if !(std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")) {
            return;
        }
        let common = [
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            1e-40,
            -1e-40,
        ];
        let sweep = (0..=u32::MAX).step_by(97).map(f32::from_bits);
        let values: Vec<f32> = common
            .into_iter()
            .chain(specials.iter().copied())
            .chain(sweep)
            .collect();
        for chunk in values.chunks(8) {
            let mut input = [1.0f32; 8];
            input[..chunk.len()].copy_from_slice(chunk);
            let mut got = [0.0f32; 8];
            // SAFETY: the CPU has AVX2 and FMA (checked); both arrays hold 8 values.
            unsafe { _mm256_storeu_ps(got.as_mut_ptr(), lanes(_mm256_loadu_ps(input.as_ptr()))) };
            for (&x, g) in input.iter().zip(got) {
                let want = scalar(x);
                assert!(
                    g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
                    "{name}({x:e}) = {g:e}, scalar {want:e}"
                );
            }
        }
    }

    /// Where the result overflows, turns subnormal, and underflows.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn exp_avx2_matches_exp_f32_bit_for_bit() {
        avx2_lanes_match("exp", exp_avx2, exp_f32, &[88.72, -87.34, -103.9]);
    }

    /// Below its bound, the one-step scaling is the two-step one, bit for bit: every 97th f32 of
    /// both signs, and the bound's neighbours (every one of them, in a release build: the ignored
    /// test below).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn exp_avx2_in_range_matches_exp_f32_below_its_bound() {
        exp_in_range_over(
            (0..EXP_IN_RANGE.to_bits())
                .step_by(97)
                .chain([EXP_IN_RANGE.to_bits() - 1]),
        );
    }

    /// [`exp_avx2_in_range_matches_exp_f32_below_its_bound`] over every f32 below the bound:
    /// `cargo test --release --lib exp_avx2_in_range_over -- --ignored`.
    #[cfg(target_arch = "x86_64")]
    #[test]
    #[ignore = "exhaustive; run by hand"]
    fn exp_avx2_in_range_over_every_f32_below_its_bound() {
        exp_in_range_over(0..EXP_IN_RANGE.to_bits());
    }

    /// `exp_avx2_in_range` against `exp_f32` at these magnitudes' bits, with both signs.
    #[cfg(target_arch = "x86_64")]
    fn exp_in_range_over(magnitudes: impl Iterator<Item = u32>) {
        use std::arch::x86_64::*;
        if !(std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")) {
            return;
        }
        let mut xs = [0f32; 8];
        let mut magnitudes = magnitudes.peekable();
        while magnitudes.peek().is_some() {
            for pair in xs.chunks_mut(2) {
                let bits = magnitudes.next().unwrap_or(0);
                pair[0] = f32::from_bits(bits);
                pair[1] = -f32::from_bits(bits);
            }
            let mut got = [0f32; 8];
            // SAFETY: the CPU has AVX2 and FMA (checked); both arrays hold 8 values.
            unsafe { _mm256_storeu_ps(got.as_mut_ptr(), exp_avx2_in_range(_mm256_loadu_ps(xs.as_ptr()))) };
            for (&x, g) in xs.iter().zip(got) {
                assert_eq!(g.to_bits(), exp_f32(x).to_bits(), "exp({x:e}) = {g:e}");
            }
        }
    }

    /// The range check behind it: false for the bound itself, infinities and NaN in any lane of
    /// any vector, true just below the bound.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn all_below_avx2_finds_any_value_at_or_past_its_bound() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return;
        }
        let below = f32::from_bits(EXP_IN_RANGE.to_bits() - 1);
        let mut xs = [0.0, -0.0, 1e-40, below, -below, 1.0, -3.5, 85.0].repeat(3);
        // SAFETY (each call): the array holds 24 values and the CPU has AVX2 (checked).
        assert!(unsafe { all_below_avx2(xs.as_ptr(), xs.len(), EXP_IN_RANGE) });
        for outlier in [
            EXP_IN_RANGE,
            -EXP_IN_RANGE,
            1e30,
            f32::INFINITY,
            -f32::INFINITY,
            f32::NAN,
            -f32::NAN,
        ] {
            for i in 0..xs.len() {
                let kept = std::mem::replace(&mut xs[i], outlier);
                assert!(
                    !unsafe { all_below_avx2(xs.as_ptr(), xs.len(), EXP_IN_RANGE) },
                    "{outlier} at {i}"
                );
                xs[i] = kept;
            }
        }
    }

    /// Both sides of the switch between the two forms at |x| = 0.625, and the tails.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn tanh_avx2_matches_tanh_f32_bit_for_bit() {
        let specials = [0.625, -0.625, 0.624_999_94, -0.624_999_94, 9.0, -45.0];
        avx2_lanes_match("tanh", tanh_avx2, tanh_f32, &specials);
    }

    /// Both sides of the clamp, and where the quotient reaches 1.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn erf_and_gelu_avx2_match_their_scalar_forms_bit_for_bit() {
        let specials = [ERF_CLAMP, -ERF_CLAMP, 3.9, 3.95, 1e-30, -5.0, 12.0];
        avx2_lanes_match("erf", erf_avx2, erf_f32, &specials);
        avx2_lanes_match("gelu", gelu_avx2, gelu_f32, &specials);
    }

    /// Subnormal, tiny, huge and negative inputs, and both sides of √½ and 1.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn log_avx2_matches_log_f32_bit_for_bit() {
        let specials = [
            1.0,
            std::f32::consts::FRAC_1_SQRT_2,
            f32::from_bits(std::f32::consts::FRAC_1_SQRT_2.to_bits() - 1),
            1.000_000_1,
            0.999_999_94,
            f32::MAX,
            -1.0,
            1.2e-38,
        ];
        avx2_lanes_match("log", log_avx2, log_f32, &specials);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn exp_avx512_matches_exp_f32_bit_for_bit() {
        // Where the result overflows, turns subnormal, and underflows.
        lanes_match("exp", exp_avx512, exp_f32, &[88.72, -87.34, -103.9]);
    }

    /// Both sides of the switch between the two forms at |x| = 0.625, and the tails.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn tanh_avx512_matches_tanh_f32_bit_for_bit() {
        let specials = [0.625, -0.625, 0.624_999_94, -0.624_999_94, 9.0, -45.0];
        lanes_match("tanh", tanh_avx512, tanh_f32, &specials);
    }

    /// Both sides of the clamp at 3.925, where the quotient comes out an ulp above 1, and the tails.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn erf_avx512_matches_erf_f32_bit_for_bit() {
        let clamp = ERF_CLAMP;
        let (below, above) = (
            f32::from_bits(clamp.to_bits() - 1),
            f32::from_bits(clamp.to_bits() + 1),
        );
        let specials = [
            clamp, -clamp, below, -below, above, -above, 3.92, -3.92, 4.0, -9.5,
        ];
        lanes_match("erf", erf_avx512, erf_f32, &specials);
    }

    /// Where erf's argument `x/√2` reaches its clamp, and the tails.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn gelu_avx512_matches_gelu_f32_bit_for_bit() {
        let clamp = ERF_CLAMP * std::f32::consts::SQRT_2;
        let (below, above) = (
            f32::from_bits(clamp.to_bits() - 1),
            f32::from_bits(clamp.to_bits() + 1),
        );
        let specials = [clamp, -clamp, below, -below, above, -above, 6.0, -13.5];
        lanes_match("gelu", gelu_avx512, gelu_f32, &specials);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn sqrt_avx512_matches_ieee_sqrt_bit_for_bit() {
        if !std::arch::is_x86_feature_detected!("avx512f") {
            return;
        }
        let check = |xs: &[f32]| {
            // SAFETY: AVX-512F is available (checked above).
            let got = unsafe { on_lanes(xs, |x| sqrt_avx512(x)) };
            for (&x, g) in xs.iter().zip(got) {
                assert_eq!(g.to_bits(), x.sqrt().to_bits(), "sqrt({x:e})");
            }
        };
        // Every special kind in one vector, and each alone among in-range lanes.
        let specials = [
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            -1.0,
            f32::from_bits(1),
            f32::MIN_POSITIVE,
            SQRT_FAST_MIN,
            f32::from_bits(SQRT_FAST_MIN.to_bits() - 1),
            f32::MAX,
            1.0,
            2.0,
            4.0,
            0.25,
        ];
        check(&specials);
        for special in specials {
            let mut xs = [3.0f32; 16];
            xs[7] = special;
            check(&xs);
        }
        // Every input in the two binades above the threshold (where the remainder is smallest
        // and an error would show first), and every 997th bit pattern of both signs.
        let low = SQRT_FAST_MIN.to_bits()..SQRT_FAST_MIN.to_bits() + (2 << 23);
        let bits: Vec<u32> = low.chain((0..=u32::MAX).step_by(997)).collect();
        for chunk in bits.chunks_exact(16) {
            check(&chunk.iter().map(|&b| f32::from_bits(b)).collect::<Vec<_>>());
        }
    }

    /// `lanes` against `scalar` over all 2^32 bit patterns, bit for bit (NaNs included).
    #[cfg(target_arch = "x86_64")]
    fn over_every_f32(
        name: &str,
        lanes: unsafe fn(std::arch::x86_64::__m512) -> std::arch::x86_64::__m512,
        scalar: fn(f32) -> f32,
    ) {
        if !std::arch::is_x86_feature_detected!("avx512f") {
            return;
        }
        let mut xs = [0f32; 16];
        for high in 0..=(u32::MAX >> 4) {
            for (lane, x) in xs.iter_mut().enumerate() {
                *x = f32::from_bits(high << 4 | lane as u32);
            }
            // SAFETY: AVX-512F is available (checked above).
            let got = unsafe { on_lanes(&xs, |x| lanes(x)) };
            for (&x, g) in xs.iter().zip(got) {
                assert_eq!(g.to_bits(), scalar(x).to_bits(), "{name}({x:e})");
            }
        }
    }

    /// [`sqrt_avx512_matches_ieee_sqrt_bit_for_bit`] over every f32 (12 s in a release build
    /// here; the log test below, whose scalar side runs one value at a time, 150 s):
    /// `cargo test --release --lib over_every_f32 -- --ignored`.
    #[cfg(target_arch = "x86_64")]
    #[test]
    #[ignore = "exhaustive; run by hand"]
    fn sqrt_avx512_over_every_f32() {
        over_every_f32("sqrt", sqrt_avx512, f32::sqrt);
    }

    /// [`log_avx512_matches_log_f32_bit_for_bit`] over every f32 (run as the one above).
    #[cfg(target_arch = "x86_64")]
    #[test]
    #[ignore = "exhaustive; run by hand"]
    fn log_avx512_over_every_f32() {
        over_every_f32("log", log_avx512, log_f32);
    }

    /// [`erf_avx512_matches_erf_f32_bit_for_bit`] over every f32 (run as the ones above).
    #[cfg(target_arch = "x86_64")]
    #[test]
    #[ignore = "exhaustive; run by hand"]
    fn erf_avx512_over_every_f32() {
        over_every_f32("erf", erf_avx512, erf_f32);
    }

    #[test]
    fn erf_within_its_bound() {
        // Tables (DLMF 7.2, 16 digits) check the f64 reference.
        for (x, want) in [
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (3.0, 0.999_977_909_503_001_4),
        ] {
            assert!((erf_f64(x) - want).abs() < 1e-15, "erf_f64({x})");
        }
        sweep(false, |x| {
            assert_within("erf", erf_f32, erf_f64, ERF_ULPS, x);
            // Never past 1, and odd.
            assert!(erf_f32(x) <= 1.0, "erf({x:e}) = {:e}", erf_f32(x));
            assert_eq!(erf_f32(-x).to_bits(), (-erf_f32(x)).to_bits(), "odd at {x:e}");
        });
        sweep(true, |x| assert_within("erf", erf_f32, erf_f64, ERF_ULPS, x));
        assert_eq!(erf_f32(0.0).to_bits(), 0);
        assert_eq!(erf_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(erf_f32(ERF_CLAMP), 1.0);
        assert_eq!(erf_f32(f32::INFINITY), 1.0);
        assert_eq!(erf_f32(f32::NEG_INFINITY), -1.0);
        assert!(erf_f32(f32::NAN).is_nan() && erf_f64(f64::NAN).is_nan());
    }

    /// [`erf_f32`]'s worst error in ulps over every positive f32 (negative ones mirror them), found
    /// by [`erf_over_every_f32`].
    const ERF_ULPS: f64 = 5.9;

    /// [`erf_f32`] against [`erf_f64`] over every positive f32, on two threads (about a minute in a
    /// release build here): `cargo test --release --lib erf_over_every_f32 -- --ignored --nocapture`.
    #[test]
    #[ignore = "exhaustive; run by hand"]
    fn erf_over_every_f32() {
        let worst = |half: u32| {
            let mut worst = (0.0, 0.0f32);
            for bits in (half..0x7F80_0000).step_by(2) {
                let x = f32::from_bits(bits);
                let error = ulps(erf_f32(x), erf_f64(x as f64));
                if error > worst.0 {
                    worst = (error, x);
                }
            }
            worst
        };
        let (a, b) = std::thread::scope(|s| {
            let other = s.spawn(|| worst(1));
            (worst(0), other.join().expect("no panic"))
        });
        let (error, x) = if a.0 >= b.0 { a } else { b };
        println!("erf: worst {error:.4} ulp, at {x:e}");
        assert!(error <= ERF_ULPS, "erf({x:e}) is {error} ulp off");
    }

    #[test]
    fn log_within_its_bound() {
        sweep(false, |x| assert_within("log", log_f32, f64::ln, 0.87, x));
        assert_eq!(log_f32(1.0), 0.0);
        assert_eq!(log_f32(0.0), f32::NEG_INFINITY);
        assert_eq!(log_f32(-0.0), f32::NEG_INFINITY);
        assert_eq!(log_f32(f32::INFINITY), f32::INFINITY);
        assert!(log_f32(-1.0).is_nan());
        assert!(log_f32(f32::NEG_INFINITY).is_nan());
        assert!(log_f32(f32::NAN).is_nan());
        // The smallest subnormal and the largest finite value.
        assert_eq!(log_f32(f32::from_bits(1)), (f32::from_bits(1) as f64).ln() as f32);
        assert_eq!(log_f32(f32::MAX), (f32::MAX as f64).ln() as f32);
    }

    #[test]
    fn tanh_within_its_bound() {
        sweep(false, |x| assert_within("tanh", tanh_f32, f64::tanh, 1.34, x));
        sweep(true, |x| assert_within("tanh", tanh_f32, f64::tanh, 1.34, x));
        assert_eq!(tanh_f32(0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(tanh_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(tanh_f32(f32::INFINITY), 1.0);
        assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
        assert_eq!(tanh_f32(20.0), 1.0);
        assert!(tanh_f32(f32::NAN).is_nan());
        // Odd: the two branches meet at 0.625 from both sides.
        for x in [1e-30f32, 0.1, 0.624_999_94, 0.625, 3.0] {
            assert_eq!(tanh_f32(-x), -tanh_f32(x));
        }
    }
}
