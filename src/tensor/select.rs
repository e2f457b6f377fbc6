//! Selecting by index: rows (the lookup behind an embedding table), and one column per row (the
//! label's log-probability in a negative log-likelihood).

use std::sync::Arc;

use super::composite::{Labels, one_hot};
use super::{GradMode, Tensor};
use crate::autograd::{BackwardFn, Var};
use crate::error::{Error, Result};
use crate::lazy::LazyBuffer;
use crate::shape::{Const, Dim};

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
        let picked = self.var.buf().pick_rows(rows.clone());
        let var = Var::record(picked, &[&self.var], || {
            Box::new(move |g: &LazyBuffer| [g.add_rows(rows, v.size())].into()) as BackwardFn
        });
        Ok(Tensor::from_var((batch, d), var))
    }
}

impl<B: Dim, const C: usize, G: GradMode> Tensor<(B, Const<C>), G> {
    /// Each row's value at its label's column: `[B, C]` to `[B]`, as PyTorch's
    /// `x.gather(1, labels[:, None])[:, 0]` (`x[range(B), labels]`). The gradient goes to those
    /// entries alone (0 elsewhere, even where the gradient is not finite).
    ///
    /// A label `>= C` is [`Error::Data`] naming it, as in [`cross_entropy`](super::cross_entropy);
    /// labels for another run-time batch size are [`Error::ShapeMismatch`].
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let x = Tensor::from([[0.1, 0.9], [0.7, 0.3]]);
    /// let picked = x.gather_columns(&Labels::new(vec![1, 0], Const::<2>).unwrap()).unwrap();
    /// assert_eq!(picked.to_array(), [0.9, 0.7]);
    /// ```
    #[doc(alias("gather", "take_along_axis"))]
    pub fn gather_columns(&self, labels: &Labels<B>) -> Result<Tensor<(B,), G>> {
        labels.check("gather_columns", &self.dims())?;
        let batch = self.shape.0;
        let picked = self
            .var
            .buf()
            .pick_columns(labels.indices[..].into())
            .reshape(&[batch.size()]);
        let var = Var::record(picked, &[&self.var], || {
            let one_hot = one_hot(&labels.indices, C).expect("a one-hot matrix's values fill its shape");
            Box::new(move |g: &LazyBuffer| {
                let shape = one_hot.shape().to_vec();
                let g = g.reshape(&[shape[0], 1]).expand(&shape);
                [one_hot.where_(&g, &LazyBuffer::full(&shape, 0.0))].into()
            }) as BackwardFn
        });
        Ok(Tensor::from_var((batch,), var))
    }
}

/// Mean negative log-likelihood of `log_probs` (one row of log-probabilities per sample, as
/// `log_softmax` gives) at the class `labels`: `−mean_i(log_probs[i, label_i])`, as PyTorch's
/// `nll_loss`. With `log_softmax` it is [`cross_entropy`](super::cross_entropy), which fuses
/// the two. NaN over an empty batch, as PyTorch's.
///
/// Errors as [`Tensor::gather_columns`] (named `nll_loss`).
///
/// ```
/// use teenygrad::prelude::*;
/// use teenygrad::tensor::nll_loss;
/// let log_probs = Tensor::from([[-0.1, -2.4], [-1.2, -0.4]]);
/// let loss = nll_loss(&log_probs, &Labels::new(vec![0, 1], Const::<2>).unwrap()).unwrap();
/// assert!((loss.item() - 0.25).abs() < 1e-7);
/// ```
pub fn nll_loss<B: Dim, const C: usize, G: GradMode>(
    log_probs: &Tensor<(B, Const<C>), G>,
    labels: &Labels<B>,
) -> Result<Tensor<(), G>> {
    labels.check("nll_loss", &log_probs.dims())?;
    Ok(-log_probs.gather_columns(labels)?.mean_all())
}
