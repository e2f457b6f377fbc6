//! The embedding table: a learned vector per index.

use rand::Rng;

use super::params::{Param, Params, join};
use super::{Detach, Init, Module};
use crate::autograd::Var;
use crate::error::{Result, or_panic};
use crate::lazy::LazyBuffer;
use crate::shape::{Const, Dim, Rank2, Rank3};
use crate::tensor::{GradMode, NoGrad, Tensor, Tracked};

/// A table of `V` vectors of `D` features, looked up by index (a token id), as PyTorch's
/// `nn.Embedding(V, D)`: `weight` is `[V, D]`, initialized standard normal, and each index's
/// output row is that row of `weight`. The gradient of a row is the sum of the gradients of the
/// outputs that read it (a row no index read gets 0, and moves only with weight decay or
/// momentum).
///
/// As a [`Module`] it takes `&[usize; N]` (a static batch, `[N, D]` out), `&[[usize; T]; B]` (a
/// static batch of sequences, `[B, T, D]` out), `&[usize]` or `&Vec<usize>` (a run-time batch,
/// `[n, D]`) and panics on an index `>= V`, naming it; [`try_lookup`] returns the error instead.
/// A run-time batch of sequences is its `B·T` ids, then [`reshape_to`](Tensor::reshape_to)
/// `(B, T, D)`. [`with_padding`](Embedding::with_padding) names a padding id, as PyTorch's
/// `padding_idx`.
///
/// [`try_lookup`]: Embedding::try_lookup
///
/// ```
/// use teenygrad::prelude::*;
/// use teenygrad::nn::{Embedding, Init, Linear, Module};
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let model = (Embedding::<100, 8>::init(&mut rng), Linear::<8, 2>::init(&mut rng));
/// let logits = model.forward(&[3, 14, 15, 92]);
/// assert_eq!(logits.dims(), vec![4, 2]);
/// assert!(model.0.try_lookup(&[100]).is_err());
/// ```
///
/// Cloning gives an independent table, as [`Linear`](super::Linear)'s clone does.
#[derive(Debug)]
pub struct Embedding<const V: usize, const D: usize, G: GradMode = Tracked> {
    /// The table, `[V, D]`: row `i` is index `i`'s vector.
    pub weight: Tensor<Rank2<V, D>, G>,
    /// The padding id, whose row gets no gradient.
    padding: Option<usize>,
}

impl<const V: usize, const D: usize, G: GradMode> Clone for Embedding<V, D, G> {
    fn clone(&self) -> Self {
        Embedding {
            weight: self.weight.copy_param(),
            padding: self.padding,
        }
    }
}

impl<const V: usize, const D: usize> Embedding<V, D> {
    /// A table with the given `[V, D]` weight (for example pretrained vectors), tracked.
    pub fn from_weight(weight: Tensor<Rank2<V, D>>) -> Self {
        Embedding {
            weight: weight.requires_grad(),
            padding: None,
        }
    }

    /// The same table with `index` as its padding id, as PyTorch's `padding_idx`: its row is set
    /// to zeros (as `nn.Embedding(V, D, padding_idx=index)` starts it) and gets no gradient, so
    /// padding positions look up a vector that training does not move (weight decay aside).
    ///
    /// # Panics
    /// If `index >= V`, naming both: a setting, not data.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// use rand::SeedableRng;
    /// let table = Embedding::<5, 2>::init(&mut rand::rngs::StdRng::seed_from_u64(0)).with_padding(0);
    /// let rows = table.forward(&[0, 3, 0]);
    /// rows.sum_all().backward();
    /// assert_eq!(rows.to_array()[0], [0.0, 0.0]);
    /// assert_eq!(table.weight.grad().unwrap().to_array()[0], [0.0, 0.0], "no gradient for padding");
    /// ```
    #[track_caller]
    pub fn with_padding(mut self, index: usize) -> Self {
        assert!(
            index < V,
            "Embedding::with_padding: index {index} is not below V = {V}"
        );
        let mut values = self.weight.to_vec();
        values[index * D..(index + 1) * D].fill(0.0);
        self.weight.set_values(values).expect("the table's own length");
        self.padding = Some(index);
        self
    }
}

