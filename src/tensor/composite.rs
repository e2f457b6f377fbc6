//! Composite operations, built from primitives (their gradients follow from the primitives'):
//! softmax, log_softmax, logsumexp, variance and standard deviation, GELU, and the losses (cross
//! entropy from class indices, mean squared error). Cross entropy, the loss of nearly every
//! classifier step, has its own backward rule, `(softmax − one_hot) · g / batch`: it records one
//! rule instead of one per primitive, and its gradient is a single fused kernel over the
//! forward's row maxima and sums. The variance and the deviation have theirs too (PyTorch's), over
//! the one centered node their values are made of.

use super::{GradMode, Tensor};
use crate::autograd::Var;
use crate::error::{Error, Result};
use crate::lazy::{BinaryOp, LazyBuffer, ReduceOp, UnaryOp};
use crate::shape::axes::assert_increasing;
use crate::shape::{Axes, Const, Dim, ReduceShape, Shape};

/// `reduce(x, axes)` kept as size-1 axes and broadcast back to `x`'s shape.
fn reduce_back(x: &Var, op: ReduceOp, axes: &[usize]) -> Var {
    x.reduce(op, axes).expand(x.buf().shape())
}

/// What the gradients of the variance and the deviation over some axes are made of: one
/// centered node serves both the value and the gradient.
struct Spread {
    /// The input's dims, and the same with the reduced axes kept as size 1.
    dims: Vec<usize>,
    kept: Vec<usize>,
    /// PyTorch's `max(0, n − correction)`.
    divisor: f32,
    /// `x` less its mean over the axes, unreduced: `(x − s) − mean(x − s)` with `s` each group's
    /// first value (0 where that is infinite or NaN, which would make the whole group NaN). A
    /// constant group centers to exact zeros, and values far from 0 keep the accuracy of their
    /// spread, where `x − mean(x)` would carry the mean's rounding, an ulp of `x` (1e-3 at 1e4, a
    /// tenth of a spread of 1e-2).
    centered: LazyBuffer,
}

impl Spread {
    /// The spread of `x` over `axes`, and the variance: the sum of the centered squares over
    /// the divisor, in `kept`'s shape.
    fn of(x: &LazyBuffer, axes: &[usize], correction: usize) -> (Spread, LazyBuffer) {
        let dims = x.shape().to_vec();
        let n: usize = axes.iter().map(|&a| dims[a]).product();
        let kept = first_dims(&dims, axes);
        // Each group's first value (none where an axis is empty).
        let first: Vec<(usize, usize)> = (dims.iter().enumerate())
            .map(|(d, &size)| (0, if axes.contains(&d) { size.min(1) } else { size }))
            .collect();
        let shifted = x.sub(&finite_or_zero(&x.shrink(&first)).expand(&dims));
        let mean = (shifted.reduce(ReduceOp::Sum, axes)).div(&LazyBuffer::full(&kept, n as f32));
        let centered = shifted.sub(&mean.expand(&dims));
        let divisor = n.saturating_sub(correction) as f32;
        let var = (centered.mul(&centered).sum(axes)).div(&LazyBuffer::full(&kept, divisor));
        let spread = Spread {
            dims,
            kept,
            divisor,
            centered,
        };
        (spread, var)
    }
}

/// `dims` with the `axes` kept as size 1.
fn first_dims(dims: &[usize], axes: &[usize]) -> Vec<usize> {
    (dims.iter().enumerate())
        .map(|(d, &size)| if axes.contains(&d) { 1 } else { size })
        .collect()
}

/// `log Σ exp(x)` over `axes`, kept as size 1, computed as `m + log Σ exp(x - m)` with `m` the
/// (detached) maximum, so it is finite for logits of any magnitude. Where the maximum is not
/// finite (a row of all `-inf`), `m` is taken as 0 so the result is `-inf` rather than NaN.
fn logsumexp_keep(x: &Var, axes: &[usize]) -> Var {
    let m = Var::untracked(finite_or_zero(&x.buf().reduce(ReduceOp::Max, axes)));
    let shifted = x.binary(BinaryOp::Sub, &m.expand(x.buf().shape()));
    let sum = shifted.unary(UnaryOp::Exp).reduce(ReduceOp::Sum, axes);
    sum.unary(UnaryOp::Log).binary(BinaryOp::Add, &m)
}

/// `m` where it is finite, else 0: a shift that keeps what it is subtracted from out of
/// `inf − inf` (`log Σ exp(x - m) + m`, a centered value).
fn finite_or_zero(m: &LazyBuffer) -> LazyBuffer {
    let finite = m
        .unary(UnaryOp::Abs)
        .binary(BinaryOp::CmpLt, &LazyBuffer::full(m.shape(), f32::INFINITY));
    finite.where_(m, &LazyBuffer::full(m.shape(), 0.0))
}

