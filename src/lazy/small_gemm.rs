//! Small matrix products computed directly from the operands, without sgemm's packing.
//!
//! For a short inner dimension (a training step's `[32, 10] x [10, 128]`, or a weight gradient
//! over a batch of 32) sgemm spends a large share of its time copying both operands into its
//! packed layout. A register tile can read B's rows in place when they are contiguous (or from
//! one copy of a 64-column panel when they are not: a transposed weight): each step along `k`
//! loads four 16-lane vectors of one row of B and broadcasts four values of A, read in place
//! at any strides. CPUs with AVX2 and FMA but not AVX-512 get a narrower tile.
//!
//! Every element of C is the same chain of fused multiply-adds, in the same order over `k`,
//! starting from `+0.0`, that matrixmultiply's AVX-512 kernel computes for `k` up to its block
//! depth (256; this path takes `k` up to 128, or with AVX2 up to 256 for a C of few rows), and
//! its AVX2 kernel too. So its results are
//! those of sgemm, bit for bit (the tests check both instruction sets), and whether a product
//! takes it changes no value.

use super::aligned::StackPanel;

/// The most values of B one column tile reads: 64 rows of 64 columns, or 128 rows of 32 (16 KiB),
/// stay in L1 across the tile's rows. Measured on the kernel alone, one thread, against sgemm
/// into the same output: `[64, 64] x [64, 64]` 3.2 against 4.7 µs (B transposed: 3.6 against
/// 5.2), `[128, 32] x [32, 64]` 3.3 against 4.5, `[200, 128] x [128, 30]` 10.3 against 16.4;
/// past it, sgemm was as fast or faster as often as not (`[128, 128] x [128, 128]`: 32.4
/// against 28.8; `[64, 96] x [96, 200]` with B transposed: 22.2 against 19.9).
const PANEL: usize = 4096;

/// Lanes of one AVX-512 vector of f32 (and the width of an AVX2 tile: two 8-lane vectors).
pub(super) const LANES: usize = 16;
/// Vectors of C per tile row.
const VECTORS: usize = 4;
/// Columns of C per tile.
const COLS: usize = VECTORS * LANES;
/// Rows of C per full-width tile: with 4 × 4 vectors, 16 accumulators stay in registers.
const ROWS: usize = 4;
/// The narrowest C taken: more than one vector. Measured on the kernel alone, one vector wide
/// lost to sgemm (`[128, 64] x [64, 10]`: 4.6 against 4.0 µs, `[256, 32] x [32, 16]`: 4.6
/// against 3.7), and two won (`[128, 64] x [64, 17]`: 3.7 against 5.4). Rerun with the 8-row
/// tile, through `matmul`: `[128, 64] x [64, 10]` 2.79 against sgemm's 2.70 µs (B transposed:
/// 3.40 against 2.92), and `[32, 128] x [128, 10]` with B transposed 2.60 against 1.61 µs as
/// the transposed product, since a C 10 wide is packed and stored a value at a time.
const MIN_COLS: usize = LANES + 1;
/// Up to this depth, a product with both operands read by columns copies B rather than run
/// as its transpose (see [`run_with`]), however narrow C; at any depth where C is more than two
/// vectors wide (at first, a whole tile). On a machine before this one, one thread, against the
/// transposed product, medians of 20 alternating runs:
/// `[335, 2] x [2, 785]` 0.28 of its time, `[1000, 4] x [4, 32]` 0.22, `[500, 8] x [8, 40]`
/// 0.48, `[128, 16] x [16, 128]` 0.39, `[128, 64] x [64, 128]` 0.68, `[64, 64] x [64, 64]`
/// 0.80, `[200, 16] x [16, 17]` 1.03. Deeper and narrower than a tile, the transposed
/// product's whole tiles won (fastest of seven runs): `[128, 32] x [32, 17]` 2.4 against 3.3
/// µs, `[128, 64] x [64, 40]` 7.0 against 9.5, `[32, 128] x [128, 20]` 2.6 against 4.2.
const SHALLOW: usize = 16;
/// The narrowest C that a product with A by columns computes one vector per row (where it is
/// shallow or C is one vector wide) rather than as its transpose. That transpose reads Aᵀ's
/// rows in place, and stores C a value at a time: a few values a row cost less than a vector
/// operation per row and step of `k`. On an AMD EPYC with AVX-512 (Zen 5), one thread, fastest
/// of five alternating runs, the vector against the transpose: `[2000, 2] x [2, 16]` 0.19 of
/// its time, `[384, 8] x [8, 16]` 0.43, `[457, 13] x [13, 16]` 0.50, `[256, 32] x [32, 16]`
/// 0.72, `[1182, 11] x [11, 15]` 0.80, `[500, 16] x [16, 14]` 0.94, `[300, 8] x [8, 13]` 0.85;
/// narrower, `[1000, 16] x [16, 12]` 1.04, `[800, 6] x [6, 11]` 1.02, `[128, 16] x [16, 10]`
/// 1.15, `[1000, 16] x [16, 8]` 1.42, `[1000, 16] x [16, 4]` 2.20.
const COLUMN_A_WIDTH: usize = 13;
/// The deepest product the AVX2 tile takes for a C of few rows (see [`fits_deep_avx2`]): 256
/// rows of a 16-column tile fill the panel, and sgemm's AVX2 kernel sums 256 products in one
/// chain too, so the bits stay sgemm's. A classifier's products ran on sgemm, whose 8-row tiles
/// compute 16 rows for 10: one thread, fastest of 7, over four runs (AMD EPYC, Zen 3), `[10,
/// 128] x [128, 256]` (a weight gradient, A by columns) 7.8–10.8 µs against sgemm's 17.9–20.9,
/// `[128, 256] x [256, 10]ᵀ` (as its transpose) 11.3–14.8 against 20.5–27.6, `[10, 256] x
/// [256, 512]` 35–47 against 102–103, `[16, 256] x [256, 64]ᵀ` 7.4–7.5 against 10.9–11.5,
/// `[23, 100] x [100, 300]` 17.4–17.6 against 20.5–20.9, a sample `[1, 200] x [200, 100]` 3.7
/// against 6.2–7.4; a tall C of a few columns as its transpose, `[1000, 256] x [256, 10]ᵀ` 93
/// against 201, `[500, 200] x [200, 12]` 41 against 98.
const DEEP_AVX2: usize = super::panel_gemm::DEPTH;
/// The rows below which [`fits_deep_avx2`] takes a product: from there, C is left to the packed
/// AVX2 panels, which copy A by tiles where this tile reads it in place (`[128, 256] x [256,
/// 512]` at 61 GFLOP/s in place, 80 from the copy), or to sgemm.
const DEEP_AVX2_ROWS: usize = super::panels_avx2::MIN_ROWS;

