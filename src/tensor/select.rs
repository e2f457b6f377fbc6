//! Selecting rows by index: the lookup behind an embedding table.

use std::sync::Arc;

use super::{GradMode, Tensor};
use crate::autograd::Var;
use crate::error::{Error, Result};
use crate::shape::Dim;

impl<V: Dim, D: Dim, G: GradMode> Tensor<(V, D), G> {
    /// The rows at `indices`, in that order: row `i` of the result is row `indices[i]` (a row may
    /// appear many times or not at all), as PyTorch's `index_select(0, indices)` and
    /// `embedding(indices, weight)`. The gradient adds each result row's gradient into the row
    /// it came from. A batch of sequences of ids, `[B, T]`, is `B·T` indices, then
    /// [`reshape_to`](Self::reshape_to) `(B, T, D)`.
    ///
    /// An index `>= V` is [`Error::IndexOutOfRange`] naming it and its position.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let table = Tensor::from([[0.0, 1.0], [10.0, 11.0], [20.0, 21.0]]);
    /// let rows = table.select_rows(&[2, 0, 2]).unwrap();
    /// assert_eq!(rows.to_vec(), vec![20.0, 21.0, 0.0, 1.0, 20.0, 21.0]);
    /// assert!(table.select_rows(&[3]).is_err());
    /// ```
    #[doc(alias("index_select", "embedding", "take"))]
    pub fn select_rows(&self, indices: &[usize]) -> Result<Tensor<(usize, D), G>> {
        self.select_rows_in(indices.len(), indices)
    }

    /// [`select_rows`](Self::select_rows) into a result whose row count has the type `B`
    /// (`Const::<4>` for a static batch); [`Error::ShapeMismatch`] if `indices.len()` is not
    /// its size.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let table = Tensor::from([[0.0, 1.0], [10.0, 11.0]]);
    /// let rows: Tensor<Rank2<2, 2>> = table.select_rows_in(Const::<2>, &[1, 1]).unwrap();
    /// assert_eq!(rows.to_array(), [[10.0, 11.0], [10.0, 11.0]]);
    /// assert!(table.select_rows_in(Const::<2>, &[1]).is_err());
    /// ```
    pub fn select_rows_in<B: Dim>(&self, batch: B, indices: &[usize]) -> Result<Tensor<(B, D), G>> {
        let (v, d) = self.shape;
        if indices.len() != batch.size() {
            return Err(Error::ShapeMismatch {
                op: "select_rows",
                lhs: vec![indices.len()],
                rhs: vec![batch.size()],
                rule: "the number of indices (left) must be the result's row count (right)",
            });
        }
        if let Some((position, &index)) = indices.iter().enumerate().find(|&(_, &r)| r >= v.size()) {
            return Err(Error::IndexOutOfRange {
                op: "select_rows",
                position,
                index,
                len: v.size(),
            });
        }
        let rows: Arc<[usize]> = indices.into();
        let x = self.var.buf().into_owned();
        let picked = x.pick_rows(rows.clone());
        let var = Var::record(picked, &[&self.var], || {
            Box::new(move |g: &crate::lazy::LazyBuffer| [g.add_rows(rows, v.size())].into())
                as crate::autograd::BackwardFn
        });
        Ok(Tensor::from_var((batch, d), var))
    }
}