impl<S: Shape, G: GradMode> Tensor<S, G> {
    /// `exp(x) / Σ exp(x)` over the axes `Ax` (max-subtracted, so large logits do not overflow).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let p = Tensor::from([[1.0, 1.0], [0.0, 1e4]]).softmax::<Axis<1>>();
    /// assert_eq!(p.to_array(), [[0.5, 0.5], [0.0, 1.0]]);
    /// ```
    pub fn softmax<Ax: Axes>(&self) -> Self
    where
        S: ReduceShape<Ax>,
    {
        // Also checked by the shape's reduction; here the error names the caller's line.
        const { assert_increasing::<Ax>() };
        let axes = Ax::indices();
        let m = reduce_back(&self.var.detach(), ReduceOp::Max, &axes);
        // One node: from 2^18 values the scheduler computes it in both kernels that read it
        // where that pays (with AVX-512), else it is stored once (two nodes, each exponential
        // computed twice, cost 10–20 % below 2^18).
        let e = self.var.binary(BinaryOp::Sub, &m).unary(UnaryOp::Exp);
        let total = reduce_back(&e, ReduceOp::Sum, &axes);
        Tensor::from_var(self.shape, e.binary(BinaryOp::Div, &total))
    }

    /// `x - logsumexp(x)` over `Ax`, computed as `(x - m) - log Σ exp(x - m)` with `m` the maximum:
    /// finite for logits of any finite magnitude, and each value accurate to its own magnitude
    /// rather than to that of `m`, or to about `f32::EPSILON` absolutely near 0 (the largest
    /// logit's, when the others are far below it: the sum, at least 1, rounds before its log is
    /// taken, as in PyTorch). A row holding `+inf`, or all `-inf`, is NaN (as in PyTorch).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let l = Tensor::from([[0.0, 0.0], [-1e4, 1e4]]).log_softmax::<Axis<1>>();
    /// assert_eq!(l.to_array(), [[-std::f32::consts::LN_2, -std::f32::consts::LN_2], [-2e4, 0.0]]);
    /// ```
    pub fn log_softmax<Ax: Axes>(&self) -> Self
    where
        S: ReduceShape<Ax>,
    {
        // Also checked by the shape's reduction; here the error names the caller's line.
        const { assert_increasing::<Ax>() };
        let axes = Ax::indices();
        let m = reduce_back(&self.var.detach(), ReduceOp::Max, &axes);
        // `x - m` twice, as two nodes: one shared by the sum's kernel and the result's would be
        // written out as a buffer of its own (a full extra pass over a [1024, 1024] input).
        let shifted = || self.var.binary(BinaryOp::Sub, &m);
        let log_sum = (shifted().unary(UnaryOp::Exp).reduce(ReduceOp::Sum, &axes)).unary(UnaryOp::Log);
        Tensor::from_var(
            self.shape,
            shifted().binary(BinaryOp::Sub, &log_sum.expand(&self.dims())),
        )
    }

    /// `log Σ exp(x)` over `Ax` (stable for large magnitudes).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let l = Tensor::from([1e4, 1e4]).logsumexp::<Axis<0>>();
    /// assert_eq!(l.item(), 1e4 + std::f32::consts::LN_2);
    /// ```
    pub fn logsumexp<Ax: Axes>(&self) -> Tensor<S::Output, G>
    where
        S: ReduceShape<Ax>,
    {
        // Also checked by the shape's reduction; here the error names the caller's line.
        const { assert_increasing::<Ax>() };
        let shape = self.shape.reduced();
        let var = logsumexp_keep(&self.var, &Ax::indices()).reshape(&shape.dims());
        Tensor::from_var(shape, var)
    }

    /// Variance over `Ax` with Bessel's correction (divides by `n - 1`), as `torch.var` does; NaN
    /// over fewer than two values.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([1.0, 2.0, 3.0, 4.0]).var::<Axis<0>>().item(), 5.0 / 3.0);
    /// ```
    pub fn var<Ax: Axes>(&self) -> Tensor<S::Output, G>
    where
        S: ReduceShape<Ax>,
    {
        // Also checked by the shape's reduction; here the error names the caller's line.
        const { assert_increasing::<Ax>() };
        self.var_with_correction::<Ax>(1)
    }

