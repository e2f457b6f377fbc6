//! Broadcasting, numpy's rule lifted to types: trailing dims aligned, a missing leading dim or a
//! `One` stretches. `Const<1>` is an exact size and does not stretch; `usize` dims must agree at
//! run time (a run-time 1 does not stretch either: use `One` for that).

use super::dims::{Const, Dim, One};
use super::shapes::Shape;
use crate::error::{Error, Result};

/// The broadcast of two dims: equal static sizes, `One` with anything, `usize` with `usize`.
///
/// ```
/// use teenygrad::shape::{BroadcastDim, Const, One};
/// assert_eq!(One.broadcast_dim(Const::<3>), Some(Const::<3>));
/// assert_eq!(4usize.broadcast_dim(One), Some(4));
/// assert_eq!(4usize.broadcast_dim(5usize), None, "run-time sizes must agree");
/// ```
#[diagnostic::on_unimplemented(
    message = "dims `{Self}` and `{Rhs}` cannot be broadcast together",
    label = "`{Self}` does not broadcast with `{Rhs}`",
    note = "dims broadcast when they are the same type or one of them is `One`"
)]
pub trait BroadcastDim<Rhs: Dim>: Dim {
    /// The broadcast dim.
    type Output: Dim;
    /// The broadcast dim, or `None` if two `usize` sizes differ.
    fn broadcast_dim(self, rhs: Rhs) -> Option<Self::Output>;
}

/// Every dim with itself, so generic code over `B: Dim` can add two `(B, ...)` tensors: two
/// `usize` sizes are compared, static ones always agree.
impl<D: Dim> BroadcastDim<D> for D {
    type Output = D;
    fn broadcast_dim(self, rhs: D) -> Option<D> {
        (self.size() == rhs.size()).then_some(self)
    }
}
impl<const N: usize> BroadcastDim<One> for Const<N> {
    type Output = Const<N>;
    fn broadcast_dim(self, _: One) -> Option<Const<N>> {
        Some(self)
    }
}
impl<const N: usize> BroadcastDim<Const<N>> for One {
    type Output = Const<N>;
    fn broadcast_dim(self, rhs: Const<N>) -> Option<Const<N>> {
        Some(rhs)
    }
}
impl BroadcastDim<One> for usize {
    type Output = usize;
    fn broadcast_dim(self, _: One) -> Option<usize> {
        Some(self)
    }
}
impl BroadcastDim<usize> for One {
    type Output = usize;
    fn broadcast_dim(self, rhs: usize) -> Option<usize> {
        Some(rhs)
    }
}

/// A dim that expands to `Dst`: the same type, or `One` to anything.
///
/// ```
/// use teenygrad::shape::{Const, ExpandDim, One};
/// assert!(One.expands_to(7usize));
/// assert!(Const::<3>.expands_to(Const::<3>));
/// assert!(!2usize.expands_to(3usize));
/// ```
#[diagnostic::on_unimplemented(
    message = "dim `{Self}` cannot be expanded to `{Dst}`",
    label = "only `One` or the same dim expands to `{Dst}`",
    note = "a dim expands to another when they are the same type or it is `One`"
)]
pub trait ExpandDim<Dst: Dim>: Dim {
    /// Whether the sizes agree (always for static dims; `usize` sizes are compared).
    fn expands_to(self, dst: Dst) -> bool;
}

impl<const N: usize> ExpandDim<Const<N>> for Const<N> {
    fn expands_to(self, _: Const<N>) -> bool {
        true
    }
}
impl<D: Dim> ExpandDim<D> for One {
    fn expands_to(self, _: D) -> bool {
        true
    }
}
impl ExpandDim<usize> for usize {
    fn expands_to(self, dst: usize) -> bool {
        self == dst
    }
}

/// Two shapes that broadcast together; `Output` is the broadcast shape.
///
/// ```
/// use teenygrad::shape::{BroadcastShape, Const, One};
/// let a = (Const::<2>, One, Const::<4>);
/// let b = (Const::<3>, One);
/// assert_eq!(a.broadcast_shape(&b).unwrap(), (Const::<2>, Const::<3>, Const::<4>));
/// // `usize` dims are checked at run time.
/// assert!((5usize, Const::<3>).broadcast_shape(&(6usize, Const::<3>)).is_err());
/// ```
#[diagnostic::on_unimplemented(
    message = "shapes `{Self}` and `{Rhs}` cannot be broadcast together",
    label = "these shapes do not broadcast",
    note = "numpy rule: trailing dims are aligned; each pair must be the same dim, or one of them `One` (a missing leading dim counts as `One`)",
    note = "`Const<1>` is an exact size and does not broadcast (`One` does); a `usize` dim pairs only with `usize` or `One` (`t.reshape_to((n, Const::<3>))` gives `t` a run-time dim)"
)]
pub trait BroadcastShape<Rhs: Shape>: Shape {
    /// The broadcast shape.
    type Output: Shape;
    /// The broadcast shape, or [`Error::ShapeMismatch`] if two `usize` dims differ.
    fn broadcast_shape(&self, rhs: &Rhs) -> Result<Self::Output>;
}

