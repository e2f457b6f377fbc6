//! Products too deep or too large for the direct tile, on CPUs with AVX2 and FMA but not
//! AVX-512 (which have their own packed panels): a training step's forward products and
//! gradients at batch sizes of some tens to a few hundred.
//!
//! A is copied once, by tiles of six rows (see [`pack_tile`]); B one panel of 16 columns and up to
//! 256 rows at a time (16 KiB, which stays in L1). The direct tile's AVX2 kernel (6 rows × 16
//! columns) keeps twelve accumulators where sgemm's AVX2 kernel keeps eight. On an AMD EPYC
//! (Zen 3) core whose multiply-adds peak at 96–99 GFLOP/s, the 784→512→256→10 training step's
//! four large products ran at 83–86 GFLOP/s, 0.91–0.95 of sgemm's time (fastest of 9
//! alternating runs), and `[512, 512] x [512, 512]` as fast as sgemm.
//!
//! Every element is sgemm's, bit for bit: `k` is cut into sgemm's blocks of 256 from the start,
//! each block's products are one chain of fused multiply-adds from `+0.0` in order, and each
//! block after the first is added to C as sgemm adds it (`c + ab`, rounded once).

#![cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, unused_imports, unused_variables, reason = "the path is x86-64's")
)]

use std::ops::Range;

use super::aligned::StackPanel;
use super::panel_gemm::DEPTH;
use super::small_gemm::Matrix;
use super::storage::Storage;

/// Columns of C per panel: two AVX2 vectors.
const WIDTH: usize = 16;
/// Rows of C per tile: 6 × 2 vectors are twelve accumulators, beside B's two vectors and A's
/// broadcast, of the sixteen registers.
const ROWS: usize = 6;
/// The most values of A a product takes (512 KiB): each depth block of A is read again for
/// every panel, from L2 only if it fits there (512 KiB here, beside the panel). A larger A is
/// left to sgemm, which blocks A's rows too: `[820, 505] x [505, 65]` took 1.19 times sgemm's
/// time here, `[328, 1015] x [1015, 138]` 1.30.
const MAX_A: usize = 1 << 17;
/// The fewest rows of C taken: with fewer, the copies and the tiles' fixed work are not repaid
/// (`[16, 283] x [283, 25]` took 1.8 times sgemm's time, `[14, 647] x [647, 16]` 1.2).
pub(super) const MIN_ROWS: usize = 24;

/// `C = A·B` (`m×k` times `k×n`, C row-major with row stride `n`), for sharing between threads:
/// first A's copy by tiles of rows ([`PanelsAvx2::pack`]), then C by panels of columns
/// ([`PanelsAvx2::run`]).
pub(super) struct PanelsAvx2 {
    dims: (usize, usize, usize),
    a: Matrix,
    /// A pooled buffer with room for A's copy (see [`pack_tile`]); its length stays 0, as its
    /// values are written through `a_tiles_ptr` by `pack`.
    a_tiles: Storage,
    a_tiles_ptr: *mut f32,
    b: Matrix,
}

// SAFETY: a `PanelsAvx2` reads A and B; each call of `pack` writes only its own tiles of A's copy
// and each call of `run` only its own panels of C, and `run` reads the copy only after `pack`
// has written all of it (their contracts).
unsafe impl Sync for PanelsAvx2 {}

impl PanelsAvx2 {
    /// The product, with room for its copy of A, if this path takes it: the CPU has AVX2 and FMA
    /// but not AVX-512, C has at least [`MIN_ROWS`] rows and whole panels, and A has at most
    /// [`MAX_A`] values. A C of a last, narrower panel lost to sgemm on most shapes, by up to
    /// 1.2–1.3 times its time (`[39, 508] x [508, 25]`, `[272, 139] x [139, 67]`, fastest of 7
    /// alternating runs), and is left to it.
    pub(super) fn new(dims: (usize, usize, usize), a: Matrix, b: Matrix) -> Option<PanelsAvx2> {
        let (m, k, n) = dims;
        let takes = m >= MIN_ROWS
            && k > 0
            && n % WIDTH == 0
            && m.saturating_mul(k) <= MAX_A
            && super::small_gemm::avx2_only();
        if !takes {
            return None;
        }
        let mut a_tiles = super::alloc::output(m.next_multiple_of(ROWS) * k);
        let a_tiles_ptr = a_tiles.spare_capacity_mut().as_mut_ptr().cast();
        Some(PanelsAvx2 {
            dims,
            a,
            a_tiles,
            a_tiles_ptr,
            b,
        })
    }

