//! The shape rule of matrix products, with batch dims.

use super::dims::Dim;
use super::shapes::Shape;
use crate::error::{Error, Result};

/// Shapes that can be multiplied as matrices; `Output` is the product's shape.
///
/// The rules: `(M, K) x (K, N) -> (M, N)`, `(K,) x (K, N) -> (N,)`, `(M, K) x (K,) -> (M,)`,
/// `(B, M, K) x (B, K, N) -> (B, M, N)`, `(B, M, K) x (K, N) -> (B, M, N)` and
/// `(B1, B2, M, K) x (B1, B2, K, N) -> (B1, B2, M, N)`. The inner dims (and batch dims) must be the
/// same type; when they are `usize`, their sizes are compared at run time.
///
/// ```
/// use teenygrad::shape::{Const, MatMulShape};
/// let a = (5usize, Const::<2>, Const::<3>);
/// let b = (Const::<3>, Const::<4>);
/// assert_eq!(a.matmul_shape(&b).unwrap(), (5, Const::<2>, Const::<4>));
/// assert!((Const::<2>, 3usize).matmul_shape(&(4usize, Const::<1>)).is_err());
/// ```
#[diagnostic::on_unimplemented(
    message = "cannot matmul `{Self}` by `{Rhs}`",
    label = "the inner or batch dims differ (in size, or one `usize` and one `Const`), or no matmul rule takes these ranks",
    note = "matmul needs (M, K) x (K, N) -> (M, N) with the same K on both sides; batched: (B, M, K) x (B, K, N) or (K, N), (B1, B2, M, K) x (B1, B2, K, N); vectors: (K,) x (K, N), (M, K) x (K,)",
    note = "a run-time `usize` dim pairs only with `usize`: `reshape_to` gives the other operand the same kind of dim"
)]
pub trait MatMulShape<Rhs: Shape>: Shape {
    /// The product's shape.
    type Output: Shape;
    /// The product's shape, or [`Error::ShapeMismatch`] if `usize` inner or batch dims differ.
    fn matmul_shape(&self, rhs: &Rhs) -> Result<Self::Output>;
}

/// `Ok` if every pair of same-typed inner or batch dims agrees in size (only `usize` dims can differ).
fn check(lhs: &impl Shape, rhs: &impl Shape, sizes_agree: bool) -> Result<()> {
    if sizes_agree {
        Ok(())
    } else {
        Err(Error::ShapeMismatch {
            op: "matmul",
            lhs: lhs.dims(),
            rhs: rhs.dims(),
            rule: "the inner dims (and batch dims) must be equal",
        })
    }
}

macro_rules! matmul_impl {
    (
        <$($g:ident),*> ($($l:ident: $lt:ident),*) x ($($r:ident: $rt:ident),*)
            -> ($($o:ident: $ot:ident),*); same: $($a:ident == $b:ident),*
    ) => {
        #[diagnostic::do_not_recommend]
        impl<$($g: Dim),*> MatMulShape<($($rt,)*)> for ($($lt,)*) {
            type Output = ($($ot,)*);
            fn matmul_shape(&self, rhs: &($($rt,)*)) -> Result<Self::Output> {
                let ($($l,)*) = *self;
                let ($($r,)*) = *rhs;
                check(self, rhs, true $(&& $a.size() == $b.size())*)?;
                Ok(($($o,)*))
            }
        }
    };
}

matmul_impl!(<M, K, N> (m: M, k: K) x (k2: K, n: N) -> (m: M, n: N); same: k == k2);
matmul_impl!(<K, N> (k: K) x (k2: K, n: N) -> (n: N); same: k == k2);
matmul_impl!(<M, K> (m: M, k: K) x (k2: K) -> (m: M); same: k == k2);
matmul_impl!(
    <B, M, K, N> (b: B, m: M, k: K) x (b2: B, k2: K, n: N) -> (b: B, m: M, n: N);
    same: b == b2, k == k2
);
matmul_impl!(
    <B, M, K, N> (b: B, m: M, k: K) x (k2: K, n: N) -> (b: B, m: M, n: N); same: k == k2
);
matmul_impl!(
    <B1, B2, M, K, N> (b1: B1, b2: B2, m: M, k: K) x (c1: B1, c2: B2, k2: K, n: N)
        -> (b1: B1, b2: B2, m: M, n: N); same: b1 == c1, b2 == c2, k == k2
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::dims::{Const, One};
    use crate::shape::shapes::{Rank1, Rank2, Rank3, Rank4};
    use std::any::TypeId;

    fn same<T: 'static, U: 'static>() -> bool {
        TypeId::of::<T>() == TypeId::of::<U>()
    }
    type Out<A, B> = <A as MatMulShape<B>>::Output;

    #[test]
    fn output_types() {
        assert!(same::<Out<Rank2<2, 3>, Rank2<3, 4>>, Rank2<2, 4>>());
        assert!(same::<Out<Rank1<3>, Rank2<3, 4>>, Rank1<4>>());
        assert!(same::<Out<Rank2<2, 3>, Rank1<3>>, Rank1<2>>());
        assert!(same::<Out<Rank3<5, 2, 3>, Rank3<5, 3, 4>>, Rank3<5, 2, 4>>());
        assert!(same::<Out<Rank3<5, 2, 3>, Rank2<3, 4>>, Rank3<5, 2, 4>>());
        assert!(same::<Out<Rank4<6, 5, 2, 3>, Rank4<6, 5, 3, 4>>, Rank4<6, 5, 2, 4>>());
        assert!(same::<Out<(usize, One), (One, Const<4>)>, (usize, Const<4>)>());
    }

    #[test]
    fn runtime_dims_are_checked() {
        let c = Const::<3>;
        assert_eq!((7usize, c).matmul_shape(&(c, 2usize)), Ok((7, 2)));
        assert_eq!((c, 4usize).matmul_shape(&(4usize, c)), Ok((c, c)));
        assert_eq!(
            (c, 4usize).matmul_shape(&(5usize, c)),
            Err(Error::ShapeMismatch {
                op: "matmul",
                lhs: vec![3, 4],
                rhs: vec![5, 3],
                rule: "the inner dims (and batch dims) must be equal",
            })
        );
        assert!(
            (8usize, c, c).matmul_shape(&(9usize, c, c)).is_err(),
            "batch dims differ"
        );
        assert!(
            (2usize, 3usize, c, c)
                .matmul_shape(&(2usize, 4usize, c, c))
                .is_err()
        );
        assert_eq!((4usize,).matmul_shape(&(4usize, c)), Ok((c,)));
        assert!((c, 4usize).matmul_shape(&(5usize,)).is_err());
    }
}
