//! Optimizers: [`Sgd`] and [`Adam`] (with `AdamW`'s decoupled weight decay), following PyTorch's
//! documented update rules, and [`clip_grad_norm`].
//!
//! A step is one pass over each parameter's values, written in place unless a pending graph
//! still reads them (that graph keeps the old values: the step then writes a fresh copy). Every
//! clone of a parameter tensor sees the new values; a parameter held twice (tied weights) is
//! updated once. Optimizer state lives in plain `Vec<f32>`s. The updated parameters are realized
//! buffers that hold no graph, so the graph behind a training step is released at each step and
//! memory does not grow.
//!
//! Checkpoints: [`nn::save`](crate::nn::save) writes a model's parameters, [`save_state`] an
//! optimizer's state (momentum buffers, moments and step counts) by the model's parameter names;
//! loading both resumes a run exactly, for a model without dropout: a [`Dropout`]'s generator
//! is in neither file (as PyTorch's random state is in no `state_dict`), so a resumed run draws
//! other masks. The optimizer's settings (learning rate, betas, …) are not saved either: they
//! are the loading optimizer's. An optimizer made afresh instead starts its state from zero
//! (plain SGD keeps none).
//!
//! [`Dropout`]: crate::nn::Dropout
//!
//! State that decays toward zero (a momentum buffer whose gradient has stopped, Adam's moments)
//! is flushed to 0 once it falls below the smallest normal `f32` (≈ 1.2e-38): subnormal
//! arithmetic is up to a hundred times slower on x86, and the change is below 1.2e-38 per element.
//! Adam with an `eps` below 1e-10 (`eps = 0`, say) flushes nothing: there a step's size no longer
//! depends on the moments' scale, and a flushed second moment would divide by zero.

mod adam;
mod checkpoint;
mod clip;
mod sgd;

pub use adam::Adam;
pub use checkpoint::{Stateful, load_state, save_state, state_from_bytes, state_to_bytes};
pub use clip::clip_grad_norm;
pub use sgd::Sgd;

use crate::autograd::Var;
use crate::lazy::fast_hash::FastSet;
use crate::nn::Params;

/// Updates a module's parameters from their accumulated gradients.
pub trait Optimizer {
    /// Applies one update to every parameter that has a gradient. An untracked parameter (a
    /// tensor without `requires_grad`) never has one: it stays as it is, frozen, as PyTorch
    /// leaves a parameter whose `requires_grad` is false.
    ///
    /// Optimizer state (momentum, moments) is kept by parameter position for the model first
    /// stepped. Panics, naming the parameter and both lengths and before changing anything, if a
    /// later model's parameter at a position has another length: use one optimizer per model.
    /// Panics too, naming the parameter, if one is tracked but not a leaf (`randn(..)
    /// .requires_grad() * 0.1` is computed from a leaf and keeps no gradient, as PyTorch refuses
    /// it), or if the model has parameters and none is tracked (its `detached()` twin, say):
    /// such a step could never change them.
    fn step<M: Params + ?Sized>(&mut self, model: &mut M);

    /// Clears every parameter's gradient (gradients accumulate across `backward()` calls).
    fn zero_grad<M: Params + ?Sized>(&self, model: &M) {
        model.zero_grad();
    }
}

/// Calls `f(index, name, parameter)` for every parameter of `model`, `index` being its position
/// in visiting order, but once for a parameter held twice (tied weights, a clone in two
/// layers): that is one parameter, updated and clipped once, as PyTorch's
/// `parameters()` lists it once.
pub(crate) fn for_each_distinct<M: Params + ?Sized>(model: &mut M, mut f: impl FnMut(usize, &str, &mut Var)) {
    let mut seen = FastSet::default();
    let mut index = 0;
    model.visit_mut("", &mut |name, p| {
        let var = p.as_var_mut();
        if var.leaf_id().is_none_or(|id| seen.insert(id)) {
            f(index, name, var);
        }
        index += 1;
    });
}

/// Calls `update(index, values, grad)` for every parameter that has a gradient (see
/// [`for_each_distinct`]), `values` being its data to rewrite.
pub(crate) fn apply_updates<M: Params + ?Sized>(
    model: &mut M,
    mut update: impl FnMut(usize, &mut [f32], &[f32]),
) {
    for_each_distinct(model, |index, _, var| {
        if let Some(grad) = var.grad() {
            grad.with_values(|g| var.update_leaf(|values| update(index, values, g)));
        }
    });
}

