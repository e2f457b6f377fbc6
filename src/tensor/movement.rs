//! Movement operations: views that copy nothing (reshape copies only when a view cannot be
//! reshaped in place). Static target shapes are checked at compile time; run-time dims at run time.

use super::{GradMode, Tensor};
use crate::error::{Error, Result, or_panic};
use crate::shape::axes::assert_distinct;
use crate::shape::reshape::assert_same_rank;
use crate::shape::runtime::{checked_numel, padded_dims};
use crate::shape::{
    Axes, Axis, BroadcastTo, Const, ConstShape, One, PermuteShape, Shape, SqueezableDim, Squeeze, SwapLast,
    Unsqueeze, assert_same_numel, check_reshape,
};

impl<S: Shape, G: GradMode> Tensor<S, G> {
    /// The same elements in the static shape `Dst`; a different element count does not compile.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let t = Tensor::<Rank1<6>>::arange().reshape::<Rank2<2, 3>>();
    /// assert_eq!(t.to_array(), [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]);
    /// ```
    #[doc(alias("view"))]
    pub fn reshape<Dst: ConstShape>(&self) -> Tensor<Dst, G>
    where
        S: ConstShape,
    {
        const { assert_same_numel::<S, Dst>() };
        Tensor::from_var(Dst::default(), self.var.reshape(&Dst::default().dims()))
    }

    /// The same elements in `dst`, a shape with run-time dims; an error naming both shapes if the
    /// element counts differ ([`Error::ShapeOverflow`] if `dst`'s does not fit in `usize`).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let t = Tensor::from([[1.0, 2.0], [3.0, 4.0]]);
    /// assert_eq!(t.try_reshape_to((4usize,)).unwrap().to_vec(), vec![1.0, 2.0, 3.0, 4.0]);
    /// assert!(t.try_reshape_to((3usize,)).is_err());
    /// ```
    pub fn try_reshape_to<Dst: Shape>(&self, dst: Dst) -> Result<Tensor<Dst, G>> {
        checked_numel(&dst.dims())?;
        check_reshape(&self.shape, &dst)?;
        Ok(Tensor::from_var(dst, self.var.reshape(&dst.dims())))
    }

    /// [`try_reshape_to`](Self::try_reshape_to) that panics (naming both shapes) on a mismatch.
    #[track_caller]
    #[doc(alias("view"))]
    pub fn reshape_to<Dst: Shape>(&self, dst: Dst) -> Tensor<Dst, G> {
        or_panic(self.try_reshape_to(dst))
    }

    /// All elements in one axis of static length `N` (`N` must be the element count).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::<Rank2<2, 3>>::ones().flatten::<6>().to_array(), [1.0; 6]);
    /// ```
    pub fn flatten<const N: usize>(&self) -> Tensor<(Const<N>,), G>
    where
        S: ConstShape,
    {
        // Also checked by `reshape`; here the error names the caller's line.
        const { assert_same_numel::<S, (Const<N>,)>() };
        self.reshape::<(Const<N>,)>()
    }

    /// A new axis of size 1 at position `I` (from 0 to the rank), as a [`One`], so that it
    /// broadcasts: `torch.unsqueeze(x, I)`. A view; it works on any shape, run-time dims
    /// included.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let x = Tensor::from([[1.0, 2.0], [3.0, 4.0]]);
    /// let row_sums = x.sum::<Axis<1>>().unsqueeze(Axis::<1>); // [2, 1], broadcasts over columns
    /// assert_eq!((x / row_sums).to_array(), [[1.0 / 3.0, 2.0 / 3.0], [3.0 / 7.0, 4.0 / 7.0]]);
    /// ```
    ///
    /// [`One`]: crate::shape::One
    pub fn unsqueeze<const I: usize>(&self, _axis: Axis<I>) -> Tensor<S::Inserted<One>, G>
    where
        S: Unsqueeze<I>,
    {
        let shape = self.shape.inserted(One);
        Tensor::from_var(shape, self.var.reshape(&shape.dims()))
    }

