//! Small matrix products computed directly from the operands, without sgemm's packing.
//!
//! For a short inner dimension (a training step's `[32, 10] x [10, 128]`, or a weight gradient
//! over a batch of 32) sgemm spends as long copying both operands into its packed layout as
//! multiplying them. When B's rows are contiguous, a register tile can read them in place: each
//! step along `k` loads four 16-lane vectors of one row of B and broadcasts four values of A.
//!
//! Every element of C is the same chain of fused multiply-adds, in the same order over `k`,
//! starting from `+0.0`, that matrixmultiply's AVX-512 kernel computes for `k` up to its block
//! depth (256). So on the CPUs where this path runs, its results are those of sgemm, bit for bit
//! (the tests check it), and whether a product takes it changes no value.

use std::mem::MaybeUninit;

/// The deepest product taken: with `k` rows of a 64-column tile of B (16 KiB at 64) the tile
/// stays in L1. Measured against sgemm on one thread here: `[64, 64] x [64, 64]` 3.0 against
/// 4.7 µs, `[128, 32] x [32, 64]` 2.4 against 2.9 µs; at `k = 128` sgemm was as fast or faster
/// (`[64, 128] x [128, 128]`: 18.7 against 16.6 µs).
const MAX_K: usize = 64;

/// Lanes of one vector (AVX-512, f32).
const LANES: usize = 16;
/// Vectors of C per tile row.
const VECTORS: usize = 4;
/// Columns of C per tile.
const COLS: usize = VECTORS * LANES;
/// Rows of C per tile: with 4 × 4 vectors, 16 accumulators stay in registers.
const ROWS: usize = 4;
/// The narrowest C taken: a tile one vector wide has only 4 accumulators, too few to hide the
/// latency of the multiply-adds (`[32, 64] x [64, 10]`: 1.7 µs against sgemm's 1.3).
const MIN_COLS: usize = 2 * LANES;

/// A matrix operand: its first element and its (row, column) strides in elements.
#[derive(Clone, Copy)]
pub(super) struct Matrix {
    pub(super) ptr: *const f32,
    pub(super) strides: (isize, isize),
}

impl Matrix {
    pub(super) fn transposed(self) -> Matrix {
        Matrix {
            ptr: self.ptr,
            strides: (self.strides.1, self.strides.0),
        }
    }
}

/// Computes `C = A·B` (`m×k` times `k×n`) into `c` with row stride `n`, if the product is
/// small enough (`k ≤ 64`, fewer than `max_macs` multiply-adds), one of the operands can be
/// read in place (B's rows with `n ≥ 32`, or A's columns with `m ≥ 32`, are contiguous), and
/// the CPU has AVX-512. Returns
/// false, having written nothing, otherwise.
///
/// # Safety
/// `a` and `b` with their strides must address `m×k` and `k×n` matrices within their
/// allocations; `c` must be valid for writing `m·n` elements that alias neither.
pub(super) unsafe fn try_run(
    (m, k, n): (usize, usize, usize),
    a: Matrix,
    b: Matrix,
    c: *mut f32,
    max_macs: usize,
) -> bool {
    if k > MAX_K || m.saturating_mul(k).saturating_mul(n) >= max_macs || !has_avx512() {
        return false;
    }
    let c_strides = (n as isize, 1);
    // SAFETY (both calls): as this function's contract says; the second computes Cᵀ = Bᵀ·Aᵀ,
    // which addresses the same elements.
    if b.strides.1 == 1 && n >= MIN_COLS {
        unsafe { gemm_avx512((m, k, n), a, b, c, c_strides) };
    } else if a.strides.0 == 1 && m >= MIN_COLS {
        let (ct_strides, bt) = ((c_strides.1, c_strides.0), a.transposed());
        unsafe { gemm_avx512((n, k, m), b.transposed(), bt, c, ct_strides) };
    } else {
        return false;
    }
    true
}

#[cfg(target_arch = "x86_64")]
fn has_avx512() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
}

#[cfg(not(target_arch = "x86_64"))]
fn has_avx512() -> bool {
    false
}