/// A matrix operand: its first element and its (row, column) strides in elements.
#[derive(Clone, Copy)]
pub(super) struct Matrix {
    pub(super) ptr: *const f32,
    pub(super) strides: (isize, isize),
}

impl Matrix {
    /// The submatrix from row `row`, column `col` (a pointer computation only; reading it is
    /// valid where the original was).
    pub(super) fn at(self, row: usize, col: usize) -> Matrix {
        let offset = row as isize * self.strides.0 + col as isize * self.strides.1;
        Matrix {
            ptr: self.ptr.wrapping_offset(offset),
            strides: self.strides,
        }
    }

    pub(super) fn transposed(self) -> Matrix {
        Matrix {
            ptr: self.ptr,
            strides: (self.strides.1, self.strides.0),
        }
    }
}

/// The vector instructions a product runs with.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, reason = "detected only on x86-64")
)]
enum Isa {
    /// Tiles of 4 rows × 64 columns (16 registers of 16 lanes).
    Avx512,
    /// AVX2 with FMA: tiles of 6 rows × 16 columns (12 registers of 8 lanes), a transposed B
    /// copied by 8 × 8 blocks transposed in registers. On an AMD EPYC (Zen 3), one thread,
    /// medians of 7 alternating runs against sgemm: `[32, 64] x [64, 128]` with B transposed
    /// 9.7 µs against 10.2 (6.7 with B by rows, in place), `[32, 128] x [128, 10]` 2.0 against
    /// 3.8, `[128, 64] x [64, 10]` 3.9 against 6.4. (Copied value by value, in an emulation
    /// on an earlier machine, the first had cost 10.7 µs against sgemm's 8.7.)
    Avx2,
}

/// Whether this CPU has AVX-512F (the packed-panel path runs only there).
pub(super) fn avx512() -> bool {
    Isa::detect() == Some(Isa::Avx512)
}

/// Whether this CPU has AVX2 and FMA but not AVX-512F (the AVX2 product paths run only there).
pub(super) fn avx2_only() -> bool {
    Isa::detect() == Some(Isa::Avx2)
}

impl Isa {
    /// The best this CPU has, if any.
    fn detect() -> Option<Isa> {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Some(Isa::Avx512);
            }
            if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                return Some(Isa::Avx2);
            }
        }
        None
    }
}

/// Computes `C = A·B` (`m×k` times `k×n`) into `c` with row stride `n`, if the product is
/// small (fewer than `max_macs` multiply-adds), C is more than 16 wide one way or the other
/// (`n` or `m`; with AVX2, `m` only if `n` is at most 16), and that way a column tile's rows
/// of B fit the panel (`k` up to 64 for a wide C, up to 128 for one at most 32 wide; with AVX2,
/// up to 256 for a C of fewer than 24 rows the other way), and the CPU has AVX-512 (or AVX2 and
/// FMA). Returns false, having written nothing, otherwise.
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
    let Some(isa) = Isa::detect() else {
        return false;
    };
    // SAFETY: as this function's contract says; `isa` was detected.
    m.saturating_mul(k).saturating_mul(n) < max_macs && unsafe { run_with(isa, (m, k, n), a, b, c) }
}

/// [`try_run`] on the given instructions, without the size limit.
///
/// # Safety
/// As for [`try_run`], and the CPU has `isa`.
unsafe fn run_with(isa: Isa, (m, k, n): (usize, usize, usize), a: Matrix, b: Matrix, c: *mut f32) -> bool {
    let c_strides = (n as isize, 1);
    // Cᵀ = Bᵀ·Aᵀ addresses the same elements; its "B" is Aᵀ.
    let transposed = || {
        (
            (n, k, m),
            b.transposed(),
            a.transposed(),
            (c_strides.1, c_strides.0),
        )
    };
    // Reading B's rows in place beats copying them. With AVX2, only a narrow C runs as its
    // transpose: a wide one lost to sgemm where its width `m` is not a whole number of tiles
    // (`[24, 128] x [128, 300]` 1.80 times sgemm's time, `[34, 74] x [74, 1307]` 1.30) and
    // won nothing where it is (`[32, 100] x [100, 500]` 0.99, `[40, 96] x [96, 1000]` 0.97).
    let transposes = isa == Isa::Avx512 || n < MIN_COLS;
    // A C of a few rows by B's columns is left to `few_rows` past `fits`: at these depths it ran
    // faster there (`[4, 256] x [256, 40]ᵀ` 2.7 µs against 4.0 on this tile).
    let few_rows = m <= super::few_rows::ROWS && b.strides.0 == 1;
    let deep = |width, rows| isa == Isa::Avx2 && fits_deep_avx2(k, width, rows);
    let takes = (
        fits(k, n) || deep(n, m) && !few_rows,
        (fits(k, m) || deep(m, n)) && transposes,
    );
    let (dims, a, b, c_strides) = match takes {
        (true, _) if b.strides.1 == 1 => ((m, k, n), a, b, c_strides),
        // The transposed product stores C a value at a time, columns apart: where C is more
        // than two vectors wide, or the product is shallow (so those stores are most of its
        // work), copying B costs less. On an AMD EPYC (Zen 5), one thread, fastest of five
        // alternating runs, A and B by columns, the copy against the transpose: `[200, 20] x
        // [20, 60]` 0.56 of its time, `[122, 21] x [21, 43]` 0.62, `[379, 31] x [31, 58]` 0.66,
        // `[100, 50] x [50, 33]` 0.94–0.95, `[128, 64] x [64, 40]` 0.95–1.04 (1.36 on a machine
        // before: see `SHALLOW`); two vectors wide or less, `[125, 24] x [24, 23]` 0.86 but
        // `[128, 32] x [32, 17]` 1.14 and `[32, 128] x [128, 20]` 1.43.
        (true, _) if n > 2 * LANES || k <= SHALLOW => ((m, k, n), a, b, c_strides),
        // A C at most one vector wide: one vector per row of C rather than the transpose,
        // which stores C a value at a time (and with A by rows copies Aᵀ), where the product is
        // shallow (those stores are then most of its work) or the vector is full. On an Intel
        // Xeon with AVX-512, one thread, best of 7, A by rows against sgemm: `[384, 8] x [8,
        // 16]` 0.79 of its time (3.05 as the transpose), `[823, 3] x [3, 13]` 0.60 (1.66),
        // `[1182, 11] x [11, 15]` 0.56 (1.30), `[1000, 16] x [16, 8]` 0.64 (0.84), `[52, 39] x
        // [39, 16]` 0.88 (1.80), `[256, 32] x [32, 16]` 0.70 (1.35); deeper and narrower, the
        // transpose won: `[1000, 64] x [64, 4]` 0.45 against 0.61, `[32, 128] x [128, 10]ᵀ`
        // 0.75 against 1.3. With A by columns, only where C is [`COLUMN_A_WIDTH`] wide or more.
        (_, true)
            if isa == Isa::Avx512
                && n < MIN_COLS
                && (k <= SHALLOW || n == LANES)
                && (a.strides.0 != 1 || n >= COLUMN_A_WIDTH) =>
        {
            ((m, k, n), a, b, c_strides)
        }
        (_, true) if a.strides.0 == 1 => transposed(),
        (true, _) => ((m, k, n), a, b, c_strides),
        (_, true) => transposed(),
        _ => return false,
    };
    // SAFETY: as this function's contract says.
    unsafe {
        match isa {
            Isa::Avx512 => gemm_avx512(dims, a, b, c, c_strides),
            Isa::Avx2 => gemm_avx2(dims, a, b, c, c_strides),
        }
    }
    true
}

