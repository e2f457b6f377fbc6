//! Batched matrix product on `matrixmultiply::sgemm`, reading both operands through their views'
//! strides (so a transposed operand costs no copy).

use super::view::View;
use crate::shape::runtime::numel;

/// `a [.., m, k] x b [.., k, n]` into a fresh row-major `[.., m, n]`. Neither view may be masked
/// (the scheduler copies padded operands first).
pub(crate) fn run(a: &[f32], a_view: &View, b: &[f32], b_view: &View) -> Vec<f32> {
    let (sa, sb) = (a_view.shape(), b_view.shape());
    let rank = sa.len();
    let (m, k, n) = (sa[rank - 2], sa[rank - 1], sb[rank - 1]);
    let batch_shape = &sa[..rank - 2];
    let batches = numel(batch_shape);
    // The graph checked the element count when the product was recorded.
    let len = batches
        .checked_mul(m)
        .and_then(|bm| bm.checked_mul(n))
        .expect("matmul output size fits usize");
    let mut out = super::alloc::output_filled(len, 0.0);
    if m == 0 || n == 0 || k == 0 || batches == 0 {
        return out; // an empty sum is 0
    }
    assert!(
        a_view.mask().is_none() && b_view.mask().is_none(),
        "matmul operands must not be padded"
    );
    check_in_bounds(a, a_view);
    check_in_bounds(b, b_view);
    let (ast, bst) = (a_view.strides(), b_view.strides());
    let mut index = vec![0usize; batch_shape.len()];
    for batch in 0..batches {
        let offset = |view: &View, strides: &[isize]| {
            view.offset()
                + index
                    .iter()
                    .zip(strides)
                    .map(|(&i, &s)| i as isize * s)
                    .sum::<isize>()
        };
        let (a_off, b_off) = (offset(a_view, ast), offset(b_view, bst));
        let c = &mut out[batch * m * n..(batch + 1) * m * n];
        // SAFETY: every element sgemm reads lies within the view's extent, which was checked
        // against the buffer's length above; `c` is an exclusive row-major m×n slice.
        unsafe {
            matrixmultiply::sgemm(
                m,
                k,
                n,
                1.0,
                a.as_ptr().offset(a_off),
                ast[rank - 2],
                ast[rank - 1],
                b.as_ptr().offset(b_off),
                bst[rank - 2],
                bst[rank - 1],
                0.0,
                c.as_mut_ptr(),
                n as isize,
                1,
            );
        }
        for d in (0..index.len()).rev() {
            index[d] += 1;
            if index[d] < batch_shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
    out
}

fn check_in_bounds(buf: &[f32], view: &View) {
    if let Some((lo, hi)) = view.extent() {
        assert!(
            lo >= 0 && hi as usize <= buf.len(),
            "internal error: view {view:?} reaches outside a buffer of {} elements",
            buf.len()
        );
    }
}
