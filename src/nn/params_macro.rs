//! [`impl_params!`](crate::impl_params) and [`impl_init!`](crate::impl_init): a model struct's
//! [`Params`](super::Params) and [`Init`](super::Init) from the list of its fields, so a
//! hand-written one cannot forget a field or `set_training`.

/// Implements [`Params`](crate::nn::Params) for a struct from the fields that hold its layers
/// or parameter tensors: each is visited under its field name (`"encoder.weight"`), in the
/// order listed, and [`set_training`](crate::nn::Params::set_training) reaches each, so the
/// struct's dropout layers follow `train()` and `eval()`. List every field holding a layer,
/// parameter-free ones included: a [`Dropout`](crate::nn::Dropout) left out has no parameters
/// to miss, but keeps training through `eval()`. Fields left out are settings or caches.
/// Generic parameters go in brackets before the type:
/// `impl_params!([const N: usize] Block<N> { attn, mlp })`. What the struct computes is its own
/// [`Module`](crate::nn::Module) impl (the [`nn`](crate::nn) module's residual example shows
/// the grad-mode bound that takes data and tracked inputs alike). A struct gets no untracked
/// twin ([`Detach`](crate::nn::Detach) says how to evaluate one).
///
/// ```
/// use teenygrad::prelude::*;
/// use teenygrad::impl_params;
/// use rand::SeedableRng;
///
/// struct Classifier {
///     encoder: (Linear<4, 8>, Relu, Dropout),
///     scale: Tensor<Rank1<8>, Tracked>,
///     head: Linear<8, 2>,
///     threshold: f32, // not a parameter
/// }
/// impl_params!(Classifier { encoder, scale, head });
///
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let model = Classifier {
///     encoder: (Linear::init(&mut rng), Relu, Dropout::new(0.5, 1)),
///     scale: Tensor::ones().requires_grad(),
///     head: Linear::init(&mut rng),
///     threshold: 0.5,
/// };
/// let names: Vec<String> = model.named_dims().into_iter().map(|(name, _)| name).collect();
/// assert_eq!(names, ["encoder.0.weight", "encoder.0.bias", "scale", "head.weight", "head.bias"]);
/// model.eval();
/// assert!(!model.encoder.2.is_training());
/// ```
#[macro_export]
macro_rules! impl_params {
    ([$($generics:tt)*] $model:ty { $($field:ident),* $(,)? }) => {
        impl<$($generics)*> $crate::nn::Params for $model {
            fn visit(&self, prefix: &str, f: &mut dyn FnMut(&str, &dyn $crate::nn::Param)) {
                use $crate::nn::{Params, join};
                $(Params::visit(&self.$field, &join(prefix, stringify!($field)), f);)*
            }
            fn visit_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut dyn $crate::nn::Param)) {
                use $crate::nn::{Params, join};
                $(Params::visit_mut(&mut self.$field, &join(prefix, stringify!($field)), f);)*
            }
            fn set_training(&self, training: bool) {
                $($crate::nn::Params::set_training(&self.$field, training);)*
                let _ = training;
            }
        }
    };
    ($model:ty { $($field:ident),* $(,)? }) => {
        $crate::impl_params!([] $model { $($field),* });
    };
}

/// Implements [`Init`](crate::nn::Init) for a struct whose fields are all layers: each field
/// initialized in turn, in the order listed, from the one generator, as a tuple is. Every
/// field must be listed (a struct with settings writes its constructor by hand). Generic
/// parameters go in brackets before the type, as for [`impl_params!`](crate::impl_params).
///
/// ```
/// use teenygrad::prelude::*;
/// use teenygrad::{impl_init, impl_params};
/// use rand::SeedableRng;
///
/// struct Block<const D: usize> {
///     norm: LayerNorm<D>,
///     ff: (Linear<D, D>, Relu),
/// }
/// impl_params!([const D: usize] Block<D> { norm, ff });
/// impl_init!([const D: usize] Block<D> { norm, ff });
///
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let blocks = <[Block<4>; 2]>::init(&mut rng);
/// assert_eq!(blocks.named_dims().len(), 8);
/// assert_ne!(blocks[0].ff.0.weight.to_vec(), blocks[1].ff.0.weight.to_vec());
/// ```
#[macro_export]
macro_rules! impl_init {
    ([$($generics:tt)*] $model:ident $(<$($arg:tt),*>)? { $($field:ident),* $(,)? }) => {
        impl<$($generics)*> $crate::nn::Init for $model $(<$($arg),*>)? {
            fn init<R: $crate::rand::Rng + ?Sized>(rng: &mut R) -> Self {
                $model { $($field: $crate::nn::Init::init(rng)),* }
            }
        }
    };
    ($model:ident { $($field:ident),* $(,)? }) => {
        $crate::impl_init!([] $model { $($field),* });
    };
}