/// Whether a C `width` columns wide is taken at depth `k`: wide enough for the tiles to keep
/// their accumulators busy, and shallow enough for a column tile's rows of B to fit the panel.
fn fits(k: usize, width: usize) -> bool {
    width >= MIN_COLS && k.saturating_mul(width.min(COLS).next_multiple_of(LANES)) <= PANEL
}

/// With AVX2, whose column tiles are 16 wide, whether a C of `rows` rows and `width` columns is
/// taken at a depth `k` past [`fits`]: up to [`DEEP_AVX2`], where a column tile's rows of B
/// still fill at most the panel, for a C of fewer than [`DEEP_AVX2_ROWS`] rows.
fn fits_deep_avx2(k: usize, width: usize, rows: usize) -> bool {
    width >= MIN_COLS && rows < DEEP_AVX2_ROWS && k <= DEEP_AVX2
}

/// `C = A·B` by tiles of `ROWS × COLS`.
///
/// # Safety
/// As for [`try_run`]; `fits(k, n)`, and the CPU has AVX-512F.
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx512f"))]
unsafe fn gemm_avx512(
    (m, k, n): (usize, usize, usize),
    a: Matrix,
    b: Matrix,
    c: *mut f32,
    c_strides: (isize, isize),
) {
    debug_assert!(fits(k, n) || n < MIN_COLS);
    for j0 in (0..n).step_by(COLS) {
        let cols = COLS.min(n - j0);
        let (b_cols, c_cols) = (b.at(0, j0), c.wrapping_offset(j0 as isize * c_strides.1));
        if cols == COLS && b.strides.1 == 1 {
            // SAFETY: the column tile has COLS columns of B and C.
            unsafe { column_tile::<VECTORS, ROWS, LANES>((m, k), a, b_cols, c_cols, c_strides, cols) };
        } else {
            // Other layouts, and the last, ragged column tile, read B from a zero-padded
            // row-major copy: the tile loop always loads whole vectors, and computes only as
            // many of them as it needs.
            let width = cols.next_multiple_of(LANES);
            // Only the first k rows of `width` values are written, and only those are read.
            let mut panel = StackPanel::<PANEL>::new();
            // SAFETY: the tile's columns lie within B; the panel holds k·width values.
            unsafe { pack_panel::<true>((k, cols, width), b_cols, panel.as_mut_ptr()) };
            let b_cols = Matrix {
                ptr: panel.as_mut_ptr(),
                strides: (width as isize, 1),
            };
            // SAFETY: the panel has k rows of `width` values; C has `cols` columns from j0, and
            // the tile's vectors hold `width`. One vector wide, 8 rows: at 16, LLVM turned the
            // rows' 16 loads of A into a gather and 16 lane extractions (`[64, 64] x [64, 80]`
            // 6.3–6.8 µs against 3.8–4.4 with 8 rows).
            unsafe {
                match width / LANES {
                    1 => column_tile::<1, 8, LANES>((m, k), a, b_cols, c_cols, c_strides, cols),
                    2 => column_tile::<2, 8, LANES>((m, k), a, b_cols, c_cols, c_strides, cols),
                    3 => column_tile::<3, 5, LANES>((m, k), a, b_cols, c_cols, c_strides, cols),
                    _ => column_tile::<VECTORS, ROWS, LANES>((m, k), a, b_cols, c_cols, c_strides, cols),
                }
            }
        }
    }
}