    /// Variance over `Ax` dividing by `n - correction`, as `torch.var(x, dim, correction=c)`:
    /// `0` is the population variance (numpy's and scikit-learn's `StandardScaler`'s), `1`
    /// [`var`](Self::var)'s. Where `n <= correction` the divisor is 0, as PyTorch's: `inf`, or
    /// NaN where the values are all equal or there are none.
    ///
    /// Its gradient is PyTorch's `2·(x − mean)/(n − correction)`, so an infinite value gives the
    /// others `±inf` and itself NaN (where the divisor is 0, `±inf` and NaN, PyTorch's as
    /// meaningless).
    ///
    /// The squares are summed in f32, as every reduction here: where their sum passes
    /// `f32::MAX` (≈ 3.4e38: one value 1.8e19 from the mean, or less over many) the variance is
    /// `inf`, even where the division would have brought it back into range, and NaN where the
    /// differences from the first value overflow too (values of both signs near `f32::MAX`).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let x = Tensor::from([1.0, 2.0, 3.0, 4.0]);
    /// assert_eq!(x.var_with_correction::<Axis<0>>(0).item(), 1.25);
    /// assert_eq!(x.var_with_correction::<Axis<0>>(4).item(), f32::INFINITY);
    /// ```
    #[doc(alias("unbiased", "ddof", "population"))]
    pub fn var_with_correction<Ax: Axes>(&self, correction: usize) -> Tensor<S::Output, G>
    where
        S: ReduceShape<Ax>,
    {
        // Also checked by the shape's reduction; here the error names the caller's line.
        const { assert_increasing::<Ax>() };
        let out = self.shape.reduced();
        let (s, var) = Spread::of(&self.var.buf(), &Ax::indices(), correction);
        let var = Var::record(var.reshape(&out.dims()), &[&self.var], || {
            Box::new(move |g: &LazyBuffer| {
                // PyTorch's rule, in its order. Taken through the mean too, the gradient also
                // carried the mean's rounding, and an `inf` made the whole row NaN.
                let factor = LazyBuffer::full(&s.kept, (2.0 / s.divisor as f64) as f32);
                [g.reshape(&s.kept).mul(&factor).expand(&s.dims).mul(&s.centered)].into()
            }) as crate::autograd::BackwardFn
        });
        Tensor::from_var(out, var)
    }

    /// Standard deviation over `Ax` with Bessel's correction, `√var`, as `torch.std` does; NaN
    /// over fewer than two values. Its gradient is `(x − mean)/((n − 1)·std)`, and 0 where the
    /// values are all the same, as PyTorch's (the square root's slope there is infinite).
    ///
    /// PyTorch's `keepdim=True`, here and for [`var`](Self::var) and
    /// [`logsumexp`](Self::logsumexp): `unsqueeze` the result's axis back, a `One` that broadcasts.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let x = Tensor::from([[1.0, 3.0], [2.0, 2.0]]);
    /// assert_eq!(x.std::<Axis<1>>().to_array(), [2f32.sqrt(), 0.0]);
    /// // Each row standardized: PyTorch's `(x - x.mean(1, keepdim=True)) / x.std(1, keepdim=True)`.
    /// let rows = Tensor::from([[1.0, 3.0], [2.0, 6.0]]);
    /// let z = (rows.clone() - rows.mean_keepdim::<Axis<1>>()) / rows.std::<Axis<1>>().unsqueeze(Axis::<1>);
    /// let half = std::f32::consts::FRAC_1_SQRT_2;
    /// assert_eq!(z.to_array(), [[-half, half], [-half, half]]);
    /// ```
    pub fn std<Ax: Axes>(&self) -> Tensor<S::Output, G>
    where
        S: ReduceShape<Ax>,
    {
        // Also checked by the shape's reduction; here the error names the caller's line.
        const { assert_increasing::<Ax>() };
        self.std_with_correction::<Ax>(1)
    }

    /// Standard deviation over `Ax` dividing by `n - correction` under the root, as
    /// `torch.std(x, dim, correction=c)`: `0` is the population deviation (numpy's default),
    /// `1` [`std`](Self::std)'s. Its gradient is `(x − mean)/((n − correction)·std)`, and 0 where
    /// the values are all the same; where `n <= correction` the value is `inf` or NaN, as
    /// [`var_with_correction`](Self::var_with_correction)'s, and the gradient NaN (PyTorch's is
    /// as meaningless there: `±inf`, or finite from a negative divisor).
    ///
    /// Its sum of squares overflows as [`var_with_correction`](Self::var_with_correction)'s
    /// does: the deviation is then `inf` and its gradient 0, where PyTorch's is finite.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([1.0, 3.0]).std_with_correction::<Axis<0>>(0).item(), 1.0);
    /// ```
    #[doc(alias("unbiased", "ddof", "population"))]
    pub fn std_with_correction<Ax: Axes>(&self, correction: usize) -> Tensor<S::Output, G>
    where
        S: ReduceShape<Ax>,
    {
        // Also checked by the shape's reduction; here the error names the caller's line.
        const { assert_increasing::<Ax>() };
        let out = self.shape.reduced();
        let (s, var) = Spread::of(&self.var.buf(), &Ax::indices(), correction);
        let std = var.unary(UnaryOp::Sqrt);
        let var = Var::record(std.reshape(&out.dims()), &[&self.var], || {
            Box::new(move |g: &LazyBuffer| {
                let std = std.expand(&s.dims);
                let slope = s.centered.div(&std.mul(&LazyBuffer::full(&s.dims, s.divisor)));
                let zero = LazyBuffer::full(&s.dims, 0.0);
                let flat = std.binary(BinaryOp::CmpEq, &zero);
                // Picked after the product, as PyTorch masks: +0 whatever `g` is (`-0`, NaN).
                [flat.where_(&zero, &slope.mul(&g.reshape(&s.kept).expand(&s.dims)))].into()
            }) as crate::autograd::BackwardFn
        });
        Tensor::from_var(out, var)
    }

