//! `log(1 + x)` and `eˣ − 1` without the cancellation of their naive forms near 0, where
//! `1 + x` rounds away most of `x` and `eˣ − 1` subtracts two nearly equal numbers. Softplus,
//! binary cross entropy and ELU are built on them.

use super::{GradMode, Tensor};
use crate::autograd::{BackwardFn, Var};
use crate::lazy::{BinaryOp, LazyBuffer, UnaryOp};
use crate::shape::Shape;

/// `log(1 + x)`: `log(w)·x/(w − 1)` with `w = 1 + x` (Goldberg's 1991 method: the rounding of
/// `w` cancels between the log and the quotient, `w − 1` being exact), `x` itself where `w`
/// rounds to 1, and `w`'s log where `w` is infinite (the quotient would be ∞/∞).
pub(super) fn log1p(x: &LazyBuffer) -> LazyBuffer {
    let full = |v: f32| LazyBuffer::full(x.shape(), v);
    let (one, w) = (full(1.0), full(1.0).add(x));
    let log_w = w.unary(UnaryOp::Log);
    // `x/(w − 1)` first: it is near 1, where `log(w)·x` would overflow for x near f32::MAX.
    let ratio = log_w.mul(&x.div(&w.sub(&one)));
    let finite = w
        .binary(BinaryOp::CmpEq, &full(f32::INFINITY))
        .where_(&log_w, &ratio);
    w.binary(BinaryOp::CmpEq, &one).where_(x, &finite)
}

/// `eˣ − 1`: `(u − 1)·x / log(u)` with `u = eˣ` (Kahan's method: the rounding of `u` cancels
/// between the difference and the log), `x` itself where `u` rounds to 1, −1 where `u − 1`
/// does (below about −17, and at −∞, where the quotient would be 0/∞), and `u` where it is
/// infinite (∞/∞).
pub(super) fn expm1(x: &LazyBuffer) -> LazyBuffer {
    let full = |v: f32| LazyBuffer::full(x.shape(), v);
    let (one, minus_one) = (full(1.0), full(-1.0));
    let u = x.unary(UnaryOp::Exp);
    let u_minus_one = u.sub(&one);
    // `x/log(u)` first: it is near 1, where `(u − 1)·x` would overflow for x above 88.
    let ratio = u_minus_one.mul(&x.div(&u.unary(UnaryOp::Log)));
    let finite = u.binary(BinaryOp::CmpEq, &full(f32::INFINITY)).where_(&u, &ratio);
    let saturated = u_minus_one
        .binary(BinaryOp::CmpEq, &minus_one)
        .where_(&minus_one, &finite);
    u.binary(BinaryOp::CmpEq, &one).where_(x, &saturated)
}

impl<S: Shape, G: GradMode> Tensor<S, G> {
    /// `log(1 + x)`, as `torch.log1p`, within a few ulps of exact also where `1 + x` rounds
    /// (`log1p(1e-10)` is `1e-10`, where `(1 + x).log()` gives 0). The gradient is
    /// `1/(1 + x)`, PyTorch's.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let y = Tensor::from([1e-10, 0.0, -1.0, 1.0]).log1p().to_array();
    /// assert_eq!(y[..3], [1e-10, 0.0, f32::NEG_INFINITY]);
    /// assert!((y[3] - std::f32::consts::LN_2).abs() <= f32::EPSILON);
    /// ```
    pub fn log1p(&self) -> Self {
        let x = self.var.buf().into_owned();
        let var = Var::record(log1p(&x), &[&self.var], || {
            Box::new(move |g: &LazyBuffer| [g.div(&x.add(&LazyBuffer::full(x.shape(), 1.0)))].into())
                as BackwardFn
        });
        Tensor::from_var(self.shape, var)
    }

    /// `eˣ − 1`, as `torch.expm1`, within a few ulps of exact also near 0 (`expm1(1e-10)` is
    /// `1e-10`, where `x.exp() - 1` gives 0). The gradient is `eˣ`, computed as the result
    /// plus 1, PyTorch's.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let y = Tensor::from([1e-10, 0.0, f32::NEG_INFINITY]).expm1().to_array();
    /// assert_eq!(y, [1e-10, 0.0, -1.0]);
    /// ```
    pub fn expm1(&self) -> Self {
        let y = expm1(&self.var.buf());
        let result = y.clone();
        let var = Var::record(y, &[&self.var], || {
            Box::new(move |g: &LazyBuffer| {
                [g.mul(&result.add(&LazyBuffer::full(result.shape(), 1.0)))].into()
            }) as BackwardFn
        });
        Tensor::from_var(self.shape, var)
    }
}
