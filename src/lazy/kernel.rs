//! The fused elementwise (+ reduce) kernel: a small program over its leaves, run in cache-sized
//! blocks, so a chain of operations reads each input once and writes one output with no
//! full-size temporaries.

use std::borrow::Cow;
use std::cell::Cell;
use std::mem::MaybeUninit;
use std::ops::Range;
use std::sync::Arc;

use super::aligned::AlignedBlock;
use super::axes::AxisVec;
use super::chunked;
use super::gather::{Tiling, copy_tiled, gather, gather_tiled, panel_rows, tiling};
#[cfg(target_arch = "x86_64")]
use super::math;
use super::ops::{BinaryOp, ReduceOp, UnaryOp, binary_f32, reduce_step_f32, unary_f32};
use super::storage::Storage;
use super::view::View;
use super::{alloc, parallel};
use crate::shape::runtime::numel;
use crate::simd::simd_dispatch;

/// Values a fused column reduction of rows longer than a quarter of a block computes before
/// adding them up (at least four rows): their sums `fold_rows` then keeps in registers across
/// them. One thread, x·y summed over rows, against block by block (medians of 15 pairs):
/// [1024, 1024] 0.82 of its time, [2048, 600] 0.77, [2048, 512] 0.94, [256, 4096] 0.94 (0.78
/// in another run), [64, 1024] 0.81; a layer norm's forward and backward over [256, 1024] 0.88.
/// Four blocks measured as well as 8 or 16.
const STASH: usize = 4 * BLOCK;

/// Columns per tile of a reduction over leading axes whose row of accumulators is too large for
/// L1 (see [`COLUMN_TILES_FROM`]): a block, whose f64 sums (8 KiB) stay in L1 while every reduced
/// row adds into them.
const COLUMN_TILE: usize = BLOCK;

/// Bytes of a kept row's accumulators (f64 sums, or f32 maxima and minima) from which a column
/// reduction runs tile by tile: this CPU's L1 data cache. Row by row, a sum over the first axis of
/// [64, 128, 128] (16,384 sums, 128 KiB) took 253 µs on one thread, tile by tile 176 (its maximum
/// 170 → 144). Below it, row by row reads the input in order and was faster: tiled from 1,025
/// columns, a reviewer measured sums over [1024, 2048], [699, 3000] and [512, 4096] 9–16 % slower
/// and maxima up to 27 % slower, while sums gained from 6,144 columns (48 KiB) and maxima from about
/// 12,000 (each ratio over 4–6 alternating runs).
const COLUMN_TILES_FROM: usize = 48 << 10;

/// Elements per block: a few blocks of every live value fit in L1/L2 together. Each block pays a
/// fixed setup (its leaves' pointers and gathers, the program's dispatch), which 512 values did
/// not amortize well. Against 512, over the 80 cases of a sweep of common ops (one thread, best of
/// 20 to 100 runs, two builds run alternately), 1024 took 4 % less time in geometric mean: the
/// 8-op chain 0.64 → 0.60 ms, softmax over rows of [1024, 1024] 1.05 → 0.93, cross entropy over
/// [1024, 100] 143 → 128 µs; the worst was a sum over the middle axis of [64, 128, 128],
/// 168 → 188 µs. 2048 took 1 % more than 1024.
pub(crate) const BLOCK: usize = 1024;

/// An input of a kernel: a realized buffer read through a view of the kernel's shape.
#[derive(Clone, Debug)]
pub(crate) struct Leaf {
    pub(crate) buf: Arc<Storage>,
    pub(crate) view: View,
}

/// One step of a kernel program. Operands index the kernel's values: leaves first, then the
/// results of earlier instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Instr {
    Unary(UnaryOp, usize),
    Binary(BinaryOp, usize, usize),
    Where(usize, usize, usize),
}

impl Instr {
    /// The operands, in the first `n` entries of the array.
    pub(crate) fn operands(&self) -> ([usize; 3], usize) {
        match *self {
            Instr::Unary(_, a) => ([a, 0, 0], 1),
            Instr::Binary(_, a, b) => ([a, b, 0], 2),
            Instr::Where(c, a, b) => ([c, a, b], 3),
        }
    }

    pub(crate) fn name(&self) -> String {
        match self {
            Instr::Unary(op, _) => format!("{op:?}"),
            Instr::Binary(op, _, _) => format!("{op:?}"),
            Instr::Where(..) => "Where".into(),
        }
    }
}

/// A kernel's instructions over its leaves, with the block buffer each result goes to. Shared:
/// a replayed schedule runs the same program every step without copying or re-planning it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Program(Arc<ProgramData>);

#[derive(Debug, PartialEq)]
struct ProgramData {
    instrs: Vec<Instr>,
    slots: Vec<Option<usize>>,
}

impl Program {
    /// `instrs` over `leaves` leaves.
    pub(crate) fn new(leaves: usize, instrs: Vec<Instr>) -> Self {
        let slots = assign_slots(leaves, &instrs);
        Program(Arc::new(ProgramData { instrs, slots }))
    }

    fn slots(&self) -> &[Option<usize>] {
        &self.0.slots
    }
}

impl std::ops::Deref for Program {
    type Target = [Instr];
    fn deref(&self) -> &[Instr] {
        &self.0.instrs
    }
}

/// A fused kernel: elementwise `program` over `shape`, optionally reduced over `reduce_axes`
/// (which the output keeps as size 1). The last value is the result.
#[derive(Debug)]
pub(crate) struct FusedKernel {
    pub(crate) shape: AxisVec<usize>,
    pub(crate) leaves: Vec<Leaf>,
    pub(crate) program: Program,
    pub(crate) reduce: Option<(ReduceOp, AxisVec<usize>)>,
}

/// How a leaf is read for one block.
enum LeafAccess<'a> {
    /// Row-major from this buffer position.
    Contiguous(usize),
    /// Values repeating with a short period (one value, a bias row over a batch): the period
    /// tiled once over a block and a period more, so block `start` reads from `start % period`.
    Periodic { tile: AlignedBlock, period: usize },
    /// All of it, copied row-major in tiles before the first block (a transpose of at most 2^16
    /// values, or one read by a reduction by tiles of columns, whose blocks revisit rows).
    Copied(Storage),
    /// Copied row-major in tiles, a panel of `rows` rows of the first axis at a time, as blocks
    /// reach it (a larger transpose, read by a kernel whose blocks come in order): each panel is
    /// read from cache, where a whole copy went through memory twice more.
    Panels {
        view: Cow<'a, View>,
        tiling: Tiling,
        rows: usize,
    },
    /// Runs of at least a block of consecutive values (the view's trailing axes that lie in
    /// order, of this length: a slice of wider rows, or reduced axes in order after kept ones):
    /// a block within one run is read where it lies, one that crosses runs is gathered.
    Rows(Cow<'a, View>, usize),
    /// Anything else, gathered per block (the view in iteration order); a row statistic that holds
    /// one value over the block is filled for one chunk instead, where chunks run (see
    /// `one_value`).
    Strided(Cow<'a, View>),
}

impl LeafAccess<'_> {
    /// Whether the block `start..start + len` is gathered before it is read.
    fn gathers(&self, start: usize, len: usize) -> bool {
        match self {
            LeafAccess::Strided(_) => true,
            LeafAccess::Rows(view, run) => row_position(view, *run, start, len).is_none(),
            _ => false,
        }
    }
}

/// How many consecutive values `view`'s trailing axes hold where they lie in order (the last
/// with stride 1, each before it stepping over all of the next).
fn consecutive_run(view: &View) -> usize {
    let (shape, strides) = (view.shape(), view.strides());
    let mut run = 1;
    for (&dim, &stride) in shape.iter().zip(strides).rev() {
        if stride != run as isize {
            break;
        }
        run *= dim;
    }
    run
}

/// Where the block `start..start + len` of `view` (row-major over its shape) lies in its buffer,
/// if it lies within one of its runs of `run` consecutive values.
fn row_position(view: &View, run: usize, start: usize, len: usize) -> Option<usize> {
    if start % run + len > run {
        return None;
    }
    let shape = view.shape();
    let (mut rest, mut position) = (start, view.offset());
    for (&dim, &stride) in shape.iter().zip(view.strides()).rev() {
        position += (rest % dim) as isize * stride;
        rest /= dim;
    }
    Some(position as usize)
}

