//! Neural-network building blocks: the [`Module`] trait, [`Linear`] layers, [`LayerNorm`],
//! [`Embedding`] tables, [`Dropout`], activations, sequential composition as tuples, and named
//! access to parameters.
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
//!
//! A tuple of up to 12 modules chains them. A model that is not a chain (a residual block, two
//! branches) is a struct of modules with its own [`Module`] and [`Params`]. The input is a
//! tensor by value, of either grad mode `G` (the data, or the tracked output of a layer before):
//! `G: Join<Tracked, Out = Tracked>` says that either gives a tracked result beside a parameter;
//! a batch dim `B: Dim` of any kind adds to itself with no bound of its own.
//!
//! ```
//! use teenygrad::prelude::*;
//! use teenygrad::nn::{Init, Linear, Module, Params, Relu};
//! use teenygrad::tensor::Join;
//! use rand::SeedableRng;
//!
//! /// `x + f(x)`, `f` two layers of `N` features with a relu between.
//! struct Residual<const N: usize> {
//!     f: (Linear<N, N>, Relu, Linear<N, N>),
//! }
//!
//! impl<B: Dim, const N: usize, G> Module<Tensor<(B, Const<N>), G>> for Residual<N>
//! where
//!     G: Join<Tracked, Out = Tracked>,
//! {
//!     type Output = Tensor<(B, Const<N>), Tracked>;
//!     fn forward(&self, x: Tensor<(B, Const<N>), G>) -> Self::Output {
//!         let fx = self.f.forward(x.clone());
//!         x + fx
//!     }
//! }
//!
//! // Its parameters are those of its field `f`, named under "f" (see `impl_params!`).
//! teenygrad::impl_params!([const N: usize] Residual<N> { f });
//!
//! let mut rng = rand::rngs::StdRng::seed_from_u64(0);
//! let block = Residual::<4> { f: Init::init(&mut rng) };
//! // Inside a chain, after a layer whose output is tracked.
//! let model = (Linear::<2, 4>::init(&mut rng), block, Linear::<4, 1>::init(&mut rng));
//! let y = model.forward(Tensor::<Rank2<3, 2>>::randn(&mut rng));
//! assert_eq!(y.dims(), vec![3, 1]);
//! assert_eq!(model.named_dims()[2].0, "1.f.0.weight");
//! // On its own, over a batch whose size is known at run time.
//! let x = Tensor::<Rank2<5, 4>>::randn(&mut rng).reshape_to((5usize, Const::<4>));
//! assert_eq!(model.1.forward(x).dims(), vec![5, 4]);
//! ```

mod activation;
mod dropout;
mod embedding;
mod linear;
mod norm;
mod params;
mod params_macro;
pub(crate) mod safetensors;
mod sequential;

pub use self::safetensors::{from_bytes, load, parse_tensors, read_tensors, save, to_bytes};
pub use activation::{Elu, Gelu, GeluTanh, LeakyRelu, Relu, Sigmoid, Silu, Softplus, Tanh};
pub use dropout::Dropout;
pub use embedding::Embedding;
pub use linear::Linear;
pub use norm::LayerNorm;
pub use params::{Name, NamedTensor, Param, Params, join};

/// A layer or model: maps a typed input to a typed output.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot take `{X}` as its input",
    label = "the input's shape or grad mode does not fit this module, or it is a reference",
    note = "a `Linear<I, O>` takes a tensor of rank 1 to 3 whose last dim is `Const<I>` and gives one whose last dim is `Const<O>`; a `LayerNorm<N>` takes and gives one whose last dim is `Const<N>`; an `Embedding<V, D>` takes indices: `&[usize; N]`, `&[[usize; T]; B]`, `&[usize]` or `&Vec<usize>`",
    note = "in a tuple of modules, each module's output is the next one's input; an array or `Vec` of one module type applies it repeatedly, so each must give back what it takes (`[Linear<N, N>; K]`)",
    note = "a run-time (`usize`) last dim, as `cat` gives, does not fit a layer's static width: `cat_in(.., Const::<N>)` or `reshape_to` names it",
    note = "a module takes its input by value (a `Tensor`, not `&Tensor`); in code generic over a grad mode `G`, bound it as the `nn` docs' residual block does (`G: Join<Tracked, Out = Tracked>`)"
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
/// to evaluate the current parameters. A twin's dropout layers are in eval mode.
///
/// Layers, and tuples, arrays and `Vec`s of them, have twins; [`impl_params!`](crate::impl_params)
/// does not make one for a struct, whose twin would be another type. Evaluate a struct model as
/// `model.forward(x).detach()`: the same kernels run, and the tape recorded on the way is dropped
/// with the output.
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
