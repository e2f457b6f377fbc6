//! Threads: the user-facing types are `Send` and `Sync`; trainings on separate threads are
//! bit-identical to the same trainings run one after the other; the same seed gives the same run;
//! and tensors shared between threads (a pending graph realized by several threads at once, a
//! parameter whose gradient several threads accumulate into) give the values a single thread
//! gives.

use std::sync::{Arc, Barrier};
use std::thread;

use rand::SeedableRng;
use rand::rngs::StdRng;
use teenygrad::data::{Batcher, Dataset, Remainder, toy_digits_split};
use teenygrad::lazy::LazyBuffer;
use teenygrad::nn::{Detach, Gelu, Init, Linear, Mlp, Module, Params, Relu};
use teenygrad::optim::{Adam, Optimizer, Sgd};
use teenygrad::prelude::*;

fn assert_send<T: Send>() {}
fn assert_sync<T: Sync>() {}
fn assert_send_sync<T: Send + Sync + 'static>() {
    assert_send::<T>();
    assert_sync::<T>();
}

/// Compile-time: the types a user moves between or shares across threads.
#[test]
fn user_facing_types_are_send_and_sync() {
    assert_send_sync::<Tensor<Rank2<2, 3>>>();
    assert_send_sync::<Tensor<Rank2<2, 3>, Tracked>>();
    assert_send_sync::<Tensor<(usize, Const<64>), Tracked>>();
    assert_send_sync::<Tensor<()>>();
    assert_send_sync::<LazyBuffer>();
    assert_send_sync::<Linear<4, 8>>();
    assert_send_sync::<Linear<4, 8, NoGrad>>();
    assert_send_sync::<Mlp<64, 128, 10>>();
    assert_send_sync::<<Mlp<64, 128, 10> as Detach>::Detached>();
    assert_send_sync::<(Linear<2, 3>, Gelu, Linear<3, 1>)>();
    assert_send_sync::<Relu>();
    assert_send_sync::<Sgd>();
    assert_send_sync::<Adam>();
    assert_send_sync::<Labels<usize>>();
    assert_send_sync::<Labels<Const<32>>>();
    assert_send_sync::<Dataset>();
    assert_send_sync::<Batcher>();
    assert_send_sync::<teenygrad::Error>();
    assert_send_sync::<teenygrad::lazy::stats::Stats>();
}

/// A training of `Mlp<64, 32, 10>` on 640 toy digits; returns every step's loss and the final
/// parameters, as bits.
fn train(seed: u64, adam: bool, steps: usize) -> (Vec<u32>, Vec<u32>) {
    let data = toy_digits_split(seed, 640, 0).train;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut model = Mlp::<64, 32, 10>::init(&mut rng);
    let mut sgd = Sgd::new(0.1).momentum(0.9);
    let mut adamw = Adam::adamw(0.01);
    let mut losses = Vec::with_capacity(steps);
    'outer: loop {
        for indices in Batcher::new(data.len(), 32, Remainder::Keep, &mut rng) {
            if losses.len() == steps {
                break 'outer;
            }
            let (x, y) = data.gather(&indices);
            let x = Tensor::from_vec(x, (indices.len(), Const::<64>)).unwrap();
            let loss = cross_entropy(&model.forward(x), &Labels::from_vec(y)).unwrap();
            loss.backward();
            losses.push(loss.item().to_bits());
            if adam {
                adamw.step(&mut model);
            } else {
                sgd.step(&mut model);
            }
            model.zero_grad();
        }
    }
    let params = model
        .state_dict()
        .into_iter()
        .flat_map(|(_, _, values)| values)
        .map(f32::to_bits)
        .collect();
    (losses, params)
}

#[test]
fn trainings_in_threads_are_bit_identical_to_sequential_ones() {
    const STEPS: usize = 40;
    let sequential = [train(1, false, STEPS), train(2, true, STEPS)];
    // Same seed, same run.
    assert_eq!(
        train(1, false, STEPS),
        sequential[0],
        "a second run of seed 1 differs"
    );
    // Both at once, on two threads started together.
    let barrier = Arc::new(Barrier::new(2));
    let handles: Vec<_> = [(1, false), (2, true)]
        .into_iter()
        .map(|(seed, adam)| {
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                barrier.wait();
                train(seed, adam, STEPS)
            })
        })
        .collect();
    let parallel: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(parallel[0], sequential[0], "the SGD training differs on a thread");
    assert_eq!(
        parallel[1], sequential[1],
        "the AdamW training differs on a thread"
    );
    assert_ne!(sequential[0].0, sequential[1].0);
    // A model trained on one thread moves to another and predicts the same there.
    let data = toy_digits_split(5, 64, 0).train;
    let mut rng = StdRng::seed_from_u64(5);
    let model = Mlp::<64, 32, 10>::init(&mut rng);
    let x = Tensor::from_vec(data.flat_images(), (data.len(), Const::<64>)).unwrap();
    let here = model.forward(x.clone()).to_vec();
    let there = thread::spawn(move || model.forward(x).to_vec()).join().unwrap();
    assert_eq!(here, there);
}