/// `C = A·B` by tiles of 6 rows × 16 columns, for AVX2 with FMA: a 16-lane row of a tile is
/// two 8-lane registers, so 6 rows keep 12 accumulators (of 16 registers) in flight.
///
/// # Safety
/// As for [`try_run`]; `fits(k, n)` or `fits_deep_avx2(k, n, m)`, and the CPU has AVX2 and FMA.
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx2,fma"))]
unsafe fn gemm_avx2(
    (m, k, n): (usize, usize, usize),
    a: Matrix,
    b: Matrix,
    c: *mut f32,
    c_strides: (isize, isize),
) {
    debug_assert!(fits(k, n) || fits_deep_avx2(k, n, m));
    for j0 in (0..n).step_by(LANES) {
        let cols = LANES.min(n - j0);
        let (b_cols, c_cols) = (b.at(0, j0), c.wrapping_offset(j0 as isize * c_strides.1));
        // SAFETY (both): the column tile has `cols` columns of B and C; B's rows (or the
        // panel's) have LANES readable values. The two cases call the tile separately: a single
        // call on either B or the panel had the accumulators spilled here (`[64, 64] x [64, 64]`
        // 15 µs instead of 6.6, with sgemm's AVX2 kernel at 8).
        if cols == LANES && b.strides.1 == 1 {
            unsafe { column_tile::<2, 6, 8>((m, k), a, b_cols, c_cols, c_strides, cols) };
        } else {
            let mut panel = StackPanel::<PANEL>::new();
            unsafe { pack_panel::<false>((k, cols, LANES), b_cols, panel.as_mut_ptr()) };
            let b_cols = Matrix {
                ptr: panel.as_mut_ptr(),
                strides: (LANES as isize, 1),
            };
            unsafe { column_tile::<2, 6, 8>((m, k), a, b_cols, c_cols, c_strides, cols) };
        }
    }
}

/// Copies columns `0..cols` of B's first `k` rows into `panel`, row-major with row stride
/// `width`, and zeroes columns `cols..width`. A column-major B (a transposed weight, as in
/// `x·Wᵀ`) is transposed in registers, in 16 × 16 blocks with `AVX512`, else in 8 × 8 blocks.
///
/// # Safety
/// B's first `k` rows and `cols` columns lie within it; `panel` is valid for writing `k·width`
/// values; with `AVX512`, the CPU has AVX-512F, else AVX2.
#[inline(always)]
pub(super) unsafe fn pack_panel<const AVX512: bool>(
    (k, cols, width): (usize, usize, usize),
    b: Matrix,
    panel: *mut f32,
) {
    // SAFETY (every access below): element (p, j) of B with p < k, j < cols, or of the panel
    // with j < width.
    let panel_row = |p: usize| unsafe { panel.add(p * width) };
    let (rs, cs) = b.strides;
    let mut done_cols = 0;
    #[cfg(target_arch = "x86_64")]
    if AVX512 && cs == 1 {
        // Whole vectors, the columns past `cols` masked off (read as zeros, and never touched in
        // B): a call to `memcpy` per row, then a loop of zeros, cost more than the product of a
        // narrow panel (`[10, 10000] x [10000, 10]` 1.5 times sgemm's time).
        use std::arch::x86_64::{_mm512_maskz_loadu_ps, _mm512_storeu_ps};
        for p in 0..k {
            for j in (0..width).step_by(LANES) {
                let lanes = cols.saturating_sub(j).min(LANES);
                let mask = ((1u32 << lanes) - 1) as u16;
                // SAFETY: the lanes loaded are row p's columns j.. below `cols`, within B; the
                // panel's row has `width` values; the caller's CPU has AVX-512F.
                unsafe {
                    let v = _mm512_maskz_loadu_ps(mask, b.at(p, j).ptr);
                    _mm512_storeu_ps(panel_row(p).add(j), v);
                }
            }
        }
        return;
    }
    if cs == 1 && cols == width && width % 8 == 0 {
        // Whole rows of a constant width, a vector at a time: a call to `memcpy` for each row
        // of 16 values took most of a shallow product's time.
        for p in 0..k {
            for j in (0..width).step_by(8) {
                // SAFETY: row p's columns j..j + 8, within B and within the panel's row.
                unsafe {
                    let v = b.at(p, j).ptr.cast::<[f32; 8]>().read_unaligned();
                    panel_row(p).add(j).cast::<[f32; 8]>().write_unaligned(v);
                }
            }
        }
        done_cols = cols;
    } else if cs == 1 {
        for p in 0..k {
            unsafe { std::ptr::copy_nonoverlapping(b.at(p, 0).ptr, panel_row(p), cols) };
        }
        done_cols = cols;
    } else if rs == 1 {
        // Blocks of 16 × 16 with AVX-512, else 8 × 8 with AVX2.
        let block = if AVX512 { LANES } else { 8 };
        while done_cols + block <= cols {
            let j = done_cols;
            let mut p = 0;
            while p + block <= k {
                let (src, dst) = (b.at(p, j).ptr, unsafe { panel_row(p).add(j) });
                match AVX512 {
                    true => unsafe { transpose_block(src, cs, dst, width) },
                    false => {
                        // A line holds 16 values of a column.
                        if p % 16 == 0 {
                            prefetch_column_lines(b.at(p, j + block), block);
                        }
                        unsafe { transpose_block_avx2(src, cs, dst, width) }
                    }
                }
                p += block;
            }
            for p in p..k {
                for j in j..j + block {
                    unsafe { *panel_row(p).add(j) = *b.at(p, j).ptr };
                }
            }
            done_cols += block;
        }
    }
    for p in 0..k {
        for j in done_cols..width {
            let value = if j < cols { unsafe { *b.at(p, j).ptr } } else { 0.0 };
            unsafe { *panel_row(p).add(j) = value };
        }
    }
}