    /// Removes axis `I`, whose dim must be a static 1 (`One` or `Const<1>`; anything else does
    /// not compile): `torch.squeeze(x, I)`. A view. A run-time dim of size 1 is removed by
    /// [`reshape_to`](Self::reshape_to).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let col = Tensor::from([[1.0], [2.0], [3.0]]); // [3, 1]
    /// assert_eq!(col.squeeze(Axis::<1>).to_array(), [1.0, 2.0, 3.0]);
    /// ```
    pub fn squeeze<const I: usize>(&self, _axis: Axis<I>) -> Tensor<S::Squeezed, G>
    where
        S: Squeeze<I>,
        S::At: SqueezableDim,
    {
        let shape = self.shape.squeezed();
        Tensor::from_var(shape, self.var.reshape(&shape.dims()))
    }

    /// Reorders the axes: axis `k` of the result is axis `Ax[k]` of `self`.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let t = Tensor::<Rank3<2, 3, 4>>::zeros().permute::<Axes3<2, 0, 1>>();
    /// assert_eq!(t.dims(), vec![4, 2, 3]);
    /// ```
    pub fn permute<Ax: Axes>(&self) -> Tensor<S::Output, G>
    where
        S: PermuteShape<Ax>,
    {
        // Also checked by `permuted`; here the error names the caller's line.
        const { assert_distinct::<Ax>() };
        Tensor::from_var(self.shape.permuted(), self.var.permute(&Ax::indices()))
    }

    /// Broadcasts to the static shape `Dst` (numpy rule: `One` and missing leading axes stretch).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let row = Tensor::from([1.0, 2.0]);
    /// assert_eq!(row.broadcast::<Rank2<2, 2>>().to_array(), [[1.0, 2.0], [1.0, 2.0]]);
    /// ```
    #[doc(alias("expand"))]
    pub fn broadcast<Dst: ConstShape>(&self) -> Tensor<Dst, G>
    where
        S: BroadcastTo<Dst>,
    {
        self.broadcast_to(Dst::default())
    }

    /// Broadcasts to `dst`, whose run-time dims must match; panics naming both shapes otherwise
    /// (see [`try_broadcast_to`](Self::try_broadcast_to)).
    #[track_caller]
    #[doc(alias("expand"))]
    pub fn broadcast_to<Dst: Shape>(&self, dst: Dst) -> Tensor<Dst, G>
    where
        S: BroadcastTo<Dst>,
    {
        or_panic(self.try_broadcast_to(dst))
    }

    /// Broadcasts to `dst`, or an error naming both shapes if a run-time dim differs
    /// ([`Error::ShapeOverflow`] if `dst`'s element count does not fit in `usize`).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let col = Tensor::from([[1.0], [2.0]]).reshape::<(Const<2>, One)>();
    /// assert_eq!(col.try_broadcast_to((Const::<2>, 3usize)).unwrap().to_vec(), vec![1.0, 1.0, 1.0, 2.0, 2.0, 2.0]);
    /// ```
    pub fn try_broadcast_to<Dst: Shape>(&self, dst: Dst) -> Result<Tensor<Dst, G>>
    where
        S: BroadcastTo<Dst>,
    {
        self.shape
            .check_broadcast_to(&dst)
            .map_err(|e| e.in_op("broadcast_to"))?;
        let dims = dst.dims();
        checked_numel(&dims)?;
        Ok(Tensor::from_var(dst, self.var.expand(&dims)))
    }

    /// Pads axis `d` with `pads[d] = (before, after)` zeros; `Dst` must have the padded sizes
    /// (an `Err` if not), and the source's rank (a build error at the call if not).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let t = Tensor::from([1.0, 2.0]).pad::<Rank1<4>>(&[(1, 1)]).unwrap();
    /// assert_eq!(t.to_array(), [0.0, 1.0, 2.0, 0.0]);
    /// assert!(Tensor::from([1.0, 2.0]).pad::<Rank1<4>>(&[(1, 0)]).is_err());
    /// ```
    pub fn pad<Dst: ConstShape>(&self, pads: &[(usize, usize)]) -> Result<Tensor<Dst, G>> {
        const { assert_same_rank::<S, Dst>() };
        self.pad_to(Dst::default(), pads)
    }

