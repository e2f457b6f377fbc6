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
