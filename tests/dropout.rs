//! `nn::Dropout`: the share dropped, the kept values' exact scaling, the gradient's mask, modes,
//! repeatability from the seed, the ends of `p`, and a place in a model.

use rand::SeedableRng;
use rand::rngs::StdRng;
use teenygrad::nn::Linear;
use teenygrad::prelude::*;

#[test]
fn about_p_of_the_values_are_dropped_and_the_rest_scaled_exactly() {
    let x = Tensor::<Rank1<100_000>>::randn(&mut StdRng::seed_from_u64(1));
    for p in [0.1f32, 0.5, 0.9] {
        let y = Dropout::new(p, 2).forward(x.clone()).to_vec();
        let dropped = y.iter().filter(|&&v| v == 0.0).count() as f64;
        // Binomial: the count is within 5 standard deviations of n·p (a false alarm once in
        // about 3.5 million runs; the seeds are fixed, so never here).
        let (n, p64) = (100_000.0, p as f64);
        let sd = (n * p64 * (1.0 - p64)).sqrt();
        assert!(
            (dropped - n * p64).abs() <= 5.0 * sd,
            "p = {p}: {dropped} dropped"
        );
        // Each kept value is x·(1/(1 − p)), rounded once, as PyTorch computes it.
        let scale = 1.0 / (1.0 - p);
        for (&v, &x) in y.iter().zip(&x.to_vec()) {
            assert!(
                v == 0.0 || v.to_bits() == (x * scale).to_bits(),
                "p = {p}: {x} became {v}"
            );
        }
    }
}

#[test]
fn the_gradient_takes_the_same_mask_and_scale() {
    let x = Tensor::<Rank2<8, 16>>::randn(&mut StdRng::seed_from_u64(3)).requires_grad();
    let y = Dropout::new(0.25, 4).forward(x.clone());
    y.sum_all().backward();
    let (values, inputs, grad) = (y.to_vec(), x.to_vec(), x.grad().unwrap().to_vec());
    let scale = 1.0 / 0.75f32;
    for i in 0..values.len() {
        let kept = values[i] != 0.0;
        assert_eq!(
            grad[i],
            if kept { scale } else { 0.0 },
            "element {i} ({})",
            inputs[i]
        );
    }
}

#[test]
fn eval_mode_and_the_detached_twin_pass_values_through() {
    let x = Tensor::from([1.0, -2.0, 3.0]);
    let drop = Dropout::new(0.5, 5);
    assert!(drop.is_training());
    let twin = drop.detached();
    assert!(
        !twin.is_training() && drop.is_training(),
        "the twin is in eval mode, not the layer"
    );
    assert_eq!(twin.forward(x.clone()).to_vec(), x.to_vec());
    drop.eval();
    assert_eq!(drop.forward(x.clone()).to_vec(), x.to_vec());
    drop.train();
    let many = Tensor::<Rank1<64>>::ones();
    assert!(drop.forward(many).to_vec().contains(&0.0));
}

#[test]
fn masks_repeat_from_the_seed_and_a_clone_continues_the_stream() {
    let x = Tensor::<Rank1<256>>::ones();
    let (a, b) = (Dropout::new(0.5, 9), Dropout::new(0.5, 9));
    let first = a.forward(x.clone()).to_vec();
    assert_eq!(first, b.forward(x.clone()).to_vec());
    let second = a.forward(x.clone()).to_vec();
    assert_ne!(first, second, "each call draws a new mask");
    let c = a.clone();
    assert_eq!(a.forward(x.clone()).to_vec(), c.forward(x.clone()).to_vec());
    assert_ne!(
        first,
        Dropout::new(0.5, 10).forward(x).to_vec(),
        "another seed, other masks"
    );
}

#[test]
fn p_zero_keeps_everything_and_p_one_drops_everything() {
    let x = Tensor::from([1.0, f32::INFINITY, -0.0]);
    assert_eq!(Dropout::new(0.0, 1).forward(x.clone()).to_vec(), x.to_vec());
    assert_eq!(
        Dropout::new(1.0, 1).forward(Tensor::from([1.0, -5.0])).to_vec(),
        vec![0.0, -0.0]
    );
    // No values: nothing to draw.
    let none = Tensor::<(usize,)>::zeros_in((0,));
    assert!(Dropout::new(0.5, 1).forward(none).to_vec().is_empty());
}

#[test]
#[should_panic(expected = "Dropout: p = 1.5 is not a probability in [0, 1]")]
fn a_p_outside_zero_to_one_panics() {
    Dropout::new(1.5, 0);
}

#[test]
fn a_model_with_dropout_trains_and_names_its_layers_as_pytorch() {
    let mut rng = StdRng::seed_from_u64(11);
    let mut model = (
        Linear::<4, 32>::init(&mut rng),
        Relu,
        Dropout::init(&mut rng),
        Linear::<32, 3>::init(&mut rng),
    );
    let names: Vec<String> = model.named_dims().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["0.weight", "0.bias", "3.weight", "3.bias"]);
    let x = Tensor::<Rank2<12, 4>>::randn(&mut rng);
    let labels = Labels::new((0..12).map(|i| i % 3).collect(), Const::<12>).unwrap();
    let mut opt = Sgd::new(0.1);
    let loss_of = |model: &(Linear<4, 32>, Relu, Dropout, Linear<32, 3>)| {
        cross_entropy(&model.detached().forward(x.clone()), &labels)
            .unwrap()
            .item()
    };
    let before = loss_of(&model);
    for _ in 0..200 {
        let loss = cross_entropy(&model.forward(x.clone()), &labels).unwrap();
        loss.backward();
        opt.step(&mut model);
        model.zero_grad();
    }
    let after = loss_of(&model);
    assert!(after < 0.5 * before, "evaluation loss {before} then {after}");
}
