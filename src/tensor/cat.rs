//! Joining two tensors along an axis.

use super::{GradMode, Join, Tensor};
use crate::autograd::Var;
use crate::error::{Error, Result, or_panic};
use crate::lazy::LazyBuffer;
use crate::shape::{Axis, CatAlong, Dim, Shape};

impl<S: Shape, G: GradMode> Tensor<S, G> {
    /// `self` then `other` along `axis` (an [`Axis<I>`](crate::shape::Axis) value), as
    /// `torch.cat([self, other], dim=I)`. Every other dim must be the same type (a compile error
    /// otherwise) and, where run-time, the same size. The joined axis is run-time sized, since
    /// stable Rust cannot add two const sizes in a type: [`cat_in`](Self::cat_in) names a
    /// static one. Each input's gradient is its part of the result's. Values are copied bit for
    /// bit.
    ///
    /// Panics if a run-time dim differs, naming both shapes; see [`try_cat`](Self::try_cat).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let a = Tensor::from([[1.0, 2.0], [3.0, 4.0]]);
    /// let b = Tensor::from([[5.0], [6.0]]);
    /// let c = a.cat(&b, Axis::<1>);
    /// assert_eq!(c.dims(), vec![2, 3]);
    /// assert_eq!(c.to_vec(), vec![1.0, 2.0, 5.0, 3.0, 4.0, 6.0]);
    /// ```
    #[track_caller]
    #[doc(alias("concat", "concatenate", "hstack", "vstack"))]
    pub fn cat<S2, G2: GradMode, const I: usize>(
        &self,
        other: &Tensor<S2, G2>,
        axis: Axis<I>,
    ) -> Tensor<S::Joined<usize>, G::Out>
    where
        S: CatAlong<I>,
        S2: CatAlong<I, OtherDims = S::OtherDims>,
        G: Join<G2>,
    {
        or_panic(self.try_cat(other, axis))
    }

    /// The fallible form of [`cat`](Self::cat): [`Error::ShapeMismatch`] naming both shapes if
    /// a run-time dim other than the joined one differs.
    pub fn try_cat<S2, G2: GradMode, const I: usize>(
        &self,
        other: &Tensor<S2, G2>,
        axis: Axis<I>,
    ) -> Result<Tensor<S::Joined<usize>, G::Out>>
    where
        S: CatAlong<I>,
        S2: CatAlong<I, OtherDims = S::OtherDims>,
        G: Join<G2>,
    {
        let (a, b) = (self.dims()[I], other.dims()[I]);
        // A sum past `usize` would not fit any tensor: reported by `try_cat_in` as a mismatch.
        self.try_cat_in(other, axis, a.saturating_add(b))
    }

    /// [`cat`](Self::cat) into a result whose joined dim is `n`, of any dim type
    /// (`Const::<7>` for a static one), which must be the sum of the two inputs' sizes.
    ///
    /// Panics if it is not, or if another run-time dim differs, naming the shapes; see
    /// [`try_cat_in`](Self::try_cat_in).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let (a, b) = (Tensor::from([[1.0, 2.0]]), Tensor::<Rank2<2, 2>>::zeros());
    /// let rows: Tensor<Rank2<3, 2>> = a.cat_in(&b, Axis::<0>, Const::<3>);
    /// assert_eq!(rows.to_array(), [[1.0, 2.0], [0.0, 0.0], [0.0, 0.0]]);
    /// assert!(a.try_cat_in(&b, Axis::<0>, Const::<4>).is_err());
    /// ```
    #[track_caller]
    pub fn cat_in<S2, G2: GradMode, const I: usize, N: Dim>(
        &self,
        other: &Tensor<S2, G2>,
        axis: Axis<I>,
        n: N,
    ) -> Tensor<S::Joined<N>, G::Out>
    where
        S: CatAlong<I>,
        S2: CatAlong<I, OtherDims = S::OtherDims>,
        G: Join<G2>,
    {
        or_panic(self.try_cat_in(other, axis, n))
    }

    /// The fallible form of [`cat_in`](Self::cat_in): [`Error::ShapeMismatch`] naming the
    /// shapes if a run-time dim differs or `n` is not the sum of the joined sizes
    /// ([`Error::ShapeOverflow`] if the result's element count does not fit in `usize`).
    pub fn try_cat_in<S2, G2: GradMode, const I: usize, N: Dim>(
        &self,
        other: &Tensor<S2, G2>,
        _axis: Axis<I>,
        n: N,
    ) -> Result<Tensor<S::Joined<N>, G::Out>>
    where
        S: CatAlong<I>,
        S2: CatAlong<I, OtherDims = S::OtherDims>,
        G: Join<G2>,
    {
        let axis = I;
        let (lhs, rhs) = (self.dims(), other.dims());
        let mismatch = |lhs: Vec<usize>, rhs: Vec<usize>, rule| Error::ShapeMismatch {
            op: "cat",
            lhs,
            rhs,
            rule,
        };
        if (0..lhs.len()).any(|d| d != axis && lhs[d] != rhs[d]) {
            return Err(mismatch(lhs, rhs, "every dim but the joined axis must agree"));
        }
        let out = self.shape.joined(n);
        let (a, b) = (lhs[axis], rhs[axis]);
        if a.checked_add(b) != Some(n.size()) {
            let mut sum = lhs.clone();
            sum[axis] = a.saturating_add(b);
            return Err(mismatch(
                sum,
                out.dims(),
                "the joined dim is the sum of the inputs'",
            ));
        }
        crate::shape::runtime::checked_numel(&out.dims())?;
        // One copy of each input into its part; each gradient is its part of the result's (a view).
        let buf = self.var.buf().cat(&other.var.buf(), axis);
        let var = Var::record(buf, &[&self.var, &other.var], || {
            let ranges = |from: usize, to: usize| -> Vec<(usize, usize)> {
                (lhs.iter().enumerate())
                    .map(|(d, &size)| if d == axis { (from, to) } else { (0, size) })
                    .collect()
            };
            let (first, second) = (ranges(0, a), ranges(a, a + b));
            Box::new(move |g: &LazyBuffer| [g.shrink(&first), g.shrink(&second)].into())
                as crate::autograd::BackwardFn
        });
        Ok(Tensor::from_var(out, var))
    }
}
