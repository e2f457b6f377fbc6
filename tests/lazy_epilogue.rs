//! A product's epilogue: a bias row added to a matrix product, relu after it, or both, or relu's
//! gradient mask `where(y <= 0, 0, p)`, run as part of the product when the product's only reader is
//! that kernel (a `Linear` layer's `x·Wᵀ + b`, then relu; its gradient through the next layer). It must give, bit for bit, what the unfused kernels give on every path
//! the product can take (the direct tile, read in place or transposed, packed panels of B, sgemm
//! on one thread or split between threads, batched), with NaN, infinities and signed zeros in the
//! values, and it must run as one kernel where it applies and leave every other graph as it was.

use teenygrad::lazy::{BinaryOp, LazyBuffer, UnaryOp, reference, stats};

/// Values in [-1, 1) on a coarse grid, seeded, with a NaN, both infinities and -0.0 placed in
/// when `special` (each propagates through the product to its row or column).
fn values(n: usize, seed: u64, special: bool) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut v: Vec<f32> = (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 2048) as f32 / 1024.0 - 1.0
        })
        .collect();
    if special && n >= 8 {
        let nan_with_payload = f32::from_bits(0x7fc0_0000 | seed as u32 & 0xffff);
        v[n / 7] = nan_with_payload;
        v[n / 3] = f32::INFINITY;
        v[n / 2] = f32::NEG_INFINITY;
        v[n - 1] = -0.0;
    }
    v
}

fn buffer(shape: &[usize], seed: u64, special: bool) -> LazyBuffer {
    LazyBuffer::from_vec(values(shape.iter().product(), seed, special), shape).unwrap()
}

/// An epilogue's form, on product `p` and a bias row `b` broadcast over it.
type Form = fn(&LazyBuffer, &LazyBuffer) -> LazyBuffer;

const FORMS: [(&str, Form); 5] = [
    ("p + b", |p, b| p.add(b)),
    ("b + p", |p, b| b.add(p)),
    ("relu(p + b)", |p, b| p.add(b).unary(UnaryOp::Relu)),
    ("relu(b + p)", |p, b| b.add(p).unary(UnaryOp::Relu)),
    ("relu(p)", |p, _| p.unary(UnaryOp::Relu)),
];

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

/// `form` on `a · b` and `bias` computed by the unfused kernels: the product realized first.
fn unfused(form: Form, a: &LazyBuffer, b: &LazyBuffer, bias: &LazyBuffer) -> Vec<f32> {
    let p = a.matmul(b);
    p.realize();
    form(&p, &bias.expand(p.shape())).to_vec()
}

/// `a · b` in each form, with the product pending (so it runs with the epilogue, as one kernel)
/// and realized first (the unfused kernels): the same bits.
fn check(name: &str, a: &LazyBuffer, b: &LazyBuffer, bias: &LazyBuffer) {
    for (form_name, form) in FORMS {
        let p = a.matmul(b);
        let fused = form(&p, &bias.expand(p.shape()));
        let before = stats::get().kernels;
        let got = fused.to_vec();
        assert_eq!(
            stats::get().kernels - before,
            1,
            "{name}, {form_name}: one kernel"
        );
        let want = unfused(form, a, b, bias);
        assert_eq!(
            bits(&got),
            bits(&want),
            "{name}, {form_name}: fused and unfused differ"
        );
    }
}

/// A product's operand: its shape, and whether it is read through a transpose of its buffer (`Wᵀ`).
type Operand = ([usize; 2], bool);

