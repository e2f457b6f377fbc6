//! A matrix product's epilogue: a bias row added and/or relu, or relu's gradient mask, applied
//! to the product's output in place, while it is still in cache, instead of in a kernel of its
//! own. On the packed panels each tile of the output goes through it as soon as it is final, on
//! the thread that computed it (see `panel_gemm::Finish`); on the other paths the output does,
//! after the product.
//!
//! A `Linear` layer's forward pass is `x·Wᵀ + b`, usually followed by relu. Unfused, the product
//! writes a buffer that its only reader, the `[Add Relu]` kernel, reads back into another one.
//! The scheduler hands that kernel's plan to [`Epilogue::recognize`]; if it is one of these
//! forms, the product runs with the epilogue and the kernel does not run at all. Measured on the
//! 64→128→10 training step (one thread, 14 alternating runs of 500-step batches): 43.7 µs
//! against 44.5 µs unfused, the epilogues themselves taking about 0.4 µs of it. On the
//! 784→512→256→10 step the difference was below the run-to-run spread.
//!
//! In the backward pass, the gradient reaching a relu's input is `where(y <= 0, 0, g)`, `y` the
//! relu's output and `g` the product that carries the gradient back through the next layer: the
//! same pattern, with a matrix of the product's shape instead of a bias row.
//!
//! Every value is computed by the same operations on the same operands, in the same order, as
//! the kernel would have used (`execute`, which every kernel path agrees with bit for bit; for
//! the mask, the scalar operations `execute` runs for it; on the panels, the same operations in
//! vectors, with the kernel's choice of NaN where two meet in a sum), so whether a product takes
//! its epilogue changes no value.

use super::execute::execute;
use super::kernel::{BLOCK, Instr, as_uninit, repeat_period, return_scratch, scratch_block};
use super::ops::{BinaryOp, UnaryOp, binary_f32};
use super::panel_gemm::Finish;
use super::parallel;
use super::replay::{KernelPlan, Source};
use super::view::View;
use crate::simd::simd_dispatch;

/// What follows a product: `relu(p + b)`, `p + b` (or `b + p`), `relu(p)`, or relu's gradient
/// mask `where(y <= s, s, p)`.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Epilogue {
    pub(super) bias: Option<Bias>,
    relu: bool,
    mask: Option<Mask>,
}

/// An epilogue's bias row, or its mask's value and matrix.
type Operands<'a> = (Option<&'a [f32]>, Option<(f32, &'a [f32])>);

/// The most operands an epilogue reads besides the product.
pub(super) const MAX_SOURCES: usize = 2;

/// `where(y <= s, s, p)`: `s` one value broadcast over the product, `y` a matrix of the product's
/// shape, row-major; each given as where its buffer comes from and its first element in it.
#[derive(Clone, Debug, PartialEq)]
struct Mask {
    scalar: (Source, usize),
    matrix: (Source, usize),
}

/// A row of `n` values added to every row of the product.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Bias {
    /// Where the row's buffer comes from, and the row's first element in it.
    pub(super) source: Source,
    pub(super) offset: usize,
    /// The kernel computes `b + p` (the operand order decides which NaN an addition of two
    /// NaNs returns, so it is kept).
    first: bool,
}

/// True if a leaf from `source` can be an operand of an epilogue on node `product`: not the
/// product itself, nor the padding mask's constant.
fn is_operand(source: &Source, product: usize) -> bool {
    *source != Source::One && *source != Source::Node(product)
}

