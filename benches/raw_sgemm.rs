//! Raw `matrixmultiply::sgemm` into a fresh row-major output: the limit the benches compare
//! products against; and operands stored by rows or by columns, as the lazy buffer and sgemm
//! each see them.

use rand::Rng;
use teenygrad::lazy::LazyBuffer;

/// A random `rows × cols` matrix (values in [-1, 1)) stored by rows, or by columns and viewed
/// transposed: the lazy buffer's view of it, its stored values, and their (row, column) strides
/// for [`sgemm_strided`].
#[allow(dead_code, reason = "each bench uses the forms it needs")]
pub fn operand(
    rng: &mut impl Rng,
    rows: usize,
    cols: usize,
    by_rows: bool,
) -> (LazyBuffer, Vec<f32>, (isize, isize)) {
    let values: Vec<f32> = (0..rows * cols).map(|_| rng.random_range(-1.0..1.0)).collect();
    let stored = if by_rows { [rows, cols] } else { [cols, rows] };
    let x = LazyBuffer::from_vec(values.clone(), &stored).expect("the shape holds the values");
    match by_rows {
        true => (x, values, (cols as isize, 1)),
        false => (x.permute(&[1, 0]), values, (1, rows as isize)),
    }
}

/// `a` (m×k) times `b` (k×n), both row-major, into a new m×n row-major buffer.
#[allow(dead_code, reason = "each bench uses the forms it needs")]
pub fn sgemm(m: usize, k: usize, n: usize, a: &[f32], b: &[f32]) -> Vec<f32> {
    sgemm_strided((m, k, n), a, (k as isize, 1), b, (n as isize, 1))
}

/// `a` (m×k) times `b` (k×n), each stored row-major or column-major as its (row, column)
/// strides say, into a new m×n row-major buffer.
///
/// # Panics
/// If a stride is not that of a row-major or column-major matrix of its shape.
#[allow(dead_code, reason = "each bench uses the forms it needs")]
pub fn sgemm_strided(
    (m, k, n): (usize, usize, usize),
    a: &[f32],
    a_strides: (isize, isize),
    b: &[f32],
    b_strides: (isize, isize),
) -> Vec<f32> {
    let dense = |(rows, cols), strides| strides == (cols as isize, 1) || strides == (1, rows as isize);
    assert!(
        dense((m, k), a_strides) && dense((k, n), b_strides),
        "operands must be dense"
    );
    assert!(a.len() >= m * k && b.len() >= k * n, "operands too short");
    let mut out = vec![0.0f32; m * n];
    // SAFETY: a is m×k and b is k×n at their strides (both dense and long enough: checked
    // above), out is m×n row-major.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            a_strides.0,
            a_strides.1,
            b.as_ptr(),
            b_strides.0,
            b_strides.1,
            0.0,
            out.as_mut_ptr(),
            n as isize,
            1,
        )
    };
    out
}