#[test]
fn every_product_path_gives_the_unfused_bits() {
    let (plain, transposed) = (|shape| (shape, false), |shape| (shape, true));
    let cases: &[(&str, Operand, Operand)] = &[
        ("direct tile, B in place", plain([32, 64]), plain([64, 128])),
        (
            "direct tile, B transposed (x·Wᵀ)",
            plain([32, 64]),
            transposed([64, 128]),
        ),
        (
            "direct tile, C computed transposed",
            plain([32, 128]),
            transposed([128, 10]),
        ),
        ("narrow C in the tile's rows", plain([7, 5]), plain([5, 3])),
        ("rows longer than a block", plain([4, 8]), plain([8, 1100])),
        ("one column", plain([6, 4]), plain([4, 1])),
        ("one row", plain([1, 20]), plain([20, 33])),
        (
            "packed panels, split by columns",
            plain([300, 200]),
            plain([200, 96]),
        ),
        (
            "packed panels past a depth block",
            plain([96, 300]),
            transposed([300, 200]),
        ),
        ("sgemm, split by rows", transposed([300, 200]), plain([200, 96])),
        (
            "sgemm, wide, split as the transpose",
            transposed([96, 200]),
            transposed([200, 400]),
        ),
        ("output split between threads", plain([128, 40]), plain([40, 300])),
        (
            "packed panels, by blocks of rows",
            plain([400, 400]),
            transposed([400, 100]),
        ),
        (
            "packed panels, A copied in tiles, split by rows",
            transposed([272, 64]),
            plain([64, 272]),
        ),
        (
            "packed panels, one row by strips",
            plain([1, 600]),
            plain([600, 200]),
        ),
    ];
    for (seed, &(name, (sa, a_transposed), (sb, b_transposed))) in cases.iter().enumerate() {
        for special in [false, true] {
            let seed = 10 * seed as u64 + u64::from(special);
            let read = |shape: [usize; 2], seed, transposed| match transposed {
                true => buffer(&[shape[1], shape[0]], seed, special).permute(&[1, 0]),
                false => buffer(&shape, seed, special),
            };
            let (a, b) = (read(sa, seed, a_transposed), read(sb, seed + 1000, b_transposed));
            let n = b.shape()[1];
            let bias = buffer(&[1, n], seed + 2000, special);
            check(&format!("{name} (special {special})"), &a, &b, &bias);
        }
    }
}

/// Relu's gradient mask after a product, `where(y <= s, s, p)` with `s` one value and `y` a
/// matrix of the product's shape: one kernel, the unfused bits, on the product's paths, with NaN,
/// infinities and signed zeros in `p` and in `y` (where `y` is NaN, `p` passes), `y` read at an
/// offset, and an output large enough to be split between threads.
#[test]
fn relus_gradient_mask_runs_with_the_product() {
    // Each with whether A is read through a transpose of its buffer (by columns).
    let cases: &[(&str, [usize; 3], bool)] = &[
        ("direct tile", [32, 10, 128], false),
        ("packed panels", [128, 256, 100], false),
        ("packed panels, by blocks of rows", [400, 400, 100], false),
        (
            "packed panels, A copied in tiles, split by rows",
            [272, 64, 272],
            true,
        ),
        ("packed panels, one row by strips", [1, 600, 200], false),
        ("sgemm, narrow", [40, 300, 5], false),
        ("output split between threads", [128, 40, 300], false),
    ];
    for (seed, &(name, [m, k, n], a_transposed)) in cases.iter().enumerate() {
        for special in [false, true] {
            let seed = 10 * seed as u64 + u64::from(special);
            let a = match a_transposed {
                true => buffer(&[k, m], seed, special).permute(&[1, 0]),
                false => buffer(&[m, k], seed, special),
            };
            let b = buffer(&[k, n], seed + 1, special);
            // `y` as rows 1..m + 1 of a taller matrix: read at an offset.
            let y = buffer(&[m + 1, n], seed + 2, special).shrink(&[(1, m + 1), (0, n)]);
            for (s_name, s) in [("zero", 0.0), ("a quarter", 0.25), ("minus zero", -0.0)] {
                let s = LazyBuffer::full(&[m, n], s);
                let mask = |p: &LazyBuffer| y.binary(BinaryOp::CmpLe, &s).where_(&s, p);
                let case = format!("{name} (special {special}), s {s_name}");
                let before = stats::get().kernels;
                let got = mask(&a.matmul(&b)).to_vec();
                assert_eq!(stats::get().kernels - before, 1, "{case}: one kernel");
                let p = a.matmul(&b);
                p.realize();
                let want = mask(&p).to_vec();
                assert_eq!(bits(&got), bits(&want), "{case}");
            }
        }
    }
}

