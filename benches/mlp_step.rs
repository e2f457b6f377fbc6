//! One MLP training step (forward, cross entropy, backward, SGD update) and one inference pass,
//! for the two models the speed issue compares with PyTorch: 64→128→10 at batch 32 and
//! 784→512→256→10 at batch 128; and the larger model's inference on one sample, where the
//! weights are read once and nothing is reused.

use criterion::{Criterion, criterion_group, criterion_main};
use rand::SeedableRng;
use rand::rngs::StdRng;
use std::hint::black_box;
use teenygrad::nn::{Detach, Init, Linear, Module, Params, Relu};
use teenygrad::optim::{Optimizer, Sgd};
use teenygrad::prelude::*;

fn labels<const B: usize>(rng: &mut StdRng) -> Labels<Const<B>> {
    use rand::Rng;
    Labels::new((0..B).map(|_| rng.random_range(0..10)).collect(), Const).unwrap()
}

macro_rules! step_bench {
    ($c:expr, $name:literal, $model:ty, $batch:literal, $features:literal) => {{
        let mut rng = StdRng::seed_from_u64(0);
        let mut model = <$model>::init(&mut rng);
        let x = Tensor::<Rank2<$batch, $features>>::rand(&mut rng);
        let y = labels::<$batch>(&mut rng);
        let mut sgd = Sgd::new(0.01).momentum(0.9);
        $c.bench_function(concat!($name, " train step"), |b| {
            b.iter(|| {
                let loss = cross_entropy(&model.forward(x.clone()), &y).unwrap();
                loss.backward();
                sgd.step(&mut model);
                model.zero_grad();
            })
        });
        let inference = model.detached();
        $c.bench_function(concat!($name, " inference"), |b| {
            b.iter(|| black_box(inference.forward(x.clone()).realize()))
        });
    }};
}

fn mlp_steps(c: &mut Criterion) {
    step_bench!(
        c,
        "mlp 64-128-10 b32",
        (Linear<64, 128>, Relu, Linear<128, 10>),
        32,
        64
    );
    step_bench!(
        c,
        "mlp 784-512-256-10 b128",
        (Linear<784, 512>, Relu, Linear<512, 256>, Relu, Linear<256, 10>),
        128,
        784
    );
}

fn single_sample(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(0);
    let model =
        <(Linear<784, 512>, Relu, Linear<512, 256>, Relu, Linear<256, 10>)>::init(&mut rng).detached();
    let x = Tensor::<Rank2<1, 784>>::rand(&mut rng);
    c.bench_function("mlp 784-512-256-10 b1 inference", |b| {
        b.iter(|| black_box(model.forward(x.clone()).realize()))
    });
}

criterion_group!(benches, mlp_steps, single_sample);
criterion_main!(benches);
