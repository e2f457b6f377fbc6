//! The logistic family: softplus, SiLU, and binary cross entropy on logits and on probabilities.
//! Each is written so that it keeps its accuracy where the naive formula cancels or overflows
//! (`log(1 + eˣ)` is 0 at x = −20 and `inf` at 89), and each records one backward rule, the one
//! PyTorch uses, rather than one per primitive.

use super::near_one::log1p;
use super::regression::check_same_dims;
use super::{GradMode, Join, Tensor};
use crate::autograd::{BackwardFn, Var};
use crate::error::{Result, or_panic};
use crate::lazy::{BinaryOp, LazyBuffer, UnaryOp};
use crate::shape::Shape;

/// `log(1 + e^-|x|)`: the part of softplus (and of the loss) that is below `log 2`.
fn log1p_exp_neg_abs(x: &LazyBuffer) -> LazyBuffer {
    log1p(&x.unary(UnaryOp::Abs).unary(UnaryOp::Neg).unary(UnaryOp::Exp))
}

impl<S: Shape, G: GradMode> Tensor<S, G> {
    /// `log(1 + eˣ)`, as PyTorch's `softplus` (β = 1): computed as `max(x, 0) + log1p(e^-|x|)`,
    /// within a few ulps of the exact value for every `x` (softplus(−20) is 2.06e-9, softplus(100)
    /// is 100). The gradient is `sigmoid(x)`.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let y = Tensor::from([0.0, -20.0, 100.0]).softplus().to_array();
    /// assert!((y[0] - 2f32.ln()).abs() < 1e-7 && (y[1] / 2.061_153_6e-9 - 1.0).abs() < 1e-6);
    /// assert_eq!(y[2], 100.0);
    /// ```
    pub fn softplus(&self) -> Self {
        let x = self.var.buf().into_owned();
        let y = x.unary(UnaryOp::Relu).add(&log1p_exp_neg_abs(&x));
        let var = Var::record(y, &[&self.var], || {
            Box::new(move |g: &LazyBuffer| [g.mul(&x.unary(UnaryOp::Sigmoid))].into()) as BackwardFn
        });
        Tensor::from_var(self.shape, var)
    }

    /// SiLU (swish), `x·sigmoid(x)`, as PyTorch's `silu`. One backward rule, PyTorch's:
    /// `sigmoid(x)·(1 + x·(1 − sigmoid(x)))`.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let y = Tensor::from([0.0, 1.0]).silu().to_array();
    /// assert!(y[0] == 0.0 && (y[1] - 0.731_058_6).abs() < 1e-7);
    /// ```
    #[doc(alias("swish"))]
    pub fn silu(&self) -> Self {
        let x = self.var.buf().into_owned();
        let y = x.mul(&x.unary(UnaryOp::Sigmoid));
        let var = Var::record(y, &[&self.var], || {
            Box::new(move |g: &LazyBuffer| {
                let (s, one) = (x.unary(UnaryOp::Sigmoid), LazyBuffer::full(x.shape(), 1.0));
                let slope = s.mul(&one.add(&x.mul(&one.sub(&s))));
                [g.mul(&slope)].into()
            }) as BackwardFn
        });
        Tensor::from_var(self.shape, var)
    }
}

/// Mean binary cross entropy of `logits` against `targets` (probabilities in `[0, 1]`, usually 0
/// or 1), as PyTorch's `binary_cross_entropy_with_logits`: the mean of
/// `(1 − y)·x + max(−x, 0) + log1p(e^-|x|)`, which is `−y·log σ(x) − (1 − y)·log(1 − σ(x))`
/// without computing `σ(x)`, so it is finite for logits of any magnitude and keeps its accuracy
/// when the prediction is confidently right (a logit of 30 for a target of 1 costs 9.4e-14, not
/// 0). Tracked if either side is: the logits' gradient is `(σ(x) − y)/n`, the targets' `−x/n`.
/// NaN over no elements, as PyTorch's.
///
/// The targets have the logits' shape type, as PyTorch asks the same shape: targets of one
/// value per sample, `(usize,)`, against a layer's `(usize, Const<1>)` outputs are a type error,
/// and `reshape_to((n, Const))` makes them a column (second example).
///
/// Panics if run-time dims differ, naming both shapes; see [`try_binary_cross_entropy_with_logits`].
///
/// ```
/// use teenygrad::prelude::*;
/// use teenygrad::tensor::binary_cross_entropy_with_logits as bce;
/// let loss = bce(&Tensor::from([0.0, 30.0]), &Tensor::from([1.0, 1.0]));
/// assert!((loss.item() - (2f32.ln() + 9.4e-14) / 2.0).abs() < 1e-7);
///
/// // A classifier with one output: [n, 1] logits, and targets read as n values.
/// let n = 3;
/// let logits = Tensor::from_vec(vec![2.0, -1.0, 0.5], (n, Const::<1>))?;
/// let targets = Tensor::from_vec(vec![1.0, 0.0, 1.0], (n,))?;
/// let loss = bce(&logits, &targets.reshape_to((n, Const::<1>)));
/// assert!(loss.item() > 0.0);
/// # Ok::<(), teenygrad::Error>(())
/// ```
#[track_caller]
#[doc(alias("bce", "BCEWithLogitsLoss"))]
pub fn binary_cross_entropy_with_logits<S: Shape, G, G2: GradMode>(
    logits: &Tensor<S, G>,
    targets: &Tensor<S, G2>,
) -> Tensor<(), G::Out>
where
    G: Join<G2>,
{
    or_panic(try_binary_cross_entropy_with_logits(logits, targets))
}

