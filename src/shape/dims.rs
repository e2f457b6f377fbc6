//! Dimensions: the sizes a shape is made of, either known to the compiler or only at run time.

use std::fmt::Debug;

/// One dimension of a shape: [`Const<N>`] (static), [`One`] (static 1 that broadcasts) or `usize`
/// (known only at run time, meant for the batch axis).
///
/// ```
/// use teenygrad::shape::{Const, Dim, One};
/// assert_eq!(Const::<3>.size(), 3);
/// assert_eq!(Const::<3>::from_size(4), None);
/// assert_eq!(One::from_size(1), Some(One));
/// assert_eq!(usize::from_size(7), Some(7));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a dimension",
    label = "not a dimension",
    note = "a dimension is `Const<N>` (static size), `One` (static 1 that broadcasts) or `usize` (run-time size)"
)]
pub trait Dim: Copy + Clone + Debug + PartialEq + Send + Sync + 'static {
    /// The size of this dimension.
    fn size(&self) -> usize;
    /// `Some(dim)` if `size` is a valid size for this dim type (`Const<N>` only for `N`, `One`
    /// only for 1, `usize` any).
    fn from_size(size: usize) -> Option<Self>;
}

/// A dimension whose size `N` is known to the compiler.
///
/// `Const<1>` is an exact size: unlike [`One`] it does not broadcast against other sizes.
///
/// ```
/// use teenygrad::shape::{Const, ConstDim};
/// assert_eq!(<Const<5> as ConstDim>::SIZE, 5);
/// ```
#[derive(Copy, Clone, Default, PartialEq, Eq, Hash)]
pub struct Const<const N: usize>;

impl<const N: usize> std::fmt::Debug for Const<N> {
    /// `Const<N>`: a shape's `Debug` then shows its sizes (a derived one printed just `Const`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Const<{N}>")
    }
}

/// A static dimension of size 1 that broadcasts to any size, as numpy's 1 does.
///
/// ```
/// use teenygrad::shape::{BroadcastShape, Const, One};
/// let out = (One, Const::<3>).broadcast_shape(&(Const::<2>, Const::<3>)).unwrap();
/// assert_eq!(out, (Const::<2>, Const::<3>));
/// ```
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct One;

/// A dimension whose size is a compile-time constant: [`Const<N>`] or [`One`].
///
/// ```
/// use teenygrad::shape::{ConstDim, One};
/// assert_eq!(One::SIZE, 1);
/// ```
pub trait ConstDim: Dim + Default {
    /// The size.
    const SIZE: usize;
}

impl<const N: usize> Dim for Const<N> {
    fn size(&self) -> usize {
        N
    }
    fn from_size(size: usize) -> Option<Self> {
        (size == N).then_some(Const)
    }
}

impl<const N: usize> ConstDim for Const<N> {
    const SIZE: usize = N;
}

impl Dim for One {
    fn size(&self) -> usize {
        1
    }
    fn from_size(size: usize) -> Option<Self> {
        (size == 1).then_some(One)
    }
}

impl ConstDim for One {
    const SIZE: usize = 1;
}

impl Dim for usize {
    fn size(&self) -> usize {
        *self
    }
    fn from_size(size: usize) -> Option<Self> {
        Some(size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_round_trip() {
        assert_eq!(Const::<4>.size(), 4);
        assert_eq!(Const::<4>::from_size(4), Some(Const));
        assert_eq!(Const::<4>::from_size(1), None);
        assert_eq!(One.size(), 1);
        assert_eq!(One::from_size(2), None);
        assert_eq!(usize::from_size(0), Some(0));
        assert_eq!(<Const<0> as ConstDim>::SIZE, 0);
    }
}