impl FusedKernel {
    /// Runs the kernel and returns its output, row-major.
    pub(crate) fn run(&self) -> Storage {
        if let Some(simplified) = self.simplified() {
            return simplified.run();
        }
        if let Some(reordered) = self.in_memory_order() {
            return reordered.run();
        }
        let rank = self.shape.len();
        let reduced: &[usize] = self.reduce.as_ref().map_or(&[], |(_, axes)| axes);
        // Reducing one range of axes with kept axes after it, `[outer.., reduced.., inner..]` (a
        // bias gradient, a column sum, a mean over a sequence): keep memory order, and add each
        // `inner` row of values into a row of outputs, so blocks read and add rows contiguously.
        // Past leading axes, only when those rows are long enough to vectorize, or each output's
        // run is short; otherwise each output is better folded as one run. Gathering runs of at
        // most 16 values from a tensor past L1 cost more than adding short rows (one thread,
        // alternating: the maximum over the middle axis of [99823, 2, 5] 0.24 of its time, the
        // sum over it of [5000, 4, 7] 0.29, of [30000, 10, 3] 0.84), where runs of 30 or 300 lost
        // (`[10000, 30, 3]` 1.18, `[1000, 300, 2]` 2.4).
        let consecutive = reduced.windows(2).all(|w| w[1] == w[0] + 1);
        let inner: usize = reduced
            .last()
            .map_or(1, |&last| self.shape[last + 1..].iter().product());
        let run_len: usize = reduced.iter().map(|&a| self.shape[a]).product();
        let short_runs = inner > 1 && run_len <= 16 && numel(&self.shape) >= 4 * BLOCK;
        let columns = consecutive
            && reduced.last().is_some_and(|&last| last + 1 < rank)
            && (reduced[0] == 0 || inner >= 16 || short_runs);
        // Rows of outputs too long for L1 (their f64 sums above all) are folded a tile of columns
        // at a time (below), the one plan whose blocks do not come in order.
        let column_tiles = (self.reduce.as_ref())
            .is_some_and(|(op, _)| columns && inner * accumulator_bytes(*op) >= COLUMN_TILES_FROM);
        // Otherwise iterate kept axes outermost and reduced axes innermost, so each output is one
        // run. Without a reduction, or when the reduced axes are the last ones (a row maximum),
        // that is the kernel's own order, and its leaves' views serve as they are.
        let order: Option<AxisVec<usize>> = (self.reduce.is_some() && !columns)
            .then(|| {
                (0..rank)
                    .filter(|a| !reduced.contains(a))
                    .chain(reduced.iter().copied())
                    .collect()
            })
            .filter(|order: &AxisVec<usize>| order.iter().enumerate().any(|(d, &a)| d != a));
        let n = numel(&self.shape);
        let access: Vec<LeafAccess> = self
            .leaves
            .iter()
            .map(|leaf| {
                let view = match &order {
                    Some(order) => Cow::Owned(leaf.view.permute(order)),
                    None => Cow::Borrowed(&leaf.view),
                };
                if view.mask().is_none() && view.has_contiguous_strides() {
                    LeafAccess::Contiguous(view.offset() as usize)
                } else if let Some(period) = view.repeating_period().filter(|&p| p <= BLOCK && n > 0) {
                    let row = &leaf.buf[view.offset() as usize..][..period];
                    LeafAccess::Periodic {
                        tile: repeated(row, period - 1 + BLOCK.min(n)),
                        period,
                    }
                } else if let Some(tiling) = tiling(&view) {
                    match panel_rows(&view, tiling).filter(|_| !column_tiles) {
                        Some(rows) => LeafAccess::Panels { view, tiling, rows },
                        None => LeafAccess::Copied(gather_tiled(&leaf.buf, &view, tiling)),
                    }
                } else if let Some(run) =
                    Some(consecutive_run(&view)).filter(|&run| run >= BLOCK && view.mask().is_none())
                {
                    LeafAccess::Rows(view, run)
                } else {
                    LeafAccess::Strided(view)
                }
            })
            .collect();
        let plan = Plan {
            kernel: self,
            slots: self.program.slots(),
            access,
            n,
        };
        let Some((op, _)) = &self.reduce else {
            return plan.run_elementwise();
        };

        if run_len == 1 {
            // Each output reduces one value: max and min give it back, and a sum adds it to
            // `+0` (so `-0` comes out `+0`), without a fold per output or sums in f64.
            let mut out = plan.run_elementwise();
            if *op == ReduceOp::Sum {
                out.iter_mut().for_each(|x| *x += 0.0);
            }
            return out;
        }
        let out_len: usize = (0..rank)
            .filter(|a| !reduced.contains(a))
            .map(|a| self.shape[a])
            .product();
        let mut out = alloc::output_filled(out_len, op.identity());
        if !columns && (1..=BLOCK).contains(&run_len) {
            plan.reduce_whole_runs(*op, run_len, &mut out);
            return out;
        }
        let mut sums = match op {
            ReduceOp::Sum => alloc::filled(out_len, 0.0f64),
            _ => Vec::new(),
        };
        if !columns && n >= 2 * PARALLEL_CHUNK {
            plan.reduce_in_pieces(*op, run_len, &mut out, &mut sums);
        } else if column_tiles {
            // Fold all the reduced rows of one tile of columns before the next tile, so its
            // accumulators stay in L1, and several rows of the tile at a time, so `fold_rows`
            // keeps them in registers across those rows. Each output still takes its values in
            // the same order.
            let span = run_len * inner;
            let mut blocks = plan.blocks(n);
            let mut stash = scratch_block(STASH);
            for slab in (0..n).step_by(span.max(1)) {
                for column in (0..inner).step_by(COLUMN_TILE) {
                    let len = COLUMN_TILE.min(inner - column);
                    let o = slab / span * inner + column;
                    for first in (0..run_len).step_by(STASH / COLUMN_TILE) {
                        let rows = (STASH / COLUMN_TILE).min(run_len - first);
                        let values = &mut stash.values_mut()[..rows * len];
                        for (r, part) in values.chunks_mut(len).enumerate() {
                            blocks.compute_into(slab + (first + r) * inner + column, as_uninit(part));
                        }
                        let sums = if sums.is_empty() {
                            &mut [][..]
                        } else {
                            &mut sums[o..o + len]
                        };
                        fold_column_range(*op, values, len, &mut out[o..o + len], sums);
                    }
                }
            }
            return_scratch([stash].into_iter());
        } else if let Some(input) = plan.input_in_order().filter(|_| columns) {
            let span = run_len * inner;
            if parallel::threads() > 1 && n >= 2 * PARALLEL_CHUNK && inner >= 128 {
                fold_columns_in_parallel(*op, input, (inner, span), &mut out, &mut sums);
            } else {
                // Pieces of whole rows, at least 16 of them: each chunk of accumulators then
                // stays in registers across 16 rows (see `fold_rows`), where a block holds as
                // few as one.
                let piece = (16 * inner).max(BLOCK).next_multiple_of(inner);
                for (i, values) in input.chunks(piece).enumerate() {
                    accumulate_columns(*op, values, i * piece, inner, span, &mut out, &mut sums);
                }
            }
        } else if columns && inner > BLOCK / 4 {
            // A block holds at most three of these rows: added block by block, each row's sums
            // were loaded and stored once per row or two. Computed four rows or more at a time
            // into one buffer, `fold_rows` keeps each chunk of sums in registers across them (the
            // same additions, in the same order).
            let span = run_len * inner;
            let piece = (STASH / inner).max(4) * inner;
            let mut blocks = plan.blocks(n);
            let mut stash = scratch_block(piece.min(n));
            for first in (0..n).step_by(piece) {
                let values = &mut stash.values_mut()[..piece.min(n - first)];
                for (i, part) in values.chunks_mut(BLOCK).enumerate() {
                    blocks.compute_into(first + i * BLOCK, as_uninit(part));
                }
                accumulate_columns(*op, values, first, inner, span, &mut out, &mut sums);
            }
            return_scratch([stash].into_iter());
        } else if let Some(input) = plan.input_in_order().filter(|_| !columns) {
            accumulate(*op, input, 0, run_len, &mut out, &mut sums);
        } else {
            let mut blocks = plan.blocks(n);
            for start in (0..n).step_by(BLOCK) {
                let values = blocks.compute(start, BLOCK.min(n - start));
                if columns {
                    accumulate_columns(*op, values, start, inner, run_len * inner, &mut out, &mut sums);
                } else {
                    accumulate(*op, values, start, run_len, &mut out, &mut sums);
                }
            }
        }
        if !sums.is_empty() {
            for (o, s) in out.iter_mut().zip(&sums) {
                *o = *s as f32;
            }
        }
        out
    }

    /// The same kernel over fewer axes, where some can go: axes of size 1, and neighbours that
    /// every leaf steps through as one (`stride[a] = stride[a + 1] · shape[a + 1]`, both reduced
    /// or both kept). Neither changes a position, in the leaves or in the output, but the plans
    /// below work axis by axis. A reduction over an axis of 1 was planned as one over the middle
    /// axis (the maximum over it of a [242902, 1, 7] tensor took 15 ms, PyTorch 4.6; now 1.1); a
    /// permuted view with short trailing axes (`exp` of `[8, 2, 19556]` read as `[19556, 8, 2]`)
    /// was gathered value by value where, its last two axes one of 16, it is copied by tiles. A
    /// reduction over only axes of 1 still reduces runs of one value (`x + 0` for a sum, `x` for
    /// the others). Kernels whose leaves are all read in order are left as they are (their plan
    /// would not change) unless they reduce an axis of 1.
    fn simplified(&self) -> Option<FusedKernel> {
        let rank = self.shape.len();
        let reduced = |a: usize| (self.reduce.as_ref()).is_some_and(|(_, axes)| axes.contains(&a));
        let reduces_one = (0..rank).any(|a| reduced(a) && self.shape[a] == 1);
        let in_order = self.leaves.iter().all(|l| l.view.has_contiguous_strides());
        if self.shape.iter().all(|&d| d == 1) || (in_order && !reduces_one) {
            return None;
        }
        let unmasked = self.leaves.iter().all(|l| l.view.mask().is_none());
        let one_step = |outer: usize, inner: usize| {
            let strides = |l: &Leaf| (l.view.strides()[outer], l.view.strides()[inner]);
            (self.leaves.iter()).all(|l| strides(l).0 == strides(l).1 * self.shape[inner] as isize)
        };
        // Whether old axis `a` joins the new axis that old axis `b` (the last before it longer
        // than 1) ends.
        let joins = |b: usize, a: usize| unmasked && reduced(a) == reduced(b) && one_step(b, a);
        let longer: AxisVec<usize> = (0..rank).filter(|&a| self.shape[a] != 1).collect();
        if longer.len() == rank && !longer.windows(2).any(|w| joins(w[0], w[1])) {
            return None;
        }
        // The new axes' sizes, and whether each is reduced.
        let (mut shape, mut reduces) = (Vec::new(), Vec::new());
        for (i, &a) in longer.iter().enumerate() {
            if i > 0 && joins(longer[i - 1], a) {
                *shape.last_mut().expect("an axis before") *= self.shape[a];
            } else {
                shape.push(self.shape[a]);
                reduces.push(reduced(a));
            }
        }
        let leaves = (self.leaves.iter())
            .map(|l| {
                Some(Leaf {
                    buf: l.buf.clone(),
                    view: l.view.reshape(&shape)?,
                })
            })
            .collect::<Option<Vec<Leaf>>>()?;
        let reduce =
            (self.reduce.as_ref()).map(|(op, _)| (*op, (0..shape.len()).filter(|&i| reduces[i]).collect()));
        Some(FusedKernel {
            shape: AxisVec::from_slice(&shape),
            leaves,
            program: self.program.clone(),
            reduce,
        })
    }

    /// The same reduction with its axes reordered to follow the memory order of its leaves, if
    /// that reads more of them row-major and leaves the kept axes in their order (so the output
    /// is laid out as before). A reduction of a transposed or permuted view otherwise gathers it
    /// element by element or copies it first: `x.t().sum(1)` over [1024, 1024] took 7 times
    /// PyTorch's time. What the order can change: a sum's last bit (an f64 sum of the same
    /// values in another order, rounded once to f32), and for max and min, which of `-0` and
    /// `+0`, or which NaN's payload, comes out when they meet.
    fn in_memory_order(&self) -> Option<FusedKernel> {
        let (op, reduced) = self.reduce.as_ref()?;
        let rank = self.shape.len();
        let row_major = |leaves: &[Leaf]| {
            (leaves.iter())
                .filter(|l| l.view.mask().is_none() && l.view.has_contiguous_strides())
                .count()
        };
        // The first leaf not read in order, whose axes (all longer than 1) the order follows.
        let guide =
            (self.leaves.iter()).find(|l| l.view.mask().is_none() && !l.view.has_contiguous_strides())?;
        if self.shape.iter().any(|&d| d < 2) {
            return None;
        }
        let strides = guide.view.strides();
        let mut order: Vec<usize> = (0..rank).collect();
        order.sort_by_key(|&a| std::cmp::Reverse(strides[a].unsigned_abs()));
        let kept: Vec<usize> = order.iter().copied().filter(|a| !reduced.contains(a)).collect();
        if kept.windows(2).any(|w| w[0] > w[1]) {
            return None;
        }
        let leaves: Vec<Leaf> = (self.leaves.iter())
            .map(|l| Leaf {
                buf: l.buf.clone(),
                view: l.view.permute(&order),
            })
            .collect();
        if row_major(&leaves) <= row_major(&self.leaves) {
            return None;
        }
        Some(FusedKernel {
            shape: order.iter().map(|&a| self.shape[a]).collect(),
            leaves,
            program: self.program.clone(),
            reduce: Some((*op, (0..rank).filter(|&i| reduced.contains(&order[i])).collect())),
        })
    }

    /// A one-line description for the trace.
    pub(crate) fn describe(&self) -> String {
        let ops: Vec<String> = self.program.iter().map(Instr::name).collect();
        match &self.reduce {
            Some((op, axes)) => format!(
                "fused [{}] -> reduce {op:?} over {axes:?} of {:?}, {} inputs",
                ops.join(" "),
                self.shape,
                self.leaves.len()
            ),
            None => format!(
                "fused [{}] over {:?}, {} inputs",
                ops.join(" "),
                self.shape,
                self.leaves.len()
            ),
        }
    }
}

/// A kernel ready to run: how each leaf is read and which block buffer holds each value.
struct Plan<'k> {
    kernel: &'k FusedKernel,
    access: Vec<LeafAccess<'k>>,
    slots: &'k [Option<usize>],
    n: usize,
}

impl Drop for Plan<'_> {
    /// Gives tiled copies back to the output pool and repeated rows to the block pool, for the
    /// next kernel.
    fn drop(&mut self) {
        for access in self.access.drain(..) {
            match access {
                LeafAccess::Copied(values) => alloc::keep(values),
                LeafAccess::Periodic { tile, .. } => return_scratch(std::iter::once(tile)),
                _ => {}
            }
        }
    }
}

