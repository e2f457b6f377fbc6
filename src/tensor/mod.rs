//! The typed tensor: a shape type `S`, a gradient mode `G`, and a lazy value underneath.
//!
//! ```
//! use teenygrad::prelude::*;
//! let w = Tensor::from([[1.0, 2.0], [3.0, 4.0]]).requires_grad();
//! let x = Tensor::from([1.0, -1.0]);
//! let loss = w.matmul(&x).square().sum_all(); // (w·x)² summed: a tracked scalar
//! loss.backward();
//! // d/dw Σ (w·x)ᵢ² = 2 (w·x) xᵀ, with w·x = [-1, -1]
//! assert_eq!(w.grad().unwrap().to_array(), [[-2.0, 2.0], [-2.0, 2.0]]);
//! ```

mod cat;
mod check;
mod composite;
mod create;
mod elementwise;
mod fmt;
mod logistic;
mod loss_methods;
mod matmul;
mod movement;
mod near_one;
mod read;
mod rectifier;
mod reduce;
mod regression;
mod select;

pub use composite::{Labels, cross_entropy, cross_entropy_per_sample, cross_entropy_with_label_smoothing};
pub use logistic::{
    binary_cross_entropy, binary_cross_entropy_with_logits, try_binary_cross_entropy,
    try_binary_cross_entropy_with_logits,
};
pub use regression::{huber_loss, l1_loss, mse, try_huber_loss, try_l1_loss, try_mse};
pub use select::nll_loss;

use std::marker::PhantomData;

use crate::autograd::Var;
use crate::lazy::LazyBuffer;
use crate::shape::Shape;

/// Whether a tensor records how it was made, as a type: [`NoGrad`] or [`Tracked`].
pub trait GradMode: sealed::Sealed + Copy + Send + Sync + std::fmt::Debug + 'static {
    /// True for [`Tracked`].
    const TRACKED: bool;
}

/// The default mode: no record, no cost. `backward()` does not exist on such tensors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoGrad;

/// The tensor carries the record of the operations that made it, for `backward()`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tracked;

impl GradMode for NoGrad {
    const TRACKED: bool = false;
}
impl GradMode for Tracked {
    const TRACKED: bool = true;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::NoGrad {}
    impl Sealed for super::Tracked {}
}

/// The mode of an operation's result: tracked if any input is.
pub trait Join<Rhs: GradMode>: GradMode {
    /// `Tracked` if either side is, else `NoGrad`.
    type Out: GradMode;
}
impl Join<NoGrad> for NoGrad {
    type Out = NoGrad;
}
impl Join<Tracked> for NoGrad {
    type Out = Tracked;
}
impl Join<NoGrad> for Tracked {
    type Out = Tracked;
}
impl Join<Tracked> for Tracked {
    type Out = Tracked;
}

/// An n-dimensional array of `f32` whose shape `S` is a type (see [`crate::shape`]) and whose
/// gradient mode `G` says whether it records operations for `backward()`.
///
/// Operations are lazy: they record and return at once; values are computed when read
/// (`to_vec`, `to_array`, `item`, `Display`), on `realize()`, by `backward()` and by an optimizer
/// step. Cloning is cheap and shares the value (and, if tracked, the record): a clone of a
/// parameter is the same parameter, which sees every optimizer step and load and passes its
/// gradients on. A module's clone is a new module instead (see [`Linear`](crate::nn::Linear));
/// [`detach`](Tensor::detach) takes a snapshot of the values.
pub struct Tensor<S: Shape, G: GradMode = NoGrad> {
    pub(crate) shape: S,
    pub(crate) var: Var,
    _mode: PhantomData<G>,
}

impl<S: Shape, G: GradMode> Clone for Tensor<S, G> {
    fn clone(&self) -> Self {
        Tensor {
            shape: self.shape,
            var: self.var.clone(),
            _mode: PhantomData,
        }
    }
}

impl<S: Shape, G: GradMode> Tensor<S, G> {
    pub(crate) fn from_var(shape: S, var: Var) -> Self {
        debug_assert_eq!(shape.dims(), var.buf().shape(), "typed and lazy shapes agree");
        debug_assert!(
            G::TRACKED || var.node.is_none(),
            "an untracked tensor has no record"
        );
        Tensor {
            shape,
            var,
            _mode: PhantomData,
        }
    }

    /// The shape, as its type's value (its `dims()` gives the sizes).
    pub fn shape(&self) -> S {
        self.shape
    }

    /// The sizes of the dimensions.
    pub fn dims(&self) -> Vec<usize> {
        self.shape.dims()
    }

    /// The number of elements.
    pub fn numel(&self) -> usize {
        self.var.buf().numel()
    }

    /// The lazy value underneath (for inspection and the engine's own tests): a handle to it,
    /// so a parameter's is its value now, not after a later optimizer step.
    pub fn lazy(&self) -> LazyBuffer {
        self.var.buf().into_owned()
    }

