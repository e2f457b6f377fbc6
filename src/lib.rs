//! teenygrad: a small deep-learning core whose tensors carry their shapes in the type system.
//!
//! Start with the [`prelude`]: [`Tensor`](tensor::Tensor) and its shapes (`Rank2<32, 64>`, a
//! run-time batch `(usize, Const<64>)`), the layers of [`nn`], the optimizers of [`optim`], and
//! the losses. A training step:
//!
//! ```
//! use teenygrad::prelude::*;
//! use rand::SeedableRng;
//!
//! let mut rng = rand::rngs::StdRng::seed_from_u64(0);
//! let mut model = (Linear::<4, 16>::init(&mut rng), Relu, Linear::<16, 3>::init(&mut rng));
//! let mut opt = Sgd::new(0.1).momentum(0.9);
//! let x = Tensor::<Rank2<8, 4>>::randn(&mut rng);
//! let logits = model.forward(x);
//! let loss = logits.cross_entropy(&Labels::for_rows(&logits, vec![0, 1, 2, 0, 1, 2, 0, 1])?)?;
//! loss.backward(); // shape mistakes above are compile errors; nothing ran until here
//! opt.step(&mut model);
//! model.zero_grad();
//! # Ok::<(), teenygrad::Error>(())
//! ```
//!
//! The examples use `rand` 0.9, the version every random constructor takes, re-exported as
//! [`teenygrad::rand`](rand): depend on `rand = "0.9"`, or import it from there.
//!
//! Reductions take their axes as types: `x.sum::<Axis<1>>()`, `x.mean_keepdim::<Axis<1>>()`,
//! `x.sum_all()`. The README (on the repository) has a PyTorch-to-teenygrad table, the compile
//! errors the shape types give, and the performance figures.
//!
//! Layers, top to bottom: typed tensors ([`shape`] gives their shape types), reverse-mode autograd,
//! the untyped [`lazy`] buffer that records operations and fuses them when realized, and kernels over
//! flat `Vec<f32>` storage.

pub(crate) mod autograd;
pub mod data;
pub mod error;
mod file;
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
        GradMode, Join, Labels, NoGrad, Tensor, Tracked, binary_cross_entropy,
        binary_cross_entropy_with_logits, cross_entropy, huber_loss, l1_loss, mse, nll_loss, try_huber_loss,
        try_l1_loss, try_mse,
    };
}

/// The README's examples, compiled and run as doc tests so they stay true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
