//! What tracking costs: the same forward pass, `relu(x[32, 64] @ W[64, 128] + b) @ W2[128, 10]`
//! summed, built and realized with untracked parameters and with tracked ones (each op also
//! records its backward rule), and, for scale, tracked forward plus `backward()`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use rand::SeedableRng;
use rand::rngs::StdRng;
use teenygrad::prelude::*;

type Params<G> = (
    Tensor<Rank2<64, 128>, G>,
    Tensor<Rank1<128>, G>,
    Tensor<Rank2<128, 10>, G>,
);

/// The forward pass: the loss, built lazily (nothing runs until it is realized or read).
fn forward<G>(x: &Tensor<(usize, Const<64>)>, (w, b, w2): &Params<G>) -> Tensor<(), G>
where
    NoGrad: teenygrad::tensor::Join<G, Out = G>,
    G: GradMode + teenygrad::tensor::Join<G, Out = G>,
{
    (x.matmul(w) + b).relu().matmul(w2).sum_all()
}

fn tracking(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(0);
    let x = Tensor::randn_in((32usize, Const::<64>), &mut rng).realize();
    let w = Tensor::<Rank2<64, 128>>::randn(&mut rng) * 0.125;
    let b = Tensor::<Rank1<128>>::randn(&mut rng) * 0.1;
    let w2 = Tensor::<Rank2<128, 10>>::randn(&mut rng) * 0.09;
    let untracked: Params<NoGrad> = (w.realize(), b.realize(), w2.realize());
    let tracked: Params<Tracked> = (
        untracked.0.clone().requires_grad(),
        untracked.1.clone().requires_grad(),
        untracked.2.clone().requires_grad(),
    );

    let mut group = c.benchmark_group("mlp_forward_32x64x128x10");
    group.bench_function("untracked_build_realize", |bench| {
        bench.iter(|| forward(black_box(&x), black_box(&untracked)).realize())
    });
    group.bench_function("tracked_build_realize", |bench| {
        bench.iter(|| forward(black_box(&x), black_box(&tracked)).realize())
    });
    group.bench_function("tracked_build_realize_backward", |bench| {
        bench.iter(|| {
            let loss = forward(black_box(&x), black_box(&tracked)).realize();
            loss.backward();
            tracked.0.zero_grad();
            tracked.1.zero_grad();
            tracked.2.zero_grad();
        })
    });
    group.finish();
}

criterion_group!(benches, tracking);
criterion_main!(benches);