impl Plan<'_> {
    /// All of the input, when the kernel only reads one buffer in order (a reduction of a stored
    /// tensor): then it can be handed over in pieces of any length, not block by block.
    fn input_in_order(&self) -> Option<&[f32]> {
        if !self.kernel.program.is_empty() || self.n == 0 {
            return None;
        }
        match self.access.as_slice() {
            [LeafAccess::Contiguous(off)] => Some(&self.kernel.leaves[0].buf[*off..*off + self.n]),
            [LeafAccess::Copied(values)] => Some(&values[..self.n]),
            _ => None,
        }
    }

    /// Block buffers for one thread running this plan over positions before `end` (a panel of a
    /// leaf is not copied past it).
    fn blocks(&self, end: usize) -> Blocks<'_> {
        let len = BLOCK.min(self.n);
        let program = &self.kernel.program;
        let slot_count = self.slots.iter().flatten().max().map_or(0, |&m| m + 1);
        // Chunk by chunk, values live in the tile, and only the result may need a block buffer.
        let chunked = chunked::if_it_pays(program, self.kernel.leaves.len());
        let root_slot = (program.len().checked_sub(1)).and_then(|i| self.slots[self.kernel.leaves.len() + i]);
        let (mut slot_bufs, mut gathered, leaf_ptrs) =
            LISTS.try_with(Cell::take).ok().flatten().unwrap_or_default();
        slot_bufs.extend((0..slot_count).map(|s| {
            if chunked.is_some() && Some(s) != root_slot {
                AlignedBlock::default()
            } else {
                scratch_block(len)
            }
        }));
        gathered.extend(self.access.iter().map(|a| match a {
            LeafAccess::Strided(_) | LeafAccess::Rows(..) => scratch_block(len),
            LeafAccess::Panels { .. } => pooled(&PANELS),
            _ => AlignedBlock::default(),
        }));
        let panels = if self.access.iter().any(|a| matches!(a, LeafAccess::Panels { .. })) {
            vec![0..0; self.access.len()]
        } else {
            Vec::new()
        };
        Blocks {
            plan: self,
            end,
            slot_bufs,
            gathered,
            panels,
            tile: chunked
                .as_ref()
                .map_or_else(AlignedBlock::default, |c| scratch_block(c.tile_len())),
            leaf_ptrs,
            chunked,
        }
    }

    /// The output of a kernel without a reduction, split across threads when it is large.
    fn run_elementwise(&self) -> Storage {
        // A copy of one tiled leaf (`contiguous()` of a transpose) is the tiled copy itself.
        if let [LeafAccess::Panels { view, tiling, .. }] = self.access.as_slice()
            && self.kernel.program.is_empty()
        {
            return gather_tiled(&self.kernel.leaves[0].buf, view, *tiling);
        }
        // One instruction over leaves read where they lie: each block straight from them into
        // the output, without a block buffer or the per-block bookkeeping of `Blocks`.
        let in_place = |a: &LeafAccess| matches!(a, LeafAccess::Contiguous(_) | LeafAccess::Periodic { .. });
        if let [instr] = &self.kernel.program[..]
            && self.access.iter().all(in_place)
        {
            // SAFETY: `execute` writes every element of each block.
            return unsafe {
                fill_output(self.n, |part, offset| {
                    for (start, dst) in line_aligned_blocks(part) {
                        let value = |v| leaf_block(self, &[], &[], v, offset + start, dst.len());
                        execute(instr, &operands(instr, value), dst);
                    }
                })
            };
        }
        // SAFETY: `compute_into` writes every element of each block.
        unsafe {
            fill_output(self.n, |part, offset| {
                let mut blocks = self.blocks(offset + part.len());
                for (start, dst) in line_aligned_blocks(part) {
                    blocks.compute_into(offset + start, dst);
                }
            })
        }
    }
}

/// Bytes of one output's accumulator in a reduction: sums add in f64, maxima and minima fold in
/// the output itself.
fn accumulator_bytes(op: ReduceOp) -> usize {
    match op {
        ReduceOp::Sum => size_of::<f64>(),
        ReduceOp::Max | ReduceOp::Min => size_of::<f32>(),
    }
}

/// `part` in blocks of at most [`BLOCK`] values, each with its position in `part`. Blocks after the
/// first start on a cache line: the first is cut short to reach one. Large buffers share their
/// offset from a line (the allocator's header), so a kernel's inputs then line up too, and its
/// vector loads and stores do not straddle lines.
pub(crate) fn line_aligned_blocks(
    part: &mut [MaybeUninit<f32>],
) -> impl Iterator<Item = (usize, &mut [MaybeUninit<f32>])> {
    let to_line = (part.as_ptr() as usize).wrapping_neg() % 64 / size_of::<f32>();
    let (head, rest) = part.split_at_mut(to_line.min(part.len()));
    let head = (!head.is_empty()).then_some((0, head));
    let rest = rest
        .chunks_mut(BLOCK)
        .enumerate()
        .map(move |(k, block)| (to_line + k * BLOCK, block));
    head.into_iter().chain(rest)
}

/// A new output of `n` values, written by `fill(part, offset)` for the parts that tile it
/// (`offset` is the part's first position). Large outputs are split across threads into parts of
/// whole blocks. Every caller computes each value on its own, so where parts and blocks start
/// changes no result.
///
/// # Safety
/// `fill` must write every element of the part it is given.
pub(crate) unsafe fn fill_output(n: usize, fill: impl Fn(&mut [MaybeUninit<f32>], usize) + Sync) -> Storage {
    let mut out = alloc::output(n);
    let spare = &mut out.spare_capacity_mut()[..n];
    if n < 2 * PARALLEL_CHUNK || parallel::threads() == 1 {
        fill(spare, 0);
    } else {
        let chunk = n
            .div_ceil(4 * parallel::threads())
            .next_multiple_of(BLOCK)
            .max(PARALLEL_CHUNK);
        let mut parts: Vec<&mut [MaybeUninit<f32>]> = spare.chunks_mut(chunk).collect();
        parallel::for_each_mut(&mut parts, &|i, part| fill(part, i * chunk));
    }
    // SAFETY: `fill` writes every element of its part (the caller's promise), and the parts
    // tile the first `n` of the spare capacity; a panic in any task propagates out of
    // `parallel::for_each_mut` before this line.
    unsafe { out.set_len(n) };
    out
}

impl Plan<'_> {
    /// A reduction whose runs (each output's values, consecutive) fit in a block: blocks end at
    /// runs' ends, so each output is folded from one block straight into `out`, with no sums in
    /// f64 across blocks. A sum over rows of 2 ([524288, 2], a softmax over two classes) took
    /// 8.3 ms, most of it on those sums and on each piece's own copies of them; now 0.95. With threads and
    /// a large kernel, each takes ranges of outputs; every output is still folded from its whole
    /// run, so the result is the same on any number of threads.
    fn reduce_whole_runs(&self, op: ReduceOp, run_len: usize, out: &mut [f32]) {
        let step = BLOCK - BLOCK % run_len;
        let input = self.input_in_order();
        let fold = |first: usize, outs: &mut [f32]| {
            let (begin, end) = (first * run_len, (first + outs.len()) * run_len);
            // A stored input's runs are folded where they lie, whole as from blocks.
            if let Some(input) = input {
                return fold_whole_runs(op, &input[begin..end], run_len, outs);
            }
            let mut blocks = self.blocks(end);
            for start in (begin..end).step_by(step) {
                let values = blocks.compute(start, step.min(end - start));
                let o = (start - begin) / run_len;
                fold_whole_runs(op, values, run_len, &mut outs[o..o + values.len() / run_len]);
            }
        };
        if parallel::threads() == 1 || self.n < 2 * PARALLEL_CHUNK {
            return fold(0, out);
        }
        let per_piece = PARALLEL_CHUNK.div_ceil(run_len);
        let mut pieces: Vec<&mut [f32]> = out.chunks_mut(per_piece).collect();
        parallel::for_each_mut(&mut pieces, &|i, piece| fold(i * per_piece, piece));
    }

    /// A large reduction whose outputs each fold one run of `run_len` positions, computed in
    /// pieces that threads share: groups of whole runs, or parts of `PARALLEL_CHUNK` positions of
    /// one long run. The pieces depend only on the shape, never on the thread count, and their
    /// partial results are folded in order, so the result is the same on any number of threads.
    fn reduce_in_pieces(&self, op: ReduceOp, run_len: usize, out: &mut [f32], sums: &mut [f64]) {
        // (first output, positions) of each piece.
        let pieces: Vec<(usize, Range<usize>)> = if run_len >= PARALLEL_CHUNK {
            (0..out.len())
                .flat_map(|o| {
                    (0..run_len).step_by(PARALLEL_CHUNK).map(move |k| {
                        (
                            o,
                            o * run_len + k..o * run_len + (k + PARALLEL_CHUNK).min(run_len),
                        )
                    })
                })
                .collect()
        } else {
            let group = PARALLEL_CHUNK.div_ceil(run_len);
            (0..out.len())
                .step_by(group)
                .map(|o| (o, o * run_len..(o + group).min(out.len()) * run_len))
                .collect()
        };
        let input = self.input_in_order();
        // A piece's partial results into `part`: its outputs' maxima or minima, and for a sum
        // their f64 sums.
        let partial = |(first, range): &(usize, Range<usize>), part: &mut (Vec<f32>, Vec<f64>)| {
            let (part_out, part_sums) = part;
            let outputs = range.end.div_ceil(run_len) - first;
            part_out.clear();
            part_out.resize(outputs, op.identity());
            part_sums.clear();
            part_sums.resize(if op == ReduceOp::Sum { outputs } else { 0 }, 0.0);
            if let Some(input) = input {
                let relative = range.start - first * run_len;
                return accumulate(op, &input[range.clone()], relative, run_len, part_out, part_sums);
            }
            let mut blocks = self.blocks(range.end);
            for start in range.clone().step_by(BLOCK) {
                let values = blocks.compute(start, BLOCK.min(range.end - start));
                let relative = start - first * run_len;
                accumulate(op, values, relative, run_len, part_out, part_sums);
            }
        };
        // A piece's partial results folded into the outputs; pieces in order.
        let mut merge = |(first, _): &(usize, Range<usize>), (part_out, part_sums): &(Vec<f32>, Vec<f64>)| {
            for (j, (&value, o)) in part_out.iter().zip(&mut out[*first..]).enumerate() {
                match op {
                    ReduceOp::Sum => sums[first + j] += part_sums[j],
                    _ => *o = reduce_step_f32(op, *o, value),
                }
            }
        };
        if parallel::threads() == 1 {
            // The same pieces one after the other, through one pair of buffers: a pair for each
            // piece and the hand-off to threads took a sixth of a [1024, 1024] sum's time.
            let mut part = Default::default();
            for piece in &pieces {
                partial(piece, &mut part);
                merge(piece, &part);
            }
            return;
        }
        let mut results: Vec<(Vec<f32>, Vec<f64>)> = vec![Default::default(); pieces.len()];
        parallel::for_each_mut(&mut results, &|i, part| partial(&pieces[i], part));
        for (piece, part) in pieces.iter().zip(&results) {
            merge(piece, part);
        }
    }
}

