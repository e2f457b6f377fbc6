//! Adam and AdamW.

use super::checkpoint::sealed::ParamState;
use super::{
    Optimizer, apply_updates, check_before_step, check_setting, flush_below, non_negative, slot, update_split,
};
use crate::nn::Params;
use crate::simd::simd_dispatch;

/// Adam as PyTorch's `torch.optim.Adam` defines it (bias-corrected), or AdamW with decoupled
/// weight decay. At a parameter's `t`-th step with a gradient (each parameter counts its own steps,
/// as PyTorch does), with gradient `g` and parameter `p`:
///
/// ```text
/// g ← g + weight_decay·p                  (Adam)     p ← p·(1 − lr·weight_decay)   (AdamW)
/// m ← β₁·m + (1 − β₁)·g
/// v ← β₂·v + (1 − β₂)·g²
/// p ← p − lr · (m / (1 − β₁ᵗ)) / (√(v / (1 − β₂ᵗ)) + ε)
/// ```
///
/// ```
/// use teenygrad::prelude::*;
/// use teenygrad::nn::{Init, Linear, Params};
/// use teenygrad::optim::{Adam, Optimizer};
/// use rand::SeedableRng;
/// let mut layer = Linear::<1, 1>::init(&mut rand::rngs::StdRng::seed_from_u64(0));
/// let w0 = layer.state_dict()[0].2[0];
/// layer.weight.sum_all().backward();
/// Adam::new(0.01).step(&mut layer);
/// // The first Adam step moves each parameter by lr·g/(|g| + ε) ≈ lr.
/// assert!((layer.state_dict()[0].2[0] - (w0 - 0.01)).abs() < 1e-6);
/// ```
#[derive(Clone, Debug)]
pub struct Adam {
    /// Learning rate.
    pub lr: f32,
    /// Decay rates of the first and second moment estimates.
    pub betas: (f32, f32),
    /// Added to the denominator for stability.
    pub eps: f32,
    /// Weight decay: an L2 term for Adam, decoupled for AdamW.
    pub weight_decay: f32,
    /// True for AdamW's decoupled weight decay.
    pub decoupled: bool,
    /// Per parameter (in visiting order): its own step count, as PyTorch keeps it (a parameter
    /// counts only the steps in which it had a gradient), and its two moment estimates.
    moments: Vec<Option<Moments>>,
}

/// One parameter's state: how many steps it has taken and its two moment estimates.
#[derive(Clone, Debug)]
struct Moments {
    step: u32,
    m: Vec<f32>,
    v: Vec<f32>,
}

impl Adam {
    /// Adam with PyTorch's defaults: betas (0.9, 0.999), eps 1e-8, no weight decay.
    pub fn new(lr: f32) -> Self {
        Adam {
            lr,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            decoupled: false,
            moments: Vec::new(),
        }
    }

    /// AdamW with PyTorch's defaults (weight decay 0.01), as `torch.optim.AdamW(lr)`: Adam with
    /// the decay decoupled from the gradient.
    #[doc(alias("AdamW"))]
    pub fn adamw(lr: f32) -> Self {
        Adam {
            weight_decay: 0.01,
            decoupled: true,
            ..Adam::new(lr)
        }
    }

    /// With other betas.
    pub fn betas(mut self, beta1: f32, beta2: f32) -> Self {
        self.betas = (beta1, beta2);
        self
    }

    /// With another epsilon.
    pub fn eps(mut self, eps: f32) -> Self {
        self.eps = eps;
        self
    }

    /// With weight decay (L2 for Adam, decoupled for AdamW).
    pub fn weight_decay(mut self, weight_decay: f32) -> Self {
        self.weight_decay = weight_decay;
        self
    }
}

