//! The SGD update (momentum 0.9) of the 784→512→256→10 MLP's 535,818 parameters, the update in
//! the large training step of `mlp_step`, against its limits: a hand-written single-pass loop of
//! the same arithmetic over three arrays of that length, and a pass that only reads them. The
//! update reads weights, gradients and velocities (6.4 MB, more than L2 holds) and writes two of
//! them back: where the pass that only reads takes as long, the bytes bound it, not the code.

use criterion::{Criterion, criterion_group, criterion_main};
use rand::SeedableRng;
use rand::rngs::StdRng;
use std::hint::black_box;
use teenygrad::nn::{Init, Linear, Module, Relu};
use teenygrad::optim::{Optimizer, Sgd};
use teenygrad::prelude::*;

type Mlp = (Linear<784, 512>, Relu, Linear<512, 256>, Relu, Linear<256, 10>);

/// The model's parameter count: its weights and biases.
const PARAMS: usize = 784 * 512 + 512 + 512 * 256 + 256 + 256 * 10 + 10;

/// One update of `w` by SGD with momentum from `g`, `v` the velocities, as `Sgd` computes it.
fn update_by_hand(w: &mut [f32], v: &mut [f32], g: &[f32], lr: f32, momentum: f32) {
    for ((w, v), &g) in w.iter_mut().zip(v.iter_mut()).zip(g) {
        *v = momentum * *v + g;
        *w -= *v * lr;
    }
}

/// Reads every value of the three arrays, in 16 independent lanes so the compiler vectorizes it.
fn read_all(arrays: [&[f32]; 3]) -> f32 {
    let mut lanes = [0.0f32; 16];
    for array in arrays {
        for chunk in array.chunks_exact(16) {
            for (lane, &x) in lanes.iter_mut().zip(chunk) {
                *lane += x;
            }
        }
    }
    lanes.iter().sum()
}

fn optimizer(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(0);
    let mut model = Mlp::init(&mut rng);
    let x = Tensor::<Rank2<128, 784>>::rand(&mut rng);
    let y = {
        use rand::Rng;
        Labels::new((0..128).map(|_| rng.random_range(0..10)).collect(), Const::<128>).unwrap()
    };
    // The gradients of one step stay in place: every update below reads the same ones. A small
    // rate keeps the weights where training would have them over millions of updates.
    cross_entropy(&model.forward(x), &y).unwrap().backward();
    let mut sgd = Sgd::new(1e-6).momentum(0.9);
    let mut group = c.benchmark_group("sgd_update_784_512_256_10");
    group.bench_function("step", |b| b.iter(|| sgd.step(black_box(&mut model))));

    let (mut w, mut v) = (vec![0.01f32; PARAMS], vec![0.0f32; PARAMS]);
    let g: Vec<f32> = (0..PARAMS).map(|i| (i % 101) as f32 * 1e-4 - 5e-3).collect();
    group.bench_function("hand_loop", |b| {
        b.iter(|| update_by_hand(black_box(&mut w), black_box(&mut v), black_box(&g), 1e-6, 0.9))
    });
    group.bench_function("read_only", |b| b.iter(|| read_all(black_box([&w, &v, &g]))));
    group.finish();
}

criterion_group!(benches, optimizer);
criterion_main!(benches);
