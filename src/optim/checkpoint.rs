//! Saving and loading an optimizer's state (see [`save_state`]).

use std::collections::HashSet;
use std::path::Path;

use super::{Adam, Sgd};
use crate::error::Result;
use crate::lazy::fast_hash::FastSet;
use crate::nn::Params;
use crate::nn::safetensors::{
    file_error, read_file, tensor_error, tensors_from_bytes, tensors_to_bytes, write_file,
};

/// What [`state_from_bytes`] calls the data in its error messages.
const BYTES_SOURCE: &str = "optimizer state data";

/// An optimizer whose state [`save_state`] and [`load_state`] write and read: [`Sgd`] and
/// [`Adam`].
pub trait Stateful: sealed::State {}

impl Stateful for Sgd {}
impl Stateful for Adam {}

pub(crate) mod sealed {
    /// One parameter's state: a tensor per name of [`State::TENSORS`], each as long as the
    /// parameter, and a step count where [`State::STEPS`].
    pub struct ParamState {
        pub tensors: Vec<Vec<f32>>,
        pub step: Option<u32>,
    }

    /// How an optimizer's state is named, read and replaced. Sealed: the files' layout is this
    /// crate's to keep.
    pub trait State {
        /// What the file's metadata calls this optimizer.
        const KIND: &'static str;
        /// The names of each parameter's state tensors.
        const TENSORS: &'static [&'static str];
        /// The state tensors no run can leave a negative value in (a sum of squares): a file
        /// with one is refused, where its next step would make NaN of every value.
        const NON_NEGATIVE: &'static [&'static str] = &[];
        /// Whether each parameter's state counts its steps.
        const STEPS: bool;
        /// Why this optimizer, as configured, would not use state it loaded (SGD without
        /// momentum keeps no buffers), if so.
        fn unused_state(&self) -> Option<&'static str> {
            None
        }
        /// The state of the parameter at position `index`, if it has any.
        fn state(&self, index: usize) -> Option<ParamState>;
        /// Replaces all state: `states[i]` for the parameter at position `i`.
        fn set_states(&mut self, states: Vec<Option<ParamState>>);
    }
}

use sealed::ParamState;

/// Writes `optimizer`'s state for `model`'s parameters to the file `path` (created or replaced),
/// so a training run resumes where it stopped. An [`Error::Io`](crate::Error::Io) names the path
/// if it cannot be written; then a file that was there is left as it was: the new one is written
/// beside it, with its permissions, and renamed over it once whole; except where that cannot be
/// done (a read-only directory, another user's file in a sticky one such as `/tmp`, a name too long
/// to stage it under), and the file is written in place, as `std::fs::write` does.
///
/// A parameter `name`'s state is stored as the tensors `name.momentum_buffer` (SGD), or
/// `name.exp_avg` and `name.exp_avg_sq` (Adam and AdamW), as PyTorch names them, each with the
/// parameter's dims; Adam's step count as the metadata string `name.step` (a whole number; read
/// also as PyTorch's float `step` prints, `"156.0"`); and the kind of
/// optimizer as the metadata `optimizer` (`"SGD"`, `"Adam"`). A parameter with no state yet (no
/// gradient in any step) has no entry. The settings (learning rate, betas, ...) are not saved:
/// they are the loading optimizer's own.
///
/// ```
/// use teenygrad::prelude::*;
/// use teenygrad::nn::{self, Init, Linear, Params};
/// use teenygrad::optim::{self, Adam, Optimizer};
/// use rand::SeedableRng;
/// let mut layer = Linear::<2, 1>::init(&mut rand::rngs::StdRng::seed_from_u64(0));
/// let mut adam = Adam::new(0.01);
/// layer.weight.sum_all().backward();
/// adam.step(&mut layer);
/// // A checkpoint: the parameters and the optimizer's state.
/// let (weights, state) = (nn::to_bytes(&layer)?, optim::state_to_bytes(&adam, &layer)?);
///
/// let mut resumed = Linear::<2, 1>::init(&mut rand::rngs::StdRng::seed_from_u64(1));
/// let mut resumed_adam = Adam::new(0.01);
/// nn::from_bytes(&mut resumed, &weights)?;
/// optim::state_from_bytes(&mut resumed_adam, &resumed, &state)?;
/// for (model, adam) in [(&mut layer, &mut adam), (&mut resumed, &mut resumed_adam)] {
///     model.zero_grad();
///     model.weight.sum_all().backward();
///     adam.step(model);
/// }
/// assert_eq!(layer.state_dict(), resumed.state_dict());
/// # Ok::<(), teenygrad::Error>(())
/// ```
///
/// # Panics
/// If the optimizer's state is not for this model (another length at some parameter position),
/// naming the parameter and both lengths, as [`Optimizer::step`](super::Optimizer::step) does.
#[track_caller]
pub fn save_state<O: Stateful, M: Params + ?Sized>(
    optimizer: &O,
    model: &M,
    path: impl AsRef<Path>,
) -> Result<()> {
    write_file(path.as_ref(), &state_to_bytes(optimizer, model)?)
}

