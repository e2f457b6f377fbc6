//! `sin` and `cos` for f32, computed in f64 from plain arithmetic so that AVX-512 lanes can
//! compute them 16 at a time. They were libm's `sinf` and `cosf`, a call per element: 7.2 ms per
//! 1M values on one thread here, against 0.48 for PyTorch's vectorized `sin`.
//!
//! Both become one odd series: `sin x = (-1)^k · sin r` with `r = x - kπ`, and `cos x =
//! sin(x + π/2) = (-1)^k · sin r` with `r = x - (k - ½)π`, `k` the nearest integer, so `|r| <=
//! π/2`. The reduction subtracts `m·π/2` (`m = 2k` or `2k - 1`) in three parts, the first two of
//! at most 33 significant bits, so that `m·P1` and `m·P2` are exact for `|m| < 2^20`. `sin r` is its Taylor series to
//! `r^17` (the rest is below 5e-14 of the result), summed by Horner in `r²` with fused
//! multiply-adds that round once on every CPU. The f64 result is within about 5e-14 relative, under
//! 1e-6 of an f32 ulp, so every f32 result is within 0.5001 ulp of the exact one (the tests check
//! it against f64's `sin` and `cos`). Over every f32 up to the limit (an ignored test, run by
//! hand): 0.5 ulp at worst for `sin`, 0.500_000_7 for `cos`.
//!
//! Beyond `|x| = 2^19` (inside the range where the reduction's products stay exact, with room to
//! spare), and for infinities and NaN,
//! both take libm's f64 `sin` and `cos` of the value and round that, one element at a time:
//! arguments that large are rare, and their reduction needs all of π's bits. `sin(-0) = -0`.
//!
//! The scalar form, the AVX-512 lanes (two halves of eight f64 lanes) and the AVX2 + FMA lanes
//! (two halves of four) run the same operations in the same order, so they agree bit for bit.
//! Per 1M values on one thread: `sin` 0.93 ms and `cos` 0.99 on the AVX-512 lanes (0.46 and 0.49
//! on two threads), 1.5 on the AVX2 ones; the scalar form alone, in a plain loop, 4.9 ms in an
//! AVX2 + FMA build, where the same loop over libm's `sinf` takes 3.3. A CPU without FMA runs the
//! scalar form with each fused multiply-add a libm call: 29 ms.

use std::f64::consts::FRAC_1_PI;

/// π/2 in three parts: `P1` and `P2` are π/2 and the rest cut to 33 significant bits (31 and 32
/// of them nonzero), `P3` the rest rounded to f64 (`P1 + P2 + P3` is about 1e-37 from π/2).
const P1: f64 = 1.570_796_326_734_125_6; // 0x1.921fb544p+0
const P2: f64 = 6.077_100_506_303_966e-11; // 0x1.0b4611a6p-34
const P3: f64 = 2.022_266_248_795_950_6e-21;

/// The largest `|x|` reduced here: `|m| <= 2·(2^19/π) + 1 < 2^19`, so `m·P1` and `m·P2` are
/// exact.
const LIMIT: f32 = 524_288.0;

/// `sin r / r - 1` as a series in `z = r²`, highest power first: `-z/3! + z²/5! - … + z⁸/17!`,
/// without its factor `z` (the coefficients of `z⁰ … z⁷` of `(sin r / r - 1) / z`).
const SERIES: [f64; 8] = [
    1.0 / 355_687_428_096_000.0,
    -1.0 / 1_307_674_368_000.0,
    1.0 / 6_227_020_800.0,
    -1.0 / 39_916_800.0,
    1.0 / 362_880.0,
    -1.0 / 5_040.0,
    1.0 / 120.0,
    -1.0 / 6.0,
];

/// Adding it to an integer `k` (`|k| < 2^51`) puts `k`'s low bits at the bottom of the mantissa.
const SHIFTER: f64 = 6_755_399_441_055_744.0; // 1.5 · 2^52

/// Whether `x` is reduced here: finite, and at most [`LIMIT`] in magnitude.
#[inline(always)]
fn reducible(x: f32) -> bool {
    x.abs() <= LIMIT
}

/// `sin x`, within 0.5001 ulp.
#[inline(always)]
pub(crate) fn sin_f32(x: f32) -> f32 {
    if !reducible(x) {
        return (x as f64).sin() as f32;
    }
    if x == 0.0 {
        return x; // keeps the sign of a zero
    }
    reduced(x, false)
}

/// `cos x`, within 0.5001 ulp.
#[inline(always)]
pub(crate) fn cos_f32(x: f32) -> f32 {
    if !reducible(x) {
        return (x as f64).cos() as f32;
    }
    reduced(x, true)
}

