//! Reductions over typed axes: which axes go away, and what `keepdim` leaves behind.

use super::axes::{Axes, Axes2, Axes3, Axes4, Axes5, Axes6, Axis, assert_increasing, for_each_axis};
use super::dims::{Dim, One};
use super::shapes::Shape;

/// A shape that can be reduced over the axes `Ax`.
///
/// `Output` drops the reduced axes; `KeepDim` replaces each with [`One`], so the result
/// broadcasts back against the input. Multi-axis lists must be strictly increasing; that is
/// checked when [`reduced`](ReduceShape::reduced) or [`keepdim`](ReduceShape::keepdim) is
/// instantiated.
///
/// ```
/// use teenygrad::shape::{Axes2, Axis, Const, One, ReduceShape};
/// let s = (4usize, Const::<3>, Const::<2>);
/// assert_eq!(ReduceShape::<Axis<1>>::reduced(&s), (4, Const::<2>));
/// assert_eq!(ReduceShape::<Axes2<0, 2>>::keepdim(&s), (One, Const::<3>, One));
/// ```
#[diagnostic::on_unimplemented(
    message = "cannot reduce shape `{Self}` over `{Ax}`",
    label = "`{Ax}` has an axis out of range for this shape, or its axes are not increasing",
    note = "the axes of a rank-R shape are 0..R; a list of axes must be strictly increasing"
)]
pub trait ReduceShape<Ax: Axes>: Shape {
    /// The shape with the reduced axes removed.
    type Output: Shape;
    /// The shape with the reduced axes replaced by `One`.
    type KeepDim: Shape;
    /// The shape with the reduced axes removed.
    fn reduced(&self) -> Self::Output;
    /// The shape with the reduced axes replaced by `One`.
    fn keepdim(&self) -> Self::KeepDim;
}

macro_rules! reduce_axis {
    ([$(($p:ident $pi:tt))*] ($d:ident $i:tt) [$(($q:ident $qi:tt))*]) => {
        #[diagnostic::do_not_recommend]
        impl<$($p: Dim,)* $d: Dim, $($q: Dim,)*> ReduceShape<Axis<$i>> for ($($p,)* $d, $($q,)*) {
            type Output = ($($p,)* $($q,)*);
            type KeepDim = ($($p,)* One, $($q,)*);
            #[allow(clippy::unused_unit)] // reducing a rank-1 shape leaves `()`
            fn reduced(&self) -> Self::Output {
                ($(self.$pi,)* $(self.$qi,)*)
            }
            fn keepdim(&self) -> Self::KeepDim {
                ($(self.$pi,)* One, $(self.$qi,)*)
            }
        }
    };
}
for_each_axis!(reduce_axis);

// Several axes: drop the last (highest) axis first so the lower indices still point at the same
// dims, then reduce the rest. Each level asserts its list of axes is increasing.
macro_rules! reduce_axes {
    ($name:ident<$($a:ident),*> = $inner:ty, last $last:ident) => {
        #[diagnostic::do_not_recommend]
        impl<S, $(const $a: usize),*> ReduceShape<$name<$($a),*>> for S
        where
            S: ReduceShape<Axis<$last>>,
            <S as ReduceShape<Axis<$last>>>::Output: ReduceShape<$inner>,
            <S as ReduceShape<Axis<$last>>>::KeepDim: ReduceShape<$inner>,
        {
            type Output = <<S as ReduceShape<Axis<$last>>>::Output as ReduceShape<$inner>>::Output;
            type KeepDim =
                <<S as ReduceShape<Axis<$last>>>::KeepDim as ReduceShape<$inner>>::KeepDim;
            fn reduced(&self) -> Self::Output {
                const { assert_increasing::<$name<$($a),*>>() };
                ReduceShape::<$inner>::reduced(&ReduceShape::<Axis<$last>>::reduced(self))
            }
            fn keepdim(&self) -> Self::KeepDim {
                const { assert_increasing::<$name<$($a),*>>() };
                ReduceShape::<$inner>::keepdim(&ReduceShape::<Axis<$last>>::keepdim(self))
            }
        }
    };
}
reduce_axes!(Axes2<I, J> = Axis<I>, last J);
reduce_axes!(Axes3<I, J, K> = Axes2<I, J>, last K);
reduce_axes!(Axes4<I, J, K, L> = Axes3<I, J, K>, last L);
reduce_axes!(Axes5<I, J, K, L, M> = Axes4<I, J, K, L>, last M);
reduce_axes!(Axes6<I, J, K, L, M, N> = Axes5<I, J, K, L, M>, last N);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::shapes::{Rank2, Rank3, Rank6};
    use std::any::TypeId;

    fn same<T: 'static, U: 'static>() -> bool {
        TypeId::of::<T>() == TypeId::of::<U>()
    }
    type Out<S, A> = <S as ReduceShape<A>>::Output;
    type Keep<S, A> = <S as ReduceShape<A>>::KeepDim;
    use crate::shape::dims::Const as C;

    #[test]
    fn increasing_axes() {
        const {
            assert!(Axis::<3>::INCREASING && Axes3::<0, 2, 5>::INCREASING);
            assert!(!Axes2::<1, 1>::INCREASING && !Axes2::<1, 0>::INCREASING);
            assert!(!Axes4::<0, 1, 3, 2>::INCREASING);
        };
    }

    #[test]
    fn single_axis() {
        assert!(same::<Out<Rank3<2, 3, 4>, Axis<0>>, Rank2<3, 4>>());
        assert!(same::<Out<Rank3<2, 3, 4>, Axis<2>>, Rank2<2, 3>>());
        assert!(same::<Keep<Rank3<2, 3, 4>, Axis<1>>, (C<2>, One, C<4>)>());
        assert!(same::<Out<(usize,), Axis<0>>, ()>());
        let s = (7usize, C::<3>);
        assert_eq!(ReduceShape::<Axis<1>>::reduced(&s), (7,));
        assert_eq!(ReduceShape::<Axis<0>>::keepdim(&s), (One, C::<3>));
    }

    #[test]
    fn several_axes() {
        assert!(same::<Out<Rank3<2, 3, 4>, Axes2<0, 2>>, (C<3>,)>());
        assert!(same::<Keep<Rank3<2, 3, 4>, Axes2<0, 2>>, (One, C<3>, One)>());
        assert!(same::<Out<Rank3<2, 3, 4>, Axes3<0, 1, 2>>, ()>());
        type S6 = Rank6<1, 2, 3, 4, 5, 6>;
        assert!(same::<Out<S6, Axes4<0, 2, 3, 5>>, Rank2<2, 5>>());
        assert!(same::<Out<S6, Axes6<0, 1, 2, 3, 4, 5>>, ()>());
        assert!(same::<
            Keep<S6, Axes5<1, 2, 3, 4, 5>>,
            (C<1>, One, One, One, One, One),
        >());
        let s = (5usize, C::<3>, 6usize, C::<2>);
        assert_eq!(ReduceShape::<Axes2<1, 3>>::reduced(&s), (5, 6));
        assert_eq!(ReduceShape::<Axes3<0, 1, 3>>::keepdim(&s), (One, One, 6, One));
        assert_eq!(
            ReduceShape::<Axes2<0, 2>>::keepdim(&s).dims(),
            [1, 3, 1, 2],
            "keepdim leaves size-1 axes in place"
        );
    }
}
