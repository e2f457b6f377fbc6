//! Reused schedules: a graph with the structure of one realized before on the same thread runs the
//! kernels planned for that one (`stats::schedules_reused` counts it), gives exactly what a fresh
//! schedule gives, and anything that changes the structure — an op, a shape, a view, which inputs
//! are the same buffer, which nodes are requested — gets a schedule of its own.
//!
//! Debug builds (`cargo test`) also check every replay against a fresh plan of the same graph.

use rand::SeedableRng;
use rand::rngs::StdRng;
use teenygrad::lazy::{BinaryOp, LazyBuffer, UnaryOp, reference, stats};
use teenygrad::nn::{Init, Linear, Module, Params, Relu};
use teenygrad::optim::{Optimizer, Sgd};
use teenygrad::prelude::*;

fn values(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| ((i as u32 * 7 + seed * 13) % 23) as f32 * 0.125 - 1.0)
        .collect()
}

fn buffer(shape: &[usize], seed: u32) -> LazyBuffer {
    LazyBuffer::from_vec(values(shape.iter().product(), seed), shape).unwrap()
}

/// The f64 reference rounded to f32: these graphs are a product and a sum of values with few
/// significant bits (multiples of 1/8 below 2), so each op is exact in f32 too.
fn reference_f32(y: &LazyBuffer) -> Vec<f32> {
    reference::evaluate(y).iter().map(|&v| v as f32).collect()
}

/// A graph with a broadcast, a transposed read, a padded view and a reduction, built from `a`
/// (`[3, 4]`) and `bias` (`[1, 4]`).
fn graph(a: &LazyBuffer, bias: &LazyBuffer) -> (LazyBuffer, LazyBuffer) {
    let shifted = a.add(&bias.expand(&[3, 4])).unary(UnaryOp::Exp);
    let t = shifted.permute(&[1, 0]).mul(&a.permute(&[1, 0])); // [4, 3]
    let padded = t.pad(&[(0, 0), (1, 1)]).unary(UnaryOp::Exp); // [4, 5], 1 where padded
    (padded, t.sum(&[1]))
}

/// Realizes both outputs and returns them with how many schedules were reused doing it.
fn realize(outputs: &(LazyBuffer, LazyBuffer)) -> (Vec<f32>, Vec<f32>, u64) {
    let before = stats::get().schedules_reused;
    LazyBuffer::realize_all(&[&outputs.0, &outputs.1]);
    (
        outputs.0.to_vec(),
        outputs.1.to_vec(),
        stats::get().schedules_reused - before,
    )
}

#[test]
fn a_repeated_structure_reuses_its_schedule_with_new_values() {
    let first = graph(&buffer(&[3, 4], 0), &buffer(&[1, 4], 1));
    realize(&first);
    for seed in 2..6 {
        let (a, bias) = (buffer(&[3, 4], seed), buffer(&[1, 4], seed + 10));
        let outputs = graph(&a, &bias);
        let want = (reference::evaluate(&outputs.0), reference::evaluate(&outputs.1));
        let (padded, sums, reused) = realize(&outputs);
        assert_eq!(reused, 1, "seed {seed}: the schedule is reused");
        // exp of values in [-2, 2], a product, sums of 3: a few ulp of values below e^4.
        for (got, want) in padded.iter().chain(&sums).zip(want.0.iter().chain(&want.1)) {
            assert!(
                (*got as f64 - want).abs() <= 1e-5 * want.abs().max(1.0),
                "seed {seed}: {got} vs {want}"
            );
        }
        // The same graph scheduled afresh (on another thread, whose plans are empty) agrees bit
        // for bit.
        let fresh = std::thread::spawn(move || {
            let outputs = graph(&a, &bias);
            realize(&outputs)
        })
        .join()
        .unwrap();
        assert_eq!((fresh.0, fresh.1, fresh.2), (padded, sums, 0));
    }
}

/// Builds a graph from two `[3, 4]` buffers.
type Build = dyn Fn(&LazyBuffer, &LazyBuffer) -> LazyBuffer;

#[test]
fn another_structure_gets_its_own_schedule() {
    let a = buffer(&[3, 4], 0);
    let b = buffer(&[3, 4], 1);
    let cases: Vec<(&str, Box<Build>)> = vec![
        ("a*b+a", Box::new(|a, b| a.mul(b).add(a))),
        ("a*b-a, another op", Box::new(|a, b| a.mul(b).sub(a))),
        ("a*a+a, the same buffer twice", Box::new(|a, _| a.mul(a).add(a))),
        (
            "aᵀ*bᵀ+aᵀ, other views",
            Box::new(|a, b| {
                let (at, bt) = (a.permute(&[1, 0]), b.permute(&[1, 0]));
                at.mul(&bt).add(&at)
            }),
        ),
        (
            "a*b+a over a shrunk part",
            Box::new(|a, b| {
                let (a, b) = (a.shrink(&[(0, 2), (0, 4)]), b.shrink(&[(1, 3), (0, 4)]));
                a.mul(&b).add(&a)
            }),
        ),
    ];
    // Each twice, the second time with new buffers: then every one is reused, and still right.
    for (round, (a, b)) in [(a, b), (buffer(&[3, 4], 5), buffer(&[3, 4], 6))]
        .iter()
        .enumerate()
    {
        for (name, f) in &cases {
            let before = stats::get().schedules_reused;
            let y = f(a, b);
            assert_eq!(y.to_vec(), reference_f32(&y), "{name}");
            let reused = stats::get().schedules_reused - before;
            assert_eq!(reused, round as u64, "{name}, round {round}");
        }
    }
}

