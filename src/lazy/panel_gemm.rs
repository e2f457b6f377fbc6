//! Products deeper than the direct tile takes, with A's rows or columns contiguous and A small
//! enough to stay in L2: a training step's forward products, input gradients and the smaller
//! weight gradients at batch sizes up to a few hundred (`[128, 784] x [784, 512]`,
//! `[128, 256] x [256, 512]`, `[256, 128] x [128, 512]` with A a transposed batch of gradients).
//! A larger A runs as products of blocks of its rows where its rows are contiguous, and on sgemm
//! where its columns are (see `matmul`).
//!
//! A matrix times a vector runs here too, as its transpose (see `matmul`), and so does a vector
//! (or up to eight rows) times a matrix, whose panels are read in place, by rows or by columns.
//!
//! B is copied one panel of 48 columns and up to 256 rows at a time (48 KiB; a whole panel of B by
//! rows by the first tile that reads it) and A is read in place (or, a large column-major A, from a
//! copy in tiles), eight rows per tile, by the direct tile's register kernel: 24 multiply-adds per
//! step along `k` for three vector loads of B and eight of A. Products here are bound by loads more
//! than by multiply-adds: panels of 32 columns (16 multiply-adds for ten loads) took 5–20 % longer
//! on the training step's products (one thread, the two alternating in one process; `[128, 256] x
//! [256, 40]` 36 % longer). sgemm's AVX-512 kernel broadcasts 16 values of A for each vector of B,
//! about one load per multiply-add, and copies A as well as B.
//!
//! Every element is sgemm's, bit for bit: `k` is cut into sgemm's blocks of 256 from the
//! start, each block's products are one chain of fused multiply-adds from `+0.0` in order, and
//! each block after the first is added to C as sgemm adds it (`c + ab`, rounded once). The one
//! exception is which NaN comes out where two NaNs meet in one instruction: that follows the
//! order of its operands, which the compiler picks (sgemm's own edge and inner tiles differ in
//! it).

use std::ops::Range;

use super::aligned::StackPanel;
use super::small_gemm::{LANES, Matrix, avx512, pack_panel, tile};
use super::storage::Storage;

/// sgemm's depth block (matrixmultiply's default `KC` for f32): blocks cut elsewhere would round
/// differently. A build that sets `MATMUL_SGEMM_KC` changes sgemm's; results then stay within
/// rounding of each other but are no longer the same bits (the unit test below would say so).
/// Every path that must give sgemm's bits cuts `k` at these blocks.
pub(super) const DEPTH: usize = 256;
/// Columns of C per panel: three vectors.
const WIDTH: usize = 3 * LANES;
/// C at least this wide runs on the panels (narrower, most of a tile's lanes would be idle); a
/// last panel narrower than [`WIDTH`] takes only the vectors it needs.
const MIN_WIDTH: usize = 2 * LANES;
/// Rows of C per tile: 8 × 3 vectors are 24 accumulators, enough to hide the multiply-adds'
/// latency, and leave registers for B's three vectors and A's broadcasts.
const ROWS: usize = 8;
/// The most values of A one product takes (512 KiB). Every panel reads all of A, which must
/// stay in L2 beside what the panels bring in. Taken whole, larger ones lost to sgemm on an
/// earlier machine (`[512, 512] x [512, 512]` 1.90 against 1.76 ms, `[1024, 1024] x [1024, 1024]`
/// 18.7 against 14.8); run by blocks of rows of at most this many values, they beat it on this
/// one (see `matmul::row_blocks`).
const MAX_A: usize = 1 << 17;

/// A column-major A is copied in tiles (see [`Product::with_a_tiles`]) when it has at least this
/// many rows and C this many columns. One thread, medians of 10 to 16 alternating runs against
/// reading it in place: `[512, 128] x [128, 784]` (a weight gradient of the 784→512 layer) 1.58
/// → 1.43 ms, `[1024, 128] x [128, 1024]` 5.2 → 4.2 ms, `[512, 256] x [256, 256]` 0.96 → 0.90
/// ms, `[768, 128] x [128, 512]` 1.77 → 1.43 ms; `[256, 128] x [128, 512]` 431 → 445 µs by
/// medians, 341 → 264 by the fastest runs. Smaller, the copy was not repaid: `[128, 64] x [64,
/// 784]` 167 → 182 µs, `[256, 256] x [256, 64]` 109 → 132.
const TILED_A_MIN: usize = 256;

/// `C = A·B` (`m×k` times `k×n`, C row-major with row stride `n`), for sharing between threads
/// by parts of C's columns or rows.
#[derive(Clone, Copy)]
pub(super) struct Product {
    dims: (usize, usize, usize),
    a: Matrix,
    b: Matrix,
    /// A is read from a copy in tiles (see [`Product::with_a_tiles`]), not through `a`'s strides.
    a_tiled: bool,
    /// What C's values go through once they are final.
    finish: Option<Finish>,
}

/// A product's epilogue as the panels apply it (see `epilogue`): a bias row added to C's rows
/// (`b + p` where `first`, else `p + b`), then relu, or relu's gradient mask `where(y <= s, s,
/// p)`. Each tile of C goes through it as soon as its last depth block is written, on the thread
/// that computed it, while the tile is in L1 (a single row of C read by strips, once its strips
/// are summed). As a pass over C after the product, on two threads
/// half of each row came from the other core's cache, and at a batch of 4096 all of C from L3:
/// `[4096, 784] x [784, 512]ᵀ + b, relu` took 0.68–0.85 ms more than the product alone on one
/// thread, and takes 0.01–0.13 more this way (two builds alternating); the 784→512→256→10
/// training step at batch 128 on two threads, median paired ratio 0.993 in eight pairs (one
/// thread 0.998 in twelve). Each value goes through the same operations as the unfused kernel's,
/// in the same order.
#[derive(Clone, Copy)]
#[cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, reason = "the path is x86-64's")
)]
pub(super) struct Finish {
    /// The bias row (C's width), and whether it is the sum's first operand.
    pub(super) bias: Option<(*const f32, bool)>,
    pub(super) relu: bool,
    /// `s` and `y` (row-major, C's shape) of the mask.
    pub(super) mask: Option<(f32, *const f32)>,
}

impl Finish {
    /// The same, for a product whose C starts at row `row` of this one's (row length `n`).
    pub(super) fn starting_at_row(self, row: usize, n: usize) -> Finish {
        Finish {
            mask: self.mask.map(|(s, y)| (s, y.wrapping_add(row * n))),
            ..self
        }
    }

