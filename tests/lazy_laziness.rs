//! Laziness, fusion, caching and memory of the lazy buffer: nothing runs before a read, chains
//! fuse into one kernel, shared nodes are stored or recomputed by size and repeated instructions
//! run once, realized graphs free their inputs, realizing twice does nothing, and very deep graphs
//! neither overflow the stack when realized, dropped nor printed.
//!
//! `stats` counters are per thread, so they are exact here whatever runs alongside. The count of
//! live nodes (`nodes_alive`) is process-wide: every test in this file (its own process) takes
//! `LOCK`, so no other test creates or drops nodes while one counts them.

use std::sync::{Mutex, MutexGuard};

use teenygrad::lazy::{BinaryOp, LazyBuffer, ReduceOp, UnaryOp, nodes_alive, reference, stats};

static LOCK: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether the library splits large work between threads here: as it counts them,
/// `TEENYGRAD_THREADS` if it is a number, else the machine's available parallelism.
fn splits_work() -> bool {
    let available = std::thread::available_parallelism().map_or(1, |p| p.get());
    let threads = std::env::var("TEENYGRAD_THREADS")
        .ok()
        .and_then(|v| v.parse().ok());
    threads.unwrap_or(available) > 1
}

fn ramp(n: usize, shape: &[usize]) -> LazyBuffer {
    LazyBuffer::from_vec((0..n).map(|i| (i % 17) as f32 * 0.25 - 2.0).collect(), shape).unwrap()
}

/// The 8-op chain of the benchmarks: `((x·2 + 1).relu().exp() - x).sqrt()`, then `·x` and `max`
/// with x.
fn chain8(x: &LazyBuffer) -> LazyBuffer {
    let s = x.shape();
    x.mul(&LazyBuffer::full(s, 2.0))
        .add(&LazyBuffer::full(s, 1.0))
        .unary(UnaryOp::Relu)
        .unary(UnaryOp::Exp)
        .sub(x)
        .unary(UnaryOp::Sqrt)
        .mul(x)
        .binary(BinaryOp::Max, x)
}

/// `|fast - reference| <= 8·EPS·|reference|·…`: a loose sanity bound is enough here: these
/// tests are about what runs, `lazy_ops.rs` checks numerics. Each chain element is ≤ 10 ops of
/// ≤ 2 ulp on values of order 1..e^5, no cancellation near 0 except exact zeros; 64 ulp covers
/// the propagated error with margin.
fn assert_matches_reference(got: &[f32], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let tol = 64.0 * f32::EPSILON as f64 * w.abs().max(1.0);
        assert!(
            (g as f64 - w).abs() <= tol,
            "element {i}: fast {g}, reference {w}"
        );
    }
}

#[test]
fn nothing_runs_before_a_read() {
    let _serial = serial();
    let x = ramp(24, &[2, 3, 4]);
    let w = ramp(20, &[4, 5]);
    stats::reset();
    let graphs = [
        chain8(&x),
        x.sum(&[1]),
        x.max(&[0, 2]),
        x.reshape(&[6, 4]).matmul(&w),
        x.permute(&[2, 0, 1]).contiguous(),
        x.pad(&[(1, 0), (0, 1), (2, 2)]).unary(UnaryOp::Exp),
        x.permute(&[1, 0, 2]).reshape(&[24]),
        chain8(&x)
            .sum(&[0, 1, 2])
            .expand(&[3, 1, 1])
            .add(&LazyBuffer::full(&[3, 1, 1], 1.0)),
    ];
    assert_eq!(stats::get(), stats::Stats::default(), "building ran something");
    assert!(graphs.iter().all(|g| !g.is_realized()));
    for g in &graphs {
        g.to_vec();
    }
    let ran = stats::get();
    assert!(ran.kernels >= graphs.len() as u64, "{ran:?}");
    assert!(graphs.iter().all(LazyBuffer::is_realized));
}

