//! Square matmul through the lazy buffer (build the node and realize it, from two realized
//! buffers) against raw `matrixmultiply::sgemm` on the same data. Both allocate a fresh output
//! each iteration, as the lazy buffer must. Throughput is in FLOPs (`2·n³` per product).
//!
//! `matmul_layouts` does the same for rectangular products with each operand stored by rows or
//! by columns (a transposed view): the training step's products as the step reads them, and
//! shapes a sweep of random ones found slow once. `benches/matmul_sweep.rs` runs the sweep.
//!
//! `fma_peak` is the ceiling for any f32 product on one core: independent AVX-512 fused
//! multiply-adds and nothing else (skipped, with a message, on a CPU without AVX-512).

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rand::SeedableRng;
use rand::rngs::StdRng;
use teenygrad::lazy::LazyBuffer;

mod raw_sgemm;

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
            bench.iter(|| raw_sgemm::sgemm(n, n, n, black_box(&av), black_box(&bv)))
        });
    }
    group.finish();
}

/// `(m, k, n, A by rows, B by rows)`: the 784→512→256→10 step's products at batch 128 (the first
/// layer's forward, its weight gradient, the second layer's input gradient), then a shallow
/// outer product and a narrow one with both operands by columns, a 48-column C with a last row
/// over, and a narrow C with A by columns.
const LAYOUTS: [(usize, usize, usize, bool, bool); 7] = [
    (128, 784, 512, true, false),
    (512, 128, 784, false, true),
    (128, 256, 512, true, true),
    (335, 2, 785, false, false),
    (1000, 4, 32, false, false),
    (11, 64, 48, true, true),
    (36, 81, 13, false, true),
];

fn matmul_layouts(c: &mut Criterion) {
    let mut group = c.benchmark_group("matmul_layouts");
    group.sample_size(20);
    for (i, &(m, k, n, a_rows, b_rows)) in LAYOUTS.iter().enumerate() {
        let mut rng = StdRng::seed_from_u64(i as u64);
        let (a, av, a_strides) = raw_sgemm::operand(&mut rng, m, k, a_rows);
        let (b, bv, b_strides) = raw_sgemm::operand(&mut rng, k, n, b_rows);
        let order = |by_rows| if by_rows { "rows" } else { "cols" };
        let name = format!("{m}x{k}x{n} A {} B {}", order(a_rows), order(b_rows));
        group.throughput(Throughput::Elements(2 * (m * k * n) as u64));
        group.bench_with_input(BenchmarkId::new("lazy", &name), &(), |bench, _| {
            bench.iter(|| {
                let c = black_box(&a).matmul(black_box(&b));
                c.realize();
                c
            })
        });
        group.bench_with_input(BenchmarkId::new("sgemm", &name), &(), |bench, _| {
            bench.iter(|| {
                raw_sgemm::sgemm_strided((m, k, n), black_box(&av), a_strides, black_box(&bv), b_strides)
            })
        });
    }
    group.finish();
}

/// Fused multiply-adds per iteration: 16 independent chains of 16 lanes, twice what the two FMA
/// units' four-cycle latency needs in flight. (At 24, LLVM spilled a third of them every round.)
#[cfg(target_arch = "x86_64")]
const CHAINS: usize = 16;
/// Iterations per sample.
#[cfg(target_arch = "x86_64")]
const ROUNDS: usize = 1 << 16;

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn fma_rounds(rounds: usize) -> f32 {
    use std::arch::x86_64::*;
    let mut acc = [_mm512_set1_ps(0.0); CHAINS];
    let (a, b) = (_mm512_set1_ps(0.999_999), _mm512_set1_ps(1e-6));
    for _ in 0..rounds {
        for x in &mut acc {
            *x = _mm512_fmadd_ps(*x, a, b);
        }
    }
    acc.iter().map(|&x| _mm512_reduce_add_ps(x)).sum()
}

fn fma_peak(c: &mut Criterion) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        let mut group = c.benchmark_group("fma_peak");
        // 16 lanes, two FLOPs each.
        group.throughput(Throughput::Elements((ROUNDS * CHAINS * 16 * 2) as u64));
        group.bench_function("avx512", |bench| {
            // SAFETY: the CPU has AVX-512F (checked above).
            bench.iter(|| unsafe { fma_rounds(black_box(ROUNDS)) })
        });
        group.finish();
        return;
    }
    let _ = c;
    println!("fma_peak: skipped, this CPU has no AVX-512");
}

criterion_group!(benches, matmul, matmul_layouts, fma_peak);
criterion_main!(benches);
