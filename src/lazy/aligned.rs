//! Block buffers aligned to a cache line. A 64-byte vector load or store that straddles two
//! lines costs about twice one that does not, and `Vec<f32>` is only 16-byte aligned: a kernel's
//! per-op loops over block buffers ran up to twice as slow as over aligned ones.

use std::mem::MaybeUninit;

/// `N` values starting on a cache line, uninitialized: a product's packed panel of B on the
/// stack, whose rows (multiples of 16 values) its tiles load as whole vectors. A plain
/// `[MaybeUninit<f32>; N]` is only 4-byte aligned: where the stack put it decided whether every
/// such load straddled two lines or none did, and in most runs every one did.
#[repr(C, align(64))]
pub(crate) struct StackPanel<const N: usize>([MaybeUninit<f32>; N]);

impl<const N: usize> StackPanel<N> {
    pub(crate) fn new() -> Self {
        StackPanel([MaybeUninit::uninit(); N])
    }

    /// The first value's address, for writing and then reading back what was written.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut f32 {
        self.0.as_mut_ptr().cast()
    }
}

/// One cache line of values: the unit an [`AlignedBlock`] is allocated in.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Line([f32; 16]);

/// A buffer of `len` values starting on a cache-line boundary.
#[derive(Default)]
pub(crate) struct AlignedBlock {
    lines: Vec<Line>,
    len: usize,
}

impl AlignedBlock {
    /// Makes this `len` values long for a writer that sets all of them: the values it keeps are
    /// whatever an earlier user left (initialized, but meaningless), and only lines never held
    /// before are zeroed. A kernel takes a few block buffers per run, and zeroing a block's 4 KiB
    /// each was measurable on small kernels; so was zeroing again the lines a shorter use had cut
    /// off (twice a 64→128→10 training step, as pooled blocks alternate between lengths).
    pub(crate) fn set_len_for_writing(&mut self, len: usize) {
        let lines = len.div_ceil(16);
        if self.lines.len() < lines {
            self.lines.resize(lines, Line::default());
        }
        self.len = len;
    }

    /// Whether it holds an allocation worth keeping for reuse: one of at most `values` values
    /// (a larger one would be held for a rare kernel).
    pub(crate) fn is_worth_keeping(&self, values: usize) -> bool {
        (1..=values.div_ceil(16)).contains(&self.lines.capacity())
    }

    pub(crate) fn values(&self) -> &[f32] {
        // SAFETY: `Line` is 16 `f32`s with no padding (`repr(C)`, size 64), so the lines are
        // `16 · lines.len() >= len` contiguous initialized values.
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr().cast(), self.len) }
    }

    pub(crate) fn values_mut(&mut self) -> &mut [f32] {
        // SAFETY: as in `values`, and the borrow is unique.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr().cast(), self.len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_start_on_a_cache_line_and_keep_their_length() {
        let mut block = AlignedBlock::default();
        for len in [0, 1, 15, 16, 17, 512, 3, 600] {
            block.set_len_for_writing(len);
            assert_eq!(block.values().len(), len);
            assert_eq!(block.values().as_ptr() as usize % 64, 0);
            block.values_mut().fill(len as f32);
            assert!(block.values().iter().all(|&v| v == len as f32));
        }
        assert!(block.is_worth_keeping(1024));
        // A block of 600 values (38 lines) is kept for blocks of up to 608 values, not 592; an
        // empty one never.
        let mut block = AlignedBlock::default();
        block.set_len_for_writing(600);
        assert!(block.is_worth_keeping(608));
        assert!(!block.is_worth_keeping(592));
        assert!(!AlignedBlock::default().is_worth_keeping(600));
    }

    #[test]
    fn lines_a_shorter_use_cut_off_are_not_zeroed_again() {
        let mut block = AlignedBlock::default();
        block.set_len_for_writing(608);
        block.values_mut().fill(7.0);
        block.set_len_for_writing(16);
        block.set_len_for_writing(608);
        assert!(block.values().iter().all(|&v| v == 7.0));
        // Lines never held before are zeroed.
        block.set_len_for_writing(640);
        assert_eq!(block.values()[600..608], [7.0; 8]);
        assert_eq!(block.values()[608..], [0.0; 32]);
    }

    #[test]
    fn stack_panels_start_on_a_cache_line() {
        let mut panels = [StackPanel::<17>::new(), StackPanel::<17>::new()];
        for panel in &mut panels {
            assert_eq!(panel.as_mut_ptr() as usize % 64, 0);
        }
    }
}