/// `C = A·B` by tiles of `ROWS × COLS`, where B's column stride is 1.
///
/// # Safety
/// As for [`try_run`]; `b.strides.1 == 1`, `k ≤ MAX_K`, and the CPU has AVX-512F.
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx512f"))]
unsafe fn gemm_avx512(
    (m, k, n): (usize, usize, usize),
    a: Matrix,
    b: Matrix,
    c: *mut f32,
    c_strides: (isize, isize),
) {
    debug_assert!(b.strides.1 == 1 && k <= MAX_K);
    for j0 in (0..n).step_by(COLS) {
        let cols = COLS.min(n - j0);
        // SAFETY: column j0 lies within B and C.
        let (b_cols, c_cols) = unsafe { (b.ptr.add(j0), c.offset(j0 as isize * c_strides.1)) };
        if cols == COLS {
            let b_cols = Matrix {
                ptr: b_cols,
                strides: b.strides,
            };
            // SAFETY: the column tile has COLS columns of B and C.
            unsafe { column_tile::<VECTORS>((m, k), a, b_cols, c_cols, c_strides, cols) };
        } else {
            // The last, ragged column tile reads B from a zero-padded copy, so the tile loop
            // always loads whole vectors, and computes only as many vectors as it needs.
            let width = cols.next_multiple_of(LANES);
            // Only the first k rows of `width` values are written, and only those are read.
            let mut panel = [MaybeUninit::<f32>::uninit(); MAX_K * COLS];
            for (p, panel_row) in panel.chunks_exact_mut(width).take(k).enumerate() {
                // SAFETY: row p, columns j0..j0 + cols of B lie within it.
                let b_row =
                    unsafe { std::slice::from_raw_parts(b_cols.offset(p as isize * b.strides.0), cols) };
                let (values, padding) = panel_row.split_at_mut(cols);
                values.write_copy_of_slice(b_row);
                padding.fill(MaybeUninit::new(0.0));
            }
            let b_cols = Matrix {
                ptr: panel.as_ptr().cast::<f32>(),
                strides: (width as isize, 1),
            };
            // SAFETY: the panel has k rows of `width` values; C has `cols` columns from j0, and
            // the tile's vectors hold `width`.
            unsafe {
                match cols.div_ceil(LANES) {
                    1 => column_tile::<1>((m, k), a, b_cols, c_cols, c_strides, cols),
                    2 => column_tile::<2>((m, k), a, b_cols, c_cols, c_strides, cols),
                    3 => column_tile::<3>((m, k), a, b_cols, c_cols, c_strides, cols),
                    _ => column_tile::<VECTORS>((m, k), a, b_cols, c_cols, c_strides, cols),
                }
            }
        }
    }
}

/// Every tile of one column tile of C, `V` vectors wide: `ROWS` rows at a time, then the
/// remaining rows.
///
/// # Safety
/// `b` addresses `k` rows of `V·LANES` readable values with column stride 1; `a` addresses `m`
/// rows of `k` values; `c` is valid for writing `m × cols` elements at its strides, `cols ≤
/// V·LANES`.
#[inline(always)]
unsafe fn column_tile<const V: usize>(
    (m, k): (usize, usize),
    a: Matrix,
    b: Matrix,
    c: *mut f32,
    c_strides: (isize, isize),
    cols: usize,
) {
    let mut i0 = 0;
    while i0 < m {
        let rows = ROWS.min(m - i0);
        // SAFETY: row i0 of A and of C lies within them.
        let (a_rows, c_rows) = unsafe {
            (
                a.ptr.offset(i0 as isize * a.strides.0),
                c.offset(i0 as isize * c_strides.0),
            )
        };
        let a_rows = Matrix {
            ptr: a_rows,
            strides: a.strides,
        };
        // SAFETY: the tile's rows lie within A and C (`rows ≤ m - i0`).
        unsafe {
            match rows {
                4 => tile::<4, V>(k, a_rows, b, c_rows, c_strides, cols),
                3 => tile::<3, V>(k, a_rows, b, c_rows, c_strides, cols),
                2 => tile::<2, V>(k, a_rows, b, c_rows, c_strides, cols),
                _ => tile::<1, V>(k, a_rows, b, c_rows, c_strides, cols),
            }
        }
        i0 += rows;
    }
}