/// Loads `optimizer`'s state for `model`'s parameters from the file `path`, all or nothing,
/// replacing all it held: a parameter the file has no state for starts afresh.
///
/// The file must hold this kind of optimizer's state (metadata `optimizer`), and for each of the
/// model's parameters either all of its state, with the parameter's dims, or none; nothing else
/// (no step count, `name.step`, left over); the optimizer must use it (an SGD without momentum
/// refuses momentum buffers); and `exp_avg_sq` must hold no negative value. Other values load as
/// saved, NaN and infinities too (as a model's parameters do). Anything else is an
/// [`Error::Data`](crate::Error::Data) naming the file and the tensor; a file that cannot be read
/// is an [`Error::Io`](crate::Error::Io). On any error the optimizer is unchanged.
pub fn load_state<O: Stateful, M: Params + ?Sized>(
    optimizer: &mut O,
    model: &M,
    path: impl AsRef<Path>,
) -> Result<()> {
    let path = path.as_ref();
    decode_into(optimizer, model, &read_file(path)?, &path.display().to_string())
}

/// The bytes of a safetensors file holding `optimizer`'s state for `model`, as [`save_state`]
/// writes them. Fails only if two of `model`'s state tensors would have the same name.
///
/// # Panics
/// As [`save_state`].
#[track_caller]
pub fn state_to_bytes<O: Stateful, M: Params + ?Sized>(optimizer: &O, model: &M) -> Result<Vec<u8>> {
    let (mut tensors, mut metadata) = (Vec::new(), vec![("optimizer".to_string(), O::KIND.to_string())]);
    for (index, name, dims) in distinct_params(model) {
        let Some(state) = optimizer.state(index) else {
            continue;
        };
        let len = dims.iter().product::<usize>();
        if let Some(held) = state.tensors.iter().map(Vec::len).find(|&held| held != len) {
            super::state_mismatch(index, &name, held, len);
        }
        for (tensor, values) in O::TENSORS.iter().zip(state.tensors) {
            tensors.push((format!("{name}.{tensor}"), dims.clone(), values));
        }
        if let Some(step) = state.step {
            metadata.push((format!("{name}.step"), step.to_string()));
        }
    }
    let mut seen = HashSet::new();
    if let Some((name, ..)) = tensors.iter().find(|(name, ..)| !seen.insert(name.as_str())) {
        return Err(tensor_error(
            BYTES_SOURCE,
            name,
            "two parameters' state has this name",
        ));
    }
    Ok(tensors_to_bytes(&tensors, &metadata))
}

/// Loads `optimizer`'s state for `model` from the bytes of a safetensors file, as [`load_state`]
/// does from a file. Never panics, whatever the bytes; on any error the optimizer is unchanged.
pub fn state_from_bytes<O: Stateful, M: Params + ?Sized>(
    optimizer: &mut O,
    model: &M,
    bytes: &[u8],
) -> Result<()> {
    decode_into(optimizer, model, bytes, BYTES_SOURCE)
}

/// Each distinct parameter of `model` (a parameter held twice counts at its first position, as
/// [`super::for_each_distinct`] visits it): its position, name and dims.
fn distinct_params<M: Params + ?Sized>(model: &M) -> Vec<(usize, String, Vec<usize>)> {
    let (mut seen, mut params, mut index) = (FastSet::default(), Vec::new(), 0);
    model.visit("", &mut |name, p| {
        if p.as_var().leaf_id().is_none_or(|id| seen.insert(id)) {
            params.push((index, name.to_string(), p.dims()));
        }
        index += 1;
    });
    params
}

