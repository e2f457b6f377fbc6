//! Reading values out: each read is a realization boundary.

use super::{GradMode, Tensor};
use crate::shape::{Const, Shape, SingleElement};

impl<S: Shape, G: GradMode> Tensor<S, G> {
    /// All values in row-major order.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([[1.0, 2.0], [3.0, 4.0]]).t().to_vec(), vec![1.0, 3.0, 2.0, 4.0]);
    /// ```
    pub fn to_vec(&self) -> Vec<f32> {
        self.var.buf().to_vec()
    }
}

impl<S: Shape, G: GradMode> Tensor<S, G> {
    /// The value of a tensor of one element: a scalar, or any rank of dims of size 1 known to
    /// the compiler ([`SingleElement`]); anything larger is a compile error that names its shape.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([1.0, 2.0, 3.0]).sum_all().item(), 6.0);
    /// assert_eq!(Tensor::from([[4.5]]).item(), 4.5);
    /// ```
    pub fn item(&self) -> f32
    where
        S: SingleElement,
    {
        self.to_vec()[0]
    }
}

fn split<const N: usize>(values: &[f32]) -> [f32; N] {
    values.try_into().expect("chunk length matches the static dim")
}

impl<const A: usize, G: GradMode> Tensor<(Const<A>,), G> {
    /// The values as an array.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!((Tensor::from([1.0, 2.0]) * 2.0).to_array(), [2.0, 4.0]);
    /// ```
    pub fn to_array(&self) -> [f32; A] {
        split(&self.to_vec())
    }
}

impl<const A: usize, const B: usize, G: GradMode> Tensor<(Const<A>, Const<B>), G> {
    /// The values as a nested array.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::<Rank2<1, 2>>::ones().to_array(), [[1.0, 1.0]]);
    /// ```
    pub fn to_array(&self) -> [[f32; B]; A] {
        let values = self.to_vec();
        std::array::from_fn(|i| split(&values[i * B..(i + 1) * B]))
    }
}

impl<const A: usize, const B: usize, const C: usize, G: GradMode> Tensor<(Const<A>, Const<B>, Const<C>), G> {
    /// The values as a nested array.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::<Rank3<1, 1, 2>>::zeros().to_array(), [[[0.0, 0.0]]]);
    /// ```
    pub fn to_array(&self) -> [[[f32; C]; B]; A] {
        let values = self.to_vec();
        std::array::from_fn(|i| std::array::from_fn(|j| split(&values[(i * B + j) * C..(i * B + j + 1) * C])))
    }
}

impl<const A: usize, const B: usize, const C: usize, const D: usize, G: GradMode>
    Tensor<(Const<A>, Const<B>, Const<C>, Const<D>), G>
{
    /// The values as a nested array.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let t = Tensor::<Rank1<4>>::arange().reshape::<Rank4<1, 2, 1, 2>>();
    /// assert_eq!(t.to_array(), [[[[0.0, 1.0]], [[2.0, 3.0]]]]);
    /// ```
    pub fn to_array(&self) -> [[[[f32; D]; C]; B]; A] {
        let values = self.to_vec();
        std::array::from_fn(|i| {
            std::array::from_fn(|j| {
                std::array::from_fn(|k| {
                    let start = ((i * B + j) * C + k) * D;
                    split(&values[start..start + D])
                })
            })
        })
    }
}
