//! `backward()` needs a tracked tensor: an untracked scalar has no record to walk back through.
use teenygrad::prelude::*;

fn main() {
    let x = Tensor::from([1.0, 2.0, 3.0]);
    let loss: Tensor<()> = x.square().sum_all();
    loss.backward();
}