    /// The room A's copy took, for the pool once the product has run.
    pub(super) fn into_a_tiles(self) -> Storage {
        self.a_tiles
    }

    /// How many tiles of rows A's copy has.
    pub(super) fn tiles(&self) -> usize {
        self.dims.0.div_ceil(ROWS)
    }

    /// Copies tiles `tiles` of A (see [`pack_tile`]).
    ///
    /// # Safety
    /// `a` with its strides must address an `m×k` matrix within its allocation; no other thread
    /// may copy these tiles or run panels meanwhile.
    pub(super) unsafe fn pack(&self, tiles: Range<usize>) {
        #[cfg(target_arch = "x86_64")]
        for t in tiles {
            // SAFETY: `new` checked that the CPU has AVX2; the rest is the caller's promise.
            unsafe { pack_tile(self, t) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = tiles;
            unreachable!("`new` takes no product off x86-64")
        }
    }

    /// How many panels C has (the last may be narrower).
    pub(super) fn panels(&self) -> usize {
        self.dims.2.div_ceil(WIDTH)
    }

    /// Computes panels `panels` of C (all of their rows).
    ///
    /// # Safety
    /// `pack` must have copied every tile of A, and its writes must be visible to this thread;
    /// `b` with its strides must address a `k×n` matrix within its allocation; `c` must be valid
    /// for writing `m×n` row-major values that do not alias it, and no other thread may write these
    /// panels meanwhile.
    pub(super) unsafe fn run(&self, c: *mut f32, panels: Range<usize>) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `new` checked that the CPU has AVX2 and FMA; the rest is the caller's promise.
        unsafe {
            run_avx2(self, c, panels)
        };
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (c, panels);
            unreachable!("`new` takes no product off x86-64")
        }
    }
}

/// Copies tile `t` of A (rows `6t..6t + 6`, zeros past `m`): for each `p` in order, its six
/// values of column `p`. A tile then reads one stream, at offsets the instructions carry, where
/// in place each of its six rows was a stream of its own (`[128, 256] x [256, 512]` at 61
/// GFLOP/s in place, 80 from the copy).
///
/// Whole tiles of the two layouts a step has are copied in vectors: A by columns (a gradient's
/// `dYᵀ`) six values at a time, A by rows in 8 × 8 blocks transposed in registers. Element by
/// element, the copy took 3.4 % of the 784→512→256→10 training step's samples on one thread,
/// and on two 5.7 %, all on one thread while the other waited; so, 2.6 %, and with the tiles
/// shared between the threads (see `run_panels_avx2`) 1.4 % and 1.1 % (`perf`).
///
/// # Safety
/// As for [`PanelsAvx2::pack`]; the CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn pack_tile(product: &PanelsAvx2, t: usize) {
    use std::arch::x86_64::*;
    let ((m, k, _), a) = (product.dims, product.a);
    // SAFETY (every access below): rows 6t.. of A up to m, columns up to k; tile t of the copy,
    // 6·k values from 6t·k, within the room `new` made for the copy.
    let (src, tile) = (a.at(t * ROWS, 0), unsafe {
        product.a_tiles_ptr.add(t * ROWS * k)
    });
    let rows = ROWS.min(m - t * ROWS);
    let mut done = 0;
    if rows == ROWS && a.strides.0 == 1 {
        for p in 0..k {
            unsafe { std::ptr::copy_nonoverlapping(src.at(0, p).ptr, tile.add(p * ROWS), ROWS) };
        }
        done = k;
    } else if rows == ROWS && a.strides.1 == 1 {
        for p in (0..k - k % 8).step_by(8) {
            let zero = _mm256_setzero_ps();
            let block = std::array::from_fn(|r| match r < ROWS {
                true => unsafe { _mm256_loadu_ps(src.at(r, p).ptr) },
                false => zero,
            });
            for (j, column) in super::small_gemm::transpose_8x8(block).into_iter().enumerate() {
                // The column's six values: four, then two.
                let dst = unsafe { tile.add((p + j) * ROWS) };
                unsafe {
                    _mm_storeu_ps(dst, _mm256_castps256_ps128(column));
                    let high = _mm256_extractf128_ps::<1>(column);
                    _mm_store_sd(dst.add(4).cast(), _mm_castps_pd(high));
                }
            }
        }
        done = k - k % 8;
    }
    for p in done..k {
        for r in 0..ROWS {
            let value = if r < rows {
                unsafe { *src.at(r, p).ptr }
            } else {
                0.0
            };
            unsafe { tile.add(p * ROWS + r).write(value) };
        }
    }
}

