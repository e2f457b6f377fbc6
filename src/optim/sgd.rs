//! Stochastic gradient descent with momentum, dampening, Nesterov and weight decay.

use super::{Optimizer, apply_updates, flush_subnormal, slot};
use crate::nn::Params;

/// SGD as PyTorch's `torch.optim.SGD` defines it. With `g` the gradient and `p` the parameter:
///
/// ```text
/// g ← g + weight_decay·p
/// b ← g                                  (first step)
/// b ← momentum·b + (1 − dampening)·g     (later steps)
/// g ← g + momentum·b   (nesterov)   or   g ← b   (momentum > 0)
/// p ← p − lr·g
/// ```
///
/// ```
/// use teenygrad::prelude::*;
/// use teenygrad::nn::{Init, Linear, Params};
/// use teenygrad::optim::{Optimizer, Sgd};
/// use rand::SeedableRng;
/// let mut layer = Linear::<1, 1>::init(&mut rand::rngs::StdRng::seed_from_u64(0));
/// let before = layer.state_dict();
/// let loss = layer.weight.sum_all() * 2.0; // d loss / d w = 2
/// loss.backward();
/// Sgd::new(0.1).step(&mut layer);
/// let after = layer.state_dict();
/// assert!((after[0].2[0] - (before[0].2[0] - 0.2)).abs() < 1e-6);
/// ```
#[derive(Clone, Debug)]
pub struct Sgd {
    /// Learning rate.
    pub lr: f32,
    /// Momentum factor (0 disables momentum).
    pub momentum: f32,
    /// Dampening of the momentum's gradient term.
    pub dampening: f32,
    /// Nesterov momentum (needs `momentum > 0` and `dampening == 0`).
    pub nesterov: bool,
    /// L2 penalty added to the gradient.
    pub weight_decay: f32,
    momentum_buffers: Vec<Option<Vec<f32>>>,
}

impl Sgd {
    /// Plain SGD with learning rate `lr`.
    pub fn new(lr: f32) -> Self {
        Sgd {
            lr,
            momentum: 0.0,
            dampening: 0.0,
            nesterov: false,
            weight_decay: 0.0,
            momentum_buffers: Vec::new(),
        }
    }

    /// With momentum.
    pub fn momentum(mut self, momentum: f32) -> Self {
        self.momentum = momentum;
        self
    }

    /// With dampening.
    pub fn dampening(mut self, dampening: f32) -> Self {
        self.dampening = dampening;
        self
    }

    /// With Nesterov momentum. Panics if momentum is 0 or dampening is not, as PyTorch rejects it.
    pub fn nesterov(mut self) -> Self {
        assert!(
            self.momentum > 0.0 && self.dampening == 0.0,
            "Nesterov momentum requires a momentum and zero dampening"
        );
        self.nesterov = true;
        self
    }

    /// With weight decay.
    pub fn weight_decay(mut self, weight_decay: f32) -> Self {
        self.weight_decay = weight_decay;
        self
    }
}

impl Optimizer for Sgd {
    fn step<M: Params + ?Sized>(&mut self, model: &mut M) {
        let Sgd {
            lr,
            momentum,
            dampening,
            nesterov,
            weight_decay,
            ..
        } = *self;
        let buffers = &mut self.momentum_buffers;
        apply_updates(model, |i, p, g| {
            if momentum == 0.0 {
                for (p, &g) in p.iter_mut().zip(g) {
                    let d = if weight_decay != 0.0 {
                        g + weight_decay * *p
                    } else {
                        g
                    };
                    *p -= d * lr;
                }
                return;
            }
            let state = slot(buffers, i);
            let first = state.is_none();
            let b = state.get_or_insert_with(|| vec![0.0; p.len()]);
            for ((p, &g), b) in p.iter_mut().zip(g).zip(b.iter_mut()) {
                let d = if weight_decay != 0.0 {
                    g + weight_decay * *p
                } else {
                    g
                };
                *b = flush_subnormal(if first {
                    d
                } else {
                    momentum * *b + (1.0 - dampening) * d
                });
                let step = if nesterov { d + momentum * *b } else { *b };
                *p -= step * lr;
            }
        });
    }
}
