//! The lazy buffer: an untyped graph of operations over runtime shapes, run only when a result is
//! needed.
//!
//! Every operation on a [`LazyBuffer`] records a node and returns at once. Movement operations
//! (reshape, permute, expand, pad, shrink) only change the [`View`] and copy nothing. Reading
//! values ([`LazyBuffer::to_vec`]) or calling [`LazyBuffer::realize`] schedules the graph into
//! kernels: chains of elementwise operations, through views and into a trailing reduction, run as
//! one fused pass; matrix products run on `matrixmultiply`, except small ones with a short inner
//! dimension, which a register-tiled kernel (AVX-512, or AVX2 and FMA) computes without sgemm's
//! packing, and deeper ones whose left operand is read by rows, which the same kernel computes
//! over packed panels of the right one (AVX-512), both to the same bits. A bias row added to a
//! product, relu, or both, when only the product feeds them, run on its output in place (same
//! bits again). A realized node keeps its buffer and drops its inputs, so graphs do not grow
//! across training steps.
//!
//! Large elementwise kernels, reductions and matrix products are split across a pool of worker
//! threads, one per extra core (`TEENYGRAD_THREADS=N` sets the count, caller included; `1` turns
//! splitting off). Results do not depend on the thread count: elements, and rows or column
//! panels of a product, are computed independently, and reductions are cut into pieces fixed by
//! their shape.
//!
//! A graph with the same structure as one realized earlier on the same thread (a training loop's
//! every step) reuses that one's kernels instead of grouping and building them again; see
//! [`stats::Stats::schedules_reused`].
//!
//! Shapes are trusted here: the typed layer checks them once. Mismatches are programmer errors and
//! panic with both shapes named.
//!
//! ```
//! use teenygrad::lazy::{LazyBuffer, stats};
//! let x = LazyBuffer::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
//! stats::reset();
//! let y = x.mul(&x).add(&LazyBuffer::full(&[2, 2], 1.0)).sum(&[1]);
//! assert_eq!(stats::get().kernels, 0, "nothing runs before a read");
//! assert_eq!(y.to_vec(), vec![7.0, 27.0]);
//! assert_eq!(stats::get().kernels, 1, "x*x+1 and the sum ran as one kernel");
//! ```

mod aligned;
mod alloc;
mod axes;
mod chunked;
mod epilogue;
mod execute;
pub(crate) mod fast_hash;
mod few_rows;
mod fold;
mod gather;
mod kernel;
mod math;
mod matmul;
mod node;
pub mod ops;
mod panel_gemm;
mod panels_avx2;
pub(crate) mod parallel;
mod pow;
pub mod reference;
mod replay;
mod schedule;
mod small_gemm;
pub mod stats;
pub(crate) mod storage;
mod trig;
mod view;

use std::sync::Arc;

use rand::Rng;

use crate::error::{Error, Result};
use crate::shape::runtime::{check_permutation, checked_numel, numel, padded_dims};
use axes::AxisVec;
pub use node::nodes_alive;
use node::{Indexing, Node, Op, State};
pub use ops::{BinaryOp, ReduceOp, UnaryOp};
use storage::Storage;
pub use view::View;

/// A lazily computed array of `f32`: a graph node seen through a view.
///
/// Cloning is cheap (an `Arc` and the view). `{:?}` shows one level of the graph: the node, its
/// op and its inputs' nodes (or, realized, its length), and the view.
#[derive(Clone)]
pub struct LazyBuffer {
    node: Arc<Node>,
    view: View,
}

/// [`Error::LengthMismatch`] (naming both lengths) unless `len` values fill `shape`.
fn check_length(len: usize, shape: &[usize]) -> Result<()> {
    let expected = checked_numel(shape)?;
    if len != expected {
        return Err(Error::LengthMismatch {
            shape: shape.to_vec(),
            expected,
            got: len,
        });
    }
    Ok(())
}

impl LazyBuffer {
    fn from_node(node: Arc<Node>) -> Self {
        let view = View::contiguous(&node.shape);
        LazyBuffer { node, view }
    }

    fn pending(shape: &[usize], op: Op) -> Self {
        Self::from_node(Node::new(shape, State::Pending(op)))
    }