fn decode_into<O: Stateful, M: Params + ?Sized>(
    optimizer: &mut O,
    model: &M,
    bytes: &[u8],
    source: &str,
) -> Result<()> {
    let (mut tensors, metadata) = tensors_from_bytes(bytes, source)?;
    match metadata.get("optimizer") {
        Some(kind) if kind == O::KIND => {}
        Some(kind) => {
            return Err(file_error(
                source,
                format!("holds the state of {kind}, not of {}", O::KIND),
            ));
        }
        None => {
            return Err(file_error(
                source,
                "holds no optimizer state (its metadata names no `optimizer`); a model's \
                 parameters are loaded with `nn::load`",
            ));
        }
    }
    let params = distinct_params(model);
    let mut steps_used = HashSet::new();
    let positions = params.last().map_or(0, |(index, ..)| index + 1);
    let mut states: Vec<Option<ParamState>> = (0..positions).map(|_| None).collect();
    for (index, name, dims) in params {
        let key = |tensor: &str| format!("{name}.{tensor}");
        let found: Vec<_> = O::TENSORS.iter().map(|t| tensors.remove(&key(t))).collect();
        let step = metadata.get(&key("step")).filter(|_| O::STEPS);
        if step.is_some() {
            steps_used.insert(key("step"));
        }
        if found.iter().all(Option::is_none) && step.is_none() {
            continue;
        }
        let mut values = Vec::with_capacity(found.len());
        for (tensor, entry) in O::TENSORS.iter().zip(found) {
            let Some((file_dims, data)) = entry else {
                return Err(tensor_error(
                    source,
                    &key(tensor),
                    "is missing from the file, which has the rest of this parameter's state",
                ));
            };
            if file_dims != dims {
                return Err(tensor_error(
                    source,
                    &key(tensor),
                    format!("has shape {file_dims:?} in the file, but the parameter's is {dims:?}"),
                ));
            }
            if O::NON_NEGATIVE.contains(tensor)
                && let Some((at, value)) = data.iter().enumerate().find(|(_, v)| **v < 0.0)
            {
                return Err(tensor_error(
                    source,
                    &key(tensor),
                    format!("holds {value} at index {at}, but a sum of squares is never negative"),
                ));
            }
            values.push(data);
        }
        let step = match step {
            Some(text) => match parse_step(text) {
                Some(step) => Some(step),
                None => {
                    return Err(tensor_error(
                        source,
                        &key("step"),
                        format!("{text:?} is not a step count (a whole number from 1)"),
                    ));
                }
            },
            None if O::STEPS => {
                return Err(tensor_error(
                    source,
                    &key("step"),
                    "is missing from the file's metadata, which has the rest of this parameter's state",
                ));
            }
            None => None,
        };
        states[index] = Some(ParamState {
            tensors: values,
            step,
        });
    }
    if let Some(why) = optimizer.unused_state()
        && states.iter().any(Option::is_some)
    {
        return Err(file_error(source, why));
    }
    if let Some(name) = tensors.keys().min() {
        return Err(tensor_error(
            source,
            name,
            "is in the file but is not the state of a parameter of this model",
        ));
    }
    let unused_step = metadata
        .keys()
        .filter(|k| k.ends_with(".step") && !steps_used.contains(*k))
        .min();
    if let Some(name) = unused_step {
        let why = if O::STEPS {
            "is in the file's metadata but is not the step count of a parameter of this model"
        } else {
            "is in the file's metadata, but this optimizer counts no steps"
        };
        return Err(tensor_error(source, name, why));
    }
    optimizer.set_states(states);
    Ok(())
}

/// A step count from 1: a whole number, also as PyTorch's float `step` prints (`"156.0"`).
fn parse_step(text: &str) -> Option<u32> {
    let step = text.parse::<u32>().ok().or_else(|| {
        let value = text.parse::<f64>().ok()?;
        (value.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(&value)).then_some(value as u32)
    })?;
    (step > 0).then_some(step)
}