    /// Applies it to rows `rows` and columns `columns` of C (at `c`, row length `n`).
    ///
    /// # Safety
    /// `c` is valid for reading and writing those values, the bias row for reading `n` values and
    /// `y` for reading those rows of `n`; the CPU has AVX-512F.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn apply(self, c: *mut f32, n: usize, rows: Range<usize>, columns: Range<usize>) {
        use std::arch::x86_64::*;
        /// The bit that makes a NaN quiet.
        const QUIET: i32 = 0x0040_0000;
        let zero = _mm512_setzero_ps();
        for r in rows {
            for j in columns.clone().step_by(LANES) {
                // The lanes of this vector within `columns`: a masked load reads no others.
                let lanes = (1u32 << LANES.min(columns.end - j)) - 1;
                let lanes = lanes as __mmask16;
                let at = r * n + j;
                // SAFETY (each access): value `at` of C or `y`, `j` of the bias row, and the
                // vector's other lanes in `columns`, as this function's contract says.
                let mut p = unsafe { _mm512_maskz_loadu_ps(lanes, c.add(at)) };
                if let Some((bias, first)) = self.bias {
                    let b = unsafe { _mm512_maskz_loadu_ps(lanes, bias.add(j)) };
                    let (x, y) = if first { (b, p) } else { (p, b) };
                    // Where both are NaN, the unfused kernel's sum is x's, quieted; which operand
                    // the instruction takes first is the compiler's choice, so it is set here.
                    let quiet_x = _mm512_or_si512(_mm512_castps_si512(x), _mm512_set1_epi32(QUIET));
                    let x_nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x);
                    p = _mm512_mask_mov_ps(_mm512_add_ps(x, y), x_nan, _mm512_castsi512_ps(quiet_x));
                }
                if self.relu {
                    // `if x < 0 { 0 } else { x }`: NaN and -0.0 pass.
                    p = _mm512_mask_mov_ps(p, _mm512_cmp_ps_mask::<_CMP_LT_OQ>(p, zero), zero);
                }
                if let Some((s, y)) = self.mask {
                    let (s, y) = (_mm512_set1_ps(s), unsafe {
                        _mm512_maskz_loadu_ps(lanes, y.add(at))
                    });
                    // `y <= s` is false where `y` is NaN: `p` passes there.
                    p = _mm512_mask_mov_ps(p, _mm512_cmp_ps_mask::<_CMP_LE_OQ>(y, s), s);
                }
                unsafe { _mm512_mask_storeu_ps(c.add(at), lanes, p) };
            }
        }
    }

    /// Not reached: the packed panels run only where AVX-512 was detected.
    #[cfg(not(target_arch = "x86_64"))]
    unsafe fn apply(self, _: *mut f32, _: usize, _: Range<usize>, _: Range<usize>) {
        unreachable!("the packed panels run only on x86-64 with AVX-512")
    }
}

// SAFETY: a `Product` only describes its operands, which it reads; each call of `run` writes
// only its own panels of C.
unsafe impl Sync for Product {}

impl Product {
    /// The narrowest C this path takes, but for a few rows of A with B read by columns.
    pub(super) const MIN_WIDTH: usize = MIN_WIDTH;

    /// The product, if this path takes it: the CPU has AVX-512, A's rows or columns are
    /// contiguous, C is at least [`MIN_WIDTH`] wide (or any width, with at most one tile of rows
    /// and B read by columns), and A has at most [`MAX_A`] values. A column-major A (a weight
    /// gradient's `dYᵀ`) is read eight rows at a time from each column, as it lies: `[256, 128]
    /// x [128, 512]` took 353 µs here against sgemm's 400 (medians of 6 runs, one thread). Only
    /// with more than one tile of rows: [`tile_by_columns`], for fewer, reads A's rows as
    /// contiguous.
    pub(super) fn new(dims: (usize, usize, usize), a: Matrix, b: Matrix) -> Option<Product> {
        Self::taking(dims, a, b, false)
    }

    /// [`Product::new`] for a C of any width: for a product narrow both ways (fewer than
    /// [`MIN_WIDTH`] rows and columns), which no other path of ours takes, a tile's idle lanes
    /// cost less than sgemm's packing.
    pub(super) fn any_width(dims: (usize, usize, usize), a: Matrix, b: Matrix) -> Option<Product> {
        Self::taking(dims, a, b, true)
    }

    fn taking(dims: (usize, usize, usize), a: Matrix, b: Matrix, any_width: bool) -> Option<Product> {
        let (m, k, n) = dims;
        // A narrow C over a long B by columns: a `[16, 65536]` matrix times a vector took 0.8 ms
        // on sgemm, against 0.15 for PyTorch.
        let narrow = m <= ROWS && b.strides.0 == 1 && b.strides.1 != 1;
        let wide_enough = n >= MIN_WIDTH || narrow || any_width;
        let a_contiguous = a.strides.1 == 1 || (a.strides.0 == 1 && m > ROWS);
        let takes = m > 0 && k > 0 && wide_enough && m.saturating_mul(k) <= MAX_A && a_contiguous;
        (takes && avx512()).then_some(Product {
            dims,
            a,
            b,
            a_tiled: false,
            finish: None,
        })
    }

    /// The product with C's values going through `finish` once they are final.
    pub(super) fn finishing(self, finish: Option<Finish>) -> Product {
        Product { finish, ..self }
    }

    /// The product reading a column-major A (a weight gradient's `dYᵀ`) from a copy laid out
    /// tile by tile, with the copy, which must outlive every [`run`](Product::run) of it; the
    /// product unchanged, and no copy, if A's rows are contiguous or the product is small (see
    /// [`TILED_A_MIN`]).
    ///
    /// In place, a tile's eight rows at each step along `k` are a new cache line, a column of A
    /// apart: at 2 KiB (A of 512 rows) all of them fall in two sets of L1, which cannot hold a
    /// tile's lines until the next tile reads their other half. In the copy, each tile's rows
    /// are `k` runs of eight values one after the other. Results are the same bits either way.
    ///
    /// # Safety
    /// `a` with its strides must address an `m×k` matrix within its allocation.
    pub(super) unsafe fn with_a_tiles(self) -> (Product, Option<Storage>) {
        if !self.copies_a() {
            return (self, None);
        }
        let mut tiles = super::alloc::output(self.tiles_len());
        // SAFETY: as this function's contract says.
        let product = unsafe { self.in_tiles(&mut tiles) };
        (product, Some(tiles))
    }

