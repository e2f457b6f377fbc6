//! Joining two shapes along one axis: every other dim the same type, the joined one free.
//!
//! Stable Rust cannot add two const sizes in a type, so the joined axis's dim is chosen by the
//! caller (`usize`, or a static size checked at run time); the other dims are checked by type.

use super::dims::Dim;
use super::shapes::Shape;

/// A shape with an axis `I` to join along: [`Joined<N>`](CatAlong::Joined) is the shape with
/// `N` on axis `I`, and [`OtherDims`](CatAlong::OtherDims) the dims before and after it. Two
/// shapes join along `I` when their `OtherDims` are the same type: the same rank and every
/// other dim the same.
///
/// ```
/// use teenygrad::shape::{CatAlong, Const};
/// let s = (Const::<2>, Const::<3>);
/// assert_eq!(CatAlong::<1>::joined(&s, 7usize), (Const::<2>, 7usize));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no axis {I} to join along",
    label = "no axis {I}",
    note = "axes count from 0, outermost first"
)]
pub trait CatAlong<const I: usize>: Shape {
    /// The dims before axis `I` and after it, as two tuples.
    type OtherDims;
    /// This shape with `N` as axis `I`'s dim.
    type Joined<N: Dim>: Shape;
    /// This shape with `n` as axis `I`'s dim.
    fn joined<N: Dim>(&self, n: N) -> Self::Joined<N>;
}

/// One impl per rank and axis: the dims before the axis, then after it.
macro_rules! cat_along {
    ($axis:literal; $($before:ident)*; $($after:ident)*) => {
        #[diagnostic::do_not_recommend]
        impl<$($before: Dim,)* A: Dim, $($after: Dim,)*> CatAlong<$axis> for ($($before,)* A, $($after,)*) {
            type OtherDims = (($($before,)*), ($($after,)*));
            type Joined<N: Dim> = ($($before,)* N, $($after,)*);
            #[allow(non_snake_case)]
            fn joined<N: Dim>(&self, n: N) -> Self::Joined<N> {
                let ($($before,)* _, $($after,)*) = *self;
                ($($before,)* n, $($after,)*)
            }
        }
    };
}

cat_along!(0;;);
cat_along!(0;; E1);
cat_along!(1; E0;);
cat_along!(0;; E1 E2);
cat_along!(1; E0; E2);
cat_along!(2; E0 E1;);
cat_along!(0;; E1 E2 E3);
cat_along!(1; E0; E2 E3);
cat_along!(2; E0 E1; E3);
cat_along!(3; E0 E1 E2;);
cat_along!(0;; E1 E2 E3 E4);
cat_along!(1; E0; E2 E3 E4);
cat_along!(2; E0 E1; E3 E4);
cat_along!(3; E0 E1 E2; E4);
cat_along!(4; E0 E1 E2 E3;);
cat_along!(0;; E1 E2 E3 E4 E5);
cat_along!(1; E0; E2 E3 E4 E5);
cat_along!(2; E0 E1; E3 E4 E5);
cat_along!(3; E0 E1 E2; E4 E5);
cat_along!(4; E0 E1 E2 E3; E5);
cat_along!(5; E0 E1 E2 E3 E4;);
