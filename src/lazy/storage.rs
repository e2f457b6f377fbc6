//! The values of a realized node: a length and an allocation like a `Vec<f32>`'s, but starting on
//! a cache line. A 16-lane load or store that straddles two cache lines costs about twice one
//! that does not, and a `Vec<f32>` is only 16-byte aligned (a large one, which glibc maps
//! separately, sits 16 bytes past a page: every 16-lane load over it straddles).

use std::alloc::{Layout, alloc, dealloc};
use std::fmt;
use std::mem::MaybeUninit;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// Where the values start: on a cache line.
const LINE: usize = 64;
/// The alignment the allocation itself is asked for: `malloc`'s own, which the system allocator
/// serves on its fast path. Asked for 64-byte alignment, it called `posix_memalign`, 3.8 % of a
/// small training step (whose outputs are too small to pool). The values start at the first
/// line boundary in it, so it holds `LINE - HEAP_ALIGN` bytes more than they need.
const HEAP_ALIGN: usize = 16;

/// Owned, contiguous `f32` values with room for `capacity()`, starting on a cache line;
/// dereferences to the values.
pub(crate) struct Storage {
    /// The first value, on a cache line, `skip` bytes into the allocation.
    ptr: NonNull<f32>,
    len: usize,
    cap: usize,
    skip: usize,
}

/// The allocation of room for `cap` values, if its size fits in `isize`.
fn allocation(cap: usize) -> Option<Layout> {
    let bytes = cap
        .checked_mul(size_of::<f32>())?
        .checked_add(LINE - HEAP_ALIGN)?;
    Layout::from_size_align(bytes, HEAP_ALIGN).ok()
}

// SAFETY: `Storage` owns its allocation as a `Vec<f32>` does; `&Storage` gives only shared
// access to the values.
unsafe impl Send for Storage {}
// SAFETY: as above.
unsafe impl Sync for Storage {}

/// Why room for some values could not be had.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum AllocFailure {
    /// Their size in bytes does not fit in `isize`.
    TooLarge,
    /// The allocator had no room.
    OutOfMemory,
}

impl fmt::Display for AllocFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AllocFailure::TooLarge => "more than isize::MAX bytes",
            AllocFailure::OutOfMemory => "out of memory",
        })
    }
}

impl Storage {
    /// No values, with room for `cap` starting on a cache line.
    ///
    /// # Panics
    /// If the allocation fails or its size overflows, naming the size: a caller can catch it,
    /// where `Vec`'s allocation failure aborts the process.
    pub(crate) fn with_capacity(cap: usize) -> Storage {
        Storage::try_with_capacity(cap).unwrap_or_else(|failure| {
            let bytes = cap as u128 * size_of::<f32>() as u128;
            panic!("cannot allocate {cap} elements ({bytes} bytes): {failure}")
        })
    }

    /// [`Storage::with_capacity`], or why not.
    pub(crate) fn try_with_capacity(cap: usize) -> Result<Storage, AllocFailure> {
        if cap == 0 {
            return Ok(Storage {
                // No allocation: a non-null address on a line, as a `Vec`'s is aligned.
                ptr: NonNull::new(std::ptr::without_provenance_mut(LINE)).expect("not null"),
                len: 0,
                cap: 0,
                skip: 0,
            });
        }
        let layout = allocation(cap).ok_or(AllocFailure::TooLarge)?;
        // SAFETY: the layout's size is not zero.
        let start = unsafe { alloc(layout) };
        if start.is_null() {
            return Err(AllocFailure::OutOfMemory);
        }
        // The allocator returns at least `HEAP_ALIGN`-aligned memory, so this is a multiple of
        // it below `LINE`.
        let skip = (LINE - start.addr() % LINE) % LINE;
        debug_assert!(skip <= LINE - HEAP_ALIGN);
        // SAFETY: `skip` is at most `LINE - HEAP_ALIGN` bytes, which the allocation holds
        // beyond the values' `cap · 4`; the result is not null, being past a non-null start.
        let ptr = unsafe { NonNull::new_unchecked(start.add(skip).cast::<f32>()) };
        Ok(Storage {
            ptr,
            len: 0,
            cap,
            skip,
        })
    }

