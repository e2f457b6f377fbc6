//! Raw `matrixmultiply::sgemm` into a fresh row-major output: the limit the benches compare
//! products against.

/// `a` (m×k) times `b` (k×n), both row-major, into a new m×n row-major buffer.
pub fn sgemm(m: usize, k: usize, n: usize, a: &[f32], b: &[f32]) -> Vec<f32> {
    assert!(a.len() >= m * k && b.len() >= k * n, "operands too short");
    let mut out = vec![0.0f32; m * n];
    // SAFETY: a is m×k, b is k×n (checked above) and out m×n, all row-major.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            k as isize,
            1,
            b.as_ptr(),
            n as isize,
            1,
            0.0,
            out.as_mut_ptr(),
            n as isize,
            1,
        )
    };
    out
}