#[test]
fn an_eight_op_chain_into_a_sum_is_one_kernel() {
    let _serial = serial();
    // Contiguous, and through a permuted and a padded view: still one kernel, one output buffer.
    let x = ramp(3000, &[30, 100]);
    for (name, input) in [
        ("contiguous", x.clone()),
        ("permuted", x.permute(&[1, 0])),
        ("padded", x.pad(&[(2, 3), (0, 0)])),
    ] {
        let y = chain8(&input).sum(&[0, 1]);
        let want = reference::evaluate(&y);
        stats::reset();
        let got = y.to_vec();
        let ran = stats::get();
        assert_eq!(ran.kernels, 1, "{name}: {ran:?}");
        // 8 elementwise ops and the sum (a padded input adds one masking step per padded op).
        if name != "padded" {
            assert_eq!(ran.ops_fused, 9, "{name}: {ran:?}");
        }
        assert_eq!(
            ran.bytes_allocated, 4,
            "{name}: only the one-element output: {ran:?}"
        );
        assert_matches_reference(&got, &want);
    }
    // Without the sum: one kernel writing one full-size output.
    let y = chain8(&x);
    let want = reference::evaluate(&y);
    stats::reset();
    let got = y.to_vec();
    let ran = stats::get();
    assert_eq!(
        (ran.kernels, ran.ops_fused, ran.bytes_allocated),
        (1, 8, 3000 * 4),
        "{ran:?}"
    );
    assert_matches_reference(&got, &want);
}

#[test]
fn a_realized_graph_frees_its_inputs() {
    let _serial = serial();
    let base = nodes_alive();
    let x = ramp(12, &[3, 4]);
    let y = x.unary(UnaryOp::Exp); // 1 node
    let z = y.add(&y).permute(&[1, 0]).mul(&x.permute(&[1, 0])); // 2 nodes
    let total = z.sum(&[1]); // 1 node
    assert_eq!(nodes_alive(), base + 5);
    drop(y);
    drop(z);
    assert_eq!(
        nodes_alive(),
        base + 5,
        "pending consumers keep their inputs alive"
    );
    let want = reference::evaluate(&total);
    total.realize();
    assert_eq!(
        nodes_alive(),
        base + 2,
        "only the leaf we hold and the result are left"
    );
    drop(x);
    assert_eq!(nodes_alive(), base + 1, "the result does not hold the leaf");
    assert_matches_reference(&total.to_vec(), &want);
    drop(total);
    assert_eq!(nodes_alive(), base);

    // A handle kept to an intermediate keeps that intermediate (and, as it stays pending, its
    // inputs) alive, but not the rest.
    let x = ramp(12, &[3, 4]);
    let kept = x.unary(UnaryOp::Neg); // 1
    let out = kept.unary(UnaryOp::Exp).sum(&[0]); // 2
    drop(x);
    out.realize();
    assert_eq!(
        nodes_alive(),
        base + 3,
        "out, kept (fused, so still pending) and its leaf"
    );
    assert!(!kept.is_realized());
    drop(kept);
    assert_eq!(nodes_alive(), base + 1);
    drop(out);
    assert_eq!(nodes_alive(), base);

    // Repeated steps over a realized result do not grow the graph (a training loop's shape).
    let mut w = ramp(16, &[4, 4]);
    w.realize();
    let before = nodes_alive();
    for _ in 0..100 {
        let g = w.matmul(&w).unary(UnaryOp::Tanh);
        w = w.sub(&g.mul(&LazyBuffer::full(&[4, 4], 0.01)));
        w.realize();
    }
    assert_eq!(
        nodes_alive(),
        before,
        "a step leaves exactly one node behind, replacing the last"
    );
}

#[test]
fn realizing_twice_runs_nothing_the_second_time() {
    let _serial = serial();
    let x = ramp(64, &[8, 8]);
    let y = chain8(&x).matmul(&x).sum(&[1]);
    y.realize();
    stats::reset();
    y.realize();
    let first = y.to_vec();
    let second = y.to_vec();
    LazyBuffer::realize_all(&[&y, &y]);
    assert_eq!(stats::get().kernels, 0, "{:?}", stats::get());
    assert_eq!(first, second);
    // Views of a realized node read its buffer without running anything either.
    assert_eq!(y.permute(&[1, 0]).to_vec(), first);
    assert_eq!(y.reshape(&[2, 4]).to_vec(), first);
    assert_eq!(stats::get().kernels, 0);
    // A consumer of a realized node runs only its own kernel.
    let z = y.add(&y);
    let want = reference::evaluate(&z);
    z.to_vec();
    assert_eq!(stats::get().kernels, 1);
    assert_matches_reference(&z.to_vec(), &want);
}

