//! Elementwise operations: unary math, broadcasting binary ops (as methods and operators, with
//! tensors and with `f32`), comparisons and `where`.
//!
//! Broadcasting follows numpy with shapes as types: a mismatch of static dims does not compile.
//! Two run-time (`usize`) dims of different sizes are a programmer error the types cannot catch:
//! operators panic naming both shapes, and every method has a `try_` form returning the error.

use std::ops::{Add, Div, Mul, Neg, Sub};

use super::{GradMode, Join, Tensor};
use crate::autograd::Var;
use crate::error::{Result, or_panic};
use crate::lazy::{BinaryOp, LazyBuffer, UnaryOp};
use crate::shape::runtime::checked_numel;
use crate::shape::{BroadcastShape, BroadcastTo, Shape};

macro_rules! unary_methods {
    ($($(#[$doc:meta])* $name:ident => $op:ident;)*) => {
        impl<S: Shape, G: GradMode> Tensor<S, G> {
            $(
                $(#[$doc])*
                pub fn $name(&self) -> Self {
                    Tensor::from_var(self.shape, self.var.unary(UnaryOp::$op))
                }
            )*
        }
    };
}

unary_methods! {
    /// `-x`
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([1.0, -2.0]).neg().to_array(), [-1.0, 2.0]);
    /// ```
    neg => Neg;
    /// `e^x`
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([0.0]).exp().to_array(), [1.0]);
    /// ```
    exp => Exp;
    /// Natural logarithm (`log(0) = -inf`, negative → NaN).
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([1.0]).log().to_array(), [0.0]);
    /// ```
    log => Log;
    /// Square root (negative → NaN).
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([9.0]).sqrt().to_array(), [3.0]);
    /// ```
    sqrt => Sqrt;
    /// `1 / x`
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([4.0]).recip().to_array(), [0.25]);
    /// ```
    recip => Recip;
    /// Sine (radians), within 0.5001 ulp (see `cos`).
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([0.0]).sin().to_array(), [0.0]);
    /// ```
    sin => Sin;
    /// Cosine (radians), within 0.5001 ulp: computed in f64 and rounded once, vectorized, up to
    /// `|x| = 2^19`; beyond it (and for ±inf and NaN) libm's f64 function of the value, rounded.
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([0.0]).cos().to_array(), [1.0]);
    /// ```
    cos => Cos;
    /// `|x|` (gradient 0 at 0).
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([-3.0]).abs().to_array(), [3.0]);
    /// ```
    abs => Abs;
    /// Hyperbolic tangent.
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([0.0]).tanh().to_array(), [0.0]);
    /// ```
    tanh => Tanh;
    /// `1 / (1 + e^-x)`
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([0.0]).sigmoid().to_array(), [0.5]);
    /// ```
    sigmoid => Sigmoid;
    /// `max(x, 0)` (gradient 0 at 0, and at NaN, where PyTorch passes the gradient through).
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([-1.0, 2.0]).relu().to_array(), [0.0, 2.0]);
    /// ```
    relu => Relu;
}