/// One thread's working state for a plan: a block buffer per live value and per gathered leaf.
struct Blocks<'p> {
    plan: &'p Plan<'p>,
    /// The end of the positions this thread computes.
    end: usize,
    slot_bufs: Vec<AlignedBlock>,
    gathered: Vec<AlignedBlock>,
    /// The positions each leaf read by panels has in its `gathered` buffer (empty for others).
    panels: Vec<Range<usize>>,
    /// The program, if it runs chunk by chunk; then the tile has a chunk per instruction, and
    /// `leaf_ptrs` each leaf's values over the current block.
    chunked: Option<chunked::Chunked<'p>>,
    tile: AlignedBlock,
    leaf_ptrs: Vec<*const f32>,
}

impl Blocks<'_> {
    /// Computes every value over positions `start..start + len` (at most a block) and returns
    /// the result's.
    fn compute(&mut self, start: usize, len: usize) -> &[f32] {
        self.run(start, len, None);
        let plan = self.plan;
        let leaves = plan.kernel.leaves.len();
        let root = leaves + plan.kernel.program.len() - 1;
        if root < leaves {
            self.leaf_block(root, start, len)
        } else {
            &self.slot_bufs[plan.slots[root].expect("root has a slot")].values()[..len]
        }
    }

    /// Computes the result over positions `start..start + dst.len()` straight into `dst`: the
    /// last instruction writes there, saving a pass over a block buffer.
    fn compute_into(&mut self, start: usize, dst: &mut [MaybeUninit<f32>]) {
        if self.plan.kernel.program.is_empty() {
            let values = self.compute(start, dst.len());
            for (d, &v) in dst.iter_mut().zip(values) {
                d.write(v);
            }
        } else {
            self.run(start, dst.len(), Some(dst));
        }
    }

    /// Leaf `v`'s values over the block at `start` (gathered first, if strided).
    fn leaf_block(&self, v: usize, start: usize, len: usize) -> &[f32] {
        leaf_block(self.plan, &self.gathered, &self.panels, v, start, len)
    }

    /// Runs the program over one block; the last instruction writes to `last` when given. A
    /// program that `chunked` pays for runs chunk by chunk, any other one instruction at a time.
    fn run(&mut self, start: usize, len: usize, mut last: Option<&mut [MaybeUninit<f32>]>) {
        let plan = self.plan;
        let kernel = plan.kernel;
        let leaves = kernel.leaves.len();
        // Leaves holding one value over this block, filled for one chunk only (bit `v`).
        let mut constant = 0u64;
        for (v, ((scratch, a), leaf)) in self
            .gathered
            .iter_mut()
            .zip(&plan.access)
            .zip(&kernel.leaves)
            .enumerate()
        {
            if let LeafAccess::Strided(view) | LeafAccess::Rows(view, _) = a
                && a.gathers(start, len)
            {
                // Only where chunks run: a single op reads the whole block.
                let constant_chunk = (self.chunked.as_ref().filter(|_| v < 64))
                    .and_then(|c| Some((c.constant_len(), one_value(&leaf.buf, view, start, len)?)));
                match constant_chunk {
                    Some((chunk, value)) => {
                        scratch.values_mut()[..chunk.min(len)].fill(value);
                        constant |= 1 << v;
                    }
                    None => gather(&leaf.buf, view, start, &mut scratch.values_mut()[..len]),
                }
            }
            if let LeafAccess::Panels { view, tiling, rows } = a
                && (start < self.panels[v].start || start + len > self.panels[v].end)
            {
                let block = start..start + len;
                self.panels[v] = copy_panel(&leaf.buf, view, *tiling, *rows, block, self.end, scratch);
            }
        }
        let Some(root) = kernel.program.len().checked_sub(1) else {
            return;
        };
        if let Some(chunked) = &self.chunked {
            self.leaf_ptrs.clear();
            for v in 0..leaves {
                let values = leaf_block(plan, &self.gathered, &self.panels, v, start, len);
                self.leaf_ptrs.push(values.as_ptr());
            }
            let out: *mut f32 = match last {
                Some(dst) => dst[..len].as_mut_ptr().cast(),
                None => {
                    let slot = plan.slots[leaves + root].expect("instructions have slots");
                    self.slot_bufs[slot].values_mut()[..len].as_mut_ptr()
                }
            };
            // SAFETY: each leaf pointer starts `len` values of a leaf's block (or, for a constant
            // one, as many as `constant_len`); `out` is `len` values of the kernel's output or of
            // the root's block buffer, which no leaf is.
            unsafe { chunked.run(&self.leaf_ptrs, constant, self.tile.values_mut(), out, len) };
            return;
        }
        for (i, instr) in kernel.program.iter().enumerate() {
            let target = plan.slots[leaves + i].expect("instructions have slots");
            let mut result = std::mem::take(&mut self.slot_bufs[target]);
            let operands = operands(instr, |v| {
                if v < leaves {
                    self.leaf_block(v, start, len)
                } else {
                    &self.slot_bufs[plan.slots[v].expect("values have slots")].values()[..len]
                }
            });
            match last.as_deref_mut() {
                Some(dst) if i == root => execute(instr, &operands, dst),
                _ => execute(instr, &operands, as_uninit(&mut result.values_mut()[..len])),
            }
            self.slot_bufs[target] = result;
        }
    }
}

/// Leaf `v`'s values over the block at `start`; a strided leaf's were gathered into `gathered`,
/// and a tiled one's copied there with the positions `panels[v]`.
fn leaf_block<'a>(
    plan: &'a Plan,
    gathered: &'a [AlignedBlock],
    panels: &[Range<usize>],
    v: usize,
    start: usize,
    len: usize,
) -> &'a [f32] {
    let leaf = &plan.kernel.leaves[v];
    match &plan.access[v] {
        LeafAccess::Contiguous(off) => &leaf.buf[off + start..off + start + len],
        LeafAccess::Periodic { tile, period } => &tile.values()[start % period..][..len],
        LeafAccess::Copied(values) => &values[start..start + len],
        LeafAccess::Panels { .. } => &gathered[v].values()[start - panels[v].start..][..len],
        LeafAccess::Rows(view, run) => match row_position(view, *run, start, len) {
            Some(position) => &leaf.buf[position..position + len],
            None => &gathered[v].values()[..len],
        },
        LeafAccess::Strided(_) => &gathered[v].values()[..len],
    }
}

/// The one value `view` (over `buf`) holds at every position of `start..start + len`, if it is
/// a column repeated along its rows (a row statistic, `[rows, 1]` broadcast over the columns) and
/// the block lies within one row. Layer norm's and softmax's last kernels read two such leaves;
/// filling a block with each took about 12 % of layer norm's.
fn one_value(buf: &[f32], view: &View, start: usize, len: usize) -> Option<f32> {
    let (shape, strides) = (view.shape(), view.strides());
    let [_, width] = *shape else {
        return None;
    };
    (strides[1] == 0 && view.mask().is_none() && start % width + len <= width)
        .then(|| buf[(view.offset() + (start / width) as isize * strides[0]) as usize])
}

/// Copies the rows of `view`'s first axis from the one holding `block.start`, `rows` of them (but
/// none wholly past position `until`, where this thread's work ends) or up to the end of `block`
/// if that is further, into `panel`, and returns their positions.
fn copy_panel(
    buf: &[f32],
    view: &View,
    tiling: Tiling,
    rows: usize,
    block: Range<usize>,
    until: usize,
    panel: &mut AlignedBlock,
) -> Range<usize> {
    let shape = view.shape();
    let row: usize = shape[1..].iter().product();
    let first = block.start / row;
    let end = ((first + rows).min(until.div_ceil(row)))
        .max(block.end.div_ceil(row))
        .min(shape[0]);
    let mut window: AxisVec<(usize, usize)> = shape.iter().map(|&d| (0, d)).collect();
    window[0] = (first, end);
    panel.set_len_for_writing((end - first) * row);
    copy_tiled(buf, &view.shrink(&window), tiling, as_uninit(panel.values_mut()));
    first * row..end * row
}

/// An initialized slice seen as one that instructions write without reading.
pub(super) fn as_uninit(values: &mut [f32]) -> &mut [MaybeUninit<f32>] {
    // SAFETY: same layout; only `execute` writes through the result, and it writes initialized
    // values only, so `values` stays initialized.
    unsafe { &mut *(values as *mut [f32] as *mut [MaybeUninit<f32>]) }
}

impl Drop for Blocks<'_> {
    fn drop(&mut self) {
        let tile = std::mem::take(&mut self.tile);
        return_scratch(
            self.slot_bufs
                .drain(..)
                .chain(self.gathered.drain(..))
                .chain([tile]),
        );
        self.leaf_ptrs.clear();
        let lists = (
            std::mem::take(&mut self.slot_bufs),
            std::mem::take(&mut self.gathered),
            std::mem::take(&mut self.leaf_ptrs),
        );
        let _ = LISTS.try_with(|l| l.set(Some(lists)));
    }
}

/// A block buffer list, a leaf buffer list and a leaf pointer list, all empty.
type Lists = (Vec<AlignedBlock>, Vec<AlignedBlock>, Vec<*const f32>);

thread_local! {
    /// The lists of this thread's last finished `Blocks`, for the next: a small step runs a dozen
    /// kernels, and each took its three lists from the allocator.
    static LISTS: Cell<Option<Lists>> = const { Cell::new(None) };
}

/// The least work one thread takes of a split elementwise kernel (or tiled copy): waking a
/// worker costs a few microseconds, and this many elements take a few tens of microseconds.
pub(crate) const PARALLEL_CHUNK: usize = 1 << 14;