/// [`PanelsAvx2::run`]: depth block by depth block, so that block of A stays in L2 across the
/// panels; each panel of B copied, then every tile of its rows.
///
/// # Safety
/// As for [`PanelsAvx2::run`]; the CPU has AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_avx2(product: &PanelsAvx2, c: *mut f32, panels: Range<usize>) {
    use super::small_gemm::{pack_panel, tile_avx2};
    let PanelsAvx2 {
        dims: (m, k, n),
        a_tiles_ptr,
        b,
        ..
    } = *product;
    // Only each block's first `depth` rows are written, and only those are read.
    let mut storage = StackPanel::<{ DEPTH * WIDTH }>::new();
    let panel = Matrix {
        ptr: storage.as_mut_ptr(),
        strides: (WIDTH as isize, 1),
    };
    for p0 in (0..k).step_by(DEPTH) {
        let depth = DEPTH.min(k - p0);
        for j0 in panels.clone().map(|j| j * WIDTH) {
            let cols = WIDTH.min(n - j0);
            // SAFETY: rows p0.. and columns j0.. of B lie within it; the panel holds
            // DEPTH·WIDTH values; the CPU has AVX2.
            unsafe { pack_panel::<false>((depth, cols, WIDTH), b.at(p0, j0), panel.ptr.cast_mut()) };
            for t in 0..m.div_ceil(ROWS) {
                let a_tile = Matrix {
                    ptr: a_tiles_ptr.wrapping_add((t * k + p0) * ROWS),
                    strides: (1, ROWS as isize),
                };
                let rows = ROWS.min(m - t * ROWS);
                let c_tile = c.wrapping_add(t * ROWS * n + j0);
                if p0 == 0 && rows == ROWS && cols == WIDTH {
                    // SAFETY: the tile's rows of C; the CPU has AVX2 and FMA.
                    unsafe { tile_avx2::<ROWS, 2>(depth, a_tile, panel, c_tile, n as isize) };
                    continue;
                }
                let mut staged = [[0.0f32; WIDTH]; ROWS];
                let dst = staged.as_mut_ptr().cast();
                // SAFETY: `staged` holds the tile's rows. A last tile of fewer rows computes only
                // as many as it needs, rounded up to 1, 2, 4 or 6 (the copy's rows past `m` are
                // zeros).
                unsafe {
                    match rows {
                        1 => tile_avx2::<1, 2>(depth, a_tile, panel, dst, WIDTH as isize),
                        2 => tile_avx2::<2, 2>(depth, a_tile, panel, dst, WIDTH as isize),
                        3 | 4 => tile_avx2::<4, 2>(depth, a_tile, panel, dst, WIDTH as isize),
                        _ => tile_avx2::<ROWS, 2>(depth, a_tile, panel, dst, WIDTH as isize),
                    }
                };
                for (r, row) in staged[..rows].iter().enumerate() {
                    if cols == WIDTH {
                        // A whole row of a later block at once, in vectors.
                        // SAFETY: row r of the tile of C, WIDTH values, written by the first
                        // block.
                        unsafe {
                            let whole = c_tile.add(r * n).cast::<[f32; WIDTH]>();
                            let mut sums = whole.read_unaligned();
                            for (c, &ab) in sums.iter_mut().zip(row) {
                                *c = if p0 == 0 { ab } else { *c + ab };
                            }
                            whole.write_unaligned(sums);
                        }
                        continue;
                    }
                    for (j, &ab) in row[..cols].iter().enumerate() {
                        // SAFETY: element (r, j) of the tile of C; written by the first block if
                        // p0 > 0.
                        unsafe {
                            let dst = c_tile.add(r * n + j);
                            *dst = if p0 == 0 { ab } else { *dst + ab };
                        }
                    }
                }
            }
        }
    }
}