#[test]
fn a_node_with_two_consumers() {
    let _serial = serial();
    let x = ramp(200, &[10, 20]);
    // Realized together: the shared node is computed once, into its own buffer, and both
    // consumers read it.
    let shared = x.unary(UnaryOp::Exp).mul(&x);
    let a = shared.sum(&[1]);
    let b = shared.add(&x).permute(&[1, 0]);
    let (want_a, want_b) = (reference::evaluate(&a), reference::evaluate(&b));
    stats::reset();
    LazyBuffer::realize_all(&[&a, &b]);
    let ran = stats::get();
    assert_eq!(ran.kernels, 3, "shared, a and b: {ran:?}");
    assert_eq!(
        ran.ops_fused,
        2 + 1 + 1,
        "exp and mul once, then the sum and the add: {ran:?}"
    );
    assert_matches_reference(&a.to_vec(), &want_a);
    assert_matches_reference(&b.to_vec(), &want_b);

    // Realized one after the other: each consumer fuses the shared ops into its own kernel.
    let shared = x.unary(UnaryOp::Exp).mul(&x);
    let a = shared.sum(&[1]);
    let b = shared.add(&x);
    let (want_a, want_b) = (reference::evaluate(&a), reference::evaluate(&b));
    stats::reset();
    assert_matches_reference(&a.to_vec(), &want_a);
    assert_eq!(stats::get().kernels, 1);
    assert_matches_reference(&b.to_vec(), &want_b);
    assert_eq!(stats::get().kernels, 2);
    assert!(
        !shared.is_realized(),
        "fused both times, never a buffer of its own"
    );

    // Used twice by one consumer through different views.
    let y = shared
        .permute(&[1, 0])
        .reshape(&[20, 10])
        .add(&shared.permute(&[1, 0]));
    let want = reference::evaluate(&y);
    assert_matches_reference(&y.to_vec(), &want);
}

#[test]
fn the_same_op_on_the_same_values_runs_once_per_kernel() {
    let _serial = serial();
    let x = ramp(200, &[10, 20]);
    // `sigmoid(x)·(1 - sigmoid(x))` written with two sigmoid nodes, and `exp(x) + exp(x)`
    // through a view each: one sigmoid, one exp.
    let s = x.shape().to_vec();
    let sigmoid = || x.unary(UnaryOp::Sigmoid);
    let slope = sigmoid().mul(&LazyBuffer::full(&s, 1.0).sub(&sigmoid()));
    let want = reference::evaluate(&slope);
    stats::reset();
    slope.realize();
    assert_eq!(stats::get().ops_fused, 3, "sigmoid, sub, mul: {:?}", stats::get());
    assert_matches_reference(&slope.to_vec(), &want);

    let t = x.permute(&[1, 0]);
    let doubled = t.unary(UnaryOp::Exp).add(&t.unary(UnaryOp::Exp)).sum(&[0]);
    stats::reset();
    doubled.realize();
    assert_eq!(stats::get().ops_fused, 3, "exp, add, sum: {:?}", stats::get());
    // `e + e` is `2e` exactly, so each row sum is twice the exponentials' sum.
    let single = t.unary(UnaryOp::Exp).sum(&[0]).to_vec();
    let twice: Vec<f32> = single.iter().map(|v| 2.0 * v).collect();
    assert_eq!(bits(&doubled.to_vec()), bits(&twice));
}

/// Softmax over rows, `e / sum(e)` for `e = exp(x - max(x))`, and `e`.
fn softmax_rows(x: &LazyBuffer) -> (LazyBuffer, LazyBuffer) {
    let shape = x.shape().to_vec();
    let e = x.sub(&x.max(&[1]).expand(&shape)).unary(UnaryOp::Exp);
    (e.div(&e.sum(&[1]).expand(&shape)), e)
}

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

/// Whether the scheduler recomputes a large node of a costly op (an exponential) in each kernel
/// that reads it: only with AVX-512, where that was measured to pay (see `recompute_pays`).
fn recomputes_costly_ops() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx512f");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