    /// Each value limited to `[lo, hi]`: `min(max(x, lo), hi)`, as `torch.clamp`, so `hi` where
    /// `lo > hi`. The gradient passes strictly inside the bounds (`lo < x < hi`) and not at them,
    /// as `torch.clamp`'s does in PyTorch 2.15 (like `relu`'s at 0 and `hardtanh`'s; earlier
    /// releases passed it at the bounds too); a NaN stays NaN and passes none.
    ///
    /// Panics if a bound is NaN, naming both.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let x = Tensor::from([-2.0, 0.0, 0.5, 3.0]).requires_grad();
    /// let y = x.clamp(0.0, 1.0);
    /// assert_eq!(y.to_array(), [0.0, 0.0, 0.5, 1.0]);
    /// y.sum_all().backward();
    /// assert_eq!(x.grad().unwrap().to_array(), [0.0, 0.0, 1.0, 0.0]);
    /// ```
    #[doc(alias = "clip")]
    #[track_caller]
    pub fn clamp(&self, lo: f32, hi: f32) -> Self {
        assert!(
            !lo.is_nan() && !hi.is_nan(),
            "clamp: the bounds must be numbers, got [{lo}, {hi}]"
        );
        let dims = self.dims();
        let x = self.var.buf().into_owned();
        let (lo, hi) = (LazyBuffer::full(&dims, lo), LazyBuffer::full(&dims, hi));
        // `max(lo, x)` is `x` at a tie and at a NaN, and `min(hi, ·)` likewise: the bits of
        // taking `lo` only below it and `hi` only above it. Two ops where selecting by compares
        // took six, and the gradient's mask is computed only by backward.
        let value = hi.binary(BinaryOp::Min, &lo.binary(BinaryOp::Max, &x));
        let var = Var::record(value, &[&self.var], || {
            Box::new(move |g: &LazyBuffer| {
                // `lo < x < hi`: false at a bound, at a NaN, and everywhere when `lo >= hi`.
                let kept = lo
                    .binary(BinaryOp::CmpLt, &x)
                    .mul(&x.binary(BinaryOp::CmpLt, &hi));
                [kept.where_(g, &LazyBuffer::full(&dims, 0.0))].into()
            }) as crate::autograd::BackwardFn
        });
        Tensor::from_var(self.shape, var)
    }

    /// `self` where `keep(row, column)` holds over its last two axes, 0 elsewhere.
    fn triangle(&self, keep: impl Fn(usize, usize) -> bool) -> Self {
        let dims = self.dims();
        if dims.contains(&0) {
            return self.clone();
        }
        let (m, n) = (dims[dims.len() - 2], dims[dims.len() - 1]);
        let dropped = (0..m * n).map(|k| if keep(k / n, k % n) { 0.0 } else { 1.0 });
        let dropped = LazyBuffer::from_values(dropped, &[m, n]).expect("a mask of the last two axes");
        self.fill_where(&dropped, 0.0)
    }

    /// `op(self, rhs)` for two tensors of this exact shape.
    fn zip(&self, op: BinaryOp, rhs: &Self) -> Self {
        Tensor::from_var(self.shape, self.var.binary(op, &rhs.var))
    }

    /// GELU with the exact erf form, `x·Φ(x)` with `Φ(x) = erf(x/√2)·0.5 + 0.5`, by
    /// [`erf`](Self::erf)'s approximation: within `3e-7·|x|` plus half an ulp of the exact value.
    /// One elementwise primitive (the same bits as the composite it replaced), with the gradient
    /// `Φ(x) + x·φ(x)`.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let y = Tensor::from([0.0, 1.0]).gelu().to_array();
    /// assert!((y[1] - 0.841_344_7).abs() < 1e-6 && y[0] == 0.0);
    /// ```
    pub fn gelu(&self) -> Self {
        Tensor::from_var(self.shape, self.var.unary(UnaryOp::Gelu))
    }