thread_local! {
    /// Block buffers of finished kernels, for the next kernel on this thread: every kernel needs a
    /// few of them, and taking them from the allocator each time churns its large-chunk bins.
    static SCRATCH: std::cell::RefCell<Vec<AlignedBlock>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Panel buffers of finished kernels, for the next on this thread: each part of a split kernel
    /// takes one, and a fresh one is allocated and zeroed (64 KiB or more).
    static PANELS: std::cell::RefCell<Vec<AlignedBlock>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A block buffer of `len` values for a writer that sets them all, reused from an earlier kernel
/// when one is free.
pub(super) fn scratch_block(len: usize) -> AlignedBlock {
    let mut buf = pooled(&SCRATCH);
    buf.set_len_for_writing(len);
    buf
}

/// A buffer from `pool` (this thread's), or an empty one.
fn pooled(pool: &'static std::thread::LocalKey<std::cell::RefCell<Vec<AlignedBlock>>>) -> AlignedBlock {
    pool.try_with(|p| p.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// `row` repeated to `len` values, in a block buffer.
fn repeated(row: &[f32], len: usize) -> AlignedBlock {
    let mut tile = scratch_block(len);
    let values = tile.values_mut();
    let period = row.len().min(len);
    values[..period].copy_from_slice(&row[..period]);
    repeat_period(values, period);
    tile
}

/// Repeats the first `period` values over the rest of `values`, by copies that double what is
/// filled.
pub(super) fn repeat_period(values: &mut [f32], period: usize) {
    let mut filled = period.min(values.len());
    while filled < values.len() {
        let more = filled.min(values.len() - filled);
        values.copy_within(..more, filled);
        filled += more;
    }
}

/// Keeps up to 64 block buffers of at most four blocks for later kernels, and two larger ones
/// (a transposed leaf's panels, up to 64K values each) apart; the rest are freed.
pub(super) fn return_scratch(bufs: impl Iterator<Item = AlignedBlock>) {
    for buf in bufs {
        let (pool, most) = if buf.is_worth_keeping(4 * BLOCK) {
            (&SCRATCH, 64)
        } else if buf.is_worth_keeping(usize::MAX) {
            (&PANELS, 2)
        } else {
            continue;
        };
        let _ = pool.try_with(|p| {
            let mut p = p.borrow_mut();
            if p.len() < most {
                p.push(buf);
            }
        });
    }
}

/// Gives every instruction result a block buffer, reusing buffers whose value is dead. Leaves get
/// none (they are read in place or gathered). An instruction never writes a slot it reads.
fn assign_slots(leaves: usize, program: &[Instr]) -> Vec<Option<usize>> {
    let total = leaves + program.len();
    let mut last_use = vec![0usize; total];
    for (i, instr) in program.iter().enumerate() {
        let (operands, n) = instr.operands();
        for &v in &operands[..n] {
            last_use[v] = leaves + i;
        }
    }
    let mut slots = vec![None; total];
    let mut free: Vec<usize> = Vec::new();
    let mut next = 0;
    for (i, instr) in program.iter().enumerate() {
        let me = leaves + i;
        slots[me] = Some(free.pop().unwrap_or_else(|| {
            next += 1;
            next - 1
        }));
        let (operands, n) = instr.operands();
        for (k, &v) in operands[..n].iter().enumerate() {
            if operands[..k].contains(&v) {
                continue; // freed once
            }
            if v >= leaves && last_use[v] == me && !free.contains(&slots[v].unwrap()) {
                free.push(slots[v].unwrap());
            }
        }
    }
    slots
}

#[inline(always)]
fn map1(out: &mut [MaybeUninit<f32>], a: &[f32], f: impl Fn(f32) -> f32) {
    for (o, &x) in out.iter_mut().zip(a) {
        o.write(f(x));
    }
}

#[inline(always)]
fn map2(out: &mut [MaybeUninit<f32>], a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> f32) {
    for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
        o.write(f(x, y));
    }
}

/// An instruction's operand values, in order (unused entries empty).
pub(crate) type Operands<'a> = [&'a [f32]; 3];

/// `instr`'s operands, looked up once: `value(v)` is value `v` over the block.
#[inline(always)]
pub(crate) fn operands<'a>(instr: &Instr, value: impl Fn(usize) -> &'a [f32]) -> Operands<'a> {
    match *instr {
        Instr::Unary(_, a) => [value(a), &[], &[]],
        Instr::Binary(_, a, b) => [value(a), value(b), &[]],
        Instr::Where(c, a, b) => [value(c), value(a), value(b)],
    }
}

/// Runs one instruction over a block, writing every element of `out` (each operand is as long),
/// with AVX-512 or AVX2 + FMA where the CPU has them (detected at run time). The versions round
/// identically: the compiler never fuses operations, and the math functions' explicit fused
/// multiply-adds round once on every version (see `math`).
pub(crate) fn execute(instr: &Instr, operands: &Operands, out: &mut [MaybeUninit<f32>]) {
    debug_assert!(
        operands[..instr.operands().1]
            .iter()
            .all(|v| v.len() == out.len()),
        "every operand of {instr:?} must cover the {} outputs",
        out.len()
    );
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F, checked just above.
            return unsafe { execute_avx512(instr, operands, out) };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU supports AVX2 and FMA, checked just above.
            return unsafe { execute_avx2(instr, operands, out) };
        }
    }
    execute_portable(instr, operands, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn execute_avx512(instr: &Instr, operands: &Operands, out: &mut [MaybeUninit<f32>]) {
    use std::arch::x86_64::*;
    match *instr {
        // Hand-written lanes where the compiler cannot vectorize the scalar form as well; each
        // is bit-identical to it (see `math` and `pow`).
        Instr::Unary(op @ UnaryOp::Exp, _) => unary_avx512(op, operands[0], out, |x| math::exp_avx512(x)),
        Instr::Unary(op @ UnaryOp::Log, _) => unary_avx512(op, operands[0], out, |x| math::log_avx512(x)),
        Instr::Unary(op @ UnaryOp::Sigmoid, _) => {
            unary_avx512(op, operands[0], out, |x| math::sigmoid_avx512(x))
        }
        Instr::Unary(op @ UnaryOp::Sqrt, _) => unary_avx512(op, operands[0], out, |x| math::sqrt_avx512(x)),
        Instr::Unary(op @ UnaryOp::Erf, _) => unary_avx512(op, operands[0], out, |x| math::erf_avx512(x)),
        Instr::Unary(op @ UnaryOp::Gelu, _) => unary_avx512(op, operands[0], out, |x| math::gelu_avx512(x)),
        Instr::Unary(op @ UnaryOp::Tanh, _) => unary_avx512(op, operands[0], out, |x| math::tanh_avx512(x)),
        Instr::Unary(op @ UnaryOp::Sin, _) => {
            unary_avx512(op, operands[0], out, |x| super::trig::sin_cos_avx512(x, false))
        }
        Instr::Unary(op @ UnaryOp::Cos, _) => {
            unary_avx512(op, operands[0], out, |x| super::trig::sin_cos_avx512(x, true))
        }
        // SAFETY (the closure): each chunk holds 16 values, and so does the output at `o`.
        Instr::Binary(BinaryOp::Pow, _, _) => {
            pow_in_chunks::<16>(operands[0], operands[1], out, |x, y, o| unsafe {
                let (x, y) = (_mm512_loadu_ps(x.as_ptr()), _mm512_loadu_ps(y.as_ptr()));
                _mm512_storeu_ps(o, super::pow::pow_avx512(x, y));
            })
        }
        _ => execute_portable(instr, operands, out),
    }
}

/// A unary op 16 lanes at a time with AVX-512: `lanes` on each whole chunk, `unary_f32` (which
/// `lanes` must match bit for bit) on the tail.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn unary_avx512(
    op: UnaryOp,
    a: &[f32],
    out: &mut [MaybeUninit<f32>],
    lanes: impl Fn(std::arch::x86_64::__m512) -> std::arch::x86_64::__m512,
) {
    use std::arch::x86_64::*;
    let mut outs = out.chunks_exact_mut(16);
    let mut ins = a.chunks_exact(16);
    for (o, x) in (&mut outs).zip(&mut ins) {
        // SAFETY: both chunks hold 16 values, and `MaybeUninit<f32>` has `f32`'s layout.
        unsafe { _mm512_storeu_ps(o.as_mut_ptr().cast(), lanes(_mm512_loadu_ps(x.as_ptr()))) };
    }
    map1(outs.into_remainder(), ins.remainder(), |x| unary_f32(op, x));
}

/// `a^b` over chunks of `N` values by `lanes` (given a chunk of each operand and where to write
/// its powers), the scalar form on the tail (see `pow`). Inlined into each instruction set's
/// version, so the tail's fused multiply-adds are instructions there.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn pow_in_chunks<const N: usize>(
    a: &[f32],
    b: &[f32],
    out: &mut [MaybeUninit<f32>],
    lanes: impl Fn(&[f32], &[f32], *mut f32),
) {
    let mut outs = out.chunks_exact_mut(N);
    let (mut xs, mut ys) = (a.chunks_exact(N), b.chunks_exact(N));
    for ((o, x), y) in (&mut outs).zip(&mut xs).zip(&mut ys) {
        lanes(x, y, o.as_mut_ptr().cast());
    }
    let tail = outs
        .into_remainder()
        .iter_mut()
        .zip(xs.remainder())
        .zip(ys.remainder());
    for ((o, &x), &y) in tail {
        o.write(super::pow::pow_f32(x, y));
    }
}

/// Sine or cosine over AVX2 + FMA lanes, eight values at a time, the scalar form on the tail
/// (compiled here, so its fused multiply-adds are instructions).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn sin_cos_avx2_over(a: &[f32], out: &mut [MaybeUninit<f32>], cosine: bool) {
    use std::arch::x86_64::*;
    let mut outs = out.chunks_exact_mut(8);
    let mut xs = a.chunks_exact(8);
    for (o, x) in (&mut outs).zip(&mut xs) {
        // SAFETY: both chunks hold 8 values, and `MaybeUninit<f32>` has `f32`'s layout.
        unsafe {
            let y = super::trig::sin_cos_avx2(_mm256_loadu_ps(x.as_ptr()), cosine);
            _mm256_storeu_ps(o.as_mut_ptr().cast(), y);
        }
    }
    for (o, &x) in outs.into_remainder().iter_mut().zip(xs.remainder()) {
        o.write(if cosine {
            super::trig::cos_f32(x)
        } else {
            super::trig::sin_f32(x)
        });
    }
}

/// An op built on `e^x` over AVX2 + FMA lanes: `in_range` on a run of 128 values wholly below
/// [`math::EXP_IN_RANGE`] in magnitude (its exponentials scaled in one step), `lanes` on any other
/// vector, `scalar` on the tail; all three give the same bits.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
fn exp_like_avx2_over(
    a: &[f32],
    out: &mut [MaybeUninit<f32>],
    in_range: impl Fn(std::arch::x86_64::__m256) -> std::arch::x86_64::__m256,
    lanes: impl Fn(std::arch::x86_64::__m256) -> std::arch::x86_64::__m256,
    scalar: impl Fn(f32) -> f32,
) {
    use std::arch::x86_64::*;
    const RUN: usize = 128;
    // `$f` over each vector of `$x` into `$o` (as long).
    macro_rules! over {
        ($x:expr, $o:expr, $f:expr) => {
            for (o, x) in $o.chunks_exact_mut(8).zip($x.chunks_exact(8)) {
                // SAFETY: both hold 8 values, and `MaybeUninit<f32>` has `f32`'s layout.
                unsafe { _mm256_storeu_ps(o.as_mut_ptr().cast(), $f(_mm256_loadu_ps(x.as_ptr()))) };
            }
        };
    }
    let mut outs = out.chunks_exact_mut(RUN);
    let mut runs = a.chunks_exact(RUN);
    for (o, x) in (&mut outs).zip(&mut runs) {
        // SAFETY: the run holds `RUN` values, a multiple of 8.
        if unsafe { math::all_below_avx2(x.as_ptr(), RUN, math::EXP_IN_RANGE) } {
            over!(x, o, in_range);
        } else {
            over!(x, o, lanes);
        }
    }
    let (outs, xs) = (outs.into_remainder(), runs.remainder());
    let whole = xs.len() - xs.len() % 8;
    let (outs, tail_out) = outs.split_at_mut(whole);
    over!(xs[..whole], outs, lanes);
    map1(tail_out, &xs[whole..], scalar);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn execute_avx2(instr: &Instr, operands: &Operands, out: &mut [MaybeUninit<f32>]) {
    use std::arch::x86_64::*;
    match *instr {
        Instr::Unary(op @ UnaryOp::Exp, _) => exp_like_avx2_over(
            operands[0],
            out,
            |x| math::exp_avx2_in_range(x),
            |x| math::exp_avx2(x),
            |x| unary_f32(op, x),
        ),
        Instr::Unary(op @ UnaryOp::Sigmoid, _) => exp_like_avx2_over(
            operands[0],
            out,
            |x| math::sigmoid_avx2(x, math::exp_avx2_in_range),
            |x| math::sigmoid_avx2(x, math::exp_avx2),
            |x| unary_f32(op, x),
        ),
        Instr::Unary(UnaryOp::Sin, _) => sin_cos_avx2_over(operands[0], out, false),
        Instr::Unary(UnaryOp::Cos, _) => sin_cos_avx2_over(operands[0], out, true),
        // SAFETY (the closure): each chunk holds 8 values, and so does the output at `o`.
        Instr::Binary(BinaryOp::Pow, _, _) => {
            pow_in_chunks::<8>(operands[0], operands[1], out, |x, y, o| unsafe {
                let (x, y) = (_mm256_loadu_ps(x.as_ptr()), _mm256_loadu_ps(y.as_ptr()));
                _mm256_storeu_ps(o, super::pow::pow_avx2(x, y));
            })
        }
        _ => execute_portable(instr, operands, out),
    }
}

/// Each operation gets its own loop so the compiler can vectorize it.
#[inline(always)]
fn execute_portable(instr: &Instr, operands: &Operands, out: &mut [MaybeUninit<f32>]) {
    let [a, b, _] = *operands;
    macro_rules! unary {
        ($a:expr, $($op:ident),*) => {
            match instr {
                $(Instr::Unary(UnaryOp::$op, _) => map1(out, $a, |x| unary_f32(UnaryOp::$op, x)),)*
                _ => unreachable!(),
            }
        };
    }
    macro_rules! binary {
        ($a:expr, $b:expr, $($op:ident),*) => {
            match instr {
                $(Instr::Binary(BinaryOp::$op, _, _) => map2(out, $a, $b, |x, y| binary_f32(BinaryOp::$op, x, y)),)*
                _ => unreachable!(),
            }
        };
    }
    match *instr {
        // Sine and cosine in loops of their own, for the reason the power has one (below).
        Instr::Unary(UnaryOp::Sin, _) => {
            for (o, &x) in out.iter_mut().zip(a) {
                o.write(super::trig::sin_f32(x));
            }
        }
        Instr::Unary(UnaryOp::Cos, _) => {
            for (o, &x) in out.iter_mut().zip(a) {
                o.write(super::trig::cos_f32(x));
            }
        }
        Instr::Unary(..) => unary!(a, Neg, Exp, Log, Sqrt, Recip, Abs, Tanh, Sigmoid, Relu, Erf, Gelu),
        // The power in a loop of its own: through `map2`'s closure the compiler kept it out of
        // line, built without FMA even in the AVX2 + FMA version (each `mul_add` a libm call,
        // 73 ms per 1M values).
        Instr::Binary(BinaryOp::Pow, _, _) => {
            for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
                o.write(super::pow::pow_f32(x, y));
            }
        }
        Instr::Binary(..) => binary!(a, b, Add, Sub, Mul, Div, Max, Min, CmpLt, CmpLe, CmpEq),
        Instr::Where(..) => {
            let [condition, chosen, otherwise] = *operands;
            for (((o, &c), &x), &y) in out.iter_mut().zip(condition).zip(chosen).zip(otherwise) {
                o.write(if c != 0.0 { x } else { y });
            }
        }
    }
}