/// Asks for the cache line holding the first value of each of `count` columns of `b`. The
/// columns a transposed panel copies next are rows of their own in memory, each read for 256
/// values at most: too short a stream for the hardware to prefetch, so with AVX2 each 8 × 8
/// block waited on its eight loads from L3 (`perf`: the loads were 80 % of the copy's time, and
/// the copy 10 % of the 784→512→256→10 forward pass at batch 128). Prefetched a block of
/// columns ahead, the copy is 4.5 % of that pass, and `[128, 784] x [784, 512]ᵀ` took 0.97 of
/// its time, `[128, 512] x [512, 256]ᵀ` 0.96 (AMD EPYC, Zen 3; median of 9 alternating pairs).
#[inline(always)]
fn prefetch_column_lines(b: Matrix, count: usize) {
    #[cfg(target_arch = "x86_64")]
    for j in 0..count {
        // SAFETY: a prefetch only hints; an address past B's columns reads and faults nothing.
        unsafe {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            _mm_prefetch::<_MM_HINT_T0>(b.at(0, j).ptr.cast());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (b, count);
}

/// Writes the transpose of the 16 × 16 block whose rows start `src_stride` apart at `src` to
/// rows `dst_stride` apart at `dst`.
///
/// # Safety
/// Both blocks lie within their allocations and do not overlap; the CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn transpose_block(src: *const f32, src_stride: isize, dst: *mut f32, dst_stride: usize) {
    use std::arch::x86_64::*;
    // SAFETY: row r of the source block.
    let rows = std::array::from_fn(|i| unsafe { _mm512_loadu_ps(src.offset(i as isize * src_stride)) });
    for (i, row) in transpose_16x16(rows).into_iter().enumerate() {
        // SAFETY: row i of the destination block.
        unsafe { _mm512_storeu_ps(dst.add(i * dst_stride), row) };
    }
}

/// Writes the transpose of the 8 × 8 block whose rows start `src_stride` apart at `src` to
/// rows `dst_stride` apart at `dst`.
///
/// # Safety
/// Both blocks lie within their allocations and do not overlap; the CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn transpose_block_avx2(src: *const f32, src_stride: isize, dst: *mut f32, dst_stride: usize) {
    use std::arch::x86_64::*;
    // SAFETY: row r of the source block.
    let rows = std::array::from_fn(|i| unsafe { _mm256_loadu_ps(src.offset(i as isize * src_stride)) });
    for (i, row) in transpose_8x8(rows).into_iter().enumerate() {
        // SAFETY: row i of the destination block.
        unsafe { _mm256_storeu_ps(dst.add(i * dst_stride), row) };
    }
}

/// [`transpose_block`] with AVX2: the 16 × 16 block as four 8 × 8 ones.
///
/// # Safety
/// As for [`transpose_block`], with AVX2 in place of AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn transpose_block_16_avx2(
    src: *const f32,
    src_stride: isize,
    dst: *mut f32,
    dst_stride: usize,
) {
    for (r, c) in [(0, 0), (0, 8), (8, 0), (8, 8)] {
        // SAFETY: rows r.. and columns c.. of the source block go to rows c.., columns r.. of
        // the destination block, both within their blocks.
        unsafe {
            transpose_block_avx2(
                src.offset(r as isize * src_stride + c as isize),
                src_stride,
                dst.add(c * dst_stride + r),
                dst_stride,
            )
        };
    }
}

/// The transpose of a 16 × 16 block held in 16 registers, one row each: two rounds of unpacks
/// within 128-bit lanes, then two of shuffles across them (64 shuffles in all).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(super) fn transpose_16x16(r: [std::arch::x86_64::__m512; LANES]) -> [std::arch::x86_64::__m512; LANES] {
    use std::arch::x86_64::*;
    // Pairs of rows interleaved: in each 128-bit lane L, a[2i] holds columns 4L, 4L+1 of rows
    // 2i, 2i+1, and a[2i+1] columns 4L+2, 4L+3.
    let a: [__m512d; LANES] = std::array::from_fn(|i| {
        let (x, y) = (r[i & !1], r[i | 1]);
        _mm512_castps_pd(if i % 2 == 0 {
            _mm512_unpacklo_ps(x, y)
        } else {
            _mm512_unpackhi_ps(x, y)
        })
    });
    // Quads of rows: in each lane L, b[4g + q] holds column 4L + q of rows 4g..4g+4.
    let b: [__m512; LANES] = std::array::from_fn(|i| {
        let (g, q) = (i / 4 * 4, i % 4);
        let (x, y) = (a[g + q / 2], a[g + q / 2 + 2]);
        _mm512_castpd_ps(if q % 2 == 0 {
            _mm512_unpacklo_pd(x, y)
        } else {
            _mm512_unpackhi_pd(x, y)
        })
    });
    // Output row 4L + q gathers lane L of b[q], b[4 + q], b[8 + q], b[12 + q].
    let mut out = [_mm512_setzero_ps(); LANES];
    for q in 0..4 {
        let (even_lo, odd_lo) = (
            _mm512_shuffle_f32x4::<0x88>(b[q], b[4 + q]),
            _mm512_shuffle_f32x4::<0xDD>(b[q], b[4 + q]),
        );
        let (even_hi, odd_hi) = (
            _mm512_shuffle_f32x4::<0x88>(b[8 + q], b[12 + q]),
            _mm512_shuffle_f32x4::<0xDD>(b[8 + q], b[12 + q]),
        );
        out[q] = _mm512_shuffle_f32x4::<0x88>(even_lo, even_hi);
        out[4 + q] = _mm512_shuffle_f32x4::<0x88>(odd_lo, odd_hi);
        out[8 + q] = _mm512_shuffle_f32x4::<0xDD>(even_lo, even_hi);
        out[12 + q] = _mm512_shuffle_f32x4::<0xDD>(odd_lo, odd_hi);
    }
    out
}

/// The transpose of eight vectors taken as the rows of an 8 × 8 block.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(super) fn transpose_8x8(r: [std::arch::x86_64::__m256; 8]) -> [std::arch::x86_64::__m256; 8] {
    use std::arch::x86_64::*;
    // Pairs of rows interleaved, then pairs of pairs: each 128-bit half then holds a 4 × 4
    // block's transposed rows, and the halves are swapped into place.
    let t = [0, 2, 4, 6].map(|i| {
        (
            _mm256_unpacklo_ps(r[i], r[i + 1]),
            _mm256_unpackhi_ps(r[i], r[i + 1]),
        )
    });
    let quad = |x: (__m256, __m256), y: (__m256, __m256)| {
        [
            _mm256_shuffle_ps::<0x44>(x.0, y.0),
            _mm256_shuffle_ps::<0xEE>(x.0, y.0),
            _mm256_shuffle_ps::<0x44>(x.1, y.1),
            _mm256_shuffle_ps::<0xEE>(x.1, y.1),
        ]
    };
    let (low, high) = (quad(t[0], t[1]), quad(t[2], t[3]));
    std::array::from_fn(|i| match i < 4 {
        true => _mm256_permute2f128_ps::<0x20>(low[i], high[i]),
        false => _mm256_permute2f128_ps::<0x31>(low[i - 4], high[i - 4]),
    })
}

