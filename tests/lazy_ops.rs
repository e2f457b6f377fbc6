//! Every operation of the lazy buffer against the f64 reference evaluator, on seeded random inputs
//! seen through contiguous and non-contiguous views, with scalars, size-1 and zero-size axes; then
//! bad input, IEEE special values and empty tensors.
//!
//! Each test builds its graph, runs `reference::evaluate` first (a realized node drops its inputs),
//! and only then reads the fast path with `to_vec`.
//!
//! Tolerances. `EPS` is `f32::EPSILON` = 2^-23: one ulp of a result `y` is at most `EPS·|y|`, and
//! the unit roundoff of f32 is `u = EPS / 2`.
//! * Exact operations (neg, abs, relu, max, min, comparisons, where, every movement op, a copy)
//!   and correctly rounded ones (+, -, ·, /, sqrt, recip = 1/x) are compared bit for bit with the
//!   f64 result rounded to f32: for a single such operation on f32 inputs, f64 carries
//!   53 ≥ 2·24 + 2 bits, so rounding the f64 result to f32 gives the correctly rounded f32 result
//!   (double rounding is innocuous).
//! * The kernels' own exp, log and tanh are within 1.02, 0.87 and 1.34 ulp (their worst cases
//!   over every f32 are 1.010, 0.862 and 1.330), and libm's f32 sin, cos and pow within 1 ulp
//!   (glibc's documented bounds): we allow `2·EPS·|y|`, as one ulp is at most `EPS·|y|`.
//! * sigmoid is computed as `1 / (1 + exp(-x))`: exp's ≤ 1 ulp relative error passes through
//!   `1 + e` damped by `e/(1+e) < 1`, and the add and the divide add `u` each: ≤ `2·EPS` relative;
//!   we allow `3·EPS·|y|` to cover an exp of up to 2 ulp.
//! * erf is within 5.9 ulp (its worst over every f32 is 5.894): we allow `6·EPS·|y|`.
//! * A sum of `n` terms in any order has error ≤ γ_(n-1)·Σ|x| plus `u·|s|` for the final rounding,
//!   together ≤ `n·u·Σ|x|`; we allow `n·EPS·Σ|x|` (twice that), with Σ|x| from the reference.
//! * A matmul output is a dot product of `k` terms accumulated in f32 (with or without FMA):
//!   ≤ γ_k·Σ|a||b| ≈ `k·u·Σ|a||b|`; we allow `k·EPS·Σ|a||b|`.
//!
//! Where the reference is ±inf the fast path must be the same infinity; where it is NaN, NaN.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use teenygrad::Error;
use teenygrad::lazy::{BinaryOp, LazyBuffer, ReduceOp, UnaryOp, reference};

const EPS: f64 = f32::EPSILON as f64;

const REDUCE: [ReduceOp; 3] = [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min];

/// Shapes every elementwise and reduce test runs over: a scalar, size-1 axes, zero-size axes.
const SHAPES: [&[usize]; 9] = [
    &[],
    &[1],
    &[7],
    &[3, 1, 4],
    &[2, 3, 5],
    &[1, 1],
    &[0],
    &[0, 3],
    &[2, 0, 3],
];

// ---------------------------------------------------------------------------------------------
// Helpers

fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// How input values are drawn.
#[derive(Clone, Copy)]
enum Values {
    /// Uniform in `[lo, hi)`.
    Uniform(f32, f32),
    /// Integers in `lo..=hi`, so comparisons meet ties.
    Ints(i32, i32),
}

impl Values {
    fn draw(self, rng: &mut StdRng) -> f32 {
        match self {
            Values::Uniform(lo, hi) => rng.random_range(lo..hi),
            Values::Ints(lo, hi) => rng.random_range(lo..=hi) as f32,
        }
    }
}

fn leaf(rng: &mut StdRng, shape: &[usize], values: Values) -> LazyBuffer {
    let data = (0..numel(shape)).map(|_| values.draw(rng)).collect();
    LazyBuffer::from_vec(data, shape).unwrap()
}

/// Buffers of logical shape `shape` seen through different kinds of view onto fresh leaves.
fn views(rng: &mut StdRng, shape: &[usize], values: Values) -> Vec<(&'static str, LazyBuffer)> {
    let rank = shape.len();
    let reversed: Vec<usize> = (0..rank).rev().collect();
    let mut out = vec![("contiguous", leaf(rng, shape, values))];

    // Reversed axes: the reversal is its own inverse, so permuting a leaf of the reversed shape
    // gives `shape` with non-row-major strides.
    let stored: Vec<usize> = reversed.iter().map(|&a| shape[a]).collect();
    out.push(("permuted", leaf(rng, &stored, values).permute(&reversed)));

    // An interior window: offset and strides of a larger buffer.
    let big: Vec<usize> = shape.iter().map(|&d| d + 3).collect();
    let window: Vec<(usize, usize)> = shape.iter().map(|&d| (1, 1 + d)).collect();
    out.push(("shrunk", leaf(rng, &big, values).shrink(&window)));

    // Zeros around a smaller leaf.
    let pads: Vec<(usize, usize)> = shape.iter().map(|&d| (d / 3, d / 4)).collect();
    let inner: Vec<usize> = shape.iter().zip(&pads).map(|(&d, &(b, a))| d - b - a).collect();
    out.push(("padded", leaf(rng, &inner, values).pad(&pads)));

    // Every other axis broadcast from size 1 (stride 0).
    let narrow: Vec<usize> = shape
        .iter()
        .enumerate()
        .map(|(i, &d)| if i % 2 == 0 { 1 } else { d })
        .collect();
    out.push(("expanded", leaf(rng, &narrow, values).expand(shape)));

    // One row repeated over every leading axis, as a bias over a batch (rank lifted by expand).
    if let Some(&row) = shape.last() {
        out.push(("row repeated", leaf(rng, &[row], values).expand(shape)));
    }

    // All at once: permuted storage, padded by one on each side, then a window that keeps the
    // leading pad row and drops the trailing ones (mask, negative offset, reversed strides).
    let grown: Vec<usize> = shape.iter().map(|&d| d + 1).collect();
    let stored: Vec<usize> = reversed.iter().map(|&a| grown[a]).collect();
    let window: Vec<(usize, usize)> = shape.iter().map(|&d| (0, d)).collect();
    let mixed = leaf(rng, &stored, values)
        .permute(&reversed)
        .pad(&vec![(1, 1); rank])
        .shrink(&window);
    out.push(("permuted+padded+shrunk", mixed));
    for (name, buffer) in &out {
        assert_eq!(buffer.shape(), shape, "view {name}");
    }
    out
}

/// Fast `got` against reference `want`: equal (including infinities), both NaN, or within `tol(i)`.
fn assert_close(what: &str, got: &[f32], want: &[f64], tol: impl Fn(usize) -> f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = if w.is_nan() {
            g.is_nan()
        } else {
            g as f64 == w || (g as f64 - w).abs() <= tol(i)
        };
        assert!(
            ok,
            "{what}: element {i}: fast {g}, reference {w}, tolerance {:e}",
            tol(i)
        );
    }
}

/// Fast `got` bit for bit equal to the reference rounded to f32 (any NaN matches any NaN).
fn assert_exact(what: &str, got: &[f32], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let w32 = w as f32;
        let ok = if w.is_nan() {
            g.is_nan()
        } else {
            g.to_bits() == w32.to_bits()
        };
        assert!(
            ok,
            "{what}: element {i}: fast {g:?}, reference {w:?} (as f32 {w32:?})"
        );
    }
}

/// Compares `y` with the reference: reference first, then the fast path.
fn check_exact(what: &str, y: &LazyBuffer) {
    let want = reference::evaluate(y);
    assert_exact(what, &y.to_vec(), &want);
}

/// Relative tolerance in units of `EPS`, `None` for an exact comparison.
fn unary_ulps(op: UnaryOp) -> Option<f64> {
    match op {
        UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Relu | UnaryOp::Sqrt | UnaryOp::Recip => None,
        UnaryOp::Exp | UnaryOp::Log | UnaryOp::Tanh => Some(2.0),
        // Within 0.5001 ulp (computed in f64, rounded once), and an ulp is at most EPS·|y|.
        UnaryOp::Sin | UnaryOp::Cos => Some(1.0),
        UnaryOp::Sigmoid => Some(3.0),
        UnaryOp::Erf => Some(6.0),
        UnaryOp::Gelu => {
            unreachable!("GELU's error is absolute: see gelu_within_its_bound_through_every_view")
        }
    }
}

/// The unary ops whose error is relative to their result (all but GELU).
fn relative_unary_ops() -> impl Iterator<Item = UnaryOp> {
    UnaryOp::ALL.iter().copied().filter(|&op| op != UnaryOp::Gelu)
}

fn binary_ulps(op: BinaryOp) -> Option<f64> {
    match op {
        BinaryOp::Pow => Some(2.0),
        _ => None,
    }
}

fn check_relative(what: &str, y: &LazyBuffer, ulps: Option<f64>) {
    let want = reference::evaluate(y);
    let got = y.to_vec();
    match ulps {
        None => assert_exact(what, &got, &want),
        Some(ulps) => assert_close(what, &got, &want, |i| ulps * EPS * want[i].abs()),
    }
}

// ---------------------------------------------------------------------------------------------
// Elementwise

