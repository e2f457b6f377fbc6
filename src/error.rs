//! The one error type of the crate.

use std::fmt;

/// Everything that can go wrong with input a caller hands to teenygrad.
///
/// Programmer errors the type system cannot catch (for example two runtime-sized batch axes of
/// different lengths meeting in an operator) panic instead, with a message naming both shapes;
/// an operation that panics on its run-time shapes has a `try_` twin returning this error. Misuse
/// that no data can cause (an optimizer stepping another model than its first, a second
/// `backward` through one graph, a negative `clip_grad_norm` bound) panics with no twin, before
/// anything changes.
///
/// Its `Debug` form is the variant's name and the `Display` sentence (`ShapeMismatch: add:
/// shapes [8, 4] and [5, 4] are incompatible (…)`), since that is what `unwrap()` and a `main`
/// returning `Result` print; the fields are public for matching.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A flat buffer's length does not match the element count of the shape it should fill.
    LengthMismatch {
        /// The shape the buffer was meant for.
        shape: Vec<usize>,
        /// The element count of that shape.
        expected: usize,
        /// The length that was given.
        got: usize,
    },
    /// Two shapes that an operation needs to agree do not.
    ShapeMismatch {
        /// The operation, e.g. `"add"` or `"matmul"`.
        op: &'static str,
        /// The left operand's shape.
        lhs: Vec<usize>,
        /// The right operand's shape.
        rhs: Vec<usize>,
        /// The rule that was broken, in words.
        rule: &'static str,
    },
    /// An axis index outside `0..rank`.
    AxisOutOfRange {
        /// The axis asked for (as given; negative axes count from the end).
        axis: isize,
        /// The rank of the shape.
        rank: usize,
    },
    /// An axis list that is not what the operation needs (repeated axes, not a permutation, ...).
    InvalidAxes {
        /// The axes given.
        axes: Vec<usize>,
        /// The rank of the shape.
        rank: usize,
        /// What was wrong.
        reason: &'static str,
    },
    /// A block that does not lie inside the tensor it is taken from (or has another rank).
    OutOfBounds {
        /// The operation, e.g. `"slice"`.
        op: &'static str,
        /// The source's shape.
        shape: Vec<usize>,
        /// Where the block starts, one index per axis.
        starts: Vec<usize>,
        /// The block's dims.
        dims: Vec<usize>,
    },
    /// An index past the end of what it indexes (an embedding id `>= V`).
    IndexOutOfRange {
        /// The operation, e.g. `"select_rows"`.
        op: &'static str,
        /// Where the index is in the list of indices given.
        position: usize,
        /// The index.
        index: usize,
        /// The length it must be below.
        len: usize,
    },
    /// A setting outside the values an operation accepts (a Huber `delta` that is not positive).
    InvalidArgument {
        /// The operation, e.g. `"huber_loss"`.
        op: &'static str,
        /// The setting, its value and the rule, in words.
        message: String,
    },
    /// An operation on a list of tensors given none (`stack`).
    EmptyInput {
        /// The operation, e.g. `"stack"`.
        op: &'static str,
    },
    /// A shape whose element count does not fit in `usize`.
    ShapeOverflow {
        /// The offending shape.
        shape: Vec<usize>,
    },
    /// Bad outside data: a file or record that could not be read.
    Data {
        /// Where: a file name and line, or another locator.
        location: String,
        /// What was wrong.
        message: String,
    },
    /// An I/O failure, with the path involved.
    Io {
        /// The path that was read or written.
        path: String,
        /// The operating system's message.
        message: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::LengthMismatch { shape, expected, got } => write!(
                f,
                "a buffer of length {got} cannot fill shape {shape:?}, which holds {expected} elements"
            ),
            Error::ShapeMismatch { op, lhs, rhs, rule } => {
                write!(f, "{op}: shapes {lhs:?} and {rhs:?} are incompatible ({rule})")
            }
            Error::AxisOutOfRange { axis, rank } => {
                write!(f, "axis {axis} is out of range for a tensor of rank {rank}")
            }
            Error::InvalidAxes { axes, rank, reason } => {
                write!(f, "axes {axes:?} are invalid for rank {rank}: {reason}")
            }
            Error::OutOfBounds {
                op,
                shape,
                starts,
                dims,
            } => write!(
                f,
                "{op}: a block of dims {dims:?} starting at {starts:?} does not lie inside shape {shape:?}"
            ),
            Error::IndexOutOfRange {
                op,
                position,
                index,
                len,
            } => write!(
                f,
                "{op}: index {index} (at position {position}) is out of range for length {len}"
            ),
            Error::InvalidArgument { op, message } => write!(f, "{op}: {message}"),
            Error::EmptyInput { op } => write!(f, "{op}: needs at least one tensor, got none"),
            Error::ShapeOverflow { shape } => {
                write!(f, "shape {shape:?} has more elements than fit in usize")
            }
            Error::Data { location, message } => write!(f, "{location}: {message}"),
            Error::Io { path, message } => write!(f, "{path}: {message}"),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let variant = match self {
            Error::LengthMismatch { .. } => "LengthMismatch",
            Error::ShapeMismatch { .. } => "ShapeMismatch",
            Error::AxisOutOfRange { .. } => "AxisOutOfRange",
            Error::InvalidAxes { .. } => "InvalidAxes",
            Error::OutOfBounds { .. } => "OutOfBounds",
            Error::IndexOutOfRange { .. } => "IndexOutOfRange",
            Error::InvalidArgument { .. } => "InvalidArgument",
            Error::EmptyInput { .. } => "EmptyInput",
            Error::ShapeOverflow { .. } => "ShapeOverflow",
            Error::Data { .. } => "Data",
            Error::Io { .. } => "Io",
        };
        write!(f, "{variant}: {self}")
    }
}