    /// GELU in its tanh form, `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let y = Tensor::from([1.0]).gelu_tanh().to_array();
    /// assert!((y[0] - 0.841_192).abs() < 1e-5);
    /// ```
    pub fn gelu_tanh(&self) -> Self {
        let cube = self.square().zip(BinaryOp::Mul, self);
        let inner = self.zip(BinaryOp::Add, &(cube * 0.044_715)) * (2.0 / std::f32::consts::PI).sqrt();
        self.zip(BinaryOp::Mul, &(inner.tanh() * 0.5 + 0.5))
    }

    /// The error function, by a rational approximation `x·P(x²)/Q(x²)` (degree 11 over 10, whose
    /// own relative error is below 2e-8 on `[0, 3.925]`; beyond, erf is ±1 in f32): within 5.9 ulp
    /// of the exact value over every f32, so it keeps its relative accuracy down to tiny
    /// arguments, and at most 3.5e-7 from it. Never past ±1. One elementwise primitive, so it
    /// fuses into a single vectorized pass.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let y = Tensor::from([0.0, 1.0, -1.0, 1e-6]).erf().to_array();
    /// assert!(y[0] == 0.0 && (y[1] - 0.842_700_8).abs() < 2e-7 && (y[2] + 0.842_700_8).abs() < 2e-7);
    /// assert!((y[3] / 1.128_379_2e-6 - 1.0).abs() < 1e-6);
    /// ```
    pub fn erf(&self) -> Self {
        Tensor::from_var(self.shape, self.var.unary(UnaryOp::Erf))
    }
}

/// Class indices for a batch of `B` samples: the targets of [`cross_entropy`]. The batch size is a
/// type, so logits and labels of different static batch sizes do not compile; labels whose batch
/// type is not the logits' (`Labels<Const<8>>` for `(usize, Const<C>)` logits, say) are a type
/// error too, and [`Labels::for_rows`] makes labels of the logits' own batch type.
#[derive(Clone, Debug, PartialEq)]
pub struct Labels<B: Dim> {
    pub(super) batch: B,
    pub(super) indices: Vec<usize>,
}

impl<B: Dim> Labels<B> {
    /// Labels for the batch `batch`; [`Error::ShapeMismatch`] naming both counts if
    /// `indices.len()` is not its size.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert!(Labels::new(vec![0, 2, 1], Const::<3>).is_ok());
    /// let err = Labels::new(vec![0, 2], 3usize).unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "Labels::new: shapes [2] and [3] are incompatible (one class index per sample of the batch)"
    /// );
    /// ```
    pub fn new(indices: Vec<usize>, batch: B) -> Result<Self> {
        Labels::counted("Labels::new", indices, batch)
    }

    /// [`new`](Self::new), its count error naming `op`.
    fn counted(op: &'static str, indices: Vec<usize>, batch: B) -> Result<Self> {
        if indices.len() != batch.size() {
            return Err(Error::ShapeMismatch {
                op,
                lhs: vec![indices.len()],
                rhs: vec![batch.size()],
                rule: "one class index per sample of the batch",
            });
        }
        Ok(Labels { batch, indices })
    }

    /// Labels for the rows of `logits`, of its batch type, so a static batch needs no
    /// `Const::<B>` spelled out; [`Error::ShapeMismatch`] if there is not one index per row.
    /// Class indices are checked by the loss.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let logits = Tensor::<Rank2<3, 4>>::zeros();
    /// let labels = Labels::for_rows(&logits, vec![0, 3, 1]).unwrap();
    /// assert!((logits.cross_entropy(&labels).unwrap().item() - 4f32.ln()).abs() < 1e-6);
    /// assert!(Labels::for_rows(&logits, vec![0, 3]).is_err());
    /// ```
    pub fn for_rows<const C: usize, G: GradMode>(
        logits: &Tensor<(B, Const<C>), G>,
        indices: Vec<usize>,
    ) -> Result<Self> {
        Labels::counted("Labels::for_rows", indices, logits.shape.0)
    }

    /// The class indices.
    pub fn indices(&self) -> &[usize] {
        &self.indices
    }

    /// `Ok` if these label the rows of a `[rows, classes]` (`dims`) for `op`: one label per
    /// row ([`Error::ShapeMismatch`]), each below `classes` ([`Error::Data`] naming `op` and the
    /// label).
    pub(super) fn check(&self, op: &'static str, dims: &[usize]) -> Result<()> {
        if self.batch.size() != dims[0] {
            return Err(Error::ShapeMismatch {
                op,
                lhs: dims.to_vec(),
                rhs: vec![self.batch.size()],
                rule: "one label per row",
            });
        }
        let classes = dims[1];
        if let Some((i, &label)) = self.indices.iter().enumerate().find(|&(_, &l)| l >= classes) {
            return Err(Error::Data {
                location: format!("{op}: labels[{i}]"),
                message: match classes {
                    0 => format!("class {label} is out of range: there are no classes"),
                    _ => format!(
                        "class {label} is out of range for {classes} classes (labels count from 0: \
                         0..={})",
                        classes - 1
                    ),
                },
            });
        }
        Ok(())
    }
}