#[test]
fn a_large_node_read_by_several_kernels_is_recomputed_in_each() {
    let _serial = serial();
    // 2^19 values: written out and read back twice, `x - max` and its exponentials would be
    // passes through memory; each of the two kernels that read them computes them instead (the
    // exponentials only where that pays, see `recomputes_costly_ops`).
    let x = ramp(512 * 1024, &[512, 1024]);
    let (y, e) = softmax_rows(&x);
    let want = reference::evaluate(&y);
    stats::reset();
    y.realize();
    let ran = stats::get();
    let costly = recomputes_costly_ops();
    let kernels = if costly { 3 } else { 4 };
    assert_eq!(
        ran.kernels, kernels,
        "the max, (exp,) the sum of exp, the quotient: {ran:?}"
    );
    assert_eq!(e.is_realized(), !costly, "the exponentials have a buffer");
    assert_matches_reference(&y.to_vec(), &want);
    // The same operations in the same order as when `e` is stored first: the same bits.
    let (stored, e) = softmax_rows(&x);
    e.realize();
    assert_eq!(bits(&stored.to_vec()), bits(&y.to_vec()));
    // A graph of the same structure replays the plan: the same kernels, the same bits.
    let (again, e) = softmax_rows(&x);
    stats::reset();
    again.realize();
    let ran = stats::get();
    assert_eq!((ran.kernels, ran.schedules_reused), (kernels, 1), "{ran:?}");
    assert_eq!(e.is_realized(), !costly);
    assert_eq!(bits(&again.to_vec()), bits(&y.to_vec()));

    // Below a megabyte, the exponentials are written once and read by both.
    let x = ramp(64 * 1024, &[64, 1024]);
    let (y, e) = softmax_rows(&x);
    stats::reset();
    y.realize();
    assert_eq!(stats::get().kernels, 4, "the max, exp, its sum, the quotient");
    assert!(e.is_realized());

    // Recomputed in up to four kernels; a fifth reader, or an op as costly as a sine, gets a
    // buffer; an exponential is recomputed only where costly ops are.
    let x = ramp(1 << 18, &[1 << 18]);
    for (op, readers, own_kernel) in [
        (UnaryOp::Abs, 4, false),
        (UnaryOp::Abs, 5, true),
        (UnaryOp::Exp, 4, !costly),
        (UnaryOp::Exp, 5, true),
        (UnaryOp::Sin, 2, true),
    ] {
        let shared = x.unary(op);
        let outs: Vec<LazyBuffer> = (0..readers)
            .map(|k| shared.add(&LazyBuffer::full(&[1 << 18], k as f32)))
            .collect();
        stats::reset();
        LazyBuffer::realize_all(&outs.iter().collect::<Vec<_>>());
        assert_eq!(
            stats::get().kernels,
            readers + own_kernel as u64,
            "{op:?} read {readers} times"
        );
        assert_eq!(shared.is_realized(), own_kernel, "{op:?} read {readers} times");
        for (k, out) in outs.iter().enumerate() {
            assert_matches_reference(&out.to_vec(), &reference::evaluate(out));
            assert_eq!(out.to_vec()[3], shared.to_vec()[3] + k as f32);
        }
    }
}

#[test]
fn a_node_read_through_a_wide_broadcast_gets_its_own_buffer() {
    let _serial = serial();
    // log-sum-exp of each row, subtracted from every element of its row (log_softmax's last
    // step, without the max).
    let x = ramp(1024 * 64, &[1024, 64]);
    let lse = x.unary(UnaryOp::Exp).sum(&[1]).unary(UnaryOp::Log);
    let y = x.sub(&lse.expand(&[1024, 64]));
    let want = reference::evaluate(&y);
    stats::reset();
    y.realize();
    let ran = stats::get();
    // Fused, the log would run 64 times per row: 65,536 times instead of 1,024.
    assert_eq!(
        ran.kernels, 3,
        "exp into the sum, the log, the subtraction: {ran:?}"
    );
    assert!(lse.is_realized(), "the log has a buffer of its own");
    assert_matches_reference(&y.to_vec(), &want);

    // A narrow broadcast (a batch of 32 rows of 10) still fuses: a kernel costs more.
    let x = ramp(320, &[32, 10]);
    let lse = x.unary(UnaryOp::Exp).sum(&[1]).unary(UnaryOp::Log);
    let y = x.sub(&lse.expand(&[32, 10]));
    let want = reference::evaluate(&y);
    stats::reset();
    y.realize();
    assert_eq!(
        stats::get().kernels,
        2,
        "the sum, then the log fused into the subtraction"
    );
    assert!(!lse.is_realized());
    assert_matches_reference(&y.to_vec(), &want);

    // In between (64 rows of 256: 16,320 reads more than values), a log is not recomputed for
    // every read, but a negation, as cheap as the kernel's other ops, is.
    let x = ramp(64 * 256, &[64, 256]);
    for (op, own_kernel) in [(UnaryOp::Log, true), (UnaryOp::Neg, false)] {
        let stat = x.unary(UnaryOp::Exp).sum(&[1]).unary(op);
        let y = x.sub(&stat.expand(&[64, 256]));
        let want = reference::evaluate(&y);
        stats::reset();
        y.realize();
        assert_eq!(stats::get().kernels, 2 + own_kernel as u64, "{op:?}");
        assert_eq!(stat.is_realized(), own_kernel, "{op:?}");
        assert_matches_reference(&y.to_vec(), &want);
    }
}