/// Not reached: the path runs only where AVX-512 was detected.
#[cfg(not(target_arch = "x86_64"))]
pub(super) unsafe fn transpose_block(_: *const f32, _: isize, _: *mut f32, _: usize) {
    unreachable!("small_gemm runs only on x86-64 with AVX-512")
}

/// Not reached: the path runs only where AVX2 was detected.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn transpose_block_avx2(_: *const f32, _: isize, _: *mut f32, _: usize) {
    unreachable!("small_gemm runs only on x86-64 with AVX2")
}

/// Not reached: the path runs only where AVX2 was detected.
#[cfg(not(target_arch = "x86_64"))]
pub(super) unsafe fn transpose_block_16_avx2(_: *const f32, _: isize, _: *mut f32, _: usize) {
    unreachable!("register transposes run only on x86-64")
}

/// Every tile of one column tile of C, `V` vectors of `L` lanes wide: `R` rows at a time (`R·V`
/// accumulators, enough to hide the multiply-adds' latency), then the rest in tiles of 4, 2 and 1
/// rows. One row at a time, the last two of 10 rows by 8 (a product with 10 classes) were two
/// passes, each over only two chains of dependent multiply-adds.
///
/// # Safety
/// `b` addresses `k` rows of `V·L` readable values with column stride 1; `a` addresses `m` rows
/// of `k` values; `c` is valid for writing `m × cols` elements at its strides, `cols ≤ V·L`.
/// With `L = 8`, the CPU has AVX2 and FMA (see [`lanes_tile`]).
#[inline(always)]
unsafe fn column_tile<const V: usize, const R: usize, const L: usize>(
    (m, k): (usize, usize),
    a: Matrix,
    b: Matrix,
    c: *mut f32,
    c_strides: (isize, isize),
    cols: usize,
) {
    // A full tile stores its rows straight into C; any other goes through `staged`, then
    // element by element into C. Either way the tile only ever stores its accumulators whole:
    // deciding that inside it, at run time, kept the AVX2 build's accumulators in memory.
    let full = c_strides.1 == 1 && cols == V * L;
    let mut staged = [[[0.0f32; L]; V]; R];
    let mut i0 = 0;
    while i0 < m {
        let rows = match m - i0 {
            left if left >= R => R,
            left => (1 << left.ilog2()).min(4),
        };
        let (a_rows, c_rows) = (a.at(i0, 0), c.wrapping_offset(i0 as isize * c_strides.0));
        let (dst, dst_stride) = match full {
            true => (c_rows, c_strides.0),
            false => (staged.as_mut_ptr().cast::<f32>(), (V * L) as isize),
        };
        // SAFETY: the tile's rows lie within A, and within C or `staged`.
        unsafe {
            // `R > …` is constant: no tile as tall as a full one is instantiated twice.
            match rows {
                _ if rows == R => lanes_tile::<R, V, L>(k, a_rows, b, dst, dst_stride),
                4 if R > 4 => lanes_tile::<4, V, L>(k, a_rows, b, dst, dst_stride),
                2 if R > 2 => lanes_tile::<2, V, L>(k, a_rows, b, dst, dst_stride),
                // LLVM compiles the one-row tile three vectors wide here into lane-by-lane
                // inserts and extracts around each step: the two-row tile computes the row
                // twice instead, the same sums (`[1, 64] x [64, 48]` 2.90 → 0.97 µs, `[11, 64] x
                // [64, 48]` 4.28 → 2.04, medians of 20 alternating runs).
                _ if V == 3 => {
                    let mut pair = [[[0.0f32; L]; V]; 2];
                    let twice = Matrix {
                        ptr: a_rows.ptr,
                        strides: (0, a_rows.strides.1),
                    };
                    lanes_tile::<2, V, L>(k, twice, b, pair.as_mut_ptr().cast(), (V * L) as isize);
                    dst.cast::<[[f32; L]; V]>().write(pair[0]);
                }
                _ => lanes_tile::<1, V, L>(k, a_rows, b, dst, dst_stride),
            }
        }
        if !full {
            for (r, row) in staged.iter().take(rows).enumerate() {
                for (j, &value) in row.as_flattened().iter().take(cols).enumerate() {
                    let at = r as isize * c_strides.0 + j as isize * c_strides.1;
                    // SAFETY: row r < rows, column j < cols of the tile of C.
                    unsafe { *c_rows.offset(at) = value };
                }
            }
        }
        i0 += rows;
    }
}

/// [`tile`], or with `L = 8` (the AVX2 tile) [`tile_avx2`], the same sums.
///
/// # Safety
/// As for [`tile`]; with `L = 8`, the CPU has AVX2 and FMA.
#[inline(always)]
unsafe fn lanes_tile<const R: usize, const V: usize, const L: usize>(
    k: usize,
    a: Matrix,
    b: Matrix,
    dst: *mut f32,
    dst_stride: isize,
) {
    #[cfg(target_arch = "x86_64")]
    if L == 8 {
        // SAFETY: as this function's contract says.
        return unsafe { tile_avx2::<R, V>(k, a, b, dst, dst_stride) };
    }
    // SAFETY: as this function's contract says.
    unsafe { tile::<R, V, L>(k, a, (b, None), dst, dst_stride) }
}

/// [`tile`] eight lanes wide in AVX2 vectors, each lane the same fused multiply-adds in the same
/// order. [`tile`]'s plain arrays at eight lanes now compile to half vectors, blends and spills
/// (with Rust 1.95 on an AMD EPYC, Zen 3: `[64, 64] x [64, 64]` took 15.3 µs against sgemm's
/// 8.6, where an earlier compiler had made 6.6 of it).
///
/// # Safety
/// As for [`tile`] with `L = 8`; the CPU has AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
#[allow(
    clippy::needless_range_loop,
    reason = "indexed loops over constant bounds keep the accumulators in registers"
)]
pub(super) unsafe fn tile_avx2<const R: usize, const V: usize>(
    k: usize,
    a: Matrix,
    b: Matrix,
    dst: *mut f32,
    dst_stride: isize,
) {
    use std::arch::x86_64::*;
    let mut acc = [[_mm256_setzero_ps(); V]; R];
    for p in 0..k {
        // SAFETY: row p of B has 8·V readable values.
        let row = unsafe { b.ptr.offset(p as isize * b.strides.0) };
        let mut bv = [_mm256_setzero_ps(); V];
        for v in 0..V {
            // SAFETY: values 8v.. of the row.
            bv[v] = unsafe { _mm256_loadu_ps(row.add(v * 8)) };
        }
        for r in 0..R {
            // SAFETY: row r, column p of A.
            let x = unsafe { *a.ptr.offset(r as isize * a.strides.0 + p as isize * a.strides.1) };
            let x = _mm256_set1_ps(x);
            for v in 0..V {
                acc[r][v] = _mm256_fmadd_ps(x, bv[v], acc[r][v]);
            }
        }
    }
    for r in 0..R {
        for v in 0..V {
            // SAFETY: row r of the destination has 8·V writable, contiguous elements.
            unsafe { _mm256_storeu_ps(dst.offset(r as isize * dst_stride).add(v * 8), acc[r][v]) };
        }
    }
}

