//! End-to-end cost of one tiny op: build `a + b` over two realized 4-element buffers and
//! realize it (scheduling, kernel setup, the output allocation), and the same followed by a read.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use teenygrad::lazy::LazyBuffer;

fn tiny_op(c: &mut Criterion) {
    let a = LazyBuffer::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[4]).unwrap();
    let b = LazyBuffer::from_vec(vec![0.5, 0.25, 0.125, 1.0], &[4]).unwrap();
    c.bench_function("tiny_add_build_realize", |bench| {
        bench.iter(|| {
            let y = black_box(&a).add(black_box(&b));
            y.realize();
            y
        })
    });
    c.bench_function("tiny_add_build_realize_read", |bench| {
        bench.iter(|| black_box(&a).add(black_box(&b)).to_vec())
    });
}

criterion_group!(benches, tiny_op);
criterion_main!(benches);