    /// A buffer holding `data` in row-major order.
    ///
    /// The values are copied into storage that starts on a cache line (kernels' vector loads
    /// then never straddle two lines), and `data` is freed: for a moment both are held.
    ///
    /// Errors with [`Error::LengthMismatch`] (naming both lengths) if `data.len()` is not the
    /// element count of `shape`.
    pub fn from_vec(data: Vec<f32>, shape: &[usize]) -> Result<Self> {
        Self::from_slice(&data, shape)
    }

    /// A buffer holding a copy of `data` in row-major order; errors as [`LazyBuffer::from_vec`].
    fn from_slice(data: &[f32], shape: &[usize]) -> Result<Self> {
        check_length(data.len(), shape)?;
        Ok(Self::from_storage(Storage::from_slice(data), shape))
    }

    /// A buffer of `values` in row-major order, collected straight into its storage (no
    /// intermediate `Vec`); errors as [`LazyBuffer::from_vec`].
    pub(crate) fn from_values(values: impl IntoIterator<Item = f32>, shape: &[usize]) -> Result<Self> {
        let values: Storage = values.into_iter().collect();
        check_length(values.len(), shape)?;
        Ok(Self::from_storage(values, shape))
    }

    /// A buffer of `values`, whose length is `shape`'s element count.
    pub(crate) fn from_storage(values: Storage, shape: &[usize]) -> Self {
        debug_assert_eq!(values.len(), numel(shape));
        Self::from_node(Node::new(shape, State::Realized(Arc::new(values))))
    }

    /// Every element `value`. Stores one element, broadcast through a view.
    pub fn full(shape: &[usize], value: f32) -> Self {
        let ones = AxisVec::filled(shape.len(), 1);
        Self::from_storage(Storage::from_slice(&[value]), &ones).expand(shape)
    }

    /// Independent samples, uniform in `[low, high)`, drawn from `rng` in row-major order. The range
    /// is the caller's to check ([`Tensor::try_uniform_in`](crate::tensor::Tensor::try_uniform_in)
    /// refuses one with `low > high` or not finite).
    pub fn rand_uniform<R: Rng + ?Sized>(shape: &[usize], low: f32, high: f32, rng: &mut R) -> Self {
        let data = (0..numel(shape))
            .map(|_| {
                let x = low + (high - low) * rng.random::<f32>();
                // Rounding can carry a draw just below 1 up to `high` (4 draws in 2^24 for [10,
                // 11)); the largest value below it keeps the range half-open.
                if x < high { x } else { low.max(high.next_down()) }
            })
            .collect();
        Self::from_storage(data, shape)
    }

    /// Independent normal samples (Box–Muller in f64) drawn from `rng` in row-major order.
    pub fn rand_normal<R: Rng + ?Sized>(shape: &[usize], mean: f32, std: f32, rng: &mut R) -> Self {
        // Each pair of uniform draws gives two samples: the cosine's, then the sine's.
        let mut sine = None;
        let data = (0..numel(shape)).map(|_| {
            if let Some(z) = sine.take() {
                return z;
            }
            // 1 - u keeps the logarithm's argument in (0, 1].
            let u1 = 1.0 - rng.random::<f64>();
            let u2 = rng.random::<f64>();
            let radius = (-2.0 * u1.ln()).sqrt();
            let angle = std::f64::consts::TAU * u2;
            sine = Some(mean + std * (radius * angle.sin()) as f32);
            mean + std * (radius * angle.cos()) as f32
        });
        Self::from_storage(data.collect(), shape)
    }

    /// The logical shape.
    pub fn shape(&self) -> &[usize] {
        self.view.shape()
    }

    /// The view onto the underlying node's output.
    pub fn view(&self) -> &View {
        &self.view
    }

    /// The number of elements.
    pub fn numel(&self) -> usize {
        self.view.numel()
    }

    /// True once the underlying node holds its buffer.
    pub fn is_realized(&self) -> bool {
        self.node.is_realized()
    }

    /// A stable identity for the underlying node (views of one node share it).
    pub fn node_id(&self) -> u64 {
        self.node.id
    }

    fn same_shape(&self, other: &LazyBuffer, op: &str) {
        assert_eq!(
            self.shape(),
            other.shape(),
            "{op}: lazy operands must have equal shapes, got {:?} and {:?}",
            self.shape(),
            other.shape()
        );
    }

    /// An elementwise operation of one input.
    pub fn unary(&self, op: UnaryOp) -> Self {
        Self::pending(self.shape(), Op::Unary(op, self.clone()))
    }

