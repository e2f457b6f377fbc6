//! The fully connected layer.

use rand::Rng;

use super::params::{Param, Params, join};
use super::{Detach, Init, Module};
use crate::autograd::Var;
use crate::lazy::BinaryOp;
use crate::shape::{Const, ConstShape, Dim, Rank1, Rank2};
use crate::tensor::{GradMode, Join, NoGrad, Tensor, Tracked};

/// `y = x·Wᵀ + b`, mapping `I` features to `O` along the last axis of an input of rank 1, 2 or 3
/// (`[I]`, `[B, I]` or `[B, T, I]`). `weight` is `[O, I]` as in PyTorch.
///
/// ```
/// use teenygrad::prelude::*;
/// use teenygrad::nn::{Init, Linear, Module};
/// use rand::SeedableRng;
/// let layer = Linear::<3, 2>::init(&mut rand::rngs::StdRng::seed_from_u64(0));
/// let y = layer.forward(Tensor::from([[1.0, 2.0, 3.0]]));
/// assert_eq!(y.dims(), vec![1, 2]);
/// ```
///
/// Cloning a layer gives an independent one: new parameters with the same values (sharing
/// their buffers until either is updated) and no gradients, so training one does not move the
/// other. To use one parameter in two places (tied weights), clone the tensor instead:
/// a tensor's clone is the same parameter.
#[derive(Debug)]
pub struct Linear<const I: usize, const O: usize, G: GradMode = Tracked> {
    /// The weight matrix, `[O, I]`.
    pub weight: Tensor<Rank2<O, I>, G>,
    /// The bias, if the layer has one.
    pub bias: Option<Tensor<Rank1<O>, G>>,
}

impl<const I: usize, const O: usize, G: GradMode> Clone for Linear<I, O, G> {
    fn clone(&self) -> Self {
        Linear {
            weight: self.weight.copy_param(),
            bias: self.bias.as_ref().map(Tensor::copy_param),
        }
    }
}

impl<const I: usize, const O: usize> Linear<I, O> {
    /// PyTorch's default initialization: weight and bias uniform in `±1/√I` (the weight's is
    /// kaiming-uniform with `a = √5`, which reduces to the same bound); with no inputs (`I = 0`)
    /// the bias is zeros, as PyTorch's bound of 0 gives.
    pub fn new<R: Rng + ?Sized>(rng: &mut R, bias: bool) -> Self {
        let weight = uniform_init(I, rng);
        let bias = bias.then(|| uniform_init(I, rng));
        Linear { weight, bias }
    }

    /// A layer without bias.
    pub fn without_bias<R: Rng + ?Sized>(rng: &mut R) -> Self {
        Self::new(rng, false)
    }
}

/// Uniform in `±1/√fan_in`, a parameter; zeros with no inputs, where PyTorch's bound is 0.
fn uniform_init<S: ConstShape, R: Rng + ?Sized>(fan_in: usize, rng: &mut R) -> Tensor<S, Tracked> {
    let values = match fan_in {
        0 => Tensor::zeros(),
        _ => {
            let bound = 1.0 / (fan_in as f32).sqrt();
            Tensor::uniform_in(Default::default(), -bound, bound, rng)
        }
    };
    values.requires_grad()
}

impl<const I: usize, const O: usize> Init for Linear<I, O> {
    fn init<R: Rng + ?Sized>(rng: &mut R) -> Self {
        Self::new(rng, true)
    }
}

impl<const I: usize, const O: usize, G: GradMode> Linear<I, O, G> {
    /// `x·Wᵀ + b` over the untyped core, for any leading shape.
    fn apply(&self, x: &Var) -> Var {
        let y = x.matmul(&self.weight.var.permute(&[1, 0]));
        match &self.bias {
            Some(b) => y.binary(BinaryOp::Add, &b.var.expand(y.buf().shape())),
            None => y,
        }
    }
}

#[diagnostic::do_not_recommend]
impl<B: Dim, const I: usize, const O: usize, G: GradMode, G2: GradMode> Module<Tensor<(B, Const<I>), G2>>
    for Linear<I, O, G>
where
    G2: Join<G>,
{
    type Output = Tensor<(B, Const<O>), G2::Out>;
    fn forward(&self, x: Tensor<(B, Const<I>), G2>) -> Self::Output {
        Tensor::from_var((x.shape().0, Const), self.apply(&x.var))
    }
}

#[diagnostic::do_not_recommend]
impl<const I: usize, const O: usize, G: GradMode, G2: GradMode> Module<Tensor<(Const<I>,), G2>>
    for Linear<I, O, G>
where
    G2: Join<G>,
{
    type Output = Tensor<(Const<O>,), G2::Out>;
    fn forward(&self, x: Tensor<(Const<I>,), G2>) -> Self::Output {
        let row = x.var.reshape(&[1, I]);
        Tensor::from_var((Const,), self.apply(&row).reshape(&[O]))
    }
}

/// A batch of sequences, `[B, T, I]`: every position through the layer, as `[B·T, I]`.
#[diagnostic::do_not_recommend]
impl<B: Dim, T: Dim, const I: usize, const O: usize, G: GradMode, G2: GradMode>
    Module<Tensor<(B, T, Const<I>), G2>> for Linear<I, O, G>
where
    G2: Join<G>,
{
    type Output = Tensor<(B, T, Const<O>), G2::Out>;
    fn forward(&self, x: Tensor<(B, T, Const<I>), G2>) -> Self::Output {
        let (b, t, _) = x.shape();
        let rows = x.var.reshape(&[b.size() * t.size(), I]);
        Tensor::from_var((b, t, Const), self.apply(&rows).reshape(&[b.size(), t.size(), O]))
    }
}

impl<const I: usize, const O: usize, G: GradMode> Params for Linear<I, O, G> {
    fn visit(&self, prefix: &str, f: &mut dyn FnMut(&str, &dyn Param)) {
        f(&join(prefix, "weight"), &self.weight);
        if let Some(b) = &self.bias {
            f(&join(prefix, "bias"), b);
        }
    }
    fn visit_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut dyn Param)) {
        f(&join(prefix, "weight"), &mut self.weight);
        if let Some(b) = &mut self.bias {
            f(&join(prefix, "bias"), b);
        }
    }
}

impl<const I: usize, const O: usize, G: GradMode> Detach for Linear<I, O, G> {
    type Detached = Linear<I, O, NoGrad>;
    fn detached(&self) -> Self::Detached {
        Linear {
            weight: self.weight.detach(),
            bias: self.bias.as_ref().map(Tensor::detach),
        }
    }
}