/// Folds values, which cover linear positions `start..` of the iteration space, into the outputs:
/// output `o` reduces positions `o*run_len .. (o+1)*run_len`. The values are taken in blocks of
/// [`BLOCK`] from the first, as a kernel computes them; sums are f32 partial sums of at most one
/// block, accumulated in f64 across blocks.
fn accumulate(op: ReduceOp, values: &[f32], start: usize, run_len: usize, out: &mut [f32], sums: &mut [f64]) {
    match op {
        ReduceOp::Sum => sum_runs(values, start, run_len, sums),
        _ => fold_runs(op, values, start, run_len, out),
    }
}

// Both dispatched to AVX-512/AVX2 like the kernels that feed them (a baseline build's SSE code
// right after their wide vectors ran slower than either), and apart: compiled together, the
// vectorizer gave up on one when the other changed. Each spells out the walk over runs: through
// a shared closure, both ran 10-50 % slower.
simd_dispatch! {
    fn sum_runs(values: &[f32], start: usize, run_len: usize, sums: &mut [f64]) {
        for (block, start) in values.chunks(BLOCK).zip((start..).step_by(BLOCK)) {
            let (mut pos, mut o) = (start, start / run_len);
            let end = start + block.len();
            while pos < end {
                let run_end = ((o + 1) * run_len).min(end);
                sums[o] += sum_f32(&block[pos - start..run_end - start]) as f64;
                (pos, o) = (run_end, o + 1);
            }
        }
    }
}

simd_dispatch! {
    /// Folds each run of `run_len` values (`values` holds whole runs) into its output: a sum as
    /// [`sum_f32`] of the run, which is what its f64 sum of one part rounded back gave.
    fn fold_whole_runs(op: ReduceOp, values: &[f32], run_len: usize, out: &mut [f32]) {
        let done = if run_len < MIN_LANES_FOLD { fold_short_runs(op, values, run_len, out) } else { 0 };
        let (out, values) = (&mut out[done..], &values[done * run_len..]);
        for (o, run) in out.iter_mut().zip(values.chunks_exact(run_len)) {
            *o = match op {
                ReduceOp::Sum => sum_f32(run),
                _ => fold_extremum(op, *o, run),
            };
        }
    }
}

simd_dispatch! {
    fn fold_runs(op: ReduceOp, values: &[f32], start: usize, run_len: usize, out: &mut [f32]) {
        for (block, start) in values.chunks(BLOCK).zip((start..).step_by(BLOCK)) {
            let (mut pos, mut o) = (start, start / run_len);
            let end = start + block.len();
            while pos < end {
                let run_end = ((o + 1) * run_len).min(end);
                out[o] = fold_extremum(op, out[o], &block[pos - start..run_end - start]);
                (pos, o) = (run_end, o + 1);
            }
        }
    }
}

simd_dispatch! {
    /// Folds a block of values covering positions `start..` of a row-major iteration into the
    /// outputs when one range of axes is reduced: each `span` positions fold into the next
    /// `inner` outputs, position `p` into output `(p / span) · inner + p % inner`. Dispatched to
    /// AVX-512/AVX2: this f64 accumulation is most of a bias gradient's cost.
    fn accumulate_columns(
        op: ReduceOp,
        values: &[f32],
        start: usize,
        inner: usize,
        span: usize,
        out: &mut [f32],
        sums: &mut [f64],
    ) {
        let mut pos = start;
        let end = start + values.len();
        if inner == 1 {
            // A reduction over the first axes of `[n, 1]` (a mean of per-sample losses): each run
            // of `span` positions is one output's, folded in the same order as below.
            if op != ReduceOp::Sum {
                return fold_runs(op, values, start, span, out);
            }
            let mut o = pos / span;
            while pos < end {
                let run_end = ((o + 1) * span).min(end);
                for &x in &values[pos - start..run_end - start] {
                    sums[o] += x as f64;
                }
                (pos, o) = (run_end, o + 1);
            }
            return;
        }
        // Where `pos` is: its column, and the first output of its span. Divided once, then
        // stepped: a division per row cost more than adding a short row.
        let (mut column, mut in_span, mut first) = (pos % inner, pos % span, pos / span * inner);
        while pos < end {
            let rows = ((span - in_span) / inner).min((end - pos) / inner);
            if column == 0 && rows > 1 {
                let (len, at) = (rows * inner, pos - start);
                let rows = &values[at..at + len];
                match op {
                    ReduceOp::Sum => {
                        fold_rows(rows, inner, &mut sums[first..first + inner], |s, x| s + x as f64)
                    }
                    _ => fold_rows(rows, inner, &mut out[first..first + inner], |m, x| {
                        reduce_step_f32(op, m, x)
                    }),
                }
                pos += len;
                in_span += len;
                if in_span == span {
                    (in_span, first) = (0, first + inner);
                }
                continue;
            }
            let o = first + column;
            let run_end = (pos + inner - column).min(end);
            let segment = &values[pos - start..run_end - start];
            match op {
                ReduceOp::Sum => {
                    for (acc, &x) in sums[o..o + segment.len()].iter_mut().zip(segment) {
                        *acc += x as f64;
                    }
                }
                _ => {
                    for (acc, &x) in out[o..o + segment.len()].iter_mut().zip(segment) {
                        *acc = reduce_step_f32(op, *acc, x);
                    }
                }
            }
            let len = run_end - pos;
            pos = run_end;
            column += len;
            in_span += len;
            if column == inner {
                column = 0;
            }
            if in_span == span {
                (in_span, first) = (0, first + inner);
            }
        }
    }
}

simd_dispatch! {
    /// [`fold_rows`] into `out` (maxima, minima) or `sums` (sums): one thread's range of a
    /// reduction's columns, its rows `stride` apart.
    fn fold_column_range(op: ReduceOp, values: &[f32], stride: usize, out: &mut [f32], sums: &mut [f64]) {
        match op {
            ReduceOp::Sum => fold_rows(values, stride, sums, |s, x| s + x as f64),
            _ => fold_rows(values, stride, out, |m, x| reduce_step_f32(op, m, x)),
        }
    }
}

/// A reduction of a stored tensor over its leading axes (`span` values per group of `inner`
/// outputs), with its columns shared between threads: each piece is a range of whole chunks of
/// columns over all the rows of one group, so every output takes its values in the same order
/// on any number of threads.
fn fold_columns_in_parallel(
    op: ReduceOp,
    input: &[f32],
    (inner, span): (usize, usize),
    out: &mut [f32],
    sums: &mut [f64],
) {
    let rows = span / inner;
    let width = PARALLEL_CHUNK.div_ceil(rows).next_multiple_of(64).min(inner);
    // (first value, end of its group, outputs, sums) of each piece.
    let mut pieces = Vec::new();
    let mut sum_rows = sums.chunks_mut(inner);
    for (g, outs) in out.chunks_mut(inner).enumerate() {
        let mut sum_pieces = sum_rows.next().map(|s| s.chunks_mut(width));
        for (i, outs) in outs.chunks_mut(width).enumerate() {
            let sums = sum_pieces.as_mut().and_then(Iterator::next).unwrap_or_default();
            pieces.push((g * span + i * width, (g + 1) * span, outs, sums));
        }
    }
    parallel::for_each_mut(&mut pieces, &|_, (start, end, outs, sums)| {
        fold_column_range(op, &input[*start..*end], inner, outs, sums);
    });
}

/// Folds rows as wide as `acc` (each `stride` values from the last in `values`, the first at its
/// start, as many as it holds) into `acc`, each column's values in row order: the same steps as
/// row by row, but each chunk of accumulators stays in registers across the rows instead of
/// being stored and reloaded for every row. Row by row, a bias gradient's sums over
/// `[128, 512]` ran at 6 cycles per 8 values, bound by those stores.
#[inline(always)]
fn fold_rows<T: Copy>(values: &[f32], stride: usize, acc: &mut [T], step: impl Fn(T, f32) -> T) {
    /// Accumulators per chunk: eight vectors of f64 sums (or four of f32 maxima).
    const CHUNK: usize = 64;
    let width = acc.len();
    let rows = || values.chunks(stride).map(|row| &row[..width]);
    let mut chunks = acc.chunks_exact_mut(CHUNK);
    for (c, chunk) in chunks.by_ref().enumerate() {
        let mut regs: [T; CHUNK] = std::array::from_fn(|i| chunk[i]);
        for row in rows() {
            let row: &[f32; CHUNK] = row[c * CHUNK..][..CHUNK].try_into().expect("a whole chunk");
            for (r, &x) in regs.iter_mut().zip(row) {
                *r = step(*r, x);
            }
        }
        chunk.copy_from_slice(&regs);
    }
    let done = width - chunks.into_remainder().len();
    for row in rows() {
        for (a, &x) in acc[done..].iter_mut().zip(&row[done..]) {
            *a = step(*a, x);
        }
    }
}