/// One tile of C, `R` rows by `V` vectors of `L` lanes, written whole to `dst` (rows
/// `dst_stride` apart), with the rows of B it reads copied to `copy_b` if given (`k` rows of
/// `V·L` values, one after the other). Plain arrays with fused multiply-adds: inlined into a
/// function built for AVX-512 or AVX2, they compile to vector registers.
///
/// # Safety
/// `a` addresses `R` rows of `k` values; `b` addresses `k` rows of `V·L` values with column
/// stride 1; `copy_b` is valid for writing `k·V·L` values that alias nothing else here; `dst` is
/// valid for writing `R` rows of `V·L` contiguous values.
#[inline(always)]
#[allow(
    clippy::needless_range_loop,
    reason = "indexed loops over constant bounds keep the accumulators in registers"
)]
pub(super) unsafe fn tile<const R: usize, const V: usize, const L: usize>(
    k: usize,
    a: Matrix,
    (b, copy_b): (Matrix, Option<*mut f32>),
    dst: *mut f32,
    dst_stride: isize,
) {
    let mut acc = [[[0.0f32; L]; V]; R];
    // Indexed loops over constant bounds: the form LLVM keeps in registers (iterator adaptors
    // here spilled the accumulators to the stack on every step).
    for p in 0..k {
        // SAFETY: row p of B has V·L readable values.
        let row = unsafe { b.ptr.offset(p as isize * b.strides.0) };
        let mut bv = [[0.0f32; L]; V];
        for v in 0..V {
            // SAFETY: values v·L.. of the row; `[f32; L]` has f32's alignment.
            bv[v] = unsafe { row.add(v * L).cast::<[f32; L]>().read() };
        }
        if let Some(panel) = copy_b {
            // SAFETY: row p of the copy has V·L writable values.
            unsafe { panel.add(p * V * L).cast::<[[f32; L]; V]>().write(bv) };
        }
        for r in 0..R {
            // SAFETY: row r, column p of A.
            let x = unsafe { *a.ptr.offset(r as isize * a.strides.0 + p as isize * a.strides.1) };
            for v in 0..V {
                for l in 0..L {
                    acc[r][v][l] = x.mul_add(bv[v][l], acc[r][v][l]);
                }
            }
        }
    }
    for (r, acc_row) in acc.iter().enumerate() {
        // SAFETY: row r of the destination has V·L writable, contiguous elements.
        unsafe {
            dst.offset(r as isize * dst_stride)
                .cast::<[[f32; L]; V]>()
                .write(*acc_row)
        };
    }
}

#[cfg(test)]
pub(super) mod tests {
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