impl Optimizer for Adam {
    /// # Panics
    ///
    /// Before changing anything, reported at the call: with `lr`, `eps` or `weight_decay`
    /// negative, infinite or NaN, or a beta outside `[0, 1)` (checked here since the fields are
    /// public).
    #[track_caller]
    fn step<M: Params + ?Sized>(&mut self, model: &mut M) {
        let Adam {
            lr,
            betas: (b1, b2),
            eps,
            weight_decay,
            decoupled,
            ..
        } = *self;
        for (name, value) in [("lr", lr), ("eps", eps), ("weight_decay", weight_decay)] {
            check_setting("Adam", name, value, non_negative(value), "finite and at least 0");
        }
        for (name, value) in [("betas.0", b1), ("betas.1", b2)] {
            check_setting("Adam", name, value, (0.0..1.0).contains(&value), "in [0, 1)");
        }
        let moments = &mut self.moments;
        check_before_step(model, |i| moments.get(i)?.as_ref().map(|state| state.m.len()));
        apply_updates(model, |i, p, g| {
            let Moments { step, m, v } = slot(moments, i).get_or_insert_with(|| Moments {
                step: 0,
                m: vec![0.0; p.len()],
                v: vec![0.0; p.len()],
            });
            *step = step.saturating_add(1);
            let t = (*step).min(i32::MAX as u32) as i32;
            let inv_correction1 = (1.0 / (1.0 - (b1 as f64).powi(t))) as f32;
            let inv_correction2 = (1.0 / (1.0 - (b2 as f64).powi(t))) as f32;
            let rule = Rule {
                lr,
                b1,
                b2,
                eps,
                weight_decay,
                decoupled,
                inv_correction1,
                inv_correction2,
                tiny: if eps >= FLUSH_FROM_EPS {
                    f32::MIN_POSITIVE
                } else {
                    0.0
                },
            };
            update_split([p, m, v], g, |[p, m, v], g| update(rule, p, m, v, g));
        });
    }
}

simd_dispatch! {
    /// [`Rule::apply`], compiled for the widest SIMD the CPU has.
    fn update(rule: Rule, p: &mut [f32], m: &mut [f32], v: &mut [f32], g: &[f32]) {
        rule.apply(p, m, v, g)
    }
}

/// The update of a stretch of one parameter at one step.
#[derive(Clone, Copy)]
struct Rule {
    lr: f32,
    b1: f32,
    b2: f32,
    eps: f32,
    weight_decay: f32,
    decoupled: bool,
    inv_correction1: f32,
    inv_correction2: f32,
    /// Moments below this magnitude are flushed to 0 (see [`FLUSH_FROM_EPS`]).
    tiny: f32,
}

/// The smallest `eps` with which Adam flushes subnormal moments to 0 (see the module docs): with
/// `eps` at least this and the default betas, a flushed moment moves the step by less than 4e-8
/// of it (a `beta2` closer to 1 divides by a smaller bias correction: 3.4e-7 at 0.99999 on the
/// first step). Below, the step's size stops depending on `eps` (with `eps = 0` it is about `lr`
/// whatever the gradient's scale), and flushing would change it: a second moment flushed to 0
/// divided by zero.
const FLUSH_FROM_EPS: f32 = 1e-10;

impl Rule {
    /// Updates `p` and its moments `m`, `v` from `g`. The slices are separate arguments so the
    /// compiler knows they do not overlap and vectorizes the loop.
    #[inline(always)]
    fn apply(self, p: &mut [f32], m: &mut [f32], v: &mut [f32], g: &[f32]) {
        let l2 = self.weight_decay != 0.0 && !self.decoupled;
        let shrink = self.weight_decay != 0.0 && self.decoupled;
        for (((p, &g), m), v) in p.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut()) {
            let g = if l2 { g + *p * self.weight_decay } else { g };
            if shrink {
                *p *= 1.0 - self.lr * self.weight_decay;
            }
            *m = flush_below(*m * self.b1 + g * (1.0 - self.b1), self.tiny);
            *v = flush_below(*v * self.b2 + g * g * (1.0 - self.b2), self.tiny);
            let denom = (*v * self.inv_correction2).sqrt() + self.eps;
            *p -= (*m * self.inv_correction1) / denom * self.lr;
        }
    }
}

impl super::checkpoint::sealed::State for Adam {
    const KIND: &'static str = "Adam";
    const TENSORS: &'static [&'static str] = &["exp_avg", "exp_avg_sq"];
    const NON_NEGATIVE: &'static [&'static str] = &["exp_avg_sq"];
    const STEPS: bool = true;

    fn state(&self, index: usize) -> Option<ParamState> {
        let Moments { step, m, v } = self.moments.get(index)?.as_ref()?;
        Some(ParamState {
            tensors: vec![m.clone(), v.clone()],
            step: Some(*step),
        })
    }

    fn set_states(&mut self, states: Vec<Option<ParamState>>) {
        self.moments = (states.into_iter())
            .map(|state| {
                let ParamState { tensors, step } = state?;
                let [m, v] = <[Vec<f32>; 2]>::try_from(tensors).ok()?;
                Some(Moments { step: step?, m, v })
            })
            .collect();
    }
}
