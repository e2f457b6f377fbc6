//! Generic code over a batch dim `B: Dim` adds two tensors of its shape, and a layer's output to
//! its input, with no broadcast bound: every dim broadcasts with itself.
use rand::SeedableRng;
use teenygrad::nn::{Init, Linear, Module};
use teenygrad::prelude::*;

fn residual<B: Dim>(layer: &Linear<4, 4>, x: Tensor<(B, Const<4>)>) -> Tensor<(B, Const<4>), Tracked> {
    let h = layer.forward(x.clone());
    x + h
}

fn main() {
    let layer = Linear::<4, 4>::init(&mut rand::rngs::StdRng::seed_from_u64(0));
    let run_time = Tensor::<(usize, Const<4>)>::zeros_in((3usize, Const));
    assert_eq!(residual(&layer, run_time).dims(), vec![3, 4]);
    let static_batch = Tensor::<Rank2<2, 4>>::zeros();
    assert_eq!(residual(&layer, static_batch).dims(), vec![2, 4]);
}