    /// An elementwise operation of two inputs of the same shape.
    pub fn binary(&self, op: BinaryOp, other: &LazyBuffer) -> Self {
        self.same_shape(other, "binary op");
        Self::pending(self.shape(), Op::Binary(op, self.clone(), other.clone()))
    }

    /// `self != 0 ? a : b`, all three of one shape.
    pub fn where_(&self, a: &LazyBuffer, b: &LazyBuffer) -> Self {
        self.same_shape(a, "where");
        self.same_shape(b, "where");
        Self::pending(self.shape(), Op::Where(self.clone(), a.clone(), b.clone()))
    }

    /// Reduces `axes` to size 1 (the rank is kept).
    pub fn reduce(&self, op: ReduceOp, axes: &[usize]) -> Self {
        let mut shape = AxisVec::from_slice(self.shape());
        if let Some(a) = axes.iter().find(|&&a| a >= shape.len()) {
            panic!("reduce: axis {a} out of range for shape {shape:?}");
        }
        // Sorted, each once.
        let axes: AxisVec<usize> = (0..shape.len()).filter(|d| axes.contains(d)).collect();
        for &a in &axes {
            shape[a] = 1;
        }
        Self::pending(&shape, Op::Reduce(op, self.clone(), axes))
    }

    /// Sum over `axes`, keeping them as size 1.
    pub fn sum(&self, axes: &[usize]) -> Self {
        self.reduce(ReduceOp::Sum, axes)
    }

    /// Maximum over `axes`, keeping them as size 1.
    pub fn max(&self, axes: &[usize]) -> Self {
        self.reduce(ReduceOp::Max, axes)
    }

    /// Batched matrix product: `[.., m, k] x [.., k, n] -> [.., m, n]`, batch axes equal.
    pub fn matmul(&self, other: &LazyBuffer) -> Self {
        let (a, b) = (self.shape(), other.shape());
        let rank = a.len();
        assert!(
            rank >= 2 && b.len() == rank && a[..rank - 2] == b[..rank - 2] && a[rank - 1] == b[rank - 2],
            "matmul: shapes {a:?} and {b:?} are not [.., m, k] x [.., k, n] with equal batch axes"
        );
        let mut shape = AxisVec::from_slice(a);
        shape[rank - 1] = b[rank - 1];
        assert!(
            checked_numel(&shape).is_ok(),
            "matmul: the product of {a:?} and {b:?} would have shape {shape:?}, whose element count overflows usize"
        );
        Self::pending(&shape, Op::MatMul(self.clone(), other.clone()))
    }

    /// Each row's value at its entry of `columns`: `[b, c]` gives `[b, 1]`. One value read per
    /// row, where comparing every column with the row's and summing reads them all.
    ///
    /// # Panics
    /// If this is not `[b, c]` with `b` columns given, each below `c` (naming the first that is
    /// not): the caller, which holds the indices, checks them first.
    pub(crate) fn pick_columns(&self, columns: Arc<[usize]>) -> Self {
        let x = self.shape();
        assert!(
            x.len() == 2 && columns.len() == x[0],
            "pick_columns: {} columns for shape {x:?}, not one per row of a [b, c]",
            columns.len()
        );
        if let Some((row, column)) = columns.iter().enumerate().find(|&(_, &c)| c >= x[1]) {
            panic!("pick_columns: row {row} of {x:?} names column {column}");
        }
        Self::pending(
            &[x[0], 1],
            Op::Index(Indexing::PickColumns, self.clone(), columns),
        )
    }

    /// Rows of a `[v, d]` at `rows`, in that order (a row may repeat): `[rows.len(), d]`.
    ///
    /// # Panics
    /// If this is not a matrix or a row is `>= v` (naming the first such): the caller checks.
    pub(crate) fn pick_rows(&self, rows: Arc<[usize]>) -> Self {
        let x = self.shape();
        assert!(x.len() == 2, "pick_rows: shape {x:?} is not a [v, d]");
        if let Some((i, row)) = rows.iter().enumerate().find(|&(_, &r)| r >= x[0]) {
            panic!("pick_rows: index {i} names row {row} of {x:?}");
        }
        Self::pending(
            &[rows.len(), x[1]],
            Op::Index(Indexing::PickRows, self.clone(), rows),
        )
    }

