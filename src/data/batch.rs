//! Shuffled mini-batches of sample indices.

use rand::Rng;

use super::digits::{Dataset, FEATURES, fisher_yates};

/// What a [`Batcher`] does with the last batch when the length is not a multiple of the batch size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Remainder {
    /// Yield the short last batch, so every index appears once per epoch.
    Keep,
    /// Drop the short last batch, so every batch has exactly `batch_size` indices.
    Drop,
}

/// One epoch of index batches over `0..len`, in an order shuffled by the caller's rng.
///
/// Build a new `Batcher` for each epoch; successive calls with the same rng give different orders,
/// and the same rng state gives the same order.
///
/// ```
/// use teenygrad::data::{Batcher, Remainder};
/// use teenygrad::rand::{SeedableRng, rngs::StdRng};
///
/// let mut rng = StdRng::seed_from_u64(0);
/// let batches: Vec<Vec<usize>> = Batcher::new(10, 4, Remainder::Keep, &mut rng).collect();
/// assert_eq!(batches.iter().map(Vec::len).collect::<Vec<_>>(), [4, 4, 2]);
/// let mut all: Vec<usize> = batches.concat();
/// all.sort();
/// assert_eq!(all, (0..10).collect::<Vec<_>>());
///
/// let dropped = Batcher::new(10, 4, Remainder::Drop, &mut rng);
/// assert_eq!(dropped.len(), 2);
/// ```
#[derive(Clone, Debug)]
pub struct Batcher {
    order: Vec<usize>,
    batch_size: usize,
    remainder: Remainder,
    position: usize,
}

impl Batcher {
    /// Shuffles `0..len` (Fisher–Yates, drawing from `rng`) and prepares batches of `batch_size`.
    ///
    /// A `len` of 0 gives no batches.
    ///
    /// # Panics
    ///
    /// If `batch_size` is 0, with the message `"Batcher::new: batch_size must be at least 1"`.
    ///
    /// ```should_panic
    /// use teenygrad::data::{Batcher, Remainder};
    /// use teenygrad::rand::{SeedableRng, rngs::StdRng};
    ///
    /// Batcher::new(10, 0, Remainder::Keep, &mut StdRng::seed_from_u64(0)); // panics
    /// ```
    #[track_caller]
    pub fn new<R: Rng + ?Sized>(len: usize, batch_size: usize, remainder: Remainder, rng: &mut R) -> Self {
        assert!(batch_size > 0, "Batcher::new: batch_size must be at least 1");
        let mut order: Vec<usize> = (0..len).collect();
        fisher_yates(&mut order, rng);
        Batcher {
            order,
            batch_size,
            remainder,
            position: 0,
        }
    }

    /// The batch size this batcher was built with.
    ///
    /// ```
    /// use teenygrad::data::{Batcher, Remainder};
    /// use teenygrad::rand::{SeedableRng, rngs::StdRng};
    ///
    /// let batcher = Batcher::new(10, 3, Remainder::Keep, &mut StdRng::seed_from_u64(0));
    /// assert_eq!(batcher.batch_size(), 3);
    /// ```
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    fn remaining(&self) -> usize {
        let left = self.order.len() - self.position;
        match self.remainder {
            Remainder::Keep => left.div_ceil(self.batch_size),
            Remainder::Drop => left / self.batch_size,
        }
    }
}

impl Iterator for Batcher {
    type Item = Vec<usize>;

    fn next(&mut self) -> Option<Vec<usize>> {
        if self.remaining() == 0 {
            return None;
        }
        let end = (self.position + self.batch_size).min(self.order.len());
        let batch = self.order[self.position..end].to_vec();
        self.position = end;
        Some(batch)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.remaining();
        (n, Some(n))
    }
}

impl ExactSizeIterator for Batcher {}

impl std::iter::FusedIterator for Batcher {}

impl Dataset {
    /// The samples at `indices`: their images as one row-major `Vec` (`indices.len() * 64`
    /// values, for a `[batch, 64]` tensor) and their labels as class indices.
    ///
    /// # Panics
    ///
    /// If an index is not below `self.len()`, or `images` and `labels` differ in length (both
    /// are public fields).
    ///
    /// ```
    /// use teenygrad::data::{Dataset, FEATURES};
    ///
    /// let data = Dataset { images: vec![[0.0; FEATURES], [1.0; FEATURES]], labels: vec![4, 9] };
    /// let (images, labels) = data.gather(&[1, 0, 1]);
    /// assert_eq!(labels, vec![9, 4, 9]);
    /// assert_eq!(images.len(), 3 * FEATURES);
    /// assert_eq!(images[0], 1.0);
    /// assert_eq!(images[FEATURES], 0.0);
    /// ```
    #[track_caller]
    pub fn gather(&self, indices: &[usize]) -> (Vec<f32>, Vec<usize>) {
        let (images, labels) = (self.images.len(), self.labels.len());
        assert!(
            images == labels,
            "Dataset::gather: the dataset has {images} images but {labels} labels"
        );
        let mut images = Vec::with_capacity(indices.len() * FEATURES);
        let mut labels = Vec::with_capacity(indices.len());
        for &i in indices {
            assert!(
                i < self.len(),
                "Dataset::gather: index {i} is out of range for a dataset of {} samples",
                self.len()
            );
            images.extend_from_slice(&self.images[i]);
            labels.push(usize::from(self.labels[i]));
        }
        (images, labels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn size_hint_counts_down() {
        let mut rng = StdRng::seed_from_u64(0);
        let mut b = Batcher::new(7, 3, Remainder::Keep, &mut rng);
        assert_eq!(b.len(), 3);
        b.next();
        assert_eq!(b.len(), 2);
        b.next();
        b.next();
        assert_eq!(b.len(), 0);
        assert_eq!(b.next(), None);
        assert_eq!(b.next(), None);
    }

    #[test]
    fn empty_and_oversized() {
        let mut rng = StdRng::seed_from_u64(0);
        assert_eq!(Batcher::new(0, 3, Remainder::Keep, &mut rng).count(), 0);
        assert_eq!(Batcher::new(2, 3, Remainder::Drop, &mut rng).count(), 0);
        assert_eq!(Batcher::new(2, 3, Remainder::Keep, &mut rng).count(), 1);
    }
}
