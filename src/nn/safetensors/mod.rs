//! Saving and loading a module's parameters in the [safetensors] format, by name.
//!
//! Each parameter is stored as an `F32` (little-endian) tensor under its dotted name (`"0.weight"`,
//! `"2.bias"`, as PyTorch's `nn.Sequential` names them), so files move between teenygrad and
//! PyTorch/numpy (`safetensors.torch.load_file`, `safetensors.numpy.load_file`).
//!
//! Loading is all or nothing: the file must hold exactly the module's parameters, each as `F32`
//! with the parameter's dims. Anything else (a missing, extra, misshapen or non-`F32` tensor, a
//! corrupt or truncated file) is an [`Error::Data`] naming the file and the tensor, and the module
//! is left untouched.
//!
//! [safetensors]: https://huggingface.co/docs/safetensors
//!
//! ```
//! use teenygrad::nn::{self, Init, Linear, Params};
//! use rand::SeedableRng;
//! let mut rng = rand::rngs::StdRng::seed_from_u64(0);
//! let a = Linear::<3, 2>::init(&mut rng);
//! let mut b = Linear::<3, 2>::init(&mut rng);
//! nn::from_bytes(&mut b, &nn::to_bytes(&a).unwrap()).unwrap();
//! assert_eq!(a.state_dict(), b.state_dict());
//! // A layer of another shape does not load it, and keeps its values.
//! let mut c = Linear::<2, 2>::init(&mut rng);
//! let before = c.state_dict();
//! assert!(nn::from_bytes(&mut c, &nn::to_bytes(&a).unwrap()).is_err());
//! assert_eq!(c.state_dict(), before);
//! ```

mod format;
mod json;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use super::params::{REPEATED_NAME, first_repeated};
use super::{NamedTensor, Params};
use crate::error::{Error, Result};

/// What `from_bytes` calls the data in its error messages.
const BYTES_SOURCE: &str = "safetensors data";

/// Writes every parameter of `model` to the file `path` (created or replaced), in the safetensors
/// format: each as an `F32` little-endian tensor under its dotted name, with its dims.
///
/// An [`Error::Io`] names the path if it cannot be written; then a file that was there is left as
/// it was: the new one is written beside it, with its permissions, and renamed over it once whole;
/// except where that cannot be done (a read-only directory, another user's file in a sticky one
/// such as `/tmp`, a name too long to stage it under), and the file is written in place, as
/// `std::fs::write` does.
pub fn save<M: Params + ?Sized>(model: &M, path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    let bytes = encode(model, &path.display().to_string())?;
    write_file(path, &bytes)
}

/// Loads every parameter of `model` from the safetensors file `path`, all or nothing.
///
/// The file must hold exactly the model's parameters, by name, each as `F32` with the parameter's
/// dims. A missing, extra, misshapen or non-`F32` tensor, or a corrupt or truncated file, is an
/// [`Error::Data`] whose location names the file and the tensor (`"model.safetensors: tensor
/// 0.weight"`); a file that cannot be read is an [`Error::Io`]. On any error the model is
/// unchanged.
pub fn load<M: Params + ?Sized>(model: &mut M, path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    let bytes = read_file(path)?;
    decode_into(model, &bytes, &path.display().to_string())
}

/// The bytes of a safetensors file holding every parameter of `model`.
pub fn to_bytes<M: Params + ?Sized>(model: &M) -> Result<Vec<u8>> {
    encode(model, BYTES_SOURCE)
}

/// Loads every parameter of `model` from the bytes of a safetensors file, as [`load`] does from a
/// file. Never panics, whatever the bytes; on any error the model is unchanged.
pub fn from_bytes<M: Params + ?Sized>(model: &mut M, bytes: &[u8]) -> Result<()> {
    decode_into(model, bytes, BYTES_SOURCE)
}