#[test]
fn a_hundred_thousand_op_chain_realizes_and_drops() {
    let _serial = serial();
    let base = nodes_alive();
    const N: usize = 100_000;
    let one = LazyBuffer::full(&[4], 1.0);
    let x = LazyBuffer::from_vec(vec![0.0, 1.0, 2.0, -3.0], &[4]).unwrap();
    // Integers below 2^24: every add is exact.
    let mut y = x.clone();
    for i in 0..N {
        y = if i % 2 == 0 {
            y.add(&one)
        } else {
            y.unary(UnaryOp::Neg).unary(UnaryOp::Neg)
        };
    }
    assert!(nodes_alive() >= base + N);
    stats::reset();
    let got = y.to_vec();
    let adds = N.div_ceil(2) as f32;
    assert_eq!(got, vec![adds, 1.0 + adds, 2.0 + adds, adds - 3.0]);
    assert!(stats::get().kernels > 1, "chains are cut into bounded kernels");
    drop(y);
    drop((one, x));
    assert_eq!(nodes_alive(), base);

    // Dropped while still pending: the drop must be iterative too.
    let mut y = LazyBuffer::full(&[2], 0.5);
    for _ in 0..N {
        y = y.unary(UnaryOp::Neg);
    }
    drop(y);
    assert_eq!(nodes_alive(), base);

    // The reference evaluator walks it iteratively as well.
    let mut y = LazyBuffer::full(&[2], 0.5);
    for _ in 0..N {
        y = y.unary(UnaryOp::Neg);
    }
    assert_eq!(reference::evaluate(&y), vec![0.5, 0.5]);
    assert_eq!(y.to_vec(), vec![0.5, 0.5]);
}

/// A large elementwise kernel may be split across threads (`stats.parallel_jobs`); each
/// thread computes whole blocks of the same program, so the result is bit-identical to the same
/// kernel run in pieces too small to split. Covered: contiguous, transposed (copied in tiles, by
/// panels within each thread's part; each band below is small enough to be copied whole) and
/// broadcast leaves, and a length that is not a multiple of the block.
#[test]
fn a_large_kernel_split_across_threads_equals_small_pieces_bit_for_bit() {
    let _serial = serial();
    let (rows, cols) = (301, 997); // 300,097 elements: above the split threshold
    let a = ramp(rows * cols, &[rows, cols]);
    let t = ramp(rows * cols, &[cols, rows]).permute(&[1, 0]);
    let b = ramp(cols, &[1, cols]).expand(&[rows, cols]);
    let f = |a: &LazyBuffer, t: &LazyBuffer, b: &LazyBuffer| chain8(&a.add(t)).mul(b).unary(UnaryOp::Tanh);

    stats::reset();
    let whole = f(&a, &t, &b).to_vec();
    let split = splits_work();
    assert_eq!(
        stats::get().parallel_jobs,
        u64::from(split),
        "the kernel, which copies its transposed leaf: {:?}",
        stats::get()
    );

    // Row bands of 32 × 997 = 31,904 elements each run on one thread.
    let mut pieces = Vec::with_capacity(rows * cols);
    for lo in (0..rows).step_by(32) {
        let band = [(lo, (lo + 32).min(rows)), (0, cols)];
        pieces.extend(f(&a.shrink(&band), &t.shrink(&band), &b.shrink(&band)).to_vec());
    }
    assert_eq!(stats::get().parallel_jobs, u64::from(split), "the bands add none");
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert!(
        bits(&whole) == bits(&pieces),
        "the split kernel differs from the pieces"
    );
}

