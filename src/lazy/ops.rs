//! The primitive operations of the lazy engine and their scalar semantics, in f32 (the kernels) and
//! f64 (the reference evaluator). Both follow IEEE 754: NaN propagates through arithmetic, `max`,
//! `min` and reductions; comparisons with NaN are false; `log(0) = -inf`, `log(-1) = NaN`,
//! `recip(0) = inf`, `sqrt(-1) = NaN`.

use super::math;

/// An enum of operations, with `ALL`: every variant, in declaration order (so a new one cannot be
/// left out of the lists tests sweep).
macro_rules! op_enum {
    ($(#[$attr:meta])* pub enum $name:ident { $($(#[$doc:meta])* $variant:ident,)* }) => {
        $(#[$attr])*
        pub enum $name {
            $($(#[$doc])* $variant,)*
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];
        }
    };
}

op_enum! {
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
    /// the error function
    Erf,
    /// GELU, `x·Φ(x)` with `Φ(x) = erf(x/√2)/2 + 1/2`
    Gelu,
}
}

op_enum! {
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
    /// `a^b` (C99's `powf` special values; within 0.5001 ulp)
    Pow,
    /// `1.0` if `a < b`, else `0.0`
    CmpLt,
    /// `1.0` if `a <= b`, else `0.0`
    CmpLe,
    /// `1.0` if `a == b`, else `0.0`
    CmpEq,
}
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

/// The transcendental functions the kernels compute in vectorizable form (see `math`), and
/// the reference evaluator takes from the standard library in f64.
trait Transcendental {
    fn exp_fast(self) -> Self;
    fn ln_fast(self) -> Self;
    fn tanh_fast(self) -> Self;
    fn erf_fast(self) -> Self;
    fn pow_fast(self, exponent: Self) -> Self;
    fn sin_fast(self) -> Self;
    fn gelu_fast(self) -> Self;
    fn cos_fast(self) -> Self;
}

impl Transcendental for f32 {
    #[inline(always)]
    fn exp_fast(self) -> f32 {
        math::exp_f32(self)
    }
    #[inline(always)]
    fn ln_fast(self) -> f32 {
        math::log_f32(self)
    }
    #[inline(always)]
    fn tanh_fast(self) -> f32 {
        math::tanh_f32(self)
    }
    #[inline(always)]
    fn erf_fast(self) -> f32 {
        math::erf_f32(self)
    }
    #[inline(always)]
    fn pow_fast(self, exponent: f32) -> f32 {
        super::pow::pow_f32(self, exponent)
    }
    #[inline(always)]
    fn sin_fast(self) -> f32 {
        super::trig::sin_f32(self)
    }
    #[inline(always)]
    fn gelu_fast(self) -> f32 {
        math::gelu_f32(self)
    }
    #[inline(always)]
    fn cos_fast(self) -> f32 {
        super::trig::cos_f32(self)
    }
}

impl Transcendental for f64 {
    #[inline(always)]
    fn exp_fast(self) -> f64 {
        self.exp()
    }
    #[inline(always)]
    fn ln_fast(self) -> f64 {
        self.ln()
    }
    #[inline(always)]
    fn tanh_fast(self) -> f64 {
        self.tanh()
    }
    #[inline(always)]
    fn erf_fast(self) -> f64 {
        math::erf_f64(self)
    }
    #[inline(always)]
    fn pow_fast(self, exponent: f64) -> f64 {
        self.powf(exponent)
    }
    #[inline(always)]
    fn sin_fast(self) -> f64 {
        self.sin()
    }
    #[inline(always)]
    fn gelu_fast(self) -> f64 {
        self * ((self * std::f64::consts::FRAC_1_SQRT_2).erf_fast() * 0.5 + 0.5)
    }
    #[inline(always)]
    fn cos_fast(self) -> f64 {
        self.cos()
    }
}

macro_rules! scalar_semantics {
    ($float:ty, $unary:ident, $binary:ident, $reduce_step:ident) => {
        #[inline(always)]
        pub(crate) fn $unary(op: UnaryOp, x: $float) -> $float {
            match op {
                UnaryOp::Neg => -x,
                UnaryOp::Exp => x.exp_fast(),
                UnaryOp::Log => x.ln_fast(),
                UnaryOp::Sqrt => x.sqrt(),
                UnaryOp::Recip => 1.0 / x,
                UnaryOp::Sin => x.sin_fast(),
                UnaryOp::Cos => x.cos_fast(),
                UnaryOp::Abs => x.abs(),
                UnaryOp::Tanh => x.tanh_fast(),
                UnaryOp::Sigmoid => 1.0 / (1.0 + (-x).exp_fast()),
                UnaryOp::Erf => x.erf_fast(),
                UnaryOp::Gelu => x.gelu_fast(),
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
                BinaryOp::Pow => a.pow_fast(b),
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
