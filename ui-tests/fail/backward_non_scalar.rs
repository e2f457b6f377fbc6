//! `backward()` needs a scalar: a tracked vector must be reduced first.
use teenygrad::prelude::*;

fn main() {
    let x = Tensor::from([1.0, 2.0, 3.0]).requires_grad();
    let y: Tensor<Rank1<3>, Tracked> = x.square();
    y.backward();
}
