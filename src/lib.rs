//! teenygrad: a small deep-learning core whose tensors carry their shapes in the type system.
//!
//! Layers, top to bottom: typed tensors ([`shape`] gives their shape types), reverse-mode autograd,
//! the untyped [`lazy`] buffer that records operations and fuses them when realized, and kernels over
//! flat `Vec<f32>` storage.

pub mod data;
pub mod error;
pub mod lazy;
pub mod shape;

pub use error::{Error, Result};
pub use rand;