    /// The `[v, d]` whose row `r` is the sum of this `[rows.len(), d]`'s rows `i` with
    /// `rows[i] == r`, added in order of `i`; 0 where no row lands. The gradient of
    /// [`pick_rows`](Self::pick_rows).
    ///
    /// # Panics
    /// As [`pick_rows`](Self::pick_rows), or if there is not one index per row.
    pub(crate) fn add_rows(&self, rows: Arc<[usize]>, v: usize) -> Self {
        let x = self.shape();
        assert!(
            x.len() == 2 && rows.len() == x[0],
            "add_rows: {} rows for shape {x:?}, not one per row of a [n, d]",
            rows.len()
        );
        if let Some((i, row)) = rows.iter().enumerate().find(|&(_, &r)| r >= v) {
            panic!("add_rows: index {i} names row {row} of {v}");
        }
        Self::pending(&[v, x[1]], Op::Index(Indexing::AddRows, self.clone(), rows))
    }

    /// This then `other` along `axis`, every other dim equal.
    ///
    /// # Panics
    /// If the ranks or the other dims differ, or `axis` is out of range: the caller checks.
    pub(crate) fn cat(&self, other: &LazyBuffer, axis: usize) -> Self {
        let (a, b) = (self.shape(), other.shape());
        let fits = a.len() == b.len() && axis < a.len() && (0..a.len()).all(|d| d == axis || a[d] == b[d]);
        assert!(fits, "cat: shapes {a:?} and {b:?} along axis {axis}");
        let mut shape = a.to_vec();
        shape[axis] += b[axis];
        Self::pending(&shape, Op::Cat(self.clone(), other.clone(), axis))
    }

    /// A row-major copy of this view (a no-op if it already is one).
    pub fn contiguous(&self) -> Self {
        if self.view.is_contiguous() && numel(&self.node.shape) == self.numel() {
            return self.clone();
        }
        if let Some(product) = self.transposed_matmul() {
            return product;
        }
        Self::pending(self.shape(), Op::Contiguous(self.clone()))
    }

    /// `(a·b)ᵀ` laid out row-major is `bᵀ·aᵀ`: when this is the transposed view of a pending
    /// matmul, that product (whose operands are free views) instead of a strided copy. A weight's
    /// gradient arrives this way, since `Linear` multiplies by the weight's transpose.
    fn transposed_matmul(&self) -> Option<Self> {
        let rank = self.node.shape.len();
        if rank < 2 {
            return None;
        }
        if !self.view.is_transposed_contiguous(&self.node.shape) {
            return None;
        }
        let mut order: AxisVec<usize> = (0..rank).collect();
        order.swap(rank - 2, rank - 1);
        match self.node.op()? {
            Op::MatMul(a, b) => Some(b.permute(&order).matmul(&a.permute(&order))),
            _ => None,
        }
    }

    fn with_view(&self, view: View) -> Self {
        LazyBuffer {
            node: self.node.clone(),
            view,
        }
    }

    /// The same elements as `shape`. Copies (lazily) only when the view cannot be reshaped in place.
    pub fn reshape(&self, shape: &[usize]) -> Self {
        assert_eq!(
            checked_numel(shape).ok(),
            Some(self.numel()),
            "reshape: {:?} and {shape:?} hold different element counts",
            self.shape()
        );
        match self.view.reshape(shape) {
            Some(view) => self.with_view(view),
            None => {
                let copy = self.contiguous();
                let view = copy.view.reshape(shape).expect("contiguous views reshape");
                copy.with_view(view)
            }
        }
    }

    /// Reorders axes: axis `d` of the result is axis `order[d]`.
    pub fn permute(&self, order: &[usize]) -> Self {
        if let Err(e) = check_permutation(order, self.shape().len()) {
            panic!("permute of shape {:?}: {e}", self.shape());
        }
        self.with_view(self.view.permute(order))
    }

    /// Broadcasts size-1 axes (and missing leading axes) to `shape`.
    pub fn expand(&self, shape: &[usize]) -> Self {
        let from = self.shape();
        // numpy's rule, checked without building the broadcast shape (expands are frequent).
        let ok = from.len() <= shape.len()
            && (from.iter().rev().zip(shape.iter().rev())).all(|(&f, &t)| f == t || f == 1);
        assert!(ok, "expand: {from:?} does not broadcast to {shape:?}");
        self.with_view(self.view.expand(shape))
    }

