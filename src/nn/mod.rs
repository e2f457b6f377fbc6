//! Neural-network building blocks: the [`Module`] trait, [`Linear`] layers, [`LayerNorm`],
//! activations, sequential composition as tuples, and named access to parameters.
//!
//! A whole MLP is one type: `(Linear<64, 128>, Relu, Linear<128, 10>)` is [`Mlp<64, 128, 10>`].
//! Parameters are named as PyTorch's `nn.Sequential` names them (`"0.weight"`, `"2.bias"`), so
//! weights move between the two through safetensors files.
//!
//! ```
//! use teenygrad::prelude::*;
//! use teenygrad::nn::{Init, Mlp, Module};
//! use rand::SeedableRng;
//! let mut rng = rand::rngs::StdRng::seed_from_u64(0);
//! let model = Mlp::<4, 8, 3>::init(&mut rng);
//! let x = Tensor::<Rank2<2, 4>>::randn(&mut rng);
//! let logits: Tensor<Rank2<2, 3>, Tracked> = model.forward(x);
//! assert_eq!(logits.dims(), vec![2, 3]);
//! ```

mod activation;
mod linear;
mod norm;
mod params;
mod safetensors;
mod sequential;

pub use self::safetensors::{from_bytes, load, save, to_bytes};
pub use activation::{Gelu, GeluTanh, Relu, Sigmoid, Tanh};
pub use linear::Linear;
pub use norm::LayerNorm;
pub use params::{Name, Param, Params, join};

/// A layer or model: maps a typed input to a typed output.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot take `{X}` as its input",
    label = "the input's shape does not fit this module",
    note = "a `Linear<I, O>` takes a tensor of rank 1 to 3 whose last dim is `Const<I>` and gives one whose last dim is `Const<O>`; a `LayerNorm<N>` takes and gives one whose last dim is `Const<N>`",
    note = "in a tuple of modules, each module's output is the next one's input"
)]
pub trait Module<X> {
    /// The output type (its shape follows from the input's; it is tracked if the input or the
    /// module's parameters are).
    type Output;
    /// Runs the module on `x` (lazily: nothing is computed until the output is read).
    fn forward(&self, x: X) -> Self::Output;
}

/// Construction from the caller's seeded RNG, with PyTorch's default initialization.
pub trait Init: Sized {
    /// A freshly initialized module; the same RNG state gives the same parameters.
    fn init<R: rand::Rng + ?Sized>(rng: &mut R) -> Self;
}

/// A module's untracked twin for inference: the parameter values as they are now, no records.
///
/// The twin is a snapshot: it shares the values' buffers without copying them, and an optimizer
/// step or `load_state_dict` on the original afterwards copies a shared buffer before writing it,
/// so the twin keeps the values it was made with. Call `detached()` again after training steps
/// to evaluate the current parameters.
///
/// ```
/// use teenygrad::prelude::*;
/// use teenygrad::nn::{Detach, Init, Linear, Module};
/// use teenygrad::optim::{Optimizer, Sgd};
/// use rand::SeedableRng;
/// let mut layer = Linear::<2, 1>::init(&mut rand::rngs::StdRng::seed_from_u64(0));
/// let x = Tensor::from([[1.0, 2.0]]);
/// let snapshot = layer.detached();
/// let before = snapshot.forward(x.clone()).to_array();
/// layer.forward(x.clone()).sum_all().backward();
/// Sgd::new(0.1).step(&mut layer);
/// assert_eq!(snapshot.forward(x.clone()).to_array(), before, "the snapshot kept its values");
/// assert_ne!(layer.detached().forward(x).to_array(), before, "a new twin sees the step");
/// ```
pub trait Detach {
    /// The untracked twin's type.
    type Detached;
    /// The twin, sharing the current parameter values' buffers (no copy).
    fn detached(&self) -> Self::Detached;
}

/// A two-layer perceptron: `Linear<I, H>`, ReLU, `Linear<H, O>`.
pub type Mlp<const I: usize, const H: usize, const O: usize> = (Linear<I, H>, Relu, Linear<H, O>);