    /// Computes the value now (it is cached), and returns `self`.
    ///
    /// Tensors that share pending work (a common intermediate) and are realized one by one
    /// compute it once each; [`LazyBuffer::realize_all`] with their [`lazy`](Self::lazy)
    /// handles realizes them in one schedule, which stores shared work once for all of them
    /// (or, where it is cheaper, computes a large cheap intermediate inside each reader).
    pub fn realize(self) -> Self {
        self.var.buf().realize();
        self
    }

    /// For a parameter (a leaf made by `requires_grad`), a new parameter with the same values
    /// (no copy until either is updated) and no gradient; for anything else, a clone. What a
    /// module's `clone` does to its parameters.
    pub(crate) fn copy_param(&self) -> Self {
        Tensor::from_var(self.shape, self.var.fresh_leaf())
    }

    /// The same values, untracked: no gradient flows back through the result.
    pub fn detach(&self) -> Tensor<S> {
        Tensor::from_var(self.shape, self.var.detach())
    }
}

// Bounds rather than impls on one grad mode: called on the other mode, each says why instead of
// finding no method (and suggesting a similar name).
impl<S: Shape, G: GradMode> Tensor<S, G> {
    /// A leaf that records operations and accumulates gradients (a parameter). Only for an
    /// untracked tensor: a tracked one already receives gradients through `backward()`.
    pub fn requires_grad(self) -> Tensor<S, Tracked>
    where
        G: IsUntracked,
    {
        Tensor::from_var(self.shape, Var::leaf(self.var.buf().into_owned()))
    }

    /// The gradient accumulated by `backward()` calls since the last [`zero_grad`](Self::zero_grad),
    /// or `None` if none reached this tensor: before the first `backward()`, after `zero_grad`,
    /// when the loss does not depend on it, and always for a tensor that is not a leaf. Only
    /// leaves (made by `requires_grad`) accumulate; an untracked tensor has no `grad()`.
    pub fn grad(&self) -> Option<Tensor<S>>
    where
        G: HasGrad,
    {
        self.var
            .grad()
            .map(|g| Tensor::from_var(self.shape, crate::autograd::Var::untracked(g)))
    }
}

impl<S: Shape> Tensor<S, Tracked> {
    /// Clears the accumulated gradient.
    pub fn zero_grad(&self) {
        self.var.zero_grad();
    }
}

/// The shapes `backward()` can start from: only the scalar `()`.
///
/// A bound on [`Tensor::backward`], so that calling it on a non-scalar names the shape.
#[diagnostic::on_unimplemented(
    message = "`backward()` needs a scalar, but this tensor has shape `{Self}`",
    label = "not a scalar: a loss must have shape `()`",
    note = "reduce to a scalar loss first, e.g. `.sum_all()` or `.mean_all()`"
)]
pub trait ScalarShape: Shape + sealed::Sealed {}
impl sealed::Sealed for () {}
impl ScalarShape for () {}

/// The gradient modes `backward()` can start from: only [`Tracked`].
///
/// A bound on [`Tensor::backward`], so that calling it on an untracked tensor says why.
#[diagnostic::on_unimplemented(
    message = "`backward()` needs a tracked tensor, but this one is `{Self}` (untracked)",
    label = "records no operations to walk back through",
    note = "make the parameters leaves with `.requires_grad()`: every result computed from a tracked tensor is tracked"
)]
pub trait IsTracked: GradMode {}
impl IsTracked for Tracked {}

/// The gradient modes that have a [`Tensor::grad`]: only [`Tracked`].
#[diagnostic::on_unimplemented(
    message = "only a tracked tensor has `grad()`, and this one is `{Self}`",
    label = "records no operations, so no gradient reaches it",
    note = "make it a leaf with `.requires_grad()` before the forward pass that uses it"
)]
pub trait HasGrad: GradMode {}
impl HasGrad for Tracked {}

/// The gradient modes [`Tensor::requires_grad`] starts from: only [`NoGrad`].
#[diagnostic::on_unimplemented(
    message = "`requires_grad()` makes a leaf of an untracked tensor, and this one is already `{Self}`",
    label = "already tracked",
    note = "a tracked result receives its gradient through `backward()`; `.detach().requires_grad()` makes a new leaf of its values"
)]
pub trait IsUntracked: GradMode {}
impl IsUntracked for NoGrad {}

impl<S: Shape, G: GradMode> Tensor<S, G> {
    /// Backpropagates from this scalar: adds d(self)/d(leaf) into every leaf's `grad()`.
    ///
    /// Only a tracked scalar has it (`Tensor<(), Tracked>`; the bounds make anything else a
    /// compile error that says what is missing). Runs in reverse topological order without
    /// recursion and realizes the leaves' gradients. Each operation's backward rule is freed as it
    /// runs, so a graph is backpropagated once: a second `backward()` through the same operations
    /// panics (reported at the line that called `backward`), before any gradient changes; build
    /// the forward pass again instead. So does one through operations another thread's
    /// `backward()` is running through at the same time (only one of them can take them).
    #[track_caller]
    pub fn backward(&self)
    where
        S: ScalarShape,
        G: IsTracked,
    {
        self.var.backward_with(LazyBuffer::full(&[], 1.0));
    }
}