impl Labels<usize> {
    /// Labels for a run-time batch of `indices.len()` samples.
    pub fn from_vec(indices: Vec<usize>) -> Self {
        Labels {
            batch: indices.len(),
            indices,
        }
    }
}

/// Mean cross entropy of `logits` (one row per sample) against class `labels`:
/// `mean_i( logsumexp(logits_i) - logits_i[label_i] )`, finite for logits of any finite
/// magnitude. A `-inf` logit (a mask) other than the label's costs nothing; on the label it makes
/// the loss `+inf`; a row holding `+inf` or NaN makes it NaN (as in PyTorch). The mean over an
/// empty batch is `0/0`: NaN, as in PyTorch (and as [`Tensor::mean_all`] of no values).
///
/// A label `>= C` is [`Error::Data`] naming the sample; a run-time batch size that differs is
/// [`Error::ShapeMismatch`].
///
/// ```
/// use teenygrad::prelude::*;
/// use teenygrad::tensor::{Labels, cross_entropy};
/// let logits = Tensor::from([[0.0, 0.0], [10.0, -10.0]]);
/// let loss = cross_entropy(&logits, &Labels::new(vec![0, 0], Const::<2>).unwrap()).unwrap();
/// assert!((loss.item() - (2f32.ln() + 2e-9) / 2.0).abs() < 1e-6);
/// assert!(cross_entropy(&logits, &Labels::new(vec![0, 2], Const::<2>).unwrap()).is_err());
/// ```
pub fn cross_entropy<B: Dim, const C: usize, G: GradMode>(
    logits: &Tensor<(B, Const<C>), G>,
    labels: &Labels<B>,
) -> Result<Tensor<(), G>> {
    Ok(Tensor::from_var(
        (),
        cross_entropy_var(logits, labels, 0.0, false)?,
    ))
}

/// Each sample's cross entropy, as PyTorch's `cross_entropy(.., reduction="none")`: row `i` of
/// the result is `logsumexp(logits_i) − logits_i[label_i]`, so their mean is [`cross_entropy`]
/// (up to its rounding) and their sum `reduction="sum"`. Weighting them (classes of unequal
/// cost) before reducing gives PyTorch's `weight`; to leave samples out, as its `ignore_index`
/// does (padded tokens), select the rows kept first ([`Tensor::select_rows`]): a masking
/// product keeps a NaN or infinite row's NaN, in the loss and its gradient. Each row's
/// gradient is `softmax − one_hot` times that row's upstream gradient. Errors as
/// [`cross_entropy`].
///
/// ```
/// use teenygrad::prelude::*;
/// use teenygrad::tensor::cross_entropy_per_sample;
/// let logits = Tensor::from([[0.0, 0.0], [0.0, 0.0], [5.0, -5.0]]);
/// let labels = Labels::for_rows(&logits, vec![0, 1, 0]).unwrap();
/// let each = cross_entropy_per_sample(&logits, &labels).unwrap().to_array();
/// assert!((each[0] - 2f32.ln()).abs() < 1e-7 && each[0] == each[1] && each[2] < 1e-4);
/// // Weighting the samples, as `weight` does for their classes.
/// let w = Tensor::from([1.0, 1.0, 0.0]);
/// let weighted = (cross_entropy_per_sample(&logits, &labels).unwrap() * w).sum_all() / 2.0;
/// assert!((weighted.item() - 2f32.ln()).abs() < 1e-7);
/// ```
#[doc(alias("reduction"))]
pub fn cross_entropy_per_sample<B: Dim, const C: usize, G: GradMode>(
    logits: &Tensor<(B, Const<C>), G>,
    labels: &Labels<B>,
) -> Result<Tensor<(B,), G>> {
    Ok(Tensor::from_var(
        (logits.shape.0,),
        cross_entropy_var(logits, labels, 0.0, true)?,
    ))
}