#[test]
fn a_view_that_differs_only_in_its_strides_is_another_structure() {
    // Square buffers: a transposed read has the same shape as a plain one.
    let plain = |a: &LazyBuffer, b: &LazyBuffer| a.mul(b).add(a);
    let transposed = |a: &LazyBuffer, b: &LazyBuffer| a.permute(&[1, 0]).mul(b).add(a);
    for (seed, (f, reused)) in [
        (plain as fn(&_, &_) -> _, 0),
        (transposed, 0),
        (plain, 1),
        (transposed, 1),
    ]
    .into_iter()
    .enumerate()
    {
        let before = stats::get().schedules_reused;
        let (a, b) = (buffer(&[4, 4], seed as u32), buffer(&[4, 4], 9));
        let y = f(&a, &b);
        assert_eq!(y.to_vec(), reference_f32(&y), "case {seed}");
        assert_eq!(stats::get().schedules_reused - before, reused, "case {seed}");
    }
}

#[test]
fn requesting_an_intermediate_is_another_structure() {
    let run = |seed: u32, request_middle: bool| {
        let a = buffer(&[4, 4], seed);
        let middle = a.mul(&a);
        let y = middle.binary(BinaryOp::Max, &a).sum(&[0]);
        let before = stats::get().schedules_reused;
        if request_middle {
            LazyBuffer::realize_all(&[&y, &middle]);
        } else {
            y.realize();
        }
        assert!(y.is_realized());
        // A requested node gets its own buffer; otherwise it is fused away.
        assert_eq!(middle.is_realized(), request_middle);
        assert_eq!(y.to_vec(), reference_f32(&y));
        stats::get().schedules_reused - before
    };
    assert_eq!(run(0, false), 0);
    assert_eq!(
        run(1, true),
        0,
        "requesting the middle node is not the first graph"
    );
    assert_eq!(run(2, false), 1);
    assert_eq!(run(3, true), 1);
}

#[test]
fn training_steps_after_the_first_reuse_their_schedule() {
    let mut rng = StdRng::seed_from_u64(0);
    let mut model = <(Linear<8, 16>, Relu, Linear<16, 3>)>::init(&mut rng);
    let mut twin = model.clone();
    let x = Tensor::<Rank2<4, 8>>::rand(&mut rng);
    let labels = Labels::new(vec![0, 2, 1, 2], Const).unwrap();
    let (mut sgd, mut twin_sgd) = (Sgd::new(0.1).momentum(0.9), Sgd::new(0.1).momentum(0.9));
    let mut losses = Vec::new();
    for step in 0..5 {
        let before = stats::get().schedules_reused;
        let loss = cross_entropy(&model.forward(x.clone()), &labels).unwrap();
        loss.backward();
        sgd.step(&mut model);
        model.zero_grad();
        let reused = stats::get().schedules_reused - before;
        assert_eq!(reused, u64::from(step > 0), "step {step}");
        losses.push(loss.item());
    }
    // The same steps with every schedule fresh (on a new thread each) give the same losses.
    for (step, &loss) in losses.iter().enumerate() {
        let (mut m, mut opt) = (twin, twin_sgd);
        let (x, labels) = (x.clone(), labels.clone());
        let (fresh, m, opt) = std::thread::spawn(move || {
            let loss = cross_entropy(&m.forward(x), &labels).unwrap();
            loss.backward();
            opt.step(&mut m);
            m.zero_grad();
            (loss.item(), m, opt)
        })
        .join()
        .unwrap();
        assert_eq!(fresh, loss, "step {step}");
        (twin, twin_sgd) = (m, opt);
    }
}

/// Realizes `exp(a·a)` summed over rows, `a` of `[n, 4]`, and returns how many schedules were
/// reused doing it; checks the value.
fn realize_rows(n: usize, seed: u32) -> u64 {
    let a = buffer(&[n, 4], seed);
    let y = a.mul(&a).unary(UnaryOp::Exp).sum(&[1]);
    let before = stats::get().schedules_reused;
    y.realize();
    let reused = stats::get().schedules_reused - before;
    let want = reference::evaluate(&y);
    for (got, want) in y.to_vec().iter().zip(want) {
        // exp is within about 1 ulp of f64's; four f32 adds of positive terms add 4 more.
        assert!(
            (*got as f64 - want).abs() <= 8.0 * f32::EPSILON as f64 * want,
            "{n} rows"
        );
    }
    reused
}

#[test]
fn a_loop_over_many_sizes_keeps_each_ones_schedule() {
    // Each run-time size is a structure of its own (a last, shorter batch; sequences of many
    // lengths): 24 sizes, then the same again, every one reused.
    for round in 0..2 {
        for n in 1..=24 {
            assert_eq!(realize_rows(n, n as u32), round, "{n} rows, round {round}");
        }
    }
    // A structure used all along stays kept however many others come and go.
    realize_rows(100, 0);
    for n in 200..260 {
        assert_eq!(realize_rows(100, n as u32), 1, "after {} other sizes", n - 200);
        assert_eq!(realize_rows(n, 0), 0, "{n} rows, the first time");
    }
}

/// Realizing a huge graph (whose maps the thread lets go of afterwards) keeps the plans of the
/// graphs realized before it: the next repeat of one is still a reuse.
#[test]
fn a_huge_graph_between_repeats_keeps_their_plans() {
    let first = graph(&buffer(&[3, 4], 0), &buffer(&[1, 4], 1));
    realize(&first);
    let mut deep = buffer(&[4], 2);
    for _ in 0..10_000 {
        deep = deep.unary(UnaryOp::Neg);
    }
    deep.realize();
    assert_eq!(
        deep.to_vec(),
        buffer(&[4], 2).to_vec(),
        "an even number of negations"
    );
    let again = graph(&buffer(&[3, 4], 3), &buffer(&[1, 4], 4));
    assert_eq!(realize(&again).2, 1);
}
