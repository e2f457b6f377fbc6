//! Batched matrix product on `matrixmultiply::sgemm`, reading both operands through their views'
//! strides (so a transposed operand costs no copy). Small products with a short inner dimension
//! skip sgemm's packing (see [`small_gemm`]), and deeper ones with A's rows or columns
//! contiguous copy only B, a panel at a time (see [`super::panel_gemm`]), by blocks of A's rows
//! where A is large; a C narrower than a panel runs there as its transpose. CPUs with AVX2 but
//! not AVX-512 have their own paths for a few rows of A by B's columns (see [`super::few_rows`])
//! and for deeper products of whole panels (see [`super::panels_avx2`]). All with sgemm's
//! results, bit for bit.

use super::few_rows::FewRows;
use super::panel_gemm::{Finish, Product};
use super::panels_avx2::PanelsAvx2;
use super::small_gemm::{self, Matrix};
use super::storage::Storage;
use super::view::View;
use crate::shape::runtime::numel;

/// `a [.., m, k] x b [.., k, n]` into a fresh row-major `[.., m, n]`, which code computed it (for
/// the trace), and whether C went through `finish` (a product's epilogue): on the packed panels
/// of B, with one batch; elsewhere the caller applies the epilogue to C. Neither view may be
/// masked (the scheduler copies padded operands first).
///
/// # Safety
/// `finish`'s operands must be readable as `Finish::apply` says, for C's `m×n` values.
pub(crate) unsafe fn run(
    a: &[f32],
    a_view: &View,
    b: &[f32],
    b_view: &View,
    finish: Option<Finish>,
) -> (Storage, &'static str, bool) {
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
    if m == 0 || n == 0 || k == 0 || batches == 0 {
        return (super::alloc::output_filled(len, 0.0), "nothing (empty)", false); // an empty sum is 0
    }
    // sgemm with β = 0 writes every element of C without reading it, so the output is not
    // zeroed first (that pass cost about 3 % of a 784→512→256→10 training step).
    let mut out = super::alloc::output(len);
    assert!(
        a_view.mask().is_none() && b_view.mask().is_none(),
        "matmul operands must not be padded"
    );
    check_in_bounds(a, a_view);
    check_in_bounds(b, b_view);
    let (ast, bst) = (a_view.strides(), b_view.strides());
    let macs = m.saturating_mul(k).saturating_mul(n);
    let mut index = vec![0usize; batch_shape.len()];
    // Every batch has the same sizes and strides, so takes the same path.
    let mut path = "sgemm";
    // Only with one batch: a block of rows of C is then C's own rows.
    let finish = finish.filter(|_| batches == 1);
    let mut finished = false;
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
        let c = &mut out.spare_capacity_mut()[batch * m * n..(batch + 1) * m * n];
        let a_matrix = Matrix {
            ptr: a.as_ptr().wrapping_offset(a_off),
            strides: (ast[rank - 2], ast[rank - 1]),
        };
        let b_matrix = Matrix {
            ptr: b.as_ptr().wrapping_offset(b_off),
            strides: (bst[rank - 2], bst[rank - 1]),
        };
        let c = c.as_mut_ptr().cast::<f32>();
        let narrow_both_ways = m.max(n) < Product::MIN_WIDTH && macs >= COPY_MIN_MACS;
        // A product narrow both ways with both operands by columns runs as its transpose,
        // whose operands are by rows, where that computes no more vectors: the narrow panels
        // compute `m` rows of `n.div_ceil(16)` vectors at each step along `k`. On an AMD EPYC
        // (Zen 5), one thread, fastest of five alternating runs: `[16, 1347] x [1347, 4]` 0.29
        // of the time, `[10, 3000] x [3000, 10]` 0.46, `[16, 1000] x [1000, 16]` 0.93; with
        // more vectors, `[4, 900] x [900, 20]` had taken 1.31.
        let by_columns = |x: Matrix| x.strides.0 == 1 && x.strides.1 != 1;
        let vectors = |rows: usize, cols: usize| rows * cols.div_ceil(small_gemm::LANES);
        let transpose_narrow = narrow_both_ways
            && by_columns(a_matrix)
            && by_columns(b_matrix)
            && vectors(n, m) <= vectors(m, n);
        // Products large enough to split between threads skip the direct tile: packed panels
        // and sgemm share them between threads.
        // SAFETY: as for sgemm below.
        if unsafe { small_gemm::try_run((m, k, n), a_matrix, b_matrix, c, PARALLEL_MACS) } {
            path = "the direct tile";
        } else if let Some(product) = FewRows::new((m, k, n), a_matrix, b_matrix) {
            path = "a few rows by B's columns";
            // SAFETY: as for sgemm below.
            unsafe { run_few_rows(&product, c) };
        } else if let Some(product) = PanelsAvx2::new((m, k, n), a_matrix, b_matrix) {
            path = "packed panels of B (AVX2)";
            // SAFETY: as for sgemm below.
            unsafe { run_panels_avx2(&product, macs, c) };
            super::alloc::keep(product.into_a_tiles());
        } else if let Some(product) = Product::new((m, k, n), a_matrix, b_matrix) {
            path = "packed panels of B";
            // SAFETY: as for sgemm below, and as this function's contract says for `finish`.
            unsafe { run_panels(&product.finishing(finish), macs, c) };
            finished = finish.is_some();
        } else if let Some(blocks) = row_blocks((m, k, n), a_matrix, b_matrix, finish) {
            path = "packed panels of B, by blocks of rows";
            // SAFETY: as for sgemm below.
            unsafe { run_row_blocks(&blocks, n, macs, c) };
            finished = finish.is_some();
        } else if let Some((product, b_copy)) = (n < Product::MIN_WIDTH)
            // SAFETY: B lies within its buffer (checked above).
            .then(|| unsafe { narrow_transposed((m, k, n), a_matrix, b_matrix, transpose_narrow) })
            .flatten()
        {
            // A narrow C (a matrix times a vector, a classifier's few outputs) as its
            // transpose `Cᵀ = Bᵀ·Aᵀ`, which is wide: sgemm spent 16 lanes of its kernel on one
            // column (3.7 times PyTorch's time), and `[128, 256] x [256, 10]` took 60 µs on it.
            // Each element is the same chain of fused multiply-adds either way. So, too, one
            // narrow both ways (`transpose_narrow`).
            path = match b_copy {
                None => "packed panels of Aᵀ (the transposed product)",
                Some(_) => "packed panels of Aᵀ (the transposed product, Bᵀ copied by rows)",
            };
            if n == 1 {
                // SAFETY: as for sgemm below; C's m×1 elements are Cᵀ's 1×m.
                unsafe { run_panels(&product, macs, c) };
            } else {
                let mut transposed = super::alloc::output(n * m);
                // SAFETY: as for sgemm below, into a fresh n×m buffer, all of which is written.
                unsafe {
                    run_panels(
                        &product,
                        macs,
                        transposed.spare_capacity_mut().as_mut_ptr().cast(),
                    );
                    transposed.set_len(n * m);
                }
                // SAFETY: `c` is an exclusive m×n slice of the output.
                let c = unsafe { std::slice::from_raw_parts_mut(c, m * n) };
                for (j, column) in transposed.chunks_exact(m).enumerate() {
                    for (i, &value) in column.iter().enumerate() {
                        c[i * n + j] = value;
                    }
                }
                super::alloc::keep(transposed);
            }
            if let Some(b_copy) = b_copy {
                super::alloc::keep(b_copy);
            }
        // SAFETY: A lies within its buffer (checked above).
        } else if let Some((product, a_copy)) = unsafe { few_rows_by_columns((m, k, n), a_matrix, b_matrix) }
        {
            path = "packed panels of B, A copied by rows";
            // SAFETY: as for sgemm below.
            unsafe { run_panels(&product, macs, c) };
            super::alloc::keep(a_copy);
        } else if let Some(product) = narrow_both_ways
            .then(|| Product::any_width((m, k, n), a_matrix, b_matrix))
            .flatten()
        {
            path = "packed panels of B, narrow";
            // SAFETY: as for sgemm below.
            unsafe { run_panels(&product, macs, c) };
        } else {
            // Threads share a product by rows of C: computing the transpose `Cᵀ = Bᵀ·Aᵀ` when C
            // is wide (a batch of 128 against 512 features) gives them more rows to share, and
            // costs nothing on one thread (sgemm measured within ±5 % either way).
            let product = if n > m {
                Gemm {
                    m: n,
                    k,
                    n: m,
                    a: b_matrix.transposed(),
                    b: a_matrix.transposed(),
                    c_strides: (1, n as isize),
                }
            } else {
                Gemm {
                    m,
                    k,
                    n,
                    a: a_matrix,
                    b: b_matrix,
                    c_strides: (n as isize, 1),
                }
            };
            // SAFETY: every element sgemm reads lies within the view's extent, which was
            // checked against the buffer's length above; `c` is an exclusive row-major m×n
            // slice of the output's capacity, which sgemm only writes (β = 0).
            unsafe { product.run(c) };
        }
        for d in (0..index.len()).rev() {
            index[d] += 1;
            if index[d] < batch_shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
    // SAFETY: the batches' m×n blocks tile the first `len` elements, and each was written.
    unsafe { out.set_len(len) };
    (out, path, finished)
}

/// Products of blocks of A's rows, each with the first row it writes in C, of nearly equal
/// sizes, for a product whose A is too large for the panels to take whole but whose blocks they
/// take: each block's rows of A stay in L2 while every panel of B passes over them, and B is
/// copied once per block. Such products ran on sgemm; one thread, both builds alternating in one
/// process, median ratio of 12 pairs: `[512, 512] x [512, 512]` 0.66, `[1024, 1024] x [1024,
/// 1024]` 0.86, a batch of 1024 through a 784→512 layer 0.57, `[1024, 256] x [256, 64]` 0.44,
/// `[300, 500] x [500, 40]` 0.39.
///
/// Only for an A by rows. By columns (a weight gradient's `dYᵀ` at a large batch), each block
/// read its columns in place, eight values of each cache line a column apart, and sgemm, which
/// copies A, is faster: on an Intel Xeon with AVX-512, one thread, `[1024, 1024] x [1024, 1024]`
/// took 1.62–1.68 times sgemm's time by blocks and 0.98–1.06 on sgemm, the weight gradient of a
/// 784→512 layer at batch 1024 (`[512, 1024] x [1024, 784]`) 1.36–1.44 and 0.97–1.00; on two
/// threads, 11.2 → 7.3 ms and 3.65 → 2.71 ms.
fn row_blocks(
    (m, k, n): (usize, usize, usize),
    a: Matrix,
    b: Matrix,
    finish: Option<Finish>,
) -> Option<Vec<(usize, Product)>> {
    if a.strides.1 != 1 {
        return None;
    }
    let per = Product::block_rows(m, k)?;
    (0..m)
        .step_by(per)
        .map(|i0| {
            let block = Product::new((per.min(m - i0), k, n), a.at(i0, 0), b)?;
            Some((i0, block.finishing(finish.map(|f| f.starting_at_row(i0, n)))))
        })
        .collect()
}

/// Runs the products of [`row_blocks`], each into its rows of C (row stride `n`). When the
/// whole product is large (`macs` multiply-adds) and there are threads, every panel of every
/// block is a task, handed out as threads come free (a block alone may be too small to share, or
/// have too few panels).
///
/// # Safety
/// As for [`Product::run`], for the whole product into `c`.
unsafe fn run_row_blocks(blocks: &[(usize, Product)], n: usize, macs: usize, c: *mut f32) {
    let tasks: Vec<(usize, usize)> = (blocks.iter().enumerate())
        .flat_map(|(i, (_, product))| (0..product.panels()).map(move |j| (i, j)))
        .collect();
    let c = SharedOut(c);
    let run = |t: usize| {
        let (i, j) = tasks[t];
        let (i0, product) = &blocks[i];
        // SAFETY: each task writes its own panel of its own block's rows of C.
        unsafe { product.run(c.get().wrapping_add(i0 * n), product.panel_columns(j..j + 1)) };
    };
    if macs >= PARALLEL_MACS && super::parallel::threads() > 1 {
        super::parallel::run(tasks.len(), &run);
    } else {
        (0..tasks.len()).for_each(run);
    }
}

/// The transposed product `Cᵀ = Bᵀ·Aᵀ` (`n×k` times `k×m`) on the panels, if they take it,
/// with the copy of Bᵀ it reads. The panels read an A of one tile of rows (at most eight) only
/// by rows, so a B of at most eight columns read by rows is first copied into a row-major Bᵀ
/// (`n·k` values, against the `m·k·n` multiply-adds): on sgemm, `[1024, 256] x [256, 4]` took
/// 550 µs and `[4096, 128] x [128, 2]` 1.07 ms here (2–4 GFLOP/s). With `any_width`, the
/// transposed product is taken however narrow (see [`Product::any_width`]).
///
/// # Safety
/// `b` with its strides must address a `k×n` matrix within its allocation.
unsafe fn narrow_transposed(
    (m, k, n): (usize, usize, usize),
    a: Matrix,
    b: Matrix,
    any_width: bool,
) -> Option<(Product, Option<Storage>)> {
    let take = |bt: Matrix| match any_width {
        true => Product::any_width((n, k, m), bt, a.transposed()),
        false => Product::new((n, k, m), bt, a.transposed()),
    };
    if let Some(product) = take(b.transposed()) {
        return Some((product, None));
    }
    if b.strides.1 != 1 || m.saturating_mul(k).saturating_mul(n) < COPY_MIN_MACS {
        return None;
    }
    // SAFETY: Bᵀ lies within B's allocation (the caller's promise).
    let taken = unsafe { on_row_major_copy((n, k), b.transposed(), take) };
    taken.map(|(product, copy)| (product, Some(copy)))
}

/// The product on the panels from a row-major copy of A, for an A of at most a tile of rows
/// read by columns (a transposed batch of a few samples), which the panels read only by rows:
/// on sgemm, `[4, 4096] x [4096, 256]` took 0.7 ms (2 ms with B by columns) and `[3, 3000] x
/// [3000, 3000]` 10–16 ms here (3–6 GFLOP/s).
///
/// # Safety
/// `a` with its strides must address an `m×k` matrix within its allocation.
unsafe fn few_rows_by_columns(
    (m, k, n): (usize, usize, usize),
    a: Matrix,
    b: Matrix,
) -> Option<(Product, Storage)> {
    if a.strides.0 != 1 || a.strides.1 == 1 || m.saturating_mul(k).saturating_mul(n) < COPY_MIN_MACS {
        return None;
    }
    // SAFETY: as this function's contract says.
    unsafe { on_row_major_copy((m, k), a, |a| Product::new((m, k, n), a, b)) }
}

/// The product `take` makes with a row-major copy of `matrix` (`rows×cols`) as its operand,
/// and the copy, which must outlive every run of the product. Whether `take` accepts that
/// layout is asked before copying (of the same strides at `matrix`'s address: only the layout
/// is looked at), so a declined product costs no copy.
///
/// # Safety
/// `matrix` with its strides must address a `rows×cols` matrix within its allocation.
unsafe fn on_row_major_copy(
    (rows, cols): (usize, usize),
    matrix: Matrix,
    take: impl Fn(Matrix) -> Option<Product>,
) -> Option<(Product, Storage)> {
    let row_major = |ptr| Matrix {
        ptr,
        strides: (cols as isize, 1),
    };
    take(row_major(matrix.ptr))?;
    // SAFETY: as this function's contract says.
    let copy = unsafe { row_major_copy((rows, cols), matrix) };
    take(row_major(copy.as_ptr())).map(|product| (product, copy))
}

/// A `rows×cols` matrix copied into a row-major buffer.
///
/// # Safety
/// `matrix` with its strides must address a `rows×cols` matrix within its allocation.
unsafe fn row_major_copy((rows, cols): (usize, usize), matrix: Matrix) -> Storage {
    let len = rows * cols;
    let mut copy = super::alloc::output(len);
    let dst = copy.spare_capacity_mut();
    // Along the source's contiguous axis when it has one (a transposed operand's columns).
    let by_columns = matrix.strides.0 == 1;
    for outer in 0..if by_columns { cols } else { rows } {
        for inner in 0..if by_columns { rows } else { cols } {
            let (i, j) = if by_columns {
                (inner, outer)
            } else {
                (outer, inner)
            };
            // SAFETY: element (i, j) of the matrix, within it (the caller's promise).
            dst[i * cols + j].write(unsafe { *matrix.at(i, j).ptr });
        }
    }
    // SAFETY: each of the rows·cols values was written above.
    unsafe { copy.set_len(len) };
    copy
}

/// A product copies an operand for the panels (see [`narrow_transposed`] and
/// [`few_rows_by_columns`]), or runs on narrow panels, from this many multiply-adds. Below,
/// sgemm's fixed cost is as small: one thread, alternating, `[8, 8] x [8, 8]` took 1.6 µs on
/// sgemm and 1.9 through the copy, `[32, 64] x [64, 2]` 1.4 and 1.5; at `[16, 1000] x [1000, 3]`
/// 39 against 10 µs, `[64, 256] x [256, 4]` 35 against 7.8.
const COPY_MIN_MACS: usize = 1 << 13;

/// Runs `product` (of `macs` multiply-adds) into `c`, shared between threads when it is large:
/// by parts of C's columns, or of its rows where A is copied in tiles. Each value is computed
/// whole by one thread, by the same chain of operations wherever its panel or part starts, so
/// sharing does not change results.
///
/// # Safety
/// As for [`Product::run`] with all of C's panels.
unsafe fn run_panels(product: &Product, macs: usize, c: *mut f32) {
    let large = macs >= PARALLEL_MACS || product.streams_b().is_some_and(|len| len >= PARALLEL_B);
    let tasks = if large {
        super::parallel::threads().min(product.panels())
    } else {
        1
    };
    if tasks > 1 && product.shares_rows(tasks) {
        // A weight gradient's `dYᵀ`, copied in tiles, one part of its rows per thread: each
        // thread copies and reads only its own part, which the product before it (`dY` by
        // columns) mostly left in that thread's cache. Two threads, medians of 400, three
        // alternating runs each, against one copy read whole by parts of C's columns:
        // `[512, 128] x [128, 784]` 360–388 → 357–375 µs and `[256, 128] x [128, 512]` 135–137
        // → 124–128 by rows of that one copy, then 317–338 → 311–319 and 118–122 → 98–108 with
        // each part copying its own rows. The copies' buffers come from this thread's pool and
        // go back to it, as every split's do.
        let mut copies: Vec<Storage> = (0..tasks)
            .map(|t| super::alloc::output(product.row_part(t, tasks).1.tiles_len()))
            .collect();
        let c = SharedOut(c);
        super::parallel::for_each_mut(&mut copies, &|t, tiles| {
            // SAFETY: as this function's contract says; the tasks' row ranges are disjoint.
            unsafe { product.run_row_part(c.get(), (t, tasks), tiles) }
        });
        copies.into_iter().for_each(super::alloc::keep);
        return;
    }
    // SAFETY: as this function's contract says; `tiles` lives until the product has run.
    let (product, tiles) = unsafe { product.with_a_tiles() };
    // SAFETY: as this function's contract says.
    unsafe { share_panels(&product, tasks, c) };
    if let Some(tiles) = tiles {
        super::alloc::keep(tiles);
    }
}

/// [`run_panels`] once A is where the product reads it, on `tasks` threads.
///
/// # Safety
/// As for [`Product::run`] with all of C's panels.
unsafe fn share_panels(product: &Product, tasks: usize, c: *mut f32) {
    let panels = product.panels();
    if tasks == 1 {
        // SAFETY: as this function's contract says.
        return unsafe { product.run(c, product.panel_columns(0..panels)) };
    }
    let c = SharedOut(c);
    super::parallel::run(tasks, &|t| {
        // One part of C's columns per thread, cut by vectors, not by panels: whole panels
        // claimed one at a time as threads came free left a thread waiting on the other's last
        // one. Two threads, the large training step's five panel products alone: 1,113–1,129
        // → 1,022–1,035 µs; the step, median paired ratio 0.94 in six pairs.
        let columns = match product.streams_b() {
            None => product.part_columns(t, tasks),
            Some(_) => product.panel_columns(t * panels / tasks..(t + 1) * panels / tasks),
        };
        // SAFETY: the tasks' column ranges are disjoint parts of C's.
        unsafe { product.run(c.get(), columns) };
    });
}

/// Runs a [`FewRows`] product, split between threads by strips of columns when B is large (see
/// [`PARALLEL_B`]).
///
/// # Safety
/// As for [`FewRows::run`] with all of C's strips.
unsafe fn run_few_rows(product: &FewRows, c: *mut f32) {
    let strips = product.strips();
    let threads = super::parallel::threads();
    let tasks = if product.b_len() >= PARALLEL_B {
        threads.min(strips)
    } else {
        1
    };
    if tasks == 1 {
        // SAFETY: as this function's contract says.
        return unsafe { product.run(c, 0..strips) };
    }
    let c = SharedOut(c);
    super::parallel::run(tasks, &|t| {
        // SAFETY: the tasks' strip ranges are disjoint parts of `0..strips`.
        unsafe { product.run(c.get(), t * strips / tasks..(t + 1) * strips / tasks) };
    });
}

/// Runs a [`PanelsAvx2`] product: when it is large enough to share, A's copy split between the
/// threads, then one panel per task.
///
/// # Safety
/// As for [`PanelsAvx2::pack`] with all of A's tiles, then [`PanelsAvx2::run`] with all of C's
/// panels.
unsafe fn run_panels_avx2(product: &PanelsAvx2, macs: usize, c: *mut f32) {
    let (tiles, panels, threads) = (product.tiles(), product.panels(), super::parallel::threads());
    if macs < PARALLEL_MACS || threads == 1 {
        // SAFETY: as this function's contract says.
        return unsafe {
            product.pack(0..tiles);
            product.run(c, 0..panels)
        };
    }
    // SAFETY: each task copies its own tiles; `parallel::run` returns once all have.
    super::parallel::run(threads, &|t| unsafe {
        product.pack(t * tiles / threads..(t + 1) * tiles / threads)
    });
    let c = SharedOut(c);
    // SAFETY: each task writes its own panel.
    super::parallel::run(panels, &|j| unsafe { product.run(c.get(), j..j + 1) });
}

/// One `C = A·B` call of sgemm, with the strides of each matrix as (row, column).
struct Gemm {
    m: usize,
    k: usize,
    n: usize,
    a: Matrix,
    b: Matrix,
    c_strides: (isize, isize),
}

/// C's pointer, shared with the tasks that each write their own rows of it.
struct SharedOut(*mut f32);

// SAFETY: tasks write disjoint row ranges through it (see `Gemm::run`).
unsafe impl Sync for SharedOut {}

impl SharedOut {
    /// The pointer (a method, so closures capture the whole `Sync` wrapper, not the field).
    fn get(&self) -> *mut f32 {
        self.0
    }
}

/// Products of at least this many multiply-adds are split between threads (about 40 µs of
/// sgemm here); smaller ones cost more to hand out than they gain.
const PARALLEL_MACS: usize = 1 << 22;

/// Products of one tile of rows are bound by reading B, not by multiply-adds: they are split
/// between threads when B has at least this many values (1 MiB). On two threads, the
/// 784→512→256→10 MLP on one sample took 66 µs with none of its products split and 42 with its
/// `[1, 784] x [784, 512]` one split; a `[1024, 1024]` matrix times a vector 160 against 63 µs.
const PARALLEL_B: usize = 1 << 18;

/// Rows of C per split task are a multiple of this, so no task gets a sliver of a micro-kernel.
const ROW_QUANTUM: usize = 32;

// SAFETY: a `Gemm` only describes matrices; `run` reads `a` and `b` and writes disjoint row
// ranges of C from each task, so sharing the description between threads is sound.
unsafe impl Sync for Gemm {}

impl Gemm {
    /// Computes C, splitting its rows between threads when the product is large. Each row of C
    /// is computed by one sgemm call over the whole `k`, so the split does not change results.
    ///
    /// # Safety
    /// `a`, `b` and `c` with their strides must address `m×k`, `k×n` and `m×n` matrices within
    /// their allocations; `c`'s elements must not alias each other or `a`'s and `b`'s.
    unsafe fn run(&self, c: *mut f32) {
        let threads = super::parallel::threads();
        let macs = self.m.saturating_mul(self.k).saturating_mul(self.n);
        if threads == 1 || macs < PARALLEL_MACS || self.m < 2 * ROW_QUANTUM {
            // SAFETY: as this function's contract says.
            return unsafe { self.rows(0..self.m, c) };
        }
        let rows = self.m.div_ceil(threads).next_multiple_of(ROW_QUANTUM);
        let c = SharedOut(c);
        super::parallel::run(self.m.div_ceil(rows), &|i| {
            let range = i * rows..((i + 1) * rows).min(self.m);
            // SAFETY: the tasks' row ranges are disjoint parts of `0..m`.
            unsafe { self.rows(range, c.get()) };
        });
    }

    /// Rows `range` of C.
    ///
    /// # Safety
    /// As for [`Gemm::run`], with `range` within `0..m`.
    unsafe fn rows(&self, range: std::ops::Range<usize>, c: *mut f32) {
        let start = range.start as isize;
        // SAFETY: as this function's contract says; row `start` of A and of C lie within them.
        unsafe {
            matrixmultiply::sgemm(
                range.len(),
                self.k,
                self.n,
                1.0,
                self.a.ptr.wrapping_offset(start * self.a.strides.0),
                self.a.strides.0,
                self.a.strides.1,
                self.b.ptr,
                self.b.strides.0,
                self.b.strides.1,
                0.0,
                c.wrapping_offset(start * self.c_strides.0),
                self.c_strides.0,
                self.c_strides.1,
            );
        }
    }
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

#[cfg(test)]
mod tests {
    use super::super::small_gemm::tests::sgemm;
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// Products whose A is too large for the panels to take whole run by blocks of its rows
    /// where A is by rows, and on sgemm where it is by columns: still sgemm's results bit for bit,
    /// with B by rows or by columns, across depth blocks, with a last block of fewer rows, with
    /// special values, and shared between threads if there are several.
    #[test]
    fn row_blocks_are_sgemm_bit_for_bit() {
        let shapes = [(1030, 256, 40), (600, 300, 64), (33, 8192, 32), (700, 200, 100)];
        for_each_layout(6, &shapes, |_, (a_rows, _), path| match a_rows {
            true => path == "packed panels of B, by blocks of rows",
            false => path == "sgemm",
        });
    }

    /// A product of at most a tile of rows with A by columns (a transposed batch of a few
    /// samples) runs on the panels from a row-major copy of A: still sgemm's results bit for
    /// bit, B by rows or by columns, across depth blocks, with special values.
    #[test]
    fn few_rows_of_a_by_columns_are_sgemm_bit_for_bit() {
        let shapes = [
            (4, 300, 256),
            (3, 600, 40),
            (8, 200, 700),
            (1, 513, 33),
            (2, 900, 5),
        ];
        for_each_layout(7, &shapes, |(m, _, n), (a_rows, b_rows), path| {
            // A single row is contiguous both ways; B by rows with fewer than 32 columns is left
            // to sgemm (the panels take it only by columns).
            let copied = !a_rows && m > 1 && (n >= 32 || !b_rows);
            a_rows || m == 1 || copied == (path == "packed panels of B, A copied by rows")
        });
    }

    /// A product narrow both ways (fewer than a panel's columns and rows) and too deep for the
    /// direct tile runs on narrow panels, with both operands by columns as its transpose where
    /// that computes no more vectors: still sgemm's results bit for bit (NaN payloads aside), in
    /// every layout, across depth blocks, with special values. Only a column-major A of at most
    /// a tile of rows times a B by rows is left to sgemm.
    #[test]
    fn products_narrow_both_ways_are_sgemm_bit_for_bit() {
        let shapes = [
            (16, 512, 16),
            (10, 3000, 10),
            (9, 600, 30),
            (31, 300, 31),
            (20, 700, 9),
            (4, 900, 20),
        ];
        for_each_layout(8, &shapes, |(m, _, n), (a_rows, b_rows), path| {
            let vectors = |rows: usize, cols: usize| rows * cols.div_ceil(16);
            let transposed = !a_rows && !b_rows && vectors(n, m) <= vectors(m, n);
            (path == "sgemm") == (!a_rows && m <= 8 && b_rows)
                && path.starts_with("packed panels of Aᵀ") == transposed
        });
    }

    /// A narrow product (fewer columns than a panel: a matrix times a vector, a classifier's
    /// few outputs) runs as its transpose `Cᵀ = Bᵀ·Aᵀ` on packed panels where that is wide: still
    /// sgemm's results bit for bit (NaN payloads aside, as for the panels), with A and B read by
    /// rows or by columns (a B of at most eight columns read by rows through a copy of Bᵀ, in a
    /// large enough product), across depth blocks, with special values.
    #[test]
    fn narrow_products_are_sgemm_bit_for_bit() {
        let shapes = [
            (32, 1, 1),
            (40, 257, 1),
            (100, 784, 1),
            (31, 50, 1),
            (128, 256, 10),
            (33, 300, 2),
            (70, 513, 9),
            (96, 200, 31),
            (300, 129, 16),
            (64, 5, 16),
            (2048, 300, 10), // shared between threads, if there are several
            (31, 40, 10),
            (64, 300, 32),
            (200, 300, 4),
            (40, 70, 8),
            (513, 129, 3),
        ];
        for_each_layout(5, &shapes, |(m, k, n), (_, b_rows), path| {
            let copied = m * k * n >= COPY_MIN_MACS;
            let transposed = m >= 32 && n < 32 && (n == 1 || !b_rows || n > 8 || copied);
            path == "the direct tile" || path.starts_with("packed panels of Aᵀ") == transposed
        });
    }

    /// A product of at most four rows with B by columns (a sample or a few through a layer,
    /// `x·Wᵀ`) runs, on a CPU with AVX2 but not AVX-512, by 8 × 8 blocks of B transposed in
    /// registers: still sgemm's results bit for bit, across depth blocks and with a depth or
    /// width that is not a multiple of 8, with special values, and shared between threads when
    /// B is large (the last shape), if there are several.
    #[test]
    fn few_rows_by_the_columns_of_b_are_sgemm_bit_for_bit() {
        let shapes = [
            (1, 784, 512),
            (1, 7, 8),
            (2, 9, 9),
            (3, 257, 15),
            (4, 256, 17),
            (4, 600, 40),
            (1, 1024, 300),
        ];
        for_each_layout(9, &shapes, |_, _, _| true);
        if !small_gemm::avx2_only() {
            return;
        }
        // The path taken, on this CPU: B by columns, and no other layout.
        for &dims in &shapes[..3] {
            for b_rows in [true, false] {
                let path = path_of(dims, b_rows);
                assert_eq!(path == "a few rows by B's columns", !b_rows, "{dims:?}: {path}");
            }
        }
    }

    /// Products of at least 24 rows and whole panels of 16 columns run, on a CPU with AVX2 but
    /// not AVX-512, on panels of B with A copied by tiles of six rows: still sgemm's results bit
    /// for bit, in every layout, across depth blocks, with rows and depth that are not multiples
    /// of the tile's, with special values, and shared between threads when large (the last
    /// shape), if there are several. Other widths and a larger A are left to sgemm.
    #[test]
    fn products_on_avx2_panels_are_sgemm_bit_for_bit() {
        let shapes = [
            (24, 1, 16),
            (25, 300, 32),
            (31, 257, 48),
            (64, 600, 16),
            (130, 512, 96),
        ];
        for_each_layout(10, &shapes, |_, _, _| true);
        if !small_gemm::avx2_only() {
            return;
        }
        let path = |dims| path_of(dims, true);
        assert_eq!(path((25, 300, 32)), "packed panels of B (AVX2)");
        assert_eq!(path((25, 300, 33)), "sgemm", "a narrower last panel");
        assert_eq!(path((23, 300, 32)), "sgemm", "too few rows");
        assert_eq!(path((1025, 1024, 16)), "sgemm", "A larger than the panels take");
    }

    /// The path [`run`] takes on this CPU for a row-major A times a B by rows or by columns.
    fn path_of((m, k, n): (usize, usize, usize), b_rows: bool) -> &'static str {
        let (a, b) = (vec![1.0; m * k], vec![1.0; k * n]);
        let b_view = match b_rows {
            true => View::contiguous(&[k, n]),
            false => View::contiguous(&[n, k]).permute(&[1, 0]),
        };
        unsafe { run(&a, &View::contiguous(&[m, k]), &b, &b_view, None) }.1
    }

    /// For each shape and each layout of A and B (by rows or by columns), seeded values with
    /// one in 40 special: [`run`]'s result must be sgemm's bit for bit (NaN payloads aside), and,
    /// on a CPU with AVX-512, `path_ok(dims, (a_rows, b_rows), path)` must hold for the path it
    /// took.
    fn for_each_layout(
        seed: u64,
        shapes: &[(usize, usize, usize)],
        path_ok: impl Fn((usize, usize, usize), (bool, bool), &str) -> bool,
    ) {
        let mut rng = StdRng::seed_from_u64(seed);
        let special = [0.0, -0.0, f32::INFINITY, f32::NAN, 1e-40, 3e38];
        for &(m, k, n) in shapes {
            let mut value = |_| match rng.random_ratio(1, 40) {
                true => special[rng.random_range(0..special.len())],
                false => rng.random_range(-2.0f32..2.0),
            };
            let a: Vec<f32> = (0..m * k).map(&mut value).collect();
            let b: Vec<f32> = (0..k * n).map(&mut value).collect();
            for (a_rows, b_rows) in [(true, true), (true, false), (false, true), (false, false)] {
                let layout = |rows: usize, cols: usize, by_rows: bool| match by_rows {
                    true => (View::contiguous(&[rows, cols]), (cols as isize, 1)),
                    false => (
                        View::contiguous(&[cols, rows]).permute(&[1, 0]),
                        (1, rows as isize),
                    ),
                };
                let (a_view, a_strides) = layout(m, k, a_rows);
                let (b_view, b_strides) = layout(k, n, b_rows);
                let (got, path, _) = unsafe { run(&a, &a_view, &b, &b_view, None) };
                let matrix = |values: &[f32], strides| Matrix {
                    ptr: values.as_ptr(),
                    strides,
                };
                let want = sgemm((m, k, n), matrix(&a, a_strides), matrix(&b, b_strides));
                let same = (got.iter().zip(&want))
                    .all(|(x, y)| x.to_bits() == y.to_bits() || x.is_nan() && y.is_nan());
                let case = format!("[{m}, {k}] x [{k}, {n}], A by rows {a_rows}, B by rows {b_rows}");
                assert!(same, "{case}, by {path}");
                if small_gemm::avx512() {
                    assert!(path_ok((m, k, n), (a_rows, b_rows), path), "{case}: {path}");
                }
            }
        }
    }
}