/// Folds `values` into `acc` with max or min exactly as [`reduce_step_f32`] one value at a time
/// would, but over 16 independent lanes (64 for long runs, see [`four_lane_sets`]): a
/// one-at-a-time fold waits on every comparison, and ran 16 times slower than a sum. Values that
/// compare equal have the same bits unless they are zeros of both signs, and the fold keeps the
/// last of them; so a result of zero, or a NaN (which lanes would not place), is found again one
/// value at a time.
#[inline(always)]
fn fold_extremum(op: ReduceOp, acc: f32, values: &[f32]) -> f32 {
    let one_at_a_time = || values.iter().fold(acc, |a, &x| reduce_step_f32(op, a, x));
    if values.len() < MIN_LANES_FOLD {
        return one_at_a_time();
    }
    let mut found = (0.0, false);
    if values.len() >= LONG_RUN {
        long_run_extremum(op, values, &mut found);
    } else {
        found = match op {
            ReduceOp::Max => one_lane_set(values, larger),
            ReduceOp::Min => one_lane_set(values, smaller),
            ReduceOp::Sum => unreachable!("sums are not extrema"),
        };
    }
    let (extremum, nan) = found;
    if extremum == 0.0 || nan {
        return one_at_a_time();
    }
    reduce_step_f32(op, acc, extremum)
}

/// `x` if it is larger than `a`, else `a` (NaN never larger); [`smaller`] likewise.
#[inline(always)]
fn larger(a: f32, x: f32) -> f32 {
    if x > a { x } else { a }
}

#[inline(always)]
fn smaller(a: f32, x: f32) -> f32 {
    if x < a { x } else { a }
}

/// Whether [`fold_lanes`] noted a NaN in any lane, or `tail` (the values past the lanes) holds one.
#[inline(always)]
fn any_nan(masks: &[u32; 16], tail: &[f32]) -> bool {
    masks.contains(&u32::MAX) || tail.iter().any(|x| x.is_nan())
}

/// Folds a chunk of 16 values into 16 lanes by `pick`, noting NaNs lane by lane as all-ones
/// masks, which a vector compare gives as is (as `bool`s, with AVX2, each compare's mask was
/// packed down to bytes: four shuffles per vector).
#[inline(always)]
fn fold_lanes(lanes: &mut [f32; 16], nan: &mut [u32; 16], chunk: &[f32], pick: impl Fn(f32, f32) -> f32) {
    for ((lane, nan), &x) in lanes.iter_mut().zip(nan).zip(chunk) {
        *lane = pick(*lane, x);
        *nan |= 0u32.wrapping_sub(u32::from(x.is_nan()));
    }
}

/// The extremum of `values` by `pick` over 16 lanes, and whether any value is NaN.
#[inline(always)]
fn one_lane_set(values: &[f32], pick: impl Fn(f32, f32) -> f32 + Copy) -> (f32, bool) {
    let mut lanes = [values[0]; 16];
    let mut nan = [0u32; 16];
    let chunks = values.chunks_exact(16);
    let tail = chunks.remainder();
    for chunk in chunks {
        fold_lanes(&mut lanes, &mut nan, chunk, pick);
    }
    let extremum = tail
        .iter()
        .fold(lanes.iter().fold(lanes[0], |a, &x| pick(a, x)), |a, &x| {
            pick(a, x)
        });
    (extremum, any_nan(&nan, tail))
}

/// Runs at least this long take [`long_run_extremum`].
const LONG_RUN: usize = 512;

simd_dispatch! {
    /// [`fold_extremum`] of a long run, before its zeros and NaN: sets `found` to the run's
    /// maximum or minimum (the true one unless it is a zero or a NaN) and whether any value is
    /// NaN. A function of its own: inlined, it changed how the compiler built the short runs'
    /// loops, which then took up to twice as long.
    fn long_run_extremum(op: ReduceOp, values: &[f32], found: &mut (f32, bool)) {
        *found = match op {
            ReduceOp::Max => four_lane_sets(values, larger),
            ReduceOp::Min => four_lane_sets(values, smaller),
            ReduceOp::Sum => unreachable!("sums are not extrema"),
        };
    }
}

/// The extremum of `values` by `pick` over four sets of 16 lanes, each its own chain of
/// comparisons, then combined in halves as vectors, and whether any value is NaN. With one set,
/// each comparison waited on the last (4 cycles per 16 values), and the 16 lanes folded one at
/// a time took longer than a 1024-value row's other comparisons.
#[inline(always)]
fn four_lane_sets(values: &[f32], pick: impl Fn(f32, f32) -> f32 + Copy) -> (f32, bool) {
    let mut sets = [[values[0]; 16]; 4];
    let mut nan = [0u32; 16];
    let quads = values.chunks_exact(64);
    let chunks = quads.remainder().chunks_exact(16);
    let tail = chunks.remainder();
    for quad in quads {
        let [a, b, c, d] = &mut sets;
        fold_lanes(a, &mut nan, &quad[..16], pick);
        fold_lanes(b, &mut nan, &quad[16..32], pick);
        fold_lanes(c, &mut nan, &quad[32..48], pick);
        fold_lanes(d, &mut nan, &quad[48..], pick);
    }
    for chunk in chunks {
        fold_lanes(&mut sets[0], &mut nan, chunk, pick);
    }
    let [a, b, c, d] = sets;
    let mut lanes: [f32; 16] = std::array::from_fn(|i| pick(pick(a[i], b[i]), pick(c[i], d[i])));
    let mut width = 16;
    while width > 1 {
        width /= 2;
        let (low, high) = lanes.split_at_mut(width);
        for (lane, &x) in low.iter_mut().zip(&high[..width]) {
            *lane = pick(*lane, x);
        }
    }
    let extremum = tail.iter().fold(lanes[0], |a, &x| pick(a, x));
    (extremum, any_nan(&nan, tail))
}

/// Folds runs shorter than [`MIN_LANES_FOLD`] into their maxima or minima sixteen at a time,
/// one run per lane, and returns how many it folded (whole groups of sixteen): each lane takes
/// its run's values in order from its output, one step at a time as [`fold_extremum`] does, so
/// the bits are the same. Run by run, each step waited on the last: the row maximum of a
/// [524288, 2] softmax took 2.4 ms. (Sums of short runs stay run by run: loading a group's
/// lanes took longer than [`sum_short`]'s adds.)
#[inline(always)]
fn fold_short_runs(op: ReduceOp, values: &[f32], run_len: usize, out: &mut [f32]) -> usize {
    const GROUP: usize = 16;
    if op == ReduceOp::Sum {
        return 0;
    }
    let whole = out.len() / GROUP * GROUP;
    for (outs, values) in out[..whole]
        .chunks_exact_mut(GROUP)
        .zip(values.chunks_exact(GROUP * run_len))
    {
        for j in 0..run_len {
            for (o, acc) in outs.iter_mut().enumerate() {
                // SAFETY: `j < run_len` and `o < GROUP`, within the group's `GROUP · run_len`
                // values (a checked index kept the compiler from loading the lanes as one gather).
                let x = unsafe { *values.get_unchecked(o * run_len + j) };
                *acc = reduce_step_f32(op, *acc, x);
            }
        }
    }
    whole
}

/// Fewer values than this are folded one at a time. A row of 100 values cut by a block's end
/// leaves pieces shorter than 64, the bound this once was: the row maximum of [1024, 100] took
/// 22 µs at 16, 23 at 8 and 24 at 32, against 38 at 64.
const MIN_LANES_FOLD: usize = 16;

/// A sum in 64 lanes, so it vectorizes and its adds do not wait on each other (eight lanes made
/// one chain of dependent adds, which took a fused kernel's sum of a block longer than its ops);
/// the lanes are then added in halves. The error grows with the block length, not the tensor's.
#[inline(always)]
fn sum_f32(values: &[f32]) -> f32 {
    let sum = if values.len() < 64 {
        sum_short(values)
    } else {
        sum_lanes(values)
    };
    if sum.is_finite() { sum } else { sum_in_f64(values) }
}

/// Lanes can overflow where the whole sum does not: `[MAX, -MAX]` twice, in lanes that pair
/// `MAX` with `MAX` and `-MAX` with `-MAX`, gave `inf - inf = NaN` for a sum of 0. So a lane sum
/// that is not finite is redone in f64, where no sum of f32 values overflows; with an infinite or
/// NaN value among them, that gives IEEE's answer for the whole, as lanes did.
#[cold]
#[inline(never)]
fn sum_in_f64(values: &[f32]) -> f32 {
    values.iter().map(|&x| f64::from(x)).sum::<f64>() as f32
}

/// [`sum_lanes`] of fewer than 64 values, bit for bit, without its 64 lanes: only the first 8
/// receive values, and adding the others' `+0.0` changes none of them (a lane that starts at
/// `+0.0` is never `-0.0`). A row of 10 classes spent most of its sum zeroing and halving them.
#[inline(always)]
fn sum_short(values: &[f32]) -> f32 {
    let eights = values.chunks_exact(8);
    let tail: f32 = eights.remainder().iter().sum();
    let mut lanes = [0.0f32; 8];
    for chunk in eights {
        for (lane, &x) in lanes.iter_mut().zip(chunk) {
            *lane += x;
        }
    }
    let [a, b, c, d, e, f, g, h] = lanes;
    (((a + e) + (c + g)) + ((b + f) + (d + h))) + tail
}