/// A pending graph shared by four threads, each realizing it at once (and reading it through
/// another view): every thread reads the values one thread alone computes.
#[test]
fn a_shared_pending_graph_realized_by_several_threads_at_once() {
    let build = || {
        let mut rng = StdRng::seed_from_u64(9);
        let a = Tensor::<Rank2<48, 40>>::randn(&mut rng);
        let b = Tensor::<Rank2<40, 24>>::randn(&mut rng);
        let mut h = a.matmul(&b).tanh();
        for _ in 0..20 {
            h = (&h * 1.5).sin() + &h.softmax::<Axis<1>>();
        }
        h
    };
    let expected = build().to_vec();
    for round in 0..8 {
        let shared = Arc::new(build());
        let barrier = Arc::new(Barrier::new(4));
        let handles: Vec<_> = (0..4)
            .map(|k| {
                let (shared, barrier) = (Arc::clone(&shared), Arc::clone(&barrier));
                thread::spawn(move || {
                    barrier.wait();
                    if k % 2 == 0 {
                        shared.to_vec()
                    } else {
                        // Through a transpose: realizes the same node, then reads a view.
                        let t = shared.t().to_vec();
                        (0..48 * 24).map(|i| t[(i % 24) * 48 + i / 24]).collect()
                    }
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), expected, "round {round}");
        }
    }
}

/// One parameter, several threads each building its own loss from it and backpropagating at the
/// same time: the gradients add up in the parameter (values chosen so that every order of the
/// additions gives the same sum).
#[test]
fn gradients_from_several_threads_accumulate_in_a_shared_parameter() {
    const THREADS: usize = 4;
    const ROUNDS: usize = 25;
    let w = Arc::new(Tensor::from([[0.5, -1.0], [2.0, 0.25]]).requires_grad());
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|k| {
            let (w, barrier) = (Arc::clone(&w), Arc::clone(&barrier));
            thread::spawn(move || {
                let x = Tensor::from([1.0, (k + 1) as f32]);
                barrier.wait();
                for _ in 0..ROUNDS {
                    // d/dw Σ (w·x) = [x; x] per row: exact small integers.
                    w.matmul(&x).sum_all().backward();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    // Σ over threads of ROUNDS · (1, k + 1), in each row.
    let per_row = [
        (THREADS * ROUNDS) as f32,
        (ROUNDS * (1..=THREADS).sum::<usize>()) as f32,
    ];
    assert_eq!(w.grad().unwrap().to_array(), [per_row, per_row]);
    w.zero_grad();
    assert!(w.grad().is_none());
}

/// A layer shared read-only by threads (inference through its untracked twin) while the owner
/// keeps training a copy: each thread sees the values it was handed.
#[test]
fn a_detached_model_serves_threads_while_the_original_trains() {
    let mut rng = StdRng::seed_from_u64(11);
    let mut model = (
        Linear::<8, 4>::init(&mut rng),
        Relu,
        Linear::<4, 2>::init(&mut rng),
    );
    let frozen = Arc::new(model.detached());
    let x = Tensor::<Rank2<16, 8>>::randn(&mut rng);
    let expected = frozen.forward(x.clone()).to_vec();
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (frozen, x) = (Arc::clone(&frozen), x.clone());
            thread::spawn(move || {
                (0..50)
                    .map(|_| frozen.forward(x.clone()).to_vec())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut opt = Sgd::new(0.5);
    for _ in 0..50 {
        let loss = model.forward(x.clone()).square().mean_all();
        loss.backward();
        opt.step(&mut model);
        model.zero_grad();
    }
    for r in readers {
        for values in r.join().unwrap() {
            assert_eq!(values, expected, "a reader saw the trainer's updates");
        }
    }
    assert_ne!(
        model.detached().forward(x).to_vec(),
        expected,
        "the original did train"
    );
}
