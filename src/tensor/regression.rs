//! Losses between a prediction and a target of one shape: mean squared error, mean absolute
//! error and the Huber loss. Each is the mean over elements of a function of `prediction -
//! target`, tracked if either side is: the gradient reaches whichever of the two requires it.

use super::{GradMode, Join, Tensor};
use crate::autograd::{BackwardFn, Var};
use crate::error::{Error, Result, or_panic};
use crate::lazy::{BinaryOp, LazyBuffer, UnaryOp};
use crate::shape::Shape;

/// [`Error::ShapeMismatch`] naming `op` if two same-typed shapes differ in a run-time dim.
pub(super) fn check_same_dims<S: Shape>(op: &'static str, what: &'static str, a: &S, b: &S) -> Result<()> {
    if a.dims() == b.dims() {
        return Ok(());
    }
    Err(Error::ShapeMismatch {
        op,
        lhs: a.dims(),
        rhs: b.dims(),
        rule: what,
    })
}

/// `prediction - target`, after checking their run-time dims.
fn difference<S: Shape, G, G2: GradMode>(
    op: &'static str,
    prediction: &Tensor<S, G>,
    target: &Tensor<S, G2>,
) -> Result<Tensor<S, G::Out>>
where
    G: Join<G2>,
{
    let rule = "prediction and target must have the same shape";
    check_same_dims(op, rule, &prediction.shape, &target.shape)?;
    let var = prediction.var.binary(BinaryOp::Sub, &target.var);
    Ok(Tensor::from_var(prediction.shape, var))
}

/// Mean squared error `mean((prediction - target)²)`, as PyTorch's `mse_loss`; NaN over no
/// elements, as PyTorch's.
///
/// The target has the prediction's shape type (PyTorch only warns, then broadcasts `[n]` against
/// `[n, 1]` into `[n, n]`): targets of one value per sample, `(usize,)`, against a layer's `(usize,
/// Const<1>)` outputs are a type error ("expected a tuple with 2 elements"), and `reshape_to((n,
/// Const))` makes them a column (second example). The same holds for [`l1_loss`] and
/// [`huber_loss`].
///
/// Panics if run-time (`usize`) dims of the two differ, naming both shapes; see [`try_mse`].
///
/// ```
/// use teenygrad::prelude::*;
/// use teenygrad::tensor::mse;
/// assert_eq!(mse(&Tensor::from([1.0, 3.0]), &Tensor::from([0.0, 0.0])).item(), 5.0);
///
/// // A regression with one output: [n, 1] predictions, and targets read as n values.
/// let n = 2;
/// let predictions = Tensor::from_vec(vec![1.0, 3.0], (n, Const::<1>))?;
/// let targets = Tensor::from_vec(vec![0.0, 0.0], (n,))?;
/// assert_eq!(mse(&predictions, &targets.reshape_to((n, Const::<1>))).item(), 5.0);
/// # Ok::<(), teenygrad::Error>(())
/// ```
#[track_caller]
#[doc(alias("mse_loss", "MSELoss"))]
pub fn mse<S: Shape, G, G2: GradMode>(prediction: &Tensor<S, G>, target: &Tensor<S, G2>) -> Tensor<(), G::Out>
where
    G: Join<G2>,
{
    or_panic(try_mse(prediction, target))
}

/// [`mse`], with [`Error::ShapeMismatch`] if run-time dims of the two differ.
///
/// ```
/// use teenygrad::prelude::*;
/// use teenygrad::tensor::try_mse;
/// let p = Tensor::from_vec(vec![1.0; 2], (2usize,)).unwrap();
/// let t = Tensor::from_vec(vec![1.0; 3], (3usize,)).unwrap();
/// assert!(try_mse(&p, &t).is_err());
/// ```
pub fn try_mse<S: Shape, G, G2: GradMode>(
    prediction: &Tensor<S, G>,
    target: &Tensor<S, G2>,
) -> Result<Tensor<(), G::Out>>
where
    G: Join<G2>,
{
    Ok(difference("mse", prediction, target)?.square().mean_all())
}

