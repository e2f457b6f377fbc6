//! Named, untyped access to a module's parameters: what optimizers and serialization need.

use std::collections::HashSet;
use std::hash::Hash;

use super::safetensors::missing;
use crate::autograd::Var;
use crate::error::{Error, Result};
use crate::lazy::LazyBuffer;
use crate::lazy::fast_hash::FastSet;
use crate::shape::Shape;
use crate::tensor::{GradMode, Tensor};

/// A named tensor as [`Params::state_dict`] lists it: dotted name, dims, values row-major.
pub type NamedTensor = (String, Vec<usize>, Vec<f32>);

/// One parameter tensor, seen without its static shape.
pub trait Param: internal::AsVar {
    /// The sizes of its dims.
    fn dims(&self) -> Vec<usize>;
    /// Its values, row-major (realizes).
    fn values(&self) -> Vec<f32>;
    /// Its accumulated gradient, row-major, if any.
    fn grad_values(&self) -> Option<Vec<f32>>;
    /// Replaces its values; an error (and no change) if the length is not its element count.
    fn set_values(&mut self, values: Vec<f32>) -> Result<()>;
    /// Clears its gradient.
    fn zero_grad(&self);
}

pub(crate) mod internal {
    /// Engine access to a parameter; not nameable outside the crate.
    pub trait AsVar {
        #[doc(hidden)]
        fn as_var(&self) -> &crate::autograd::Var;
        #[doc(hidden)]
        fn as_var_mut(&mut self) -> &mut crate::autograd::Var;
    }
}

impl<S: Shape, G: GradMode> internal::AsVar for Tensor<S, G> {
    fn as_var(&self) -> &Var {
        &self.var
    }
    fn as_var_mut(&mut self) -> &mut Var {
        &mut self.var
    }
}

impl<S: Shape, G: GradMode> Param for Tensor<S, G> {
    fn dims(&self) -> Vec<usize> {
        Tensor::dims(self)
    }
    fn values(&self) -> Vec<f32> {
        self.to_vec()
    }
    fn grad_values(&self) -> Option<Vec<f32>> {
        self.var.grad().map(|g| g.to_vec())
    }
    fn set_values(&mut self, values: Vec<f32>) -> Result<()> {
        let dims = Tensor::dims(self);
        let buf = LazyBuffer::from_vec(values, &dims)?;
        self.var.set_leaf_value(buf);
        Ok(())
    }
    fn zero_grad(&self) {
        self.var.zero_grad();
    }
}