#[test]
fn unary_ops_through_every_view() {
    let mut rng = rng(1);
    for op in relative_unary_ops() {
        // [-3, 3): negatives give NaN for log and sqrt on both paths; padding gives zeros, so
        // log(0) = -inf and recip(0) = inf appear too.
        for shape in SHAPES {
            for (name, x) in views(&mut rng, shape, Values::Uniform(-3.0, 3.0)) {
                let what = format!("{op:?} of {name} {shape:?}");
                check_relative(&what, &x.unary(op), unary_ulps(op));
            }
        }
    }
}

#[test]
fn binary_ops_through_every_view_pairing() {
    let mut rng = rng(2);
    for &op in BinaryOp::ALL {
        let values = match op {
            // Integer values make ties, where comparisons, max and min are most interesting.
            BinaryOp::CmpLt | BinaryOp::CmpLe | BinaryOp::CmpEq | BinaryOp::Max | BinaryOp::Min => {
                Values::Ints(-2, 2)
            }
            // Positive bases keep pow real; padding still adds 0^b.
            BinaryOp::Pow => Values::Uniform(0.05, 3.0),
            _ => Values::Uniform(-3.0, 3.0),
        };
        for shape in SHAPES {
            let lhs = views(&mut rng, shape, values);
            let rhs = views(&mut rng, shape, values);
            // Each left view against each right view.
            for (ln, a) in &lhs {
                for (rn, b) in &rhs {
                    let what = format!("{op:?} of {ln} and {rn} {shape:?}");
                    check_relative(&what, &a.binary(op, b), binary_ulps(op));
                }
            }
            // An operand used twice.
            let (_, a) = &lhs[1];
            check_relative(
                &format!("{op:?} of x with itself {shape:?}"),
                &a.binary(op, a),
                binary_ulps(op),
            );
        }
    }
}

#[test]
fn elementwise_ops_large_enough_to_split_across_threads() {
    // Over 2 · 2^14 elements, so with several threads both the one-op path over plain buffers and
    // the fused kernels split their output into parts; 7 · 4_999 is no multiple of the
    // 1024-element block, so the last block of the last part is short.
    let mut rng = rng(14);
    let shape = [7, 4_999];
    for (name, x) in views(&mut rng, &shape, Values::Uniform(-3.0, 3.0)) {
        for op in [UnaryOp::Exp, UnaryOp::Sqrt, UnaryOp::Relu] {
            check_relative(&format!("{op:?} of {name}"), &x.unary(op), unary_ulps(op));
        }
        let y = leaf(&mut rng, &shape, Values::Uniform(-3.0, 3.0));
        check_exact(&format!("{name} * leaf"), &x.mul(&y));
        let one = LazyBuffer::full(&shape, 1.0);
        check_exact(
            &format!("max({name} + 1, leaf)"),
            &x.add(&one).binary(BinaryOp::Max, &y),
        );
    }
}

#[test]
fn rows_repeated_over_many_blocks() {
    // A bias-like row broadcast over a batch, over several kernel blocks: periods that divide the
    // 1024-element block, that do not, and that equal it; the output's first block may be cut
    // short to reach a cache line, so blocks start anywhere within a period.
    let mut rng = rng(15);
    for shape in [[37, 100], [9, 512], [5, 1024], [40, 64], [3, 7]] {
        let x = leaf(&mut rng, &shape, Values::Uniform(-3.0, 3.0));
        let row = leaf(&mut rng, &shape[1..], Values::Uniform(-3.0, 3.0)).expand(&shape);
        check_exact(&format!("x + row {shape:?}"), &x.add(&row));
        check_exact(
            &format!("max(x, row) * row {shape:?}"),
            &x.binary(BinaryOp::Max, &row).mul(&row),
        );
    }
}

#[test]
fn one_op_kernels_with_a_scalar_or_a_row_operand() {
    // A single op whose operands are read where they lie (a buffer, a scalar, a row repeated
    // over rows) runs each block straight from them: rows whose width divides the 1,024-value
    // block, does not, is wider, or is narrower than a vector; a scalar; on either side.
    let mut rng = rng(19);
    for shape in [[40, 1024], [50, 700], [9, 2500], [400, 3], [1, 37]] {
        let x = leaf(&mut rng, &shape, Values::Uniform(-3.0, 3.0));
        let row = leaf(&mut rng, &[1, shape[1]], Values::Uniform(-3.0, 3.0)).expand(&shape);
        let scalar = LazyBuffer::full(&shape, 0.37);
        check_exact(&format!("{shape:?} + a row"), &x.add(&row));
        check_exact(&format!("a row - {shape:?}"), &row.sub(&x));
        check_exact(&format!("{shape:?} * a scalar"), &x.mul(&scalar));
        check_exact(
            &format!("max(a scalar, {shape:?})"),
            &scalar.binary(BinaryOp::Max, &x),
        );
    }
}

#[test]
fn columns_repeated_along_rows() {
    // Row statistics (`[rows, 1]` broadcast over the columns), as layer norm and softmax read
    // them: in a kernel of several ops, a block within one row reads the row's value from one
    // chunk; one that crosses rows, or rows narrower than a block, gathers. Widths that are
    // multiples of the 1024-value block, that are not, and that are narrower; a single op reads
    // whole blocks.
    let mut rng = rng(17);
    for shape in [[4, 1024], [7, 2048], [3, 5000], [9, 700]] {
        let x = leaf(&mut rng, &shape, Values::Uniform(-3.0, 3.0));
        let column = |rng: &mut StdRng| leaf(rng, &[shape[0], 1], Values::Uniform(-3.0, 3.0)).expand(&shape);
        let (m, r) = (column(&mut rng), column(&mut rng));
        check_exact(&format!("x - m {shape:?}"), &x.sub(&m));
        check_exact(
            &format!("max(x - m, r) {shape:?}"),
            &x.sub(&m).binary(BinaryOp::Max, &r),
        );
        // Two roundings: against the same ops over the statistics stored at full size.
        let (mc, rc) = (m.contiguous(), r.contiguous());
        LazyBuffer::realize_all(&[&mc, &rc]);
        let f = |m: &LazyBuffer, r: &LazyBuffer| x.sub(m).mul(r).add(m).to_vec();
        let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
        assert_eq!(bits(f(&m, &r)), bits(f(&mc, &rc)), "(x - m)·r + m {shape:?}");
    }
}

#[test]
fn large_transposed_reads() {
    // Large enough that a transposed leaf is copied in tiles before the kernel runs (a shape
    // whose sides are not multiples of the tile), in elementwise kernels and in reductions over
    // each axis, against the reference.
    let mut rng = rng(15);
    let x = leaf(&mut rng, &[300, 203], Values::Uniform(-3.0, 3.0)).permute(&[1, 0]);
    let y = leaf(&mut rng, &[203, 300], Values::Uniform(-3.0, 3.0));
    check_exact("transpose * plain", &x.mul(&y));
    check_relative(
        "exp of a transpose",
        &x.unary(UnaryOp::Exp),
        unary_ulps(UnaryOp::Exp),
    );
    for axes in [&[0][..], &[1], &[0, 1]] {
        check_reduce(
            &format!("sum over {axes:?} of a transpose"),
            &x,
            ReduceOp::Sum,
            axes,
        );
        check_reduce(
            &format!("max over {axes:?} of a transpose"),
            &x,
            ReduceOp::Max,
            axes,
        );
    }
    // A 3-d permutation whose contiguous source axis is in the middle.
    let z = leaf(&mut rng, &[20, 30, 64], Values::Uniform(-3.0, 3.0)).permute(&[1, 2, 0]);
    check_exact(
        "3-d permutation + 1",
        &z.add(&LazyBuffer::full(&[30, 64, 20], 1.0)),
    );
}

#[test]
fn large_transposed_reads_by_panels() {
    // Past 2^16 values, a kernel whose blocks come in order copies a transposed leaf a panel of
    // rows at a time as its blocks reach them. Rows of 700 make panels of 80 rows (56,000 values,
    // no multiple of a block), so blocks straddle panels; the 3-d permutations tile along their
    // middle axis; rows of 5,000 along the tiles' axis are too long for panels and are copied
    // whole. On several threads, a thread's panel stops where its part of the output does.
    let mut rng = rng(16);
    let x = leaf(&mut rng, &[700, 301], Values::Uniform(-3.0, 3.0)).permute(&[1, 0]);
    let y = leaf(&mut rng, &[301, 700], Values::Uniform(-3.0, 3.0));
    let x2 = leaf(&mut rng, &[700, 301], Values::Uniform(-3.0, 3.0)).permute(&[1, 0]);
    check_exact("transpose * plain", &x.mul(&y));
    check_exact("transpose * transpose", &x.mul(&x2));
    check_exact("copy of a transpose", &x.contiguous());
    // A chain of ops, chunk by chunk, over two panels and a plain leaf: the same bits as over
    // copies of the transposes.
    let (xc, x2c) = (x.contiguous(), x2.contiguous());
    LazyBuffer::realize_all(&[&xc, &x2c]);
    let chain = |a: &LazyBuffer, b: &LazyBuffer| a.mul(b).add(&y).unary(UnaryOp::Exp).to_vec();
    let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
    assert_eq!(
        bits(chain(&x, &x2)),
        bits(chain(&xc, &x2c)),
        "chain over two transposes"
    );
    // Reductions over rows, columns and all: blocks in order, so panels too, and the same bits as
    // over the copy.
    for (op, axes) in [
        (ReduceOp::Sum, &[1][..]),
        (ReduceOp::Max, &[1]),
        (ReduceOp::Sum, &[0]),
        (ReduceOp::Min, &[0, 1]),
    ] {
        let reduce = |a: &LazyBuffer| a.mul(&y).reduce(op, axes).to_vec();
        assert_eq!(bits(reduce(&x)), bits(reduce(&xc)), "{op:?} over {axes:?}");
    }
    check_relative(
        "exp of a transpose",
        &x.unary(UnaryOp::Exp),
        unary_ulps(UnaryOp::Exp),
    );
    let z = leaf(&mut rng, &[40, 50, 64], Values::Uniform(-3.0, 3.0)).permute(&[1, 2, 0]);
    check_exact(
        "3-d permutation + 1",
        &z.add(&LazyBuffer::full(&[50, 64, 40], 1.0)),
    );
    check_exact("copy of a 3-d permutation", &z.contiguous());
    // Rows of 19,200 values: a panel is three rows, or four where a block crosses from one into
    // the next; rows of 38,400: one row, or two.
    let w = leaf(&mut rng, &[4, 150, 128], Values::Uniform(-3.0, 3.0)).permute(&[0, 2, 1]);
    check_exact(
        "long rows of a 3-d permutation - 1",
        &w.sub(&LazyBuffer::full(&[4, 128, 150], 1.0)),
    );
    let w = leaf(&mut rng, &[2, 300, 128], Values::Uniform(-3.0, 3.0)).permute(&[0, 2, 1]);
    check_exact(
        "longer rows of a 3-d permutation - 1",
        &w.sub(&LazyBuffer::full(&[2, 128, 300], 1.0)),
    );
    let long = leaf(&mut rng, &[5000, 20], Values::Uniform(-3.0, 3.0)).permute(&[1, 0]);
    check_exact(
        "transpose with long rows * 2",
        &long.mul(&LazyBuffer::full(&[20, 5000], 2.0)),
    );
}