    /// Pads axis `d` with `pads[d].0` zeros before and `pads[d].1` after.
    ///
    /// Panics, naming the shape and the pads, if a padded size or the element count overflows
    /// `usize` (`Tensor::pad_to` checks the same and returns an error).
    pub fn pad(&self, pads: &[(usize, usize)]) -> Self {
        assert_eq!(
            pads.len(),
            self.shape().len(),
            "pad: one (before, after) per axis"
        );
        let padded = padded_dims(self.shape(), pads);
        assert!(
            padded.is_some_and(|p| checked_numel(&p).is_ok_and(|n| n <= isize::MAX as usize)),
            "pad: {pads:?} around shape {:?} overflows usize",
            self.shape()
        );
        self.with_view(self.view.pad(pads))
    }

    /// Keeps `ranges[d] = (start, end)` of axis `d`.
    pub fn shrink(&self, ranges: &[(usize, usize)]) -> Self {
        let ok = ranges.len() == self.shape().len()
            && ranges
                .iter()
                .zip(self.shape())
                .all(|(&(s, e), &d)| s <= e && e <= d);
        assert!(
            ok,
            "shrink: ranges {ranges:?} do not fit shape {:?}",
            self.shape()
        );
        self.with_view(self.view.shrink(ranges))
    }

    /// Computes this buffer's node (and whatever it needs) now.
    pub fn realize(&self) -> &Self {
        schedule::realize(&[self]);
        self
    }

    /// Realizes several buffers in one schedule, so work they share is stored once for all of
    /// them; except a cheap elementwise intermediate of many values (`2x + 1` over 2^18), which
    /// each kernel that reads it computes again, as that costs less than storing and reading it.
    pub fn realize_all(buffers: &[&LazyBuffer]) {
        schedule::realize(buffers);
    }

    /// The values in row-major order of the logical shape (realizes first).
    pub fn to_vec(&self) -> Vec<f32> {
        self.realize();
        let buf = self.node.buffer().expect("realized above");
        if self.view.is_contiguous() && buf.len() == self.numel() {
            let mut out = alloc::with_capacity(buf.len());
            out.extend_from_slice(&buf);
            return out;
        }
        // A transpose is copied in tiles, each source and output line read and written whole:
        // gathered value by value, each from another line, the transpose of a [1024, 1024] took
        // 2.6 times as long, of a [256, 512] 5 times.
        if let Some(tiling) = gather::tiling(&self.view) {
            let n = self.numel();
            let mut out = alloc::with_capacity(n);
            gather::copy_tiled(&buf, &self.view, tiling, &mut out.spare_capacity_mut()[..n]);
            // SAFETY: `copy_tiled` writes every element of the view, `n` of them.
            unsafe { out.set_len(n) };
            return out;
        }
        let mut out = alloc::filled(self.numel(), 0.0);
        gather::gather(&buf, &self.view, 0, &mut out);
        out
    }

    /// Calls `f` with the values, row-major, without copying when the view is the whole buffer.
    pub(crate) fn with_values<R>(&self, f: impl FnOnce(&[f32]) -> R) -> R {
        self.realize();
        let buf = self.node.buffer().expect("realized above");
        if self.view.is_contiguous() && buf.len() == self.numel() {
            f(&buf)
        } else {
            f(&self.to_vec())
        }
    }

    /// Lets `f` rewrite the values, row-major. Writes in place when this handle is the only
    /// one that can see the buffer (so no pending graph observes the change); otherwise writes
    /// a copy and points this handle at it. Either way other handles keep the old values.
    pub(crate) fn update(&mut self, f: impl FnOnce(&mut [f32])) {
        self.realize();
        let whole = self.view.is_contiguous() && numel(&self.node.shape) == self.numel();
        if whole && let Some(node) = Arc::get_mut(&mut self.node) {
            let buf = node.buffer_mut().expect("realized above");
            let values: &mut Storage = Arc::make_mut(buf);
            f(values);
            return;
        }
        let mut values = self.with_values(Storage::from_slice);
        f(&mut values);
        stats::fresh_copy(values.len());
        *self = Self::from_storage(values, self.shape());
    }

    // Convenience wrappers, one line each, for tests and the layers above.

