//! Adding and removing an axis: what `unsqueeze`, `squeeze` and `stack` do to a shape's type.

use super::axes::for_each_axis;
use super::dims::{Const, Dim, One};
use super::shapes::Shape;

/// A shape with room for a new axis at position `I` (`0..=rank`, rank at most 5):
/// [`Inserted<D>`](Unsqueeze::Inserted) is the shape with `D` there and the later axes one
/// further out.
///
/// ```
/// use teenygrad::shape::{Const, One, Unsqueeze};
/// let s = (Const::<2>, Const::<3>);
/// assert_eq!(Unsqueeze::<1>::inserted(&s, One), (Const::<2>, One, Const::<3>));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no place for a new axis {I}",
    label = "no position {I}",
    note = "a new axis goes at a position from 0 to the rank (the end), in a result of rank at most 6"
)]
pub trait Unsqueeze<const I: usize>: Shape {
    /// This shape with `D` as a new axis at `I`.
    type Inserted<D: Dim>: Shape;
    /// This shape with `d` as a new axis at `I`.
    fn inserted<D: Dim>(&self, d: D) -> Self::Inserted<D>;
}

/// A shape with an axis `I`: [`Squeezed`](Squeeze::Squeezed) is the shape without it, and
/// [`At`](Squeeze::At) its dim there, which `squeeze` needs to be a [`SqueezableDim`].
///
/// ```
/// use teenygrad::shape::{Const, One, Squeeze};
/// assert_eq!(Squeeze::<0>::squeezed(&(One, Const::<3>)), (Const::<3>,));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no axis {I} to remove",
    label = "no axis {I}",
    note = "axes count from 0, outermost first"
)]
pub trait Squeeze<const I: usize>: Shape {
    /// The dim at axis `I`.
    type At: Dim;
    /// This shape without axis `I`.
    type Squeezed: Shape;
    /// This shape without axis `I`.
    fn squeezed(&self) -> Self::Squeezed;
}

/// A dim that `squeeze` can remove: a static 1, [`One`] or [`Const<1>`].
#[diagnostic::on_unimplemented(
    message = "`squeeze` removes a dim the compiler knows is 1, but this axis is `{Self}`",
    label = "not `One` or `Const<1>`",
    note = "a run-time (`usize`) dim of size 1 is removed by `reshape_to`"
)]
pub trait SqueezableDim: Dim {}
impl SqueezableDim for One {}
impl SqueezableDim for Const<1> {}

/// For each rank and axis: `Squeeze` on the shape with that axis, `Unsqueeze` at that position
/// on the shape without it.
macro_rules! at_axis {
    ([$(($p:ident $pi:tt))*] ($d:ident $i:tt) [$(($q:ident $qi:tt))*]) => {
        #[diagnostic::do_not_recommend]
        impl<$($p: Dim,)* $($q: Dim,)*> Unsqueeze<$i> for ($($p,)* $($q,)*) {
            type Inserted<D: Dim> = ($($p,)* D, $($q,)*);
            #[allow(non_snake_case)]
            fn inserted<D: Dim>(&self, d: D) -> Self::Inserted<D> {
                let ($($p,)* $($q,)*) = *self;
                ($($p,)* d, $($q,)*)
            }
        }

        #[diagnostic::do_not_recommend]
        impl<$($p: Dim,)* $d: Dim, $($q: Dim,)*> Squeeze<$i> for ($($p,)* $d, $($q,)*) {
            type At = $d;
            type Squeezed = ($($p,)* $($q,)*);
            #[allow(non_snake_case, clippy::unused_unit)]
            fn squeezed(&self) -> Self::Squeezed {
                let ($($p,)* _, $($q,)*) = *self;
                ($($p,)* $($q,)*)
            }
        }
    };
}
for_each_axis!(at_axis);
