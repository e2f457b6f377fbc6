//! Everyday operations that once took a slow path, each against its limit: a [1024, 1024] matrix
//! times a vector (and a vector times the matrix) against raw `sgemm` and a hand-written loop;
//! a column sum of a transposed view against the same sum of a contiguous tensor and a loop; and
//! `powf(2.0)` against `square` and a loop, and a squared error's forward and backward pass; the
//! general power (`powf(2.5)`), `log`, `sin` and `cos` against loops calling libm per element;
//! `gelu` forward and backward against the `erf` inside it. Through the Tensor API, built and
//! realized.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::SeedableRng;
use rand::rngs::StdRng;
use teenygrad::prelude::*;

mod raw_sgemm;
use raw_sgemm::sgemm;

const N: usize = 1024;

/// `a` (N×N, row-major) times `v`, by hand: one dot product per row.
fn matvec_by_hand(a: &[f32], v: &[f32]) -> Vec<f32> {
    a.chunks_exact(N)
        .map(|row| row.iter().zip(v).map(|(x, y)| x * y).sum())
        .collect()
}

fn common_ops(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(4);
    let x = Tensor::<Rank2<N, N>>::randn(&mut rng).realize();
    let v = Tensor::<Rank1<N>>::randn(&mut rng).realize();
    let (xs, vs) = (x.to_vec(), v.to_vec());
    // The product is sgemm's, bit for bit; the loop sums in another order.
    assert_eq!(x.matmul(&v).to_vec(), sgemm(N, N, 1, &xs, &vs));

    let mut group = c.benchmark_group("matvec_1024");
    group.throughput(Throughput::Elements((2 * N * N) as u64));
    group.bench_function("lazy", |b| {
        b.iter(|| black_box(&x).matmul(black_box(&v)).realize())
    });
    group.bench_function("sgemm", |b| {
        b.iter(|| sgemm(N, N, 1, black_box(&xs), black_box(&vs)))
    });
    group.bench_function("hand_loop", |b| {
        b.iter(|| matvec_by_hand(black_box(&xs), black_box(&vs)))
    });
    group.bench_function("vector_times_matrix", |b| {
        b.iter(|| black_box(&v).matmul(black_box(&x)).realize())
    });
    group.finish();

    let mut group = c.benchmark_group("column_sum_1024");
    group.throughput(Throughput::Elements((N * N) as u64));
    group.bench_function("of_transpose", |b| {
        b.iter(|| black_box(&x).t().sum::<Axis<1>>().realize())
    });
    group.bench_function("contiguous", |b| {
        b.iter(|| black_box(&x).sum::<Axis<0>>().realize())
    });
    group.bench_function("hand_loop", |b| {
        b.iter(|| {
            let mut sums = vec![0.0f32; N];
            for row in black_box(&xs).chunks_exact(N) {
                for (s, &x) in sums.iter_mut().zip(row) {
                    *s += x;
                }
            }
            sums
        })
    });
    group.finish();

    let mut group = c.benchmark_group("powf_2_1024");
    group.throughput(Throughput::Elements((N * N) as u64));
    group.bench_function("powf", |b| b.iter(|| black_box(&x).powf(2.0).realize()));
    group.bench_function("square", |b| b.iter(|| black_box(&x).square().realize()));
    group.bench_function("hand_loop", |b| {
        b.iter(|| black_box(&xs).iter().map(|x| x * x).collect::<Vec<f32>>())
    });
    // A squared error's forward and backward pass: its gradient needs `x^1`.
    let y = Tensor::<Rank2<N, N>>::randn(&mut rng).realize();
    group.bench_function("squared_error_backward", |b| {
        b.iter(|| {
            let p = black_box(&x).clone().requires_grad();
            (&p - &y).powf(2.0).mean_all().backward();
            p.grad().expect("a gradient").realize()
        })
    });
    group.finish();

    // Positive values: a fractional power of a negative base is NaN.
    let positive = x.abs().realize();
    let ps = positive.to_vec();
    let mut group = c.benchmark_group("pow_log_1024");
    group.throughput(Throughput::Elements((N * N) as u64));
    group.bench_function("powf_2_5", |b| {
        b.iter(|| black_box(&positive).powf(2.5).realize())
    });
    group.bench_function("powf_2_5_libm_loop", |b| {
        b.iter(|| black_box(&ps).iter().map(|x| x.powf(2.5)).collect::<Vec<f32>>())
    });
    group.bench_function("log", |b| b.iter(|| black_box(&positive).log().realize()));
    group.bench_function("log_libm_loop", |b| {
        b.iter(|| black_box(&ps).iter().map(|x| x.ln()).collect::<Vec<f32>>())
    });
    group.finish();

    let mut group = c.benchmark_group("sin_cos_1024");
    group.throughput(Throughput::Elements((N * N) as u64));
    group.bench_function("sin", |b| b.iter(|| black_box(&x).sin().realize()));
    group.bench_function("cos", |b| b.iter(|| black_box(&x).cos().realize()));
    group.bench_function("sin_libm_loop", |b| {
        b.iter(|| black_box(&xs).iter().map(|x| x.sin()).collect::<Vec<f32>>())
    });
    group.finish();

    // GELU's floor is the erf inside it.
    let mut group = c.benchmark_group("gelu_1024");
    group.throughput(Throughput::Elements((N * N) as u64));
    group.bench_function("gelu", |b| b.iter(|| black_box(&x).gelu().realize()));
    group.bench_function("erf", |b| b.iter(|| black_box(&x).erf().realize()));
    group.bench_function("gelu_backward", |b| {
        b.iter(|| {
            let p = black_box(&x).clone().requires_grad();
            p.gelu().sum_all().backward();
            p.grad().expect("a gradient").realize()
        })
    });
    group.finish();
}

criterion_group!(benches, common_ops);
criterion_main!(benches);