    /// A copy of `values`.
    pub(crate) fn from_slice(values: &[f32]) -> Storage {
        let mut storage = Storage::with_capacity(values.len());
        storage.extend_from_slice(values);
        storage
    }

    /// `len` copies of `value`.
    pub(crate) fn filled(len: usize, value: f32) -> Storage {
        let mut storage = Storage::with_capacity(len);
        storage.fill_to(len, value);
        storage
    }

    /// Values the allocation has room for.
    pub(crate) fn capacity(&self) -> usize {
        self.cap
    }

    /// Forgets the values, keeping the allocation.
    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }

    /// The room past the values, for writing before [`Storage::set_len`].
    pub(crate) fn spare_capacity_mut(&mut self) -> &mut [MaybeUninit<f32>] {
        // SAFETY: values `len..cap` lie within the allocation, which nothing else borrows.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(self.len).cast(), self.cap - self.len) }
    }

    /// Sets the number of values.
    ///
    /// # Safety
    /// `len <= capacity()`, and the values up to `len` are initialized.
    pub(crate) unsafe fn set_len(&mut self, len: usize) {
        debug_assert!(len <= self.cap, "length {len} past capacity {}", self.cap);
        self.len = len;
    }

    /// Appends `values`.
    ///
    /// # Panics
    /// If they do not fit in the capacity.
    pub(crate) fn extend_from_slice(&mut self, values: &[f32]) {
        let (len, n) = (self.len, values.len());
        assert!(
            n <= self.cap - len,
            "appending {n} to {len} of {} values",
            self.cap
        );
        // SAFETY: values `len..len + n` lie within the capacity, in another allocation than
        // `values` (which `&mut self` keeps from borrowing this one).
        unsafe {
            std::ptr::copy_nonoverlapping(values.as_ptr(), self.ptr.as_ptr().add(len), n);
            self.set_len(len + n);
        }
    }

    /// Extends the values with copies of `value` up to `len`.
    ///
    /// # Panics
    /// If `len` is past the capacity.
    pub(crate) fn fill_to(&mut self, len: usize, value: f32) {
        let from = self.len;
        assert!(
            from <= len && len <= self.cap,
            "filling {from}..{len} of {} values",
            self.cap
        );
        self.spare_capacity_mut()[..len - from].fill(MaybeUninit::new(value));
        // SAFETY: values `from..len` were just written, and `len <= cap`.
        unsafe { self.set_len(len) };
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        if self.cap > 0 {
            let layout = allocation(self.cap).expect("allocated with this layout");
            // SAFETY: allocated in `try_with_capacity` with this layout, `skip` bytes before
            // `ptr`.
            unsafe { dealloc(self.ptr.as_ptr().cast::<u8>().sub(self.skip), layout) };
        }
    }
}

impl Deref for Storage {
    type Target = [f32];