/// Mean absolute error `mean(|prediction - target|)`, as PyTorch's `l1_loss`; the gradient of
/// each element is the sign of its difference (0 where they are equal) over the element count.
/// NaN over no elements, as PyTorch's.
///
/// Panics if run-time (`usize`) dims of the two differ, naming both shapes; see [`try_l1_loss`].
///
/// ```
/// use teenygrad::prelude::*;
/// use teenygrad::tensor::l1_loss;
/// assert_eq!(l1_loss(&Tensor::from([1.0, -3.0]), &Tensor::from([0.0, 0.0])).item(), 2.0);
/// ```
#[track_caller]
#[doc(alias("L1Loss", "mae"))]
pub fn l1_loss<S: Shape, G, G2: GradMode>(
    prediction: &Tensor<S, G>,
    target: &Tensor<S, G2>,
) -> Tensor<(), G::Out>
where
    G: Join<G2>,
{
    or_panic(try_l1_loss(prediction, target))
}

/// [`l1_loss`], with [`Error::ShapeMismatch`] if run-time dims of the two differ.
pub fn try_l1_loss<S: Shape, G, G2: GradMode>(
    prediction: &Tensor<S, G>,
    target: &Tensor<S, G2>,
) -> Result<Tensor<(), G::Out>>
where
    G: Join<G2>,
{
    Ok(difference("l1_loss", prediction, target)?.abs().mean_all())
}

/// The Huber loss, as PyTorch's `huber_loss(prediction, target, delta=delta)`: the mean over
/// elements of `d²/2` where `|d| < delta` and `delta·(|d| − delta/2)` elsewhere, for
/// `d = prediction − target`: squared near 0, absolute (so robust to outliers) beyond `delta`.
/// PyTorch's `smooth_l1_loss` with `beta` is this with `delta = beta`, divided by `beta`. The
/// gradient of each element is `d` clamped to `[−delta, delta]`, over the element count. NaN over
/// no elements, as PyTorch's.
///
/// Panics if run-time (`usize`) dims of the two differ, naming both shapes, or if `delta` is not
/// positive; see [`try_huber_loss`].
///
/// ```
/// use teenygrad::prelude::*;
/// use teenygrad::tensor::huber_loss;
/// let loss = huber_loss(&Tensor::from([0.5, 3.0]), &Tensor::from([0.0, 0.0]), 1.0);
/// assert_eq!(loss.item(), (0.125 + 2.5) / 2.0);
/// ```
#[track_caller]
#[doc(alias("HuberLoss", "smooth_l1_loss", "SmoothL1Loss"))]
pub fn huber_loss<S: Shape, G, G2: GradMode>(
    prediction: &Tensor<S, G>,
    target: &Tensor<S, G2>,
    delta: f32,
) -> Tensor<(), G::Out>
where
    G: Join<G2>,
{
    or_panic(try_huber_loss(prediction, target, delta))
}

/// [`huber_loss`], with [`Error::ShapeMismatch`] if run-time dims of the two differ and
/// [`Error::InvalidArgument`] if `delta` is not positive (or is NaN).
pub fn try_huber_loss<S: Shape, G, G2: GradMode>(
    prediction: &Tensor<S, G>,
    target: &Tensor<S, G2>,
    delta: f32,
) -> Result<Tensor<(), G::Out>>
where
    G: Join<G2>,
{
    if delta.is_nan() || delta <= 0.0 {
        let message = format!("delta = {delta} is not positive");
        return Err(Error::InvalidArgument {
            op: "huber_loss",
            message,
        });
    }
    let d = difference("huber_loss", prediction, target)?;
    let x = d.var.buf().into_owned();
    let full = |v: f32| LazyBuffer::full(x.shape(), v);
    // PyTorch's operations in its order: `0.5·z·z` and `delta·(z − 0.5·delta)`.
    let z = x.unary(UnaryOp::Abs);
    let squared = full(0.5).mul(&z).mul(&z);
    let linear = full(delta).mul(&z.sub(&full(0.5 * delta)));
    let y = z.binary(BinaryOp::CmpLt, &full(delta)).where_(&squared, &linear);
    let var = Var::record(y, &[&d.var], || {
        Box::new(move |g: &LazyBuffer| {
            // `d` clamped to `[−delta, delta]` by comparisons, so a NaN `d` passes through.
            let (low, high) = (
                LazyBuffer::full(x.shape(), -delta),
                LazyBuffer::full(x.shape(), delta),
            );
            let clamped = x
                .binary(BinaryOp::CmpLe, &low)
                .where_(&low, &high.binary(BinaryOp::CmpLe, &x).where_(&high, &x));
            [g.mul(&clamped)].into()
        }) as BackwardFn
    });
    Ok(Tensor::<S, G::Out>::from_var(d.shape, var).mean_all())
}
