//! Stochastic gradient descent with momentum, dampening, Nesterov and weight decay.

use super::checkpoint::sealed::ParamState;
use super::{
    Optimizer, apply_updates, check_before_step, check_setting, flush_subnormal, non_negative, slot,
    update_split,
};
use crate::nn::Params;
use crate::simd::simd_dispatch;

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

    /// With Nesterov momentum, which needs a momentum and zero dampening (as in PyTorch): the
    /// builder methods may come in any order, and [`step`](Optimizer::step) panics if the
    /// finished settings break that rule.
    pub fn nesterov(mut self) -> Self {
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
    /// # Panics
    ///
    /// Before changing anything, reported at the call (programmer errors, checked here since the
    /// fields are public and the builder's order is free): with `nesterov` set but no momentum,
    /// or a nonzero dampening; with `lr`, `momentum` or `weight_decay` negative, infinite or
    /// NaN, or `dampening` infinite or NaN.
    #[track_caller]
    fn step<M: Params + ?Sized>(&mut self, model: &mut M) {
        for (name, value) in [
            ("lr", self.lr),
            ("momentum", self.momentum),
            ("weight_decay", self.weight_decay),
        ] {
            check_setting("SGD", name, value, non_negative(value), "finite and at least 0");
        }
        let dampening = self.dampening;
        check_setting("SGD", "dampening", dampening, dampening.is_finite(), "finite");
        assert!(
            !self.nesterov || (self.momentum > 0.0 && self.dampening == 0.0),
            "Nesterov momentum requires a momentum and zero dampening (momentum {}, dampening {})",
            self.momentum,
            self.dampening
        );
        let Sgd {
            lr,
            momentum,
            dampening,
            nesterov,
            weight_decay,
            ..
        } = *self;
        let buffers = &mut self.momentum_buffers;
        check_before_step(model, |i| buffers.get(i)?.as_ref().map(Vec::len));
        let rule = Rule {
            lr,
            momentum,
            dampening,
            nesterov,
            weight_decay,
        };
        apply_updates(model, |i, p, g| {
            if momentum == 0.0 {
                update_split([p], g, |[p], g| update(rule, p, &mut [], g, false));
                return;
            }
            let state = slot(buffers, i);
            let first = state.is_none();
            let b = state.get_or_insert_with(|| vec![0.0; p.len()]);
            update_split([p, b], g, |[p, b], g| update(rule, p, b, g, first));
        });
    }
}

simd_dispatch! {
    /// [`Rule::apply`], compiled for the widest SIMD the CPU has.
    fn update(rule: Rule, p: &mut [f32], b: &mut [f32], g: &[f32], first: bool) {
        rule.apply(p, b, g, first)
    }
}

/// The update of a stretch of one parameter.
#[derive(Clone, Copy)]
struct Rule {
    lr: f32,
    momentum: f32,
    dampening: f32,
    nesterov: bool,
    weight_decay: f32,
}

impl Rule {
    /// Updates `p` from `g`, and its momentum buffer `b` (empty without momentum). The slices are
    /// separate arguments so the compiler knows they do not overlap and vectorizes the loop.
    #[inline(always)]
    fn apply(self, p: &mut [f32], b: &mut [f32], g: &[f32], first: bool) {
        if self.momentum == 0.0 {
            for (p, &g) in p.iter_mut().zip(g) {
                *p -= self.decay(*p, g) * self.lr;
            }
            return;
        }
        // One loop per case, so none tests the case per element.
        match (first, self.nesterov) {
            (true, false) => self.with_momentum::<true, false>(p, b, g),
            (false, false) => self.with_momentum::<false, false>(p, b, g),
            (true, true) => self.with_momentum::<true, true>(p, b, g),
            (false, true) => self.with_momentum::<false, true>(p, b, g),
        }
    }

    /// The gradient with weight decay added.
    #[inline(always)]
    fn decay(self, p: f32, g: f32) -> f32 {
        if self.weight_decay != 0.0 {
            g + self.weight_decay * p
        } else {
            g
        }
    }

    /// The update with a momentum buffer: its first (which sets it to the gradient) or a later
    /// one, by Nesterov's rule or not.
    #[inline(always)]
    fn with_momentum<const FIRST: bool, const NESTEROV: bool>(self, p: &mut [f32], b: &mut [f32], g: &[f32]) {
        for ((p, &g), b) in p.iter_mut().zip(g).zip(b.iter_mut()) {
            let d = self.decay(*p, g);
            *b = flush_subnormal(if FIRST {
                d
            } else {
                self.momentum * *b + (1.0 - self.dampening) * d
            });
            let step = if NESTEROV { d + self.momentum * *b } else { *b };
            *p -= step * self.lr;
        }
    }
}

impl super::checkpoint::sealed::State for Sgd {
    const KIND: &'static str = "SGD";
    const TENSORS: &'static [&'static str] = &["momentum_buffer"];
    const STEPS: bool = false;

    fn unused_state(&self) -> Option<&'static str> {
        (self.momentum == 0.0).then_some(
            "holds momentum buffers, but this SGD has no momentum and would not use them: set \
             the momentum it was saved with",
        )
    }

    fn state(&self, index: usize) -> Option<ParamState> {
        let buffer = self.momentum_buffers.get(index)?.as_ref()?;
        Some(ParamState {
            tensors: vec![buffer.clone()],
            step: None,
        })
    }

    fn set_states(&mut self, states: Vec<Option<ParamState>>) {
        self.momentum_buffers = (states.into_iter())
            .map(|state| state.and_then(|s| s.tensors.into_iter().next()))
            .collect();
    }
}