    /// [`pad`](Self::pad) to a shape with run-time dims ([`Error::ShapeOverflow`] if its element
    /// count does not fit in `usize`).
    pub fn pad_to<Dst: Shape>(&self, dst: Dst, pads: &[(usize, usize)]) -> Result<Tensor<Dst, G>> {
        const { assert_same_rank::<S, Dst>() };
        let (src, out) = (self.dims(), dst.dims());
        let padded = padded_dims(&src, pads);
        if padded.as_ref() != Some(&out) {
            // The shapes alone do not say what was wrong when the pads were.
            let rule = if pads.len() != src.len() {
                "pads must hold one (before, after) pair per source axis"
            } else if padded.is_none() {
                "a source dim plus its (before, after) padding overflows usize"
            } else {
                "each target dim must be the source dim plus its (before, after) padding"
            };
            return Err(Error::ShapeMismatch {
                op: "pad",
                lhs: src,
                rhs: out,
                rule,
            });
        }
        checked_numel(&out)?;
        Ok(Tensor::from_var(dst, self.var.pad(pads)))
    }

    /// The block starting at `starts` with the static shape `Dst` (a view): an `Err` if it does
    /// not lie inside, and a build error at the call if `Dst` has another rank than the source.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let m = Tensor::from([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
    /// assert_eq!(m.slice::<Rank2<2, 2>>(&[0, 1]).unwrap().to_array(), [[2.0, 3.0], [5.0, 6.0]]);
    /// assert!(m.slice::<Rank2<2, 2>>(&[0, 2]).is_err());
    /// ```
    #[doc(alias("narrow"))]
    pub fn slice<Dst: ConstShape>(&self, starts: &[usize]) -> Result<Tensor<Dst, G>> {
        const { assert_same_rank::<S, Dst>() };
        self.slice_to(Dst::default(), starts)
    }

    /// [`slice`](Self::slice) to a shape with run-time dims.
    pub fn slice_to<Dst: Shape>(&self, dst: Dst, starts: &[usize]) -> Result<Tensor<Dst, G>> {
        const { assert_same_rank::<S, Dst>() };
        let (src, out) = (self.dims(), dst.dims());
        let fits = starts.len() == src.len()
            && out.len() == src.len()
            && (0..src.len()).all(|d| starts[d].checked_add(out[d]).is_some_and(|end| end <= src[d]));
        if !fits {
            return Err(Error::OutOfBounds {
                op: "slice",
                shape: src,
                starts: starts.to_vec(),
                dims: out,
            });
        }
        let ranges: Vec<(usize, usize)> = starts.iter().zip(&out).map(|(&s, &n)| (s, s + n)).collect();
        Ok(Tensor::from_var(dst, self.var.shrink(&ranges)))
    }

    /// The last two axes swapped (a view): a matrix's transpose, or each matrix's in a batch of
    /// any rank up to 6, as PyTorch's `x.mT` (`kᵀ` in attention scores `q·kᵀ`). Other pairs of
    /// axes: [`permute`](Self::permute).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([[1.0, 2.0]]).t().to_array(), [[1.0], [2.0]]);
    /// let x = Tensor::from([[[1.0, 2.0]], [[3.0, 4.0]]]);
    /// assert_eq!(x.t().to_array(), [[[1.0], [2.0]], [[3.0], [4.0]]]);
    /// assert_eq!(Tensor::<Rank4<2, 4, 10, 8>>::zeros().t().dims(), vec![2, 4, 8, 10]);
    /// ```
    #[doc(alias("transpose", "mT"))]
    // The result is a parameter fixed by the bound, not `S::Output`: so a shape without two axes
    // fails that bound, with its readable message, rather than finding no method `t`.
    pub fn t<Out: Shape>(&self) -> Tensor<Out, G>
    where
        S: SwapLast<Output = Out>,
    {
        // On the stack: a layer's forward takes its weight's transpose every step.
        let (mut axes, rank) = ([0, 1, 2, 3, 4, 5], S::RANK);
        axes.swap(rank - 2, rank - 1);
        Tensor::from_var(self.shape.swapped(), self.var.permute(&axes[..rank]))
    }
}