    /// How many values [`with_a_tiles`](Product::with_a_tiles)'s copy of A holds.
    pub(super) fn tiles_len(&self) -> usize {
        let (m, k, _) = self.dims;
        m.next_multiple_of(ROWS) * k
    }

    /// Whether [`with_a_tiles`](Product::with_a_tiles) copies A.
    fn copies_a(&self) -> bool {
        let (m, _, n) = self.dims;
        !self.a_tiled && self.a.strides.1 != 1 && m >= TILED_A_MIN && n >= TILED_A_MIN
    }

    /// The product reading A from [`with_a_tiles`](Product::with_a_tiles)'s copy, made into
    /// `tiles` (its values replaced) whatever A's size.
    ///
    /// # Safety
    /// As for [`with_a_tiles`](Product::with_a_tiles); A's columns are contiguous.
    unsafe fn in_tiles(self, tiles: &mut Storage) -> Product {
        let (m, k, _) = self.dims;
        let a = self.a;
        debug_assert!(a.strides.0 == 1 && !self.a_tiled);
        let len = self.tiles_len();
        tiles.clear();
        assert!(
            tiles.capacity() >= len,
            "a copy of A in tiles needs room for {len} values"
        );
        let dst = tiles.spare_capacity_mut().as_mut_ptr().cast::<f32>();
        for t in 0..m.div_ceil(ROWS) {
            // A's columns are contiguous (`new` takes no other A whose rows are not).
            let rows = ROWS.min(m - t * ROWS);
            for p in 0..k {
                // SAFETY: rows t·ROWS.. of column p of A, contiguous; step p of tile t of the
                // copy, within its `len` values; the last tile's missing rows are zeros (never read,
                // but every value of the copy is then initialized).
                unsafe {
                    let (from, step) = (a.at(t * ROWS, p).ptr, dst.add((t * k + p) * ROWS));
                    if rows == ROWS {
                        // A copy of a constant size: a call to `memcpy` per step cost more.
                        step.cast::<[f32; ROWS]>()
                            .write(from.cast::<[f32; ROWS]>().read());
                    } else {
                        std::ptr::copy_nonoverlapping(from, step, rows);
                        std::ptr::write_bytes(step.add(rows), 0, ROWS - rows);
                    }
                }
            }
        }
        // SAFETY: every one of the `len` values was written above.
        unsafe { tiles.set_len(len) };
        let a = Matrix {
            ptr: tiles.as_ptr(),
            strides: (1, ROWS as isize),
        };
        Product {
            a,
            a_tiled: true,
            ..self
        }
    }

    /// Rows `i0..` of A from column `p0`, where a tile starting at `i0` reads them.
    fn a_at(&self, i0: usize, p0: usize) -> Matrix {
        if !self.a_tiled {
            return self.a.at(i0, p0);
        }
        // Row i0 lies in tile i0 / ROWS, which holds k steps of ROWS values.
        let offset = (i0 / ROWS * self.dims.1 + p0) * ROWS + i0 % ROWS;
        Matrix {
            ptr: self.a.ptr.wrapping_add(offset),
            strides: self.a.strides,
        }
    }

    /// The rows of each block (the last may have fewer) in which an `m×k` A too large for one
    /// product (see [`MAX_A`]) runs as products of blocks of rows: as few blocks as fit, of
    /// nearly equal sizes, each a multiple of the tile's rows. None if a tile's rows do not fit.
    pub(super) fn block_rows(m: usize, k: usize) -> Option<usize> {
        let max_rows = MAX_A / k.max(1) / ROWS * ROWS;
        let blocks = (max_rows > 0).then(|| m.div_ceil(max_rows))?;
        Some(m.div_ceil(blocks).next_multiple_of(ROWS).min(max_rows))
    }

    /// B's number of values, if the product has at most one tile of rows: then each value of B
    /// is read once, in place, and reading B is most of the work.
    pub(super) fn streams_b(&self) -> Option<usize> {
        let (m, k, n) = self.dims;
        (m <= ROWS).then_some(k * n)
    }

    /// How many panels C has (the last may be narrower).
    pub(super) fn panels(&self) -> usize {
        self.dims.2.div_ceil(WIDTH)
    }

    /// The columns of C's panels `panels`.
    pub(super) fn panel_columns(&self, panels: Range<usize>) -> Range<usize> {
        let n = self.dims.2;
        (panels.start * WIDTH).min(n)..(panels.end * WIDTH).min(n)
    }

    /// Part `part` of C's columns cut into `parts` with nearly equal numbers of vectors, for
    /// sharing between threads. Each part runs as panels from its first column, the last
    /// narrower where it must be.
    pub(super) fn part_columns(&self, part: usize, parts: usize) -> Range<usize> {
        even_part(self.dims.2, LANES, (part, parts))
    }

    /// Whether threads share the product by [`row_part`](Product::row_part)s, `parts` of them:
    /// where A is to be read from a copy in tiles (see [`with_a_tiles`](Product::with_a_tiles)),
    /// each thread then copies and reads only its own part. Each part has at least two tiles of
    /// rows: a part of at most one tile would read B's columns in place, and with them A by
    /// rows.
    pub(super) fn shares_rows(&self, parts: usize) -> bool {
        self.copies_a() && self.dims.0.div_ceil(ROWS) >= 2 * parts
    }

    /// [`row_part`](Product::row_part) `part` of `parts`, run into C (at `c`) from its own copy
    /// of its rows of A in tiles, made into `tiles` (room for the part's
    /// [`tiles_len`](Product::tiles_len) values).
    ///
    /// # Safety
    /// As for [`Product::run`] with the part's rows of C; `shares_rows(parts)`.
    pub(super) unsafe fn run_row_part(
        &self,
        c: *mut f32,
        (part, parts): (usize, usize),
        tiles: &mut Storage,
    ) {
        let (i0, rows) = self.row_part(part, parts);
        // SAFETY: the part's rows of A lie within A, whose columns are contiguous (`copies_a`).
        let rows = unsafe { rows.in_tiles(tiles) };
        // SAFETY: as this function's contract says; `tiles` lives until the part has run.
        unsafe { rows.run(c.wrapping_add(i0 * self.dims.2), 0..self.dims.2) };
    }

