//! Data for the example and for 8×8 digit datasets, independent of tensors: [`Dataset`] holds
//! 64-pixel images with labels 0–9, and the CSV functions read and write that layout (other data
//! needs its own reader; [`Batcher`] serves any dataset by index).
//!
//! - [`toy_digits`] and [`toy_digits_split`]: a seeded toy dataset of 8×8 grayscale digit images
//!   in 10 classes, with train and test drawn independently and no image shared between them.
//! - [`read_csv`], [`parse_csv`] and [`write_csv`]: the same 64-feature layout as CSV
//!   (`label,p0,…,p63`), rejecting bad input whole with `file:line` in the error;
//!   [`read_csv_with`] and [`parse_csv_with`] read other layouts of 8×8 digits ([`CsvLayout`]:
//!   the label last, pixels in another range), such as UCI's `optdigits` files.
//! - [`Batcher`]: shuffled mini-batches of indices, and [`Dataset::gather`] to fetch them.
//!
//! ```
//! use teenygrad::data::{toy_digits_split, Batcher, Remainder, FEATURES};
//! use teenygrad::rand::{SeedableRng, rngs::StdRng};
//!
//! let digits = toy_digits_split(0, 1000, 200);
//! let mut rng = StdRng::seed_from_u64(0);
//! for batch in Batcher::new(digits.train.len(), 64, Remainder::Drop, &mut rng) {
//!     let (images, labels) = digits.train.gather(&batch);
//!     assert_eq!((images.len(), labels.len()), (64 * FEATURES, 64));
//! }
//! ```

mod batch;
mod csv;
mod digits;

pub use batch::{Batcher, Remainder};
pub use csv::{CsvLayout, parse_csv, parse_csv_bytes, parse_csv_with, read_csv, read_csv_with, write_csv};
pub use digits::{
    CLASSES, Dataset, FEATURES, IMAGE_SIDE, ToyDigits, image_to_ascii, render_digit, toy_digits,
    toy_digits_split,
};