/// One tile of C, `R` rows by `V` vectors, of which the first `cols` columns are written. Plain
/// arrays with fused multiply-adds: inlined into the AVX-512 function, they compile to vector
/// registers.
///
/// # Safety
/// `a` addresses `R` rows of `k` values; `b` addresses `k` rows of `V·LANES` values with column
/// stride 1; `c` is valid for writing `R × cols` elements at its strides, `cols ≤ V·LANES`.
#[inline(always)]
#[allow(
    clippy::needless_range_loop,
    reason = "indexed loops over constant bounds keep the accumulators in registers"
)]
unsafe fn tile<const R: usize, const V: usize>(
    k: usize,
    a: Matrix,
    b: Matrix,
    c: *mut f32,
    (rsc, csc): (isize, isize),
    cols: usize,
) {
    let mut acc = [[[0.0f32; LANES]; V]; R];
    // Indexed loops over constant bounds: the form LLVM keeps in registers (iterator adaptors
    // here spilled the accumulators to the stack on every step).
    for p in 0..k {
        // SAFETY: row p of B has V·LANES readable values.
        let row = unsafe { b.ptr.offset(p as isize * b.strides.0) };
        let mut bv = [[0.0f32; LANES]; V];
        for v in 0..V {
            // SAFETY: values v·LANES.. of the row; `[f32; LANES]` has f32's alignment.
            bv[v] = unsafe { row.add(v * LANES).cast::<[f32; LANES]>().read() };
        }
        for r in 0..R {
            // SAFETY: row r, column p of A.
            let x = unsafe { *a.ptr.offset(r as isize * a.strides.0 + p as isize * a.strides.1) };
            for v in 0..V {
                for l in 0..LANES {
                    acc[r][v][l] = x.mul_add(bv[v][l], acc[r][v][l]);
                }
            }
        }
    }
    for (r, acc_row) in acc.iter().enumerate() {
        // SAFETY: row r of the tile of C.
        let c_row = unsafe { c.offset(r as isize * rsc) };
        if csc == 1 && cols == V * LANES {
            // SAFETY: the row has V·LANES writable, contiguous elements.
            unsafe { c_row.cast::<[[f32; LANES]; V]>().write(*acc_row) };
        } else {
            // SAFETY: as for this function.
            unsafe { store_strided(acc_row.as_flattened(), c_row, csc, cols) };
        }
    }
}