/// Runs `f` over `slices` (a parameter and its state, all as long as `g`) and `g`, split at the
/// same places into pieces on several threads when they are long. Each element's update depends
/// on that element alone, so the split does not change results.
pub(crate) fn update_split<const N: usize>(
    slices: [&mut [f32]; N],
    g: &[f32],
    f: impl Fn([&mut [f32]; N], &[f32]) + Sync,
) {
    // A memory-bound update of this many elements takes some tens of microseconds.
    const MIN_CHUNK: usize = 1 << 15;
    let threads = crate::lazy::parallel::threads();
    if threads == 1 || g.len() < 2 * MIN_CHUNK {
        return f(slices, g);
    }
    // One piece per thread, in the order threads claim them (the caller first), as a product
    // shares a weight gradient's rows and a weight's columns `x·Wᵀ`: a parameter's first part is
    // then updated by the thread that computed its gradient and will read it next. The large
    // training step on two threads, alternating with two pieces a thread: its update 125–130 →
    // 114–119 µs in four pairs, the step's median paired ratio 0.984 in ten.
    let chunk = g.len().div_ceil(threads).max(MIN_CHUNK);
    let mut pieces = slices.map(|s| s.chunks_mut(chunk));
    let mut pieces: Vec<[&mut [f32]; N]> = (0..g.len().div_ceil(chunk))
        .map(|_| std::array::from_fn(|j| pieces[j].next().expect("same lengths")))
        .collect();
    crate::lazy::parallel::for_each_mut(&mut pieces, &|i, piece| {
        let end = ((i + 1) * chunk).min(g.len());
        f(piece.each_mut().map(|s| &mut **s), &g[i * chunk..end]);
    });
}

/// Panics, before anything changes, if the state an optimizer holds for some parameter position
/// (`state_len(index)`, if it holds any) is not that parameter's length: an optimizer's state
/// belongs to the model it first stepped, by parameter position. Panics too if a parameter is
/// tracked but not a leaf (computed from one), or if the model has parameters but none is
/// tracked (a `detached()` twin, tensors made without `requires_grad`): no gradient is ever
/// kept for them, so the step could only leave them as they are. Reported at the line that
/// called `step`, naming the parameter.
#[track_caller]
pub(crate) fn check_before_step<M: Params + ?Sized>(
    model: &mut M,
    state_len: impl Fn(usize) -> Option<usize>,
) {
    let (mut mismatch, mut any, mut tracked, mut computed) = (None, false, false, None);
    for_each_distinct(model, |index, name, var| {
        let len = var.buf().numel();
        if mismatch.is_none()
            && let Some(held) = state_len(index).filter(|&held| held != len)
        {
            mismatch = Some((index, name.to_string(), held, len));
        }
        any = true;
        let leaf = var.leaf_id().is_some();
        tracked |= leaf;
        if !leaf && var.node.is_some() && computed.is_none() {
            computed = Some(name.to_string());
        }
    });
    if let Some((index, name, held, len)) = mismatch {
        state_mismatch(index, &name, held, len);
    }
    if let Some(name) = computed {
        panic!(
            "step: parameter `{name}` is tracked but not a leaf: it was computed from one (as \
             `randn(..).requires_grad() * 0.1` is), so no gradient is kept for it and a step \
             could never change it; compute its value first, then call requires_grad() \
             (PyTorch refuses such a parameter too)"
        );
    }
    if any && !tracked {
        // Named only here: the walk above runs every step, and names are built strings.
        let mut first = None;
        model.visit("", &mut |name, _| {
            _ = first.get_or_insert_with(|| name.to_string())
        });
        let first = first.unwrap_or_default();
        panic!(
            "step: no parameter of this model is tracked (the first is `{first}`), so no \
             gradient can reach them: step the model that backward() ran through, not its \
             detached() twin, and make hand-built parameters with requires_grad()"
        );
    }
}

/// Panics, naming the optimizer, the setting and its value, unless `ok` (the settings are public
/// fields, so they are checked at each step, before anything changes). `rule` says what the
/// setting must be.
#[track_caller]
pub(crate) fn check_setting(optimizer: &str, name: &str, value: f32, ok: bool, rule: &str) {
    if !ok {
        panic!("{optimizer}: {name} must be {rule}, got {value}");
    }
}

/// True for a finite value of at least 0: a learning rate, a weight decay, a momentum, an eps.
pub(crate) fn non_negative(value: f32) -> bool {
    (0.0..f32::INFINITY).contains(&value)
}

/// The panic of an optimizer whose state at parameter position `index` (`name`, of `len` values)
/// holds `held` values: it belongs to another model.
#[track_caller]
pub(crate) fn state_mismatch(index: usize, name: &str, held: usize, len: usize) -> ! {
    panic!(
        "the optimizer holds {held} state values for parameter {index} (`{name}`), which has \
         {len}: an optimizer keeps state by parameter position for the model it first stepped, \
         so step another model with a new optimizer"
    );
}

/// The state slot of parameter `index`, growing the list as parameters are first seen.
pub(crate) fn slot<T>(states: &mut Vec<Option<T>>, index: usize) -> &mut Option<T> {
    if states.len() <= index {
        states.resize_with(index + 1, || None);
    }
    &mut states[index]
}

/// `x`, or 0 if `x` is subnormal (so decaying state does not fall into slow subnormal arithmetic).
#[inline(always)]
pub(crate) fn flush_subnormal(x: f32) -> f32 {
    flush_below(x, f32::MIN_POSITIVE)
}

/// `x`, or 0 if its magnitude is below `tiny` (never, for a `tiny` of 0).
#[inline(always)]
pub(crate) fn flush_below(x: f32, tiny: f32) -> f32 {
    if x.abs() < tiny { 0.0 } else { x }
}
