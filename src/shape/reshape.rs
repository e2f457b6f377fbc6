//! Reshape's element-count rule.
//!
//! Stable Rust cannot compute `A * B` in a signature, so a static reshape names its target shape
//! and checks the counts in a post-monomorphization const assert; shapes with `usize` dims are
//! checked at run time.

use super::runtime::checked_numel;
use super::shapes::{ConstShape, Shape};
use crate::error::{Error, Result};

/// Fails to compile (when instantiated) unless `Src` and `Dst` hold the same number of elements.
///
/// A const panic cannot name types, so the message states the rule and the compiler's note
/// ("the above error was encountered while instantiating ...") names the two shapes.
///
/// ```
/// use teenygrad::shape::{Rank1, Rank2, assert_same_numel};
/// assert_same_numel::<Rank2<2, 6>, Rank1<12>>();
/// ```
///
/// ```compile_fail
/// use teenygrad::shape::{Rank1, Rank2, assert_same_numel};
/// assert_same_numel::<Rank2<2, 6>, Rank1<10>>();
/// ```
#[inline(always)]
pub const fn assert_same_numel<Src: ConstShape, Dst: ConstShape>() {
    const { assert!(Src::NUMEL == Dst::NUMEL, "reshape must keep the element count") }
}

/// Fails to compile (when instantiated) unless `Src` and `Dst` have the same rank: a slice or a
/// pad keeps the rank, so a target of another one is a mistake the types show.
#[inline(always)]
pub(crate) const fn assert_same_rank<Src: Shape, Dst: Shape>() {
    const {
        assert!(
            Src::RANK == Dst::RANK,
            "slice and pad keep the rank: the target shape needs as many dims as the source"
        )
    }
}

/// `Ok` if `src` and `dst` hold the same number of elements, for shapes with `usize` dims;
/// [`Error::ShapeMismatch`] if they do not, [`Error::ShapeOverflow`] if either has more than
/// `usize` can count.
///
/// ```
/// use teenygrad::shape::{Const, check_reshape};
/// assert!(check_reshape(&(4usize, Const::<3>), &(Const::<2>, 6usize)).is_ok());
/// assert!(check_reshape(&(4usize, Const::<3>), &(Const::<2>, 5usize)).is_err());
/// ```
pub fn check_reshape(src: &impl Shape, dst: &impl Shape) -> Result<()> {
    let (from, to) = (checked_numel(&src.dims())?, checked_numel(&dst.dims())?);
    if from == to {
        Ok(())
    } else {
        Err(Error::ShapeMismatch {
            op: "reshape",
            lhs: src.dims(),
            rhs: dst.dims(),
            rule: "reshape must keep the element count",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::dims::{Const, One};
    use crate::shape::shapes::{Rank0, Rank1, Rank3};

    #[test]
    fn same_numel_passes() {
        assert_same_numel::<Rank3<2, 3, 4>, (Const<6>, One, Const<4>)>();
        assert_same_numel::<Rank0, Rank1<1>>();
        assert!(check_reshape(&(0usize, Const::<3>), &(Const::<0>,)).is_ok());
        assert_eq!(
            check_reshape(&(2usize,), &()),
            Err(Error::ShapeMismatch {
                op: "reshape",
                lhs: vec![2],
                rhs: vec![],
                rule: "reshape must keep the element count",
            })
        );
    }

    #[test]
    fn a_shape_too_large_to_count_is_an_error() {
        assert_eq!(
            check_reshape(&(4usize,), &(usize::MAX, 2usize)),
            Err(Error::ShapeOverflow {
                shape: vec![usize::MAX, 2]
            })
        );
        assert!(matches!(
            check_reshape(&(usize::MAX, 3usize), &(4usize,)),
            Err(Error::ShapeOverflow { .. })
        ));
    }
}