    /// `self + other`
    pub fn add(&self, other: &LazyBuffer) -> Self {
        self.binary(BinaryOp::Add, other)
    }
    /// `self - other`
    pub fn sub(&self, other: &LazyBuffer) -> Self {
        self.binary(BinaryOp::Sub, other)
    }
    /// `self * other`
    pub fn mul(&self, other: &LazyBuffer) -> Self {
        self.binary(BinaryOp::Mul, other)
    }
    /// `self / other`
    pub fn div(&self, other: &LazyBuffer) -> Self {
        self.binary(BinaryOp::Div, other)
    }
}

/// A seeded stream of pseudo-random bits (xorshift32), for tests that need many cheap values.
#[cfg(test)]
pub(crate) fn xorshift(mut state: u32) -> impl FnMut() -> u32 {
    move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(shape: &[usize]) -> LazyBuffer {
        LazyBuffer::from_values((0..numel(shape)).map(|i| i as f32 - 7.5), shape).unwrap()
    }

    /// `x`'s values, row-major, at each row's column.
    fn picked_by_hand(x: &LazyBuffer, columns: &[usize]) -> Vec<f32> {
        let (values, width) = (x.to_vec(), x.shape()[1]);
        (columns.iter().enumerate())
            .map(|(row, &c)| values[row * width + c])
            .collect()
    }

    #[test]
    fn pick_columns_reads_each_rows_column_through_any_view() {
        let columns: Arc<[usize]> = Arc::from([3, 0, 5, 5]);
        let base = ramp(&[6, 4]);
        // Stored, transposed, padded (the padding reads 0), shrunk, and pending (realized first).
        let views = [
            ramp(&[4, 6]),
            base.permute(&[1, 0]),
            ramp(&[4, 4]).pad(&[(0, 0), (1, 1)]),
            ramp(&[5, 7]).shrink(&[(1, 5), (1, 7)]),
            ramp(&[4, 6]).mul(&ramp(&[4, 6])),
        ];
        for x in &views {
            let picked = x.pick_columns(columns.clone());
            let want = reference::evaluate(&picked);
            let got = picked.to_vec();
            assert_eq!(got, picked_by_hand(x, &columns), "{:?}", x.view);
            assert_eq!(got.iter().map(|&v| v as f64).collect::<Vec<_>>(), want);
        }
        // The output comes from the allocator that counts fresh bytes (16, too few to pool).
        let x = ramp(&[4, 6]);
        stats::reset();
        x.pick_columns(columns.clone()).realize();
        let ran = stats::get();
        assert_eq!((ran.bytes_allocated, ran.bytes_fresh), (16, 16), "{ran:?}");
        // A graph of the same structure replays its plan, with its own columns.
        let (a, b) = (ramp(&[4, 6]), ramp(&[4, 6]));
        let graph = |columns: &Arc<[usize]>| {
            (a.mul(&b).pick_columns(columns.clone())).add(&LazyBuffer::full(&[4, 1], 1.0))
        };
        let other: Arc<[usize]> = Arc::from([1, 2, 3, 4]);
        stats::reset();
        let got = graph(&other).to_vec();
        assert_eq!(stats::get().schedules_reused, 0);
        let got_again = graph(&columns).to_vec();
        assert_eq!(stats::get().schedules_reused, 1, "{:?}", stats::get());
        let plus_one = |v: Vec<f32>| v.into_iter().map(|v| v + 1.0).collect::<Vec<_>>();
        assert_eq!(got, plus_one(picked_by_hand(&a.mul(&b), &other)));
        assert_eq!(got_again, plus_one(picked_by_hand(&a.mul(&b), &columns)));
    }

    #[test]
    #[should_panic(expected = "pick_columns: row 2 of [4, 6] names column 6")]
    fn pick_columns_names_a_column_out_of_range() {
        ramp(&[4, 6]).pick_columns(Arc::from([0, 1, 6, 2]));
    }

    #[test]
    #[should_panic(expected = "pick_rows: index 1 names row 4 of [4, 6]")]
    fn pick_rows_names_a_row_out_of_range() {
        ramp(&[4, 6]).pick_rows(Arc::from([0, 4]));
    }

    #[test]
    #[should_panic(expected = "add_rows: index 0 names row 3 of 3")]
    fn add_rows_names_a_row_out_of_range() {
        ramp(&[2, 6]).add_rows(Arc::from([3, 0]), 3);
    }

    #[test]
    #[should_panic(expected = "pick_columns: 3 columns for shape [4, 6]")]
    fn pick_columns_wants_one_column_per_row() {
        ramp(&[4, 6]).pick_columns(Arc::from([0, 1, 2]));
    }
}
