//! [`AxisVec`]: one value per axis, held inline up to rank 6 (the typed layer's highest rank).
//!
//! Shapes and strides are made for every view and node, several per operation. As `Vec`s each
//! was an allocation: a 64→128→10 training step made 660 allocations, and makes 423 with these.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::{Deref, DerefMut};

/// Axes held without allocating; higher ranks spill to the heap.
const INLINE: usize = 6;

/// A list of per-axis values that derefs to a slice.
#[derive(Clone)]
pub(crate) enum AxisVec<T: Copy + Default> {
    Inline { len: u8, items: [T; INLINE] },
    Heap(Vec<T>),
}

impl<T: Copy + Default> AxisVec<T> {
    pub(crate) fn from_slice(values: &[T]) -> Self {
        if values.len() <= INLINE {
            let mut items = [T::default(); INLINE];
            items[..values.len()].copy_from_slice(values);
            AxisVec::Inline {
                len: values.len() as u8,
                items,
            }
        } else {
            AxisVec::Heap(values.to_vec())
        }
    }

    /// `len` copies of `value`.
    pub(crate) fn filled(len: usize, value: T) -> Self {
        if len <= INLINE {
            AxisVec::Inline {
                len: len as u8,
                items: [value; INLINE],
            }
        } else {
            AxisVec::Heap(vec![value; len])
        }
    }
}

impl<T: Copy + Default> Deref for AxisVec<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            AxisVec::Inline { len, items } => &items[..*len as usize],
            AxisVec::Heap(v) => v,
        }
    }
}

impl<T: Copy + Default> DerefMut for AxisVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match self {
            AxisVec::Inline { len, items } => &mut items[..*len as usize],
            AxisVec::Heap(v) => v,
        }
    }
}

impl<T: Copy + Default> FromIterator<T> for AxisVec<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut items = [T::default(); INLINE];
        let mut len = 0;
        let mut iter = iter.into_iter();
        while let Some(x) = iter.next() {
            if len == INLINE {
                let mut heap = items.to_vec();
                heap.push(x);
                heap.extend(iter);
                return AxisVec::Heap(heap);
            }
            items[len] = x;
            len += 1;
        }
        AxisVec::Inline {
            len: len as u8,
            items,
        }
    }
}

impl<'a, T: Copy + Default> IntoIterator for &'a AxisVec<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<T: Copy + Default + PartialEq> PartialEq for AxisVec<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: Copy + Default + Eq> Eq for AxisVec<T> {}

impl<T: Copy + Default + Hash> Hash for AxisVec<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (**self).hash(state);
    }
}

impl<T: Copy + Default + fmt::Debug> fmt::Debug for AxisVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_and_spilled_lists_behave_as_slices() {
        for len in 0..=9 {
            let values: Vec<usize> = (10..10 + len).collect();
            let a = AxisVec::from_slice(&values);
            let b: AxisVec<usize> = values.iter().copied().collect();
            assert_eq!(&*a, values.as_slice());
            assert_eq!(&*b, values.as_slice());
            assert_eq!(a, b);
            assert_eq!(matches!(a, AxisVec::Heap(_)), len > INLINE);
            assert_eq!(matches!(b, AxisVec::Heap(_)), len > INLINE);
            assert_eq!(&*AxisVec::filled(len, 7usize), vec![7; len].as_slice());
        }
        let mut m = AxisVec::from_slice(&[1, 2, 3]);
        m[1] = 5;
        assert_eq!(format!("{m:?}"), "[1, 5, 3]");
    }
}