    /// Part `part` of A's rows cut into `parts` with nearly equal numbers of tiles (see
    /// [`shares_rows`](Product::shares_rows)): the first of those rows, and their product with
    /// all of B, which writes C's same rows (from that row's first value on).
    pub(super) fn row_part(&self, part: usize, parts: usize) -> (usize, Product) {
        debug_assert!(self.shares_rows(parts));
        let rows = even_part(self.dims.0, ROWS, (part, parts));
        let product = Product {
            dims: (rows.len(), self.dims.1, self.dims.2),
            a: self.a_at(rows.start, 0),
            finish: self.finish.map(|f| f.starting_at_row(rows.start, self.dims.2)),
            ..*self
        };
        (rows.start, product)
    }

    /// Computes columns `columns` of C (all of their rows), by panels from `columns.start`, a
    /// multiple of 16 (see [`panel_columns`](Product::panel_columns) and
    /// [`part_columns`](Product::part_columns)), each through the product's [`Finish`] if it
    /// has one.
    ///
    /// # Safety
    /// `a` and `b` with their strides must address `m×k` and `k×n` matrices within their
    /// allocations (for a product from [`with_a_tiles`](Product::with_a_tiles), its copy of A
    /// is still alive); `c` must be valid for writing `m×n` row-major values that alias
    /// neither, and no other thread may write these columns meanwhile; a finish's operands
    /// are readable as [`Finish::apply`] says.
    pub(super) unsafe fn run(&self, c: *mut f32, columns: Range<usize>) {
        debug_assert!(columns.start.is_multiple_of(LANES) && columns.end <= self.dims.2);
        // SAFETY: `new` checked that the CPU has AVX-512F; the rest is the caller's promise.
        unsafe { run_avx512(self, c, columns) };
    }
}

/// Part `part` of `parts` of `0..len`, cut into nearly equal numbers of whole units of `unit`
/// (the last unit may be partial).
fn even_part(len: usize, unit: usize, (part, parts): (usize, usize)) -> Range<usize> {
    let cut = |part: usize| (part * len.div_ceil(unit) / parts * unit).min(len);
    cut(part)..cut(part + 1)
}

/// [`Product::run`], compiled for AVX-512.
///
/// # Safety
/// As for [`Product::run`]; the CPU has AVX-512F.
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx512f"))]
unsafe fn run_avx512(product: &Product, c: *mut f32, columns: Range<usize>) {
    let Product {
        dims: (m, k, n),
        a,
        b,
        finish,
        ..
    } = *product;
    let columns = if m == 1 && b.strides.1 == 1 {
        // SAFETY: as this function's contract says.
        let rest = unsafe { vector_strips(k, a, b, c, columns.clone()) };
        if let Some(finish) = finish {
            // SAFETY: as this function's contract says; the strips' values are final.
            unsafe { finish.apply(c, n, 0..1, columns.start..rest.start) };
        }
        rest
    } else {
        columns
    };
    let end = columns.end;
    // Only each block's first `depth` rows are written, and only those are read.
    let mut panel = StackPanel::<{ DEPTH * WIDTH }>::new();
    let panel_ptr = panel.as_mut_ptr();
    for j0 in columns.step_by(WIDTH) {
        let cols = WIDTH.min(end - j0);
        // A narrower last panel is copied only as wide as the vectors its tiles read.
        let width = cols.next_multiple_of(LANES);
        let b_panel = Matrix {
            ptr: panel_ptr,
            strides: (width as isize, 1),
        };
        for p0 in (0..k).step_by(DEPTH) {
            let depth = DEPTH.min(k - p0);
            // With one tile of rows, each value of the panel is read once: a whole panel is
            // read in place rather than copied first, by rows where B's rows are contiguous (a
            // vector times a matrix: 310 against 150 µs for PyTorch at 1024², copying
            // included), else by columns where those are, and then also a narrower last panel
            // (see `tile_by_columns`).
            let by_rows = b.strides.1 == 1;
            let by_columns = !by_rows && b.strides.0 == 1;
            let in_place = m <= ROWS && ((cols == WIDTH && by_rows) || by_columns);
            // A whole panel of B by rows is copied by the first tile of rows as it reads it,
            // the copy's loads from L2 or beyond overlapping that tile's multiply-adds: one
            // thread, alternating, `[128, 256] x [256, 512]` 209–211 → 194–198 µs, `[512,
            // 128] x [128, 784]` (A by columns) 634–641 → 602–622.
            let copied_by_tile = !in_place && by_rows && cols == WIDTH && m >= ROWS;
            let b_panel = if in_place {
                b.at(p0, j0)
            } else {
                if !copied_by_tile {
                    // SAFETY: rows p0.. and columns j0.. of B lie within it; the panel holds
                    // DEPTH·WIDTH values.
                    unsafe { pack_panel::<true>((depth, cols, width), b.at(p0, j0), panel_ptr) };
                }
                b_panel
            };
            let first = p0 == 0;
            // The epilogue, on each tile of the last depth block once it is written (in L1).
            let finish = finish.filter(|_| p0 + depth == k);
            let mut i0 = 0;
            while i0 < m {
                let rows = match m - i0 {
                    left if left >= ROWS => ROWS,
                    // All rows in one pass: each block of B is transposed once.
                    left if in_place && by_columns => left,
                    left => (1 << left.ilog2()).min(4),
                };
                let (a_tile, c_tile) = (product.a_at(i0, p0), c.wrapping_add(i0 * n + j0));
                if i0 + 2 * ROWS <= m {
                    prefetch_tile(c_tile.wrapping_add(ROWS * n), n, cols);
                    if let Some((_, y)) = finish.and_then(|f| f.mask) {
                        prefetch_tile(y.wrapping_add((i0 + ROWS) * n + j0), n, cols);
                    }
                }
                let copy_b = (copied_by_tile && i0 == 0).then_some(panel_ptr);
                let b_panel = if copy_b.is_some() { b.at(p0, j0) } else { b_panel };
                let tile = Tile {
                    depth,
                    cols,
                    ldc: n,
                    first,
                    copy_b,
                };
                // SAFETY: rows i0..i0 + rows of A (from column p0) and of C (from column j0).
                unsafe {
                    match rows {
                        ROWS => tile.run::<ROWS>(a_tile, b_panel, c_tile),
                        7 => tile.run::<7>(a_tile, b_panel, c_tile),
                        6 => tile.run::<6>(a_tile, b_panel, c_tile),
                        5 => tile.run::<5>(a_tile, b_panel, c_tile),
                        4 => tile.run::<4>(a_tile, b_panel, c_tile),
                        3 => tile.run::<3>(a_tile, b_panel, c_tile),
                        2 => tile.run::<2>(a_tile, b_panel, c_tile),
                        _ => tile.run::<1>(a_tile, b_panel, c_tile),
                    }
                }
                if let Some(finish) = finish {
                    // SAFETY: as this function's contract says; the tile's values are final.
                    unsafe { finish.apply(c, n, i0..i0 + rows, j0..j0 + cols) };
                }
                i0 += rows;
            }
        }
    }
}