/// A mask whose matrix is not the product's shape in full (a row broadcast), whose compared
/// value is not one value, that compares the other way, that picks the matrix instead of the
/// value compared, or the product where the comparison holds, is no epilogue: the product runs
/// apart, to the same values.
#[test]
fn other_masks_keep_the_product_apart() {
    let a = buffer(&[16, 24], 1, true);
    let b = buffer(&[24, 40], 2, true);
    let row = buffer(&[1, 40], 3, true).expand(&[16, 40]);
    let full = buffer(&[16, 40], 4, true);
    let zero = LazyBuffer::full(&[16, 40], 0.0);
    // (name, the comparison's two sides, the value picked where it holds, whether the product
    // is picked there instead)
    let cases = [
        ("a row broadcast", &row, &zero, &zero, false),
        ("a matrix compared", &full, &row, &row, false),
        ("compared the other way", &zero, &full, &zero, false),
        ("the matrix picked", &full, &zero, &full, false),
        ("the picks swapped", &full, &zero, &zero, true),
    ];
    for (name, lhs, rhs, picked, swapped) in cases {
        let mask = |p: &LazyBuffer| {
            let holds = lhs.binary(BinaryOp::CmpLe, rhs);
            if swapped {
                holds.where_(p, picked)
            } else {
                holds.where_(picked, p)
            }
        };
        let before = stats::get().kernels;
        let got = mask(&a.matmul(&b)).to_vec();
        assert!(
            stats::get().kernels - before >= 2,
            "{name}: the product ran apart"
        );
        let p = a.matmul(&b);
        p.realize();
        assert_eq!(bits(&got), bits(&mask(&p).to_vec()), "{name}");
    }
}

#[test]
fn a_batched_product_takes_the_bias_over_every_batch() {
    let a = buffer(&[3, 5, 8], 1, true);
    let b = buffer(&[3, 8, 20], 2, true);
    let bias = buffer(&[1, 1, 20], 3, true);
    check("batched", &a, &b, &bias);
    // A bias read at an offset: the second row of a [2, 20] buffer.
    let rows = buffer(&[2, 20], 4, false);
    check(
        "offset bias",
        &a,
        &b,
        &rows.shrink(&[(1, 2), (0, 20)]).reshape(&[1, 1, 20]),
    );
}

/// Against the f64 reference: each value is within the rounding of a k-term dot product, the
/// bias addition and relu (exact), `(k + 1)·u` times the sum of the terms' magnitudes.
#[test]
fn the_fused_result_is_within_rounding_of_the_f64_reference() {
    let (m, k, n) = (32, 64, 128);
    let x = buffer(&[m, k], 7, false);
    let w = buffer(&[n, k], 8, false);
    let b = buffer(&[1, n], 9, false);
    let y = x
        .matmul(&w.permute(&[1, 0]))
        .add(&b.expand(&[m, n]))
        .unary(UnaryOp::Relu);
    let want = reference::evaluate(&y);
    let abs = |t: &LazyBuffer| t.unary(UnaryOp::Abs);
    let scale = abs(&x)
        .matmul(&abs(&w).permute(&[1, 0]))
        .add(&abs(&b).expand(&[m, n]));
    let scale = reference::evaluate(&scale);
    let got = y.to_vec();
    let unit = f64::from(f32::EPSILON) / 2.0;
    for i in 0..m * n {
        let bound = (k + 1) as f64 * unit * scale[i];
        let err = (f64::from(got[i]) - want[i]).abs();
        assert!(
            err <= bound,
            "value {i}: {} against {} (bound {bound:e})",
            got[i],
            want[i]
        );
    }
}

