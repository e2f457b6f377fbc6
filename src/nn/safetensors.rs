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

use std::collections::HashSet;
use std::path::Path;

use ::safetensors::tensor::{Dtype, SafeTensors, TensorView};

use super::Params;
use crate::error::{Error, Result};

/// What `from_bytes` calls the data in its error messages.
const BYTES_SOURCE: &str = "safetensors data";

/// Writes every parameter of `model` to the file `path` (created or replaced), in the safetensors
/// format: each as an `F32` little-endian tensor under its dotted name, with its dims.
///
/// An [`Error::Io`] names the path if it cannot be written.
pub fn save<M: Params + ?Sized>(model: &M, path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    let bytes = encode(model, &path.display().to_string())?;
    std::fs::write(path, bytes).map_err(|e| io_error(path, e))
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
    let bytes = std::fs::read(path).map_err(|e| io_error(path, e))?;
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

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

fn tensor_error(source: &str, name: &str, message: impl Into<String>) -> Error {
    Error::Data {
        location: format!("{source}: tensor {name}"),
        message: message.into(),
    }
}

fn file_error(source: &str, message: impl Into<String>) -> Error {
    Error::Data {
        location: source.to_string(),
        message: message.into(),
    }
}

fn encode<M: Params + ?Sized>(model: &M, source: &str) -> Result<Vec<u8>> {
    let state = model.state_dict();
    let mut seen = HashSet::new();
    if let Some((name, _, _)) = state.iter().find(|(name, _, _)| !seen.insert(name.as_str())) {
        return Err(tensor_error(source, name, "two parameters have this name"));
    }
    let bytes: Vec<Vec<u8>> = state
        .iter()
        .map(|(_, _, values)| values.iter().flat_map(|v| v.to_le_bytes()).collect())
        .collect();
    let mut views = Vec::with_capacity(state.len());
    for ((name, dims, _), data) in state.iter().zip(&bytes) {
        let view = TensorView::new(Dtype::F32, dims.clone(), data)
            .map_err(|e| tensor_error(source, name, format!("cannot be stored: {e}")))?;
        views.push((name.as_str(), view));
    }
    ::safetensors::serialize(views, None).map_err(|e| file_error(source, format!("cannot be written: {e}")))
}

/// Parses `bytes`, checks them against the model's parameters, and only then loads them.
fn decode_into<M: Params + ?Sized>(model: &mut M, bytes: &[u8], source: &str) -> Result<()> {
    check_declared_sizes(bytes).map_err(|message| file_error(source, message))?;
    let file = SafeTensors::deserialize(bytes)
        .map_err(|e| file_error(source, format!("not a valid safetensors file: {e}")))?;

    let expected = model.named_dims();
    let mut state = Vec::with_capacity(expected.len());
    for (name, dims) in &expected {
        let view = file
            .tensor(name)
            .map_err(|_| tensor_error(source, name, "is missing from the file"))?;
        if view.dtype() != Dtype::F32 {
            return Err(tensor_error(
                source,
                name,
                format!(
                    "has dtype {}, but parameters are loaded only from F32",
                    view.dtype()
                ),
            ));
        }
        if view.shape() != dims.as_slice() {
            return Err(tensor_error(
                source,
                name,
                format!(
                    "has shape {:?} in the file, but the parameter's is {dims:?}",
                    view.shape()
                ),
            ));
        }
        state.push((name.clone(), dims.clone(), view));
    }
    let mut extra: Vec<&str> = file
        .names()
        .into_iter()
        .filter(|n| !expected.iter().any(|(e, _)| e == n))
        .collect();
    extra.sort_unstable();
    if let Some(name) = extra.first() {
        return Err(tensor_error(
            source,
            name,
            "is in the file but is not a parameter of this model",
        ));
    }

    // Every check passed: only now decode the values (at most the file's size in memory).
    let state: Vec<(String, Vec<usize>, Vec<f32>)> = state
        .into_iter()
        .map(|(name, dims, view)| {
            let values = view
                .data()
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

/// Rejects a header that declares a number larger than the whole file, before the safetensors
/// crate sees it.
///
/// safetensors 0.8.0 adds the declared data size to the header size unchecked, so a crafted
/// header whose offsets sum to nearly `usize::MAX` panics ("attempt to add with overflow") in
/// builds with overflow checks. In a valid file every offset is at most the file's length, and
/// so is every dimension of a tensor with elements; only a dimension of an empty tensor (one
/// with another dimension 0) could be larger, and such a tensor is never a parameter here. So
/// every integer in the header outside its strings must be at most the file's length.
fn check_declared_sizes(bytes: &[u8]) -> std::result::Result<(), String> {
    let Some(len_bytes) = bytes.get(..8) else {
        return Ok(()); // too short: the parser reports it
    };
    let n = u64::from_le_bytes(len_bytes.try_into().expect("8 bytes"));
    let end = usize::try_from(n)
        .ok()
        .and_then(|n| n.checked_add(8))
        .filter(|&end| end <= bytes.len());
    let Some(header) = end.map(|end| &bytes[8..end]) else {
        return Ok(()); // a header longer than the file: the parser reports it
    };
    let limit = bytes.len() as u128;
    let (mut in_string, mut escaped) = (false, false);
    let mut number: Option<u128> = None;
    for &b in header.iter().chain(std::iter::once(&b' ')) {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        if b.is_ascii_digit() {
            let value = number
                .unwrap_or(0)
                .saturating_mul(10)
                .saturating_add(u128::from(b - b'0'));
            number = Some(value);
            continue;
        }
        if let Some(value) = number.take()
            && value > limit
        {
            return Err(format!(
                "the header declares a size or offset of {value}, larger than the whole file ({limit} bytes)"
            ));
        }
        in_string = b == b'"';
    }
    Ok(())
}