simd_dispatch! {
    /// The 64-lane sum itself, for any length. A function of its own: inlined into the loops
    /// over runs and blocks, the compiler kept the lanes on the stack in some of them (a store
    /// and a load with every vector add), and the sum of a [1024, 1024] tensor ran at 0.6 of the
    /// speed of these adds alone.
    fn sum_lanes(values: &[f32]) -> f32 {
        const LANES: usize = 64;
        let mut lanes = [0.0f32; LANES];
        let chunks = values.chunks_exact(LANES);
        let rest = chunks.remainder();
        for chunk in chunks {
            for (lane, &x) in lanes.iter_mut().zip(chunk) {
                *lane += x;
            }
        }
        let eights = rest.chunks_exact(8);
        let tail: f32 = eights.remainder().iter().sum();
        for chunk in eights {
            for (lane, &x) in lanes.iter_mut().zip(chunk) {
                *lane += x;
            }
        }
        let mut width = LANES;
        while width > 1 {
            width /= 2;
            let (low, high) = lanes.split_at_mut(width);
            for (lane, &x) in low.iter_mut().zip(&high[..width]) {
                *lane += x;
            }
        }
        lanes[0] + tail
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lazy::xorshift;

    #[test]
    fn every_execute_version_matches_the_scalar_semantics_bit_for_bit() {
        // Each instruction-set version this CPU can run (the AVX-512 build with its hand-written
        // lanes, the AVX2 + FMA build with those of exp, pow, sin and cos, the baseline build) must
        // give the scalar function's bits, which the test computes in a baseline build (libm's
        // fmaf for the fused multiply-adds). Inputs: IEEE specials, every binade of both signs,
        // and two ramps, the second within exp's one-step range over whole runs of 128; the
        // length leaves a tail after whole 16-lane chunks.
        let specials = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            88.7,
            -87.4,
            -103.9,
            1e-40,
            f32::INFINITY,
            f32::NAN,
        ];
        let a: Vec<f32> = (specials.into_iter())
            .chain((0..4099u32).map(|i| f32::from_bits(i.wrapping_mul(1_048_573))))
            .chain((0..67).map(|i| (i as f32 - 33.0) * 0.37))
            .chain((0..403).map(|i| (i as f32 - 201.0) * 0.427))
            .collect();
        let b: Vec<f32> = a.iter().rev().copied().collect();
        let unary = [
            UnaryOp::Neg,
            UnaryOp::Exp,
            UnaryOp::Log,
            UnaryOp::Sqrt,
            UnaryOp::Tanh,
            UnaryOp::Sigmoid,
            UnaryOp::Sin,
            UnaryOp::Cos,
            UnaryOp::Gelu,
        ];
        let binary = [
            BinaryOp::Add,
            BinaryOp::Div,
            BinaryOp::Max,
            BinaryOp::CmpLe,
            BinaryOp::Pow,
        ];
        let instrs: Vec<Instr> = (unary.iter().map(|&op| Instr::Unary(op, 0)))
            .chain(binary.iter().map(|&op| Instr::Binary(op, 0, 1)))
            .chain([Instr::Where(1, 0, 1)])
            .collect();
        let value = |v: usize| if v == 0 { &a[..] } else { &b[..] };
        #[cfg_attr(
            not(target_arch = "x86_64"),
            allow(unused_mut, reason = "x86-64 adds versions")
        )]
        let mut versions = vec!["baseline", "dispatched"];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                versions.push("avx512");
            }
            if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                versions.push("avx2");
            }
        }
        for version in versions {
            for instr in &instrs {
                let operands = operands(instr, value);
                let mut out = vec![MaybeUninit::uninit(); a.len()];
                match version {
                    "baseline" => execute_portable(instr, &operands, &mut out),
                    "dispatched" => execute(instr, &operands, &mut out),
                    // SAFETY: each version was listed only if the CPU has its features.
                    #[cfg(target_arch = "x86_64")]
                    "avx512" => unsafe { execute_avx512(instr, &operands, &mut out) },
                    #[cfg(target_arch = "x86_64")]
                    "avx2" => unsafe { execute_avx2(instr, &operands, &mut out) },
                    _ => unreachable!(),
                }
                for (i, o) in out.iter().enumerate() {
                    // SAFETY: every version writes every element.
                    let got = unsafe { o.assume_init() };
                    let want = match *instr {
                        Instr::Unary(op, _) => unary_f32(op, a[i]),
                        Instr::Binary(op, _, _) => binary_f32(op, a[i], b[i]),
                        Instr::Where(..) => {
                            if b[i] != 0.0 {
                                a[i]
                            } else {
                                b[i]
                            }
                        }
                    };
                    let same = got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan());
                    assert!(
                        same,
                        "{version} {instr:?} of {:e}: {got:e}, scalar {want:e}",
                        a[i]
                    );
                }
            }
        }
    }

    #[test]
    fn line_aligned_blocks_tile_the_part_in_order() {
        let mut buf = vec![MaybeUninit::<f32>::uninit(); 3 * BLOCK + 40];
        for skip in 0..17 {
            for len in [0, 1, 5, 16, BLOCK, BLOCK + 3, 3 * BLOCK + 20] {
                let part = &mut buf[skip..skip + len];
                let base = part.as_ptr() as usize;
                let mut next = 0;
                for (k, (start, block)) in line_aligned_blocks(part).enumerate() {
                    assert_eq!(start, next, "blocks follow each other");
                    assert!(!block.is_empty() && block.len() <= BLOCK);
                    assert_eq!(block.as_ptr() as usize, base + 4 * start);
                    if k > 0 {
                        assert_eq!(block.as_ptr() as usize % 64, 0, "block {k} starts on a line");
                    }
                    next += block.len();
                }
                assert_eq!(next, len, "the blocks cover the part");
            }
        }
    }

    /// A reduction over leading axes folds each output's values in position order, one f64
    /// addition (or one max or min step) at a time, however the pieces cut the rows and runs,
    /// and whether whole rows are folded together (`fold_rows`) or value by value: bit for bit
    /// a plain sequential fold. One column (`[n, 1]`, a mean of losses) and wider rows, whole
    /// chunks of accumulators and the columns left over.
    #[test]
    fn columns_fold_each_output_in_order() {
        // Both signs and binades 2^-30 to 2^29, so f64 sums round and their order shows.
        let mut bits = xorshift(0x1234_5678);
        let mut next = || {
            let b = bits();
            f32::from_bits((b & 0x807F_FFFF) | ((97 + (b >> 8) % 60) << 23))
        };
        for (inner, run_len) in [
            (1, 1),
            (1, 37),
            (1, 512),
            (1, 3000),
            (10, 37),
            (64, 20),
            (130, 9),
            (200, 3),
        ] {
            let span = inner * run_len;
            let values: Vec<f32> = (0..3 * span).map(|_| next()).collect();
            for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min] {
                let outputs = 3 * inner;
                let mut out = vec![op.identity(); outputs];
                let mut sums = vec![0.0f64; outputs];
                // Pieces of uneven lengths, so rows and runs start and end inside them, and of
                // whole rows.
                let mut start = 0;
                for len in [1, 200, 511, 16 * inner, 700, 1023, 1024, 2 * inner]
                    .into_iter()
                    .cycle()
                {
                    let end = (start + len).min(values.len());
                    accumulate_columns(op, &values[start..end], start, inner, span, &mut out, &mut sums);
                    if end == values.len() {
                        break;
                    }
                    start = end;
                }
                for o in 0..outputs {
                    let (group, column) = (o / inner, o % inner);
                    let run = values[group * span..][..span].iter().skip(column).step_by(inner);
                    let (got, want) = match op {
                        ReduceOp::Sum => (sums[o], run.fold(0.0f64, |acc, &x| acc + x as f64)),
                        _ => (
                            out[o] as f64,
                            run.fold(op.identity(), |acc, &x| reduce_step_f32(op, acc, x)) as f64,
                        ),
                    };
                    assert_eq!(
                        got.to_bits(),
                        want.to_bits(),
                        "{op:?}, {inner} columns, span {span}, output {o}"
                    );
                }
            }
        }
    }

    #[test]
    fn sum_f32_is_within_its_rounding_bound_at_every_length() {
        // Each lane adds at most `len / 64` values, the rest go in eights (one more add per lane)
        // or one by one (at most 7), and the halving adds 6 levels plus the tail: every value
        // passes through at most `len / 64 + 15` roundings of at most ε/2 of a partial sum,
        // itself at most Σ|x|. Small integers sum exactly in any order.
        let mut bits = xorshift(0x2545_F491);
        let mut next = || bits() as f32 / u32::MAX as f32 * 2.0 - 1.0;
        for len in (0..300).chain([511, 512, 1023, 1024]) {
            let values: Vec<f32> = (0..len).map(|_| next()).collect();
            let exact: f64 = values.iter().map(|&x| x as f64).sum();
            let magnitude: f64 = values.iter().map(|&x| x.abs() as f64).sum();
            let bound = (len / 64 + 15) as f64 * f32::EPSILON as f64 / 2.0 * magnitude;
            let got = sum_f32(&values) as f64;
            if len < 64 {
                // The short path is the lane sum's shortcut, signed zeros included.
                let zeros: Vec<f32> = (0..len).map(|i| if i % 3 == 0 { 0.0 } else { -0.0 }).collect();
                for v in [&values, &zeros, &vec![-0.0; len]] {
                    assert_eq!(sum_short(v).to_bits(), sum_lanes(v).to_bits(), "length {len}");
                }
            }
            assert!((got - exact).abs() <= bound, "length {len}: {got}, exact {exact}");
            let integers: Vec<f32> = (0..len).map(|i| (i % 7) as f32 - 3.0).collect();
            let want: f32 = integers.iter().sum();
            assert_eq!(sum_f32(&integers), want, "length {len}");
        }
    }

    #[test]
    fn lane_sums_that_overflow_are_redone_in_f64() {
        let (max, inf) = (f32::MAX, f32::INFINITY);
        for len in [16, 64, 130, 1024] {
            // `±MAX` pairs a lane width apart: each lane alone overflows, the whole is 0.
            let mut values = vec![0.0; len];
            for (i, x) in [max, -max, max, -max].into_iter().enumerate() {
                values[(i % 2) + (i / 2) * 8] = x;
            }
            assert_eq!(sum_f32(&values), 0.0, "length {len}");
            // One infinity among them: the whole is that infinity (lanes gave NaN).
            values[0] = inf;
            assert_eq!(sum_f32(&values), inf, "length {len}");
            values[1] = -inf;
            assert!(sum_f32(&values).is_nan(), "length {len}");
            // A whole that does overflow still does.
            let big = vec![max; len];
            assert_eq!(sum_f32(&big), inf, "length {len}");
        }
    }

    /// Ties, zeros of both signs, infinities and NaN: the values whose order shows in a fold of
    /// maxima or minima.
    const SPECIALS: [f32; 9] = [
        0.0,
        -0.0,
        1.5,
        -1.5,
        3.0,
        -7.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ];

    /// Whole runs of every length up to a block, sixteen short ones per lane group or one at a
    /// time: each output has the bits of its run folded one value at a time (a NaN's payload
    /// aside), and a sum is `sum_f32` of its run. Values from small pools, so that which of
    /// two zeros or NaNs comes out depends on the order of the steps.
    #[test]
    fn whole_runs_fold_as_one_run_at_a_time() {
        let mut next = xorshift(0x51ED_2701);
        let pools: [&[f32]; 4] = [
            &SPECIALS,
            &[0.0, -0.0, -1.5, f32::NEG_INFINITY],
            &[0.0, -0.0, 1.5, f32::INFINITY],
            &[0.5, -2.25, 1e-30, 7e20, -3e-3],
        ];
        for run_len in (1..40).chain([64, 100, 1024]) {
            for pool in pools {
                // Groups of sixteen runs and some left over.
                let runs = (1024 / run_len).min(37);
                let values: Vec<f32> = (0..runs * run_len)
                    .map(|_| pool[next() as usize % pool.len()])
                    .collect();
                for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min] {
                    let mut out = vec![op.identity(); runs];
                    fold_whole_runs(op, &values, run_len, &mut out);
                    for (o, run) in values.chunks(run_len).enumerate() {
                        let want = match op {
                            ReduceOp::Sum => sum_f32(run),
                            _ => run.iter().fold(op.identity(), |a, &x| reduce_step_f32(op, a, x)),
                        };
                        let (got, same) = (out[o], out[o].to_bits() == want.to_bits());
                        assert!(
                            same || (got.is_nan() && want.is_nan()),
                            "{op:?}, runs of {run_len}, output {o}: {got} against {want}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn fold_extremum_matches_folding_one_value_at_a_time() {
        // Seeded values with many ties, zeros of both signs, infinities and NaNs, over lengths
        // around the lane count, folded from several starting accumulators.
        let mut next = xorshift(0x9E37_79B9);
        let pool = SPECIALS;
        for len in (0..200).chain([511, 512, 575, 1023, 1024, 4099]) {
            for trial in 0..24 {
                // Some trials leave out the NaNs, some the zeros, and some make a zero the max or
                // the min, so every path is taken; some draw from a million integers, so the
                // extremum is one value among many.
                let choices: &[f32] = match trial % 6 {
                    0 => &pool,
                    1 => &pool[..8],
                    2 => &pool[2..8],
                    3 => &[0.0, -0.0, -1.5, f32::NEG_INFINITY],
                    4 => &[0.0, -0.0, 1.5, f32::INFINITY],
                    _ => &[],
                };
                let values: Vec<f32> = (0..len)
                    .map(|_| match choices {
                        [] => (next() % 1_000_000) as f32 - 500_000.0,
                        _ => choices[next() as usize % choices.len()],
                    })
                    .collect();
                for op in [ReduceOp::Max, ReduceOp::Min] {
                    for acc in [op.identity(), 0.0, -0.0, 2.0, f32::NAN] {
                        let want = values.iter().fold(acc, |a, &x| reduce_step_f32(op, a, x));
                        let got = fold_extremum(op, acc, &values);
                        let same = got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan());
                        assert!(
                            same,
                            "{op:?} from {acc} over {values:?}: {got}, one at a time {want}"
                        );
                    }
                }
            }
        }
    }
}
