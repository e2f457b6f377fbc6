//! `item()` reads a tensor of one element: a larger one must be reduced (or read with `to_vec`).
use teenygrad::prelude::*;

fn main() {
    let x = Tensor::from([[1.0, 2.0], [3.0, 4.0]]);
    let _ = x.item();
}
