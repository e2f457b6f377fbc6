//! Gradient clipping by the norm of all gradients together, as PyTorch's
//! `torch.nn.utils.clip_grad_norm_` does it.

use super::for_each_distinct;
use crate::nn::Params;

/// Scales every gradient of `model` by `max_norm / (total + 1e-6)` when that is below 1, `total`
/// being the L2 norm of all its gradients taken as one vector, and returns `total`. Parameters
/// without a gradient are left alone. Call it between `backward()` and the optimizer's step.
///
/// As in PyTorch, a non-finite `total` is not an error: an infinite one scales every gradient
/// by 0 (an infinite value becomes NaN), a NaN one makes every gradient NaN. The squares are
/// summed in f64, so `total` can differ from PyTorch's (summed in f32) in its last bit.
///
/// # Panics
///
/// If `max_norm` is negative or NaN (a programmer error: it would flip or erase the gradients).
///
/// ```
/// use teenygrad::prelude::*;
/// use teenygrad::nn::{Init, Linear, Param};
/// use teenygrad::optim::clip_grad_norm;
/// use rand::SeedableRng;
/// let mut layer = Linear::<1, 1>::init(&mut rand::rngs::StdRng::seed_from_u64(0));
/// // Gradients 3 (weight) and 4 (bias): their norm is 5.
/// // Clones share the parameters' gradients.
/// let (w, b) = (layer.weight.clone(), layer.bias.clone().unwrap());
/// (w.sum_all() * 3.0 + b.sum_all() * 4.0).backward();
/// assert_eq!(clip_grad_norm(&mut layer, 1.0), 5.0);
/// assert!((w.grad_values().unwrap()[0] - 0.6).abs() < 1e-6);
/// assert!((b.grad_values().unwrap()[0] - 0.8).abs() < 1e-6);
/// ```
#[track_caller]
pub fn clip_grad_norm<M: Params + ?Sized>(model: &mut M, max_norm: f32) -> f32 {
    assert!(
        max_norm >= 0.0,
        "clip_grad_norm needs a max_norm of at least 0, got {max_norm}"
    );
    let mut squares = 0.0f64;
    for_each_distinct(model, |_, _, var| {
        if let Some(grad) = var.grad() {
            squares += grad.with_values(|g| g.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>());
        }
    });
    let total = squares.sqrt() as f32;
    let scale = max_norm / (total + 1e-6);
    // A NaN factor is applied too, as PyTorch does.
    if scale < 1.0 || scale.is_nan() {
        for_each_distinct(model, |_, _, var| var.scale_grad(scale));
    }
    total
}