/// Modules whose parameters can be visited by name, in a fixed order.
pub trait Params {
    /// Calls `f` with each parameter's dotted name (under `prefix`) and the parameter.
    fn visit(&self, prefix: &str, f: &mut dyn FnMut(&str, &dyn Param));
    /// Calls `f` with each parameter's dotted name (under `prefix`), mutably.
    fn visit_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut dyn Param));

    /// Every parameter's name and dims, in visiting order.
    ///
    /// ```
    /// use teenygrad::nn::{Init, Linear, Params};
    /// use rand::SeedableRng;
    /// let layer = Linear::<3, 2>::init(&mut rand::rngs::StdRng::seed_from_u64(0));
    /// assert_eq!(layer.named_dims(), vec![("weight".to_string(), vec![2, 3]), ("bias".to_string(), vec![2])]);
    /// ```
    fn named_dims(&self) -> Vec<(String, Vec<usize>)> {
        let mut out = Vec::new();
        self.visit("", &mut |name, p| out.push((name.to_string(), p.dims())));
        out
    }

    /// The number of scalar parameters, a parameter held twice (tied weights) counted once, as
    /// PyTorch's `sum(p.numel() for p in model.parameters())` counts it.
    fn parameter_count(&self) -> usize {
        let (mut seen, mut count) = (FastSet::default(), 0);
        self.visit("", &mut |_, p| {
            if p.as_var().leaf_id().is_none_or(|id| seen.insert(id)) {
                count += p.dims().iter().product::<usize>();
            }
        });
        count
    }

    /// Switches layers that train differently from how they evaluate ([`Dropout`]) to training
    /// (`true`) or evaluation (`false`). Layers without such behaviour ignore it (the default);
    /// tuples pass it to each module, and a model struct should pass it to its fields as its
    /// `visit` does, or its dropout layers keep their mode ([`impl_params!`] writes both). [`Detach`]'s twin is always in
    /// evaluation mode.
    ///
    /// [`Dropout`]: super::Dropout
    /// [`Detach`]: super::Detach
    /// [`impl_params!`]: crate::impl_params
    fn set_training(&self, training: bool) {
        let _ = training;
    }

    /// Training mode for every layer: [`set_training(true)`](Self::set_training), as PyTorch's
    /// `model.train()`.
    fn train(&self) {
        self.set_training(true);
    }

    /// Evaluation mode for every layer: [`set_training(false)`](Self::set_training), as
    /// PyTorch's `model.eval()`.
    ///
    /// ```
    /// use teenygrad::prelude::*;
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let model = <(Linear<4, 8>, Relu, Dropout, Linear<8, 2>)>::init(&mut rng);
    /// model.eval();
    /// assert!(!model.2.is_training());
    /// let x = Tensor::<Rank2<3, 4>>::randn(&mut rng);
    /// assert_eq!(model.forward(x.clone()).to_vec(), model.forward(x).to_vec());
    /// ```
    fn eval(&self) {
        self.set_training(false);
    }

    /// Clears every parameter's gradient.
    fn zero_grad(&self) {
        self.visit("", &mut |_, p| p.zero_grad());
    }

    /// Copies every parameter's values out, by name.
    fn state_dict(&self) -> Vec<NamedTensor> {
        let mut out = Vec::new();
        self.visit("", &mut |name, p| {
            out.push((name.to_string(), p.dims(), p.values()))
        });
        out
    }

    /// Loads values by name. All names and shapes are checked before anything changes: a
    /// missing, extra, repeated or misshapen entry is an error and the module is left untouched.
    fn load_state_dict(&mut self, state: &[NamedTensor]) -> Result<()> {
        if let Some((i, (name, _, _))) = first_repeated(state, |(name, _, _)| name) {
            return Err(Error::Data {
                location: name.clone(),
                message: format!("appears more than once in the state (again at entry {i})"),
            });
        }
        let expected = self.named_dims();
        if let Some((_, (name, _))) = first_repeated(&expected, |(name, _)| name.as_str()) {
            return Err(Error::Data {
                location: name.clone(),
                message: REPEATED_NAME.into(),
            });
        }
        for (name, dims) in &expected {
            let found = state.iter().find(|(n, _, _)| n == name).ok_or_else(|| {
                let held = state.iter().map(|(n, _, _)| n);
                Error::Data {
                    location: name.clone(),
                    message: missing("the state", RENAME_IN_STATE, name, held, &expected),
                }
            })?;
            let count: usize = dims.iter().product();
            if &found.1 != dims {
                return Err(Error::Data {
                    location: name.clone(),
                    message: format!("shape {:?} does not match the parameter's {dims:?}", found.1),
                });
            }
            if found.2.len() != count {
                return Err(Error::Data {
                    location: name.clone(),
                    message: format!("{} values for shape {dims:?}, which holds {count}", found.2.len()),
                });
            }
        }
        if let Some((extra, _, _)) = state
            .iter()
            .find(|(n, _, _)| !expected.iter().any(|(e, _)| e == n))
        {
            return Err(Error::Data {
                location: extra.clone(),
                message: "is not a parameter of this module".into(),
            });
        }
        let mut result = Ok(());
        self.visit_mut("", &mut |name, p| {
            let (_, _, values) = state.iter().find(|(n, _, _)| n == name).expect("checked above");
            if let Err(e) = p.set_values(values.clone()) {
                result = Err(e);
            }
        });
        result
    }
}

/// A tensor on its own is one parameter, named by its prefix: an optimizer steps a bare
/// tensor, and a tuple of tensors names them `"0"`, `"1"`, …
///
/// ```
/// use teenygrad::prelude::*;
/// use teenygrad::nn::Params;
/// let mut w = Tensor::from([1.0, 2.0]).requires_grad();
/// let mut b = Tensor::from(0.5).requires_grad();
/// (w.sum_all() * 2.0 + b.clone()).backward();
/// let mut both = (w.clone(), b.clone());
/// assert_eq!(both.named_dims(), vec![("0".to_string(), vec![2]), ("1".to_string(), vec![])]);
/// Sgd::new(0.25).step(&mut both);
/// assert_eq!(w.to_vec(), [0.5, 1.5]);
/// assert_eq!(b.item(), 0.25);
/// Sgd::new(1.0).step(&mut w); // its gradient is still there: [2, 2]
/// assert_eq!(w.to_vec(), [-1.5, -0.5]);
/// ```
impl<S: Shape, G: GradMode> Params for Tensor<S, G> {
    fn visit(&self, prefix: &str, f: &mut dyn FnMut(&str, &dyn Param)) {
        f(prefix, self);
    }
    fn visit_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut dyn Param)) {
        f(prefix, self);
    }
}

/// A list of modules (PyTorch's `nn.ModuleList`): each under its position, `"0.weight"`, …
impl<M: Params> Params for [M] {
    fn visit(&self, prefix: &str, f: &mut dyn FnMut(&str, &dyn Param)) {
        for (i, m) in self.iter().enumerate() {
            m.visit(&join(prefix, &i.to_string()), f);
        }
    }
    fn visit_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut dyn Param)) {
        for (i, m) in self.iter_mut().enumerate() {
            m.visit_mut(&join(prefix, &i.to_string()), f);
        }
    }
    fn set_training(&self, training: bool) {
        self.iter().for_each(|m| m.set_training(training));
    }
}

