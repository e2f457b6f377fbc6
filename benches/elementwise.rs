//! An 8-op elementwise chain over 1M f32, `max(sqrt(exp(relu(x·2 + 1)) - x)·x, x)`:
//! fused (build and realize once), unfused (realize after every op), and a hand-written single
//! pass over a `Vec<f32>` computing the same thing with the engine's scalar semantics; then the
//! same chain folded into one sum, fused and by hand.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::SeedableRng;
use rand::rngs::StdRng;
use teenygrad::lazy::{BinaryOp, LazyBuffer, UnaryOp};

const N: usize = 1 << 20;

/// The chain, one op at a time; `step` runs after each (a realize, or nothing).
fn chain(x: &LazyBuffer, step: impl Fn(LazyBuffer) -> LazyBuffer) -> LazyBuffer {
    let s = x.shape();
    let y = step(x.mul(&LazyBuffer::full(s, 2.0)));
    let y = step(y.add(&LazyBuffer::full(s, 1.0)));
    let y = step(y.unary(UnaryOp::Relu));
    let y = step(y.unary(UnaryOp::Exp));
    let y = step(y.sub(x));
    let y = step(y.unary(UnaryOp::Sqrt));
    let y = step(y.mul(x));
    step(y.binary(BinaryOp::Max, x))
}

fn by_hand(xs: &[f32]) -> Vec<f32> {
    xs.iter()
        .map(|&x| {
            let t = x * 2.0 + 1.0;
            let t = if t < 0.0 { 0.0 } else { t };
            let t = (t.exp() - x).sqrt() * x;
            if t > x || t.is_nan() { t } else { x }
        })
        .collect()
}

fn elementwise(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(1);
    let x = LazyBuffer::rand_uniform(&[N], -2.0, 2.0, &mut rng);
    let xs = x.to_vec();
    // The three must agree: the same f32 operations in the same order, except that the engine's
    // exp (a vectorizable polynomial) and libm's may differ by 1 ulp, which the sqrt halves and
    // the product with x (|x| < 2) at most doubles: 4 ulp of slack is ample.
    let fused = chain(&x, |y| y).to_vec();
    for (f, h) in fused.iter().zip(by_hand(&xs)) {
        assert!(
            (f - h).abs() <= 4.0 * f32::EPSILON * h.abs(),
            "fused {f}, by hand {h}"
        );
    }

    let mut group = c.benchmark_group("chain8_1M");
    group.throughput(Throughput::Elements(N as u64));
    group.sample_size(30);
    group.bench_function("fused", |b| {
        b.iter(|| {
            let y = chain(black_box(&x), |y| y);
            y.realize();
            y
        })
    });
    group.bench_function("unfused", |b| {
        b.iter(|| {
            chain(black_box(&x), |y| {
                y.realize();
                y
            })
        })
    });
    group.bench_function("hand_loop", |b| b.iter(|| by_hand(black_box(&xs))));
    // The same chain folded into one sum: a fused reduction kernel.
    group.bench_function("fused_into_sum", |b| {
        b.iter(|| {
            let y = chain(black_box(&x), |y| y).sum(&[0]);
            y.realize();
            y
        })
    });
    group.bench_function("hand_loop_into_sum", |b| {
        b.iter(|| by_hand(black_box(&xs)).iter().map(|&v| v as f64).sum::<f64>())
    });
    group.finish();
}

criterion_group!(benches, elementwise);
criterion_main!(benches);