/// [`binary_cross_entropy_with_logits`], with
/// [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) if run-time dims of the two differ.
pub fn try_binary_cross_entropy_with_logits<S: Shape, G, G2: GradMode>(
    logits: &Tensor<S, G>,
    targets: &Tensor<S, G2>,
) -> Result<Tensor<(), G::Out>>
where
    G: Join<G2>,
{
    let rule = "logits and targets must have the same shape";
    check_same_dims(
        "binary_cross_entropy_with_logits",
        rule,
        &logits.shape,
        &targets.shape,
    )?;
    let (x, y) = (logits.var.buf().into_owned(), targets.var.buf().into_owned());
    let one = LazyBuffer::full(x.shape(), 1.0);
    let losses = (one.sub(&y).mul(&x))
        .add(&x.unary(UnaryOp::Neg).unary(UnaryOp::Relu))
        .add(&log1p_exp_neg_abs(&x));
    let var = Var::record(losses, &[&logits.var, &targets.var], || {
        Box::new(move |g: &LazyBuffer| {
            let dx = g.mul(&x.unary(UnaryOp::Sigmoid).sub(&y));
            let dy = g.mul(&x).unary(UnaryOp::Neg);
            [dx, dy].into()
        }) as BackwardFn
    });
    Ok(Tensor::<S, G::Out>::from_var(logits.shape, var).mean_all())
}

/// PyTorch's floor for the two logs of [`binary_cross_entropy`]: a probability of exactly 0 for
/// a target of 1 costs 100, not infinity.
const LOG_FLOOR: f32 = -100.0;

/// PyTorch's floor for `p·(1 − p)` in the gradient of [`binary_cross_entropy`], where it divides.
const GRAD_EPS: f32 = 1e-12;

/// Mean binary cross entropy of `probabilities` against `targets`, as PyTorch's
/// `binary_cross_entropy` (`BCELoss`): the mean of `−(y·log p + (1 − y)·log(1 − p))`, each log
/// floored at −100 (so a confident mistake costs 100, not infinity) and `log(1 − p)` taken as
/// `log1p(−p)`, exact for small `p`. Tracked if either side is: the probabilities' gradient is
/// `(p − y)/max(p·(1 − p), 1e-12)/n` (±1e12/n where a probability of 0 or 1 is wrong), the
/// targets' `log((1 − p)/p)/n` (infinite at 0 and 1, where the floors do not apply), both
/// PyTorch's formulas; the second is computed as `log1p(−p) − log p`, which rounds differently
/// from PyTorch's `−logit(p)` near `p = 1/2` (neither is the closer throughout). NaN over no
/// elements.
///
/// Prefer [`binary_cross_entropy_with_logits`] where the probabilities come from a sigmoid: it
/// keeps the accuracy that rounding `p` to f32 loses (a sigmoid of 20 is 1.0 in f32, and its
/// loss for a target of 0 is then 100, not 20).
///
/// The values are not checked (PyTorch refuses either outside `[0, 1]`, which would need the
/// values here): a probability outside `[0, 1]` gives NaN, a target outside it a value of the
/// formula.
///
/// Panics if run-time dims differ, naming both shapes; see [`try_binary_cross_entropy`].
///
/// ```
/// use teenygrad::prelude::*;
/// use teenygrad::tensor::binary_cross_entropy as bce;
/// let loss = bce(&Tensor::from([0.5, 0.0]), &Tensor::from([1.0, 1.0]));
/// assert!((loss.item() - (2f32.ln() + 100.0) / 2.0).abs() < 1e-5);
/// ```
#[track_caller]
#[doc(alias("BCELoss"))]
pub fn binary_cross_entropy<S: Shape, G, G2: GradMode>(
    probabilities: &Tensor<S, G>,
    targets: &Tensor<S, G2>,
) -> Tensor<(), G::Out>
where
    G: Join<G2>,
{
    or_panic(try_binary_cross_entropy(probabilities, targets))
}

/// [`binary_cross_entropy`], with [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) if
/// run-time dims of the two differ.
pub fn try_binary_cross_entropy<S: Shape, G, G2: GradMode>(
    probabilities: &Tensor<S, G>,
    targets: &Tensor<S, G2>,
) -> Result<Tensor<(), G::Out>>
where
    G: Join<G2>,
{
    let rule = "probabilities and targets must have the same shape";
    check_same_dims("binary_cross_entropy", rule, &probabilities.shape, &targets.shape)?;
    let (p, y) = (
        probabilities.var.buf().into_owned(),
        targets.var.buf().into_owned(),
    );
    let full = |v: f32| LazyBuffer::full(p.shape(), v);
    let (log_p, log_q) = (p.unary(UnaryOp::Log), log1p(&p.unary(UnaryOp::Neg)));
    let floor = full(LOG_FLOOR);
    let (hit, miss) = (
        log_p.binary(BinaryOp::Max, &floor),
        log_q.binary(BinaryOp::Max, &floor),
    );
    // (y − 1)·log(1 − p) − y·log p, PyTorch's order of operations.
    let losses = y.sub(&full(1.0)).mul(&miss).sub(&y.mul(&hit));
    let var = Var::record(losses, &[&probabilities.var, &targets.var], || {
        Box::new(move |g: &LazyBuffer| {
            let full = |v: f32| LazyBuffer::full(p.shape(), v);
            let spread = p.mul(&full(1.0).sub(&p)).binary(BinaryOp::Max, &full(GRAD_EPS));
            let dp = g.mul(&p.sub(&y).div(&spread));
            let dy = g.mul(&log_q.sub(&log_p));
            [dp, dy].into()
        }) as BackwardFn
    });
    Ok(Tensor::<S, G::Out>::from_var(probabilities.shape, var).mean_all())
}
