//! Output buffers. An allocation that cannot succeed (a huge shape) is a panic naming its size,
//! which a caller can catch, instead of the process abort `vec!` gives.

/// An empty `Vec` with room for exactly `len` elements.
pub(crate) fn with_capacity<T>(len: usize) -> Vec<T> {
    let mut v = Vec::new();
    if let Err(e) = v.try_reserve_exact(len) {
        let bytes = len
            .checked_mul(size_of::<T>())
            .map_or("more than usize::MAX".to_string(), |b| b.to_string());
        panic!("cannot allocate {len} elements ({bytes} bytes): {e}");
    }
    v
}

/// `len` copies of `value`.
pub(crate) fn filled<T: Clone>(len: usize, value: T) -> Vec<T> {
    let mut v = with_capacity(len);
    v.resize(len, value);
    v
}

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;

use super::storage::Storage;

/// At most this many freed output buffers are kept per thread for reuse...
const POOL_BUFFERS: usize = 16;
/// ...holding at most this many bytes, so the pool cannot hold memory without bound.
const POOL_BYTES: usize = 64 << 20;

thread_local! {
    /// Buffers of realized nodes dropped on this thread, oldest first, for the next kernel
    /// outputs. A training step or a repeated computation frees and needs the same sizes each
    /// time; reusing them avoids the page faults of fresh large allocations.
    static POOL: RefCell<VecDeque<Storage>> = const { RefCell::new(VecDeque::new()) };
}

/// The bytes a pooled buffer holds.
fn bytes(buf: &Storage) -> usize {
    buf.capacity() * size_of::<f32>()
}

/// Takes back a dropped node's buffer if nothing else holds it. When the pool is full, the
/// oldest buffers make room: buffers of sizes no longer asked for (those of a setup phase) must
/// not keep a loop's buffers out for good.
pub(crate) fn recycle(buf: Arc<Storage>) {
    if let Ok(buf) = Arc::try_unwrap(buf) {
        keep(buf);
    }
}

/// Takes back a kernel's scratch buffer (see [`recycle`]).
pub(crate) fn keep(buf: Storage) {
    if buf.capacity() < 1024 || bytes(&buf) > POOL_BYTES {
        return; // small buffers are cheap to allocate
    }
    // During thread teardown the pool may be gone; then the buffer is simply freed.
    let _ = POOL.try_with(|pool| {
        let mut pool = pool.borrow_mut();
        let mut held: usize = pool.iter().map(bytes).sum::<usize>() + bytes(&buf);
        pool.push_back(buf);
        while pool.len() > POOL_BUFFERS || held > POOL_BYTES {
            held -= pool.pop_front().as_ref().map_or(0, bytes);
        }
    });
}

/// An empty buffer with room for `len` values: the most recently pooled one of a close size if
/// there is one, else a fresh allocation.
pub(crate) fn output(len: usize) -> Storage {
    let reused = POOL
        .try_with(|pool| {
            let mut pool = pool.borrow_mut();
            let fits = (pool.iter()).rposition(|b| b.capacity() >= len && b.capacity() <= 2 * len);
            fits.and_then(|i| pool.remove(i))
        })
        .ok()
        .flatten();
    match reused {
        Some(mut buf) => {
            buf.clear();
            buf
        }
        None => {
            // Counted once allocated: a length too large to allocate panics there, with its reason.
            let buf = Storage::with_capacity(len);
            super::stats::update(|s| s.bytes_fresh += (len * size_of::<f32>()) as u64);
            buf
        }
    }
}

/// `len` copies of `value`, in a pooled or fresh buffer.
pub(crate) fn output_filled(len: usize, value: f32) -> Storage {
    let mut buf = output(len);
    buf.fill_to(len, value);
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pooled_bytes() -> usize {
        POOL.with(|pool| pool.borrow().iter().map(bytes).sum())
    }

    #[test]
    fn new_buffers_push_out_the_oldest() {
        // A setup phase fills the pool with buffers of a size never asked for again...
        for _ in 0..2 * POOL_BUFFERS {
            recycle(Arc::new(Storage::filled(5_000, 0.0)));
        }
        // ...and a loop's buffer still gets in and comes back out.
        let buf = Arc::new(Storage::with_capacity(100_000));
        let ptr = buf.as_ptr();
        recycle(buf);
        let again = output(100_000);
        assert_eq!(again.as_ptr(), ptr);
        // A buffer still shared elsewhere is not taken.
        let shared = Arc::new(Storage::with_capacity(100_000));
        let other = Arc::clone(&shared);
        recycle(shared);
        let fresh = output(100_000);
        assert_ne!(fresh.as_ptr(), other.as_ptr());
    }

    #[test]
    fn the_pool_stays_within_its_bounds() {
        for _ in 0..20 {
            recycle(Arc::new(Storage::with_capacity(2 << 20))); // 8 MiB each
            assert!(pooled_bytes() <= POOL_BYTES);
        }
        assert_eq!(pooled_bytes(), POOL_BYTES, "the newest 8 fill it");
        recycle(Arc::new(Storage::with_capacity(POOL_BYTES / 4 + 1)));
        assert_eq!(
            pooled_bytes(),
            POOL_BYTES,
            "a buffer larger than the pool is not kept"
        );
        for _ in 0..2 * POOL_BUFFERS {
            recycle(Arc::new(Storage::filled(2_000, 0.0)));
        }
        POOL.with(|pool| assert_eq!(pool.borrow().len(), POOL_BUFFERS));
    }
}
