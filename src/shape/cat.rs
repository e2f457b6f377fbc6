//! Joining two shapes along one axis: every other dim the same type, the joined one free.
//!
//! Stable Rust cannot add two const sizes in a type, so the joined axis's dim is chosen by the
//! caller (`usize`, or a static size checked at run time); the other dims are checked by type.

use super::axes::for_each_axis;
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

macro_rules! cat_along {
    ([$(($p:ident $pi:tt))*] ($d:ident $i:tt) [$(($q:ident $qi:tt))*]) => {
        #[diagnostic::do_not_recommend]
        impl<$($p: Dim,)* $d: Dim, $($q: Dim,)*> CatAlong<$i> for ($($p,)* $d, $($q,)*) {
            type OtherDims = (($($p,)*), ($($q,)*));
            type Joined<N: Dim> = ($($p,)* N, $($q,)*);
            #[allow(non_snake_case)]
            fn joined<N: Dim>(&self, n: N) -> Self::Joined<N> {
                let ($($p,)* _, $($q,)*) = *self;
                ($($p,)* n, $($q,)*)
            }
        }
    };
}
for_each_axis!(cat_along);

/// Shapes that join along axis `I`: `Self` and `S2` both have the axis, the same rank, and the
/// same dims on every other axis (their [`CatAlong::OtherDims`] are one type). The bound of
/// [`Tensor::cat`](crate::tensor::Tensor::cat), named so a mismatch is reported in these words.
///
/// ```
/// use teenygrad::shape::{CatWith, Const, Rank2};
/// fn joins<A: CatWith<B, 1>, B: teenygrad::shape::Shape>() {}
/// joins::<Rank2<2, 3>, (Const<2>, usize)>();
/// ```
#[diagnostic::on_unimplemented(
    message = "cannot cat `{S2}` onto `{Self}` along axis {I}",
    label = "both need axis {I}, the same rank, and the same dims on every other axis",
    note = "to append one row to a matrix, give it the matrix's rank first: `row.unsqueeze(Axis::<0>)`",
    note = "a run-time `usize` dim pairs only with `usize` off the joined axis (`reshape_to` gives a tensor one)"
)]
pub trait CatWith<S2: Shape, const I: usize>: CatAlong<I> {}

#[diagnostic::do_not_recommend]
impl<S, S2, const I: usize> CatWith<S2, I> for S
where
    S: CatAlong<I>,
    S2: CatAlong<I, OtherDims = S::OtherDims>,
{
}