impl<S: Shape, G: GradMode> Tensor<S, G> {
    /// `x * x`
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([3.0]).square().to_array(), [9.0]);
    /// ```
    pub fn square(&self) -> Self {
        Tensor::from_var(self.shape, self.var.binary(BinaryOp::Mul, &self.var))
    }

    /// `x ^ exponent`. As in PyTorch, the exponents 2, 3, -2, 0.5, -0.5 and -1 are computed as
    /// `x·x`, `x·x·x`, `1/(x·x)`, `√x`, `1/√x` and `1/x`, and 1 and 0 give `x` and ones (a few
    /// instructions each, where the general power takes about 190 per 16 values), so a squared
    /// error costs what `square` does, backward too. Their results follow those formulas:
    /// `(-0)^0.5` is `-0` and `(-∞)^0.5` NaN, as PyTorch gives, where C99's `pow` gives `+0` and
    /// `+∞`; `x^3` can differ from the correctly rounded power in the last bit. Other exponents
    /// take [`Tensor::pow`]'s general power. The gradient is PyTorch's too, `g·(e·x^(e−1))` with
    /// the power computed the same way, and 0 for `e = 0`.
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([2.0]).powf(3.0).to_array(), [8.0]);
    /// assert_eq!(Tensor::from([-3.0, 4.0]).powf(2.0).to_array(), [9.0, 16.0]);
    /// assert_eq!(Tensor::from([4.0]).powf(-0.5).to_array(), [0.5]);
    /// ```
    pub fn powf(&self, exponent: f32) -> Self {
        Tensor::from_var(self.shape, self.var.powf(exponent))
    }

    /// `op(self, c)` (or `op(c, self)` when `scalar_first`), with `c` broadcast.
    fn scalar_op(&self, op: BinaryOp, c: f32, scalar_first: bool) -> Self {
        let constant = Var::untracked(LazyBuffer::full(&self.dims(), c));
        let var = if scalar_first {
            constant.binary(op, &self.var)
        } else {
            self.var.binary(op, &constant)
        };
        Tensor::from_var(self.shape, var)
    }

    /// `self op rhs` with both broadcast to their common shape.
    fn broadcast_op<S2, G2>(&self, op: BinaryOp, rhs: &Tensor<S2, G2>) -> Result<Tensor<S::Output, G::Out>>
    where
        S: BroadcastShape<S2>,
        S2: Shape,
        G: Join<G2>,
        G2: GradMode,
    {
        let shape = self.shape.broadcast_shape(&rhs.shape)?;
        let dims = shape.dims();
        // Two shapes that each fit can broadcast to one that does not: `(2^32, One) + (One, 2^32)`.
        checked_numel(&dims)?;
        let var = self.var.expand(&dims).binary(op, &rhs.var.expand(&dims));
        Ok(Tensor::from_var(shape, var))
    }

    /// A comparison: 1.0 where it holds, else 0.0; never tracked. `swap` compares `rhs` to `self`.
    fn compare<S2, G2>(&self, op: BinaryOp, rhs: &Tensor<S2, G2>, swap: bool) -> Result<Tensor<S::Output>>
    where
        S: BroadcastShape<S2>,
        S2: Shape,
        G2: GradMode,
    {
        let shape = self.shape.broadcast_shape(&rhs.shape)?;
        let dims = shape.dims();
        checked_numel(&dims)?;
        let (a, b) = (self.var.detach().expand(&dims), rhs.var.detach().expand(&dims));
        let var = if swap { b.binary(op, &a) } else { a.binary(op, &b) };
        Ok(Tensor::from_var(shape, var))
    }
}