impl Epilogue {
    /// The epilogue that `plan` (the plan of the only kernel reading node `product`) computes, if
    /// it is one: its leaves are the product, read row-major in full, and at most a bias row
    /// broadcast over the other axes; its program is one of the forms above.
    pub(super) fn recognize(plan: &KernelPlan, product: usize) -> Option<Epilogue> {
        if plan.reduce.is_some() || plan.shape.len() < 2 {
            return None;
        }
        let whole = View::contiguous(&plan.shape);
        let p = (plan.leaves.iter())
            .position(|(source, view)| *source == Source::Node(product) && *view == whole)?;
        // Leaf `b` as a bias: one row of a buffer, repeated over the other axes.
        let bias_at = |b: usize, first: bool| -> Option<Bias> {
            let (source, view) = &plan.leaves[b];
            let (strides, shape) = (view.strides(), view.shape());
            let last = strides.len() - 1;
            // A stride along a size-1 axis never moves, whatever it is. The last axis must step
            // through the row: with stride 0 it would repeat one value, which is no bias row.
            let moves = |d: usize| strides[d] != 0 && shape[d] > 1;
            let row =
                view.mask().is_none() && (strides[last] == 1 || shape[last] == 1) && !(0..last).any(moves);
            let other = is_operand(source, product);
            (row && other).then(|| Bias {
                source: source.clone(),
                offset: view.offset() as usize,
                first,
            })
        };
        let add = |x: usize, y: usize| match (x == p, y == p) {
            (true, false) => bias_at(y, false),
            (false, true) => bias_at(x, true),
            _ => None,
        };
        let (bias, relu) = match (plan.leaves.len(), &plan.program[..]) {
            (1, [Instr::Unary(UnaryOp::Relu, 0)]) => (None, true),
            (2, [Instr::Binary(BinaryOp::Add, x, y)]) => (Some(add(*x, *y)?), false),
            (2, [Instr::Binary(BinaryOp::Add, x, y), Instr::Unary(UnaryOp::Relu, 2)]) => {
                (Some(add(*x, *y)?), true)
            }
            (3, [Instr::Binary(BinaryOp::CmpLe, y, s), Instr::Where(3, t, x)]) => {
                // Register 3 is the comparison; where it holds, the `s` it compared with is
                // picked, and the product elsewhere.
                if t != s || *x != p {
                    return None;
                }
                let mask = Mask {
                    scalar: Self::scalar(plan, *s, product)?,
                    matrix: Self::matrix(plan, *y, product, &whole)?,
                };
                return Some(Epilogue {
                    bias: None,
                    relu: false,
                    mask: Some(mask),
                });
            }
            _ => return None,
        };
        Some(Epilogue {
            bias,
            relu,
            mask: None,
        })
    }

    /// Leaf `s` as one value read everywhere, if it is one (and not the product).
    fn scalar(plan: &KernelPlan, s: usize, product: usize) -> Option<(Source, usize)> {
        let (source, view) = plan.leaves.get(s)?;
        // A stride along a size-1 axis never moves (a `[1, n]` output's `s` built at its shape).
        let still = |(&stride, &size): (&isize, &usize)| stride == 0 || size == 1;
        let everywhere = view.mask().is_none() && view.strides().iter().zip(view.shape()).all(still);
        let other = is_operand(source, product);
        (everywhere && other).then(|| (source.clone(), view.offset() as usize))
    }

    /// Leaf `y` as a row-major matrix of the product's shape, if it is one (and not the product).
    fn matrix(plan: &KernelPlan, y: usize, product: usize, whole: &View) -> Option<(Source, usize)> {
        let (source, view) = plan.leaves.get(y)?;
        let row_major =
            view.mask().is_none() && view.shape() == whole.shape() && view.has_contiguous_strides();
        let other = is_operand(source, product);
        (row_major && other).then(|| (source.clone(), view.offset() as usize))
    }

    /// Where the operands it reads besides the product come from (at most [`MAX_SOURCES`]), in
    /// the order [`apply`](Epilogue::apply) takes them: the bias row, or the mask's value and
    /// matrix.
    pub(super) fn sources(&self) -> impl Iterator<Item = &Source> {
        let mask = self.mask.iter().flat_map(|m| [&m.scalar.0, &m.matrix.0]);
        self.bias.iter().map(|b| &b.source).chain(mask)
    }

    /// Instructions it replaces, for the statistics.
    pub(super) fn ops(&self) -> usize {
        usize::from(self.bias.is_some()) + usize::from(self.relu) + 2 * usize::from(self.mask.is_some())
    }

