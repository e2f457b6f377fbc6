//! Running one instruction of a fused kernel's program over a block of values: the scalar
//! semantics of `ops`, and the same in AVX-512 or AVX2 + FMA lanes where the CPU has them.

use std::mem::MaybeUninit;

use super::kernel::Instr;
#[cfg(target_arch = "x86_64")]
use super::math;
use super::ops::{BinaryOp, UnaryOp, binary_f32, unary_f32};

#[inline(always)]
fn map1(out: &mut [MaybeUninit<f32>], a: &[f32], f: impl Fn(f32) -> f32) {
    for (o, &x) in out.iter_mut().zip(a) {
        o.write(f(x));
    }
}

#[inline(always)]
fn map2(out: &mut [MaybeUninit<f32>], a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> f32) {
    for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
        o.write(f(x, y));
    }
}

/// An instruction's operand values, in order (unused entries empty).
pub(crate) type Operands<'a> = [&'a [f32]; 3];

/// `instr`'s operands, looked up once: `value(v)` is value `v` over the block.
#[inline(always)]
pub(crate) fn operands<'a>(instr: &Instr, value: impl Fn(usize) -> &'a [f32]) -> Operands<'a> {
    match *instr {
        Instr::Unary(_, a) => [value(a), &[], &[]],
        Instr::Binary(_, a, b) => [value(a), value(b), &[]],
        Instr::Where(c, a, b) => [value(c), value(a), value(b)],
    }
}

/// Runs one instruction over a block, writing every element of `out` (each operand is as long),
/// with AVX-512 or AVX2 + FMA where the CPU has them (detected at run time). The versions round
/// identically: the compiler never fuses operations, and the math functions' explicit fused
/// multiply-adds round once on every version (see `math`).
pub(crate) fn execute(instr: &Instr, operands: &Operands, out: &mut [MaybeUninit<f32>]) {
    debug_assert!(
        operands[..instr.operands().1]
            .iter()
            .all(|v| v.len() == out.len()),
        "every operand of {instr:?} must cover the {} outputs",
        out.len()
    );
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F, checked just above.
            return unsafe { execute_avx512(instr, operands, out) };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU supports AVX2 and FMA, checked just above.
            return unsafe { execute_avx2(instr, operands, out) };
        }
    }
    execute_portable(instr, operands, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn execute_avx512(instr: &Instr, operands: &Operands, out: &mut [MaybeUninit<f32>]) {
    use std::arch::x86_64::*;
    match *instr {
        // Hand-written lanes where the compiler cannot vectorize the scalar form as well; each
        // is bit-identical to it (see `math` and `pow`).
        Instr::Unary(op @ UnaryOp::Exp, _) => unary_avx512(op, operands[0], out, |x| math::exp_avx512(x)),
        Instr::Unary(op @ UnaryOp::Log, _) => unary_avx512(op, operands[0], out, |x| math::log_avx512(x)),
        Instr::Unary(op @ UnaryOp::Sigmoid, _) => {
            unary_avx512(op, operands[0], out, |x| math::sigmoid_avx512(x))
        }
        Instr::Unary(op @ UnaryOp::Sqrt, _) => unary_avx512(op, operands[0], out, |x| math::sqrt_avx512(x)),
        Instr::Unary(op @ UnaryOp::Erf, _) => unary_avx512(op, operands[0], out, |x| math::erf_avx512(x)),
        Instr::Unary(op @ UnaryOp::Gelu, _) => unary_avx512(op, operands[0], out, |x| math::gelu_avx512(x)),
        Instr::Unary(op @ UnaryOp::Tanh, _) => unary_avx512(op, operands[0], out, |x| math::tanh_avx512(x)),
        Instr::Unary(op @ UnaryOp::Sin, _) => {
            unary_avx512(op, operands[0], out, |x| super::trig::sin_cos_avx512(x, false))
        }
        Instr::Unary(op @ UnaryOp::Cos, _) => {
            unary_avx512(op, operands[0], out, |x| super::trig::sin_cos_avx512(x, true))
        }
        // SAFETY (the closure): each chunk holds 16 values, and so does the output at `o`.
        Instr::Binary(BinaryOp::Pow, _, _) => {
            pow_in_chunks::<16>(operands[0], operands[1], out, |x, y, o| unsafe {
                let (x, y) = (_mm512_loadu_ps(x.as_ptr()), _mm512_loadu_ps(y.as_ptr()));
                _mm512_storeu_ps(o, super::pow::pow_avx512(x, y));
            })
        }
        _ => execute_portable(instr, operands, out),
    }
}

/// A unary op 16 lanes at a time with AVX-512: `lanes` on each whole chunk, `unary_f32` (which
/// `lanes` must match bit for bit) on the tail.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn unary_avx512(
    op: UnaryOp,
    a: &[f32],
    out: &mut [MaybeUninit<f32>],
    lanes: impl Fn(std::arch::x86_64::__m512) -> std::arch::x86_64::__m512,
) {
    use std::arch::x86_64::*;
    let mut outs = out.chunks_exact_mut(16);
    let mut ins = a.chunks_exact(16);
    for (o, x) in (&mut outs).zip(&mut ins) {
        // SAFETY: both chunks hold 16 values, and `MaybeUninit<f32>` has `f32`'s layout.
        unsafe { _mm512_storeu_ps(o.as_mut_ptr().cast(), lanes(_mm512_loadu_ps(x.as_ptr()))) };
    }
    map1(outs.into_remainder(), ins.remainder(), |x| unary_f32(op, x));
}

