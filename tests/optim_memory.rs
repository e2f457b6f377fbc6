//! A training loop keeps the number of live graph nodes bounded: each optimizer step realizes
//! the parameters (and its state) so the graph behind them is released. One test only, since
//! `nodes_alive()` counts the whole process.

use rand::SeedableRng;
use rand::rngs::StdRng;
use teenygrad::lazy::nodes_alive;
use teenygrad::nn::{Init, Mlp, Module, Params};
use teenygrad::optim::{Adam, Optimizer, Sgd};
use teenygrad::prelude::*;

const STEPS: usize = 300;

/// Trains for `STEPS` steps and returns the live node count after each step.
fn node_counts(opt: &mut impl Optimizer, x: &Tensor<Rank2<16, 8>>, labels: &Labels<Const<16>>) -> Vec<usize> {
    let mut model = Mlp::<8, 16, 4>::init(&mut StdRng::seed_from_u64(1));
    let mut counts = Vec::with_capacity(STEPS);
    let mut first_loss = None;
    let mut last_loss = 0.0;
    for step in 0..STEPS {
        opt.zero_grad(&model);
        let loss = cross_entropy(&model.forward(x.clone()), labels).unwrap();
        loss.backward();
        last_loss = loss.item();
        first_loss.get_or_insert(last_loss);
        drop(loss);
        opt.step(&mut model);
        for (name, param) in [
            ("0.weight", model.0.weight.lazy()),
            ("2.weight", model.2.weight.lazy()),
        ] {
            assert!(param.is_realized(), "step {step}: {name} is not realized");
        }
        let biases = [
            model.0.bias.as_ref().unwrap().lazy(),
            model.2.bias.as_ref().unwrap().lazy(),
        ];
        assert!(
            biases.iter().all(|b| b.is_realized()),
            "step {step}: a bias is not realized"
        );
        counts.push(nodes_alive());
    }
    // It trained (so the steps did real work).
    assert!(
        last_loss < 0.5 * first_loss.unwrap(),
        "loss {first_loss:?} -> {last_loss}"
    );
    model.zero_grad();
    counts
}

#[test]
fn training_loops_keep_live_nodes_bounded() {
    let mut rng = StdRng::seed_from_u64(0);
    let x = Tensor::<Rank2<16, 8>>::randn(&mut rng);
    let labels = Labels::new((0..16).map(|i| i % 4).collect(), Const::<16>).unwrap();
    let baseline = nodes_alive();

    let optimizers: [(&str, &mut dyn FnMut() -> Vec<usize>); 3] = [
        ("sgd", &mut || node_counts(&mut Sgd::new(0.1), &x, &labels)),
        ("sgd momentum nesterov", &mut || {
            node_counts(&mut Sgd::new(0.05).momentum(0.9).nesterov(), &x, &labels)
        }),
        ("adamw", &mut || node_counts(&mut Adam::adamw(0.01), &x, &labels)),
    ];
    for (name, run) in optimizers {
        let counts = run();
        // After a few warm-up steps (state buffers appear at step 1), the count is flat: the
        // parameters, their gradients and the optimizer's state, nothing per step.
        let settled = counts[5];
        let max_later = *counts[5..].iter().max().unwrap();
        assert!(
            max_later <= settled,
            "{name}: live nodes grew from {settled} to {max_later}: {:?}",
            &counts[..20]
        );
        // And it is what the state needs: for each of the 4 parameters at most its value, its
        // gradient and two moment buffers (SGD has 2 or 3 of these, Adam 4).
        assert!(
            settled <= baseline + 4 * 4,
            "{name}: {settled} live nodes (baseline {baseline})"
        );
        // Dropping the model and optimizer gives everything back.
        assert!(
            nodes_alive() <= baseline + 2,
            "{name}: {} live after the loop (baseline {baseline})",
            nodes_alive()
        );
    }
}
