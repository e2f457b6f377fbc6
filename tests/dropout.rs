//! `nn::Dropout`: the share dropped, the kept values' scaling bit for bit with PyTorch's, the
//! gradient's mask, modes, repeatability from the seed, the ends of `p`, and a place in a model.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use teenygrad::nn::Linear;
use teenygrad::prelude::*;

/// The value PyTorch 2.5.1 keeps for an input of 1 at `p = k/100`, `k = 1..=99` (the bits of
/// `F.dropout(torch.ones(2000), p)`'s non-zero values).
const TORCH_SCALES: [u32; 99] = [
    0x3f814afd, 0x3f829cbc, 0x3f83f571, 0x3f855556, 0x3f86bca2, 0x3f882b93, 0x3f89a269, 0x3f8b2164,
    0x3f8ca8ca, 0x3f8e38e4, 0x3f8fd1fa, 0x3f91745d, 0x3f93205e, 0x3f94d653, 0x3f969696, 0x3f986186,
    0x3f9a3785, 0x3f9c18fa, 0x3f9e0652, 0x3fa00000, 0x3fa2067b, 0x3fa41a42, 0x3fa63bd8, 0x3fa86bca,
    0x3faaaaab, 0x3facf915, 0x3faf57ac, 0x3fb1c71c, 0x3fb4481d, 0x3fb6db6e, 0x3fb981db, 0x3fbc3c3c,
    0x3fbf0b76, 0x3fc1f07c, 0x3fc4ec4f, 0x3fc80000, 0x3fcb2cb3, 0x3fce739d, 0x3fd1d608, 0x3fd55555,
    0x3fd8f2fc, 0x3fdcb08e, 0x3fe08fb8, 0x3fe49249, 0x3fe8ba2e, 0x3fed097b, 0x3ff1826b, 0x3ff62763,
    0x3ffafafb, 0x40000000, 0x40029cbc, 0x40055556, 0x40082b93, 0x400b2164, 0x400e38e4, 0x4011745d,
    0x4014d653, 0x40186186, 0x401c18fa, 0x40200000, 0x40241a42, 0x40286bca, 0x402cf915, 0x4031c71c,
    0x4036db6e, 0x403c3c3c, 0x4041f07c, 0x40480000, 0x404e739d, 0x40555555, 0x405cb08e, 0x40649249,
    0x406d097b, 0x40762763, 0x40800000, 0x40855556, 0x408b2164, 0x4091745d, 0x40986186, 0x40a00000,
    0x40a86bca, 0x40b1c71c, 0x40bc3c3c, 0x40c80000, 0x40d55555, 0x40e49249, 0x40f62763, 0x41055556,
    0x4111745d, 0x41200000, 0x4131c71c, 0x41480000, 0x41649249, 0x41855556, 0x41a00000, 0x41c80000,
    0x42055556, 0x42480000, 0x42c80000,
];

#[test]
fn kept_values_are_scaled_as_pytorch_scales_them() {
    let ones = Tensor::<Rank1<64>>::ones();
    for (k, &want) in (1..100).zip(&TORCH_SCALES) {
        let p = k as f64 / 100.0;
        let y = Dropout::new(p, k).forward(ones.clone()).to_vec();
        let kept: Vec<u32> = y.iter().filter(|&&v| v != 0.0).map(|v| v.to_bits()).collect();
        assert!(
            kept.iter().all(|&b| b == want),
            "p = {p}: kept {kept:x?}, PyTorch {want:#x}"
        );
    }
}

#[test]
fn about_p_of_the_values_are_dropped_and_the_rest_scaled_exactly() {
    let x = Tensor::<Rank1<100_000>>::randn(&mut StdRng::seed_from_u64(1));
    for p in [0.1, 0.5, 0.9] {
        let y = Dropout::new(p, 2).forward(x.clone()).to_vec();
        let dropped = y.iter().filter(|&&v| v == 0.0).count() as f64;
        // Binomial: the count is within 5 standard deviations of n·p (a false alarm once in
        // about 3.5 million runs; the seeds are fixed, so never here).
        let n = 100_000.0;
        let sd = (n * p * (1.0 - p)).sqrt();
        assert!((dropped - n * p).abs() <= 5.0 * sd, "p = {p}: {dropped} dropped");
        // Each kept value is x·s, rounded once, as PyTorch computes it.
        let scale = f32::from_bits(TORCH_SCALES[(p * 100.0).round() as usize - 1]);
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
    let scale = 1.0 / 0.75f32; // exact in f32, as PyTorch's
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
fn a_model_switches_every_dropout_it_holds() {
    // Nested tuples pass the mode down; layers without one ignore it.
    let mut rng = StdRng::seed_from_u64(12);
    let model = (
        (Linear::<4, 4>::init(&mut rng), Dropout::new(0.5, 1)),
        Relu,
        Dropout::new(0.5, 2),
    );
    model.eval();
    assert!(!model.0.1.is_training() && !model.2.is_training());
    let x = Tensor::<Rank2<8, 4>>::randn(&mut rng);
    assert_eq!(
        model.forward(x.clone()).to_vec(),
        model.forward(x.clone()).to_vec()
    );
    model.train();
    assert!(model.0.1.is_training() && model.2.is_training());
    // A list of modules too.
    let list = vec![Dropout::new(0.5, 3), Dropout::new(0.5, 4)];
    list.eval();
    assert!(list.iter().all(|d| !d.is_training()));
    assert_ne!(model.forward(x.clone()).to_vec(), model.forward(x).to_vec());
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

/// The masks are `StdRng::seed_from_u64(seed)`'s draws, `random::<f64>() >= p` keeping a value,
/// in order across calls, whatever the lengths (here odd ones, across the generator's blocks of
/// 32 draws) and for `p` on either side of a draw.
#[test]
fn masks_are_the_seeded_generators_draws_in_order() {
    for p in [0.1, 0.5, 0.9, 1.0 / 3.0] {
        let dropout = Dropout::new(p, 99);
        let mut rng = StdRng::seed_from_u64(99);
        for len in [1usize, 3, 31, 33, 257, 1000] {
            let x = Tensor::from_vec(vec![1.0; len], (len,)).unwrap();
            let kept: Vec<bool> = dropout.forward(x).to_vec().iter().map(|&v| v != 0.0).collect();
            let want: Vec<bool> = (0..len).map(|_| rng.random::<f64>() >= p).collect();
            assert_eq!(kept, want, "p = {p}, {len} values");
        }
    }
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
