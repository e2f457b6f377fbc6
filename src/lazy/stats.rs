//! What the engine did: counters of kernels run, operations fused, bytes written and freshly
//! allocated and time spent realizing, kept per thread (realization runs on the calling thread), and an optional trace.
//!
//! Set `TEENYGRAD_DEBUG=1` to print one line per kernel to stderr: its kind, operations, shape and
//! time (and for a matrix product, which code computed it).

use std::cell::Cell;
use std::sync::OnceLock;
use std::time::Duration;

/// A snapshot of the counters of the current thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Kernels run (fused elementwise/reduce passes, matmuls, copies).
    pub kernels: u64,
    /// Primitive operations executed inside kernels (an 8-op chain into a sum counts 9).
    pub ops_fused: u64,
    /// Bytes of output buffers kernels produced (freshly allocated, or reused from buffers that
    /// dropped nodes gave back), and of copies made outside kernels: a padded product operand's,
    /// and a parameter's when an optimizer step finds its buffer still read by a pending graph.
    pub bytes_allocated: u64,
    /// Bytes of those buffers and copies, and of kernels' large scratch copies (a transposed
    /// operand, a product's packed panels), that no pooled buffer served: freshly allocated (a
    /// padded operand's and a parameter's copy always are). After a loop's first steps, 0 for
    /// outputs of 1024 values or more, which dropped nodes give back for reuse; smaller ones are
    /// always fresh (cheap to allocate).
    pub bytes_fresh: u64,
    /// Wall time spent realizing.
    pub realize_time: Duration,
    /// Jobs split across threads: large elementwise kernels, matrix products and optimizer
    /// updates (`TEENYGRAD_THREADS` sets the thread count; `1` turns splitting off).
    pub parallel_jobs: u64,
    /// Realizations that reused the kernels planned for an earlier graph of the same structure
    /// (a training loop's every step after the first).
    pub schedules_reused: u64,
}

thread_local! {
    static STATS: Cell<Stats> = const { Cell::new(Stats {
        kernels: 0,
        ops_fused: 0,
        bytes_allocated: 0,
        bytes_fresh: 0,
        realize_time: Duration::ZERO,
        parallel_jobs: 0,
        schedules_reused: 0,
    }) };
}

/// The counters of the current thread since the last [`reset`].
pub fn get() -> Stats {
    STATS.with(Cell::get)
}

/// Zeroes the counters of the current thread.
pub fn reset() {
    STATS.with(|s| s.set(Stats::default()));
}

pub(crate) fn update(f: impl FnOnce(&mut Stats)) {
    STATS.with(|cell| {
        let mut stats = cell.get();
        f(&mut stats);
        cell.set(stats);
    });
}

/// Counts a copy of `values` values made outside the pool (always fresh memory).
pub(crate) fn fresh_copy(values: usize) {
    let bytes = (values * size_of::<f32>()) as u64;
    update(|s| {
        s.bytes_allocated += bytes;
        s.bytes_fresh += bytes;
    });
}

/// True when `TEENYGRAD_DEBUG` is set to anything but `0` or empty.
pub(crate) fn tracing() -> bool {
    static TRACE: OnceLock<bool> = OnceLock::new();
    *TRACE.get_or_init(|| std::env::var("TEENYGRAD_DEBUG").is_ok_and(|v| !v.is_empty() && v != "0"))
}
