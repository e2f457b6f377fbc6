//! Parameters seen through more than one handle: a clone kept across a step, a parameter held by
//! two layers (tied weights), a pending graph built before a step.

use rand::SeedableRng;
use rand::rngs::StdRng;
use teenygrad::nn::{Init, Linear, Params};
use teenygrad::optim::{Adam, Optimizer, Sgd, clip_grad_norm};
use teenygrad::prelude::*;

fn layer() -> Linear<3, 1> {
    Linear::init(&mut StdRng::seed_from_u64(7))
}

#[test]
fn a_clone_of_a_parameter_sees_every_step() {
    let mut layer = layer();
    let w = layer.weight.clone();
    let before = w.to_vec();
    layer.weight.sum_all().backward();
    Sgd::new(0.5).step(&mut layer);
    let after = layer.weight.to_vec();
    assert_eq!(after, before.iter().map(|v| v - 0.5).collect::<Vec<_>>());
    assert_eq!(w.to_vec(), after, "the clone reads the updated value");
    // A gradient through the clone is computed from the updated values: d/dw Σ w² = 2w.
    layer.zero_grad();
    (&w * &w).sum_all().backward();
    let want: Vec<f32> = after.iter().map(|v| 2.0 * v).collect();
    assert_eq!(layer.weight.grad().unwrap().to_vec(), want);
}

#[test]
fn a_pending_graph_keeps_the_values_it_was_built_from() {
    let mut layer = layer();
    let before = layer.weight.to_vec();
    let doubled = &layer.weight.detach() * 2.0;
    let tracked = &layer.weight * 3.0;
    layer.weight.sum_all().backward();
    Sgd::new(0.5).step(&mut layer);
    assert_ne!(layer.weight.to_vec(), before);
    assert_eq!(
        doubled.to_vec(),
        before.iter().map(|v| v * 2.0).collect::<Vec<_>>()
    );
    assert_eq!(
        tracked.to_vec(),
        before.iter().map(|v| v * 3.0).collect::<Vec<_>>()
    );
    // A snapshot taken by `detach` keeps the old values too.
    let snapshot = layer.weight.detach();
    let kept = snapshot.to_vec();
    layer.weight.sum_all().backward();
    Sgd::new(0.5).step(&mut layer);
    assert_eq!(snapshot.to_vec(), kept);
}

#[test]
fn loading_values_reaches_every_clone() {
    let mut layer = layer();
    let w = layer.weight.clone();
    let mut state = layer.state_dict();
    state[0].2 = vec![1.0, 2.0, 3.0];
    layer.load_state_dict(&state).unwrap();
    assert_eq!(w.to_vec(), [1.0, 2.0, 3.0]);
}

/// A loss that reads the parameter through both handles: its gradient is `x1 + x2 + 2w`.
fn tied_loss(a: &Tensor<Rank1<3>, Tracked>, b: &Tensor<Rank1<3>, Tracked>) -> Tensor<(), Tracked> {
    let x1 = Tensor::from([1.0, -2.0, 0.5]);
    let x2 = Tensor::from([0.25, 4.0, -1.0]);
    (a * &x1).sum_all() + (b * &x2).sum_all() + (a * b).sum_all()
}

/// The parameter after `steps` steps of `make()`'s optimizer, held twice and held once.
fn tied_run<O: Optimizer>(make: impl Fn() -> O, steps: usize) -> (Vec<f32>, Vec<f32>) {
    let start = Tensor::from([0.5, -1.0, 2.0]).requires_grad();
    // A tensor is a model of one parameter; a tuple of two handles to it, of one held twice.
    let mut single = start.detach().requires_grad();
    let mut tied = (start.clone(), start);
    let (mut for_tied, mut for_single) = (make(), make());
    for _ in 0..steps {
        tied.zero_grad();
        tied_loss(&tied.0, &tied.1).backward();
        for_tied.step(&mut tied);
        single.zero_grad();
        tied_loss(&single, &single).backward();
        for_single.step(&mut single);
    }
    assert_eq!(tied.0.to_vec(), tied.1.to_vec(), "one parameter");
    (tied.0.to_vec(), single.to_vec())
}

#[test]
fn a_parameter_held_twice_is_stepped_once() {
    // By hand, one plain step of lr 0.5: the gradient is x1 + x2 + 2w = [2.25, 0, 3.5].
    let (tied, _) = tied_run(|| Sgd::new(0.5), 1);
    assert_eq!(tied, [0.5 - 1.125, -1.0, 2.0 - 1.75]);
    // With state, over several steps: the same bits as the parameter held once.
    let (tied, single) = tied_run(|| Sgd::new(0.1).momentum(0.9).weight_decay(0.01), 4);
    assert_eq!(tied, single);
    let (tied, single) = tied_run(|| Adam::new(0.01), 4);
    assert_eq!(tied, single);
}

#[test]
fn a_parameter_held_twice_is_counted_once() {
    let w = Tensor::from([0.5, -1.0, 2.0]).requires_grad();
    let tied = (w.clone(), w);
    assert_eq!(tied.parameter_count(), 3);
    assert_eq!(
        tied.named_dims().len(),
        2,
        "both names stay, as in PyTorch's state_dict"
    );
    let apart = (tied.0.detach().requires_grad(), tied.1.detach().requires_grad());
    assert_eq!(apart.parameter_count(), 6);
}

#[test]
fn clipping_counts_a_parameter_held_twice_once() {
    let w = Tensor::from([0.5, -1.0, 2.0]).requires_grad();
    let mut tied = (w.clone(), w);
    tied_loss(&tied.0, &tied.1).backward();
    // |[2.25, 0, 3.5]| = √17.3125
    let norm = clip_grad_norm(&mut tied, 1.0);
    assert_eq!(norm, 17.3125f32.sqrt());
    let scale = 1.0 / (norm + 1e-6);
    assert_eq!(tied.0.grad().unwrap().to_vec(), [2.25 * scale, 0.0, 3.5 * scale]);
}

#[test]
fn a_cloned_module_is_an_independent_copy() {
    let mut rng = StdRng::seed_from_u64(3);
    let mut model = <(Linear<3, 4>, Relu, Linear<4, 2>)>::init(&mut rng);
    let copy = model.clone();
    let at_start = copy.state_dict();
    assert_eq!(model.state_dict(), at_start, "the same values");
    let x = Tensor::<Rank2<2, 3>>::rand(&mut rng);
    model.forward(x.clone()).sum_all().backward();
    assert!(copy.0.weight.grad().is_none(), "gradients do not mix");
    Sgd::new(0.1).step(&mut model);
    assert_eq!(copy.state_dict(), at_start, "a step on one leaves the other");
    assert_ne!(model.state_dict(), at_start);
}