    /// A name for the trace.
    pub(super) fn describe(&self) -> &'static str {
        match (&self.bias, self.relu, &self.mask) {
            (_, _, Some(_)) => "[CmpLe Where]",
            (Some(_), true, _) => "[Add Relu]",
            (Some(_), false, _) => "[Add]",
            _ => "[Relu]",
        }
    }

    /// Applies the epilogue to `out`, rows of `n` values; `buffers` are the buffers of
    /// [`sources`](Epilogue::sources), in order. Large outputs are split between threads by rows.
    ///
    /// # Panics
    /// If a buffer is missing or shorter than the epilogue reads (an internal error).
    pub(super) fn apply(&self, buffers: &[&[f32]], out: &mut [f32], n: usize) {
        if n == 0 || out.is_empty() {
            return;
        }
        let (bias, mask) = self.operands(buffers, n, out.len());
        let chunk = super::kernel::PARALLEL_CHUNK;
        if out.len() < 2 * chunk || parallel::threads() == 1 {
            return match mask {
                Some((scalar, matrix)) => apply_mask(scalar, matrix, out),
                None => self.apply_rows(bias, out, n),
            };
        }
        let rows = out.len().div_ceil(4 * parallel::threads()).max(chunk).div_ceil(n);
        let mut parts: Vec<&mut [f32]> = out.chunks_mut(rows * n).collect();
        parallel::for_each_mut(&mut parts, &|i, part| match mask {
            Some((scalar, matrix)) => {
                let start = i * rows * n;
                apply_mask(scalar, &matrix[start..start + part.len()], part)
            }
            None => self.apply_rows(bias, part, n),
        });
    }

    /// The epilogue as the packed panels apply it to an `m×n` output (see [`Finish`]), reading
    /// `buffers` as [`apply`](Epilogue::apply) does: they must outlive every use of the result.
    ///
    /// # Panics
    /// If a buffer is missing or shorter than the epilogue reads (an internal error).
    pub(super) fn finish(&self, buffers: &[&[f32]], (m, n): (usize, usize)) -> Finish {
        let (bias, mask) = self.operands(buffers, n, m * n);
        Finish {
            bias: bias.map(|b| (b.as_ptr(), self.bias.as_ref().is_some_and(|b| b.first))),
            relu: self.relu,
            mask: mask.map(|(s, y)| (s, y.as_ptr())),
        }
    }

    /// The bias row (`n` values), or the mask's value and matrix (`len` values), that
    /// [`apply`](Epilogue::apply) reads from `buffers`, the buffers of
    /// [`sources`](Epilogue::sources) in order.
    ///
    /// # Panics
    /// If a buffer is missing or shorter than that (an internal error).
    fn operands<'a>(&self, buffers: &[&'a [f32]], n: usize, len: usize) -> Operands<'a> {
        assert_eq!(buffers.len(), self.sources().count(), "one buffer per source");
        match (&self.bias, &self.mask) {
            (Some(b), _) => (Some(&buffers[0][b.offset..][..n]), None),
            (None, Some(m)) => {
                let scalar = buffers[0][m.scalar.1];
                (None, Some((scalar, &buffers[1][m.matrix.1..][..len])))
            }
            (None, None) => (None, None),
        }
    }

    /// [`Epilogue::apply`] on one thread, in pieces of at most a block: whole rows, or parts of
    /// one row longer than a block.
    fn apply_rows(&self, bias: Option<&[f32]>, out: &mut [f32], n: usize) {
        let rows = (BLOCK / n).clamp(1, out.len() / n);
        let piece = (rows * n).min(BLOCK);
        // The bias row once per row of a piece, so a piece's bias is one slice of it (a row
        // longer than a block is its own tile), by copies that double what is filled: a row at a
        // time, rows of 10 took 102 copies, longer than a [32, 10] product. Both buffers are
        // pooled blocks, as this runs for every product: two arrays of a block on the stack were
        // zeroed on every call.
        let mut repeated = scratch_block(if bias.is_some() && rows > 1 { rows * n } else { 0 });
        let tile: &[f32] = match bias {
            Some(b) if rows > 1 => {
                let repeated = repeated.values_mut();
                repeated[..n].copy_from_slice(b);
                repeat_period(repeated, n);
                repeated
            }
            Some(b) => b,
            None => &[],
        };
        let mut tmp = scratch_block(piece);
        for group in out.chunks_mut(rows * n) {
            for (start, values) in (0..).step_by(piece).zip(group.chunks_mut(piece)) {
                let len = values.len();
                let bias = tile.get(start..start + len).unwrap_or(&[]);
                self.apply_piece(bias, values, &mut tmp.values_mut()[..len]);
            }
        }
        return_scratch([repeated, tmp].into_iter());
    }

    /// `values` (and the bias under them) through the epilogue, with `tmp` as scratch.
    fn apply_piece(&self, bias: &[f32], values: &mut [f32], tmp: &mut [f32]) {
        const ADD: Instr = Instr::Binary(BinaryOp::Add, 0, 1);
        const RELU: Instr = Instr::Unary(UnaryOp::Relu, 0);
        match &self.bias {
            Some(b) => {
                let operands = if b.first {
                    [bias, &*values, &[]]
                } else {
                    [&*values, bias, &[]]
                };
                execute(&ADD, &operands, as_uninit(tmp));
            }
            None => tmp.copy_from_slice(values),
        }
        if self.relu {
            execute(&RELU, &[tmp, &[], &[]], as_uninit(values));
        } else {
            values.copy_from_slice(tmp);
        }
    }
}

simd_dispatch! {
    /// `where(matrix <= scalar, scalar, out)` in place, by the scalar operations every kernel
    /// path agrees with, compiled for AVX-512 and AVX2 too: built for the baseline, its loop ran
    /// four lanes wide (a relu gradient's mask over `[32, 128]` took about 2 % of the small
    /// training step). (Through `execute`, two instructions a block at a time, it took longer on
    /// `[32, 128]` than the kernel it replaces.)
    fn apply_mask(scalar: f32, matrix: &[f32], out: &mut [f32]) {
        for (v, &y) in out.iter_mut().zip(matrix) {
            if binary_f32(BinaryOp::CmpLe, y, scalar) != 0.0 {
                *v = scalar;
            }
        }
    }
}