/// `a^b` over chunks of `N` values by `lanes` (given a chunk of each operand and where to write
/// its powers), the scalar form on the tail (see `pow`). Inlined into each instruction set's
/// version, so the tail's fused multiply-adds are instructions there.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn pow_in_chunks<const N: usize>(
    a: &[f32],
    b: &[f32],
    out: &mut [MaybeUninit<f32>],
    lanes: impl Fn(&[f32], &[f32], *mut f32),
) {
    let mut outs = out.chunks_exact_mut(N);
    let (mut xs, mut ys) = (a.chunks_exact(N), b.chunks_exact(N));
    for ((o, x), y) in (&mut outs).zip(&mut xs).zip(&mut ys) {
        lanes(x, y, o.as_mut_ptr().cast());
    }
    let tail = outs
        .into_remainder()
        .iter_mut()
        .zip(xs.remainder())
        .zip(ys.remainder());
    for ((o, &x), &y) in tail {
        o.write(super::pow::pow_f32(x, y));
    }
}

/// Sine or cosine over AVX2 + FMA lanes, eight values at a time, the scalar form on the tail
/// (compiled here, so its fused multiply-adds are instructions).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn sin_cos_avx2_over(a: &[f32], out: &mut [MaybeUninit<f32>], cosine: bool) {
    use std::arch::x86_64::*;
    let mut outs = out.chunks_exact_mut(8);
    let mut xs = a.chunks_exact(8);
    for (o, x) in (&mut outs).zip(&mut xs) {
        // SAFETY: both chunks hold 8 values, and `MaybeUninit<f32>` has `f32`'s layout.
        unsafe {
            let y = super::trig::sin_cos_avx2(_mm256_loadu_ps(x.as_ptr()), cosine);
            _mm256_storeu_ps(o.as_mut_ptr().cast(), y);
        }
    }
    for (o, &x) in outs.into_remainder().iter_mut().zip(xs.remainder()) {
        o.write(if cosine {
            super::trig::cos_f32(x)
        } else {
            super::trig::sin_f32(x)
        });
    }
}