/// [`cross_entropy`] against targets smoothed toward the uniform distribution, as PyTorch's
/// `cross_entropy(logits, labels, label_smoothing=smoothing)`: the label's class gets
/// `1 − smoothing + smoothing/C` of the target and every other `smoothing/C`, which is
/// `(1 − smoothing)·cross_entropy + smoothing·mean_i(−mean_c log_softmax(logits_i)_c)`. The
/// gradient is `(softmax − (1 − smoothing)·one_hot − smoothing/C)/batch`. Every logit enters
/// the loss, so a `-inf` logit (a mask) makes it `+inf`, as in PyTorch. `smoothing` 0 is
/// [`cross_entropy`], the same bits.
///
/// Errors as [`cross_entropy`], and [`Error::InvalidArgument`] if `smoothing` is not in
/// `[0, 1]`.
///
/// ```
/// use teenygrad::prelude::*;
/// use teenygrad::tensor::cross_entropy_with_label_smoothing as smoothed;
/// let logits = Tensor::from([[2.0, 0.0]]);
/// let labels = Labels::new(vec![0], Const::<1>).unwrap();
/// let loss = smoothed(&logits, &labels, 0.2).unwrap();
/// // Targets [0.9, 0.1]: 0.9·(−log p₀) + 0.1·(−log p₁).
/// let (p0, p1) = (1.0 / (1.0 + (-2f32).exp()), 1.0 / (1.0 + 2f32.exp()));
/// assert!((loss.item() - (-0.9 * p0.ln() - 0.1 * p1.ln())).abs() < 1e-6);
/// ```
#[doc(alias("label_smoothing"))]
pub fn cross_entropy_with_label_smoothing<B: Dim, const C: usize, G: GradMode>(
    logits: &Tensor<(B, Const<C>), G>,
    labels: &Labels<B>,
    smoothing: f32,
) -> Result<Tensor<(), G>> {
    if !(0.0..=1.0).contains(&smoothing) {
        let message = format!("smoothing = {smoothing} is not in [0, 1]");
        return Err(Error::InvalidArgument {
            op: "cross_entropy",
            message,
        });
    }
    Ok(Tensor::from_var(
        (),
        cross_entropy_var(logits, labels, smoothing, false)?,
    ))
}

/// The cross entropy of the functions above, recorded with its own backward rule: each row's
/// (`per_sample`) or their mean. `smoothing` is in `[0, 1]`, and 0 records exactly the
/// unsmoothed loss's operations.
fn cross_entropy_var<B: Dim, const C: usize, G: GradMode>(
    logits: &Tensor<(B, Const<C>), G>,
    labels: &Labels<B>,
    smoothing: f32,
    per_sample: bool,
) -> Result<Var> {
    labels.check("cross_entropy", &logits.dims())?;
    let batch = logits.shape.0.size();
    // The forward pass records no rules: the loss has one, below.
    let x = logits.var.buf().into_owned();
    // Per row, `log Σ exp(x - m) - (x[label] - m)` with `m` the maximum: the shifted logits keep
    // the loss accurate to its own magnitude when the logits are large. The label's logit is
    // picked, one read per row (comparing every logit with the label and summing took 84 of
    // 225 µs of [1024, 100]), not multiplied by the one-hot matrix, since a masked logit's
    // `-inf · 0` would be NaN; and picked from `x`, then shifted (the same rounding as picking
    // from `x - m`), so the shifted logits feed only the sum's kernel.
    let max = x.reduce(ReduceOp::Max, &[1]);
    let shifted = x.sub(&max.expand(x.shape()));
    let sum_exp = shifted.unary(UnaryOp::Exp).sum(&[1]);
    let picked = x.pick_columns(labels.indices[..].into()).sub(&max);
    let batch_size = LazyBuffer::full(&[], batch as f32);
    let log_sum = sum_exp.unary(UnaryOp::Log);
    let mut losses = log_sum.sub(&picked);
    if smoothing > 0.0 {
        // PyTorch's `(1 − ε)·nll + (ε/C)·(−Σ_c log_softmax_c)`, per row, with
        // `−Σ_c log_softmax_c = C·log Σ exp(x − m) − Σ_c (x_c − m)`.
        let full = |v: f32| LazyBuffer::full(log_sum.shape(), v);
        let uniform = log_sum.mul(&full(C as f32)).sub(&shifted.sum(&[1]));
        losses = (full(1.0 - smoothing).mul(&losses)).add(&full(smoothing / C as f32).mul(&uniform));
    }
    let out = match per_sample {
        true => losses.reshape(&[batch]),
        false => losses.sum(&[0]).reshape(&[]).div(&batch_size),
    };
    Ok(Var::record(out, &[&logits.var], || {
        // Only the gradient reads the one-hot matrix: built when one is recorded.
        let one_hot = one_hot(&labels.indices, C).expect("a one-hot matrix's values fill its shape");
        Box::new(move |g: &LazyBuffer| {
            // d loss / d x = (softmax(x) - target) · g / batch, the target the one-hot matrix
            // or its smoothing. `x - m` again, as a node of its own: the forward's, read here
            // too, would be written out for two kernels (a kernel of its own in every step).
            let shape = x.shape();
            let shifted = x.sub(&max.expand(shape));
            let softmax = shifted.unary(UnaryOp::Exp).div(&sum_exp.expand(shape));
            let scale = match per_sample {
                true => g.reshape(&[shape[0], 1]).expand(shape),
                false => g.div(&batch_size).reshape(&[1, 1]).expand(shape),
            };
            let target = if smoothing > 0.0 {
                let full = |v: f32| LazyBuffer::full(shape, v);
                full(1.0 - smoothing)
                    .mul(&one_hot)
                    .add(&full(smoothing / C as f32))
            } else {
                one_hot
            };
            [softmax.sub(&target).mul(&scale)].into()
        }) as crate::autograd::BackwardFn
    }))
}