/// A large product is split between threads by rows of C, each row computed by one sgemm call
/// over the whole inner dim, so it equals, bit for bit, the same rows computed as products too
/// small to split. A wide product (more columns than rows) is computed as its transpose: it
/// equals `(bᵀ·aᵀ)ᵀ` computed explicitly.
#[test]
fn a_large_matmul_split_across_threads_equals_small_pieces_bit_for_bit() {
    let _serial = serial();
    let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
    let (m, k, n) = (512, 128, 96); // 6.3M multiply-adds: split; bands of 128 rows are not
    let a = ramp(m * k, &[m, k]).mul(&LazyBuffer::full(&[m, k], 0.37));
    let b = ramp(k * n, &[k, n]);
    LazyBuffer::realize_all(&[&a, &b]);
    stats::reset();
    let whole = a.matmul(&b).to_vec();
    let split = splits_work();
    assert_eq!(stats::get().parallel_jobs > 0, split, "{:?}", stats::get());
    let mut pieces = Vec::with_capacity(m * n);
    for lo in (0..m).step_by(128) {
        pieces.extend(a.shrink(&[(lo, lo + 128), (0, k)]).matmul(&b).to_vec());
    }
    assert!(
        bits(whole) == bits(pieces),
        "the split product differs from the pieces"
    );

    let wide = b.permute(&[1, 0]).matmul(&a.permute(&[1, 0])); // [96, 128] x [128, 512]
    let explicit = a.matmul(&b).permute(&[1, 0]).contiguous();
    assert!(
        bits(wide.to_vec()) == bits(explicit.to_vec()),
        "the wide product differs"
    );
}

/// A large reduction of a stored tensor over its leading axes is shared between threads by
/// ranges of columns: each output still adds its column's values in order, in f64, and rounds
/// once, so it has the bits of that plain loop, on any number of threads.
#[test]
fn a_large_column_reduction_split_across_threads_equals_a_plain_loop() {
    let _serial = serial();
    let split = splits_work();
    // One group of 997 columns, and four groups of 200 (a reduction over the middle axis).
    for (shape, axis) in [(vec![300, 997], 0), (vec![4, 300, 200], 1)] {
        let n: usize = shape.iter().product();
        let x = ramp(n, &shape).mul(&LazyBuffer::full(&shape, 0.37));
        let values = x.to_vec();
        let (rows, inner) = (shape[axis], shape[axis + 1..].iter().product::<usize>());
        for op in [ReduceOp::Sum, ReduceOp::Max] {
            stats::reset();
            let got = x.reduce(op, &[axis]).to_vec();
            assert_eq!(
                stats::get().parallel_jobs > 0,
                split,
                "{shape:?}: {:?}",
                stats::get()
            );
            for (o, got) in got.iter().enumerate() {
                let (group, column) = (o / inner, o % inner);
                let column = (0..rows).map(|r| values[(group * rows + r) * inner + column]);
                let want = match op {
                    ReduceOp::Sum => column.fold(0.0f64, |s, v| s + v as f64) as f32,
                    _ => column.fold(f32::NEG_INFINITY, f32::max),
                };
                assert_eq!(got.to_bits(), want.to_bits(), "{op:?} {shape:?}, output {o}");
            }
        }
    }
}

/// A large reduction is computed in pieces that depend only on its shape (groups of whole rows,
/// or parts of one long row) and folded in order, so threads can share it without changing the
/// result. Groups of rows are computed exactly as the same rows reduced on their own; long rows
/// are folded from parts and match the f64 reference within the bound of `lazy_ops.rs`.
#[test]
fn a_large_reduction_split_across_threads_equals_its_rows_reduced_alone() {
    let _serial = serial();
    let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
    let (rows, cols) = (300, 997); // rows of 997: pieces of ceil(16384 / 997) = 17 rows
    let x = ramp(rows * cols, &[rows, cols]).mul(&LazyBuffer::full(&[rows, cols], 0.37));
    x.realize();
    for op in [ReduceOp::Sum, ReduceOp::Max] {
        stats::reset();
        let whole = chain8(&x).reduce(op, &[1]).to_vec();
        let split = splits_work();
        assert_eq!(stats::get().parallel_jobs > 0, split, "{:?}", stats::get());
        let mut pieces = Vec::with_capacity(rows);
        for lo in (0..rows).step_by(17) {
            let band = x.shrink(&[(lo, (lo + 17).min(rows)), (0, cols)]);
            pieces.extend(chain8(&band).reduce(op, &[1]).to_vec());
        }
        assert!(
            bits(whole) == bits(pieces),
            "{op:?}: the split reduction differs from its rows"
        );
    }

    // Long rows, folded from parts, and a full reduction of 1M values.
    for shape in [vec![3, 100_000], vec![1 << 20]] {
        let n: usize = shape.iter().product();
        let x = ramp(n, &shape);
        let axes: Vec<usize> = vec![shape.len() - 1];
        for op in [ReduceOp::Sum, ReduceOp::Max] {
            let y = x.reduce(op, &axes);
            let want = reference::evaluate(&y);
            // Sums: f32 partials of at most a block (1024 terms of |x| <= 2), accumulated in f64;
            // each partial is within 1024·EPS·Σ|x| of exact, so 2048·EPS of Σ|x| bounds the result.
            let bound = 2048.0 * f32::EPSILON as f64 * 2.0 * (n / want.len()) as f64;
            for (g, w) in y.to_vec().iter().zip(&want) {
                assert!((*g as f64 - w).abs() <= bound, "{op:?} {shape:?}: {g} vs {w}");
            }
        }
    }
}