/// `Vec`s and arrays of modules are lists: the slice's impl serves them.
macro_rules! list_params {
    ($($list:ty $(, const $n:ident)?);*) => {$(
        impl<M: Params $(, const $n: usize)?> Params for $list {
            fn visit(&self, prefix: &str, f: &mut dyn FnMut(&str, &dyn Param)) {
                self[..].visit(prefix, f);
            }
            fn visit_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut dyn Param)) {
                self[..].visit_mut(prefix, f);
            }
            fn set_training(&self, training: bool) {
                self[..].set_training(training);
            }
        }
    )*};
}
list_params!(Vec<M>; [M; N], const N);

/// Why a module whose parameters repeat a name can be neither saved nor loaded by name.
pub(crate) const REPEATED_NAME: &str =
    "two parameters of this module have this name, so saved state cannot tell them apart";

/// How to load a state whose names carry a prefix.
const RENAME_IN_STATE: &str = "rename the state's entries to the model's names (strip the prefix) first";

/// The first of `items` whose key equals an earlier one's, with its position: a name given twice
/// in a state, or a field twice in a file's header. In one pass over a set of the keys seen, so a
/// hostile header of millions of keys costs linear time, not quadratic.
pub(crate) fn first_repeated<T, K: Hash + Eq + ?Sized>(
    items: &[T],
    key: impl Fn(&T) -> &K,
) -> Option<(usize, &T)> {
    let mut seen = HashSet::with_capacity(items.len());
    (items.iter().enumerate()).find(|(_, item)| !seen.insert(key(item)))
}

/// `prefix.name`, or `name` when the prefix is empty: the name of a module's child `name` when
/// the module is visited under `prefix`. A hand-written [`Params`] passes it to each child
/// ([`impl_params!`](crate::impl_params) writes such an impl from a list of fields).
///
/// ```
/// use teenygrad::nn::{Init, Linear, Param, Params, join};
/// use rand::SeedableRng;
///
/// /// A model of two named layers.
/// struct Pair {
///     encoder: Linear<4, 8>,
///     head: Linear<8, 2>,
/// }
///
/// impl Params for Pair {
///     fn visit(&self, prefix: &str, f: &mut dyn FnMut(&str, &dyn Param)) {
///         self.encoder.visit(&join(prefix, "encoder"), f);
///         self.head.visit(&join(prefix, "head"), f);
///     }
///     fn visit_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut dyn Param)) {
///         self.encoder.visit_mut(&join(prefix, "encoder"), f);
///         self.head.visit_mut(&join(prefix, "head"), f);
///     }
/// }
///
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let model = Pair { encoder: Linear::init(&mut rng), head: Linear::init(&mut rng) };
/// let names: Vec<String> = model.named_dims().into_iter().map(|(name, _)| name).collect();
/// assert_eq!(names, ["encoder.weight", "encoder.bias", "head.weight", "head.bias"]);
/// assert_eq!(&*join("", "head"), "head");
/// ```
pub fn join(prefix: &str, name: &str) -> Name {
    let separator = if prefix.is_empty() { "" } else { "." };
    let len = prefix.len() + separator.len() + name.len();
    if len > NAME_INLINE {
        return Name(Repr::Heap(format!("{prefix}{separator}{name}")));
    }
    let mut bytes = [0; NAME_INLINE];
    let mut at = 0;
    for part in [prefix, separator, name] {
        bytes[at..at + part.len()].copy_from_slice(part.as_bytes());
        at += part.len();
    }
    Name(Repr::Inline { len, bytes })
}

/// Bytes of a parameter name held without allocating.
const NAME_INLINE: usize = 40;

/// A parameter's dotted name (a `str` through `Deref`), held inline when short: every optimizer
/// step and `zero_grad` visit every parameter by name, and as `String`s the names were 14 of a
/// small training step's 246 allocations.
pub struct Name(Repr);

enum Repr {
    Inline { len: usize, bytes: [u8; NAME_INLINE] },
    Heap(String),
}

impl std::ops::Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        match &self.0 {
            Repr::Inline { len, bytes } => {
                std::str::from_utf8(&bytes[..*len]).expect("joined from whole strs")
            }
            Repr::Heap(name) => name,
        }
    }
}

impl std::fmt::Debug for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::join;

    #[test]
    fn names_join_with_a_dot_inline_or_on_the_heap() {
        assert_eq!(&*join("", "weight"), "weight");
        assert_eq!(&*join("0", "bias"), "0.bias");
        assert_eq!(&*join("", ""), "");
        // Exactly the inline room, one byte past it, and far past it; multi-byte characters too.
        let prefix = "p".repeat(33);
        assert_eq!(&*join(&prefix, "weight"), format!("{prefix}.weight"));
        assert_eq!(&*join(&prefix, "weights"), format!("{prefix}.weights"));
        let long = "é".repeat(100);
        assert_eq!(&*join(&long, "ß"), format!("{long}.ß"));
        assert_eq!(&*join("ünï", "çødé"), "ünï.çødé");
    }
}