    fn deref(&self) -> &[f32] {
        // SAFETY: the first `len` values are initialized (`set_len`'s contract).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for Storage {
    fn deref_mut(&mut self) -> &mut [f32] {
        // SAFETY: as in `deref`, and the borrow is unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Clone for Storage {
    fn clone(&self) -> Storage {
        Storage::from_slice(self)
    }
}

impl fmt::Debug for Storage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl FromIterator<f32> for Storage {
    /// Exact for iterators whose size hint gives their length (that length is trusted: values
    /// past it are not taken); others go through a `Vec` and one copy.
    fn from_iter<I: IntoIterator<Item = f32>>(values: I) -> Storage {
        let values = values.into_iter();
        let (low, high) = values.size_hint();
        if high != Some(low) {
            return Storage::from_slice(&values.collect::<Vec<f32>>());
        }
        let mut storage = Storage::with_capacity(low);
        for value in values.take(low) {
            // SAFETY: fewer than `low` values are written so far, and there is room for `low`;
            // each is counted as it is written, so a panicking iterator leaves no gap.
            unsafe { storage.ptr.as_ptr().add(storage.len).write(value) };
            storage.len += 1;
        }
        storage
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on_a_line(storage: &Storage) -> bool {
        (storage.as_ptr() as usize).is_multiple_of(LINE)
    }

    #[test]
    fn every_storage_starts_on_a_cache_line() {
        for len in [0, 1, 15, 16, 17, 1000, 40_000] {
            let filled = Storage::filled(len, 2.5);
            assert!(on_a_line(&filled) && filled.len() == len);
            assert!(filled.iter().all(|&v| v == 2.5));
            let copy = filled.clone();
            assert!(on_a_line(&copy) && *copy == *filled);
            let collected: Storage = (0..len).map(|i| i as f32).collect();
            assert!(on_a_line(&collected) && collected.len() == len);
            assert!(collected.iter().enumerate().all(|(i, &v)| v == i as f32));
        }
        // Of unknown length: filtered.
        let odd: Storage = (0..100).map(|i| i as f32).filter(|v| v % 2.0 == 1.0).collect();
        assert!(on_a_line(&odd) && odd.len() == 50 && odd[49] == 99.0);
    }

    #[test]
    fn every_buffer_made_through_the_api_starts_on_a_cache_line() {
        use crate::lazy::{LazyBuffer, UnaryOp};
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        // A caller's vector is 16-byte aligned at best; its copy is not.
        let x = LazyBuffer::from_vec((0..4099).map(|i| i as f32).collect(), &[4099]).unwrap();
        let a = LazyBuffer::rand_uniform(&[300, 200], -1.0, 1.0, &mut rng);
        let b = LazyBuffer::rand_normal(&[200, 77], 0.0, 1.0, &mut rng);
        let made = [
            x.unary(UnaryOp::Exp),
            a.matmul(&b),
            a.sum(&[0]),
            a.permute(&[1, 0]).contiguous(),
            a.mul(&a).add(&a),
            x,
            a,
            b,
        ];
        for buffer in &made {
            buffer.realize();
            let storage = buffer.node.buffer().expect("realized");
            assert!(on_a_line(&storage), "{:?}", buffer.shape());
        }
    }

    #[test]
    fn writing_past_the_values_then_setting_the_length() {
        let mut storage = Storage::with_capacity(10);
        assert!(storage.is_empty() && storage.capacity() == 10);
        for (i, slot) in storage.spare_capacity_mut()[..4].iter_mut().enumerate() {
            slot.write(i as f32);
        }
        // SAFETY: four values written.
        unsafe { storage.set_len(4) };
        assert_eq!(*storage, [0.0, 1.0, 2.0, 3.0]);
        assert_eq!(storage.spare_capacity_mut().len(), 6);
        storage.fill_to(6, 7.0);
        storage[0] = -1.0;
        assert_eq!(*storage, [-1.0, 1.0, 2.0, 3.0, 7.0, 7.0]);
        storage.clear();
        assert!(storage.is_empty() && storage.capacity() == 10);
    }

    #[test]
    fn appending_within_the_capacity() {
        let mut storage = Storage::with_capacity(5);
        storage.extend_from_slice(&[1.0, 2.0]);
        storage.extend_from_slice(&[]);
        storage.extend_from_slice(&[3.0, 4.0, 5.0]);
        assert_eq!(*storage, [1.0, 2.0, 3.0, 4.0, 5.0]);
        let past = std::panic::catch_unwind(move || storage.extend_from_slice(&[6.0]));
        assert!(past.is_err(), "appending past the capacity");
    }

    #[test]
    fn a_failed_reservation_says_why() {
        assert_eq!(
            Storage::try_with_capacity(usize::MAX / 2).err(),
            Some(AllocFailure::TooLarge)
        );
        // Through `black_box`: an allocation freed unused may be elided, and then "succeeds".
        assert_eq!(
            std::hint::black_box(Storage::try_with_capacity(1 << 60)).err(),
            Some(AllocFailure::OutOfMemory)
        );
        assert_eq!(Storage::try_with_capacity(0).map(|s| s.capacity()), Ok(0));
    }

    #[test]
    #[should_panic(expected = "filling 0..11 of 10 values")]
    fn filling_past_the_capacity_is_a_panic() {
        Storage::with_capacity(10).fill_to(11, 0.0);
    }

    #[test]
    fn an_impossible_size_is_a_panic_naming_it() {
        let message = |cap: usize| {
            let panic = std::panic::catch_unwind(|| Storage::with_capacity(cap)).unwrap_err();
            panic.downcast_ref::<String>().cloned().unwrap_or_default()
        };
        assert!(message(usize::MAX / 2).contains("more than isize::MAX bytes"));
        assert!(message(1 << 60).contains("4611686018427387904 bytes"));
    }
}
