//! Folding a fused kernel's computed values into its reduction's outputs: sums (f32 partial
//! sums within a block, f64 across blocks), maxima and minima, by runs, by rows of columns, and
//! split across threads where that keeps each output's order.

use super::kernel::{BLOCK, PARALLEL_CHUNK};
use super::ops::{ReduceOp, reduce_step_f32};
use super::parallel;
use crate::simd::simd_dispatch;

/// Folds values, which cover linear positions `start..` of the iteration space, into the outputs:
/// output `o` reduces positions `o*run_len .. (o+1)*run_len`. The values are taken in blocks of
/// [`BLOCK`] from the first, as a kernel computes them; sums are f32 partial sums of at most one
/// block, accumulated in f64 across blocks.
pub(super) fn accumulate(
    op: ReduceOp,
    values: &[f32],
    start: usize,
    run_len: usize,
    out: &mut [f32],
    sums: &mut [f64],
) {
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
    pub(super) fn fold_whole_runs(op: ReduceOp, values: &[f32], run_len: usize, out: &mut [f32]) {
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
    pub(super) fn accumulate_columns(
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
    pub(super) fn fold_column_range(op: ReduceOp, values: &[f32], stride: usize, out: &mut [f32], sums: &mut [f64]) {
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
pub(super) fn fold_columns_in_parallel(
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