/// Asks for the cache lines of a tile of C (ROWS rows of `cols` values, `ldc` apart), the next
/// tile's while this one is summed. A weight gradient's C (1.6 MB for the 784→512 layer) is
/// not in L2 when the training step reaches it, and a tile's rows lie kilobytes apart, where the
/// hardware's prefetchers do not follow. The large training step, one thread, the two builds
/// alternating in one process: median paired ratio 0.965–0.983 in five runs of 60–100 pairs.
#[inline(always)]
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
fn prefetch_tile(c: *const f32, ldc: usize, cols: usize) {
    #[cfg(target_arch = "x86_64")]
    for r in 0..ROWS {
        let row = c.wrapping_add(r * ldc).cast::<i8>();
        let skew = row.addr() % 64;
        for line in (0..skew + cols * 4).step_by(64) {
            // SAFETY: a prefetch reads nothing and cannot fault.
            unsafe {
                use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
                _mm_prefetch::<_MM_HINT_T0>(row.wrapping_add(line).wrapping_sub(skew));
            }
        }
    }
}

/// The most columns [`vector_strips`] sums at once: 4 KiB of accumulators, which stay in L1.
#[cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, reason = "the path is x86-64's")
)]
const STRIP: usize = 1024;

/// The whole panels of a single row of A times B read by rows in place, from the first of
/// `columns`; returns the columns left (a narrower last panel). Each row of B is read across the
/// strip, up to [`STRIP`] columns, before the next, with the sums kept in L1. By panels of 32
/// columns, 128 bytes of each row were read before the next row, and over a B larger than L2 that
/// was most of the time: a `[1024] x [1024, 1024]` product took 290 µs, 235 by strips of 128
/// columns, 175 by 512 (sums in registers) and 145 by 1024. Each value is the same chain of fused
/// multiply-adds from `+0.0` as [`tile`]'s, and later depth blocks are added as `Tile::run` adds
/// them, so the bits are the same.
///
/// # Safety
/// As for [`Product::run`], with `m = 1` and B's column stride 1; the CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn vector_strips(k: usize, a: Matrix, b: Matrix, c: *mut f32, columns: Range<usize>) -> Range<usize> {
    use std::arch::x86_64::*;
    let whole = columns.start..columns.start + columns.len() / WIDTH * WIDTH;
    for j0 in whole.clone().step_by(STRIP) {
        let vectors = STRIP.min(whole.end - j0) / LANES;
        for p0 in (0..k).step_by(DEPTH) {
            let mut sums = [_mm512_setzero_ps(); STRIP / LANES];
            let sums = &mut sums[..vectors];
            for p in p0..p0 + DEPTH.min(k - p0) {
                // SAFETY: A's one row at column p; row p of B from column j0, 16·vectors values.
                let (x, row) = unsafe { (_mm512_set1_ps(*a.at(0, p).ptr), b.at(p, j0).ptr) };
                for (v, sum) in sums.iter_mut().enumerate() {
                    *sum = _mm512_fmadd_ps(x, unsafe { _mm512_loadu_ps(row.add(v * LANES)) }, *sum);
                }
            }
            for (v, &sum) in sums.iter().enumerate() {
                // SAFETY: values j0 + 16v.. of C's one row, written by the first block if p0 > 0.
                unsafe {
                    let dst = c.add(j0 + v * LANES);
                    let sum = if p0 == 0 {
                        sum
                    } else {
                        _mm512_add_ps(_mm512_loadu_ps(dst), sum)
                    };
                    _mm512_storeu_ps(dst, sum);
                }
            }
        }
    }
    whole.end..columns.end
}

/// Not reached: the path runs only where AVX-512 was detected.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn vector_strips(_: usize, _: Matrix, _: Matrix, _: *mut f32, _: Range<usize>) -> Range<usize> {
    unreachable!("the packed panels run only on x86-64 with AVX-512")
}

/// Where one tile's block of sums goes: `cols` columns of C (row stride `ldc`), stored if the
/// block is the first along `k`, else added.
#[derive(Clone, Copy)]
struct Tile {
    depth: usize,
    cols: usize,
    ldc: usize,
    first: bool,
    /// Where the tile copies the rows of B it reads, for the tiles after it.
    copy_b: Option<*mut f32>,
}

impl Tile {
    /// `R` rows of the tile. A first block of a whole panel goes straight into C; a later one is
    /// staged, then added row by row; a narrower last panel's are staged, then stored or added
    /// value by value.
    ///
    /// # Safety
    /// `a` addresses `R` rows of `depth` values; `b` addresses `depth` rows of `cols` values
    /// rounded up to whole vectors with column stride 1 (the packed panel, or B's own rows) or
    /// row stride 1 (B's own columns); `copy_b`, if given, is valid for writing `depth` rows of
    /// WIDTH values and aliases neither; `c` is valid for writing `R` rows of `cols` values at
    /// row stride `ldc`, already written unless `first`. The CPU has AVX-512F.
    #[inline(always)]
    unsafe fn run<const R: usize>(self, a: Matrix, b: Matrix, c: *mut f32) {
        if self.first && self.cols == WIDTH {
            // SAFETY: as this function's contract says.
            unsafe { self.sums::<R>(a, b, c, self.ldc) };
            return;
        }
        let mut staged = [[0.0f32; WIDTH]; R];
        // SAFETY: `staged` holds R rows of WIDTH values.
        unsafe { self.sums::<R>(a, b, staged.as_mut_ptr().cast(), WIDTH) };
        for (r, row) in staged.iter().enumerate() {
            // SAFETY (each access): row r of the tile of C, `cols` values, written before
            // unless `first`.
            let dst = unsafe { c.add(r * self.ldc) };
            if self.cols == WIDTH {
                // A whole row at once, in vectors (a later block of a whole panel).
                let whole = dst.cast::<[f32; WIDTH]>();
                let mut sums = unsafe { whole.read() };
                for (c, &ab) in sums.iter_mut().zip(row) {
                    *c += ab;
                }
                unsafe { whole.write(sums) };
                continue;
            }
            for (j, &ab) in row[..self.cols].iter().enumerate() {
                unsafe { *dst.add(j) = if self.first { ab } else { *dst.add(j) + ab } };
            }
        }
    }