/// Every tensor of the safetensors file `path`, sorted by name, in the form
/// [`Params::state_dict`] gives a model's: for a file whose names are not the model's as they
/// stand (saved with a prefix, from a larger model), to rename or pick from before
/// [`Params::load_state_dict`]. Every tensor must be `F32`: a file holding any other dtype (a
/// PyTorch `BatchNorm`'s `I64` `num_batches_tracked`, an `F16` checkpoint) is an error as a
/// whole, naming the first such tensor by name.
///
/// # Errors
///
/// [`Error::Io`] if the file cannot be read; [`Error::Data`] naming the file (and the tensor) if
/// it is not a safetensors file or holds a tensor that is not `F32`.
///
/// ```
/// use teenygrad::nn::{self, Init, Linear, Params};
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// // A layer saved inside a larger model, as its first part: its tensors are "0.weight", ….
/// let saved = Linear::<3, 2>::init(&mut rng);
/// let path = std::env::temp_dir().join(format!("teenygrad-doc-prefix-{}.safetensors", std::process::id()));
/// nn::save(&(saved.clone(),), &path)?;
/// let renamed: Vec<_> = nn::read_tensors(&path)?
///     .into_iter()
///     .map(|(name, dims, values)| (name.trim_start_matches("0.").to_string(), dims, values))
///     .collect();
/// let mut layer = Linear::<3, 2>::init(&mut rng);
/// layer.load_state_dict(&renamed)?;
/// assert_eq!(layer.state_dict(), saved.state_dict());
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), teenygrad::Error>(())
/// ```
pub fn read_tensors(path: impl AsRef<Path>) -> Result<Vec<NamedTensor>> {
    let path = path.as_ref();
    parse(&read_file(path)?, &path.display().to_string())
}

/// Every tensor of the bytes of a safetensors file, sorted by name, as [`read_tensors`] reads a
/// file. Never panics, whatever the bytes.
///
/// # Errors
///
/// [`Error::Data`] if the bytes are not a safetensors file or hold a tensor that is not `F32`.
pub fn parse_tensors(bytes: &[u8]) -> Result<Vec<NamedTensor>> {
    parse(bytes, BYTES_SOURCE)
}

fn parse(bytes: &[u8], source: &str) -> Result<Vec<NamedTensor>> {
    let (tensors, _) = tensors_from_bytes(bytes, source)?;
    let mut out: Vec<_> = (tensors.into_iter())
        .map(|(name, (dims, values))| (name, dims, values))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// `tensors` (name, dims, values) and string `metadata` as the bytes of a safetensors file: for
/// state that is not a module's parameters (an optimizer's). Names must be distinct.
pub(crate) fn tensors_to_bytes(
    tensors: &[(String, Vec<usize>, Vec<f32>)],
    metadata: &[(String, String)],
) -> Vec<u8> {
    format::write(tensors, metadata)
}

/// The tensors (by name: dims and values) and metadata of the bytes of a safetensors file, every
/// tensor `F32`; errors name `source` and the tensor.
pub(crate) fn tensors_from_bytes(bytes: &[u8], source: &str) -> Result<(Tensors, BTreeMap<String, String>)> {
    let file = format::read(bytes).map_err(|message| file_error(source, message))?;
    let mut tensors = HashMap::with_capacity(file.tensors.len());
    // By name, so that of several tensors in error the same one is named every time.
    let mut entries: Vec<_> = file.tensors.into_iter().collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    for (name, entry) in entries {
        if entry.dtype != "F32" {
            return Err(tensor_error(
                source,
                &name,
                format!("has dtype {}, but only F32 is read", entry.dtype),
            ));
        }
        let values = (entry.data.chunks_exact(4))
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        tensors.insert(name, (entry.dims, values));
    }
    Ok((tensors, file.metadata))
}

/// Tensors read by [`tensors_from_bytes`]: dims and values by name.
pub(crate) type Tensors = HashMap<String, (Vec<usize>, Vec<f32>)>;

/// The bytes of the file at `path`, or an [`Error::Io`] naming it.
pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| io_error(path, e))
}

/// Writes `bytes` to the file at `path`, replacing it only once all are written (so a failed write
/// leaves an old file whole), or returns an [`Error::Io`] naming it.
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    crate::file::write_replacing(path, bytes).map_err(|e| io_error(path, e))
}

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

pub(crate) fn tensor_error(source: &str, name: &str, message: impl Into<String>) -> Error {
    // A bare tensor saved on its own is the entry with no name.
    let name = if name.is_empty() { "\"\" (unnamed)" } else { name };
    Error::Data {
        location: format!("{source}: tensor {name}"),
        message: message.into(),
    }
}

