//! A few rows of A times a B read by columns, for CPUs with AVX2 and FMA but not AVX-512 (whose
//! packed panels take these products): a sample or a few through a layer, `x·Wᵀ` with the
//! weight `W` stored row-major, so B's columns are W's rows.
//!
//! sgemm copies all of B into its packed layout before using each value of it once or a few
//! times. Here each 8 × 8 block of B is transposed in registers and used at once, for up to
//! [`ROWS`] rows of A. On an AMD EPYC (Zen 3) core, medians of 5 alternating runs against the
//! build without this path, which ran them on sgemm: `[1, 784] x [784, 512]` with B by columns
//! 70 µs against 191 (40 against 191 on two threads), `[1, 512] x [512, 256]` 24 against 64,
//! `[4, 784] x [784, 512]` 101 against 192, `[1, 4096] x [4096, 4096]` 3.3 against 11.2 ms.
//!
//! Every element of C is sgemm's, bit for bit: `k` is cut into sgemm's blocks of 256 from the
//! start, each block's products are one chain of fused multiply-adds from `+0.0` in order, and
//! each block after the first is added to C as sgemm adds it (`c + ab`, rounded once).

use std::ops::Range;

use super::small_gemm::Matrix;

/// The most rows of A a pass takes: four rows of eight sums, beside the eight vectors of a
/// transposed block, fill twelve of the sixteen registers.
pub(super) const ROWS: usize = 4;
/// Lanes of one AVX2 vector of f32.
const LANES: usize = 8;

/// `C = A·B` (`m×k` times `k×n`, C row-major with row stride `n`), for sharing between threads
/// by strips of eight columns of C.
#[derive(Clone, Copy)]
#[cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, reason = "the path is x86-64's")
)]
pub(super) struct FewRows {
    dims: (usize, usize, usize),
    a: Matrix,
    b: Matrix,
}

// SAFETY: a `FewRows` only describes its operands, which it reads; each call of `run` writes
// only its own columns of C.
unsafe impl Sync for FewRows {}

impl FewRows {
    /// The product, if this path takes it: the CPU has AVX2 and FMA but not AVX-512, A has at
    /// most [`ROWS`] rows, B's columns are contiguous and C is at least a vector wide.
    pub(super) fn new(dims: (usize, usize, usize), a: Matrix, b: Matrix) -> Option<FewRows> {
        let (m, k, n) = dims;
        let takes = (1..=ROWS).contains(&m) && k > 0 && n >= LANES && b.strides.0 == 1;
        (takes && super::small_gemm::avx2_only()).then_some(FewRows { dims, a, b })
    }

    /// How many strips of eight columns C has (the last may be narrower).
    pub(super) fn strips(&self) -> usize {
        self.dims.2.div_ceil(LANES)
    }

    /// B's number of values, each read once: reading B is most of the work.
    pub(super) fn b_len(&self) -> usize {
        self.dims.1 * self.dims.2
    }

    /// Computes strips `strips` of C (all of their rows).
    ///
    /// # Safety
    /// `a` and `b` with their strides must address `m×k` and `k×n` matrices within their
    /// allocations; `c` must be valid for writing `m×n` row-major values that alias neither, and
    /// no other thread may write these strips meanwhile.
    pub(super) unsafe fn run(&self, c: *mut f32, strips: Range<usize>) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `new` checked that the CPU has AVX2 and FMA; the rest is the caller's promise.
        unsafe {
            by_columns_avx2(self, c, strips)
        };
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (c, strips);
            unreachable!("`new` takes no product off x86-64")
        }
    }
}

/// [`FewRows::run`], eight columns of C at a time.
///
/// # Safety
/// As for [`FewRows::run`]; the CPU has AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn by_columns_avx2(product: &FewRows, c: *mut f32, strips: Range<usize>) {
    let FewRows {
        dims: (m, k, n),
        a,
        b,
    } = *product;
    for j0 in strips.map(|s| s * LANES) {
        let cols = LANES.min(n - j0);
        for p0 in (0..k).step_by(super::panel_gemm::DEPTH) {
            let depth = super::panel_gemm::DEPTH.min(k - p0);
            let (a_block, b_block) = (a.at(0, p0), b.at(p0, j0));
            // SAFETY: rows ..m of A from column p0, and `depth` rows of `cols` columns of B from
            // (p0, j0): within them (the caller's promise).
            let sums = unsafe {
                match m {
                    1 => block::<1>(depth, cols, a_block, b_block),
                    2 => block::<2>(depth, cols, a_block, b_block),
                    3 => block::<3>(depth, cols, a_block, b_block),
                    _ => block::<ROWS>(depth, cols, a_block, b_block),
                }
            };
            for (r, row) in sums.iter().take(m).enumerate() {
                for (j, &ab) in row[..cols].iter().enumerate() {
                    // SAFETY: element (r, j0 + j) of C; written by the first block if p0 > 0.
                    unsafe {
                        let dst = c.add(r * n + j0 + j);
                        *dst = if p0 == 0 { ab } else { *dst + ab };
                    }
                }
            }
        }
    }
}

/// The sums of one depth block for `R` rows of A and `cols <= 8` columns of B (zeros past
/// them): each the chain of fused multiply-adds from `+0.0` over the block, in order.
///
/// # Safety
/// `a` addresses `R` rows of `depth` values, `b` `depth` rows of `cols` columns with row stride
/// 1; the CPU has AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(
    clippy::needless_range_loop,
    reason = "indexed loops over constant bounds keep the sums in registers"
)]
unsafe fn block<const R: usize>(depth: usize, cols: usize, a: Matrix, b: Matrix) -> [[f32; LANES]; ROWS] {
    use std::arch::x86_64::*;
    // SAFETY (both closures): column j < cols of B from row p < depth; A's row r < R, column p.
    let column = |p: usize, j: usize| b.at(p, j).ptr;
    let a_at = |r: usize, p: usize| unsafe { *a.at(r, p).ptr };
    let mut acc = [_mm256_setzero_ps(); R];
    let mut p = 0;
    while p + LANES <= depth {
        // SAFETY: eight rows of B from row p in column j < cols (past them, zeros).
        let columns = std::array::from_fn(|j| match j < cols {
            true => unsafe { _mm256_loadu_ps(column(p, j)) },
            false => _mm256_setzero_ps(),
        });
        let rows = super::small_gemm::transpose_8x8(columns);
        for r in 0..R {
            for q in 0..LANES {
                acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(a_at(r, p + q)), rows[q], acc[r]);
            }
        }
        p += LANES;
    }
    // The last rows of a depth that is not a multiple of 8, value by value.
    for p in p..depth {
        // SAFETY: row p of B, column j < cols.
        let row: [f32; LANES] = std::array::from_fn(|j| match j < cols {
            true => unsafe { *column(p, j) },
            false => 0.0,
        });
        // SAFETY: `row` holds 8 values.
        let row = unsafe { _mm256_loadu_ps(row.as_ptr()) };
        for r in 0..R {
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(a_at(r, p)), row, acc[r]);
        }
    }
    let mut sums = [[0.0; LANES]; ROWS];
    for r in 0..R {
        // SAFETY: row r of `sums` holds 8 values.
        unsafe { _mm256_storeu_ps(sums[r].as_mut_ptr(), acc[r]) };
    }
    sums
}
