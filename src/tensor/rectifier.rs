//! Rectifiers with a slope below zero: leaky ReLU and ELU. Each records PyTorch's backward rule,
//! including its choice at 0 (leaky ReLU's gradient there is the slope; ELU's is `alpha`).

use super::near_one::expm1;
use super::{GradMode, Tensor};
use crate::autograd::{BackwardFn, Var};
use crate::lazy::{BinaryOp, LazyBuffer, UnaryOp};
use crate::shape::Shape;

impl<S: Shape, G: GradMode> Tensor<S, G> {
    /// `x` where `x > 0`, else `slope·x`, as PyTorch's `leaky_relu(x, negative_slope=slope)`
    /// (whose default slope is 0.01). The gradient is 1 where `x > 0` and `slope` elsewhere
    /// (at 0, and for NaN), as PyTorch's.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let y = Tensor::from([-2.0, 0.0, 3.0]).leaky_relu(0.25);
    /// assert_eq!(y.to_array(), [-0.5, 0.0, 3.0]);
    /// ```
    pub fn leaky_relu(&self, slope: f32) -> Self {
        let x = self.var.buf().into_owned();
        let positive = LazyBuffer::full(x.shape(), 0.0).binary(BinaryOp::CmpLt, &x);
        let slope_of = move |v: &LazyBuffer| v.mul(&LazyBuffer::full(v.shape(), slope));
        let y = positive.where_(&x, &slope_of(&x));
        let var = Var::record(y, &[&self.var], || {
            Box::new(move |g: &LazyBuffer| [positive.where_(g, &slope_of(g))].into()) as BackwardFn
        });
        Tensor::from_var(self.shape, var)
    }

    /// ELU: `x` where `x > 0`, else `alpha·(eˣ − 1)`, as PyTorch's `elu(x, alpha)` (whose default
    /// `alpha` is 1). `eˣ − 1` is computed without cancelling near 0 (`elu(-1e-5)` is
    /// `-9.99995e-6`, where `exp(x) - 1`, which PyTorch 2.5.1 computes, gives `-1.0014e-5`).
    /// The gradient is 1 where `x > 0`, else `alpha·eˣ` (`alpha` at 0), PyTorch's rule; for a
    /// NaN it is 1, as PyTorch's scalar loop gives (its vector loop gives NaN).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let y = Tensor::from([-1e-5, 0.0, 2.0]).elu(1.0).to_array();
    /// assert!((y[0] / -9.999_95e-6 - 1.0).abs() < 1e-6);
    /// assert_eq!(y[1..], [0.0, 2.0]);
    /// ```
    pub fn elu(&self, alpha: f32) -> Self {
        let x = self.var.buf().into_owned();
        // PyTorch's condition, `x <= 0`, for both directions.
        let negative = x.binary(BinaryOp::CmpLe, &LazyBuffer::full(x.shape(), 0.0));
        let alpha_times = move |v: &LazyBuffer| v.mul(&LazyBuffer::full(v.shape(), alpha));
        let y = negative.where_(&alpha_times(&expm1(&x)), &x);
        let var = Var::record(y, &[&self.var], || {
            Box::new(move |g: &LazyBuffer| {
                let slope = alpha_times(g).mul(&x.unary(UnaryOp::Exp));
                [negative.where_(&slope, g)].into()
            }) as BackwardFn
        });
        Tensor::from_var(self.shape, var)
    }
}