/// Why the parameter `name` was not loaded from `holder` ("the file", "the state"), which has
/// the tensors `held`, with those the model's parameters (`expected`) do not name: when every
/// name carries a prefix (a model saved inside another), one of them says so at once, with
/// `rename`, how to load such names.
pub(crate) fn missing<'a>(
    holder: &str,
    rename: &str,
    name: &str,
    held: impl Iterator<Item = &'a String>,
    expected: &[(String, Vec<usize>)],
) -> String {
    const SHOWN: usize = 4;
    let mut left: Vec<&String> = held.filter(|n| !expected.iter().any(|(e, _)| e == *n)).collect();
    left.sort();
    let suffix = format!(".{name}");
    let prefixed = left
        .iter()
        .find(|other| !name.is_empty() && other.ends_with(&suffix));
    if let Some(prefixed) = prefixed {
        return format!("is missing from {holder}, which has {prefixed:?}: {rename}");
    }
    if left.is_empty() {
        return format!("is missing from {holder}");
    }
    let shown: Vec<String> = left.iter().take(SHOWN).map(|n| format!("{n:?}")).collect();
    let more = match left.len().saturating_sub(SHOWN) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    format!(
        "is missing from {holder}, whose other tensors are {}{more}",
        shown.join(", ")
    )
}

pub(crate) fn file_error(source: &str, message: impl Into<String>) -> Error {
    Error::Data {
        location: source.to_string(),
        message: message.into(),
    }
}

fn encode<M: Params + ?Sized>(model: &M, source: &str) -> Result<Vec<u8>> {
    let state = model.state_dict();
    if let Some((_, (name, _, _))) = first_repeated(&state, |(name, _, _)| name.as_str()) {
        return Err(tensor_error(source, name, REPEATED_NAME));
    }
    if state.iter().any(|(name, _, _)| name == "__metadata__") {
        return Err(tensor_error(
            source,
            "__metadata__",
            "the format reserves this name for metadata",
        ));
    }
    Ok(format::write(&state, &[]))
}

/// How to load names saved under a prefix from a file.
const RENAME_IN_FILE: &str = "to load names saved with a prefix, read them with `nn::read_tensors`, \
                              rename them and use `load_state_dict`";

/// Parses `bytes`, checks them against the model's parameters, and only then loads them.
fn decode_into<M: Params + ?Sized>(model: &mut M, bytes: &[u8], source: &str) -> Result<()> {
    let mut file = (format::read(bytes).map_err(|message| file_error(source, message))?).tensors;

    let expected = model.named_dims();
    if let Some((_, (name, _))) = first_repeated(&expected, |(name, _)| name.as_str()) {
        return Err(tensor_error(source, name, REPEATED_NAME));
    }
    let mut state = Vec::with_capacity(expected.len());
    for (name, dims) in &expected {
        let entry = file.remove(name).ok_or_else(|| {
            let why = missing("the file", RENAME_IN_FILE, name, file.keys(), &expected);
            tensor_error(source, name, why)
        })?;
        if entry.dtype != "F32" {
            return Err(tensor_error(
                source,
                name,
                format!(
                    "has dtype {}, but parameters are loaded only from F32",
                    entry.dtype
                ),
            ));
        }
        if entry.dims != *dims {
            return Err(tensor_error(
                source,
                name,
                format!(
                    "has shape {:?} in the file, but the parameter's is {dims:?}",
                    entry.dims
                ),
            ));
        }
        state.push((name.clone(), dims.clone(), entry.data));
    }
    if let Some(name) = file.keys().min() {
        return Err(tensor_error(
            source,
            name,
            "is in the file but is not a parameter of this model",
        ));
    }

    // Every check passed: only now decode the values (at most the file's size in memory).
    let state: Vec<(String, Vec<usize>, Vec<f32>)> = state
        .into_iter()
        .map(|(name, dims, data)| {
            let values = data
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            (name, dims, values)
        })
        .collect();
    model.load_state_dict(&state).map_err(|e| match e {
        Error::Data { location, message } => tensor_error(source, &location, message),
        other => other,
    })
}