macro_rules! broadcast_methods {
    ($($(#[$doc:meta])* $name:ident / $try_name:ident => $op:ident;)*) => {
        impl<S: Shape, G: GradMode> Tensor<S, G> {
            $(
                $(#[$doc])*
                ///
                /// Panics if two run-time (`usize`) dims differ; see the `try_` form.
                #[track_caller]
                pub fn $name<S2: Shape, G2: GradMode>(&self, rhs: &Tensor<S2, G2>) -> Tensor<S::Output, G::Out>
                where
                    S: BroadcastShape<S2>,
                    G: Join<G2>,
                {
                    or_panic(self.$try_name(rhs))
                }

                /// The fallible form: an error naming both shapes if run-time dims differ, or
                /// [`Error::ShapeOverflow`](crate::Error::ShapeOverflow) if the broadcast shape's
                /// element count does not fit in `usize`.
                pub fn $try_name<S2: Shape, G2: GradMode>(&self, rhs: &Tensor<S2, G2>) -> Result<Tensor<S::Output, G::Out>>
                where
                    S: BroadcastShape<S2>,
                    G: Join<G2>,
                {
                    self.broadcast_op(BinaryOp::$op, rhs).map_err(|e| e.in_op(stringify!($name)))
                }
            )*
        }
    };
}

broadcast_methods! {
    /// `self + rhs`, broadcasting.
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// let m = Tensor::from([[1.0, 2.0], [3.0, 4.0]]);
    /// assert_eq!(m.add(&Tensor::from([10.0, 20.0])).to_array(), [[11.0, 22.0], [13.0, 24.0]]);
    /// ```
    add / try_add => Add;
    /// `self - rhs`, broadcasting.
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([3.0]).sub(&Tensor::from(1.0)).to_array(), [2.0]);
    /// ```
    sub / try_sub => Sub;
    /// `self * rhs`, broadcasting.
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([3.0]).mul(&Tensor::from([2.0])).to_array(), [6.0]);
    /// ```
    mul / try_mul => Mul;
    /// `self / rhs`, broadcasting.
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([3.0]).div(&Tensor::from([2.0])).to_array(), [1.5]);
    /// ```
    div / try_div => Div;
    /// The larger of each pair (NaN if either is NaN, with no gradient to either; ties share the
    /// gradient).
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([1.0, 5.0]).maximum(&Tensor::from(2.0)).to_array(), [2.0, 5.0]);
    /// ```
    maximum / try_maximum => Max;
    /// The smaller of each pair (NaN if either is NaN, with no gradient to either; ties share the
    /// gradient).
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([1.0, 5.0]).minimum(&Tensor::from(2.0)).to_array(), [1.0, 2.0]);
    /// ```
    minimum / try_minimum => Min;
    /// `self ^ rhs` elementwise, within 0.5001 ulp of the exact power (computed in f64 and rounded
    /// once), with C99's special values (those of libm's `powf`): `x^0 = 1` and `1^y = 1` even
    /// for a quiet NaN, a negative base gives NaN unless the exponent is an integer, whose parity
    /// gives the sign, and `0^-1 = ∞`. For a scalar exponent, [`powf`](Tensor::powf) (or
    /// [`square`](Tensor::square)).
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([2.0, 3.0]).pow(&Tensor::from(2.0)).to_array(), [4.0, 9.0]);
    /// ```
    pow / try_pow => Pow;
}

macro_rules! comparisons {
    ($($(#[$doc:meta])* $name:ident / $try_name:ident => $op:ident, $swap:expr;)*) => {
        impl<S: Shape, G: GradMode> Tensor<S, G> {
            $(
                $(#[$doc])*
                ///
                /// Panics if two run-time (`usize`) dims differ; see the `try_` form.
                #[track_caller]
                pub fn $name<S2: Shape, G2: GradMode>(&self, rhs: &Tensor<S2, G2>) -> Tensor<S::Output>
                where
                    S: BroadcastShape<S2>,
                {
                    or_panic(self.$try_name(rhs))
                }

                /// The fallible form: an error naming both shapes if run-time dims differ, or
                /// [`Error::ShapeOverflow`](crate::Error::ShapeOverflow) if the broadcast shape's
                /// element count does not fit in `usize`.
                pub fn $try_name<S2: Shape, G2: GradMode>(&self, rhs: &Tensor<S2, G2>) -> Result<Tensor<S::Output>>
                where
                    S: BroadcastShape<S2>,
                {
                    self.compare(BinaryOp::$op, rhs, $swap).map_err(|e| e.in_op(stringify!($name)))
                }
            )*
        }
    };
}

comparisons! {
    /// 1.0 where `self < rhs`, else 0.0 (untracked; false for NaN).
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([1.0, 3.0]).lt(&Tensor::from(2.0)).to_array(), [1.0, 0.0]);
    /// ```
    lt / try_lt => CmpLt, false;
    /// 1.0 where `self <= rhs`, else 0.0.
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([2.0, 3.0]).le(&Tensor::from(2.0)).to_array(), [1.0, 0.0]);
    /// ```
    le / try_le => CmpLe, false;
    /// 1.0 where `self > rhs`, else 0.0.
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([1.0, 3.0]).gt(&Tensor::from(2.0)).to_array(), [0.0, 1.0]);
    /// ```
    gt / try_gt => CmpLt, true;
    /// 1.0 where `self >= rhs`, else 0.0.
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([2.0, 1.0]).ge(&Tensor::from(2.0)).to_array(), [1.0, 0.0]);
    /// ```
    ge / try_ge => CmpLe, true;
    /// 1.0 where `self == rhs`, else 0.0.
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([2.0, 1.0]).eq(&Tensor::from(2.0)).to_array(), [1.0, 0.0]);
    /// ```
    eq / try_eq => CmpEq, false;
}

