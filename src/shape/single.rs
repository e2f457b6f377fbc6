//! Shapes of exactly one element, known to the compiler: what [`Tensor::item`] reads.
//!
//! [`Tensor::item`]: crate::tensor::Tensor::item

use super::{Const, ConstDim, One, Shape};

/// A dimension of size 1 known to the compiler: `Const<1>` or [`One`].
#[diagnostic::on_unimplemented(
    message = "`item()` needs a tensor of one element, but this tensor has a dim `{Self}`",
    label = "every dim must be a static 1 (`Const<1>` or `One`)",
    note = "reduce it first (`.sum_all()`, `.mean_all()`), or read its values with `.to_vec()`"
)]
pub trait UnitDim: ConstDim {}
impl UnitDim for Const<1> {}
impl UnitDim for One {}

/// The shapes of one element: `()` and any rank of [`UnitDim`]s (`[1]`, `[1, 1]`, ...).
///
/// A bound on [`Tensor::item`](crate::tensor::Tensor::item), so that calling it on a larger
/// tensor names the shape.
#[diagnostic::on_unimplemented(
    message = "`item()` needs a tensor of one element, but this tensor has shape `{Self}`",
    label = "not known at compile time to hold one element",
    note = "reduce it first (`.sum_all()`, `.mean_all()`), or read its values with `.to_vec()`"
)]
pub trait SingleElement: Shape {}

macro_rules! single_element {
    ($($d:ident),*) => {
        impl<$($d: UnitDim),*> SingleElement for ($($d,)*) {}
    };
}
single_element!();
single_element!(A);
single_element!(A, B);
single_element!(A, B, C);
single_element!(A, B, C, D);
single_element!(A, B, C, D, E);
single_element!(A, B, C, D, E, F);
