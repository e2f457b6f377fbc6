//! Reductions over typed axes (dropping them, or keeping them as `One`), over all axes, and the
//! mean.

use super::{GradMode, Tensor};
use crate::lazy::ReduceOp;
use crate::shape::axes::assert_increasing;
use crate::shape::{Axes, ReduceShape, Shape};

impl<S: Shape, G: GradMode> Tensor<S, G> {
    fn reduce_keep<Ax: Axes>(&self, op: ReduceOp) -> crate::autograd::Var
    where
        S: ReduceShape<Ax>,
    {
        self.var.reduce(op, &Ax::indices())
    }

    fn reduce_to<Ax: Axes>(&self, op: ReduceOp) -> Tensor<S::Output, G>
    where
        S: ReduceShape<Ax>,
    {
        let shape = self.shape.reduced();
        Tensor::from_var(shape, self.reduce_keep::<Ax>(op).reshape(&shape.dims()))
    }

    fn reduce_keepdim<Ax: Axes>(&self, op: ReduceOp) -> Tensor<S::KeepDim, G>
    where
        S: ReduceShape<Ax>,
    {
        Tensor::from_var(self.shape.keepdim(), self.reduce_keep::<Ax>(op))
    }

    fn reduce_all(&self, op: ReduceOp) -> Tensor<(), G> {
        let axes: Vec<usize> = (0..S::RANK).collect();
        Tensor::from_var((), self.var.reduce(op, &axes).reshape(&[]))
    }

    /// Sum over the axes `Ax`, which disappear.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let m = Tensor::from([[1.0, 2.0], [3.0, 4.0]]);
    /// assert_eq!(m.sum::<Axis<0>>().to_array(), [4.0, 6.0]);
    /// assert_eq!(m.sum::<Axis<1>>().to_array(), [3.0, 7.0]);
    /// ```
    pub fn sum<Ax: Axes>(&self) -> Tensor<S::Output, G>
    where
        S: ReduceShape<Ax>,
    {
        // Also checked by the shape's reduction; here the error names the caller's line.
        const { assert_increasing::<Ax>() };
        self.reduce_to::<Ax>(ReduceOp::Sum)
    }

    /// Sum over `Ax`, kept as size-`One` axes (so the result broadcasts against `self`).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let m = Tensor::from([[1.0, 2.0], [3.0, 4.0]]);
    /// let s: Tensor<(Const<2>, One)> = m.sum_keepdim::<Axis<1>>();
    /// assert_eq!((m / s).to_vec(), vec![1.0 / 3.0, 2.0 / 3.0, 3.0 / 7.0, 4.0 / 7.0]);
    /// ```
    pub fn sum_keepdim<Ax: Axes>(&self) -> Tensor<S::KeepDim, G>
    where
        S: ReduceShape<Ax>,
    {
        // Also checked by the shape's reduction; here the error names the caller's line.
        const { assert_increasing::<Ax>() };
        self.reduce_keepdim::<Ax>(ReduceOp::Sum)
    }

    /// Sum of every element.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::<Rank2<2, 3>>::ones().sum_all().item(), 6.0);
    /// ```
    pub fn sum_all(&self) -> Tensor<(), G> {
        self.reduce_all(ReduceOp::Sum)
    }

    /// Maximum over `Ax` (NaN if any is NaN; the gradient is split among tied maxima).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([[1.0, 5.0], [7.0, 2.0]]).max::<Axis<1>>().to_array(), [5.0, 7.0]);
    /// ```
    pub fn max<Ax: Axes>(&self) -> Tensor<S::Output, G>
    where
        S: ReduceShape<Ax>,
    {
        // Also checked by the shape's reduction; here the error names the caller's line.
        const { assert_increasing::<Ax>() };
        self.reduce_to::<Ax>(ReduceOp::Max)
    }

    /// Maximum over `Ax`, kept as `One` axes.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let m = Tensor::from([[1.0, 5.0]]);
    /// assert_eq!((&m - m.max_keepdim::<Axis<1>>()).to_vec(), vec![-4.0, 0.0]);
    /// ```
    pub fn max_keepdim<Ax: Axes>(&self) -> Tensor<S::KeepDim, G>
    where
        S: ReduceShape<Ax>,
    {
        // Also checked by the shape's reduction; here the error names the caller's line.
        const { assert_increasing::<Ax>() };
        self.reduce_keepdim::<Ax>(ReduceOp::Max)
    }

    /// Maximum of every element (`-inf` if empty).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([1.0, 5.0, 3.0]).max_all().item(), 5.0);
    /// ```
    pub fn max_all(&self) -> Tensor<(), G> {
        self.reduce_all(ReduceOp::Max)
    }

    /// Minimum over `Ax` (NaN if any is NaN; the gradient is split among tied minima).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([[1.0, 5.0], [7.0, 2.0]]).min::<Axis<0>>().to_array(), [1.0, 2.0]);
    /// ```
    pub fn min<Ax: Axes>(&self) -> Tensor<S::Output, G>
    where
        S: ReduceShape<Ax>,
    {
        // Also checked by the shape's reduction; here the error names the caller's line.
        const { assert_increasing::<Ax>() };
        self.reduce_to::<Ax>(ReduceOp::Min)
    }

    /// Minimum over `Ax`, kept as `One` axes.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([[1.0, 5.0]]).min_keepdim::<Axis<1>>().to_vec(), vec![1.0]);
    /// ```
    pub fn min_keepdim<Ax: Axes>(&self) -> Tensor<S::KeepDim, G>
    where
        S: ReduceShape<Ax>,
    {
        // Also checked by the shape's reduction; here the error names the caller's line.
        const { assert_increasing::<Ax>() };
        self.reduce_keepdim::<Ax>(ReduceOp::Min)
    }

    /// Minimum of every element (`+inf` if empty).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([1.0, 5.0, 3.0]).min_all().item(), 1.0);
    /// ```
    pub fn min_all(&self) -> Tensor<(), G> {
        self.reduce_all(ReduceOp::Min)
    }

    /// Mean over `Ax` (NaN over an empty axis, as 0/0).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([[1.0, 2.0], [3.0, 6.0]]).mean::<Axis<1>>().to_array(), [1.5, 4.5]);
    /// ```
    pub fn mean<Ax: Axes>(&self) -> Tensor<S::Output, G>
    where
        S: ReduceShape<Ax>,
    {
        // Also checked by the shape's reduction; here the error names the caller's line.
        const { assert_increasing::<Ax>() };
        let count: usize = Ax::indices().iter().map(|&a| self.dims()[a]).product();
        self.sum::<Ax>() / count as f32
    }

    /// Mean over `Ax`, kept as `One` axes.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([[1.0, 3.0]]).mean_keepdim::<Axis<1>>().to_vec(), vec![2.0]);
    /// ```
    pub fn mean_keepdim<Ax: Axes>(&self) -> Tensor<S::KeepDim, G>
    where
        S: ReduceShape<Ax>,
    {
        // Also checked by the shape's reduction; here the error names the caller's line.
        const { assert_increasing::<Ax>() };
        let count: usize = Ax::indices().iter().map(|&a| self.dims()[a]).product();
        self.sum_keepdim::<Ax>() / count as f32
    }

    /// Mean of every element (of none, NaN: `0/0`).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([1.0, 2.0, 6.0]).mean_all().item(), 3.0);
    /// ```
    pub fn mean_all(&self) -> Tensor<(), G> {
        self.sum_all() / self.numel() as f32
    }
}
