//! `Display` and `Debug`: values (elided PyTorch-style when large, in scientific notation when
//! their magnitudes call for it) and the shape. Both realize.

use std::fmt;

use super::{GradMode, Tensor};
use crate::shape::Shape;

/// Above this many elements, each axis shows only its first and last [`EDGE`] entries.
const ELIDE_ABOVE: usize = 1000;
const EDGE: usize = 3;

/// Whether to print `values` in scientific notation, by PyTorch's rule: the nonzero finite
/// magnitudes span more than a factor of 1000, or reach 1e8, or go below 1e-4. With four
/// decimals fixed, `1e-6` would print as `0.0000` and a small gradient look like none.
fn scientific(values: &[f32]) -> bool {
    // In f64, as PyTorch compares: the f32 nearest 1e-4 is below it.
    let magnitudes = (values.iter().map(|&v| f64::from(v).abs())).filter(|&v| v > 0.0 && v.is_finite());
    let (min, max) = magnitudes.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    max > 0.0 && (max / min > 1000.0 || max >= 1e8 || min < 1e-4)
}

fn write_nested(
    f: &mut fmt::Formatter<'_>,
    values: &[f32],
    dims: &[usize],
    (elide, scientific): (bool, bool),
    depth: usize,
) -> fmt::Result {
    let Some((&len, inner)) = dims.split_first() else {
        return match scientific {
            true => write!(f, "{:.4e}", values[0]),
            false => write!(f, "{:.4}", values[0]),
        };
    };
    let stride: usize = inner.iter().product();
    let shown: Vec<Option<usize>> = if elide && len > 2 * EDGE {
        (0..EDGE)
            .map(Some)
            .chain([None])
            .chain((len - EDGE..len).map(Some))
            .collect()
    } else {
        (0..len).map(Some).collect()
    };
    f.write_str("[")?;
    for (n, entry) in shown.iter().enumerate() {
        if n > 0 {
            if inner.is_empty() {
                f.write_str(", ")?;
            } else {
                write!(f, ",\n{:indent$}", "", indent = depth + 1)?;
            }
        }
        match entry {
            Some(i) => write_nested(
                f,
                &values[i * stride..(i + 1) * stride],
                inner,
                (elide, scientific),
                depth + 1,
            )?,
            None => f.write_str("...")?,
        }
    }
    f.write_str("]")
}

impl<S: Shape, G: GradMode> fmt::Display for Tensor<S, G> {
    /// ```
    /// use teenygrad::prelude::*;
    /// let t = Tensor::from([[1.0, 2.0], [3.0, 4.0]]);
    /// assert_eq!(t.to_string(), "tensor([[1.0000, 2.0000],\n        [3.0000, 4.0000]], shape=[2, 2])");
    /// let small = Tensor::from([1e-6, -3e-5]);
    /// assert_eq!(small.to_string(), "tensor([1.0000e-6, -3.0000e-5], shape=[2])");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let values = self.to_vec();
        let dims = self.dims();
        f.write_str("tensor(")?;
        if values.is_empty() {
            f.write_str("[]")?;
        } else {
            let style = (values.len() > ELIDE_ABOVE, scientific(&values));
            write_nested(f, &values, &dims, style, "tensor(".len())?;
        }
        write!(f, ", shape={dims:?})")
    }
}

impl<S: Shape, G: GradMode> fmt::Debug for Tensor<S, G> {
    /// The values, the shape type and whether the tensor is tracked.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self} as {:?}", self.shape)?;
        if G::TRACKED {
            f.write_str(" (tracked)")?;
        }
        Ok(())
    }
}
