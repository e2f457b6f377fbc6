//! `impl_params!`: a model struct's parameters by field name, reached by optimizers, saving and
//! loading, and `train()`/`eval()`, for plain and generic structs.

use rand::SeedableRng;
use rand::rngs::StdRng;
use teenygrad::nn::{from_bytes, to_bytes};
use teenygrad::prelude::*;
use teenygrad::{impl_init, impl_params};

/// Two branches added, a learned scale, nested dropout, a list of layers and a setting.
struct TwoBranch {
    left: (Linear<3, 4>, Relu, Dropout),
    right: Linear<3, 4>,
    scale: Tensor<Rank1<4>, Tracked>,
    stack: Vec<Linear<4, 4>>,
    head: Linear<4, 1>,
    slope: f32,
}
impl_params!(TwoBranch {
    left,
    right,
    scale,
    stack,
    head
});

impl TwoBranch {
    fn new(rng: &mut StdRng) -> Self {
        TwoBranch {
            left: (Linear::init(rng), Relu, Dropout::new(0.5, 7)),
            right: Linear::init(rng),
            scale: Tensor::ones().requires_grad(),
            stack: vec![Linear::init(rng), Linear::init(rng)],
            head: Linear::init(rng),
            slope: 0.1,
        }
    }

    fn forward(&self, x: Tensor<Rank2<5, 3>>) -> Tensor<Rank2<5, 1>, Tracked> {
        let mut h = (self.left.forward(x.clone()) + self.right.forward(x)) * &self.scale;
        for layer in &self.stack {
            h = layer.forward(h).leaky_relu(self.slope);
        }
        self.head.forward(h)
    }
}

/// A generic block, its parameters under one field.
struct Block<const N: usize> {
    inner: (Linear<N, N>, Tanh),
}
impl_params!([const N: usize] Block<N> { inner });

#[test]
fn fields_are_named_in_the_order_listed() {
    let model = TwoBranch::new(&mut StdRng::seed_from_u64(0));
    let names: Vec<String> = model.named_dims().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "left.0.weight",
            "left.0.bias",
            "right.weight",
            "right.bias",
            "scale",
            "stack.0.weight",
            "stack.0.bias",
            "stack.1.weight",
            "stack.1.bias",
            "head.weight",
            "head.bias",
        ]
    );
    assert_eq!(model.parameter_count(), 16 + 16 + 4 + 2 * 20 + 5);
    let block = (
        Block::<2> {
            inner: Init::init(&mut StdRng::seed_from_u64(1)),
        },
        Relu,
    );
    assert_eq!(
        block.named_dims()[0],
        ("0.inner.0.weight".to_string(), vec![2, 2])
    );
}

#[test]
fn an_optimizer_step_reaches_every_listed_field() {
    let mut rng = StdRng::seed_from_u64(2);
    let mut model = TwoBranch::new(&mut rng);
    model.eval();
    let before: Vec<Vec<f32>> = {
        let mut v = Vec::new();
        model.visit("", &mut |_, p| v.push(p.values()));
        v
    };
    let x = Tensor::<Rank2<5, 3>>::randn(&mut rng);
    model.forward(x).square().sum_all().backward();
    Sgd::new(0.1).step(&mut model);
    let mut index = 0;
    model.visit("", &mut |name, p| {
        assert_ne!(p.values(), before[index], "{name} did not move");
        index += 1;
    });
    assert_eq!(index, 11);
    model.zero_grad();
    model.visit("", &mut |name, p| assert!(p.grad_values().is_none(), "{name}"));
}

#[test]
fn train_and_eval_reach_nested_dropout() {
    let model = TwoBranch::new(&mut StdRng::seed_from_u64(3));
    assert!(model.left.2.is_training());
    model.eval();
    assert!(!model.left.2.is_training());
    // Evaluation is deterministic; training draws masks.
    let x = Tensor::<Rank2<5, 3>>::ones();
    assert_eq!(
        model.forward(x.clone()).to_vec(),
        model.forward(x.clone()).to_vec()
    );
    model.train();
    assert!(model.left.2.is_training());
}

