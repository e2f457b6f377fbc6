//! Adding and removing an axis: what `unsqueeze`, `squeeze` and `stack` do to a shape's type.

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

/// One impl of each per rank and position: the dims before it, then after it.
macro_rules! at_axis {
    ($axis:literal; $($before:ident)*; $($after:ident)*) => {
        #[diagnostic::do_not_recommend]
        impl<$($before: Dim,)* $($after: Dim,)*> Unsqueeze<$axis> for ($($before,)* $($after,)*) {
            type Inserted<D: Dim> = ($($before,)* D, $($after,)*);
            #[allow(non_snake_case)]
            fn inserted<D: Dim>(&self, d: D) -> Self::Inserted<D> {
                let ($($before,)* $($after,)*) = *self;
                ($($before,)* d, $($after,)*)
            }
        }

        #[diagnostic::do_not_recommend]
        impl<$($before: Dim,)* A: Dim, $($after: Dim,)*> Squeeze<$axis> for ($($before,)* A, $($after,)*) {
            type At = A;
            type Squeezed = ($($before,)* $($after,)*);
            #[allow(non_snake_case, clippy::unused_unit)]
            fn squeezed(&self) -> Self::Squeezed {
                let ($($before,)* _, $($after,)*) = *self;
                ($($before,)* $($after,)*)
            }
        }
    };
}

at_axis!(0;;);
at_axis!(0;; E1);
at_axis!(1; E0;);
at_axis!(0;; E1 E2);
at_axis!(1; E0; E2);
at_axis!(2; E0 E1;);
at_axis!(0;; E1 E2 E3);
at_axis!(1; E0; E2 E3);
at_axis!(2; E0 E1; E3);
at_axis!(3; E0 E1 E2;);
at_axis!(0;; E1 E2 E3 E4);
at_axis!(1; E0; E2 E3 E4);
at_axis!(2; E0 E1; E3 E4);
at_axis!(3; E0 E1 E2; E4);
at_axis!(4; E0 E1 E2 E3;);
at_axis!(0;; E1 E2 E3 E4 E5);
at_axis!(1; E0; E2 E3 E4 E5);
at_axis!(2; E0 E1; E3 E4 E5);
at_axis!(3; E0 E1 E2; E4 E5);
at_axis!(4; E0 E1 E2 E3; E5);
at_axis!(5; E0 E1 E2 E3 E4;);