    /// `C = A·B` by sgemm, row-major (the packed-panel path's tests compare with it too).
    pub(in crate::lazy) fn sgemm((m, k, n): (usize, usize, usize), a: Matrix, b: Matrix) -> Vec<f32> {
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

    /// Every instruction set this CPU can run the path with (AVX2 too where AVX-512 is the
    /// default, so both are tested here).
    fn isas() -> Vec<Isa> {
        #[cfg_attr(
            not(target_arch = "x86_64"),
            allow(unused_mut, reason = "x86-64 adds its sets")
        )]
        let mut isas = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                isas.push(Isa::Avx512);
            }
            if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                isas.push(Isa::Avx2);
            }
        }
        isas
    }

    /// `C = A·B` by the direct path on `isa` into a row-major buffer with guard values after it,
    /// or `None` if the path declined (then the buffer must be untouched).
    fn direct(isa: Isa, dims: (usize, usize, usize), a: Matrix, b: Matrix) -> Option<Vec<f32>> {
        const GUARD: usize = 17;
        let mut c = vec![-7.0f32; dims.0 * dims.2 + GUARD];
        // SAFETY: as for `sgemm`; c has room for m×n values; `isa` is one this CPU runs.
        let ran = unsafe { run_with(isa, dims, a, b, c.as_mut_ptr()) };
        let tail = c.split_off(dims.0 * dims.2);
        assert!(tail.iter().all(|&v| v == -7.0), "{isa:?} {dims:?}: wrote past C");
        if !ran {
            assert!(
                c.iter().all(|&v| v == -7.0),
                "{isa:?} {dims:?}: declined but wrote C"
            );
        }
        ran.then_some(c)
    }

    /// Each 8 × 8 block of a transposed B is copied through registers on AVX2: element (i, j)
    /// of the block goes to (j, i).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn transposes_an_8x8_block() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return;
        }
        let values: Vec<f32> = (0..64).map(|v| v as f32).collect();
        let mut out = [[0.0f32; 8]; 8];
        // SAFETY: the CPU has AVX2 (checked); both blocks hold 8 rows of 8 values.
        unsafe { transpose_block_avx2(values.as_ptr(), 8, out.as_mut_ptr().cast(), 8) };
        for (i, row) in out.iter().enumerate() {
            for (j, &v) in row.iter().enumerate() {
                assert_eq!(v, (8 * j + i) as f32, "element ({i}, {j})");
            }
        }
    }

    #[test]
    fn hand_computed_product() {
        // [[1, 2], [3, 4]] · [[1, 1, …], [0, 1, …, 39]]: C[0, j] = 1 + 2j, C[1, j] = 3 + 4j.
        let a = [1.0, 2.0, 3.0, 4.0];
        let b: Vec<f32> = (0..80)
            .map(|i| if i < 40 { 1.0 } else { (i - 40) as f32 })
            .collect();
        let want: Vec<f32> = (0..80)
            .map(|i| {
                if i < 40 {
                    1.0 + 2.0 * i as f32
                } else {
                    3.0 + 4.0 * (i - 40) as f32
                }
            })
            .collect();
        let (a, b) = (matrix(&a, (2, 1)), matrix(&b, (40, 1)));
        for isa in isas() {
            assert_eq!(direct(isa, (2, 2, 40), a, b).as_ref(), Some(&want), "{isa:?}");
        }
        let mut c = vec![0.0; 80];
        // SAFETY: as above.
        let ran = unsafe { try_run((2, 2, 40), a, b, c.as_mut_ptr(), usize::MAX) };
        assert_eq!(ran, Isa::detect().is_some(), "taken wherever the CPU can");
    }

    /// The path's claim: on every shape and layout it takes, each element is sgemm's, bit for
    /// bit (the same fused multiply-adds in the same order; sgemm's AVX-512 and AVX2 kernels
    /// both sum that way). Shapes straddle the tile edges (4 or 6 rows, 64 or 16 columns), the
    /// depth bounds and AVX2's row bound for deeper products; values include zeros of both
    /// signs, infinities and NaN, whose propagation must match too.
    #[test]
    fn matches_sgemm_bit_for_bit() {
        let mut rng = StdRng::seed_from_u64(11);
        let special = [0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1e-40, 3e38];
        for isa in isas() {
            for m in [1, 2, 3, 4, 5, 7, 10, 15, 23, 24, 33] {
                for k in [1, 2, 17, 64, 65, 128, 200, 256, 257] {
                    for n in [1, 15, 16, 17, 32, 33, 63, 64, 65, 130] {
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
                            let got = direct(isa, (m, k, n), a, b);
                            // Taken when C is wide enough and the panel shallow enough one way
                            // (a width over 16, and that width as a multiple of 16 up to 64,
                            // times k, within 4096), in every layout; with AVX2, by `m` only
                            // when C is at most 16 wide.
                            // With AVX2 also up to a depth of 256 when the other way has fewer
                            // than 24 rows, but for a C of up to 4 rows by B's columns.
                            let fit = |w: usize, rows: usize, deep: bool| {
                                w > 16 && k * w.min(64).next_multiple_of(16) <= 4096
                                    || deep && isa == Isa::Avx2 && w > 16 && rows < 24 && k <= 256
                            };
                            let (by_m, few_rows) = (isa == Isa::Avx512 || n <= 16, m <= 4 && !b_rows);
                            assert_eq!(
                                got.is_some(),
                                fit(n, m, !few_rows) || fit(m, n, true) && by_m,
                                "{isa:?} ({m}, {k}, {n}) {layout}"
                            );
                            if let Some(got) = got {
                                let want = sgemm((m, k, n), a, b);
                                let same = got.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits());
                                assert!(
                                    same,
                                    "{isa:?} ({m}, {k}, {n}) layout {layout}: {got:?} != {want:?}"
                                );
                            }
                        }
                    }
                }
            }
        }
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
        let u = f64::from(f32::EPSILON) / 2.0;
        let gamma = k as f64 * u / (1.0 - k as f64 * u);
        // B read in place, and B transposed (packed first).
        for (isa, b_rows) in isas().into_iter().flat_map(|isa| [(isa, true), (isa, false)]) {
            let b_strides = strides(k, n, b_rows);
            let b_at = |p: usize, j: usize| f64::from(b[p * b_strides.0 as usize + j * b_strides.1 as usize]);
            let got = direct(isa, (m, k, n), matrix(&a, (k as isize, 1)), matrix(&b, b_strides));
            let Some(got) = got else {
                assert!(
                    isa == Isa::Avx2 && !b_rows,
                    "{isa:?} declined B row-major {b_rows}"
                );
                continue;
            };
            for i in 0..m {
                for j in 0..n {
                    let terms = (0..k).map(|p| f64::from(a[i * k + p]) * b_at(p, j));
                    let exact: f64 = terms.clone().sum();
                    let magnitude: f64 = terms.map(f64::abs).sum();
                    let err = (f64::from(got[i * n + j]) - exact).abs();
                    assert!(
                        err <= gamma * magnitude,
                        "{isa:?} C[{i}, {j}] (B row-major {b_rows}): error {err:e}"
                    );
                }
            }
        }
    }

    #[test]
    fn declines_deep_large_or_narrow_products() {
        let ones = vec![1.0f32; 129 * 64];
        let row_major = |cols: usize| matrix(&ones, (cols as isize, 1));
        for isa in isas() {
            let declined = |dims: (usize, usize, usize)| {
                direct(isa, dims, row_major(dims.1), row_major(dims.2)).is_none()
            };
            assert!(
                declined((65, 65, 65)),
                "k = 65 is too deep for a C 64 or more wide both ways"
            );
            assert!(!declined((16, 128, 32)), "k = 128 fits a C 32 wide");
            assert!(declined((16, 64, 16)), "C is 16 × 16");
            if isa == Isa::Avx512 {
                assert!(declined((16, 129, 32)), "k = 129 does not");
            } else {
                assert!(!declined((16, 256, 32)), "AVX2: k = 256 fits a C of 16 rows");
                assert!(declined((16, 257, 32)), "AVX2: k = 257 does not");
                assert!(declined((24, 129, 32)), "AVX2: nor does k = 129 a C of 24 rows");
                let by_columns = |rows: usize| matrix(&ones, (1, rows as isize));
                let few_rows = direct(isa, (4, 200, 32), row_major(200), by_columns(200));
                assert!(
                    few_rows.is_none(),
                    "AVX2: 4 rows by B's columns are left to few_rows"
                );
            }
        }
        let mut c = [0.0f32; 32 * 32];
        // SAFETY: 32×64 and 64×32 lie within `ones`; c is 32×32.
        let ran = unsafe {
            try_run(
                (32, 64, 32),
                row_major(64),
                row_major(32),
                c.as_mut_ptr(),
                32 * 64 * 32,
            )
        };
        assert!(!ran, "a product of max_macs multiply-adds goes to sgemm");
    }
}