impl<const V: usize, const D: usize> Init for Embedding<V, D> {
    /// Standard normal weights, as PyTorch's default.
    fn init<R: Rng + ?Sized>(rng: &mut R) -> Self {
        Self::from_weight(Tensor::randn(rng))
    }
}

impl<const V: usize, const D: usize, G: GradMode> Embedding<V, D, G> {
    /// The padding id, if the table has one.
    pub fn padding(&self) -> Option<usize> {
        self.padding
    }

    /// The vectors of `indices`, `[indices.len(), D]`, or [`Error::IndexOutOfRange`] naming an
    /// index `>= V` and its position (see [`Tensor::select_rows`]).
    ///
    /// [`Error::IndexOutOfRange`]: crate::Error::IndexOutOfRange
    pub fn try_lookup(&self, indices: &[usize]) -> Result<Tensor<(usize, Const<D>), G>> {
        self.try_lookup_in(indices.len(), indices)
    }

    /// [`try_lookup`](Self::try_lookup) into a batch of type `B` (`Const::<N>` for a static one).
    pub fn try_lookup_in<B: Dim>(&self, batch: B, indices: &[usize]) -> Result<Tensor<(B, Const<D>), G>> {
        let rows = (self.weight.select_rows_in(batch, indices)).map_err(|e| e.in_op("Embedding"))?;
        let Some(padding) = self.padding.filter(|p| indices.contains(p)) else {
            return Ok(rows);
        };
        // The padding rows' values, untracked: their gradient goes nowhere.
        let is_padding = indices.iter().map(|&i| if i == padding { 1.0 } else { 0.0 });
        let mask = LazyBuffer::from_values(is_padding, &[indices.len(), 1])?.expand(&[indices.len(), D]);
        let frozen = Var::untracked(rows.var.buf().into_owned());
        Ok(Tensor::from_var(
            rows.shape(),
            Var::where_(&Var::untracked(mask), &frozen, &rows.var),
        ))
    }
}

impl<const V: usize, const D: usize, const N: usize, G: GradMode> Module<&[usize; N]> for Embedding<V, D, G> {
    type Output = Tensor<Rank2<N, D>, G>;
    #[track_caller]
    fn forward(&self, indices: &[usize; N]) -> Self::Output {
        or_panic(self.try_lookup_in(Const, indices))
    }
}

/// A static batch of sequences, `[B, T]` ids to `[B, T, D]`.
impl<const V: usize, const D: usize, const B: usize, const T: usize, G: GradMode> Module<&[[usize; T]; B]>
    for Embedding<V, D, G>
{
    type Output = Tensor<Rank3<B, T, D>, G>;
    #[track_caller]
    fn forward(&self, indices: &[[usize; T]; B]) -> Self::Output {
        let rows = or_panic(self.try_lookup(indices.as_flattened()));
        rows.reshape_to(Default::default())
    }
}

impl<const V: usize, const D: usize, G: GradMode> Module<&[usize]> for Embedding<V, D, G> {
    type Output = Tensor<(usize, Const<D>), G>;
    #[track_caller]
    fn forward(&self, indices: &[usize]) -> Self::Output {
        or_panic(self.try_lookup(indices))
    }
}

impl<const V: usize, const D: usize, G: GradMode> Module<&Vec<usize>> for Embedding<V, D, G> {
    type Output = Tensor<(usize, Const<D>), G>;
    #[track_caller]
    fn forward(&self, indices: &Vec<usize>) -> Self::Output {
        self.forward(indices.as_slice())
    }
}

impl<const V: usize, const D: usize, G: GradMode> Params for Embedding<V, D, G> {
    fn visit(&self, prefix: &str, f: &mut dyn FnMut(&str, &dyn Param)) {
        f(&join(prefix, "weight"), &self.weight);
    }
    fn visit_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut dyn Param)) {
        f(&join(prefix, "weight"), &mut self.weight);
    }
}

impl<const V: usize, const D: usize, G: GradMode> Detach for Embedding<V, D, G> {
    type Detached = Embedding<V, D, NoGrad>;
    fn detached(&self) -> Self::Detached {
        Embedding {
            weight: self.weight.detach(),
            padding: self.padding,
        }
    }
}