/// An op built on `e^x` over AVX2 + FMA lanes: `in_range` on a run of 128 values wholly below
/// [`math::EXP_IN_RANGE`] in magnitude (its exponentials scaled in one step), `lanes` on any other
/// vector, `scalar` on the tail; all three give the same bits.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
fn exp_like_avx2_over(
    a: &[f32],
    out: &mut [MaybeUninit<f32>],
    in_range: impl Fn(std::arch::x86_64::__m256) -> std::arch::x86_64::__m256,
    lanes: impl Fn(std::arch::x86_64::__m256) -> std::arch::x86_64::__m256,
    scalar: impl Fn(f32) -> f32,
) {
    use std::arch::x86_64::*;
    const RUN: usize = 128;
    // `$f` over each vector of `$x` into `$o` (as long).
    macro_rules! over {
        ($x:expr, $o:expr, $f:expr) => {
            for (o, x) in $o.chunks_exact_mut(8).zip($x.chunks_exact(8)) {
                // SAFETY: both hold 8 values, and `MaybeUninit<f32>` has `f32`'s layout.
                unsafe { _mm256_storeu_ps(o.as_mut_ptr().cast(), $f(_mm256_loadu_ps(x.as_ptr()))) };
            }
        };
    }
    let mut outs = out.chunks_exact_mut(RUN);
    let mut runs = a.chunks_exact(RUN);
    for (o, x) in (&mut outs).zip(&mut runs) {
        // SAFETY: the run holds `RUN` values, a multiple of 8.
        if unsafe { math::all_below_avx2(x.as_ptr(), RUN, math::EXP_IN_RANGE) } {
            over!(x, o, in_range);
        } else {
            over!(x, o, lanes);
        }
    }
    let (outs, xs) = (outs.into_remainder(), runs.remainder());
    let whole = xs.len() - xs.len() % 8;
    let (outs, tail_out) = outs.split_at_mut(whole);
    over!(xs[..whole], outs, lanes);
    map1(tail_out, &xs[whole..], scalar);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn execute_avx2(instr: &Instr, operands: &Operands, out: &mut [MaybeUninit<f32>]) {
    use std::arch::x86_64::*;
    match *instr {
        Instr::Unary(op @ UnaryOp::Exp, _) => exp_like_avx2_over(
            operands[0],
            out,
            |x| math::exp_avx2_in_range(x),
            |x| math::exp_avx2(x),
            |x| unary_f32(op, x),
        ),
        Instr::Unary(op @ UnaryOp::Sigmoid, _) => exp_like_avx2_over(
            operands[0],
            out,
            |x| math::sigmoid_avx2(x, math::exp_avx2_in_range),
            |x| math::sigmoid_avx2(x, math::exp_avx2),
            |x| unary_f32(op, x),
        ),
        Instr::Unary(UnaryOp::Sin, _) => sin_cos_avx2_over(operands[0], out, false),
        Instr::Unary(UnaryOp::Cos, _) => sin_cos_avx2_over(operands[0], out, true),
        // SAFETY (the closure): each chunk holds 8 values, and so does the output at `o`.
        Instr::Binary(BinaryOp::Pow, _, _) => {
            pow_in_chunks::<8>(operands[0], operands[1], out, |x, y, o| unsafe {
                let (x, y) = (_mm256_loadu_ps(x.as_ptr()), _mm256_loadu_ps(y.as_ptr()));
                _mm256_storeu_ps(o, super::pow::pow_avx2(x, y));
            })
        }
        _ => execute_portable(instr, operands, out),
    }
}

/// Each operation gets its own loop so the compiler can vectorize it.
#[inline(always)]
fn execute_portable(instr: &Instr, operands: &Operands, out: &mut [MaybeUninit<f32>]) {
    let [a, b, _] = *operands;
    macro_rules! unary {
        ($a:expr, $($op:ident),*) => {
            match instr {
                $(Instr::Unary(UnaryOp::$op, _) => map1(out, $a, |x| unary_f32(UnaryOp::$op, x)),)*
                _ => unreachable!(),
            }
        };
    }
    macro_rules! binary {
        ($a:expr, $b:expr, $($op:ident),*) => {
            match instr {
                $(Instr::Binary(BinaryOp::$op, _, _) => map2(out, $a, $b, |x, y| binary_f32(BinaryOp::$op, x, y)),)*
                _ => unreachable!(),
            }
        };
    }
    match *instr {
        // Sine and cosine in loops of their own, for the reason the power has one (below).
        Instr::Unary(UnaryOp::Sin, _) => {
            for (o, &x) in out.iter_mut().zip(a) {
                o.write(super::trig::sin_f32(x));
            }
        }
        Instr::Unary(UnaryOp::Cos, _) => {
            for (o, &x) in out.iter_mut().zip(a) {
                o.write(super::trig::cos_f32(x));
            }
        }
        Instr::Unary(..) => unary!(a, Neg, Exp, Log, Sqrt, Recip, Abs, Tanh, Sigmoid, Relu, Erf, Gelu),
        // The power in a loop of its own: through `map2`'s closure the compiler kept it out of
        // line, built without FMA even in the AVX2 + FMA version (each `mul_add` a libm call,
        // 73 ms per 1M values).
        Instr::Binary(BinaryOp::Pow, _, _) => {
            for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
                o.write(super::pow::pow_f32(x, y));
            }
        }
        Instr::Binary(..) => binary!(a, b, Add, Sub, Mul, Div, Max, Min, CmpLt, CmpLe, CmpEq),
        Instr::Where(..) => {
            let [condition, chosen, otherwise] = *operands;
            for (((o, &c), &x), &y) in out.iter_mut().zip(condition).zip(chosen).zip(otherwise) {
                o.write(if c != 0.0 { x } else { y });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_execute_version_matches_the_scalar_semantics_bit_for_bit() {
        // Each instruction-set version this CPU can run (the AVX-512 build with its hand-written
        // lanes, the AVX2 + FMA build with those of exp, pow, sin and cos, the baseline build) must
        // give the scalar function's bits, which the test computes in a baseline build (libm's
        // fmaf for the fused multiply-adds). Inputs: IEEE specials, every binade of both signs,
        // and two ramps, the second within exp's one-step range over whole runs of 128; the
        // length leaves a tail after whole 16-lane chunks.
        let specials = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            88.7,
            -87.4,
            -103.9,
            1e-40,
            f32::INFINITY,
            f32::NAN,
        ];
        let a: Vec<f32> = (specials.into_iter())
            .chain((0..4099u32).map(|i| f32::from_bits(i.wrapping_mul(1_048_573))))
            .chain((0..67).map(|i| (i as f32 - 33.0) * 0.37))
            .chain((0..403).map(|i| (i as f32 - 201.0) * 0.427))
            .collect();
        let b: Vec<f32> = a.iter().rev().copied().collect();
        let unary = [
            UnaryOp::Neg,
            UnaryOp::Exp,
            UnaryOp::Log,
            UnaryOp::Sqrt,
            UnaryOp::Tanh,
            UnaryOp::Sigmoid,
            UnaryOp::Sin,
            UnaryOp::Cos,
            UnaryOp::Gelu,
        ];
        let binary = [
            BinaryOp::Add,
            BinaryOp::Div,
            BinaryOp::Max,
            BinaryOp::CmpLe,
            BinaryOp::Pow,
        ];
        let instrs: Vec<Instr> = (unary.iter().map(|&op| Instr::Unary(op, 0)))
            .chain(binary.iter().map(|&op| Instr::Binary(op, 0, 1)))
            .chain([Instr::Where(1, 0, 1)])
            .collect();
        let value = |v: usize| if v == 0 { &a[..] } else { &b[..] };
        #[cfg_attr(
            not(target_arch = "x86_64"),
            allow(unused_mut, reason = "x86-64 adds versions")
        )]
        let mut versions = vec!["baseline", "dispatched"];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                versions.push("avx512");
            }
            if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                versions.push("avx2");
            }
        }
        for version in versions {
            for instr in &instrs {
                let operands = operands(instr, value);
                let mut out = vec![MaybeUninit::uninit(); a.len()];
                match version {
                    "baseline" => execute_portable(instr, &operands, &mut out),
                    "dispatched" => execute(instr, &operands, &mut out),
                    // SAFETY: each version was listed only if the CPU has its features.
                    #[cfg(target_arch = "x86_64")]
                    "avx512" => unsafe { execute_avx512(instr, &operands, &mut out) },
                    #[cfg(target_arch = "x86_64")]
                    "avx2" => unsafe { execute_avx2(instr, &operands, &mut out) },
                    _ => unreachable!(),
                }
                for (i, o) in out.iter().enumerate() {
                    // SAFETY: every version writes every element.
                    let got = unsafe { o.assume_init() };
                    let want = match *instr {
                        Instr::Unary(op, _) => unary_f32(op, a[i]),
                        Instr::Binary(op, _, _) => binary_f32(op, a[i], b[i]),
                        Instr::Where(..) => {
                            if b[i] != 0.0 {
                                a[i]
                            } else {
                                b[i]
                            }
                        }
                    };
                    let same = got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan());
                    assert!(
                        same,
                        "{version} {instr:?} of {:e}: {got:e}, scalar {want:e}",
                        a[i]
                    );
                }
            }
        }
    }
}