/// `sin x` or `cos x` for `|x| <= LIMIT` (see the module's docs).
#[inline(always)]
fn reduced(x: f32, cosine: bool) -> f32 {
    let x = x as f64;
    let t = x * FRAC_1_PI;
    let k = (if cosine { t + 0.5 } else { t }).round_ties_even();
    let m = if cosine { (k + k) - 1.0 } else { k + k };
    let r = ((x - m * P1) - m * P2) - m * P3;
    let z = r * r;
    let mut p = SERIES[0];
    for &c in &SERIES[1..] {
        p = p.mul_add(z, c);
    }
    let s = (r * z).mul_add(p, r);
    let odd = (k + SHIFTER).to_bits() & 1 == 1;
    (if odd { -s } else { s }) as f32
}

/// [`sin_f32`] (`cosine` false) or [`cos_f32`] over 16 lanes with AVX-512F: the same operations
/// in the same order on two halves of eight f64 lanes, so bit-identical. Lanes past [`LIMIT`],
/// infinite or NaN are then computed one at a time by the scalar form.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) fn sin_cos_avx512(x: std::arch::x86_64::__m512, cosine: bool) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    let c = _mm512_set1_pd;
    let reduced = |x: __m512d| -> __m256 {
        let t = _mm512_mul_pd(x, c(FRAC_1_PI));
        let t = if cosine { _mm512_add_pd(t, c(0.5)) } else { t };
        let k = _mm512_roundscale_pd::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(t);
        let m = _mm512_add_pd(k, k);
        let m = if cosine { _mm512_sub_pd(m, c(1.0)) } else { m };
        let r = _mm512_sub_pd(x, _mm512_mul_pd(m, c(P1)));
        let r = _mm512_sub_pd(r, _mm512_mul_pd(m, c(P2)));
        let r = _mm512_sub_pd(r, _mm512_mul_pd(m, c(P3)));
        let z = _mm512_mul_pd(r, r);
        let mut p = c(SERIES[0]);
        for &s in &SERIES[1..] {
            p = _mm512_fmadd_pd(p, z, c(s));
        }
        let s = _mm512_fmadd_pd(_mm512_mul_pd(r, z), p, r);
        // `k`'s low bit moved to the sign bit: the sign by its parity (in integer lanes: the
        // float xor needs AVX-512DQ).
        let flip = _mm512_slli_epi64::<63>(_mm512_castpd_si512(_mm512_add_pd(k, c(SHIFTER))));
        _mm512_cvtpd_ps(_mm512_castsi512_pd(_mm512_xor_si512(
            _mm512_castpd_si512(s),
            flip,
        )))
    };
    let upper = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(x)));
    let lo = reduced(_mm512_cvtps_pd(_mm512_castps512_ps256(x)));
    let hi = reduced(_mm512_cvtps_pd(upper));
    let mut result = _mm512_castpd_ps(_mm512_insertf64x4::<1>(
        _mm512_castpd256_pd512(_mm256_castps_pd(lo)),
        _mm256_castps_pd(hi),
    ));
    if !cosine {
        let zero = _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(x, _mm512_setzero_ps());
        result = _mm512_mask_mov_ps(result, zero, x);
    }
    let inside = _mm512_cmp_ps_mask::<_CMP_LE_OQ>(super::math::abs_avx512(x), _mm512_set1_ps(LIMIT));
    if inside != u16::MAX {
        let (mut values, mut out) = ([0f32; 16], [0f32; 16]);
        // SAFETY: both arrays hold 16 f32.
        unsafe {
            _mm512_storeu_ps(values.as_mut_ptr(), x);
            _mm512_storeu_ps(out.as_mut_ptr(), result);
        }
        redo_outside(&values, &mut out, inside.into(), cosine);
        // SAFETY: `out` holds 16 f32.
        result = unsafe { _mm512_loadu_ps(out.as_ptr()) };
    }
    result
}