/// Writes the first `cols` values of a tile row at stride `csc`. Not inlined: indexing the
/// accumulators by a run-time column would keep them in memory through the whole tile loop.
///
/// # Safety
/// `c_row` must be valid for writing `cols` elements at stride `csc`, `cols ≤ values.len()`.
#[inline(never)]
unsafe fn store_strided(values: &[f32], c_row: *mut f32, csc: isize, cols: usize) {
    for (j, &value) in values.iter().take(cols).enumerate() {
        // SAFETY: column j < cols of the row.
        unsafe { *c_row.offset(j as isize * csc) = value };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// `m×k` values at `strides` (row-major or column-major) in a buffer of exactly that size.
    fn matrix(values: &[f32], strides: (isize, isize)) -> Matrix {
        Matrix {
            ptr: values.as_ptr(),
            strides,
        }
    }

    fn strides(rows: usize, cols: usize, row_major: bool) -> (isize, isize) {
        if row_major {
            (cols as isize, 1)
        } else {
            (1, rows as isize)
        }
    }

    /// `C = A·B` by sgemm, row-major.
    fn sgemm((m, k, n): (usize, usize, usize), a: Matrix, b: Matrix) -> Vec<f32> {
        let mut c = vec![f32::NAN; m * n];
        // SAFETY: the operands address m×k and k×n matrices; c is m×n row-major.
        unsafe {
            matrixmultiply::sgemm(
                m,
                k,
                n,
                1.0,
                a.ptr,
                a.strides.0,
                a.strides.1,
                b.ptr,
                b.strides.0,
                b.strides.1,
                0.0,
                c.as_mut_ptr(),
                n as isize,
                1,
            )
        };
        c
    }

    /// `C = A·B` by the direct path into a row-major buffer with guard values after it, or
    /// `None` if the path declined (then the buffer must be untouched).
    fn direct(dims: (usize, usize, usize), a: Matrix, b: Matrix) -> Option<Vec<f32>> {
        const GUARD: usize = 17;
        let mut c = vec![-7.0f32; dims.0 * dims.2 + GUARD];
        // SAFETY: as for `sgemm`; c has room for m×n values.
        let ran = unsafe { try_run(dims, a, b, c.as_mut_ptr(), usize::MAX) };
        let tail = c.split_off(dims.0 * dims.2);
        assert!(tail.iter().all(|&v| v == -7.0), "{dims:?}: wrote past C");
        if !ran {
            assert!(c.iter().all(|&v| v == -7.0), "{dims:?}: declined but wrote C");
        }
        ran.then_some(c)
    }

    #[test]
    fn hand_computed_product() {
        // [[1, 2], [3, 4]] · [[1, 1, …], [0, 1, …, 39]]: C[0, j] = 1 + 2j, C[1, j] = 3 + 4j.
        let a = [1.0, 2.0, 3.0, 4.0];
        let b: Vec<f32> = (0..80)
            .map(|i| if i < 40 { 1.0 } else { (i - 40) as f32 })
            .collect();
        let got = direct((2, 2, 40), matrix(&a, (2, 1)), matrix(&b, (40, 1)));
        let want: Vec<f32> = (0..80)
            .map(|i| {
                if i < 40 {
                    1.0 + 2.0 * i as f32
                } else {
                    3.0 + 4.0 * (i - 40) as f32
                }
            })
            .collect();
        assert_eq!(got, has_avx512().then_some(want));
    }

    /// The path's claim: on every shape and layout it takes, each element is sgemm's, bit for
    /// bit (the same fused multiply-adds in the same order). Shapes straddle the tile edges
    /// (4 rows, 64 columns) and the depth bound; values include zeros of both signs,
    /// infinities and NaN, whose propagation must match too.
    #[test]
    fn matches_sgemm_bit_for_bit() {
        let mut rng = StdRng::seed_from_u64(11);
        let special = [0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1e-40, 3e38];
        let mut taken = 0;
        for m in [1, 2, 3, 4, 5, 7, 33] {
            for k in [1, 2, 17, 64] {
                for n in [1, 15, 16, 17, 63, 64, 65, 130] {
                    for layout in 0..4 {
                        let (a_rows, b_rows) = (layout & 1 == 0, layout & 2 == 0);
                        let mut value = |_| {
                            if rng.random_ratio(1, 50) {
                                special[rng.random_range(0..special.len())]
                            } else {
                                rng.random_range(-2.0f32..2.0)
                            }
                        };
                        let a: Vec<f32> = (0..m * k).map(&mut value).collect();
                        let b: Vec<f32> = (0..k * n).map(&mut value).collect();
                        let (a, b) = (
                            matrix(&a, strides(m, k, a_rows)),
                            matrix(&b, strides(k, n, b_rows)),
                        );
                        let got = direct((m, k, n), a, b);
                        // It declines only without AVX-512, or when neither operand can be
                        // read in place (B's rows, or A's columns, contiguous).
                        let in_place =
                            (b.strides.1 == 1 && n >= MIN_COLS) || (a.strides.0 == 1 && m >= MIN_COLS);
                        assert_eq!(got.is_some(), has_avx512() && in_place);
                        if let Some(got) = got {
                            let want = sgemm((m, k, n), a, b);
                            let same = got.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits());
                            assert!(same, "({m}, {k}, {n}) layout {layout}: {got:?} != {want:?}");
                            taken += 1;
                        }
                    }
                }
            }
        }
        assert!(taken > 0 || !has_avx512());
    }

    /// Against an f64 reference: a sum of `k` products rounded in f32 errs by at most
    /// `γ_k · Σ|a||b|` with `γ_k = k·u / (1 - k·u)`, `u = 2⁻²⁴` (each fused multiply-add rounds
    /// once, so this bound holds with room to spare).
    #[test]
    fn within_the_rounding_bound_of_an_f64_product() {
        let mut rng = StdRng::seed_from_u64(12);
        let (m, k, n) = (9, 64, 70);
        let a: Vec<f32> = (0..m * k).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        let b: Vec<f32> = (0..k * n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        let Some(got) = direct(
            (m, k, n),
            matrix(&a, (k as isize, 1)),
            matrix(&b, (n as isize, 1)),
        ) else {
            assert!(!has_avx512());
            return;
        };
        let u = f64::from(f32::EPSILON) / 2.0;
        let gamma = k as f64 * u / (1.0 - k as f64 * u);
        for i in 0..m {
            for j in 0..n {
                let terms = (0..k).map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j]));
                let exact: f64 = terms.clone().sum();
                let magnitude: f64 = terms.map(f64::abs).sum();
                let err = (f64::from(got[i * n + j]) - exact).abs();
                assert!(err <= gamma * magnitude, "C[{i}, {j}]: error {err:e}");
            }
        }
    }

    #[test]
    fn declines_deep_or_large_products() {
        let a = vec![1.0f32; 4 * 65];
        let b = vec![1.0f32; 65 * 4];
        let (a, b) = (matrix(&a, (65, 1)), matrix(&b, (4, 1)));
        assert_eq!(direct((4, 65, 4), a, b), None, "k = 65 is past the depth bound");
        let mut c = [0.0f32; 16];
        // SAFETY: 4×64 and 64×4 fit in the buffers above; c is 4×4.
        let ran = unsafe { try_run((4, 64, 4), a, b, c.as_mut_ptr(), 4 * 64 * 4) };
        assert!(!ran, "a product of max_macs multiply-adds goes to sgemm");
    }
}
