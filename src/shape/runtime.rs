//! Runtime shape arithmetic the lazy engine relies on: element counts, strides, axis orders and
//! broadcasting over plain `&[usize]` shapes.

use crate::error::{Error, Result};

/// The number of elements of `shape` (1 for a scalar, 0 if any dim is 0).
///
/// Panics where [`checked_numel`], its fallible twin, refuses the shape (dims other than 0 that
/// multiply past `usize`).
pub fn numel(shape: &[usize]) -> usize {
    checked_numel(shape).unwrap_or_else(|e| panic!("{e}"))
}

/// The number of elements of `shape` (0 if any dim is 0), or [`Error::ShapeOverflow`] if its
/// dims other than 0 multiply past `usize`. So whether a shape fits does not depend on the
/// order of its dims (a permutation of a valid shape is valid), and every product of some of
/// its dims fits: the kernels compute strides and offsets from them unchecked. (Multiplied in
/// order, `[0, usize::MAX, 2]` was accepted, its strides overflowing, and `[usize::MAX, 2, 0]`
/// refused.)
pub fn checked_numel(shape: &[usize]) -> Result<usize> {
    let nonzero = (shape.iter().filter(|&&d| d != 0)).try_fold(1usize, |acc, &d| acc.checked_mul(d));
    match nonzero {
        Some(count) if !shape.contains(&0) => Ok(count),
        Some(_) => Ok(0),
        None => Err(Error::ShapeOverflow {
            shape: shape.to_vec(),
        }),
    }
}

/// `shape` with `pads[d] = (before, after)` added to each dim, or `None` if the ranks differ or
/// a dim overflows `usize`.
pub fn padded_dims(shape: &[usize], pads: &[(usize, usize)]) -> Option<Vec<usize>> {
    (shape.len() == pads.len()).then_some(())?;
    (shape.iter().zip(pads))
        .map(|(&d, &(before, after))| d.checked_add(before)?.checked_add(after))
        .collect()
}

/// Row-major strides of a contiguous buffer of `shape`: each is the product of the dims after it.
pub fn contiguous_strides(shape: &[usize]) -> Vec<isize> {
    let mut strides = vec![0isize; shape.len()];
    write_contiguous_strides(shape, &mut strides);
    strides
}

/// [`contiguous_strides`] written into `strides` (as long as `shape`), for callers that keep
/// strides without allocating.
pub(crate) fn write_contiguous_strides(shape: &[usize], strides: &mut [isize]) {
    let mut acc = 1isize;
    for (stride, &dim) in strides.iter_mut().zip(shape).rev() {
        *stride = acc;
        acc = acc.saturating_mul(dim.max(1) as isize);
    }
}

/// The inverse permutation of `order`: `permute(permute(x, order), argsort(order)) == x`.
///
/// # Panics
/// If `order` is not a permutation of `0..order.len()` ([`check_permutation`] checks it without
/// panicking), with that check's message.
#[track_caller]
pub fn argsort(order: &[usize]) -> Vec<usize> {
    if let Err(e) = check_permutation(order, order.len()) {
        panic!("argsort: {e}");
    }
    let mut inverse = vec![0; order.len()];
    for (position, &axis) in order.iter().enumerate() {
        inverse[axis] = position;
    }
    inverse
}

/// Checks that `order` is a permutation of `0..rank`.
pub fn check_permutation(order: &[usize], rank: usize) -> Result<()> {
    let invalid = |reason| Error::InvalidAxes {
        axes: order.to_vec(),
        rank,
        reason,
    };
    if order.len() != rank {
        return Err(invalid("a permutation must name every axis exactly once"));
    }
    // A bit per axis (no allocation: permutes run several times per training step); ranks past
    // 64 fall back to a vector.
    let mut seen_bits = 0u64;
    let mut seen_vec = if rank > 64 { vec![false; rank] } else { Vec::new() };
    for &axis in order {
        if axis >= rank {
            return Err(invalid("an axis is out of range"));
        }
        let repeated = if rank > 64 {
            std::mem::replace(&mut seen_vec[axis], true)
        } else {
            let bit = 1u64 << axis;
            let seen = seen_bits & bit != 0;
            seen_bits |= bit;
            seen
        };
        if repeated {
            return Err(invalid("an axis is repeated"));
        }
    }
    Ok(())
}

/// Normalizes a possibly negative axis (`-1` is the last) to `0..rank`.
pub fn normalize_axis(axis: isize, rank: usize) -> Result<usize> {
    let resolved = if axis < 0 { axis + rank as isize } else { axis };
    if (0..rank as isize).contains(&resolved) {
        Ok(resolved as usize)
    } else {
        Err(Error::AxisOutOfRange { axis, rank })
    }
}

