//! Twin of `fail/backward_untracked.rs`: the same scalar, made from a tracked leaf.
use teenygrad::prelude::*;

fn main() {
    let x = Tensor::from([1.0, 2.0, 3.0]).requires_grad();
    let loss: Tensor<(), Tracked> = x.square().sum_all();
    loss.backward();
    assert_eq!(x.grad().unwrap().to_array(), [2.0, 4.0, 6.0]);
}
