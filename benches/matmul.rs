//! Square matmul through the lazy buffer (build the node and realize it, from two realized
//! buffers) against raw `matrixmultiply::sgemm` on the same data. Both allocate a fresh output
//! each iteration, as the lazy buffer must. Throughput is in FLOPs (`2·n³` per product).

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rand::SeedableRng;
use rand::rngs::StdRng;
use teenygrad::lazy::LazyBuffer;

fn matmul(c: &mut Criterion) {
    let mut group = c.benchmark_group("matmul");
    for n in [64usize, 256, 512, 1024] {
        let mut rng = StdRng::seed_from_u64(n as u64);
        let a = LazyBuffer::rand_uniform(&[n, n], -1.0, 1.0, &mut rng);
        let b = LazyBuffer::rand_uniform(&[n, n], -1.0, 1.0, &mut rng);
        let (av, bv) = (a.to_vec(), b.to_vec());
        group.throughput(Throughput::Elements(2 * (n as u64).pow(3)));
        group.sample_size(if n >= 512 { 10 } else { 50 });
        group.bench_with_input(BenchmarkId::new("lazy", n), &n, |bench, _| {
            bench.iter(|| {
                let c = black_box(&a).matmul(black_box(&b));
                c.realize();
                c
            })
        });
        group.bench_with_input(BenchmarkId::new("sgemm", n), &n, |bench, &n| {
            bench.iter(|| {
                let mut out = vec![0.0f32; n * n];
                let (a, b) = (black_box(&av), black_box(&bv));
                // SAFETY: a, b and out are row-major n×n buffers.
                unsafe {
                    matrixmultiply::sgemm(
                        n,
                        n,
                        n,
                        1.0,
                        a.as_ptr(),
                        n as isize,
                        1,
                        b.as_ptr(),
                        n as isize,
                        1,
                        0.0,
                        out.as_mut_ptr(),
                        n as isize,
                        1,
                    );
                }
                out
            })
        });
    }
    group.finish();
}

criterion_group!(benches, matmul);
criterion_main!(benches);