/// `{:?}` of a pending buffer shows one level of its graph: bounded whatever the graph's depth
/// or sharing (the derived form recursed, overflowing the stack on a chain of a few thousand ops,
/// and printed a shared node once per path), and it realizes nothing.
#[test]
fn debug_shows_one_level_of_the_graph() {
    let _serial = serial();
    let x = LazyBuffer::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let y = x.add(&x).unary(UnaryOp::Exp).reduce(ReduceOp::Sum, &[1]);
    let text = format!("{y:?}");
    assert!(text.starts_with("LazyBuffer { node: "), "{text}");
    assert!(
        text.contains("pending: Reduce(Sum, axes [1]) of nodes ["),
        "{text}"
    );
    assert!(format!("{x:?}").contains("realized_values: 4"), "{x:?}");
    assert!(!y.is_realized());
    let mut deep = x.clone();
    for _ in 0..100_000 {
        deep = deep.add(&x);
    }
    let mut shared = x.clone();
    for _ in 0..40 {
        shared = shared.add(&shared);
    }
    // On a thread with a small stack, where the derived form overflowed at a depth of 2,000.
    let lengths = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || [format!("{deep:?}").len(), format!("{shared:?}").len()])
        .unwrap()
        .join()
        .unwrap();
    assert!(lengths.iter().all(|&len| len < 400), "{lengths:?}");
}

/// `bytes_fresh` counts what no pooled buffer served: a repeated computation takes its output
/// afresh the first time and from the buffer the last result gave back after; outputs under
/// 1024 values are never pooled, so always fresh. `bytes_allocated` counts every output.
#[test]
fn fresh_bytes_fall_to_zero_once_buffers_are_reused() {
    let _serial = serial();
    for (n, fresh_after) in [(512 * 512, 0), (10, 40)] {
        let x = ramp(n, &[n]);
        let run = || {
            stats::reset();
            let y = x.unary(UnaryOp::Exp).add(&x);
            y.realize();
            drop(y);
            stats::get()
        };
        let first = run();
        let bytes = 4 * n as u64;
        assert_eq!(
            (first.bytes_allocated, first.bytes_fresh),
            (bytes, bytes),
            "{first:?}"
        );
        for _ in 0..3 {
            let again = run();
            assert_eq!(
                (again.bytes_allocated, again.bytes_fresh),
                (bytes, fresh_after),
                "{again:?}"
            );
        }
    }
}

/// A realization lets go of each intermediate once its last reader has run, so its buffer serves
/// a later output: a chain of 10 kernels (640 ops, 64 a kernel) over 32,768 values writes 10
/// outputs (1.25 MiB, past the size from which a run does this) but takes fresh memory for two,
/// where holding every intermediate to the end took all 10.
#[test]
fn a_deep_realization_reuses_the_buffers_of_intermediates_it_is_done_with() {
    let _serial = serial();
    let n = 1 << 15;
    let x = ramp(n, &[n]);
    let mut y = x.clone();
    // -y, then + x, four times over: exactly x again.
    for k in 0..640 {
        y = if k % 2 == 0 {
            y.unary(UnaryOp::Neg)
        } else {
            y.add(&x)
        };
    }
    stats::reset();
    y.realize();
    let ran = stats::get();
    let output = 4 * n as u64;
    assert_eq!((ran.kernels, ran.bytes_allocated), (10, 10 * output), "{ran:?}");
    // Two at a time: a kernel's output and the one it reads.
    assert_eq!(ran.bytes_fresh, 2 * output, "{ran:?}");
    assert_eq!(y.to_vec(), x.to_vec());
}