#[test]
fn reading_views_whose_values_lie_lines_apart() {
    // `to_vec` copies a view whose consecutive values lie a cache line or more apart (a
    // transpose, from 512 values) in tiles, and gathers any other: the reference's values, bit
    // for bit, either way.
    let mut rng = rng(17);
    let x = leaf(&mut rng, &[64, 48], Values::Uniform(-3.0, 3.0));
    let small = leaf(&mut rng, &[20, 20], Values::Uniform(-3.0, 3.0));
    let z = leaf(&mut rng, &[8, 40, 50], Values::Uniform(-3.0, 3.0));
    let pending = x.add(&x);
    for (what, view) in [
        ("a transpose", x.permute(&[1, 0])),
        ("a small transpose", small.permute(&[1, 0])),
        ("a 3-d permutation", z.permute(&[2, 0, 1])),
        (
            "a 3-d permutation keeping its last axis apart",
            z.permute(&[0, 2, 1]),
        ),
        (
            "a shrunk transpose",
            x.permute(&[1, 0]).shrink(&[(3, 40), (5, 64)]),
        ),
        ("a padded transpose", x.permute(&[1, 0]).pad(&[(1, 2), (0, 3)])),
        (
            "every other column",
            x.reshape(&[64, 24, 2]).shrink(&[(0, 64), (0, 24), (0, 1)]),
        ),
        ("a pending node's transpose", pending.permute(&[1, 0])),
    ] {
        check_exact(what, &view);
    }
}

#[test]
fn views_with_long_consecutive_runs() {
    // Views whose trailing axes hold runs of at least a block of consecutive values, which
    // kernels read where they lie, gathering only blocks that cross from one run to the next:
    // a slice of wider rows, a permutation that keeps the last axes, and the sums over all but
    // the channel axis of an NCHW batch (the reduced axes iterated after the kept one). Against
    // the reference: exact ops bit for bit, sums and maxima within their bounds.
    let mut rng = rng(16);
    let wide = leaf(&mut rng, &[5, 2600], Values::Uniform(-3.0, 3.0));
    let slice = wide.shrink(&[(1, 5), (300, 2400)]);
    check_exact(
        "slice of wider rows * 2",
        &slice.mul(&LazyBuffer::full(&[4, 2100], 2.0)),
    );
    check_reduce("row sums of a slice", &slice, ReduceOp::Sum, &[1]);
    check_reduce("column maxima of a slice", &slice, ReduceOp::Max, &[0]);
    let kept = leaf(&mut rng, &[4, 3, 1100], Values::Uniform(-3.0, 3.0)).permute(&[1, 0, 2]);
    check_exact(
        "permuted outer axes + 1",
        &kept.add(&LazyBuffer::full(&[3, 4, 1100], 1.0)),
    );
    let nchw = leaf(&mut rng, &[3, 5, 40, 40], Values::Uniform(-3.0, 3.0));
    for op in [ReduceOp::Sum, ReduceOp::Max] {
        check_reduce(&format!("{op:?} over N, H, W"), &nchw, op, &[0, 2, 3]);
    }
}

/// Box–Muller in f64 from pairs of uniform draws, cosine's sample first, the last sine's
/// dropped for an odd count: the sequence `rand_normal` has always drawn (a seeded model's
/// initial weights depend on it).
#[test]
fn normal_samples_are_box_muller_pairs_cosine_first() {
    for n in [0, 1, 2, 7, 1000] {
        let mut rng = rng(20);
        let mut want = Vec::new();
        while want.len() < n {
            let u1 = 1.0 - rng.random::<f64>();
            let u2 = rng.random::<f64>();
            let (radius, angle) = ((-2.0 * u1.ln()).sqrt(), std::f64::consts::TAU * u2);
            want.push(0.5 + 2.0 * (radius * angle.cos()) as f32);
            want.push(0.5 + 2.0 * (radius * angle.sin()) as f32);
        }
        want.truncate(n);
        let got = LazyBuffer::rand_normal(&[n], 0.5, 2.0, &mut self::rng(20)).to_vec();
        assert!(
            got.iter().zip(&want).all(|(g, w)| g.to_bits() == w.to_bits()) && got.len() == n,
            "{n}"
        );
    }
}

#[test]
fn where_through_every_view() {
    let mut rng = rng(3);
    for shape in SHAPES {
        let conds = views(&mut rng, shape, Values::Ints(-1, 1));
        let a = views(&mut rng, shape, Values::Uniform(-3.0, 3.0));
        let b = views(&mut rng, shape, Values::Uniform(-3.0, 3.0));
        for (i, (cn, c)) in conds.iter().enumerate() {
            let (an, x) = &a[i];
            let (bn, y) = &b[(i + 2) % b.len()];
            check_exact(&format!("where({cn}, {an}, {bn}) {shape:?}"), &c.where_(x, y));
        }
    }
}

