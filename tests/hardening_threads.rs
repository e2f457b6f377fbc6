//! Threads: the user-facing types are `Send` and `Sync`; trainings on separate threads are
//! bit-identical to the same trainings run one after the other; the same seed gives the same run;
//! and tensors shared between threads (a pending graph realized by several threads at once, a
//! parameter whose gradient several threads accumulate into) give the values a single thread
//! gives; and kernels that the pool's threads share give the same bits on any thread count.

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

/// Set in a child run of this binary to the thread count it was started with (see
/// [`kernels_give_the_same_bits_on_any_thread_count`]).
const THREADS_CHILD: &str = "TEENYGRAD_THREADS_CHILD";

/// Kernels whose work is split among the pool's threads when they have more than one (pieces of
/// reductions, rows of outputs, products), each as `(name, bits of the result)`: large
/// reductions by every plan of stored and of computed values, an elementwise kernel and a
/// product. Values of mixed magnitudes, so any other grouping of a sum's additions shows.
fn split_kernels() -> Vec<(String, Vec<u32>)> {
    use rand::Rng;
    use teenygrad::lazy::{ReduceOp, UnaryOp};
    let mut rng = StdRng::seed_from_u64(21);
    let mut tensor = |shape: &[usize]| {
        let n = shape.iter().product();
        let values = (0..n).map(|_| rng.random_range(-1.0f32..1.0) * 10f32.powi(rng.random_range(-4..5)));
        LazyBuffer::from_vec(values.collect(), shape).unwrap()
    };
    let bits = |x: &LazyBuffer| x.to_vec().into_iter().map(f32::to_bits).collect::<Vec<_>>();
    let mut results = Vec::new();
    for shape in [
        &[1usize << 20][..],
        &[128, 8192],
        &[1024, 1024],
        &[4096, 256],
        &[3, 100_003],
    ] {
        let stored = tensor(shape);
        let computed = stored.unary(UnaryOp::Tanh).mul(&stored);
        let last = shape.len() - 1;
        for (what, x) in [("stored", &stored), ("computed", &computed)] {
            let mut axis_sets = vec![vec![last], vec![0], (0..shape.len()).collect()];
            axis_sets.dedup();
            for axes in axis_sets {
                for op in [ReduceOp::Sum, ReduceOp::Max] {
                    let name = format!("{op:?} over {axes:?} of {what} {shape:?}");
                    results.push((name, bits(&x.reduce(op, &axes))));
                }
            }
        }
        results.push((format!("tanh(x)·x of {shape:?}"), bits(&computed)));
    }
    let (a, b) = (tensor(&[300, 400]), tensor(&[400, 500]));
    results.push(("[300, 400] x [400, 500]".into(), bits(&a.matmul(&b))));
    results
}

/// The child run's side: prints each kernel's name and a hash of its bits.
#[test]
fn split_kernels_child() {
    if std::env::var(THREADS_CHILD).is_err() {
        return;
    }
    for (name, bits) in split_kernels() {
        println!("kernel\t{name}\t{:016x}", fnv1a(&bits));
    }
}

/// FNV-1a over the values' bits: equal lists, equal hashes; one changed bit changes it.
fn fnv1a(bits: &[u32]) -> u64 {
    bits.iter()
        .flat_map(|b| b.to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325, |h, byte| {
            (h ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        })
}

/// The design's promise that a result does not depend on how many threads computed it: this
/// process (the machine's threads, or `TEENYGRAD_THREADS`) against child runs of this binary on
/// one thread (where reductions run their pieces one after the other) and on three.
#[test]
fn kernels_give_the_same_bits_on_any_thread_count() {
    let here: Vec<(String, u64)> = (split_kernels().into_iter())
        .map(|(name, bits)| (name, fnv1a(&bits)))
        .collect();
    for threads in ["1", "3"] {
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "split_kernels_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(THREADS_CHILD, threads)
            .env("TEENYGRAD_THREADS", threads)
            .output()
            .expect("run the test binary again");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "the child with TEENYGRAD_THREADS={threads} failed:\n{stdout}"
        );
        let there: Vec<(String, u64)> = (stdout.lines())
            .filter_map(|line| {
                // The harness's own output can precede the first on its line.
                let mut fields = line.split_once("kernel\t")?.1.split('\t');
                let (name, hash) = (fields.next()?, fields.next()?);
                Some((name.to_string(), u64::from_str_radix(hash, 16).ok()?))
            })
            .collect();
        assert_eq!(
            there.len(),
            here.len(),
            "the child with TEENYGRAD_THREADS={threads} printed:\n{stdout}"
        );
        for ((name, mine), (_, theirs)) in here.iter().zip(&there) {
            assert_eq!(
                mine, theirs,
                "{name}: different bits with TEENYGRAD_THREADS={threads}"
            );
        }
    }
}