/// The `[batch, classes]` one-hot matrix of `indices` (each `< classes`). Built lazily as
/// `column == label`, which the kernel reading it computes in place, so no `batch × classes`
/// buffer is filled; class indices up to 2^24 are exact in `f32`, and beyond that the matrix is
/// written out.
pub(super) fn one_hot(indices: &[usize], classes: usize) -> Result<LazyBuffer> {
    let batch = indices.len();
    if classes > 1 << 24 {
        let mut one_hot = vec![0.0f32; batch * classes];
        for (row, &label) in indices.iter().enumerate() {
            one_hot[row * classes + label] = 1.0;
        }
        return LazyBuffer::from_vec(one_hot, &[batch, classes]);
    }
    let labels = LazyBuffer::from_values(indices.iter().map(|&l| l as f32), &[batch, 1])?;
    let columns = LazyBuffer::from_values((0..classes).map(|c| c as f32), &[1, classes])?;
    let shape = [batch, classes];
    Ok(labels
        .expand(&shape)
        .binary(BinaryOp::CmpEq, &columns.expand(&shape)))
}

/// `tril` and `triu` for tensors of rank 2 and more, over their last two axes.
macro_rules! triangles {
    ($($lead:ident),*) => {
        impl<$($lead: Dim,)* M: Dim, N: Dim, G: GradMode> Tensor<($($lead,)* M, N), G> {
            /// The values on and below the `diagonal`-th diagonal of each matrix (the last two
            /// axes), 0 above it, as `torch.tril`: 0 is the main diagonal, 1 the one above it,
            /// -1 the one below. The gradient passes where values are kept.
            ///
            /// ```
            /// use teenygrad::prelude::*;
            /// let x = Tensor::from([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
            /// assert_eq!(x.tril(0).to_array(), [[1.0, 0.0, 0.0], [4.0, 5.0, 0.0]]);
            /// // A causal mask for `masked_fill`: 1 where a position would see the future.
            /// let future = Tensor::<Rank2<3, 3>>::ones().triu(1);
            /// assert_eq!(future.to_array(), [[0.0, 1.0, 1.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]);
            /// ```
            pub fn tril(&self, diagonal: isize) -> Self {
                self.triangle(|i, j| j as isize - i as isize <= diagonal)
            }

            /// The values on and above the `diagonal`-th diagonal of each matrix (the last two
            /// axes), 0 below it, as `torch.triu` (see [`tril`](Self::tril)).
            pub fn triu(&self, diagonal: isize) -> Self {
                self.triangle(|i, j| j as isize - i as isize >= diagonal)
            }
        }
    };
}
triangles!();
triangles!(A);
triangles!(A, B);

impl<B: Dim, const C: usize, G: GradMode> Tensor<(B, Const<C>), G> {
    /// The index of the largest value in each row (the first, on ties). NaN is never the largest
    /// (PyTorch's `argmax` takes it as the largest); a row of only NaN gives 0. Realizes.
    ///
    /// Rows of no values (`C = 0`) have no largest: a compile error (when code is generated, as
    /// for `reshape`).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([[0.1, 0.9], [2.0, 1.0]]).argmax_rows(), vec![1, 0]);
    /// ```
    #[doc(alias = "argmax")]
    pub fn argmax_rows(&self) -> Vec<usize> {
        const {
            assert!(
                C > 0,
                "argmax_rows needs at least one column: no value is the largest"
            )
        };
        let values = self.to_vec();
        values
            .chunks(C)
            .map(|row| {
                row.iter()
                    .enumerate()
                    .fold(
                        (0, f32::NEG_INFINITY),
                        |(bi, bv), (i, &v)| if v > bv { (i, v) } else { (bi, bv) },
                    )
                    .0
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::one_hot;

    #[test]
    fn one_hot_is_exact_lazily_and_written_out() {
        let lazy = one_hot(&[2, 0, 1], 3).unwrap();
        assert_eq!(lazy.to_vec(), [0., 0., 1., 1., 0., 0., 0., 1., 0.]);
        // Beyond 2^24 classes f32 cannot tell neighbouring indices apart: the matrix is written.
        let classes = (1 << 24) + 2;
        let wide = one_hot(&[classes - 1], classes).unwrap();
        assert!(wide.is_realized());
        let row = wide.to_vec();
        assert_eq!(
            (row[classes - 1], row[classes - 2], row.iter().sum::<f32>()),
            (1.0, 0.0, 1.0)
        );
    }
}