/// `Self` expands (broadcasts) to `Dst`: each dim equal to `Dst`'s or `One`, leading dims may be
/// missing.
///
/// ```
/// use teenygrad::shape::{BroadcastTo, Const, One};
/// assert!((One, Const::<3>).check_broadcast_to(&(4usize, Const::<2>, Const::<3>)).is_ok());
/// assert!((5usize,).check_broadcast_to(&(6usize,)).is_err());
/// ```
#[diagnostic::on_unimplemented(
    message = "shape `{Self}` cannot be broadcast to `{Dst}`",
    label = "does not expand to the target shape",
    note = "align trailing dims: each dim must equal the target's or be `One`; only leading dims may be missing",
    note = "`Const<1>` is an exact size and does not stretch (`One` does): a column from `Tensor::from([[1.0], [2.0]])` is `(Const<2>, Const<1>)`, and `.reshape::<(Const<2>, One)>()` makes it stretch"
)]
pub trait BroadcastTo<Dst: Shape>: Shape {
    /// `Ok` if the sizes agree, or [`Error::ShapeMismatch`] if a `usize` dim differs.
    fn check_broadcast_to(&self, dst: &Dst) -> Result<()>;
}

fn mismatch(op: &'static str, lhs: &impl Shape, rhs: &impl Shape) -> Error {
    Error::ShapeMismatch {
        op,
        lhs: lhs.dims(),
        rhs: rhs.dims(),
        rule: "trailing dims must be equal or `One`; run-time `usize` dims must be equal",
    }
}

/// Emits `$cb!(side [lead] [pairs])` for every rank pair: the aligned trailing `pairs` and the
/// `lead` dims only one side has. Dims are named by distance from the end, so `(Lk Rk)` always pair.
macro_rules! rank_pairs {
    ($cb:ident; [$($pair:tt)*] [$($lc:ident)*] [$($rc:ident)*]) => {
        $cb!(lhs [] [$($pair)*]);
        rank_pairs!(@lead $cb lhs [] [$($lc)*] [$($pair)*]);
        rank_pairs!(@lead $cb rhs [] [$($rc)*] [$($pair)*]);
    };
    (@lead $cb:ident $side:ident [$($lead:ident)*] [] [$($pair:tt)*]) => {};
    (@lead $cb:ident $side:ident [$($lead:ident)*] [$next:ident $($rest:ident)*] [$($pair:tt)*]) => {
        $cb!($side [$next $($lead)*] [$($pair)*]);
        rank_pairs!(@lead $cb $side [$next $($lead)*] [$($rest)*] [$($pair)*]);
    };
}

// Value bindings reuse the dim type names (hence `non_snake_case`), so one list names both.
macro_rules! broadcast_impl {
    (lhs [$($lead:ident)*] [$(($l:ident $r:ident))*]) => {
        #[diagnostic::do_not_recommend]
        impl<$($lead: Dim,)* $($l: BroadcastDim<$r>, $r: Dim,)*> BroadcastShape<($($r,)*)>
            for ($($lead,)* $($l,)*)
        {
            type Output = ($($lead,)* $(<$l as BroadcastDim<$r>>::Output,)*);
            #[allow(non_snake_case, unused_variables)]
            fn broadcast_shape(&self, rhs: &($($r,)*)) -> Result<Self::Output> {
                let err = || mismatch("broadcast", self, rhs);
                let ($($lead,)* $($l,)*) = *self;
                let ($($r,)*) = *rhs;
                Ok(($($lead,)* $($l.broadcast_dim($r).ok_or_else(err)?,)*))
            }
        }
    };
    (rhs [$($lead:ident)*] [$(($l:ident $r:ident))*]) => {
        #[diagnostic::do_not_recommend]
        impl<$($lead: Dim,)* $($l: BroadcastDim<$r>, $r: Dim,)*> BroadcastShape<($($lead,)* $($r,)*)>
            for ($($l,)*)
        {
            type Output = ($($lead,)* $(<$l as BroadcastDim<$r>>::Output,)*);
            #[allow(non_snake_case, unused_variables)]
            fn broadcast_shape(&self, rhs: &($($lead,)* $($r,)*)) -> Result<Self::Output> {
                let err = || mismatch("broadcast", self, rhs);
                let ($($l,)*) = *self;
                let ($($lead,)* $($r,)*) = *rhs;
                Ok(($($lead,)* $($l.broadcast_dim($r).ok_or_else(err)?,)*))
            }
        }
    };
}

// Source dims are `L`, target dims `R`; only the target has lead dims.
macro_rules! expand_impl {
    ($side:ident [$($lead:ident)*] [$(($l:ident $r:ident))*]) => {
        #[diagnostic::do_not_recommend]
        impl<$($lead: Dim,)* $($l: ExpandDim<$r>, $r: Dim,)*> BroadcastTo<($($lead,)* $($r,)*)>
            for ($($l,)*)
        {
            #[allow(non_snake_case, unused_variables)]
            fn check_broadcast_to(&self, dst: &($($lead,)* $($r,)*)) -> Result<()> {
                let ($($l,)*) = *self;
                let ($($lead,)* $($r,)*) = *dst;
                if true $(&& $l.expands_to($r))* {
                    Ok(())
                } else {
                    Err(mismatch("expand", self, dst))
                }
            }
        }
    };
}

