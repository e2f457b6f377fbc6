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
use std::sync::Arc;

/// At most this many freed output buffers are kept per thread for reuse...
const POOL_BUFFERS: usize = 16;
/// ...holding at most this many bytes, so the pool cannot hold memory without bound.
const POOL_BYTES: usize = 64 << 20;

thread_local! {
    /// Buffers of realized nodes dropped on this thread, for the next kernel outputs. A training
    /// step or a repeated computation frees and needs the same sizes each time; reusing them
    /// avoids the page faults of fresh large allocations.
    static POOL: RefCell<Vec<Vec<f32>>> = const { RefCell::new(Vec::new()) };
}

/// Takes back a dropped node's buffer if nothing else holds it.
pub(crate) fn recycle(buf: Arc<Vec<f32>>) {
    let Ok(buf) = Arc::try_unwrap(buf) else { return };
    if buf.capacity() < 1024 {
        return; // small buffers are cheap to allocate
    }
    // During thread teardown the pool may be gone; then the buffer is simply freed.
    let _ = POOL.try_with(|pool| {
        let mut pool = pool.borrow_mut();
        let held: usize = pool.iter().map(|b| b.capacity() * size_of::<f32>()).sum();
        if pool.len() < POOL_BUFFERS && held + buf.capacity() * size_of::<f32>() <= POOL_BYTES {
            pool.push(buf);
        }
    });
}

/// An empty buffer with room for `len` values: a pooled one of a close size if there is one,
/// else a fresh allocation.
pub(crate) fn output(len: usize) -> Vec<f32> {
    let reused = POOL
        .try_with(|pool| {
            let mut pool = pool.borrow_mut();
            let fits = pool
                .iter()
                .position(|b| b.capacity() >= len && b.capacity() <= 2 * len);
            fits.map(|i| pool.swap_remove(i))
        })
        .ok()
        .flatten();
    match reused {
        Some(mut buf) => {
            buf.clear();
            buf
        }
        None => with_capacity(len),
    }
}

/// `len` copies of `value`, in a pooled or fresh buffer.
pub(crate) fn output_filled(len: usize, value: f32) -> Vec<f32> {
    let mut buf = output(len);
    buf.resize(len, value);
    buf
}