/// Where the kernel after a product is not an epilogue, or the product is read elsewhere too,
/// the product keeps its own buffer, and the values are what they were.
#[test]
fn other_readers_and_other_kernels_keep_the_product_apart() {
    let a = buffer(&[16, 24], 1, false);
    let b = buffer(&[24, 40], 2, false);
    let bias = buffer(&[1, 40], 3, false).expand(&[16, 40]);
    type After<'a> = &'a dyn Fn(&LazyBuffer) -> LazyBuffer;
    let apart = |y: After| {
        let p = a.matmul(&b);
        p.realize();
        y(&p).to_vec()
    };
    let graphs: [(&str, After); 4] = [
        ("scaled first", &|p| {
            p.mul(&LazyBuffer::full(&[16, 40], 0.5)).add(&bias)
        }),
        ("tanh", &|p| p.add(&bias).unary(UnaryOp::Tanh)),
        ("read transposed", &|p| {
            p.permute(&[1, 0]).add(&bias.permute(&[1, 0]))
        }),
        ("bias as a full matrix", &|p| {
            p.add(&a.matmul(&b).binary(BinaryOp::Max, &bias))
        }),
    ];
    for (name, y) in graphs {
        let want = apart(y);
        let before = stats::get().kernels;
        let got = y(&a.matmul(&b)).to_vec();
        assert!(
            stats::get().kernels - before >= 2,
            "{name}: the product ran apart"
        );
        assert_eq!(bits(&got), bits(&want), "{name}");
    }

    // One value broadcast along the rows is no bias row (it was read as one: `n` values from
    // where the one value starts).
    let scalars = [
        ("a full scalar", LazyBuffer::full(&[16, 40], 1.5)),
        (
            "one element expanded",
            a.shrink(&[(0, 1), (0, 1)]).expand(&[16, 40]),
        ),
        (
            "a column expanded",
            a.shrink(&[(0, 16), (3, 4)]).expand(&[16, 40]),
        ),
    ];
    for (name, s) in scalars {
        let want = apart(&|p| p.add(&s).unary(UnaryOp::Relu));
        let got = a.matmul(&b).add(&s).unary(UnaryOp::Relu).to_vec();
        assert_eq!(bits(&got), bits(&want), "{name}");
    }

    // A kernel over part of the product does not take it: its output would be the whole product.
    let p = a.matmul(&b);
    let part = p.shrink(&[(0, 2), (0, 40)]).unary(UnaryOp::Relu);
    let before = stats::get().bytes_allocated;
    let got = part.to_vec();
    assert_eq!(
        stats::get().bytes_allocated - before,
        ((16 + 2) * 40 * 4) as u64,
        "product, then part"
    );
    let want = apart(&|p| p.shrink(&[(0, 2), (0, 40)]).unary(UnaryOp::Relu));
    assert_eq!(bits(&got), bits(&want), "part of the product");

    // Both the product and its relu requested: the product is realized, and the relu reads it.
    let p = a.matmul(&b);
    let y = p.add(&bias).unary(UnaryOp::Relu);
    LazyBuffer::realize_all(&[&p, &y]);
    assert!(p.is_realized());
    let want = apart(&|p| p.add(&bias).unary(UnaryOp::Relu));
    assert_eq!(bits(&y.to_vec()), bits(&want));
}

/// A second graph of the same structure replays the fused step with its own values (debug
/// builds also check the replay against a fresh plan).
#[test]
fn a_replayed_epilogue_reads_the_new_graph_values() {
    let (_, relu_of_sum) = FORMS[2];
    for seed in 0..4 {
        let x = buffer(&[8, 12], 10 * seed, seed > 1);
        let w = buffer(&[20, 12], 10 * seed + 1, false).permute(&[1, 0]);
        let b = buffer(&[1, 20], 10 * seed + 2, seed > 2);
        let reused = stats::get().schedules_reused;
        let got = relu_of_sum(&x.matmul(&w), &b.expand(&[8, 20])).to_vec();
        assert_eq!(
            stats::get().schedules_reused - reused,
            u64::from(seed > 0),
            "seed {seed}"
        );
        assert_eq!(bits(&got), bits(&unfused(relu_of_sum, &x, &w, &b)), "seed {seed}");
    }
}
