//! The losses as methods of the prediction (`logits.cross_entropy(&labels)`), beside their
//! free-function forms in [`crate::tensor`]; each method is that function.

use super::{GradMode, Join, Labels, Tensor};
use crate::error::Result;
use crate::shape::{Const, Dim, Shape};

impl<B: Dim, const C: usize, G: GradMode> Tensor<(B, Const<C>), G> {
    /// [`cross_entropy`](super::cross_entropy)`(self, labels)`: these logits' mean cross entropy
    /// at the class `labels`.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// let logits = Tensor::from([[0.0, 0.0], [0.0, 0.0]]);
    /// let loss = logits.cross_entropy(&Labels::new(vec![0, 1], Const::<2>).unwrap()).unwrap();
    /// assert_eq!(loss.item(), 2f32.ln());
    /// ```
    pub fn cross_entropy(&self, labels: &Labels<B>) -> Result<Tensor<(), G>> {
        super::cross_entropy(self, labels)
    }

    /// [`cross_entropy_with_label_smoothing`](super::cross_entropy_with_label_smoothing)`(self,
    /// labels, smoothing)`: these logits' mean cross entropy against smoothed targets.
    pub fn cross_entropy_with_label_smoothing(
        &self,
        labels: &Labels<B>,
        smoothing: f32,
    ) -> Result<Tensor<(), G>> {
        super::cross_entropy_with_label_smoothing(self, labels, smoothing)
    }

    /// [`cross_entropy_per_sample`](super::cross_entropy_per_sample)`(self, labels)`: each
    /// row's cross entropy, not their mean.
    pub fn cross_entropy_per_sample(&self, labels: &Labels<B>) -> Result<Tensor<(B,), G>> {
        super::cross_entropy_per_sample(self, labels)
    }

    /// [`nll_loss`](super::nll_loss)`(self, labels)`: these log-probabilities' mean negative
    /// log-likelihood at the class `labels`.
    pub fn nll_loss(&self, labels: &Labels<B>) -> Result<Tensor<(), G>> {
        super::nll_loss(self, labels)
    }
}

impl<S: Shape, G: GradMode> Tensor<S, G> {
    /// [`mse`](super::mse)`(self, target)`: the mean squared error of this prediction.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// assert_eq!(Tensor::from([1.0, 3.0]).mse(&Tensor::from([0.0, 0.0])).item(), 5.0);
    /// ```
    #[track_caller]
    pub fn mse<G2: GradMode>(&self, target: &Tensor<S, G2>) -> Tensor<(), G::Out>
    where
        G: Join<G2>,
    {
        super::mse(self, target)
    }

    /// [`l1_loss`](super::l1_loss)`(self, target)`: the mean absolute error of this prediction.
    #[track_caller]
    pub fn l1_loss<G2: GradMode>(&self, target: &Tensor<S, G2>) -> Tensor<(), G::Out>
    where
        G: Join<G2>,
    {
        super::l1_loss(self, target)
    }

    /// [`huber_loss`](super::huber_loss)`(self, target, delta)`: the mean Huber loss of this
    /// prediction.
    #[track_caller]
    pub fn huber_loss<G2: GradMode>(&self, target: &Tensor<S, G2>, delta: f32) -> Tensor<(), G::Out>
    where
        G: Join<G2>,
    {
        super::huber_loss(self, target, delta)
    }

    /// [`binary_cross_entropy`](super::binary_cross_entropy)`(self, targets)`: the mean binary
    /// cross entropy of these probabilities.
    #[track_caller]
    pub fn binary_cross_entropy<G2: GradMode>(&self, targets: &Tensor<S, G2>) -> Tensor<(), G::Out>
    where
        G: Join<G2>,
    {
        super::binary_cross_entropy(self, targets)
    }

    /// [`binary_cross_entropy_with_logits`](super::binary_cross_entropy_with_logits)`(self,
    /// targets)`: the mean binary cross entropy of these logits.
    #[track_caller]
    pub fn binary_cross_entropy_with_logits<G2: GradMode>(
        &self,
        targets: &Tensor<S, G2>,
    ) -> Tensor<(), G::Out>
    where
        G: Join<G2>,
    {
        super::binary_cross_entropy_with_logits(self, targets)
    }
}