    /// The tile's sums, written to `R` rows of WIDTH values `dst_stride` apart, by [`tile`] or,
    /// where B's columns are contiguous instead of its rows, by [`tile_by_columns`]. (A function,
    /// not a closure: a closure is compiled on its own, without AVX-512.)
    ///
    /// # Safety
    /// As for [`Tile::run`], with `dst` valid for writing those rows.
    #[inline(always)]
    unsafe fn sums<const R: usize>(self, a: Matrix, b: Matrix, dst: *mut f32, dst_stride: usize) {
        // SAFETY: as this function's contract says.
        unsafe {
            if b.strides.1 == 1 {
                // A narrower last panel with only the vectors it needs.
                let (depth, dst_stride) = (self.depth, dst_stride as isize);
                debug_assert!(self.copy_b.is_none() || (R == ROWS && self.cols == WIDTH));
                match (self.cols.div_ceil(LANES), self.copy_b) {
                    (3, Some(to)) if R == ROWS => {
                        tile::<R, 3, LANES>(depth, a, (b, Some(to)), dst, dst_stride)
                    }
                    (3, _) => tile::<R, 3, LANES>(depth, a, (b, None), dst, dst_stride),
                    (2, _) => tile::<R, 2, LANES>(depth, a, (b, None), dst, dst_stride),
                    _ => tile::<R, 1, LANES>(depth, a, (b, None), dst, dst_stride),
                }
            } else {
                tile_by_columns::<R>(self.depth, self.cols, a, b, dst, dst_stride);
            }
        }
    }
}

/// [`tile`]'s sums, for B read by columns: `R` rows of the first `cols` columns of a panel of
/// C over one depth block, where B's columns are contiguous (a row-major weight read transposed, or a matrix times a vector run as its
/// transpose). Each 16 × 16 block of B is transposed in registers and used at once: with one
/// tile of rows, a panel copied first is written and read once for nothing. The
/// `[1, 784] x [784, 512]` product of a batch of one, B in L2, took 98 µs with the copy (78 % of
/// it copying) and takes 41 µs this way.
///
/// Each sum is the same chain of fused multiply-adds from `+0.0`, in the same order along `k`,
/// as [`tile`]'s, so the bits are the same.
///
/// # Safety
/// `a` addresses `R` rows of `depth` values; `b` addresses `depth` rows of `cols <= WIDTH`
/// values with row stride 1; `dst` is valid for writing `R` rows of `cols` values rounded up to
/// a multiple of 16, `dst_stride` apart. The CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(
    clippy::needless_range_loop,
    reason = "indexed loops over constant bounds keep the accumulators in registers"
)]
unsafe fn tile_by_columns<const R: usize>(
    depth: usize,
    cols: usize,
    a: Matrix,
    b: Matrix,
    dst: *mut f32,
    dst_stride: usize,
) {
    use super::small_gemm::transpose_16x16;
    use std::arch::x86_64::*;
    debug_assert_eq!(b.strides.0, 1);
    // SAFETY (both closures): row r < R of A at column p < depth; column j < cols of B from
    // row p, with `depth - p` rows.
    let a_at = |r: usize, p: usize| unsafe { *a.at(r, p).ptr };
    let column = |p: usize, j: usize| b.at(p, j).ptr;
    // One vector of the panel at a time: with two at once, the compiler interleaved them, held
    // 32 columns of B in the 32 registers and spilled (62 against 41 µs for the product above).
    for vector in 0..cols.div_ceil(LANES) {
        // Columns past `cols` read as zeros; their sums are not stored in C.
        let width = LANES.min(cols - vector * LANES);
        let mut acc = [_mm512_setzero_ps(); R];
        let mut p = 0;
        while p + LANES <= depth {
            // SAFETY: 16 rows of B from row p, in column `vector·16 + i < cols`.
            let columns = std::array::from_fn(|i| match i < width {
                true => unsafe { _mm512_loadu_ps(column(p, vector * LANES + i)) },
                false => _mm512_setzero_ps(),
            });
            let rows = transpose_16x16(columns);
            // Row by row, from a pointer to the row's 16 values of A: each row's chain of 16
            // multiply-adds is independent of the other rows'. Value by value across the rows,
            // 8 rows took 96 µs for `[8, 784] x [784, 512]`, against 86 this way (and 115 with
            // each value's address computed from the row and column).
            for r in 0..R {
                let a_row = a.at(r, p).ptr;
                for q in 0..LANES {
                    // SAFETY: row r of A, column p + q < depth.
                    let x = _mm512_set1_ps(unsafe { *a_row.add(q) });
                    acc[r] = _mm512_fmadd_ps(x, rows[q], acc[r]);
                }
            }
            p += LANES;
        }
        // The last rows of a depth that is not a multiple of 16, value by value.
        for p in p..depth {
            // SAFETY: row p of B, column `vector·16 + i < cols`.
            let row: [f32; LANES] = std::array::from_fn(|i| match i < width {
                true => unsafe { *column(p, vector * LANES + i) },
                false => 0.0,
            });
            // SAFETY: `row` holds 16 values.
            let row = unsafe { _mm512_loadu_ps(row.as_ptr()) };
            for r in 0..R {
                acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(a_at(r, p)), row, acc[r]);
            }
        }
        for (r, &sum) in acc.iter().enumerate() {
            // SAFETY: row r of the destination, 16 values from vector·16.
            unsafe { _mm512_storeu_ps(dst.add(r * dst_stride + vector * LANES), sum) };
        }
    }
}

/// Not reached: the path runs only where AVX-512 was detected.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn tile_by_columns<const R: usize>(_: usize, _: usize, _: Matrix, _: Matrix, _: *mut f32, _: usize) {
    unreachable!("the packed panels run only on x86-64 with AVX-512")
}

