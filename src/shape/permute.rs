//! Permutations of a shape's axes, built from [`HasAxis`] per output position.
//!
//! Generating every permutation (720 at rank 6) would slow every build; instead an impl per rank
//! reads each output dim through `HasAxis`, and a const assert rejects repeated axes.

use super::axes::{Axes, Axes2, Axes3, Axes4, Axes5, Axes6, Axis, HasAxis, assert_distinct};
use super::dims::Dim;
use super::shapes::Shape;

/// A shape whose axes can be reordered by `Ax`; `Output` is the permuted shape.
///
/// `Ax` must name as many axes as the shape has, each in range (else this trait is not
/// implemented) and none twice (else [`permuted`](PermuteShape::permuted) fails to compile when
/// instantiated).
///
/// ```
/// use teenygrad::shape::{Axes3, Const, PermuteShape};
/// let s = (8usize, Const::<3>, Const::<4>);
/// assert_eq!(PermuteShape::<Axes3<0, 2, 1>>::permuted(&s), (8, Const::<4>, Const::<3>));
/// ```
#[diagnostic::on_unimplemented(
    message = "cannot permute shape `{Self}` by `{Ax}`",
    label = "`{Ax}` is not a permutation of this shape's axes",
    note = "a rank-R shape is permuted by R distinct axes, each in 0..R (`Axes2<1, 0>` swaps a matrix)"
)]
pub trait PermuteShape<Ax: Axes>: Shape {
    /// The permuted shape: dim `k` is the input's dim `Ax[k]`.
    type Output: Shape;
    /// The permuted shape.
    fn permuted(&self) -> Self::Output;
}

macro_rules! permute_impl {
    ($name:ident<$($a:ident),*> for ($($d:ident),*)) => {
        #[diagnostic::do_not_recommend]
        impl<$($d: Dim,)* $(const $a: usize,)*> PermuteShape<$name<$($a),*>> for ($($d,)*)
        where
            $(Self: HasAxis<$a>,)*
        {
            type Output = ($(<Self as HasAxis<$a>>::Dim,)*);
            fn permuted(&self) -> Self::Output {
                const { assert_distinct::<$name<$($a),*>>() };
                ($(HasAxis::<$a>::dim(self),)*)
            }
        }
    };
}
permute_impl!(Axis<I> for (D0));
permute_impl!(Axes2<I, J> for (D0, D1));
permute_impl!(Axes3<I, J, K> for (D0, D1, D2));
permute_impl!(Axes4<I, J, K, L> for (D0, D1, D2, D3));
permute_impl!(Axes5<I, J, K, L, M> for (D0, D1, D2, D3, D4));
permute_impl!(Axes6<I, J, K, L, M, N> for (D0, D1, D2, D3, D4, D5));

/// A shape of rank 2 or more, whose last two axes [`Tensor::t`](crate::tensor::Tensor::t)
/// swaps: a matrix's transpose, or each matrix's in a batch (PyTorch's `x.mT`).
///
/// ```
/// use teenygrad::shape::{Const, Rank4, SwapLast};
/// let s = (7usize, Const::<3>, Const::<4>);
/// assert_eq!(s.swapped(), (7, Const::<4>, Const::<3>));
/// assert_eq!(Rank4::<1, 2, 3, 4>::default().swapped(), Rank4::<1, 2, 4, 3>::default());
/// ```
#[diagnostic::on_unimplemented(
    message = "`t()` swaps the last two axes, and `{Self}` has fewer than two",
    label = "no last two axes to swap",
    note = "a vector has no transpose: `unsqueeze(Axis::<0>)` makes it a row, `unsqueeze(Axis::<1>)` a column"
)]
pub trait SwapLast: Shape {
    /// The shape with its last two dims swapped.
    type Output: Shape;
    /// The shape with its last two dims swapped.
    fn swapped(&self) -> Self::Output;
}

macro_rules! swap_last_impl {
    ($($d:ident)*; $m:ident $n:ident) => {
        impl<$($d: Dim,)* $m: Dim, $n: Dim> SwapLast for ($($d,)* $m, $n) {
            type Output = ($($d,)* $n, $m);
            #[allow(non_snake_case, reason = "each dim's value is named for its type")]
            fn swapped(&self) -> Self::Output {
                let ($($d,)* $m, $n) = *self;
                ($($d,)* $n, $m)
            }
        }
    };
}
swap_last_impl!(; M N);
swap_last_impl!(D0; M N);
swap_last_impl!(D0 D1; M N);
swap_last_impl!(D0 D1 D2; M N);
swap_last_impl!(D0 D1 D2 D3; M N);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::dims::{Const, One};
    use crate::shape::shapes::{Rank2, Rank3, Rank6};
    use std::any::TypeId;

    fn same<T: 'static, U: 'static>() -> bool {
        TypeId::of::<T>() == TypeId::of::<U>()
    }
    type Out<S, A> = <S as PermuteShape<A>>::Output;

    #[test]
    fn permuted_types() {
        assert!(same::<Out<Rank2<2, 3>, Axes2<1, 0>>, Rank2<3, 2>>());
        assert!(same::<Out<Rank2<2, 3>, Axes2<0, 1>>, Rank2<2, 3>>());
        assert!(same::<Out<(Const<5>,), Axis<0>>, (Const<5>,)>());
        assert!(same::<Out<Rank3<2, 3, 4>, Axes3<2, 0, 1>>, Rank3<4, 2, 3>>());
        assert!(same::<
            Out<Rank6<1, 2, 3, 4, 5, 6>, Axes6<5, 3, 1, 0, 2, 4>>,
            Rank6<6, 4, 2, 1, 3, 5>,
        >());
    }

    #[test]
    fn permuted_values() {
        let s = (9usize, One, Const::<4>, 2usize);
        let p = PermuteShape::<Axes4<3, 2, 0, 1>>::permuted(&s);
        assert_eq!(p, (2, Const::<4>, 9, One));
        assert_eq!(p.dims(), [2, 4, 9, 1]);
    }

    #[test]
    fn distinctness() {
        use crate::shape::axes::distinct;
        assert!(distinct(&[]));
        assert!(distinct(&[2, 0, 1]));
        assert!(!distinct(&[0, 1, 0]));
        const { assert!(Axes3::<2, 0, 1>::DISTINCT && !Axes3::<0, 1, 0>::DISTINCT) };
    }
}
