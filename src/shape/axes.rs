//! Axes as types: which dimensions an operation acts on, checked against the shape's rank.

use super::dims::Dim;
use super::shapes::Shape;

/// A list of axes given as a type: [`Axis<I>`], [`Axes2<I, J>`], … [`Axes6`].
///
/// ```
/// use teenygrad::shape::{Axes, Axes3, Axis};
/// assert_eq!(Axis::<2>::indices(), vec![2]);
/// assert_eq!(Axes3::<0, 2, 1>::indices(), vec![0, 2, 1]);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a list of axes",
    label = "not axes",
    note = "axes are written `Axis<I>`, `Axes2<I, J>`, ... up to `Axes6`"
)]
pub trait Axes {
    /// Whether no axis appears twice (a permutation's must not repeat).
    const DISTINCT: bool;
    /// Whether the axes are strictly increasing (a reduction's must be).
    const INCREASING: bool;
    /// The axis indices, in the order given.
    fn indices() -> Vec<usize>;
}

/// Fails to compile (when instantiated) if an axis of `Ax` repeats. One constant for every
/// caller, so a mistake is reported once, at the outermost generic call.
pub(crate) const fn assert_distinct<Ax: Axes>() {
    const { assert!(Ax::DISTINCT, "permute axes must not repeat") }
}

/// Fails to compile (when instantiated) unless the axes of `Ax` are strictly increasing, as
/// [`assert_distinct`] does for repeats.
pub(crate) const fn assert_increasing<Ax: Axes>() {
    const { assert!(Ax::INCREASING, "reduce axes must be strictly increasing") }
}