/// The name of threads that race backwards: their panics are expected and caught, and would
/// print a message each, so the panic hook stays quiet for them alone.
const RACER: &str = "backward race";

/// Runs `loss.backward()` on a racer thread once `barrier` opens; true if it did not panic.
fn race_backward(loss: Tensor<(), Tracked>, barrier: Arc<Barrier>) -> thread::JoinHandle<bool> {
    static QUIET: std::sync::Once = std::sync::Once::new();
    QUIET.call_once(|| {
        let report = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if thread::current().name() != Some(RACER) {
                report(info);
            }
        }));
    });
    let run = move || {
        barrier.wait();
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| loss.backward())).is_ok()
    };
    thread::Builder::new()
        .name(RACER.into())
        .spawn(run)
        .expect("a thread")
}

/// Two threads backpropagating through one shared part at once: one takes it, the other panics
/// before any gradient changes (as a second backward on one thread does). Checked and then taken
/// node by node, the loser could find the shared rule gone midway, after its other leaves had
/// their gradients: 214 of 2,000 such races did, in a release build.
#[test]
fn concurrent_backwards_through_a_shared_part_change_nothing_when_they_panic() {
    let chain = |mut t: Tensor<Rank1<3>, Tracked>| {
        // A longer walk before the shared part is reached: a wider window for the race.
        for _ in 0..20 {
            t = t * 1.0;
        }
        t
    };
    let mut wins = [0; 2];
    for _ in 0..500 {
        let w1 = Tensor::from([1.0, 2.0, 3.0]).requires_grad();
        let w2 = Tensor::from([1.0, 1.0, 1.0]).requires_grad();
        let shared = &w1 * 2.0;
        let barrier = Arc::new(Barrier::new(2));
        let a = race_backward(shared.sum_all() + chain(&w2 * 3.0).sum_all(), barrier.clone());
        let b = race_backward(chain(shared.clone()).sum_all(), barrier);
        let (a, b) = (a.join().expect("caught"), b.join().expect("caught"));
        assert!(!(a && b), "the shared rule ran twice");
        let (g1, g2) = (w1.grad_values(), w2.grad_values());
        match (a, b) {
            (true, false) => assert_eq!((g1, g2), (Some(vec![2.0; 3]), Some(vec![3.0; 3]))),
            (false, true) => assert_eq!((g1, g2), (Some(vec![2.0; 3]), None)),
            // Each took part of the shared graph, gave it back and panicked.
            _ => assert_eq!((g1, g2), (None, None)),
        }
        wins[usize::from(b)] += usize::from(a || b);
    }
    eprintln!("wins (first, second): {wins:?}");
}

/// Two backwards through many shared nodes reached in opposite orders: each may take some and
/// find another gone, and must give its own back without waiting on the other's (holding a
/// node's lock while giving back, two such threads deadlocked within 100 races). Run on a thread
/// of its own, so that a deadlock fails the test by its time limit instead of hanging it.
#[test]
fn concurrent_backwards_taking_shared_nodes_in_opposite_orders_finish() {
    let (done, finished) = std::sync::mpsc::channel();
    thread::spawn(move || {
        for _ in 0..200 {
            let leaves: Vec<_> = (0..200)
                .map(|i| Tensor::from([i as f32]).requires_grad())
                .collect();
            let shared: Vec<_> = leaves.iter().map(|w| w * 2.0).collect();
            let sum = |parts: &mut dyn Iterator<Item = &Tensor<Rank1<1>, Tracked>>| {
                let first = parts.next().expect("parts").sum_all();
                parts.fold(first, |acc, p| acc + p.sum_all())
            };
            let forward = sum(&mut shared.iter());
            let reverse = sum(&mut shared.iter().rev());
            let barrier = Arc::new(Barrier::new(2));
            let racers = [forward, reverse].map(|loss| race_backward(loss, barrier.clone()));
            let racers = racers.map(|racer| racer.join().expect("caught"));
            assert!(!(racers[0] && racers[1]), "the shared rules ran twice");
        }
        done.send(()).expect("the test waits");
    });
    finished
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("200 races finish (a timeout is a deadlock)");
}