/// [`sin_f32`] (`cosine` false) or [`cos_f32`] over 8 lanes with AVX2 and FMA: the same
/// operations in the same order as the scalar forms on two halves of four f64 lanes, so
/// bit-identical; lanes past [`LIMIT`], infinite or NaN are computed one at a time.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn sin_cos_avx2(x: std::arch::x86_64::__m256, cosine: bool) -> std::arch::x86_64::__m256 {
    use std::arch::x86_64::*;
    let c = _mm256_set1_pd;
    let reduced = |x: __m256d| -> __m128 {
        let t = _mm256_mul_pd(x, c(FRAC_1_PI));
        let t = if cosine { _mm256_add_pd(t, c(0.5)) } else { t };
        let k = _mm256_round_pd::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(t);
        let m = _mm256_add_pd(k, k);
        let m = if cosine { _mm256_sub_pd(m, c(1.0)) } else { m };
        let r = _mm256_sub_pd(x, _mm256_mul_pd(m, c(P1)));
        let r = _mm256_sub_pd(r, _mm256_mul_pd(m, c(P2)));
        let r = _mm256_sub_pd(r, _mm256_mul_pd(m, c(P3)));
        let z = _mm256_mul_pd(r, r);
        let mut p = c(SERIES[0]);
        for &s in &SERIES[1..] {
            p = _mm256_fmadd_pd(p, z, c(s));
        }
        let s = _mm256_fmadd_pd(_mm256_mul_pd(r, z), p, r);
        // `k`'s low bit moved to the sign bit: the sign by its parity.
        let low = _mm256_castpd_si256(_mm256_add_pd(k, c(SHIFTER)));
        let flip = _mm256_castsi256_pd(_mm256_slli_epi64::<63>(low));
        _mm256_cvtpd_ps(_mm256_xor_pd(s, flip))
    };
    let lo = reduced(_mm256_cvtps_pd(_mm256_castps256_ps128(x)));
    let hi = reduced(_mm256_cvtps_pd(_mm256_extractf128_ps::<1>(x)));
    let mut result = _mm256_set_m128(hi, lo);
    if !cosine {
        let zero = _mm256_cmp_ps::<_CMP_EQ_OQ>(x, _mm256_setzero_ps());
        result = _mm256_blendv_ps(result, x, zero);
    }
    let magnitude = _mm256_andnot_ps(_mm256_set1_ps(-0.0), x);
    let inside = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LE_OQ>(magnitude, _mm256_set1_ps(LIMIT)));
    if inside != 0xFF {
        let (mut values, mut out) = ([0f32; 8], [0f32; 8]);
        // SAFETY: both arrays hold 8 f32.
        unsafe {
            _mm256_storeu_ps(values.as_mut_ptr(), x);
            _mm256_storeu_ps(out.as_mut_ptr(), result);
        }
        redo_outside(&values, &mut out, inside as u32, cosine);
        // SAFETY: `out` holds 8 f32.
        result = unsafe { _mm256_loadu_ps(out.as_ptr()) };
    }
    result
}