#[test]
fn saved_and_loaded_by_field_names() {
    let model = TwoBranch::new(&mut StdRng::seed_from_u64(4));
    let bytes = to_bytes(&model).unwrap();
    let mut other = TwoBranch::new(&mut StdRng::seed_from_u64(5));
    model.eval();
    other.eval();
    let x = Tensor::<Rank2<5, 3>>::ones();
    assert_ne!(
        model.forward(x.clone()).to_vec(),
        other.forward(x.clone()).to_vec()
    );
    from_bytes(&mut other, &bytes).unwrap();
    assert_eq!(model.forward(x.clone()).to_vec(), other.forward(x).to_vec());
    assert_eq!(other.slope, 0.1);
}

#[test]
fn arrays_of_layers_are_lists_of_modules() {
    let mut rng = StdRng::seed_from_u64(6);
    // Each element initialized in turn from one generator: different weights, different masks.
    let blocks = <[(Linear<3, 3>, Dropout); 2]>::init(&mut rng);
    let names: Vec<String> = blocks.named_dims().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["0.0.weight", "0.0.bias", "1.0.weight", "1.0.bias"]);
    assert_ne!(blocks[0].0.weight.to_vec(), blocks[1].0.weight.to_vec());
    let x = Tensor::<Rank2<4, 3>>::ones();
    let masks = |b: &(Linear<3, 3>, Dropout)| b.1.forward(x.clone()).to_vec();
    assert_ne!(masks(&blocks[0]), masks(&blocks[1]));
    blocks.eval();
    assert!(blocks.iter().all(|b| !b.1.is_training()));
    // The untracked twins, element by element.
    let twins = blocks.detached();
    assert_eq!(
        twins[1].0.forward(x.clone()).to_vec(),
        blocks[1].0.forward(x.clone()).to_vec()
    );
    let list = vec![Linear::<3, 3>::init(&mut rng)];
    assert_eq!(list.detached()[0].weight.to_vec(), list[0].weight.to_vec());
}

#[test]
fn arrays_and_vecs_of_blocks_run_in_turn() {
    let mut rng = StdRng::seed_from_u64(7);
    // As `nn.Sequential(Linear, *[Block() for _ in range(3)], Linear)`.
    let model = (
        Linear::<2, 4>::init(&mut rng),
        <[(Linear<4, 4>, Tanh); 3]>::init(&mut rng),
        Linear::<4, 1>::init(&mut rng),
    );
    let x = Tensor::<Rank2<5, 2>>::randn(&mut rng);
    let mut by_hand = model.0.forward(x.clone());
    for block in &model.1 {
        by_hand = block.forward(by_hand);
    }
    let by_hand = model.2.forward(by_hand);
    assert_eq!(model.forward(x.clone()).to_vec(), by_hand.to_vec());
    assert_eq!(model.named_dims()[2].0, "1.0.0.weight");
    // A Vec the same way, and none at all passes the input through.
    let blocks: Vec<(Linear<4, 4>, Tanh)> = model.1.to_vec();
    let h = model.0.forward(x.clone());
    assert_eq!(
        blocks.forward(h.clone()).to_vec(),
        model.1.forward(h.clone()).to_vec()
    );
    let none: [(Linear<4, 4>, Tanh); 0] = [];
    assert_eq!(none.forward(h.clone()).to_vec(), h.to_vec());
}

/// Layers only: `impl_init!` can write its constructor.
struct Encoder {
    embed: Linear<3, 4>,
    drop: Dropout,
    blocks: [Block<4>; 2],
}
impl_params!(Encoder { embed, drop, blocks });
impl_init!(Encoder { embed, drop, blocks });
impl_init!([const N: usize] Block<N> { inner });

#[test]
fn impl_init_initializes_fields_in_order_from_one_generator() {
    let a = Encoder::init(&mut StdRng::seed_from_u64(8));
    let b = Encoder::init(&mut StdRng::seed_from_u64(8));
    let values = |m: &Encoder| {
        let mut v = Vec::new();
        m.visit("", &mut |_, p| v.extend(p.values()));
        v
    };
    assert_eq!(values(&a), values(&b), "the same seed, the same model");
    // The fields in the order listed, as a tuple of them would be made.
    let mut rng = StdRng::seed_from_u64(8);
    let tuple = <(Linear<3, 4>, Dropout, [Block<4>; 2])>::init(&mut rng);
    assert_eq!(values(&a), {
        let mut v = Vec::new();
        tuple.visit("", &mut |_, p| v.extend(p.values()));
        v
    });
    assert_ne!(
        a.blocks[0].inner.0.weight.to_vec(),
        a.blocks[1].inner.0.weight.to_vec()
    );
    assert!(a.drop.is_training());
}
