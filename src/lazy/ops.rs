//! The primitive operations of the lazy engine and their scalar semantics, in f32 (the kernels) and
//! f64 (the reference evaluator). Both follow IEEE 754: NaN propagates through arithmetic, `max`,
//! `min` and reductions; comparisons with NaN are false; `log(0) = -inf`, `log(-1) = NaN`,
//! `recip(0) = inf`, `sqrt(-1) = NaN`.

/// Elementwise operations of one input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `-x`
    Neg,
    /// `e^x`
    Exp,
    /// natural logarithm
    Log,
    /// square root
    Sqrt,
    /// `1 / x`
    Recip,
    /// sine (radians)
    Sin,
    /// cosine (radians)
    Cos,
    /// `|x|`
    Abs,
    /// hyperbolic tangent
    Tanh,
    /// `1 / (1 + e^-x)`
    Sigmoid,
    /// `max(x, 0)`; NaN stays NaN
    Relu,
}

/// Elementwise operations of two inputs of the same shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `a / b`
    Div,
    /// the larger; NaN if either is NaN
    Max,
    /// the smaller; NaN if either is NaN
    Min,
    /// `a^b` (`powf`)
    Pow,
    /// `1.0` if `a < b`, else `0.0`
    CmpLt,
    /// `1.0` if `a <= b`, else `0.0`
    CmpLe,
    /// `1.0` if `a == b`, else `0.0`
    CmpEq,
}

/// Reductions over a set of axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum; 0 over an empty axis.
    Sum,
    /// Maximum; `-inf` over an empty axis; NaN if any element is NaN.
    Max,
    /// Minimum; `+inf` over an empty axis; NaN if any element is NaN.
    Min,
}

