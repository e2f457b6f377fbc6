//! Shapes: tuples of up to six dimensions.

use std::fmt::Debug;

use super::dims::{Const, ConstDim, Dim};

/// A tensor shape: `()` or a tuple of up to six [`Dim`]s.
///
/// ```
/// use teenygrad::shape::{Const, Shape};
/// let s = (4usize, Const::<3>);
/// assert_eq!(<(usize, Const<3>) as Shape>::RANK, 2);
/// assert_eq!(s.dims(), vec![4, 3]);
/// assert_eq!(s.numel(), 12);
/// assert_eq!(<(usize, Const<3>)>::from_dims(&[5, 3]), Some((5, Const)));
/// assert_eq!(<(usize, Const<3>)>::from_dims(&[5, 2]), None);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a shape",
    label = "not a shape",
    note = "a shape is `()` or a tuple of up to 6 dims, each `Const<N>`, `One` or `usize`"
)]
pub trait Shape: Copy + Clone + Debug + PartialEq + Send + Sync + 'static {
    /// The number of dimensions.
    const RANK: usize;
    /// The size of each dimension, outermost first.
    fn dims(&self) -> Vec<usize>;
    /// The shape with these sizes, or `None` if the rank or a static size disagrees.
    fn from_dims(dims: &[usize]) -> Option<Self>;
    /// The number of elements (1 for a scalar).
    fn numel(&self) -> usize {
        super::runtime::numel(&self.dims())
    }
}

/// A shape whose every dimension is static, so its element count is a constant.
///
/// ```
/// use teenygrad::shape::{ConstShape, One, Rank2};
/// assert_eq!(<Rank2<2, 3> as ConstShape>::NUMEL, 6);
/// assert_eq!(<(One, Rank2<2, 3>) as Default>::default().0, One);
/// assert_eq!(<() as ConstShape>::NUMEL, 1);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a static shape",
    label = "has a run-time (`usize`) dim",
    note = "this needs every dim to be `Const<N>` or `One`"
)]
pub trait ConstShape: Shape + Default {
    /// The number of elements.
    const NUMEL: usize;
}

macro_rules! tuple_shape {
    ($rank:literal; $(($d:ident $i:tt))*) => {
        #[diagnostic::do_not_recommend]
        impl<$($d: Dim),*> Shape for ($($d,)*) {
            const RANK: usize = $rank;
            fn dims(&self) -> Vec<usize> {
                vec![$(self.$i.size()),*]
            }
            fn from_dims(dims: &[usize]) -> Option<Self> {
                if dims.len() != $rank {
                    return None;
                }
                Some(($($d::from_size(dims[$i])?,)*))
            }
        }

        #[diagnostic::do_not_recommend]
        impl<$($d: ConstDim),*> ConstShape for ($($d,)*) {
            const NUMEL: usize = 1 $(* $d::SIZE)*;
        }
    };
}

tuple_shape!(0;);
tuple_shape!(1; (D0 0));
tuple_shape!(2; (D0 0) (D1 1));
tuple_shape!(3; (D0 0) (D1 1) (D2 2));
tuple_shape!(4; (D0 0) (D1 1) (D2 2) (D3 3));
tuple_shape!(5; (D0 0) (D1 1) (D2 2) (D3 3) (D4 4));
tuple_shape!(6; (D0 0) (D1 1) (D2 2) (D3 3) (D4 4) (D5 5));

/// A scalar.
pub type Rank0 = ();
/// A static vector of `A` elements.
pub type Rank1<const A: usize> = (Const<A>,);
/// A static `A`×`B` matrix.
pub type Rank2<const A: usize, const B: usize> = (Const<A>, Const<B>);
/// A static rank-3 shape.
pub type Rank3<const A: usize, const B: usize, const C: usize> = (Const<A>, Const<B>, Const<C>);
/// A static rank-4 shape.
pub type Rank4<const A: usize, const B: usize, const C: usize, const D: usize> =
    (Const<A>, Const<B>, Const<C>, Const<D>);
/// A static rank-5 shape.
pub type Rank5<const A: usize, const B: usize, const C: usize, const D: usize, const E: usize> =
    (Const<A>, Const<B>, Const<C>, Const<D>, Const<E>);
/// A static rank-6 shape.
pub type Rank6<
    const A: usize,
    const B: usize,
    const C: usize,
    const D: usize,
    const E: usize,
    const F: usize,
> = (Const<A>, Const<B>, Const<C>, Const<D>, Const<E>, Const<F>);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::dims::One;

    #[test]
    fn dims_and_numel() {
        assert_eq!(().dims(), Vec::<usize>::new());
        assert_eq!(().numel(), 1);
        assert_eq!(<Rank0 as ConstShape>::NUMEL, 1);
        assert_eq!(<Rank3<2, 3, 4> as ConstShape>::NUMEL, 24);
        assert_eq!(<Rank6<1, 2, 3, 1, 2, 3> as Shape>::RANK, 6);
        assert_eq!(Rank6::<1, 2, 3, 1, 2, 3>::default().dims(), [1, 2, 3, 1, 2, 3]);
        assert_eq!((3usize, One, Const::<0>).numel(), 0);
        assert_eq!(<(One, Const<5>) as ConstShape>::NUMEL, 5);
    }

    #[test]
    fn from_dims_checks_rank_and_static_sizes() {
        assert_eq!(<()>::from_dims(&[]), Some(()));
        assert_eq!(<()>::from_dims(&[1]), None);
        assert_eq!(Rank2::<2, 3>::from_dims(&[2, 3]), Some((Const, Const)));
        assert_eq!(Rank2::<2, 3>::from_dims(&[3, 2]), None);
        assert_eq!(Rank2::<2, 3>::from_dims(&[2, 3, 1]), None);
        assert_eq!(<(usize, One)>::from_dims(&[9, 1]), Some((9, One)));
        assert_eq!(<(usize, One)>::from_dims(&[9, 2]), None);
        let s = (7usize, Const::<2>, One, 3usize, Const::<4>, Const::<5>);
        assert_eq!(
            <(usize, Const<2>, One, usize, Const<4>, Const<5>)>::from_dims(&s.dims()),
            Some(s)
        );
    }
}