impl<S: Shape, G: GradMode> Tensor<S, G> {
    /// `self` where `cond` is non-zero, else `other`; all three of one shape. `cond` gets no
    /// gradient.
    ///
    /// Panics if run-time (`usize`) dims differ, naming the shapes; see
    /// [`try_where_else`](Self::try_where_else).
    ///
    /// ```
    /// # use teenygrad::prelude::*;
    /// let cond = Tensor::from([1.0, 0.0]);
    /// let picked = Tensor::from([1.0, 2.0]).where_else(&cond, &Tensor::from([9.0, 9.0]));
    /// assert_eq!(picked.to_array(), [1.0, 9.0]);
    /// ```
    #[track_caller]
    #[doc(alias("where"))]
    pub fn where_else<G2: GradMode, G3: GradMode>(
        &self,
        cond: &Tensor<S, G2>,
        other: &Tensor<S, G3>,
    ) -> Tensor<S, <G as Join<G3>>::Out>
    where
        G: Join<G3>,
    {
        or_panic(self.try_where_else(cond, other))
    }

    /// The fallible form of [`where_else`](Self::where_else): an error naming the shapes if
    /// run-time dims differ.
    pub fn try_where_else<G2: GradMode, G3: GradMode>(
        &self,
        cond: &Tensor<S, G2>,
        other: &Tensor<S, G3>,
    ) -> Result<Tensor<S, <G as Join<G3>>::Out>>
    where
        G: Join<G3>,
    {
        let pairs = [
            (
                cond.shape,
                "the condition (first) must have the shape of self (second)",
            ),
            (other.shape, "other (first) must have the shape of self (second)"),
        ];
        for (lhs, rule) in pairs {
            if lhs != self.shape {
                return Err(crate::error::Error::ShapeMismatch {
                    op: "where_else",
                    lhs: lhs.dims(),
                    rhs: self.dims(),
                    rule,
                });
            }
        }
        let cond = cond.detach();
        Ok(Tensor::from_var(
            self.shape,
            Var::where_(&cond.var, &self.var, &other.var),
        ))
    }

    /// `value` where `mask` is non-zero (NaN too), else `self`, as `torch.masked_fill`; `mask`
    /// broadcasts to this shape (a `[T, T]` causal mask over `[B, T, T]` attention scores). The
    /// gradient passes where the mask is zero; `mask` gets none.
    ///
    /// Panics if a run-time dim of `mask` differs from this tensor's, naming both shapes; see
    /// [`try_masked_fill`](Self::try_masked_fill).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// // Causal: position i sees positions up to i, not past it.
    /// let future = Tensor::from([[0.0, 1.0], [0.0, 0.0]]);
    /// let scores = Tensor::<Rank3<2, 2, 2>>::ones();
    /// let masked = scores.masked_fill(&future, f32::NEG_INFINITY);
    /// assert_eq!(masked.softmax::<Axis<2>>().to_array()[1], [[1.0, 0.0], [0.5, 0.5]]);
    /// ```
    #[track_caller]
    pub fn masked_fill<S2, G2: GradMode>(&self, mask: &Tensor<S2, G2>, value: f32) -> Self
    where
        S2: BroadcastTo<S>,
    {
        or_panic(self.try_masked_fill(mask, value))
    }

    /// The fallible form of [`masked_fill`](Self::masked_fill): an error naming both shapes if
    /// a run-time dim of `mask` differs.
    pub fn try_masked_fill<S2, G2: GradMode>(&self, mask: &Tensor<S2, G2>, value: f32) -> Result<Self>
    where
        S2: BroadcastTo<S>,
    {
        mask.shape
            .check_broadcast_to(&self.shape)
            .map_err(|e| e.in_op("masked_fill"))?;
        Ok(self.fill_where(&mask.var.buf(), value))
    }