/// The lanes' values past [`LIMIT`], infinite or NaN (bit `i` of `inside` clear), by the scalar
/// form: libm's f64 function, rounded.
#[cfg(target_arch = "x86_64")]
fn redo_outside(values: &[f32], out: &mut [f32], inside: u32, cosine: bool) {
    for (i, (o, &v)) in out.iter_mut().zip(values).enumerate() {
        if inside & (1 << i) == 0 {
            *o = if cosine { cos_f32(v) } else { sin_f32(v) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lazy::math::tests::ulps;

    fn check(x: f32) {
        for (name, got, want) in [
            ("sin", sin_f32(x), (x as f64).sin()),
            ("cos", cos_f32(x), (x as f64).cos()),
        ] {
            let error = ulps(got, want);
            assert!(
                error <= 0.5001,
                "{name}({x:e}) = {got:e}, exact {want:e}: {error} ulp"
            );
        }
    }

    /// Every 61st f32 of either sign up to the limit (20 million of each), and the ones nearest
    /// each multiple of π/2 there with their neighbours: where `r` is smallest and all the
    /// reduction's bits count.
    #[test]
    fn within_half_an_ulp_up_to_the_limit() {
        for bits in (0..=LIMIT.to_bits()).step_by(61) {
            let x = f32::from_bits(bits);
            check(x);
            check(-x);
        }
        let quarter_turns = (2.0 * LIMIT as f64 / std::f64::consts::PI) as u32;
        for j in 1..=quarter_turns {
            let nearest = (j as f64 * std::f64::consts::FRAC_PI_2) as f32;
            for step in -2i32..=2 {
                let x = f32::from_bits(nearest.to_bits().wrapping_add_signed(step));
                check(x);
                check(-x);
            }
        }
    }

    #[test]
    fn special_values() {
        assert_eq!(sin_f32(0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(sin_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(cos_f32(0.0), 1.0);
        assert_eq!(cos_f32(-0.0), 1.0);
        assert_eq!(sin_f32(1e-30), 1e-30);
        assert_eq!(sin_f32(-1e-40), -1e-40);
        for f in [sin_f32, cos_f32] {
            assert!(f(f32::INFINITY).is_nan() && f(f32::NEG_INFINITY).is_nan() && f(f32::NAN).is_nan());
        }
        // Past the limit, libm's f64 functions, rounded.
        for x in [
            LIMIT,
            f32::from_bits(LIMIT.to_bits() + 1),
            1e6,
            -3e9,
            f32::MAX,
            f32::MIN,
        ] {
            assert_eq!(sin_f32(x), (x as f64).sin() as f32, "sin({x:e})");
            assert_eq!(cos_f32(x), (x as f64).cos() as f32, "cos({x:e})");
        }
        // Exactly on either side of the limit, the two paths agree to their bounds.
        check(LIMIT);
        check(f32::from_bits(LIMIT.to_bits() - 1));
    }

    /// Every f32 of both signs up to the limit, against the bound and, 16 at a time, the AVX-512
    /// lanes against the scalar forms (330 s in a release build here):
    /// `cargo test --release --lib every_f32_to_the_limit -- --ignored`.
    #[cfg(target_arch = "x86_64")]
    #[test]
    #[ignore = "exhaustive; run by hand"]
    fn every_f32_to_the_limit() {
        use std::arch::x86_64::*;
        #[target_feature(enable = "avx512f")]
        fn sixteen(xs: &[f32; 16], cosine: bool) -> [f32; 16] {
            let mut out = [0f32; 16];
            // SAFETY: both hold 16 values.
            unsafe {
                _mm512_storeu_ps(
                    out.as_mut_ptr(),
                    sin_cos_avx512(_mm512_loadu_ps(xs.as_ptr()), cosine),
                )
            };
            out
        }
        let lanes = is_x86_feature_detected!("avx512f");
        let mut xs = [0f32; 16];
        for sign in [0, 1 << 31] {
            for high in 0..=(LIMIT.to_bits() >> 4) {
                for (lane, x) in xs.iter_mut().enumerate() {
                    *x = f32::from_bits(sign | high << 4 | lane as u32);
                }
                xs.iter().for_each(|&x| check(x));
                if !lanes {
                    continue;
                }
                for (cosine, scalar) in [(false, sin_f32 as fn(f32) -> f32), (true, cos_f32)] {
                    // SAFETY: AVX-512F is available (checked above).
                    let got = unsafe { sixteen(&xs, cosine) };
                    for (&x, g) in xs.iter().zip(got) {
                        assert_eq!(g.to_bits(), scalar(x).to_bits(), "cosine {cosine}: f({x:e})");
                    }
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn sin_cos_avx512_match_the_scalar_forms_bit_for_bit() {
        use crate::lazy::math::tests::lanes_match;
        let specials = [
            LIMIT,
            f32::from_bits(LIMIT.to_bits() + 1),
            -LIMIT,
            1e9,
            f32::MAX,
            1.570_796_4,
        ];
        // SAFETY (both): `lanes_match` calls them only where AVX-512F is available.
        lanes_match("sin", |x| unsafe { sin_cos_avx512(x, false) }, sin_f32, &specials);
        lanes_match("cos", |x| unsafe { sin_cos_avx512(x, true) }, cos_f32, &specials);
    }

    /// The AVX2 lanes against the scalar forms, bit for bit (any NaN for a NaN), on the specials
    /// and every 997th bit pattern of both signs.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn sin_cos_avx2_match_the_scalar_forms_bit_for_bit() {
        use std::arch::x86_64::*;
        if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")) {
            return;
        }
        #[target_feature(enable = "avx2,fma")]
        fn eight(xs: &[f32], cosine: bool) -> [f32; 8] {
            let mut out = [0f32; 8];
            // SAFETY: both hold 8 values.
            unsafe {
                _mm256_storeu_ps(
                    out.as_mut_ptr(),
                    sin_cos_avx2(_mm256_loadu_ps(xs.as_ptr()), cosine),
                )
            };
            out
        }
        let specials = [
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            1e-40,
            LIMIT,
            -1e9,
        ];
        let values: Vec<f32> = (specials.into_iter())
            .chain((0..=u32::MAX).step_by(997).map(f32::from_bits))
            .collect();
        for xs in values.chunks_exact(8) {
            for (cosine, scalar) in [(false, sin_f32 as fn(f32) -> f32), (true, cos_f32)] {
                // SAFETY: AVX2 and FMA are available (checked above).
                let got = unsafe { eight(xs, cosine) };
                for (&x, g) in xs.iter().zip(got) {
                    let want = scalar(x);
                    assert!(
                        g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
                        "cosine {cosine}: f({x:e}) = {g:e}, scalar {want:e}"
                    );
                }
            }
        }
    }
}
