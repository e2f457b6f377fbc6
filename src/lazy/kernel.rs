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
use super::execute::{execute, operands};
use super::fold::{
    accumulate, accumulate_columns, fold_column_range, fold_columns_in_parallel, fold_whole_runs,
};
use super::gather::{Tiling, copy_tiled, gather, gather_tiled, panel_rows, tiling};
use super::ops::{BinaryOp, ReduceOp, UnaryOp, reduce_step_f32};
use super::storage::Storage;
use super::view::View;
use super::{alloc, parallel};
use crate::shape::runtime::numel;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