/// `e^x` in f32 from plain arithmetic, so a loop over it vectorizes (libm's `expf` is a call per
/// element). Cody–Waite reduction `x = n·ln 2 + r`, `|r| <= ln 2 / 2`, Cephes' degree-7
/// polynomial for `e^r`, and `2^n` applied as two exact power-of-two factors so subnormal results
/// round once. Checked over every f32 in [-87.3, 88.7] against f64: within 1 ulp (0.99), like
/// libm. `exp(±inf) = inf, 0`; NaN stays NaN; beyond ±88.7 it overflows to inf or underflows to 0.
#[inline(always)]
pub(crate) fn exp_f32(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split so that n·LN2_HI is exact (9 significant bits) and LN2_HI + LN2_LO = ln 2.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // 1.5·2^23: adding it rounds to an integer, which then sits in the low mantissa bits.
    const SHIFTER: f32 = 12_582_912.0;
    // e^x is inf or 0 in f32 well inside these; clamping keeps 2^n's exponents in range (a NaN
    // fails both comparisons and passes through).
    let x = x.clamp(-110.0, 100.0);
    let t = x * LOG2E + SHIFTER;
    let n = t - SHIFTER;
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = ((((1.987_569_2e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 1.666_666_5e-1)
        * r
        + 0.5;
    let e = p * (r * r) + r + 1.0;
    // n as an integer, split in two halves, each a normal power of two for |n| <= 160.
    let ni = (t.to_bits() as i32).wrapping_sub(0x4B40_0000);
    let n1 = ni >> 1;
    let n2 = ni.wrapping_sub(n1);
    let s1 = f32::from_bits((n1.wrapping_add(127) as u32).wrapping_shl(23));
    let s2 = f32::from_bits((n2.wrapping_add(127) as u32).wrapping_shl(23));
    e * s1 * s2
}

trait Exp {
    fn exp_fast(self) -> Self;
}

impl Exp for f32 {
    #[inline(always)]
    fn exp_fast(self) -> f32 {
        exp_f32(self)
    }
}

impl Exp for f64 {
    #[inline(always)]
    fn exp_fast(self) -> f64 {
        self.exp()
    }
}

macro_rules! scalar_semantics {
    ($float:ty, $unary:ident, $binary:ident, $reduce_step:ident) => {
        #[inline(always)]
        pub(crate) fn $unary(op: UnaryOp, x: $float) -> $float {
            match op {
                UnaryOp::Neg => -x,
                UnaryOp::Exp => x.exp_fast(),
                UnaryOp::Log => x.ln(),
                UnaryOp::Sqrt => x.sqrt(),
                UnaryOp::Recip => 1.0 / x,
                UnaryOp::Sin => x.sin(),
                UnaryOp::Cos => x.cos(),
                UnaryOp::Abs => x.abs(),
                UnaryOp::Tanh => x.tanh(),
                UnaryOp::Sigmoid => 1.0 / (1.0 + (-x).exp_fast()),
                UnaryOp::Relu => {
                    if x < 0.0 {
                        0.0
                    } else {
                        x
                    }
                }
            }
        }

        #[inline(always)]
        pub(crate) fn $binary(op: BinaryOp, a: $float, b: $float) -> $float {
            match op {
                BinaryOp::Add => a + b,
                BinaryOp::Sub => a - b,
                BinaryOp::Mul => a * b,
                BinaryOp::Div => a / b,
                BinaryOp::Max => {
                    if a > b || a.is_nan() {
                        a
                    } else {
                        b
                    }
                }
                BinaryOp::Min => {
                    if a < b || a.is_nan() {
                        a
                    } else {
                        b
                    }
                }
                BinaryOp::Pow => a.powf(b),
                BinaryOp::CmpLt => (a < b) as u8 as $float,
                BinaryOp::CmpLe => (a <= b) as u8 as $float,
                BinaryOp::CmpEq => (a == b) as u8 as $float,
            }
        }

        /// One step of a reduction: folds `x` into the accumulator `acc`.
        #[inline(always)]
        pub(crate) fn $reduce_step(op: ReduceOp, acc: $float, x: $float) -> $float {
            match op {
                ReduceOp::Sum => acc + x,
                ReduceOp::Max => $binary(BinaryOp::Max, acc, x),
                ReduceOp::Min => $binary(BinaryOp::Min, acc, x),
            }
        }
    };
}

scalar_semantics!(f32, unary_f32, binary_f32, reduce_step_f32);
scalar_semantics!(f64, unary_f64, binary_f64, reduce_step_f64);

impl ReduceOp {
    /// The value of the reduction over no elements.
    pub fn identity(self) -> f32 {
        match self {
            ReduceOp::Sum => 0.0,
            ReduceOp::Max => f32::NEG_INFINITY,
            ReduceOp::Min => f32::INFINITY,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_values() {
        assert_eq!(unary_f32(UnaryOp::Neg, 2.0), -2.0);
        assert_eq!(unary_f32(UnaryOp::Relu, -3.0), 0.0);
        assert_eq!(unary_f32(UnaryOp::Sigmoid, 0.0), 0.5);
        assert_eq!(binary_f32(BinaryOp::Pow, 2.0, 10.0), 1024.0);
        assert_eq!(binary_f32(BinaryOp::CmpLe, 1.0, 1.0), 1.0);
        assert_eq!(reduce_step_f32(ReduceOp::Min, 3.0, -1.0), -1.0);
    }

    #[test]
    fn exp_within_one_ulp() {
        // A sample of the range (every f32 was checked once, offline): 1 ulp of the f64 result.
        let mut x = -87.3f32;
        while x < 88.7 {
            let exact = (x as f64).exp();
            let rounded = exact as f32;
            let ulp = (f32::from_bits(rounded.to_bits() + 1) - rounded) as f64;
            let got = exp_f32(x) as f64;
            assert!((got - exact).abs() <= ulp, "exp({x}) = {got}, exact {exact}");
            x += 0.000_731;
        }
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

    #[test]
    fn ieee_edges() {
        assert_eq!(unary_f32(UnaryOp::Log, 0.0), f32::NEG_INFINITY);
        assert!(unary_f32(UnaryOp::Log, -1.0).is_nan());
        assert_eq!(unary_f32(UnaryOp::Recip, 0.0), f32::INFINITY);
        assert!(unary_f32(UnaryOp::Relu, f32::NAN).is_nan());
        assert!(binary_f32(BinaryOp::Max, f32::NAN, 1.0).is_nan());
        assert!(binary_f32(BinaryOp::Max, 1.0, f32::NAN).is_nan());
        assert!(binary_f32(BinaryOp::Min, 1.0, f32::NAN).is_nan());
        assert_eq!(binary_f32(BinaryOp::CmpEq, f32::NAN, f32::NAN), 0.0);
        assert_eq!(unary_f32(UnaryOp::Sigmoid, -1000.0), 0.0);
        assert_eq!(unary_f32(UnaryOp::Sigmoid, 1000.0), 1.0);
    }
}