#[cfg(test)]
mod tests {
    use super::super::small_gemm::tests::sgemm;
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// How a test splits C between calls, as between threads.
    #[derive(Clone, Copy, Debug)]
    enum Split {
        /// By whole panels, into this many calls.
        Panels(usize),
        /// By [`Product::part_columns`], into this many parts.
        Parts(usize),
        /// By [`Product::row_part`], into this many parts.
        Rows(usize),
    }

    /// Every split the tests try: whole, by panels, and by parts of the columns cut inside
    /// panels; by parts of the rows too where the product is shared so (A copied in tiles).
    const SPLITS: [Split; 4] = [
        Split::Panels(1),
        Split::Panels(2),
        Split::Parts(2),
        Split::Parts(3),
    ];

    /// C by this path, split into calls by `split`, into a buffer with guard values
    /// after it (a value no call wrote keeps one sgemm does not give); `None` where the
    /// path declines.
    fn panels(dims: (usize, usize, usize), a: Matrix, b: Matrix, split: Split) -> Option<Vec<f32>> {
        const GUARD: usize = 17;
        let (m, _, n) = dims;
        let mut c = vec![-7.0f32; m * n + GUARD];
        // Runs call `call` through `run`, which may write only rows `rows` and columns
        // `columns` of C: threads run the calls at once.
        let mut call = |call: usize, rows: Range<usize>, columns: Range<usize>, run: &dyn Fn(*mut f32)| {
            let before = c.clone();
            run(c.as_mut_ptr());
            let own = |i: usize| rows.contains(&(i / n)) && columns.contains(&(i % n));
            let kept = (0..c.len())
                .filter(|&i| !own(i))
                .all(|i| c[i].to_bits() == before[i].to_bits());
            assert!(
                kept,
                "{dims:?}, {split:?}: call {call} wrote outside rows {rows:?}, columns {columns:?}"
            );
        };
        let product = Product::new(dims, a, b)?;
        if let Split::Rows(parts) = split {
            assert!(
                product.shares_rows(parts),
                "{dims:?}: not shared by {parts} parts of rows"
            );
            for part in 0..parts {
                let (i0, rows) = product.row_part(part, parts);
                let run = |c| {
                    let mut tiles = Storage::with_capacity(rows.tiles_len());
                    // SAFETY: the operands address their matrices; c has room for m×n values.
                    unsafe { product.run_row_part(c, (part, parts), &mut tiles) }
                };
                call(part, i0..i0 + rows.dims.0, 0..n, &run);
            }
        } else {
            // SAFETY: the operands address their matrices.
            let (product, _tiles) = unsafe { product.with_a_tiles() };
            let panels = product.panels();
            let calls = match split {
                Split::Panels(pieces) => pieces,
                Split::Parts(parts) | Split::Rows(parts) => parts,
            };
            for piece in 0..calls {
                let columns = match split {
                    Split::Panels(pieces) => {
                        product.panel_columns(piece * panels / pieces..(piece + 1) * panels / pieces)
                    }
                    _ => product.part_columns(piece, calls),
                };
                // SAFETY: the operands address their matrices; c has room for m×n values.
                let run = |c| unsafe { product.run(c, columns.clone()) };
                call(piece, 0..m, columns.clone(), &run);
            }
        }
        let tail = c.split_off(dims.0 * dims.2);
        assert!(tail.iter().all(|&v| v == -7.0), "{dims:?}: wrote past C");
        Some(c)
    }

    /// `values` as a row-major matrix `cols` wide.
    fn row_major(values: &[f32], cols: usize) -> Matrix {
        Matrix {
            ptr: values.as_ptr(),
            strides: (cols as isize, 1),
        }
    }

    /// Equal bits, or both NaN: where two NaNs meet in one instruction, which one x86 returns
    /// follows the order of its operands, which the compiler picks (sgemm's own edge tiles and
    /// inner tiles differ in it).
    fn same_value(x: f32, y: f32) -> bool {
        x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
    }

    /// A column-major A large enough to be copied in tiles gives the same bits as sgemm: a last
    /// tile of fewer rows, a depth across sgemm's blocks, A's columns further apart than its
    /// height, B by rows and by columns, special values, C in one call or split between calls
    /// by panels, by parts of its columns, or by parts of its rows down to two tiles each.
    #[test]
    fn a_copied_in_tiles_matches_sgemm_bit_for_bit() {
        if !avx512() {
            return;
        }
        let mut rng = StdRng::seed_from_u64(22);
        let special = [0.0, -0.0, f32::INFINITY, f32::NAN, 1e-40, 3e38];
        for (m, k, n, gap) in [(256, 1, 256, 0), (263, 100, 256, 3), (300, 257, 270, 0)] {
            let mut value = |_| match rng.random_ratio(1, 50) {
                true => special[rng.random_range(0..special.len())],
                false => rng.random_range(-2.0f32..2.0),
            };
            let a_values: Vec<f32> = (0..(m + gap) * k).map(&mut value).collect();
            let a = Matrix {
                ptr: a_values.as_ptr(),
                strides: (1, (m + gap) as isize),
            };
            let b_values: Vec<f32> = (0..k * n).map(&mut value).collect();
            for b_strides in [(n as isize, 1), (1, k as isize)] {
                let b = Matrix {
                    ptr: b_values.as_ptr(),
                    strides: b_strides,
                };
                let product = Product::new((m, k, n), a, b).expect("the panels take it");
                // SAFETY: the operands address their matrices.
                assert!(
                    unsafe { product.with_a_tiles() }.1.is_some(),
                    "{m}, {k}, {n}: not copied"
                );
                let want = sgemm((m, k, n), a, b);
                let by_rows = [Split::Rows(2), Split::Rows(3), Split::Rows(m.div_ceil(ROWS) / 2)];
                for split in SPLITS.into_iter().chain(by_rows) {
                    let got = panels((m, k, n), a, b, split).expect("the panels take it");
                    let same = got.iter().zip(&want).all(|(x, y)| same_value(*x, *y));
                    assert!(same, "({m}, {k}, {n}), B strides {b_strides:?}, split {split:?}");
                }
            }
        }
    }