/// Whether each value in `axes` is greater than the one before.
const fn increasing(axes: &[usize]) -> bool {
    let mut i = 1;
    while i < axes.len() {
        if axes[i] <= axes[i - 1] {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether no value in `axes` appears twice.
pub(crate) const fn distinct(axes: &[usize]) -> bool {
    let mut i = 0;
    while i < axes.len() {
        let mut j = i + 1;
        while j < axes.len() {
            if axes[i] == axes[j] {
                return false;
            }
            j += 1;
        }
        i += 1;
    }
    true
}

macro_rules! axes_type {
    ($(#[$doc:meta])* $name:ident; $($i:ident)*) => {
        $(#[$doc])*
        #[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name<$(const $i: usize),*>;

        impl<$(const $i: usize),*> Axes for $name<$($i),*> {
            const DISTINCT: bool = distinct(&[$($i),*]);
            const INCREASING: bool = increasing(&[$($i),*]);
            fn indices() -> Vec<usize> {
                vec![$($i),*]
            }
        }
    };
}

axes_type!(
    /// The single axis `I`.
    ///
    /// ```
    /// use teenygrad::shape::{Axis, Rank3, ReduceShape};
    /// let s: Rank3<2, 3, 4> = Default::default();
    /// assert_eq!(ReduceShape::<Axis<1>>::reduced(&s), Default::default());
    /// ```
    Axis; I
);
axes_type!(
    /// Two axes. Reductions want them strictly increasing.
    ///
    /// ```
    /// use teenygrad::shape::{Axes, Axes2};
    /// assert_eq!(Axes2::<0, 1>::indices(), [0, 1]);
    /// ```
    Axes2; I J
);
axes_type!(
    /// Three axes.
    ///
    /// ```
    /// use teenygrad::shape::{Axes3, PermuteShape, Rank3};
    /// let s: Rank3<2, 3, 4> = Default::default();
    /// assert_eq!(PermuteShape::<Axes3<2, 0, 1>>::permuted(&s).0, teenygrad::shape::Const::<4>);
    /// ```
    Axes3; I J K
);
axes_type!(
    /// Four axes.
    ///
    /// ```
    /// use teenygrad::shape::{Axes, Axes4};
    /// assert_eq!(Axes4::<3, 2, 1, 0>::indices(), [3, 2, 1, 0]);
    /// ```
    Axes4; I J K L
);
axes_type!(
    /// Five axes.
    ///
    /// ```
    /// use teenygrad::shape::{Axes, Axes5};
    /// assert_eq!(Axes5::<0, 1, 2, 3, 4>::indices().len(), 5);
    /// ```
    Axes5; I J K L M
);
axes_type!(
    /// Six axes.
    ///
    /// ```
    /// use teenygrad::shape::{Axes, Axes6};
    /// assert_eq!(Axes6::<5, 4, 3, 2, 1, 0>::indices()[0], 5);
    /// ```
    Axes6; I J K L M N
);

/// A shape that has axis `I`; `Dim` is that axis's dimension type.
///
/// ```
/// use teenygrad::shape::{Const, HasAxis, One};
/// let s = (5usize, Const::<3>, One);
/// assert_eq!(HasAxis::<0>::dim(&s), 5);
/// assert_eq!(HasAxis::<1>::dim(&s), Const::<3>);
/// ```
#[diagnostic::on_unimplemented(
    message = "shape `{Self}` has no axis {I}",
    label = "axis {I} is out of range for this shape",
    note = "the axes of a rank-R shape are 0..R"
)]
pub trait HasAxis<const I: usize>: Shape {
    /// The dimension type of axis `I`.
    type Dim: Dim;
    /// The dimension of axis `I`.
    fn dim(&self) -> Self::Dim;
}

/// Calls `$cb!([(D i)...] (D a) [(D j)...])` once per (rank 1..=6, axis a): the dims before the
/// axis, the axis, and the dims after it. One table keeps the per-axis impls of every trait in step.
macro_rules! for_each_axis {
    ($cb:ident) => {
        $crate::shape::axes::for_each_axis!(@walk $cb [] [(D0 0)]);
        $crate::shape::axes::for_each_axis!(@walk $cb [] [(D0 0) (D1 1)]);
        $crate::shape::axes::for_each_axis!(@walk $cb [] [(D0 0) (D1 1) (D2 2)]);
        $crate::shape::axes::for_each_axis!(@walk $cb [] [(D0 0) (D1 1) (D2 2) (D3 3)]);
        $crate::shape::axes::for_each_axis!(@walk $cb [] [(D0 0) (D1 1) (D2 2) (D3 3) (D4 4)]);
        $crate::shape::axes::for_each_axis!(
            @walk $cb [] [(D0 0) (D1 1) (D2 2) (D3 3) (D4 4) (D5 5)]
        );
    };
    (@walk $cb:ident [$($pre:tt)*] []) => {};
    (@walk $cb:ident [$($pre:tt)*] [$cur:tt $($post:tt)*]) => {
        $cb!([$($pre)*] $cur [$($post)*]);
        $crate::shape::axes::for_each_axis!(@walk $cb [$($pre)* $cur] [$($post)*]);
    };
}
pub(crate) use for_each_axis;

macro_rules! has_axis {
    ([$(($p:ident $pi:tt))*] ($d:ident $i:tt) [$(($q:ident $qi:tt))*]) => {
        #[diagnostic::do_not_recommend]
        impl<$($p: Dim,)* $d: Dim, $($q: Dim,)*> HasAxis<$i> for ($($p,)* $d, $($q,)*) {
            type Dim = $d;
            fn dim(&self) -> $d {
                self.$i
            }
        }
    };
}
for_each_axis!(has_axis);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::dims::{Const, One};

    #[test]
    fn axes_list_their_indices() {
        assert_eq!(Axis::<0>::indices(), [0]);
        assert_eq!(Axes2::<1, 0>::indices(), [1, 0]);
        assert_eq!(Axes6::<0, 1, 2, 3, 4, 5>::indices(), [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn has_axis_picks_the_dim() {
        let s = (Const::<2>, 9usize, One, Const::<4>, Const::<5>, 6usize);
        assert_eq!(HasAxis::<1>::dim(&s), 9);
        assert_eq!(HasAxis::<2>::dim(&s), One);
        assert_eq!(HasAxis::<5>::dim(&s), 6);
        assert_eq!(HasAxis::<0>::dim(&(Const::<7>,)), Const::<7>);
    }
}