impl std::error::Error for Error {}

impl Error {
    /// The same error, naming `op` as the operation: a check that several operations share
    /// (broadcasting, a row lookup) would otherwise name itself rather than the method the
    /// caller used.
    pub(crate) fn in_op(self, op: &'static str) -> Error {
        match self {
            Error::ShapeMismatch { lhs, rhs, rule, .. } => Error::ShapeMismatch { op, lhs, rhs, rule },
            Error::IndexOutOfRange {
                position, index, len, ..
            } => Error::IndexOutOfRange {
                op,
                position,
                index,
                len,
            },
            other => other,
        }
    }
}

/// The value, or a panic with the error's message. The panic is reported at the line that called
/// the panicking method (each caller up to the public method is `#[track_caller]`), not inside
/// the library: a shape mismatch between run-time dims is a bug in that line.
#[track_caller]
pub(crate) fn or_panic<T>(result: Result<T>) -> T {
    match result {
        Ok(value) => value,
        Err(e) => panic!("{e}"),
    }
}

/// [`or_panic`], with the message prefixed by the method's name (for errors that do not carry
/// it, such as a shape's overflow).
#[track_caller]
pub(crate) fn or_panic_in<T>(method: &str, result: Result<T>) -> T {
    match result {
        Ok(value) => value,
        Err(e) => panic!("{method}: {e}"),
    }
}

/// The crate's `Result`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::Error;

    /// `unwrap()` prints the sentence, after the variant's name.
    #[test]
    fn debug_is_the_variant_and_the_sentence() {
        let err = Error::ShapeMismatch {
            op: "add",
            lhs: vec![8, 4],
            rhs: vec![5, 4],
            rule: "numpy broadcasting",
        };
        assert_eq!(
            format!("{err:?}"),
            "ShapeMismatch: add: shapes [8, 4] and [5, 4] are incompatible (numpy broadcasting)"
        );
        let err = Error::EmptyInput { op: "stack" };
        assert_eq!(format!("{err:#?}"), format!("EmptyInput: {err}"));
        let result: Result<(), Error> = std::hint::black_box(Err(err.clone()));
        let panicked = std::panic::catch_unwind(|| result.unwrap());
        let message = *panicked.unwrap_err().downcast::<String>().unwrap();
        assert!(
            message.ends_with("EmptyInput: stack: needs at least one tensor, got none"),
            "{message}"
        );
    }
}