    /// The path's claim: sgemm's results bit for bit, on shapes straddling the tile's rows (8,
    /// then 4, 2, 1; with B read by columns in place, up to 8 at once), the panel's columns (48,
    /// a narrower last panel of one, two or three vectors, and a C of 1 to 24 columns by B's
    /// columns) and sgemm's depth
    /// blocks (256), with B row-major, column-major and strided, A row-major or column-major
    /// with a stride past its width or height, and zeros of both signs, infinities, NaN and
    /// subnormals among the values.
    #[test]
    fn matches_sgemm_bit_for_bit() {
        if !avx512() {
            return;
        }
        let mut rng = StdRng::seed_from_u64(21);
        let special = [0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1e-40, 3e38];
        let mut checked = 0;
        for m in [1, 3, 5, 7, 8, 13, 40] {
            for k in [1, 100, 255, 256, 257, 513, 784] {
                for n in [1, 10, 16, 24, 32, 33, 47, 64, 80, 100] {
                    for (layout, a_by_columns) in (0..3).flat_map(|l| [(l, false), (l, true)]) {
                        let mut value = |_| {
                            if rng.random_ratio(1, 50) {
                                special[rng.random_range(0..special.len())]
                            } else {
                                rng.random_range(-2.0f32..2.0)
                            }
                        };
                        // A with two unused values after each row, or each column.
                        let a: Vec<f32> = (0..(m + 2) * (k + 2)).map(&mut value).collect();
                        let a = Matrix {
                            ptr: a.as_ptr(),
                            strides: match a_by_columns {
                                false => ((k + 2) as isize, 1),
                                true => (1, (m + 2) as isize),
                            },
                        };
                        // B row-major, column-major, or every other row of a taller matrix.
                        let b: Vec<f32> = (0..2 * k * n).map(&mut value).collect();
                        let strides = [(n as isize, 1), (1, k as isize), (2 * n as isize, 1)][layout];
                        let b = Matrix {
                            ptr: b.as_ptr(),
                            strides,
                        };
                        let want = sgemm((m, k, n), a, b);
                        for split in SPLITS {
                            let Some(got) = panels((m, k, n), a, b, split) else {
                                let by_columns = a_by_columns && m <= ROWS;
                                assert!(
                                    n < MIN_WIDTH || by_columns,
                                    "({m}, {k}, {n}) layout {layout} declined"
                                );
                                continue;
                            };
                            let same = got.iter().zip(&want).all(|(x, y)| same_value(*x, *y));
                            assert!(
                                same,
                                "({m}, {k}, {n}) layout {layout}, A by columns {a_by_columns}, split {split:?}"
                            );
                            checked += 1;
                        }
                    }
                }
            }
        }
        // C at least a panel wide: every case with A by rows, and with A by columns past 8 rows.
        // C 1 to 24 wide: only B by columns (layout 1, and not at k = 1, where its strides are
        // both 1) with up to 8 rows, A by rows.
        assert_eq!(checked, ((7 + 2) * 7 * 6 * 3 + 5 * 6 * 4) * SPLITS.len());
    }

    /// A vector times a matrix by rows, in strips: more columns than one strip holds, the
    /// second strip partial, a narrower last panel, depths across sgemm's blocks, and the
    /// columns split between up to three calls as between threads, by panels or by parts.
    #[test]
    fn vector_strips_match_sgemm_bit_for_bit() {
        if !avx512() {
            return;
        }
        let mut rng = StdRng::seed_from_u64(22);
        for (k, n) in [
            (1, STRIP + 76),
            (300, STRIP + 76),
            (784, 2 * STRIP + 32),
            (513, STRIP),
        ] {
            let a: Vec<f32> = (0..k).map(|_| rng.random_range(-2.0f32..2.0)).collect();
            let b: Vec<f32> = (0..k * n).map(|_| rng.random_range(-2.0f32..2.0)).collect();
            let (a, b) = (row_major(&a, k), row_major(&b, n));
            let want = sgemm((1, k, n), a, b);
            for split in [Split::Panels(3), Split::Parts(3)].into_iter().chain(SPLITS) {
                let got = panels((1, k, n), a, b, split).expect("taken");
                let same = got.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(same, "(1, {k}, {n}), split {split:?}");
            }
        }
    }

    /// By hand: `[2, 300] x [300, 40]` with A's rows 1 and 2 and B's columns `j / 300` across
    /// a depth-block boundary: C[0, j] = Σ_p j/300 = j, C[1, j] = 2j.
    #[test]
    fn hand_computed_product() {
        if !avx512() {
            return;
        }
        let (m, k, n) = (2, 300, 40);
        let a: Vec<f32> = (0..m * k).map(|i| if i < k { 1.0 } else { 2.0 }).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i % n) as f32 / 300.0).collect();
        let got = panels((m, k, n), row_major(&a, k), row_major(&b, n), Split::Panels(1)).expect("taken");
        for j in 0..n {
            // 300 roundings of values below 40 each: within 300 · 2⁻²⁴ · 40 · 2 of the sum.
            let bound = 300.0 * f32::EPSILON * 80.0;
            assert!((got[j] - j as f32).abs() <= bound, "C[0, {j}] = {}", got[j]);
            assert!(
                (got[n + j] - 2.0 * j as f32).abs() <= 2.0 * bound,
                "C[1, {j}] = {}",
                got[n + j]
            );
        }
    }

    #[test]
    fn declines_narrow_c_a_by_columns_in_one_tile_and_a_large_a() {
        let ones = vec![1.0f32; 257 * 512];
        let at = |strides| Matrix {
            ptr: ones.as_ptr(),
            strides,
        };
        assert!(
            Product::new((8, 300, 31), at((300, 1)), at((31, 1))).is_none(),
            "C 31 wide"
        );
        // A C narrower than a panel, down to one column, is taken with B read by columns and
        // at most 8 rows.
        let by_columns = at((1, 300));
        let narrow = Product::new((8, 300, 1), at((300, 1)), by_columns);
        assert_eq!(narrow.is_some(), avx512(), "8 × 1, B by columns");
        assert!(
            Product::new((9, 300, 16), at((300, 1)), by_columns).is_none(),
            "9 rows"
        );
        assert!(
            Product::new((8, 300, 32), at((1, 8)), at((32, 1))).is_none(),
            "A by columns, one tile of rows"
        );
        let a_by_columns = Product::new((9, 300, 32), at((1, 9)), at((32, 1)));
        assert_eq!(a_by_columns.is_some(), avx512(), "A by columns, 9 rows");
        let large = Product::new((257, 512, 32), at((512, 1)), at((32, 1)));
        assert!(large.is_none(), "A of 257 × 512");
        let taken = Product::new((256, 512, 32), at((512, 1)), at((32, 1)));
        assert_eq!(taken.is_some(), avx512(), "A of 256 × 512");
    }
}
