//! teenygrad: a small deep-learning core whose tensors carry their shapes in the type system.
//!
//! Layers, top to bottom: typed tensors ([`shape`] gives their shape types), reverse-mode autograd,
//! the untyped [`lazy`] buffer that records operations and fuses them when realized, and kernels over
//! flat `Vec<f32>` storage.

pub(crate) mod autograd;
pub mod data;
pub mod error;
pub mod lazy;
pub mod nn;
pub mod optim;
pub mod shape;
mod simd;
pub mod tensor;

pub use error::{Error, Result};
pub use rand;

/// Everything a model-writing user needs, in one import.
pub mod prelude {
    pub use crate::error::{Error, Result};
    pub use crate::nn::{
        Detach, Dropout, Elu, Embedding, Gelu, GeluTanh, Init, LayerNorm, LeakyRelu, Linear, Mlp, Module,
        Param, Params, Relu, Sigmoid, Silu, Softplus, Tanh,
    };
    pub use crate::optim::{Adam, Optimizer, Sgd};
    pub use crate::shape::{
        Axes, Axes2, Axes3, Axes4, Axes5, Axes6, Axis, Const, ConstShape, Dim, One, Rank0, Rank1, Rank2,
        Rank3, Rank4, Rank5, Rank6, Shape,
    };
    pub use crate::tensor::{
        GradMode, Labels, NoGrad, Tensor, Tracked, binary_cross_entropy_with_logits, cross_entropy,
        huber_loss, l1_loss, mse, nll_loss, try_huber_loss, try_l1_loss, try_mse,
    };
}

/// The README's examples, compiled and run as doc tests so they stay true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
