//! The `Embedding` table: PyTorch's initialization and parameter name, lookups in each input
//! form against the rows read by hand, saving and loading, and learning a map by SGD.

use rand::SeedableRng;
use rand::rngs::StdRng;
use teenygrad::nn::{Embedding, Init, Linear, Module, Params};
use teenygrad::optim::{Optimizer, Sgd};
use teenygrad::prelude::*;
use teenygrad::tensor::{Labels, cross_entropy};

/// The rows of `weight` at `ids`, copied by hand.
fn picked<const V: usize, const D: usize>(weight: &Tensor<Rank2<V, D>, Tracked>, ids: &[usize]) -> Vec<f32> {
    let values = weight.to_vec();
    ids.iter()
        .flat_map(|&r| values[r * D..(r + 1) * D].to_vec())
        .collect()
}

#[test]
fn an_embedding_is_torch_initialized_named_and_detachable() {
    let table = Embedding::<1000, 8>::init(&mut StdRng::seed_from_u64(0));
    // Standard normal: 8000 samples put the mean within 0.05 (4.5 standard errors) of 0 and
    // the standard deviation within 0.05 of 1.
    let w = table.weight.to_vec();
    let mean = w.iter().map(|&x| x as f64).sum::<f64>() / w.len() as f64;
    let std = (w.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / w.len() as f64).sqrt();
    assert!(
        mean.abs() < 0.05 && (std - 1.0).abs() < 0.05,
        "mean {mean}, std {std}"
    );
    assert_eq!(table.named_dims(), vec![("weight".to_string(), vec![1000, 8])]);
    let frozen = table.detached();
    let ids = [999, 0, 5];
    assert_eq!(frozen.forward(&ids).to_vec(), picked(&table.weight, &ids));
    // A slice or a `Vec` gives a run-time batch; all are the same rows.
    let run_time: Tensor<(usize, Const<8>), Tracked> = table.forward(&ids[..]);
    assert_eq!(run_time.to_vec(), table.forward(&ids).to_vec());
    assert_eq!(
        table.forward(&ids.to_vec()).to_vec(),
        table.forward(&ids).to_vec()
    );
}

#[test]
fn an_embedding_learns_which_class_each_token_means() {
    // Eight tokens, each meaning one of three classes: the embedding and a linear layer learn the
    // map by SGD, and a table whose rows no token reads stays where it started.
    const V: usize = 10;
    let meaning = [0, 1, 2, 0, 1, 2, 0, 1];
    let mut rng = StdRng::seed_from_u64(7);
    let mut model = (Embedding::<V, 4>::init(&mut rng), Linear::<4, 3>::init(&mut rng));
    let unread = model.0.weight.to_vec()[8 * 4..].to_vec();
    let tokens: Vec<usize> = (0..8).collect();
    let labels = Labels::from_vec(meaning.to_vec());
    let mut opt = Sgd::new(0.5);
    let mut losses = Vec::new();
    for _ in 0..100 {
        let loss = cross_entropy(&model.forward(&tokens[..]), &labels).unwrap();
        losses.push(loss.item());
        loss.backward();
        opt.step(&mut model);
        opt.zero_grad(&model);
    }
    assert!(losses[99] < 0.05 * losses[0], "{} then {}", losses[0], losses[99]);
    let predicted = model.forward(&tokens[..]).detach().argmax_rows();
    assert_eq!(predicted, meaning);
    assert_eq!(model.0.weight.to_vec()[8 * 4..], unread);
}

#[test]
fn a_static_batch_of_sequences_gives_rank_three() {
    let mut rng = StdRng::seed_from_u64(4);
    let model = (Embedding::<10, 3>::init(&mut rng), Linear::<3, 2>::init(&mut rng));
    let ids = [[1, 2, 9, 1], [0, 0, 5, 7]];
    let vectors: Tensor<Rank3<2, 4, 3>, Tracked> = model.0.forward(&ids);
    let flat: Vec<usize> = ids.concat();
    assert_eq!(vectors.to_vec(), picked(&model.0.weight, &flat));
    // On through a layer that takes `[B, T, I]`.
    assert_eq!(model.forward(&ids).dims(), vec![2, 4, 2]);
}

#[test]
fn a_padding_id_looks_up_zeros_and_gets_no_gradient() {
    let table = Embedding::<6, 3>::init(&mut StdRng::seed_from_u64(5)).with_padding(2);
    assert_eq!(table.padding(), Some(2));
    let before = table.weight.to_vec();
    assert_eq!(
        before[6..9],
        [0.0; 3],
        "the padding row starts at zeros, as PyTorch's"
    );
    let ids = [2, 4, 2, 1, 4, 2];
    let rows = table.forward(&ids);
    assert_eq!(rows.to_vec(), picked(&table.weight, &ids));
    // Each output row weighted by its position: the padding row gets nothing, the others the
    // sum of their positions' weights.
    let weights = Tensor::from_vec((0..18).map(|k| k as f32).collect(), (Const::<6>, Const::<3>)).unwrap();
    (rows * weights).sum_all().backward();
    let grad = table.weight.grad().unwrap().to_vec();
    assert_eq!(grad[6..9], [0.0; 3]);
    assert_eq!(grad[3..6], [9.0, 10.0, 11.0], "id 1 at position 3");
    assert_eq!(
        grad[12..15],
        [3.0 + 12.0, 4.0 + 13.0, 5.0 + 14.0],
        "id 4 at positions 1 and 4"
    );
    // A lookup without the padding id is a plain one; clones and twins keep the id.
    assert_eq!(table.forward(&[0, 1]).to_vec(), picked(&table.weight, &[0, 1]));
    assert_eq!(
        (table.clone().padding(), table.detached().padding()),
        (Some(2), Some(2))
    );
}

#[test]
#[should_panic(expected = "Embedding::with_padding: index 6 is not below V = 6")]
fn a_padding_id_past_the_table_panics() {
    let _ = Embedding::<6, 3>::init(&mut StdRng::seed_from_u64(5)).with_padding(6);
}
