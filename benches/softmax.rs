//! Row-wise softmax and log_softmax of a [1024, 1024] tensor through the Tensor API (built and
//! realized), against a hand-written loop over each row (max, then the sum of exps, then the
//! output, reading the row three times) with libm's `exp` and `ln`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::SeedableRng;
use rand::rngs::StdRng;
use teenygrad::prelude::*;

const N: usize = 1024;

fn by_hand(xs: &[f32], log: bool) -> Vec<f32> {
    let mut out = Vec::with_capacity(xs.len());
    for row in xs.chunks_exact(N) {
        let max = row.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
        let total: f32 = row.iter().map(|&x| (x - max).exp()).sum();
        if log {
            let lse = total.ln();
            out.extend(row.iter().map(|&x| x - max - lse));
        } else {
            out.extend(row.iter().map(|&x| (x - max).exp() / total));
        }
    }
    out
}

fn softmax(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(3);
    let x = (Tensor::<Rank2<N, N>>::randn(&mut rng) * 4.0).realize();
    let xs = x.to_vec();
    // Same values within a few ulp: both subtract the row max and use a 1-ulp exp and log.
    for (log, ours) in [
        (false, x.softmax::<Axis<1>>().to_vec()),
        (true, x.log_softmax::<Axis<1>>().to_vec()),
    ] {
        for (o, h) in ours.iter().zip(by_hand(&xs, log)) {
            assert!((o - h).abs() <= 1e-5 * h.abs().max(1.0), "ours {o}, by hand {h}");
        }
    }

    let mut group = c.benchmark_group("softmax_1024x1024");
    group.throughput(Throughput::Elements((N * N) as u64));
    group.sample_size(30);
    group.bench_function("softmax", |b| {
        b.iter(|| black_box(&x).softmax::<Axis<1>>().realize())
    });
    group.bench_function("log_softmax", |b| {
        b.iter(|| black_box(&x).log_softmax::<Axis<1>>().realize())
    });
    group.bench_function("softmax_by_hand", |b| b.iter(|| by_hand(black_box(&xs), false)));
    group.bench_function("log_softmax_by_hand", |b| {
        b.iter(|| by_hand(black_box(&xs), true))
    });
    group.finish();
}

criterion_group!(benches, softmax);
criterion_main!(benches);