rank_pairs!(broadcast_impl; [] [L0 L1 L2 L3 L4 L5] [R0 R1 R2 R3 R4 R5]);
rank_pairs!(broadcast_impl; [(L0 R0)] [L1 L2 L3 L4 L5] [R1 R2 R3 R4 R5]);
rank_pairs!(broadcast_impl; [(L1 R1) (L0 R0)] [L2 L3 L4 L5] [R2 R3 R4 R5]);
rank_pairs!(broadcast_impl; [(L2 R2) (L1 R1) (L0 R0)] [L3 L4 L5] [R3 R4 R5]);
rank_pairs!(broadcast_impl; [(L3 R3) (L2 R2) (L1 R1) (L0 R0)] [L4 L5] [R4 R5]);
rank_pairs!(broadcast_impl; [(L4 R4) (L3 R3) (L2 R2) (L1 R1) (L0 R0)] [L5] [R5]);
rank_pairs!(broadcast_impl; [(L5 R5) (L4 R4) (L3 R3) (L2 R2) (L1 R1) (L0 R0)] [] []);

rank_pairs!(expand_impl; [] [] [R0 R1 R2 R3 R4 R5]);
rank_pairs!(expand_impl; [(L0 R0)] [] [R1 R2 R3 R4 R5]);
rank_pairs!(expand_impl; [(L1 R1) (L0 R0)] [] [R2 R3 R4 R5]);
rank_pairs!(expand_impl; [(L2 R2) (L1 R1) (L0 R0)] [] [R3 R4 R5]);
rank_pairs!(expand_impl; [(L3 R3) (L2 R2) (L1 R1) (L0 R0)] [] [R4 R5]);
rank_pairs!(expand_impl; [(L4 R4) (L3 R3) (L2 R2) (L1 R1) (L0 R0)] [] [R5]);
rank_pairs!(expand_impl; [(L5 R5) (L4 R4) (L3 R3) (L2 R2) (L1 R1) (L0 R0)] [] []);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::shapes::{Rank2, Rank3};
    use std::any::TypeId;

    fn same<T: 'static, U: 'static>() -> bool {
        TypeId::of::<T>() == TypeId::of::<U>()
    }
    type Out<A, B> = <A as BroadcastShape<B>>::Output;
    use crate::shape::dims::Const as C;

    #[test]
    fn static_outputs() {
        assert!(same::<Out<Rank2<2, 3>, Rank2<2, 3>>, Rank2<2, 3>>());
        assert!(same::<Out<(C<2>, One), (One, C<3>)>, Rank2<2, 3>>());
        assert!(same::<Out<(One, One), (One,)>, (One, One)>());
        // Missing leading dims, on either side.
        assert!(same::<Out<Rank3<4, 2, 3>, (C<3>,)>, Rank3<4, 2, 3>>());
        assert!(same::<Out<(), Rank2<2, 3>>, Rank2<2, 3>>());
        assert!(same::<Out<(One, C<3>), Rank3<5, 2, 3>>, Rank3<5, 2, 3>>());
        let out = (C::<2>, One, C::<4>).broadcast_shape(&(C::<3>, One)).unwrap();
        assert_eq!(out, (C::<2>, C::<3>, C::<4>));
    }

    #[test]
    fn runtime_dims() {
        assert!(same::<Out<(usize, C<3>), (One, C<3>)>, (usize, C<3>)>());
        assert!(same::<Out<(One,), (usize,)>, (usize,)>());
        assert_eq!((5usize, C::<3>).broadcast_shape(&(5usize, One)), Ok((5, C)));
        assert_eq!((One, C::<3>).broadcast_shape(&(7usize, One)), Ok((7, C)));
        assert_eq!(
            (5usize, C::<3>).broadcast_shape(&(6usize, C::<3>)),
            Err(Error::ShapeMismatch {
                op: "broadcast",
                lhs: vec![5, 3],
                rhs: vec![6, 3],
                rule: "trailing dims must be equal or `One`; run-time `usize` dims must be equal",
            })
        );
        // A run-time 1 is an exact size, like `Const<1>`.
        assert!((1usize,).broadcast_shape(&(4usize,)).is_err());
    }

    #[test]
    fn broadcast_to() {
        assert!(().check_broadcast_to(&Rank2::<2, 3>::default()).is_ok());
        assert!((One, C::<3>).check_broadcast_to(&(9usize, C::<3>)).is_ok());
        assert!(
            (4usize, One)
                .check_broadcast_to(&(C::<2>, 4usize, C::<3>))
                .is_ok()
        );
        assert_eq!(
            (4usize,).check_broadcast_to(&(C::<2>, 5usize)),
            Err(mismatch("expand", &(4usize,), &(C::<2>, 5usize)))
        );
    }
}
