//! Twin of `fail/backward_non_scalar.rs`: the tracked vector reduced to a scalar first.
use teenygrad::prelude::*;

fn main() {
    let x = Tensor::from([1.0, 2.0, 3.0]).requires_grad();
    let y: Tensor<Rank1<3>, Tracked> = x.square();
    y.mean_all().backward();
    let g = x.grad().unwrap().to_array();
    assert!((g[2] - 2.0).abs() < 1e-6, "d/dx mean(x²) = 2x/3");
}