#[test]
fn fused_elementwise_chain_of_exact_ops() {
    // On small integers every step is exact in f32, so the fused kernel must match the reference
    // bit for bit, through every kind of input view. The larger shapes span several blocks and
    // chunks with partial ones (the chunked pass on AVX-512), and the last is split between
    // threads where there are several; summed over an axis, the chain runs as a reduction's
    // program, whose integer sums are exact too.
    let mut rng = rng(4);
    let large: [&[usize]; 3] = [&[3, 37, 29], &[1030], &[2, 170, 100]];
    for shape in SHAPES.into_iter().chain(large) {
        for (name, x) in views(&mut rng, shape, Values::Ints(-8, 8)) {
            let two = LazyBuffer::full(shape, 2.0);
            let y = x
                .mul(&two)
                .add(&x)
                .unary(UnaryOp::Neg)
                .binary(BinaryOp::Max, &x.unary(UnaryOp::Abs))
                .sub(&x)
                .unary(UnaryOp::Relu)
                .where_(&x, &two);
            check_exact(&format!("exact chain over {name} {shape:?}"), &y);
            if shape.len() > 1 {
                check_exact(
                    &format!("exact chain over {name} {shape:?}, summed over axis 1"),
                    &y.sum(&[1]),
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reductions

/// No axes, each single axis, the first two, the first and last, all.
fn axis_sets(rank: usize) -> Vec<Vec<usize>> {
    let mut sets = vec![vec![]];
    sets.extend((0..rank).map(|a| vec![a]));
    if rank >= 2 {
        sets.push(vec![0, 1]);
    }
    if rank >= 3 {
        sets.push(vec![0, rank - 1]);
    }
    if rank >= 1 {
        sets.push((0..rank).collect());
    }
    sets
}

/// Checks `x.reduce(op, axes)` with the tolerance of the op: exact for max and min, the `n`-term
/// bound `n·EPS·Σ|x|` for sum.
fn check_reduce(what: &str, x: &LazyBuffer, op: ReduceOp, axes: &[usize]) {
    let y = x.reduce(op, axes);
    let want = reference::evaluate(&y);
    let magnitude = reference::evaluate(&x.unary(UnaryOp::Abs).sum(axes));
    let n: usize = axes.iter().map(|&a| x.shape()[a]).product();
    let got = y.to_vec();
    let mut expected_shape = x.shape().to_vec();
    axes.iter().for_each(|&a| expected_shape[a] = 1);
    assert_eq!(y.shape(), expected_shape, "{what}: shape");
    match op {
        ReduceOp::Sum => assert_close(what, &got, &want, |i| n as f64 * EPS * magnitude[i]),
        ReduceOp::Max | ReduceOp::Min => assert_exact(what, &got, &want),
    }
}

#[test]
fn reductions_over_every_axis_set_and_view() {
    check_reductions_of(&mut rng(5), &SHAPES);
}

#[test]
fn reductions_spanning_many_blocks() {
    // Larger than the kernels' block, so partial results cross block boundaries, and through
    // strided views so the reduced axis is not the innermost in memory.
    check_reductions_of(
        &mut rng(6),
        // [600, 4, 7]: short runs over the middle axis, added as rows of 7.
        &[
            &[3usize, 3001][..],
            &[2, 50, 70],
            &[10_007],
            &[2, 3, 2500],
            &[600, 4, 7],
        ],
    );
}

#[test]
fn a_stored_tensor_reduces_as_the_same_values_computed_in_the_kernel() {
    // A reduction of a stored tensor reads it in place, without the kernel's block buffers; it
    // must still add the same f32 partial sums, one per block, as when the kernel computes the
    // values first (`x · 1`, exact). Sums of values of mixed magnitudes tell any other grouping
    // apart: shapes for each plan, one long run and many (split into pieces), runs that fit a
    // block (and runs of 7, whose maxima are folded sixteen runs at a time), and a kernel too
    // small to split.
    let mut rng = rng(12);
    for shape in [
        &[40_000usize][..],
        &[3, 20_001],
        &[40, 1000],
        &[5000, 7],
        &[7, 3001],
        &[5, 70],
    ] {
        let values = (0..shape.iter().product::<usize>())
            .map(|_| rng.random_range(-1.0f32..1.0) * 10f32.powi(rng.random_range(-4..5)))
            .collect();
        let x = LazyBuffer::from_vec(values, shape).unwrap();
        let computed = x.mul(&LazyBuffer::full(&[], 1.0).expand(shape));
        let last = shape.len() - 1;
        for op in REDUCE {
            for axes in [vec![last], (0..shape.len()).collect()] {
                let (stored, fused) = (x.reduce(op, &axes).to_vec(), computed.reduce(op, &axes).to_vec());
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&stored), bits(&fused), "{op:?} over {axes:?} of {shape:?}");
            }
        }
    }
}

#[test]
fn column_reductions_wider_than_a_tile_keep_their_order() {
    // Kept rows whose accumulators outgrow L1 are folded a tile of columns at a time (they then
    // stay in L1), each output still over its reduced rows in order. Rows of 1e30, -1e30
    // and a small v make that order visible in the sums: in order, 1e30 - 1e30 + v is v (the
    // reference's); backwards, v - 1e30 rounds to -1e30 and the sum to 0. Odd columns hold +0,
    // -0 and -v, whose maximum is the later zero. Plain and sliced (strided) leaves; ragged
    // last tiles; several slabs.
    // Rows of 12,289 values and more: past where sums (8 bytes each) and maxima (4) go by tiles.
    for (shape, axes) in [
        (&[3usize, 12_289][..], &[0usize][..]),
        (&[2, 3, 13_000], &[1]),
        (&[6, 2, 12_300], &[0, 1]),
    ] {
        let inner: usize = shape[axes[axes.len() - 1] + 1..].iter().product();
        let rows: usize = axes.iter().map(|&a| shape[a]).product();
        let value = |i: usize| {
            let (row, column) = (i / inner % rows, i % inner);
            let v = 1.0 + column as f32 / 1024.0;
            match (row % 3, column % 2) {
                (0, 0) => 1e30,
                (1, 0) => -1e30,
                (_, 0) => v,
                (0, _) => 0.0,
                (1, _) => -0.0,
                _ => -v,
            }
        };
        let n = numel(shape);
        let plain = LazyBuffer::from_vec((0..n).map(value).collect(), shape).unwrap();
        // The same values inside a buffer two columns wider on each side: rows read strided.
        let last = shape.len() - 1;
        let mut wide_shape = shape.to_vec();
        wide_shape[last] += 4;
        let wide: Vec<f32> = (0..numel(&wide_shape))
            .map(|i| {
                let (row, column) = (i / wide_shape[last], i % wide_shape[last]);
                let inside = (2..shape[last] + 2).contains(&column);
                if inside {
                    value(row * shape[last] + column - 2)
                } else {
                    f32::NAN
                }
            })
            .collect();
        let mut window: Vec<(usize, usize)> = shape.iter().map(|&d| (0, d)).collect();
        window[last] = (2, shape[last] + 2);
        let sliced = LazyBuffer::from_vec(wide, &wide_shape).unwrap().shrink(&window);
        for (name, x) in [("plain", &plain), ("sliced", &sliced)] {
            for op in REDUCE {
                let y = x.reduce(op, axes);
                check_exact(&format!("{op:?} over {axes:?} of {name} {shape:?}"), &y);
            }
        }
    }
}

/// A fused column reduction whose rows are longer than a quarter of a block computes several rows
/// before adding them up (so each chunk of sums stays in registers across them), also a tile of
/// columns at a time where rows are longer still: each output still takes its values in row
/// order, bit for bit as a plain sequential fold of the kernel's values (sums in f64). Values of
/// binades 2^-30 to 2^29 and both signs, so f64 sums round and their order shows; rows of 513 to
/// 13,000 values, row counts that the pieces do not divide, and groups (a middle axis).
#[test]
fn fused_column_reductions_of_long_rows_keep_their_order() {
    let mut rng = rng(21);
    let mut spread = |shape: &[usize]| {
        let values = (0..numel(shape))
            .map(|_| {
                let b: u32 = rng.random();
                f32::from_bits((b & 0x807F_FFFF) | ((97 + (b >> 8) % 60) << 23))
            })
            .collect();
        LazyBuffer::from_vec(values, shape).unwrap()
    };
    for (shape, axes) in [
        (&[9usize, 513][..], &[0usize][..]),
        (&[5, 1000], &[0]),
        (&[3, 1024], &[0]),
        (&[1, 1024], &[0]),
        (&[7, 4100], &[0]),
        (&[2, 5, 1030], &[1]),
        (&[3, 2, 600], &[0, 1]),
        // Rows past where sums (and maxima) go a tile of columns at a time.
        (&[6, 13_000], &[0]),
        (&[2, 5, 7000], &[1]),
    ] {
        // Leaves read in order (a broadcast one would have the kernel iterate in its order).
        let (x, y) = (spread(shape), spread(shape));
        let fused = || x.mul(&y).sub(&x);
        let values = fused().to_vec();
        let (first, last) = (axes[0], axes[axes.len() - 1]);
        let rows: usize = shape[first..=last].iter().product();
        let inner: usize = shape[last + 1..].iter().product();
        for op in REDUCE {
            let got = fused().reduce(op, axes).to_vec();
            for (o, &g) in got.iter().enumerate() {
                let (group, column) = (o / inner, o % inner);
                let run = (0..rows).map(|r| values[(group * rows + r) * inner + column]);
                let want = match op {
                    ReduceOp::Sum => run.fold(0.0f64, |acc, v| acc + v as f64) as f32,
                    ReduceOp::Max => run.fold(f32::NEG_INFINITY, |acc, v| if acc > v { acc } else { v }),
                    ReduceOp::Min => run.fold(f32::INFINITY, |acc, v| if acc < v { acc } else { v }),
                };
                assert_eq!(
                    g.to_bits(),
                    want.to_bits(),
                    "{op:?} over {axes:?} of {shape:?}, output {o}"
                );
            }
        }
    }
}

/// A reduction of a permuted view runs over its axes in the buffer's order where that keeps the
/// kept axes in their order: every permutation of a rank-3 buffer, every axis set, large enough
/// for a reduction split into pieces, and with a second leaf read in the logical order.
#[test]
fn reductions_of_permuted_views() {
    let mut rng = rng(9);
    let stored = [3usize, 4, 5];
    let orders = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];
    for order in orders {
        let x = leaf(&mut rng, &stored, Values::Uniform(-3.0, 3.0)).permute(&order);
        for op in REDUCE {
            for axes in axis_sets(3) {
                check_reduce(
                    &format!("{op:?} over {axes:?} of permute {order:?}"),
                    &x,
                    op,
                    &axes,
                );
            }
        }
    }
    // 60,000 values: split into pieces across threads; the reduced axis long or short.
    let big = leaf(&mut rng, &[300, 200], Values::Uniform(-3.0, 3.0)).permute(&[1, 0]);
    for axes in [&[0usize][..], &[1], &[0, 1]] {
        for op in REDUCE {
            check_reduce(
                &format!("{op:?} over {axes:?} of a 200 × 300 transpose"),
                &big,
                op,
                axes,
            );
        }
    }
    // Two leaves, one transposed and one not: the reduction of their product.
    let y = leaf(&mut rng, &[200, 300], Values::Uniform(-3.0, 3.0));
    check_reduce("sum of xᵀ·y over [1]", &big.mul(&y), ReduceOp::Sum, &[1]);
}

#[test]
fn reduce_axes_in_any_order_and_repeated_are_one_set() {
    let x = leaf(&mut rng(9), &[2, 3, 4], Values::Uniform(-3.0, 3.0));
    let want = x.sum(&[0, 2]).to_vec();
    for axes in [&[2, 0][..], &[0, 2, 0], &[2, 2, 0, 0]] {
        let y = x.sum(axes);
        assert_eq!(y.shape(), &[1, 3, 1], "{axes:?}");
        assert_eq!(y.to_vec(), want, "{axes:?}");
    }
    let out_of_range = std::panic::catch_unwind(|| x.sum(&[0, 3]));
    let message = *out_of_range
        .expect_err("axis 3 of a rank-3 buffer")
        .downcast::<String>()
        .unwrap();
    assert_eq!(message, "reduce: axis 3 out of range for shape [2, 3, 4]");
}

#[test]
fn reductions_over_axes_of_one_return_each_value() {
    // A reduction over axes of size 1 folds one value per output: max and min give it back bit
    // for bit (NaN and -0 too), and a sum adds it to the identity `+0`, so -0 comes out +0 (as in
    // PyTorch). Contiguous, through a permuted view, and large enough for threads.
    let values = [
        -0.0,
        0.0,
        1.5,
        -2.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1e-40,
        -3e38,
        7.0,
        -1.0,
        2.5,
    ];
    let contiguous = LazyBuffer::from_vec(values.to_vec(), &[4, 1, 3]).unwrap();
    let permuted = LazyBuffer::from_vec(values.to_vec(), &[3, 1, 4])
        .unwrap()
        .permute(&[2, 1, 0]);
    let large = leaf(&mut rng(10), &[3000, 1, 70], Values::Uniform(-3.0, 3.0));
    for (name, x) in [
        ("contiguous", contiguous),
        ("permuted", permuted),
        ("large", large),
    ] {
        let xs = x.to_vec();
        for op in REDUCE {
            let y = x.reduce(op, &[1]);
            assert_eq!(y.shape(), x.shape(), "{op:?} of {name}");
            for (i, (&got, &x)) in y.to_vec().iter().zip(&xs).enumerate() {
                let want = if op == ReduceOp::Sum { x + 0.0 } else { x };
                let same = got.to_bits() == want.to_bits() || got.is_nan() && want.is_nan();
                assert!(
                    same,
                    "{op:?} over [1] of {name}, element {i}: {got:e}, want {want:e}"
                );
            }
        }
        // Beside a longer reduced axis, the axis of one changes nothing.
        let bits = |y: LazyBuffer| y.to_vec().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(x.max(&[0, 1])), bits(x.max(&[0])), "{name}");
    }
}

#[test]
fn permuted_views_whose_axes_step_as_one() {
    // `[8, 2, 3000]` read as `[3000, 8, 2]`: its last two axes step through memory as one of 16
    // (so the kernel copies it by tiles rather than value by value), beside a contiguous leaf
    // whose axes merge too, and reduced over axes that merge or do not.
    let mut rng = rng(11);
    let x = leaf(&mut rng, &[8, 2, 3000], Values::Uniform(-3.0, 3.0)).permute(&[2, 0, 1]);
    let y = leaf(&mut rng, &[3000, 8, 2], Values::Uniform(-3.0, 3.0));
    check_exact("neg of the permuted view", &x.unary(UnaryOp::Neg));
    check_exact("the permuted view plus a contiguous one", &x.add(&y));
    for op in REDUCE {
        for axes in [&[0usize][..], &[1], &[2], &[1, 2], &[0, 1, 2]] {
            check_reduce(
                &format!("{op:?} over {axes:?} of the permuted view"),
                &x,
                op,
                axes,
            );
        }
    }
}

/// Every reduction over every axis set of every view of each shape, against the reference.
fn check_reductions_of(rng: &mut StdRng, shapes: &[&[usize]]) {
    for &shape in shapes {
        for (name, x) in views(rng, shape, Values::Uniform(-3.0, 3.0)) {
            for op in REDUCE {
                for axes in axis_sets(shape.len()) {
                    check_reduce(
                        &format!("{op:?} over {axes:?} of {name} {shape:?}"),
                        &x,
                        op,
                        &axes,
                    );
                }
            }
        }
    }
}

#[test]
fn reduction_of_a_fused_chain() {
    // exp and the sum run in one kernel; exp has ≤ 2 ulp error, so each term carries relative
    // error ≤ 2·EPS on top of the n-term sum bound: (n + 2)·EPS·Σ|exp x|.
    let mut rng = rng(7);
    for (name, x) in views(&mut rng, &[4, 300], Values::Uniform(-2.0, 2.0)) {
        for axes in axis_sets(2) {
            let e = x.unary(UnaryOp::Exp);
            let y = e.sum(&axes);
            let want = reference::evaluate(&y);
            let magnitude = reference::evaluate(&e.unary(UnaryOp::Abs).sum(&axes));
            let n: usize = axes.iter().map(|&a| x.shape()[a]).product();
            let got = y.to_vec();
            assert_close(&format!("sum of exp over {axes:?} of {name}"), &got, &want, |i| {
                (n + 2) as f64 * EPS * magnitude[i]
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Matmul

/// `a [.., m, k] · b [.., k, n]` checked with `k·EPS·Σ|a||b|` per output.
fn check_matmul(what: &str, a: &LazyBuffer, b: &LazyBuffer) {
    let y = a.matmul(b);
    let want = reference::evaluate(&y);
    let magnitude = reference::evaluate(&a.unary(UnaryOp::Abs).matmul(&b.unary(UnaryOp::Abs)));
    let k = a.shape()[a.shape().len() - 1];
    let got = y.to_vec();
    assert_close(what, &got, &want, |i| k as f64 * EPS * magnitude[i]);
}

fn swap_last_two(rank: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..rank).collect();
    order.swap(rank - 1, rank - 2);
    order
}

#[test]
fn matmul_layouts_and_shapes() {
    let mut rng = rng(8);
    let v = Values::Uniform(-2.0, 2.0);
    // The five after `64x70x65` take the small-product path on AVX-512 (C more than 16 wide one
    // way, k up to 64, or 128 when that way is at most 32 wide): full and ragged column tiles, C
    // wide only in its transpose, a deep narrow product, and a batch. `64x70x65` and the last two
    // take packed panels of B where A is read by rows (C at least 32 wide): a ragged last panel,
    // rows left over by the 8-row tile, sgemm's depth blocks of 256, and a batch. The last three
    // are a matrix times a vector (run as its transpose on panels), a vector times a matrix
    // (panels read in place) and a batch of matrix-vector products.
    let cases: [(&[usize], usize, usize, usize); 21] = [
        (&[], 1, 1, 1),
        (&[], 3, 4, 5),
        (&[], 1, 7, 1),
        (&[], 5, 1, 3),
        (&[], 17, 33, 9),
        (&[], 64, 70, 65),
        (&[], 19, 64, 70),
        (&[], 6, 17, 33),
        (&[], 40, 5, 3),
        (&[], 10, 128, 24),
        (&[3], 2, 16, 18),
        (&[2], 3, 4, 5),
        (&[2, 3], 4, 2, 3),
        (&[1, 2], 1, 5, 1),
        (&[], 0, 3, 2),
        (&[], 3, 0, 2),
        (&[], 9, 300, 40),
        (&[2], 12, 100, 64),
        (&[], 70, 300, 1),
        (&[], 1, 300, 70),
        (&[2], 40, 520, 1),
    ];
    for (batch, m, k, n) in cases {
        let shape = |r: usize, c: usize| [batch, &[r, c]].concat();
        let rank = batch.len() + 2;
        let t = swap_last_two(rank);
        let what = |layout: &str| format!("{layout} {batch:?} {m}x{k}x{n}");

        let (a, b) = (leaf(&mut rng, &shape(m, k), v), leaf(&mut rng, &shape(k, n), v));
        check_matmul(&what("plain"), &a, &b);
        // Transposed operands: leaves stored [.., k, m] and [.., n, k], read through a permute.
        let at = leaf(&mut rng, &shape(k, m), v).permute(&t);
        let bt = leaf(&mut rng, &shape(n, k), v).permute(&t);
        check_matmul(&what("a transposed"), &at, &b);
        check_matmul(&what("b transposed"), &a, &bt);
        check_matmul(&what("both transposed"), &at, &bt);
        // Windows of larger buffers (offsets, row strides longer than the row).
        let window = |r: usize, c: usize| {
            let big = [
                batch.iter().map(|&d| d + 1).collect::<Vec<_>>(),
                vec![r + 2, c + 3],
            ]
            .concat();
            let mut ranges: Vec<(usize, usize)> = batch.iter().map(|&d| (1, 1 + d)).collect();
            ranges.extend([(1, 1 + r), (2, 2 + c)]);
            (big, ranges)
        };
        let (big, ranges) = window(m, k);
        let aw = leaf(&mut rng, &big, v).shrink(&ranges);
        let (big, ranges) = window(k, n);
        let bw = leaf(&mut rng, &big, v).shrink(&ranges);
        check_matmul(&what("shrunk operands"), &aw, &bw);
        // Padded operands (copied out before sgemm): zero rows and columns.
        let mut pads = vec![(0, 0); batch.len()];
        pads.extend([(1, 0), (0, 2)]);
        let ap = leaf(&mut rng, &shape(m, k), v).pad(&pads);
        let bp = leaf(&mut rng, &shape(k + 2, n + 1), v);
        check_matmul(&what("padded a"), &ap, &bp);
        // Pending operands: elementwise producers are realized before the product.
        let ae = a.mul(&a).sub(&a);
        let be = bt.unary(UnaryOp::Neg);
        check_matmul(&what("pending operands"), &ae, &be);
        // Matmul of a matmul (x xᵀ) x.
        let xxt = a.matmul(&a.permute(&t));
        check_matmul(&what("product of a product"), &xxt, &a);
    }
}

#[test]
fn matmul_with_broadcast_batch() {
    // One [m, k] matrix expanded across a batch (stride 0 batch axis) times a batched b.
    let mut rng = rng(9);
    let v = Values::Uniform(-2.0, 2.0);
    let a = leaf(&mut rng, &[1, 4, 3], v).expand(&[5, 4, 3]);
    let b = leaf(&mut rng, &[5, 3, 6], v);
    check_matmul("expanded a", &a, &b);
    let b1 = leaf(&mut rng, &[3, 6], v).expand(&[5, 3, 6]);
    check_matmul("expanded b (rank-lifted)", &a, &b1);
    // An expanded column: every k step reads the same element.
    let col = leaf(&mut rng, &[4, 1], v).expand(&[4, 9]);
    let c = leaf(&mut rng, &[9, 2], v);
    check_matmul("expanded inner axis", &col, &c);
    // The same three, wide enough for the small-product path.
    let a = leaf(&mut rng, &[1, 20, 16], v).expand(&[5, 20, 16]);
    let b = leaf(&mut rng, &[5, 16, 40], v);
    check_matmul("expanded a, small-product path", &a, &b);
    let b1 = leaf(&mut rng, &[16, 40], v).expand(&[5, 16, 40]);
    check_matmul("expanded b, small-product path", &a, &b1);
    let col = leaf(&mut rng, &[20, 1], v).expand(&[20, 16]);
    let rows = leaf(&mut rng, &[1, 33], v).expand(&[16, 33]);
    check_matmul("expanded inner axis and rows, small-product path", &col, &rows);
}

// ---------------------------------------------------------------------------------------------
// Movement and copies (exact)

#[derive(Clone, Debug)]
enum Move {
    Reshape(Vec<usize>),
    Permute(Vec<usize>),
    Expand(Vec<usize>),
    Pad(Vec<(usize, usize)>),
    Shrink(Vec<(usize, usize)>),
    Contiguous,
}

fn apply(x: &LazyBuffer, moves: &[Move]) -> LazyBuffer {
    moves.iter().fold(x.clone(), |x, m| match m {
        Move::Reshape(s) => x.reshape(s),
        Move::Permute(o) => x.permute(o),
        Move::Expand(s) => x.expand(s),
        Move::Pad(p) => x.pad(p),
        Move::Shrink(r) => x.shrink(r),
        Move::Contiguous => x.contiguous(),
    })
}

fn movement_chains() -> Vec<(Vec<usize>, Vec<Move>)> {
    use Move::*;
    vec![
        (vec![2, 3, 4], vec![Permute(vec![2, 0, 1])]),
        (
            vec![2, 3, 4],
            vec![Reshape(vec![6, 4]), Reshape(vec![4, 6]), Reshape(vec![24])],
        ),
        // A permute then a reshape that merges the permuted axes needs a copy.
        (vec![2, 3, 4], vec![Permute(vec![1, 0, 2]), Reshape(vec![6, 4])]),
        (vec![2, 3, 4], vec![Permute(vec![2, 1, 0]), Reshape(vec![24])]),
        (
            vec![2, 3, 4],
            vec![Permute(vec![0, 2, 1]), Reshape(vec![2, 4, 1, 3])],
        ),
        (vec![3, 1, 4], vec![Expand(vec![3, 5, 4])]),
        (vec![4], vec![Expand(vec![2, 3, 4]), Permute(vec![2, 0, 1])]),
        (vec![3, 1], vec![Expand(vec![3, 4]), Reshape(vec![12])]),
        (vec![3, 1], vec![Expand(vec![3, 4]), Reshape(vec![3, 2, 2])]),
        (vec![2, 3, 4], vec![Pad(vec![(1, 2), (0, 1), (2, 0)])]),
        (vec![2, 3, 4], vec![Shrink(vec![(1, 2), (0, 3), (1, 3)])]),
        // Into and out of the padding.
        (
            vec![3, 4],
            vec![Pad(vec![(2, 1), (1, 1)]), Shrink(vec![(1, 4), (0, 3)])],
        ),
        (
            vec![3, 4],
            vec![Shrink(vec![(1, 3), (1, 2)]), Pad(vec![(0, 2), (3, 0)])],
        ),
        (
            vec![3, 4],
            vec![Pad(vec![(1, 0), (0, 1)]), Pad(vec![(0, 1), (2, 0)])],
        ),
        // Padded then reshaped: adding unit axes keeps the view, merging copies.
        (
            vec![3, 4],
            vec![Pad(vec![(1, 1), (0, 0)]), Reshape(vec![1, 5, 1, 4])],
        ),
        (vec![3, 4], vec![Pad(vec![(1, 1), (0, 1)]), Reshape(vec![25])]),
        (
            vec![3, 4],
            vec![
                Pad(vec![(0, 0), (1, 1)]),
                Permute(vec![1, 0]),
                Reshape(vec![2, 9]),
            ],
        ),
        (vec![3, 1], vec![Pad(vec![(1, 0), (0, 0)]), Expand(vec![4, 3])]),
        (
            vec![3, 1],
            vec![
                Pad(vec![(0, 0), (1, 0)]),
                Shrink(vec![(0, 3), (0, 1)]),
                Expand(vec![3, 5]),
            ],
        ),
        (
            vec![2, 3],
            vec![Permute(vec![1, 0]), Contiguous, Reshape(vec![6])],
        ),
        (vec![2, 3], vec![Contiguous]),
        // Windows, then expanded again.
        (
            vec![4, 1, 6],
            vec![
                Shrink(vec![(1, 3), (0, 1), (2, 5)]),
                Expand(vec![2, 3, 3]),
                Permute(vec![1, 2, 0]),
            ],
        ),
        // Scalars.
        (vec![], vec![Reshape(vec![1, 1]), Expand(vec![2, 3])]),
        (vec![], vec![Expand(vec![4]), Pad(vec![(1, 1)])]),
        (vec![1, 1], vec![Reshape(vec![])]),
        (
            vec![1],
            vec![Pad(vec![(2, 0)]), Shrink(vec![(2, 3)]), Reshape(vec![])],
        ),
        // Zero-size axes.
        (vec![0, 3], vec![Reshape(vec![3, 0]), Permute(vec![1, 0])]),
        (vec![0, 3], vec![Pad(vec![(2, 0), (0, 1)])]),
        (vec![2, 3], vec![Shrink(vec![(1, 1), (0, 3)])]),
        (vec![2, 3], vec![Shrink(vec![(1, 1), (0, 3)]), Reshape(vec![0])]),
        (
            vec![2, 3],
            vec![Shrink(vec![(0, 2), (2, 2)]), Pad(vec![(0, 0), (1, 1)])],
        ),
        (vec![0, 1], vec![Expand(vec![0, 4])]),
        (vec![3, 0], vec![Permute(vec![1, 0]), Contiguous]),
    ]
}

#[test]
fn movement_chains_are_exact() {
    let mut rng = rng(10);
    for (shape, moves) in movement_chains() {
        let x = leaf(&mut rng, &shape, Values::Uniform(-3.0, 3.0));
        let what = format!("{moves:?} of {shape:?}");
        // On a realized leaf, on a pending node, and feeding a consumer (the view composes into
        // the consumer's kernel or forces its producer to a buffer).
        let on_leaf = apply(&x, &moves);
        check_exact(&format!("{what} of a leaf"), &on_leaf);
        let on_pending = apply(&x.unary(UnaryOp::Neg), &moves);
        check_exact(&format!("{what} of a pending node"), &on_pending);
        let doubled = apply(&x.add(&x), &moves);
        let consumed = doubled.add(&doubled).unary(UnaryOp::Neg);
        check_exact(&format!("{what} consumed"), &consumed);
    }
}

#[test]
fn gelu_within_its_bound_through_every_view() {
    // GELU is x·Φ(x) with Φ = erf(x/√2)·0.5 + 0.5. erf is within 5.9 ulp, so 3.5e-7 absolute
    // (its docs), which ·0.5 halves; the rounding of x/√2 moves erf by at most
    // erf'(u)·|u|·2^-24 <= 0.49·6e-8; + 0.5 rounds by at most 3e-8. So Φ is within 3e-7
    // absolute, and the product adds half an ulp: |x|·3e-7 + EPS·|y|, or half the smallest
    // subnormal below the normal range, bounds each value against the reference's exact erf.
    // Padding reads as x = 0, whose GELU is 0.
    let bound = |x: f64, y: f64| 3e-7 * x.abs() + EPS * y.abs() + f32::from_bits(1) as f64 / 2.0;
    let check = |what: &str, x: &LazyBuffer| {
        let y = x.unary(UnaryOp::Gelu);
        let (xs, want) = (reference::evaluate(x), reference::evaluate(&y));
        assert_close(what, &y.to_vec(), &want, |i| bound(xs[i], want[i]));
    };
    let mut rng = rng(16);
    for shape in SHAPES {
        for (name, x) in views(&mut rng, shape, Values::Uniform(-6.0, 6.0)) {
            let padding = vec![(1, 2); shape.len()];
            check(&format!("Gelu of {name} {shape:?}"), &x);
            check(&format!("Gelu of {name} {shape:?}, padded"), &x.pad(&padding));
        }
    }
    // Every f32 of both signs where the error comes nearest the bound: where erf's is largest
    // (x/√2 near 3.74) and where its argument reaches the clamp (x/√2 = 3.925); and subnormals.
    for (from, to) in [
        (5.25f32, 5.32f32),
        (5.52, 5.58),
        (f32::from_bits(1), f32::from_bits(5000)),
    ] {
        let values: Vec<f32> = (from.to_bits()..=to.to_bits())
            .map(f32::from_bits)
            .flat_map(|x| [x, -x])
            .collect();
        let n = values.len();
        check(
            &format!("Gelu over [{from:e}, {to:e}]"),
            &LazyBuffer::from_vec(values, &[n]).unwrap(),
        );
    }
}

#[test]
fn padding_of_a_pending_node_reads_as_zero() {
    // A consumer that fuses a padded pending node must see +0 in the padding, not the op applied
    // to the padding (exp(0) = 1, recip(0) = inf, neg(0) = -0, 0^0 = 1, ...). Tolerances as for a
    // single op of each kind: an add of two equal values, a max and a pad are exact, so the
    // single op's own bound carries over (scaled by 2 for the doubling, which is exact).
    let mut rng = rng(13);
    let x = leaf(&mut rng, &[3, 4], Values::Uniform(0.25, 2.0));
    let z = leaf(&mut rng, &[3, 4], Values::Uniform(0.25, 2.0));
    let mut cases: Vec<(String, LazyBuffer, Option<f64>)> = relative_unary_ops()
        .map(|op| (format!("{op:?}"), x.unary(op), unary_ulps(op)))
        .collect();
    cases.extend(
        BinaryOp::ALL
            .iter()
            .map(|&op| (format!("{op:?}"), x.binary(op, &z), binary_ulps(op))),
    );
    cases.push((
        "where".into(),
        x.where_(&z, &LazyBuffer::full(&[3, 4], 5.0)),
        None,
    ));
    for (name, y, ulps) in cases {
        let padded = y.pad(&[(1, 2), (2, 0)]);
        // Consumed elementwise, padded twice, and reduced.
        let doubled = padded.add(&padded);
        let twice = y
            .pad(&[(1, 0), (0, 1)])
            .unary(UnaryOp::Neg)
            .pad(&[(0, 1), (1, 1)]);
        let twice = twice.binary(BinaryOp::Max, &twice);
        for (what, out) in [("doubled", &doubled), ("padded twice", &twice)] {
            check_relative(&format!("{name} padded, {what}"), out, ulps);
        }
        // The padding adds exact zeros, so the sum's bound is that of the unpadded values plus the
        // op's own relative error on each term.
        let sum = padded.sum(&[0, 1]);
        let want = reference::evaluate(&sum);
        let magnitude = reference::evaluate(&padded.unary(UnaryOp::Abs).sum(&[0, 1]));
        let n = 12.0 + ulps.unwrap_or(0.0);
        assert_close(&format!("{name} padded, summed"), &sum.to_vec(), &want, |i| {
            n * EPS * magnitude[i]
        });
    }
}

#[test]
fn views_of_views_across_realized_and_pending_nodes() {
    // The same pending node seen through several views by one consumer, each composing
    // differently with the node's own input views.
    let mut rng = rng(11);
    let x = leaf(&mut rng, &[4, 6], Values::Ints(-9, 9));
    let p = x.permute(&[1, 0]).add(&x.permute(&[1, 0])); // [6, 4], pending
    let a = p.shrink(&[(1, 5), (0, 4)]); // [4, 4]
    let b = p.permute(&[1, 0]).shrink(&[(0, 4), (2, 6)]); // [4, 4]
    let c = p
        .reshape(&[2, 3, 4])
        .shrink(&[(1, 2), (0, 3), (0, 4)])
        .pad(&[(0, 0), (1, 0), (0, 0)]); // [1, 4, 4]
    let y = a.add(&b).sub(&c.reshape(&[4, 4]));
    check_exact("three views of one pending node", &y);
}

// ---------------------------------------------------------------------------------------------
// Bad input, IEEE special values, empty tensors

#[test]
fn from_vec_with_the_wrong_length_names_both_lengths() {
    let err = LazyBuffer::from_vec(vec![1.0; 5], &[2, 3]).unwrap_err();
    assert_eq!(
        err,
        Error::LengthMismatch {
            shape: vec![2, 3],
            expected: 6,
            got: 5
        }
    );
    let text = err.to_string();
    assert!(
        text.contains('5') && text.contains('6') && text.contains("[2, 3]"),
        "{text}"
    );
    let err = LazyBuffer::from_vec(vec![], &[]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::LengthMismatch {
                expected: 1,
                got: 0,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(LazyBuffer::from_vec(vec![], &[3, 0]).is_ok());
    assert!(LazyBuffer::from_vec(vec![1.0], &[]).is_ok());
}

fn lb(values: &[f32]) -> LazyBuffer {
    LazyBuffer::from_vec(values.to_vec(), &[values.len()]).unwrap()
}

/// Runs `y` as a kernel (it is pending) and checks every element against the rule's values,
/// bit for bit (any NaN for NaN), and against the reference evaluator.
fn check_rule(rule: &str, y: &LazyBuffer, expected: &[f32]) {
    assert!(!y.is_realized(), "{rule}: must run through a kernel");
    let want = reference::evaluate(y);
    let got = y.to_vec();
    assert_exact(&format!("{rule} (reference)"), &got, &want);
    let expected: Vec<f64> = expected.iter().map(|&e| e as f64).collect();
    assert_exact(rule, &got, &expected);
}

#[test]
fn ieee_rules_of_elementwise_ops() {
    let (nan, inf) = (f32::NAN, f32::INFINITY);
    let x = lb(&[0.0, -0.0, -1.0, nan, inf, -inf, 2.0]);
    check_rule(
        "log(0) = -inf, log(-1) = NaN",
        &x.unary(UnaryOp::Log),
        &[-inf, -inf, nan, nan, inf, nan, 2f32.ln()],
    );
    check_rule(
        "recip(0) = inf",
        &x.unary(UnaryOp::Recip),
        &[inf, -inf, -1.0, nan, 0.0, -0.0, 0.5],
    );
    check_rule(
        "sqrt(-1) = NaN",
        &x.unary(UnaryOp::Sqrt),
        &[0.0, -0.0, nan, nan, inf, nan, 2f32.sqrt()],
    );
    check_rule(
        "relu: NaN stays NaN",
        &x.unary(UnaryOp::Relu),
        &[0.0, -0.0, 0.0, nan, inf, 0.0, 2.0],
    );
    // exp(-1) and exp(2) as f64 rounded to f32: the engine's exp is within 1 ulp, here exact.
    let (em1, e2) = ((-1f64).exp() as f32, 2f64.exp() as f32);
    check_rule(
        "exp(±inf)",
        &x.unary(UnaryOp::Exp),
        &[1.0, 1.0, em1, nan, inf, 0.0, e2],
    );
    check_rule(
        "neg propagates NaN",
        &x.unary(UnaryOp::Neg),
        &[-0.0, 0.0, 1.0, nan, -inf, inf, -2.0],
    );
    check_rule(
        "sigmoid saturates",
        &lb(&[-1000.0, 1000.0, nan, -inf, inf]).unary(UnaryOp::Sigmoid),
        &[0.0, 1.0, nan, 0.0, 1.0],
    );

    // NaN propagates through arithmetic, max and min, from either side.
    let a = lb(&[nan, 1.0, nan, inf, inf, 0.0]);
    let b = lb(&[1.0, nan, nan, -inf, inf, 0.0]);
    check_rule("add", &a.add(&b), &[nan, nan, nan, nan, inf, 0.0]);
    check_rule("sub", &a.sub(&b), &[nan, nan, nan, inf, nan, 0.0]);
    check_rule("mul", &a.mul(&b), &[nan, nan, nan, -inf, inf, 0.0]);
    check_rule("div", &a.div(&b), &[nan, nan, nan, nan, nan, nan]);
    check_rule(
        "max: NaN if either is NaN",
        &a.binary(BinaryOp::Max, &b),
        &[nan, nan, nan, inf, inf, 0.0],
    );
    check_rule(
        "min: NaN if either is NaN",
        &a.binary(BinaryOp::Min, &b),
        &[nan, nan, nan, -inf, inf, 0.0],
    );
    // Comparisons with NaN are false.
    check_rule(
        "lt",
        &a.binary(BinaryOp::CmpLt, &b),
        &[0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    );
    check_rule(
        "le",
        &a.binary(BinaryOp::CmpLe, &b),
        &[0.0, 0.0, 0.0, 0.0, 1.0, 1.0],
    );
    check_rule(
        "eq: NaN != NaN",
        &a.binary(BinaryOp::CmpEq, &b),
        &[0.0, 0.0, 0.0, 0.0, 1.0, 1.0],
    );
    check_rule(
        "gt via lt swapped",
        &b.binary(BinaryOp::CmpLt, &a),
        &[0.0, 0.0, 0.0, 1.0, 0.0, 0.0],
    );
    // where selects on `cond != 0`: NaN is not 0, -0 is.
    let cond = lb(&[nan, -0.0, 0.0, 1.0, -inf, 0.5]);
    let one = LazyBuffer::full(&[6], 1.0);
    let two = LazyBuffer::full(&[6], 2.0);
    check_rule(
        "where: NaN != 0 selects a, -0 == 0 selects b",
        &cond.where_(&one, &two),
        &[1.0, 2.0, 2.0, 1.0, 1.0, 1.0],
    );
}

#[test]
fn ieee_rules_of_reductions() {
    let (nan, inf) = (f32::NAN, f32::INFINITY);
    // Each row is one case; the documented results per row.
    let rows: [[f32; 4]; 5] = [
        [inf, -inf, 1.0, 2.0],
        [1.0, nan, 3.0, -2.0],
        [inf, 1.0, inf, 0.0],
        [-inf, -inf, -1.0, 5.0],
        [nan, inf, -inf, 1.0],
    ];
    let x = LazyBuffer::from_vec(rows.concat(), &[5, 4]).unwrap();
    check_rule(
        "sum: inf + -inf = NaN, NaN propagates",
        &x.sum(&[1]),
        &[nan, nan, inf, -inf, nan],
    );
    check_rule("max: NaN propagates", &x.max(&[1]), &[inf, nan, inf, 5.0, nan]);
    check_rule(
        "min: NaN propagates",
        &x.reduce(ReduceOp::Min, &[1]),
        &[-inf, nan, 0.0, -inf, nan],
    );
    // Fused with an elementwise op, and with the NaN far from the start of a long reduction (its
    // own block), before and after larger values.
    let mut long = vec![1.0f32; 5000];
    long[4000] = nan;
    long[4500] = 7.0;
    long[10] = 9.0;
    let l = LazyBuffer::from_vec(long, &[5000]).unwrap();
    check_rule(
        "max over blocks keeps a late NaN",
        &l.unary(UnaryOp::Abs).max(&[0]),
        &[nan],
    );
    check_rule(
        "min over blocks keeps a late NaN",
        &l.unary(UnaryOp::Neg).reduce(ReduceOp::Min, &[0]),
        &[nan],
    );
    check_rule("sum over blocks keeps a late NaN", &l.add(&l).sum(&[0]), &[nan]);
    let mut split = vec![0.5f32; 5000];
    split[3] = inf;
    split[4990] = -inf;
    let s = LazyBuffer::from_vec(split, &[5000]).unwrap();
    check_rule(
        "sum: inf and -inf in different blocks",
        &s.mul(&s.unary(UnaryOp::Abs)).sum(&[0]),
        &[nan],
    );
    check_rule("max: -inf and inf", &s.max(&[0]), &[inf]);
}

#[test]
fn reductions_over_empty_axes_give_the_identity() {
    // Sum 0, max -inf, min +inf; the output keeps the non-empty axes.
    let x = LazyBuffer::from_vec(vec![], &[3, 0]).unwrap();
    let inf = f32::INFINITY;
    check_rule("sum over an empty axis", &x.sum(&[1]), &[0.0; 3]);
    check_rule("max over an empty axis", &x.max(&[1]), &[-inf; 3]);
    check_rule(
        "min over an empty axis",
        &x.reduce(ReduceOp::Min, &[1]),
        &[inf; 3],
    );
    check_rule("sum over all of an empty tensor", &x.sum(&[0, 1]), &[0.0]);
    check_rule("max over all of an empty tensor", &x.max(&[0, 1]), &[-inf]);
    // Over the non-empty axis: still empty.
    let y = x.sum(&[0]);
    assert_eq!(y.shape(), &[1, 0]);
    assert_eq!(y.to_vec(), Vec::<f32>::new());
    // Through a fused chain and a strided view.
    let z = LazyBuffer::from_vec(vec![], &[0, 4])
        .unwrap()
        .permute(&[1, 0])
        .unary(UnaryOp::Exp);
    check_rule("fused exp then sum over an empty axis", &z.sum(&[1]), &[0.0; 4]);
    check_rule("fused exp then max over an empty axis", &z.max(&[1]), &[-inf; 4]);
}

#[test]
fn empty_tensors_through_every_op() {
    let e = LazyBuffer::from_vec(vec![], &[2, 0, 3]).unwrap();
    let f = LazyBuffer::from_vec(vec![], &[2, 0, 3]).unwrap();
    let empty = |what: &str, y: LazyBuffer, shape: &[usize]| {
        assert_eq!(y.shape(), shape, "{what}: shape");
        let want = reference::evaluate(&y);
        let got = y.to_vec();
        assert_exact(what, &got, &want);
        assert_eq!(got.len(), numel(shape), "{what}");
    };
    for &op in UnaryOp::ALL {
        empty(&format!("{op:?}"), e.unary(op), &[2, 0, 3]);
    }
    for &op in BinaryOp::ALL {
        empty(&format!("{op:?}"), e.binary(op, &f), &[2, 0, 3]);
    }
    empty("where", e.where_(&f, &e), &[2, 0, 3]);
    for op in REDUCE {
        for axes in axis_sets(3) {
            let mut shape = vec![2, 0, 3];
            axes.iter().for_each(|&a| shape[a] = 1);
            empty(&format!("{op:?} over {axes:?}"), e.reduce(op, &axes), &shape);
        }
    }
    // Matmul: m = 0 and n = 0 give empty outputs; k = 0 gives zeros.
    let a = LazyBuffer::from_vec(vec![], &[0, 3]).unwrap();
    let b = LazyBuffer::from_vec(vec![1.0; 6], &[3, 2]).unwrap();
    empty("matmul m = 0", a.matmul(&b), &[0, 2]);
    empty(
        "matmul n = 0",
        b.permute(&[1, 0])
            .matmul(&LazyBuffer::from_vec(vec![], &[3, 0]).unwrap()),
        &[2, 0],
    );
    let k0 = LazyBuffer::from_vec(vec![], &[2, 0]).unwrap();
    let k0b = LazyBuffer::from_vec(vec![], &[0, 3]).unwrap();
    empty("matmul k = 0", k0.matmul(&k0b), &[2, 3]);
    empty(
        "batched matmul with an empty batch",
        e.permute(&[1, 0, 2])
            .matmul(&LazyBuffer::from_vec(vec![], &[0, 3, 1]).unwrap()),
        &[0, 2, 1],
    );
    // Movement.
    empty("reshape", e.reshape(&[0, 6]), &[0, 6]);
    empty("permute", e.permute(&[2, 1, 0]), &[3, 0, 2]);
    empty(
        "expand",
        LazyBuffer::from_vec(vec![], &[0, 1]).unwrap().expand(&[0, 5]),
        &[0, 5],
    );
    empty("pad other axes", e.pad(&[(1, 1), (0, 0), (2, 0)]), &[4, 0, 5]);
    empty("pad the empty axis", e.pad(&[(0, 0), (1, 2), (0, 0)]), &[2, 3, 3]);
    empty("shrink", e.shrink(&[(1, 2), (0, 0), (1, 3)]), &[1, 0, 2]);
    empty("shrink to empty", b.shrink(&[(1, 1), (0, 2)]), &[0, 2]);
    empty("contiguous", e.permute(&[1, 2, 0]).contiguous(), &[0, 3, 2]);
    // Pending ops through views of empty tensors.
    empty(
        "pending then permuted",
        e.add(&f).permute(&[2, 0, 1]).unary(UnaryOp::Exp),
        &[3, 2, 0],
    );
    empty(
        "empty window of a pending node",
        b.add(&b).shrink(&[(0, 3), (1, 1)]),
        &[3, 0],
    );
}

#[test]
fn scalars() {
    let mut rng = rng(12);
    let x = leaf(&mut rng, &[], Values::Uniform(0.5, 2.0));
    let y = leaf(&mut rng, &[], Values::Uniform(0.5, 2.0));
    for op in relative_unary_ops() {
        check_relative(&format!("{op:?} of a scalar"), &x.unary(op), unary_ulps(op));
    }
    for &op in BinaryOp::ALL {
        check_relative(&format!("{op:?} of scalars"), &x.binary(op, &y), binary_ulps(op));
    }
    for op in REDUCE {
        check_exact(&format!("{op:?} of a scalar over no axes"), &x.reduce(op, &[]));
    }
    // A full reduction to a scalar.
    let m = leaf(&mut rng, &[3, 4], Values::Ints(-5, 5));
    check_exact("sum of integers to a scalar", &m.sum(&[0, 1]).reshape(&[]));
    let s = LazyBuffer::full(&[], 3.0);
    check_exact("full scalar times scalar", &s.mul(&x.unary(UnaryOp::Neg)));
    assert_eq!(
        LazyBuffer::full(&[], 3.0).unary(UnaryOp::Neg).to_vec(),
        vec![-3.0]
    );
}

/// One fused kernel of more than 64 instructions: a node read through two views is an
/// instruction per view, so 15 levels of `v = (v + vᵀ)·0.5` after the pair `x·y + y` make a
/// program of 65 instructions from fewer nodes. With AVX2 the first two run as a pair, and the
/// 65th had been taken for the start of one too (a read past the program).
#[test]
fn a_fused_program_longer_than_64_instructions() {
    let n = 12;
    let grid = |k: usize, m: usize| -> Vec<f32> {
        (0..n * n)
            .map(|i| ((i * k % m) as f32) / m as f32 + 0.5)
            .collect()
    };
    let x = LazyBuffer::from_vec(grid(37, 101), &[n, n]).unwrap();
    let y = LazyBuffer::from_vec(grid(53, 97), &[n, n]).unwrap();
    let half = LazyBuffer::full(&[n, n], 0.5);
    let mut v = x.mul(&y).add(&y);
    for _ in 0..15 {
        v = v.add(&v.permute(&[1, 0])).mul(&half);
    }
    for k in 0..3 {
        v = if k % 2 == 0 { v.sub(&y) } else { v.mul(&half) };
    }
    let want = reference::evaluate(&v);
    let before = teenygrad::lazy::stats::get().kernels;
    let got = v.to_vec();
    assert_eq!(
        teenygrad::lazy::stats::get().kernels - before,
        1,
        "one fused kernel"
    );
    // Values of a few units, each op rounded once in f32: about 20 roundings from the f64 value.
    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
        assert!((g as f64 - w).abs() <= 1e-4, "element {i}: {g} against {w}");
    }
}