/// The numpy broadcast of two shapes: trailing dims aligned, a missing leading dim or a 1 stretches
/// to the other's size.
pub fn broadcast_shapes(lhs: &[usize], rhs: &[usize]) -> Result<Vec<usize>> {
    let rank = lhs.len().max(rhs.len());
    let dim_at = |shape: &[usize], i: usize| {
        let pad = rank - shape.len();
        if i < pad { 1 } else { shape[i - pad] }
    };
    (0..rank)
        .map(|i| match (dim_at(lhs, i), dim_at(rhs, i)) {
            (a, b) if a == b => Ok(a),
            (1, b) => Ok(b),
            (a, 1) => Ok(a),
            _ => Err(Error::ShapeMismatch {
                op: "broadcast",
                lhs: lhs.to_vec(),
                rhs: rhs.to_vec(),
                rule: "trailing dims must be equal or 1",
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numel_hand_cases() {
        assert_eq!(numel(&[2, 3, 4]), 24);
        assert_eq!(numel(&[]), 1, "a scalar has one element");
        assert_eq!(numel(&[3, 0, 5]), 0);
        assert_eq!(numel(&[0, usize::MAX]), 0);
        // Dims other than 0 that overflow, wherever the 0 is.
        for shape in [[usize::MAX, 2, 0], [0, usize::MAX, 2], [usize::MAX, 0, 2]] {
            assert!(matches!(checked_numel(&shape), Err(Error::ShapeOverflow { .. })));
        }
        assert!(matches!(
            checked_numel(&[usize::MAX, 2]),
            Err(Error::ShapeOverflow { .. })
        ));
    }

    #[test]
    fn strides_are_suffix_products() {
        assert_eq!(contiguous_strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(contiguous_strides(&[]), Vec::<isize>::new());
        assert_eq!(contiguous_strides(&[1, 1]), vec![1, 1]);
        for shape in [vec![5usize], vec![2, 7, 1, 3], vec![4, 0, 2]] {
            let strides = contiguous_strides(&shape);
            for i in 0..shape.len() {
                let suffix: usize = shape[i + 1..].iter().map(|d| d.max(&1)).product();
                assert_eq!(strides[i], suffix as isize, "shape {shape:?} axis {i}");
            }
        }
    }

    #[test]
    fn argsort_inverts_a_permutation() {
        assert_eq!(argsort(&[2, 0, 1]), vec![1, 2, 0]);
        assert_eq!(argsort(&[]), Vec::<usize>::new());
        for bad in [&[5][..], &[0, 0], &[1, 2]] {
            let message = std::panic::catch_unwind(|| argsort(bad)).unwrap_err();
            let message = message.downcast_ref::<String>().unwrap();
            assert!(
                message.starts_with("argsort: axes ") && message.contains(&format!("{bad:?}")),
                "{message}"
            );
        }
        let order = [3, 1, 0, 2];
        let inverse = argsort(&order);
        let shape = [10, 11, 12, 13];
        let permuted: Vec<usize> = order.iter().map(|&a| shape[a]).collect();
        let back: Vec<usize> = inverse.iter().map(|&a| permuted[a]).collect();
        assert_eq!(back, shape);
    }

    #[test]
    fn permutation_check_rejects_repeats_and_out_of_range() {
        assert!(check_permutation(&[1, 0, 2], 3).is_ok());
        assert!(check_permutation(&[], 0).is_ok());
        assert!(check_permutation(&[0, 0, 1], 3).is_err());
        assert!(check_permutation(&[0, 3, 1], 3).is_err());
        assert!(check_permutation(&[0, 1], 3).is_err());
    }

    #[test]
    fn normalize_axis_counts_negative_from_the_end() {
        assert_eq!(normalize_axis(-1, 3), Ok(2));
        assert_eq!(normalize_axis(0, 1), Ok(0));
        assert_eq!(
            normalize_axis(3, 3),
            Err(Error::AxisOutOfRange { axis: 3, rank: 3 })
        );
        assert!(normalize_axis(-4, 3).is_err());
        assert!(normalize_axis(0, 0).is_err(), "a scalar has no axes");
    }

    #[test]
    fn broadcast_follows_numpy() {
        assert_eq!(broadcast_shapes(&[2, 1, 4], &[3, 1]), Ok(vec![2, 3, 4]));
        assert_eq!(broadcast_shapes(&[], &[2, 3]), Ok(vec![2, 3]));
        assert_eq!(broadcast_shapes(&[0, 1], &[1, 5]), Ok(vec![0, 5]));
        assert!(broadcast_shapes(&[2, 3], &[2, 4]).is_err());
        // Invariant: broadcasting is symmetric and idempotent.
        let out = broadcast_shapes(&[4, 1, 3], &[5, 1]).unwrap();
        assert_eq!(broadcast_shapes(&[5, 1], &[4, 1, 3]).unwrap(), out);
        assert_eq!(broadcast_shapes(&out, &[4, 1, 3]).unwrap(), out);
    }
}
