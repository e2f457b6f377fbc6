//! Matrix products in every form the shape rule allows: matrix×matrix, batched×batched,
//! batched×matrix, vector×matrix and matrix×vector.

use super::{GradMode, Join, Tensor};
use crate::autograd::Var;
use crate::error::{Result, or_panic};
use crate::shape::runtime::checked_numel;
use crate::shape::{MatMulShape, Shape};

impl<S: Shape, G: GradMode> Tensor<S, G> {
    /// The matrix product (see [`MatMulShape`] for the forms). Inner dims that differ statically
    /// do not compile; run-time (`usize`) ones panic naming both shapes (see
    /// [`try_matmul`](Self::try_matmul)).
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let a = Tensor::from([[1.0, 2.0], [3.0, 4.0]]);
    /// let b = Tensor::from([[5.0], [6.0]]);
    /// assert_eq!(a.matmul(&b).to_array(), [[17.0], [39.0]]);
    /// assert_eq!(Tensor::from([1.0, 1.0]).matmul(&a).to_array(), [4.0, 6.0]);
    /// ```
    #[track_caller]
    #[doc(alias("mm", "bmm"))]
    pub fn matmul<S2: Shape, G2: GradMode>(&self, rhs: &Tensor<S2, G2>) -> Tensor<S::Output, G::Out>
    where
        S: MatMulShape<S2>,
        G: Join<G2>,
    {
        or_panic(self.try_matmul(rhs))
    }

    /// The matrix product, or an error naming both shapes if run-time dims disagree
    /// ([`Error::ShapeOverflow`](crate::Error::ShapeOverflow) if the product's element count does
    /// not fit in `usize`).
    pub fn try_matmul<S2: Shape, G2: GradMode>(
        &self,
        rhs: &Tensor<S2, G2>,
    ) -> Result<Tensor<S::Output, G::Out>>
    where
        S: MatMulShape<S2>,
        G: Join<G2>,
    {
        let shape = self.shape.matmul_shape(&rhs.shape)?;
        // `(M, 1) x (1, N)` fits whenever its operands do, but its product may not.
        checked_numel(&shape.dims())?;
        Ok(Tensor::from_var(
            shape,
            matmul_vars(&self.var, &rhs.var, &shape.dims()),
        ))
    }
}

/// Lifts vectors to matrices and a shared matrix to the batch, multiplies, and shapes the result.
fn matmul_vars(a: &Var, b: &Var, out: &[usize]) -> Var {
    let (sa, sb) = (a.buf().shape().to_vec(), b.buf().shape().to_vec());
    let a = if sa.len() == 1 {
        a.reshape(&[1, sa[0]])
    } else {
        a.clone()
    };
    let b = if sb.len() == 1 {
        b.reshape(&[sb[0], 1])
    } else {
        b.clone()
    };
    let (sa, sb) = (a.buf().shape().to_vec(), b.buf().shape().to_vec());
    let rank = sa.len();
    let b = if sb.len() < rank {
        let mut batched = sa[..rank - 2].to_vec();
        batched.extend_from_slice(&sb);
        b.expand(&batched)
    } else {
        b
    };
    a.matmul(&b).reshape(out)
}