    /// `value` where `mask` (broadcast to this shape, untracked) is non-zero, else `self`; the
    /// gradient passes where it is zero. `masked_fill`'s, `tril`'s and `triu`'s selection.
    pub(super) fn fill_where(&self, mask: &LazyBuffer, value: f32) -> Self {
        let dims = self.dims();
        let mask = Var::untracked(mask.expand(&dims));
        let fill = Var::untracked(LazyBuffer::full(&dims, value));
        Tensor::from_var(self.shape, Var::where_(&mask, &fill, &self.var))
    }
}

// Operators: tensor ⊕ tensor (owned or borrowed), tensor ⊕ f32, f32 ⊕ tensor.
macro_rules! operator {
    ($trait:ident, $method:ident, $op:ident) => {
        impl<S: Shape, S2: Shape, G: GradMode, G2: GradMode> $trait<&Tensor<S2, G2>> for &Tensor<S, G>
        where
            S: BroadcastShape<S2>,
            G: Join<G2>,
        {
            type Output = Tensor<S::Output, G::Out>;
            #[track_caller]
            fn $method(self, rhs: &Tensor<S2, G2>) -> Self::Output {
                or_panic(
                    self.broadcast_op(BinaryOp::$op, rhs)
                        .map_err(|e| e.in_op(stringify!($method))),
                )
            }
        }
        impl<S: Shape, S2: Shape, G: GradMode, G2: GradMode> $trait<Tensor<S2, G2>> for Tensor<S, G>
        where
            S: BroadcastShape<S2>,
            G: Join<G2>,
        {
            type Output = Tensor<S::Output, G::Out>;
            #[track_caller]
            fn $method(self, rhs: Tensor<S2, G2>) -> Self::Output {
                (&self).$method(&rhs)
            }
        }
        impl<S: Shape, S2: Shape, G: GradMode, G2: GradMode> $trait<&Tensor<S2, G2>> for Tensor<S, G>
        where
            S: BroadcastShape<S2>,
            G: Join<G2>,
        {
            type Output = Tensor<S::Output, G::Out>;
            #[track_caller]
            fn $method(self, rhs: &Tensor<S2, G2>) -> Self::Output {
                (&self).$method(rhs)
            }
        }
        impl<S: Shape, S2: Shape, G: GradMode, G2: GradMode> $trait<Tensor<S2, G2>> for &Tensor<S, G>
        where
            S: BroadcastShape<S2>,
            G: Join<G2>,
        {
            type Output = Tensor<S::Output, G::Out>;
            #[track_caller]
            fn $method(self, rhs: Tensor<S2, G2>) -> Self::Output {
                self.$method(&rhs)
            }
        }
        impl<S: Shape, G: GradMode> $trait<f32> for &Tensor<S, G> {
            type Output = Tensor<S, G>;
            fn $method(self, rhs: f32) -> Self::Output {
                self.scalar_op(BinaryOp::$op, rhs, false)
            }
        }
        impl<S: Shape, G: GradMode> $trait<f32> for Tensor<S, G> {
            type Output = Tensor<S, G>;
            fn $method(self, rhs: f32) -> Self::Output {
                self.scalar_op(BinaryOp::$op, rhs, false)
            }
        }
        impl<S: Shape, G: GradMode> $trait<&Tensor<S, G>> for f32 {
            type Output = Tensor<S, G>;
            fn $method(self, rhs: &Tensor<S, G>) -> Self::Output {
                rhs.scalar_op(BinaryOp::$op, self, true)
            }
        }
        impl<S: Shape, G: GradMode> $trait<Tensor<S, G>> for f32 {
            type Output = Tensor<S, G>;
            fn $method(self, rhs: Tensor<S, G>) -> Self::Output {
                rhs.scalar_op(BinaryOp::$op, self, true)
            }
        }
    };
}

operator!(Add, add, Add);
operator!(Sub, sub, Sub);
operator!(Mul, mul, Mul);
operator!(Div, div, Div);

impl<S: Shape, G: GradMode> Neg for Tensor<S, G> {
    type Output = Tensor<S, G>;
    fn neg(self) -> Self::Output {
        Tensor::neg(&self)
    }
}

impl<S: Shape, G: GradMode> Neg for &Tensor<S, G> {
    type Output = Tensor<S, G>;
    fn neg(self) -> Self::Output {
        Tensor::neg(self)
    }
}
