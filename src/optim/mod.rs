//! Optimizers: [`Sgd`] and [`Adam`] (with `AdamW`'s decoupled weight decay), following PyTorch's
//! documented update rules.
//!
//! A step computes every new parameter (and state buffer) lazily, realizes them in one schedule
//! and installs them as the parameters' values. Realized values hold no graph, so the graph behind
//! a training step is released at each step and memory does not grow.

mod adam;
mod sgd;

pub use adam::Adam;
pub use sgd::Sgd;

use crate::lazy::LazyBuffer;
use crate::nn::Params;
use crate::nn::params_internal::var_mut;

/// Updates a module's parameters from their accumulated gradients.
pub trait Optimizer {
    /// Applies one update to every parameter that has a gradient.
    fn step<M: Params + ?Sized>(&mut self, model: &mut M);

    /// Clears every parameter's gradient (gradients accumulate across `backward()` calls).
    fn zero_grad<M: Params + ?Sized>(&self, model: &M) {
        model.zero_grad();
    }
}

/// Per-parameter update: given the parameter's index in visiting order, its value and its
/// gradient, returns the new value and the buffers of state to realize with it.
pub(crate) fn apply_updates<M: Params + ?Sized>(
    model: &mut M,
    mut update: impl FnMut(usize, &LazyBuffer, &LazyBuffer) -> (LazyBuffer, Vec<LazyBuffer>),
) {
    let mut new_values: Vec<(usize, LazyBuffer)> = Vec::new();
    let mut state: Vec<LazyBuffer> = Vec::new();
    let mut index = 0;
    model.visit("", &mut |_, p| {
        let var = crate::nn::params_internal::var(p);
        if let Some(grad) = var.grad() {
            let (value, buffers) = update(index, &var.buf, &grad);
            new_values.push((index, value));
            state.extend(buffers);
        }
        index += 1;
    });
    let mut all: Vec<&LazyBuffer> = new_values.iter().map(|(_, v)| v).collect();
    all.extend(state.iter());
    LazyBuffer::realize_all(&all);
    let mut index = 0;
    let mut next = new_values.into_iter().peekable();
    model.visit_mut("", &mut |_, p| {
        if next.peek().is_some_and(|(i, _)| *i == index) {
            let (_, value) = next.next().expect("peeked");
            var_mut(p).set_leaf_value(value);
        }
        index += 1;
    });
}

/// `value` broadcast to `like`'s shape.
pub(crate) fn scalar(like: &LazyBuffer, value: f32) -> LazyBuffer {
    LazyBuffer::full(like.shape(), value)
}
